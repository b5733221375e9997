//! Jev relevance (SPEC §7, R-J-1..9): an optional remote judge over the search pool.
//!
//! Off unless `ATLAS_RELEVANCE=1|true` (and `ATLAS_RERANK` is not `0`). When on, the whole
//! post-RRF pool, in lexical-rerank order, goes to the System One endpoint as one score
//! question per candidate (`wire`), in at most two calls under one 3 s deadline
//! (`transport`), or is answered from a replay file. Validated scores reorder the pool and
//! select the `top_k` (`policy`); anything that fails leaves that batch in local order.
//! Every search adds to the cost ledger (`ledger`) and writes one cost line.
//!
//! Nothing here writes the query, code, paths or the key anywhere but to the endpoint:
//! reports carry counts and codes, records carry a query hash and opaque candidate ids.

pub mod ledger;
pub mod policy;
pub mod rubric;
pub mod transport;
pub mod wire;

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::config::{Gate, RelevanceConfig};
use policy::{Selection, UNCERTAIN_BELOW};
use rubric::RubricText;
use transport::{Outcome, Record, Replay};
pub use wire::{Evaluation, WireCandidate};

/// What a search needs to run the judge.
#[derive(Debug, Clone, Copy)]
pub struct Setting<'a> {
    pub config: &'a RelevanceConfig,
    /// The compact profile (the `top_k` cut applies there only).
    pub compact: bool,
    /// The code root, where candidate texts are read (inventory files only).
    pub root: &'a Path,
    /// Where the ledger is kept (the graph directory); `None` keeps no ledger.
    pub ledger_dir: Option<&'a Path>,
}

impl RelevanceReport {
    /// The judge was asked for but `ATLAS_RERANK=0` turns every reordering off.
    pub fn rerank_disabled(config: &RelevanceConfig, pool: usize) -> RelevanceReport {
        let mut report = blank_report(config, Selection::conservative(3.0), pool);
        report.status = "off";
        report.reason = Some("rerank_disabled".into());
        report
    }
}

fn blank_report(config: &RelevanceConfig, selection: Selection, pool: usize) -> RelevanceReport {
    RelevanceReport {
        status: "skipped",
        reason: None,
        source: "none",
        model: config.model.as_ref().ok().cloned(),
        rubric: RubricText::load(config.rubric).map(|r| r.id),
        config_problems: [
            config.rubric_problem,
            config.cut_problem,
            config.gate_problem,
        ]
        .into_iter()
        .flatten()
        .collect(),
        gate: match config.gate {
            Gate::Off => "off",
            Gate::UniqueExactSymbol => "unique_exact_symbol_v1",
            Gate::Identifier => "identifier_query_v1",
        },
        policy: selection.policy(),
        threshold: selection.threshold(),
        pool,
        sent: 0,
        not_sent: 0,
        evaluated: 0,
        uncertain: 0,
        batches: Vec::new(),
        ranking_changed: false,
        removed: 0,
        distinct: 0,
        selected: 0,
        cost: Cost {
            status: "zero",
            usd: 0.0,
            calls: 0,
        },
        cost_status: "not_incurred",
        warnings: Vec::new(),
    }
}

/// What the query and the pool say about the gate (R-J-8).
#[derive(Debug, Clone, Copy, Default)]
pub struct GateFacts {
    /// The query is one identifier (dots allowed).
    pub identifier_query: bool,
    /// The query is an exact name with a single function/method/class match in the pool.
    pub unique_exact_symbol: bool,
}

/// The judge as `atlas status` shows it: its configuration, every problem with it, and
/// the ledger's sums since it was started.
#[derive(Debug, Clone, Serialize)]
pub struct RelevanceStatus {
    /// `ATLAS_RELEVANCE=1|true`.
    pub requested: bool,
    /// Requested, and `ATLAS_RERANK` is not `0`.
    pub enabled: bool,
    /// `ok` or `invalid_url` (the URL itself is not shown).
    pub endpoint: &'static str,
    /// `set` or `missing` (never the key).
    pub key: &'static str,
    pub model: Option<String>,
    pub rubric: SettingStatus,
    pub cut: CutStatus,
    pub gate: SettingStatus,
    /// `live`, or `replay` when a replay file answers.
    pub source: &'static str,
    pub recording: bool,
    /// Problems, each a code: `invalid_url`, `invalid_model`, `invalid_rubric`,
    /// `invalid_flag`, `missing_key`, `ledger_damaged` (the ledger file does not read; the
    /// next judged search starts it again).
    pub problems: Vec<&'static str>,
    pub ledger: Option<ledger::Ledger>,
}

/// A setting with its effective value and the problem that made it fall back.
#[derive(Debug, Clone, Serialize)]
pub struct SettingStatus {
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CutStatus {
    pub enabled: bool,
    pub policy: &'static str,
    /// On the rubric's scale.
    pub threshold: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// The status block for `config`, with the ledger under `graph_dir`.
pub fn status(config: &RelevanceConfig, rerank: bool, graph_dir: &Path) -> RelevanceStatus {
    let rubric = RubricText::load(config.rubric);
    let scale = rubric.as_ref().map_or(3.0, RubricText::scale);
    let selection = if config.cut {
        Selection::cut(scale)
    } else {
        Selection::conservative(scale)
    };
    let problems = [
        config.url.as_ref().err().copied(),
        config.model.as_ref().err().copied(),
        config.rubric_problem,
        config.cut_problem.or(config.gate_problem),
        (config.key.is_none() && config.replay.is_none()).then_some("missing_key"),
        ledger::damaged(graph_dir).then_some("ledger_damaged"),
    ]
    .into_iter()
    .flatten()
    .collect();
    RelevanceStatus {
        requested: config.requested,
        enabled: config.requested && rerank,
        endpoint: if config.url.is_ok() {
            "ok"
        } else {
            "invalid_url"
        },
        key: if config.key.is_some() {
            "set"
        } else {
            "missing"
        },
        model: config.model.as_ref().ok().cloned(),
        rubric: SettingStatus {
            value: rubric.map_or_else(|| "unreadable".into(), |r| r.id),
            reason: config.rubric_problem,
        },
        cut: CutStatus {
            enabled: config.cut,
            policy: selection.policy(),
            threshold: selection.threshold(),
            reason: config.cut_problem,
        },
        gate: SettingStatus {
            value: match config.gate {
                Gate::Off => "off",
                Gate::UniqueExactSymbol => "unique_exact_symbol_v1",
                Gate::Identifier => "identifier_query_v1",
            }
            .into(),
            reason: config.gate_problem,
        },
        source: if config.replay.is_some() {
            "replay"
        } else {
            "live"
        },
        recording: config.record.is_some(),
        problems,
        ledger: ledger::read(graph_dir),
    }
}

/// One batch as reported.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BatchReport {
    pub candidates: usize,
    pub outcome: String,
    /// Sent ids the replay file had no answer for.
    #[serde(skip_serializing_if = "is_zero")]
    pub replay_missing: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The cost of one search (R-J-9).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Cost {
    /// `known` (every call reported its cost), `partial` (some did), `zero` (no call),
    /// `unknown` (calls, none reported a cost).
    pub status: &'static str,
    pub usd: f64,
    pub calls: usize,
}

impl Cost {
    /// Two attempts of one search (a repaired index searched again) as one cost.
    pub fn merge(&mut self, other: &Cost) {
        let calls = self.calls + other.calls;
        let known = |c: &Cost| match c.status {
            "known" => c.calls,
            "partial" => c.calls / 2,
            _ => 0,
        };
        let known_calls = known(self) + known(other);
        self.status = match (calls, known_calls) {
            (0, _) => "zero",
            (c, k) if k == c => "known",
            (_, 0) => "unknown",
            _ => "partial",
        };
        self.usd += other.usd;
        self.calls = calls;
    }
}

/// The `relevance` block of a search answer.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RelevanceReport {
    /// `success` (every batch's answer accepted), `partial`, `failed` (local ranking),
    /// `skipped` (gate, small pool), `unavailable` (configuration), `off` (`ATLAS_RERANK=0`).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `live`, `replay`, or `none` without a call.
    pub source: &'static str,
    /// The model that answered (as the answer named it), else the configured one.
    pub model: Option<String>,
    pub rubric: Option<String>,
    /// Configuration problems that kept a default (`invalid_rubric`, `invalid_flag`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_problems: Vec<&'static str>,
    pub gate: &'static str,
    /// The selection policy and its threshold on the rubric's scale.
    pub policy: &'static str,
    pub threshold: f64,
    pub pool: usize,
    pub sent: usize,
    /// Pool candidates beyond the two batches (they keep their local order).
    pub not_sent: usize,
    pub evaluated: usize,
    /// Evaluations with confidence below 0.70: they keep their lexical position.
    pub uncertain: usize,
    pub batches: Vec<BatchReport>,
    pub ranking_changed: bool,
    /// Judged candidates the selection dropped (`omitted.relevance`).
    pub removed: usize,
    /// Distinct candidates in the pool (after dedup by symbol), and how many the selection
    /// returned: with the cut, `selected + removed` is the `top_k` (or the distinct pool
    /// when smaller): nothing refills.
    pub distinct: usize,
    pub selected: usize,
    pub cost: Cost,
    /// `incurred` or `not_incurred`.
    pub cost_status: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<&'static str>,
}

/// The judge's verdict on a pool: evaluations by pool item, and the report so far (the
/// search completes `ranking_changed`, `removed` and `warnings`).
#[derive(Debug, Clone)]
pub struct Judgement {
    pub evaluations: HashMap<u32, Evaluation>,
    pub report: RelevanceReport,
    pub selection: Selection,
}

impl Judgement {
    /// The one JSON cost line a search writes to stderr (R-J-9).
    pub fn cost_line(report: Option<&RelevanceReport>) -> String {
        let zero = Cost {
            status: "zero",
            usd: 0.0,
            calls: 0,
        };
        let cost = report.map_or(&zero, |r| &r.cost);
        serde_json::json!({
            "atlas_relevance_cost": {
                "status": cost.status,
                "usd": cost.usd,
                "calls": cost.calls,
                "relevance": report.map_or("off", |r| r.status),
            }
        })
        .to_string()
    }
}

/// A candidate's id in requests and records: opaque, stable across builds while its path,
/// symbol and kind are (edits elsewhere in the file do not change it).
pub fn candidate_id(path: &str, symbol: &str, kind: &str) -> String {
    let hash = blake3::hash(format!("{path}\0{symbol}\0{kind}").as_bytes());
    format!("c{}", &hash.to_hex()[..12])
}

/// Whether `query` is one identifier, dotted or `::`-separated (`search_hyb`,
/// `StorageBackend.search_hybrid`).
pub fn is_identifier_query(query: &str) -> bool {
    let query = query.trim();
    !query.is_empty()
        && query
            .split("::")
            .flat_map(|part| part.split('.'))
            .all(|part| {
                let mut chars = part.chars();
                chars
                    .next()
                    .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
                    && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
            })
}

/// Runs the judge over `pool` (items in lexical-rerank order); `describe` gives each
/// item's candidate (`None`: not sent). Never fails: every problem is a status.
pub fn judge(
    setting: &Setting,
    query: &str,
    pool: &[u32],
    describe: &dyn Fn(u32) -> Option<WireCandidate>,
    gate: GateFacts,
) -> Judgement {
    let config = setting.config;
    let rubric = RubricText::load(config.rubric);
    let scale = rubric.as_ref().map_or(3.0, RubricText::scale);
    let selection = if setting.compact && config.cut {
        Selection::cut(scale)
    } else {
        Selection::conservative(scale)
    };
    let mut report = blank_report(config, selection, pool.len());
    let mut entry = ledger::Entry::default();
    // Adds the search to the ledger; a ledger that cannot be written is a warning.
    let done = |mut report: RelevanceReport,
                evaluations: HashMap<u32, Evaluation>,
                entry: ledger::Entry| {
        if let Some(dir) = setting.ledger_dir {
            match ledger::add(dir, &entry) {
                Ok(None) => {}
                Ok(Some(code)) | Err(code) => report.warnings.push(code),
            }
        }
        Judgement {
            evaluations,
            report,
            selection,
        }
    };
    // Configuration first: a wrong URL or model never sends anything.
    let problem = match (&rubric, &config.replay) {
        (None, _) => Some("rubric_unreadable"),
        (Some(_), Some(_)) => None,
        (Some(_), None) => config
            .url
            .as_ref()
            .err()
            .or(config.model.as_ref().err())
            .copied()
            .or(config.key.is_none().then_some("missing_key")),
    };
    let replay = match (&problem, &config.replay) {
        (None, Some(path)) => match Replay::load(path) {
            Ok((replay, _skipped)) => Some(replay),
            Err(code) => {
                report.status = "unavailable";
                report.reason = Some(code.to_string());
                return done(report, HashMap::new(), entry);
            }
        },
        _ => None,
    };
    let (Some(rubric), None) = (rubric, problem) else {
        report.status = "unavailable";
        report.reason = problem.map(str::to_string);
        return done(report, HashMap::new(), entry);
    };
    // The gate, then the rule for pools too small to reorder.
    let skip = match config.gate {
        Gate::Identifier if gate.identifier_query => Some("identifier_query"),
        Gate::UniqueExactSymbol | Gate::Identifier if gate.unique_exact_symbol => {
            Some("unique_exact_symbol")
        }
        _ if pool.len() < 2 => Some("small_pool"),
        _ => None,
    };
    if let Some(reason) = skip {
        report.reason = Some(reason.to_string());
        entry.skipped = true;
        return done(report, HashMap::new(), entry);
    }
    let mut evaluations = HashMap::new();

    // The candidates, in pool order, each id once.
    let mut items_by_id: HashMap<String, u32> = HashMap::new();
    let mut candidates = Vec::new();
    for &item in pool {
        if let Some(candidate) = describe(item)
            && !items_by_id.contains_key(&candidate.id)
        {
            items_by_id.insert(candidate.id.clone(), item);
            candidates.push(candidate);
        }
    }
    let model = config
        .model
        .clone()
        .unwrap_or_else(|_| crate::config::RELEVANCE_MODEL.to_string());
    let (batches, not_sent) = wire::batches(&model, query, &rubric, &candidates);
    report.not_sent = not_sent + (pool.len() - candidates.len());
    report.sent = batches.iter().map(|b| b.ids.len()).sum();
    report.source = if replay.is_some() { "replay" } else { "live" };
    let query_key = transport::query_key(query);
    let deadline = Instant::now() + transport::DEADLINE;
    let live = match (&config.url, &config.key) {
        (Ok(url), Some(key)) => Some((url.as_str(), key)),
        _ => None,
    };
    let mut records = Vec::new();
    let (mut valid, mut costs_known) = (0usize, 0usize);
    let mut answered_model = None;
    // Both calls go out at once, under the one deadline: an overflow costs one round
    // trip, not two.
    let answered: Vec<(Outcome, usize)> = std::thread::scope(|scope| {
        let calls: Vec<_> = batches
            .iter()
            .map(|batch| {
                let replay = replay.as_ref();
                let rubric_id = rubric.id.as_str();
                let query_key = query_key.as_str();
                scope.spawn(move || match (replay, live) {
                    (Some(replay), _) => replay.answer(query_key, rubric_id, batch, scale),
                    (None, Some((url, key))) => (
                        transport::call(url, key, batch, scale, deadline, config.loopback),
                        0,
                    ),
                    // Not reached: without a replay, the URL and the key were checked.
                    (None, None) => (Outcome::Transport, 0),
                })
            })
            .collect();
        calls
            .into_iter()
            .map(|call| call.join().unwrap_or((Outcome::Transport, 0)))
            .collect()
    });
    for (index, (batch, (outcome, missing))) in batches.iter().zip(answered).enumerate() {
        if replay.is_none() {
            entry.calls += 1;
        }
        if replay.is_some() {
            entry.replayed += 1;
        }
        let code = outcome.code();
        let mut record = Record {
            atlas_relevance_record: transport::RECORD_VERSION,
            query: query_key.clone(),
            rubric: rubric.id.clone(),
            source: "live".into(),
            model: None,
            batch: index,
            ids: batch.ids.clone(),
            outcome: code.clone(),
            answers: Default::default(),
            cost: None,
        };
        match outcome {
            Outcome::Valid(answer) => {
                valid += 1;
                if replay.is_none() {
                    match answer.cost {
                        Some(cost) => {
                            costs_known += 1;
                            report.cost.usd += cost;
                        }
                        None => entry.calls_without_cost += 1,
                    }
                }
                for (id, evaluation) in &answer.evaluations {
                    if let Some(&item) = items_by_id.get(id) {
                        evaluations.insert(item, *evaluation);
                    }
                }
                answered_model.get_or_insert(answer.model.clone());
                record.model = Some(answer.model.clone());
                record.cost = answer.cost;
                record.answers = answer.evaluations;
            }
            Outcome::Timeout => entry.timeouts += 1,
            Outcome::Http(_) => entry.http_errors += 1,
            Outcome::Invalid(_) => entry.invalid_batches += 1,
            Outcome::Transport => entry.transport_errors += 1,
        }
        report.batches.push(BatchReport {
            candidates: batch.ids.len(),
            outcome: code,
            replay_missing: missing,
        });
        records.push(record);
    }
    if let (Some(path), None) = (&config.record, &replay)
        && let Err(code) = transport::append_records(path, &records)
    {
        report.warnings.push(code);
    }
    let calls = entry.calls as usize;
    report.cost.calls = calls;
    report.cost.status = match (calls, costs_known) {
        (0, _) => "zero",
        (c, k) if k == c => "known",
        (_, 0) => "unknown",
        _ => "partial",
    };
    report.cost.usd = (report.cost.usd * 1e9).round() / 1e9;
    entry.cost_usd = report.cost.usd;
    report.cost_status = if calls > 0 {
        "incurred"
    } else {
        "not_incurred"
    };
    report.evaluated = evaluations.len();
    report.uncertain = evaluations
        .values()
        .filter(|e| e.confidence < UNCERTAIN_BELOW)
        .count();
    if let Some(model) = answered_model {
        report.model = Some(model);
    }
    report.status = match (valid, batches.len()) {
        (_, 0) => "skipped",
        (v, n) if v == n => "success",
        (0, _) => "failed",
        _ => "partial",
    };
    if batches.is_empty() {
        report.reason = Some("nothing_to_send".into());
    } else if valid < batches.len() {
        report.reason = report
            .batches
            .iter()
            .find(|b| b.outcome != "valid")
            .map(|b| b.outcome.clone());
    }
    done(report, evaluations, entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_queries_are_told_from_prose() {
        for yes in [
            "search_hyb",
            "StorageBackend.search_hybrid",
            "a::b::C",
            "$x",
        ] {
            assert!(is_identifier_query(yes), "{yes}");
        }
        for no in ["reciprocal rank fusion", "", "a.", "1abc", "foo()"] {
            assert!(!is_identifier_query(no), "{no}");
        }
    }

    #[test]
    fn candidate_ids_are_opaque_and_stable() {
        let id = candidate_id("src/a.py", "A.f", "method");
        assert_eq!(id, candidate_id("src/a.py", "A.f", "method"));
        assert_ne!(id, candidate_id("src/a.py", "A.g", "method"));
        assert!(!id.contains("a.py") && id.len() == 13);
    }
}
