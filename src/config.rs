//! Configuration, read once at the edge (issue 12): every environment variable Atlas reads,
//! with its documentation, parsed into typed settings that are passed down. The library
//! never reads the environment, so a server can give each request a `Config` of its own.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{AtlasError, Result};

/// One variable: its name, the values it takes, and what it does. docs/CLI.md's
/// environment table lists exactly these (tests/cli.rs compares them).
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    pub name: &'static str,
    pub values: &'static str,
    pub doc: &'static str,
}

/// Every variable Atlas reads, besides `PATH` (searched for SCIP indexers).
pub const VARIABLES: &[Variable] = &[
    Variable {
        name: "ATLAS_GRAPH_DIR",
        values: "<dir>",
        doc: "graph directory (alias `ATLAS_INDEX_DIR`)",
    },
    Variable {
        name: "ATLAS_INDEX_DIR",
        values: "<dir>",
        doc: "alias of `ATLAS_GRAPH_DIR`",
    },
    Variable {
        name: "CLAUDE_PROJECT_DIR",
        values: "<dir>",
        doc: "editor root: where the graph is placed when no flag, variable or existing graph names it",
    },
    Variable {
        name: "WORKSPACE_FOLDER_PATHS",
        values: "<dir>[,<dir>…]",
        doc: "editor roots (the first one counts), as `CLAUDE_PROJECT_DIR`",
    },
    Variable {
        name: "ATLAS_SCIP",
        values: "1",
        doc: "same as `build --scip-run`",
    },
    Variable {
        name: "ATLAS_RERANK",
        values: "0",
        doc: "disable every reordering after RRF in search",
    },
    Variable {
        name: "ATLAS_RELEVANCE",
        values: "1|true",
        doc: "judge the search pool with the remote Jev model (System One API on OpenRouter) before `top_k`; off by default, and nothing else turns it on; `ATLAS_RERANK=0` wins",
    },
    Variable {
        name: "ATLAS_RELEVANCE_API_URL",
        values: "<url>",
        doc: "the System One endpoint (default `https://openrouter.ai/api/v1/systemone`); only https on host `openrouter.ai`, without user, query or fragment; anything else is `invalid_url` and the search stays local",
    },
    Variable {
        name: "ATLAS_RELEVANCE_API_KEY",
        values: "<key>",
        doc: "the key sent to the endpoint; never written to any output, log or file",
    },
    Variable {
        name: "ATLAS_RELEVANCE_MODEL",
        values: "<model>",
        doc: "`~typesafe/jev-latest` (default), `typesafe/jev-latest` or a pin `typesafe/jev-<n>[.<n>…][-YYYYMMDD]`; anything else is `invalid_model`; never inherits `ATLAS_SEMANTIC_MODEL`",
    },
    Variable {
        name: "ATLAS_SEMANTIC_API_URL",
        values: "<url>",
        doc: "read only to decide whether `ATLAS_SEMANTIC_API_KEY` may be reused for Jev (only when it is exactly `https://openrouter.ai/api/v1/chat/completions`)",
    },
    Variable {
        name: "ATLAS_SEMANTIC_API_KEY",
        values: "<key>",
        doc: "reused as the Jev key when `ATLAS_RELEVANCE_API_KEY` is unset and `ATLAS_SEMANTIC_API_URL` is OpenRouter's https chat endpoint",
    },
    Variable {
        name: "ATLAS_RELEVANCE_RUBRIC",
        values: "v2|v1",
        doc: "the Jev score rubric (`profiles/relevance/`): v2 (default, four levels with examples) or v1 (three levels); anything else keeps v2 and reports `invalid_rubric`",
    },
    Variable {
        name: "ATLAS_RELEVANCE_CUT",
        values: "1|true|0|false",
        doc: "in the compact profile, drop judged hits below half the scale from the `top_k` without refilling (default on, `top_k_no_refill_v1`); off: drop only confident scores at most 1/8 of the scale, and refill; anything else keeps the default and reports `invalid_flag`",
    },
    Variable {
        name: "ATLAS_RELEVANCE_GATE",
        values: "1|true|identifier",
        doc: "skip the Jev call when the query is an exact name with a single function/method/class match in the pool (`unique_exact_symbol`), or for every identifier query (`identifier`, policy `identifier_query_v1`); off by default",
    },
    Variable {
        name: "ATLAS_RELEVANCE_RECORD",
        values: "<file>",
        doc: "append each Jev batch (query hash, candidate ids, outcome, validated answers, cost) to this JSONL file (format in graph-schema/README.md)",
    },
    Variable {
        name: "ATLAS_RELEVANCE_REPLAY",
        values: "<file>",
        doc: "answer Jev batches from a recorded JSONL file instead of the network (deterministic offline evaluation)",
    },
    Variable {
        name: "ATLAS_RELEVANCE_TEST_LOOPBACK",
        values: "1",
        doc: "test only: also accept an `http://127.0.0.1:<port>` endpoint (a local test server); every other rule stays",
    },
    Variable {
        name: "ATLAS_SEARCH_ARMS",
        values: "bm25,vector,graph,propagate",
        doc: "the search arms to run, any comma list (ablations; default all four; on queries of more than 32 words the vector arm only reorders what the other arms found, unless it runs alone; `propagate` passes evidence one hop along calls and class members from what the graph arm found (and then BM25's best symbols) to neighbours BM25 found too, so it needs `graph` and `bm25`); an unknown arm is `atlas-invalid-input` when a search runs",
    },
    Variable {
        name: "ATLAS_SEARCH_ALLOCATION",
        values: "none|file",
        doc: "file-then-function allocation in search: `file` ranks files by their candidates' evidence, adds the best three files' own symbols by BM25 within each (the `file` arm) and keeps a class's methods behind it; `none` (default: it measured below the fused order on swe-verified-dev, docs/QUALITY.md) keeps the fused order; needs the `bm25` arm; anything else is `atlas-invalid-input` when a search runs",
    },
    Variable {
        name: "ATLAS_FUSION",
        values: "split|split-files|rrf|learned",
        doc: "how search weighs its candidates before the rerank's exact-name tiers: `split` (default) shows files in RRF's order, weighed with their symbols' BM25 evidence unless `ATLAS_FILE_ORDER=rrf` (on prose, by default, in the learned file scorer's order: `ATLAS_FILE_ORDER`), and ranks the symbols by the learned scorer within it (the first three files add their own symbols by BM25 for it); `split-files` is `split` with the files that hold symbols reordered by a learned file scorer; `rrf` is reciprocal rank fusion with the hand priors (tests 0.6, sections 0.5, a commit-style scope 1.5) for files and symbols alike; `learned` is the logistic-regression scorer over each candidate's arm ranks, kind, size, centrality, test/section/scope flags and file evidence (weights trained by `bench/fusion/train.py` on commit-message sets outside the evaluation) for both; anything else is `atlas-invalid-input` when a search runs",
    },
    Variable {
        name: "ATLAS_FILE_ORDER",
        values: "learned|fused|symbols|rrf",
        doc: "the file order of `split` fusion: `learned` (default) is `fused` on queries of 32 words or fewer and, on longer ones (prose: an issue's text), orders the files that hold symbols by the learned file scorer of `ATLAS_FUSION=split-files`, which reads the fused order among its features; `fused` weighs each file's place in RRF's order with its place among files by the BM25 evidence of their symbols (the decayed sum of their best scores among the best 200 symbol documents, tests left out) and its place by BM25 over the files' whole text (one document per file, scored among files only; tests left out); `symbols` leaves the whole text out (the default before search index version 6); `rrf` keeps RRF's order alone; other fusions ignore it; anything else is `atlas-invalid-input` when a search runs",
    },
    Variable {
        name: "ATLAS_SEARCH_FEATURES",
        values: "<file>",
        doc: "training aid: append one JSON line per search to this file, each fused candidate's path, symbol and learned features (it holds paths and names, unlike every log; for `bench/fusion/train.py`); a write failure is reported in `arms.unavailable.features`",
    },
    Variable {
        name: "ATLAS_OBSERVABILITY",
        values: "1",
        doc: "record one event per `context`/`search`/`expand` call in `<graph>/observability/events.jsonl` (sizes, codes and tokenizer identity only; 3 × 1 MiB rotation); `status` reports counts and `dropped_events`",
    },
    Variable {
        name: "ATLAS_CONTEXT_OPTIMIZATION",
        values: "1",
        doc: "`search` defaults to the compact profile (path, symbol, lines, ref; conservative dedup; budget at 70% of `--max-tokens`)",
    },
    Variable {
        name: "ATLAS_TOKENIZER_PATH",
        values: "<tokenizer.json>",
        doc: "a HuggingFace tokenizer for budgets instead of o200k; an unreadable or invalid file falls back to characters and says why (`budget.mode`/`tokenizer`)",
    },
    Variable {
        name: "ATLAS_EMBED_MODEL",
        values: "<dir>",
        doc: "a local model2vec model directory instead of the embedded one (vectors are kept per model)",
    },
    Variable {
        name: "ATLAS_INJECT_FAILURE",
        values: "after-extract|before-publish|stall-before-publish|slow-memo-write|check-cross-reuse|worker-panic|worker-sleep-<ms>",
        doc: "test hook: fail the build at that point (`stall-…`: hang there 10 s; `slow-memo-write`: the resolution memo waits 0.5 s before its rename; `check-cross-reuse`: every cross part an edit takes unbuilt is built again, and the build fails where one differs; several joined by commas); a daemon's workers panic on every request, or sleep that long before each",
    },
    Variable {
        name: "ATLAS_EXPAND_OUTLINE",
        values: "0",
        doc: "`expand` returns a large class whole (paginated) instead of its header plus a method outline",
    },
    Variable {
        name: "ATLAS_EARLY_RETRIEVAL",
        values: "0",
        doc: "`context` reads a question's names, searches it and walks its relations one after the other, instead of reading (and, for names written as code or paths, walking) beside the search on a search helper thread (the answer is the same either way)",
    },
    Variable {
        name: "ATLAS_WATCH",
        values: "1|true",
        doc: "`atlas mcp` and `atlas daemon` watch the tree and rebuild incrementally after a debounce, as `atlas watch` does",
    },
    Variable {
        name: "ATLAS_WATCH_DEBOUNCE_MS",
        values: "<ms>",
        doc: "quiet time after the last change before a watch-triggered build (default 300)",
    },
    Variable {
        name: "ATLAS_WATCH_POLL",
        values: "1",
        doc: "the watcher polls (every second) instead of using inotify, as it does by itself where inotify is unavailable or exhausted",
    },
    Variable {
        name: "ATLAS_LOCK_WAIT_MS",
        values: "<ms>",
        doc: "how long a read that must write (refresh the graph, build or repair a search index) waits for another process's build (default 10000); then it answers from the committed generation with `atlas-context-stale-graph`",
    },
];

/// How long a read that must write waits for another build by default.
const DEFAULT_LOCK_WAIT: Duration = Duration::from_millis(10_000);

/// The watcher's default debounce.
const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(300);

/// Watching the tree (`ATLAS_WATCH*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchConfig {
    /// `atlas mcp` and the daemon watch too.
    pub enabled: bool,
    pub debounce: Duration,
    pub force_poll: bool,
    /// A watcher of this process keeps the committed generation fresh, so reads skip
    /// their own freshness scan (set by the daemon and the MCP server, never by the
    /// environment).
    pub fresh_by_watcher: bool,
    /// Without a watcher, a read that found the tree clean keeps what that depends on,
    /// and the next read checks it by `stat` alone (`build::settled`; set by the daemon
    /// and the MCP server, which stay up, never by the environment).
    pub fresh_by_recheck: bool,
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            enabled: false,
            debounce: DEFAULT_DEBOUNCE,
            force_poll: false,
            fresh_by_watcher: false,
            fresh_by_recheck: false,
        }
    }
}

/// Which search arms run (`ATLAS_SEARCH_ARMS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arms {
    pub bm25: bool,
    pub vector: bool,
    pub graph: bool,
    /// Evidence propagated one hop along edges from what the graph arm found (issue 16).
    pub propagate: bool,
}

impl Arms {
    pub const ALL: Arms = Arms {
        bm25: true,
        vector: true,
        graph: true,
        propagate: true,
    };

    /// A comma list of `bm25`, `vector`, `graph`, `propagate`; an unknown arm or an empty
    /// list is an error.
    pub fn parse(list: &str) -> Result<Arms> {
        let mut arms = Arms {
            bm25: false,
            vector: false,
            graph: false,
            propagate: false,
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "bm25" => arms.bm25 = true,
                "vector" => arms.vector = true,
                "graph" => arms.graph = true,
                "propagate" => arms.propagate = true,
                other => {
                    return Err(AtlasError::InvalidInput {
                        what: "ATLAS_SEARCH_ARMS",
                        reason: format!(
                            "unknown arm `{other}` (expected bm25, vector, graph, propagate)"
                        ),
                    });
                }
            }
        }
        if !(arms.bm25 || arms.vector || arms.graph || arms.propagate) {
            return Err(AtlasError::InvalidInput {
                what: "ATLAS_SEARCH_ARMS",
                reason: "no arm named (expected bm25, vector, graph, propagate)".into(),
            });
        }
        Ok(arms)
    }
}

/// How search orders its fused candidates (`ATLAS_SEARCH_ALLOCATION`, issue 16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allocation {
    /// Files first: the best files' own symbols join the pool (the `file` arm), and a
    /// class keeps its methods behind it.
    File,
    /// The fused (and reranked) order as it is.
    None,
}

impl Allocation {
    pub fn parse(value: &str) -> std::result::Result<Allocation, String> {
        match value.trim() {
            "file" => Ok(Allocation::File),
            "none" => Ok(Allocation::None),
            other => Err(format!(
                "unknown allocation `{other}` (expected file, none)"
            )),
        }
    }
}

/// How search weighs its candidates (`ATLAS_FUSION`, issue 16); `Split` by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fusion {
    /// Reciprocal rank fusion with the hand priors.
    Rrf,
    /// The learned scorer (`query::search::learned`).
    Learned,
    /// RRF ranks the files, the learned scorer the symbols within that file order
    /// (`query::search::split`).
    Split,
    /// As `Split`, with the files that hold symbols reordered by the file scorer.
    SplitFiles,
}

impl Fusion {
    pub fn parse(value: &str) -> std::result::Result<Fusion, String> {
        match value.trim() {
            "rrf" => Ok(Fusion::Rrf),
            "learned" => Ok(Fusion::Learned),
            "split" => Ok(Fusion::Split),
            "split-files" => Ok(Fusion::SplitFiles),
            other => Err(format!(
                "unknown fusion `{other}` (expected split, split-files, rrf, learned)"
            )),
        }
    }
}

/// The file order of split fusion (`ATLAS_FILE_ORDER`, issue 16); `Learned` by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOrder {
    /// `Fused`, except that on prose (an issue's or a long commit message's text) the files
    /// that hold symbols are ordered by the learned file scorer, which reads their places
    /// in the fused order among its features.
    Learned,
    /// RRF's file order weighed with the files' own BM25 evidence: their symbols' and
    /// their whole text's (`split::fused_file_order`).
    Fused,
    /// RRF's file order weighed with their symbols' BM25 evidence only (the default
    /// until search index version 6).
    Symbols,
    /// RRF's file order alone.
    Rrf,
}

impl FileOrder {
    pub fn parse(value: &str) -> std::result::Result<FileOrder, String> {
        match value.trim() {
            "learned" => Ok(FileOrder::Learned),
            "fused" => Ok(FileOrder::Fused),
            "symbols" => Ok(FileOrder::Symbols),
            "rrf" => Ok(FileOrder::Rrf),
            other => Err(format!(
                "unknown file order `{other}` (expected learned, fused, symbols, rrf)"
            )),
        }
    }
}

/// Hybrid search settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchConfig {
    /// The arms, or why the variable naming them is wrong (reported when a search runs,
    /// not when another command reads the configuration).
    arms: std::result::Result<Arms, String>,
    /// File-then-function allocation (`ATLAS_SEARCH_ALLOCATION`), or why the value is wrong.
    allocation: std::result::Result<Allocation, String>,
    /// RRF or the learned scorer (`ATLAS_FUSION`), or why the value is wrong.
    fusion: std::result::Result<Fusion, String>,
    /// Split fusion's file order (`ATLAS_FILE_ORDER`), or why the value is wrong.
    file_order: std::result::Result<FileOrder, String>,
    /// Where each search's candidates and features are appended (`ATLAS_SEARCH_FEATURES`).
    pub features_out: Option<PathBuf>,
    /// Reorder after RRF (`ATLAS_RERANK=0` turns it off).
    pub rerank: bool,
    /// `search` answers in the compact profile unless asked otherwise.
    pub compact_by_default: bool,
    /// The remote relevance judge (Jev).
    pub relevance: RelevanceConfig,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            arms: Ok(Arms::ALL),
            allocation: Ok(Allocation::None),
            fusion: Ok(Fusion::Split),
            file_order: Ok(FileOrder::Learned),
            features_out: None,
            rerank: true,
            compact_by_default: false,
            relevance: RelevanceConfig::default(),
        }
    }
}

impl SearchConfig {
    pub fn with_arms(arms: Arms) -> SearchConfig {
        SearchConfig {
            arms: Ok(arms),
            ..SearchConfig::default()
        }
    }

    /// The arms to run, or the typed error of a wrong `ATLAS_SEARCH_ARMS`.
    pub fn arms(&self) -> Result<Arms> {
        self.arms
            .clone()
            .map_err(|reason| AtlasError::InvalidInput {
                what: "ATLAS_SEARCH_ARMS",
                reason,
            })
    }

    /// The fusion, or the typed error of a wrong `ATLAS_FUSION`.
    pub fn fusion(&self) -> Result<Fusion> {
        self.fusion
            .clone()
            .map_err(|reason| AtlasError::InvalidInput {
                what: "ATLAS_FUSION",
                reason,
            })
    }

    /// Split fusion's file order, or the typed error of a wrong `ATLAS_FILE_ORDER`.
    pub fn file_order(&self) -> Result<FileOrder> {
        self.file_order
            .clone()
            .map_err(|reason| AtlasError::InvalidInput {
                what: "ATLAS_FILE_ORDER",
                reason,
            })
    }

    /// The allocation, or the typed error of a wrong `ATLAS_SEARCH_ALLOCATION`.
    pub fn allocation(&self) -> Result<Allocation> {
        self.allocation
            .clone()
            .map_err(|reason| AtlasError::InvalidInput {
                what: "ATLAS_SEARCH_ALLOCATION",
                reason,
            })
    }

    /// Whether the vector arm may run (so its model is worth loading early).
    pub fn wants_vectors(&self) -> bool {
        self.arms.as_ref().is_ok_and(|a| a.vector)
    }
}

/// The default System One endpoint (R-J-2).
pub const RELEVANCE_URL: &str = "https://openrouter.ai/api/v1/systemone";
/// The default Jev model.
pub const RELEVANCE_MODEL: &str = "~typesafe/jev-latest";
/// The only semantic endpoint whose key Jev may reuse.
const OPENROUTER_CHAT_URL: &str = "https://openrouter.ai/api/v1/chat/completions";

/// A secret that never prints: `Debug` shows `<redacted>`, and it has no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The Jev score rubric (R-J-5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rubric {
    V1,
    V2,
}

/// When the Jev call is skipped (R-J-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    Off,
    /// An exact name with a single function/method/class match in the pool.
    UniqueExactSymbol,
    /// Every identifier query (`identifier_query_v1`).
    Identifier,
}

/// The optional remote relevance judge (R-J-1..9), as the environment configures it. A
/// wrong value never fails a search: it is reported (`invalid_url`, `invalid_model`,
/// `invalid_rubric`, `invalid_flag`) and the setting keeps its default or the search runs
/// locally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelevanceConfig {
    /// `ATLAS_RELEVANCE=1|true`, and nothing else.
    pub requested: bool,
    /// The endpoint, or `invalid_url`.
    pub url: std::result::Result<String, &'static str>,
    pub key: Option<Secret>,
    /// The model, or `invalid_model`.
    pub model: std::result::Result<String, &'static str>,
    pub rubric: Rubric,
    /// `invalid_rubric` when `ATLAS_RELEVANCE_RUBRIC` named no rubric.
    pub rubric_problem: Option<&'static str>,
    /// The compact profile's `top_k` cut without refill.
    pub cut: bool,
    pub cut_problem: Option<&'static str>,
    pub gate: Gate,
    pub gate_problem: Option<&'static str>,
    pub record: Option<PathBuf>,
    pub replay: Option<PathBuf>,
    /// Test only (`ATLAS_RELEVANCE_TEST_LOOPBACK=1`): an `http://127.0.0.1:<port>` URL is
    /// accepted too.
    pub loopback: bool,
}

impl Default for RelevanceConfig {
    fn default() -> Self {
        RelevanceConfig {
            requested: false,
            url: Ok(RELEVANCE_URL.to_string()),
            key: None,
            model: Ok(RELEVANCE_MODEL.to_string()),
            rubric: Rubric::V2,
            rubric_problem: None,
            cut: true,
            cut_problem: None,
            gate: Gate::Off,
            gate_problem: None,
            record: None,
            replay: None,
            loopback: false,
        }
    }
}

/// `1`/`true` (any case) → on, `0`/`false` → off, unset → `default`, anything else →
/// `default` and `invalid_flag`.
fn flag(value: Option<&str>, default: bool) -> (bool, Option<&'static str>) {
    match value.map(str::trim) {
        None => (default, None),
        Some(v) if v == "1" || v.eq_ignore_ascii_case("true") => (true, None),
        Some(v) if v == "0" || v.eq_ignore_ascii_case("false") => (false, None),
        Some(_) => (default, Some("invalid_flag")),
    }
}

/// Whether `url` may receive the query and the code (R-J-2): https, host `openrouter.ai`
/// (default port), no user info, query or fragment. With `loopback` (tests only), an
/// `http://127.0.0.1:<port>` URL too.
pub fn relevance_url_allowed(url: &str, loopback: bool) -> bool {
    if url.contains(['?', '#']) || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    let lower = url.to_ascii_lowercase();
    let (secure, rest) = if let Some(rest) = lower.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = lower.strip_prefix("http://") {
        (false, rest)
    } else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or("");
    if authority.contains('@') {
        return false;
    }
    if secure && (authority == "openrouter.ai" || authority == "openrouter.ai:443") {
        return true;
    }
    loopback
        && !secure
        && authority
            .strip_prefix("127.0.0.1:")
            .is_some_and(|port| port.parse::<u16>().is_ok_and(|p| p > 0))
}

/// Whether `model` names Jev (R-J-2): `~typesafe/jev-latest`, `typesafe/jev-latest`, or a
/// pin `typesafe/jev-<n>[.<n>…][-YYYYMMDD]`.
pub fn is_jev_model(model: &str) -> bool {
    let Some(rest) = model
        .strip_prefix("~typesafe/jev-")
        .or_else(|| model.strip_prefix("typesafe/jev-"))
    else {
        return false;
    };
    if rest == "latest" {
        return true;
    }
    if model.starts_with('~') {
        return false;
    }
    let (version, date) = match rest.split_once('-') {
        Some((version, date)) => (version, Some(date)),
        None => (rest, None),
    };
    let numbers_ok = !version.is_empty()
        && version
            .split('.')
            .all(|n| !n.is_empty() && n.len() <= 6 && n.bytes().all(|b| b.is_ascii_digit()));
    let date_ok = date.is_none_or(|d| d.len() == 8 && d.bytes().all(|b| b.is_ascii_digit()));
    numbers_ok && date_ok
}

impl RelevanceConfig {
    fn read(text: &dyn Fn(&str) -> Option<String>) -> RelevanceConfig {
        let loopback = text("ATLAS_RELEVANCE_TEST_LOOPBACK").is_some_and(|v| v == "1");
        let url = match text("ATLAS_RELEVANCE_API_URL") {
            None => Ok(RELEVANCE_URL.to_string()),
            Some(url) if relevance_url_allowed(url.trim(), loopback) => Ok(url.trim().to_string()),
            Some(_) => Err("invalid_url"),
        };
        let key = text("ATLAS_RELEVANCE_API_KEY").or_else(|| {
            (text("ATLAS_SEMANTIC_API_URL").as_deref() == Some(OPENROUTER_CHAT_URL))
                .then(|| text("ATLAS_SEMANTIC_API_KEY"))
                .flatten()
        });
        let model = match text("ATLAS_RELEVANCE_MODEL") {
            None => Ok(RELEVANCE_MODEL.to_string()),
            Some(model) if is_jev_model(model.trim()) => Ok(model.trim().to_string()),
            Some(_) => Err("invalid_model"),
        };
        let (rubric, rubric_problem) =
            match text("ATLAS_RELEVANCE_RUBRIC").as_deref().map(str::trim) {
                None => (Rubric::V2, None),
                Some(v) if v.eq_ignore_ascii_case("v2") => (Rubric::V2, None),
                Some(v) if v.eq_ignore_ascii_case("v1") => (Rubric::V1, None),
                Some(_) => (Rubric::V2, Some("invalid_rubric")),
            };
        let (cut, cut_problem) = flag(text("ATLAS_RELEVANCE_CUT").as_deref(), true);
        let (gate, gate_problem) = match text("ATLAS_RELEVANCE_GATE").as_deref().map(str::trim) {
            Some(v) if v.eq_ignore_ascii_case("identifier") => (Gate::Identifier, None),
            value => match flag(value, false) {
                (true, problem) => (Gate::UniqueExactSymbol, problem),
                (false, problem) => (Gate::Off, problem),
            },
        };
        let path = |name: &str| text(name).map(PathBuf::from);
        RelevanceConfig {
            requested: text("ATLAS_RELEVANCE")
                .is_some_and(|v| v.trim() == "1" || v.trim().eq_ignore_ascii_case("true")),
            url,
            key: key.map(Secret),
            model,
            rubric,
            rubric_problem,
            cut,
            cut_problem,
            gate,
            gate_problem,
            record: path("ATLAS_RELEVANCE_RECORD"),
            replay: path("ATLAS_RELEVANCE_REPLAY"),
            loopback,
        }
    }
}

/// Where the embedding model comes from (`ATLAS_EMBED_MODEL`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EmbedSource {
    /// The model embedded in the binary.
    #[default]
    Embedded,
    /// A local model2vec directory.
    Dir(PathBuf),
}

/// What places the graph directory when no flag does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// `ATLAS_GRAPH_DIR`.
    pub graph_dir: Option<String>,
    /// `ATLAS_INDEX_DIR`, its alias.
    pub index_dir: Option<String>,
    /// `CLAUDE_PROJECT_DIR`.
    pub claude_project_dir: Option<String>,
    /// `WORKSPACE_FOLDER_PATHS`.
    pub workspace_folder_paths: Option<String>,
}

/// Everything Atlas takes from its environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub placement: Placement,
    pub lock_wait: Duration,
    pub scip_run: bool,
    /// Where SCIP indexers are looked for (`PATH`).
    pub search_path: Option<OsString>,
    pub search: SearchConfig,
    pub embed: EmbedSource,
    pub tokenizer: Option<PathBuf>,
    pub expand_outline: bool,
    /// `context` reads a question's names, and walks those written as code, beside its
    /// search (`ATLAS_EARLY_RETRIEVAL=0` turns it off).
    pub early_retrieval: bool,
    pub observability: bool,
    pub watch: WatchConfig,
    /// Test hook: a build fails at this point.
    pub inject_failure: Option<String>,
}

impl Default for Config {
    /// What an empty environment means.
    fn default() -> Self {
        Config {
            placement: Placement::default(),
            lock_wait: DEFAULT_LOCK_WAIT,
            scip_run: false,
            search_path: None,
            search: SearchConfig::default(),
            embed: EmbedSource::Embedded,
            tokenizer: None,
            expand_outline: true,
            early_retrieval: true,
            observability: false,
            watch: WatchConfig::default(),
            inject_failure: None,
        }
    }
}

impl Config {
    /// Reads every variable through `get` (the process environment at the edge; a map in
    /// tests and servers). An empty value counts as unset.
    pub fn from_lookup(get: &dyn Fn(&str) -> Option<OsString>) -> Config {
        let text = |name: &str| {
            get(name)
                .map(|v| v.to_string_lossy().into_owned())
                .filter(|v| !v.is_empty())
        };
        let path = |name: &str| get(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let on = |name: &str, value: &str| text(name).is_some_and(|v| v == value);
        Config {
            placement: Placement {
                graph_dir: text("ATLAS_GRAPH_DIR"),
                index_dir: text("ATLAS_INDEX_DIR"),
                claude_project_dir: text("CLAUDE_PROJECT_DIR"),
                workspace_folder_paths: text("WORKSPACE_FOLDER_PATHS"),
            },
            lock_wait: text("ATLAS_LOCK_WAIT_MS")
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(DEFAULT_LOCK_WAIT, Duration::from_millis),
            scip_run: text("ATLAS_SCIP")
                .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
            search_path: get("PATH"),
            search: SearchConfig {
                arms: match text("ATLAS_SEARCH_ARMS") {
                    Some(list) if !list.trim().is_empty() => {
                        Arms::parse(&list).map_err(|e| match e {
                            AtlasError::InvalidInput { reason, .. } => reason,
                            other => other.to_string(),
                        })
                    }
                    _ => Ok(Arms::ALL),
                },
                allocation: match text("ATLAS_SEARCH_ALLOCATION") {
                    Some(value) if !value.trim().is_empty() => Allocation::parse(&value),
                    _ => Ok(Allocation::None),
                },
                fusion: match text("ATLAS_FUSION") {
                    Some(value) if !value.trim().is_empty() => Fusion::parse(&value),
                    _ => Ok(Fusion::Split),
                },
                file_order: match text("ATLAS_FILE_ORDER") {
                    Some(value) if !value.trim().is_empty() => FileOrder::parse(&value),
                    _ => Ok(FileOrder::Learned),
                },
                features_out: path("ATLAS_SEARCH_FEATURES"),
                rerank: !on("ATLAS_RERANK", "0"),
                compact_by_default: on("ATLAS_CONTEXT_OPTIMIZATION", "1"),
                relevance: RelevanceConfig::read(&text),
            },
            embed: path("ATLAS_EMBED_MODEL").map_or(EmbedSource::Embedded, EmbedSource::Dir),
            tokenizer: path("ATLAS_TOKENIZER_PATH"),
            expand_outline: !on("ATLAS_EXPAND_OUTLINE", "0"),
            early_retrieval: !on("ATLAS_EARLY_RETRIEVAL", "0"),
            observability: on("ATLAS_OBSERVABILITY", "1"),
            watch: WatchConfig {
                enabled: text("ATLAS_WATCH")
                    .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true")),
                debounce: text("ATLAS_WATCH_DEBOUNCE_MS")
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map_or(DEFAULT_DEBOUNCE, Duration::from_millis),
                force_poll: on("ATLAS_WATCH_POLL", "1"),
                fresh_by_watcher: false,
                fresh_by_recheck: false,
            },
            inject_failure: text("ATLAS_INJECT_FAILURE"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Config {
        let pairs: Vec<(String, OsString)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        Config::from_lookup(&|name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        })
    }

    #[test]
    fn an_empty_environment_is_the_default() {
        assert_eq!(config(&[]), Config::default());
        assert_eq!(config(&[("ATLAS_RERANK", "")]), Config::default());
    }

    #[test]
    fn every_variable_is_read_into_its_setting() {
        let c = config(&[
            ("ATLAS_INDEX_DIR", "/g"),
            ("ATLAS_LOCK_WAIT_MS", "250"),
            ("ATLAS_SCIP", "true"),
            ("ATLAS_SEARCH_ARMS", "bm25, graph"),
            ("ATLAS_SEARCH_ALLOCATION", "file"),
            ("ATLAS_FUSION", "learned"),
            ("ATLAS_FILE_ORDER", "rrf"),
            ("ATLAS_SEARCH_FEATURES", "/f.jsonl"),
            ("ATLAS_RERANK", "0"),
            ("ATLAS_CONTEXT_OPTIMIZATION", "1"),
            ("ATLAS_EMBED_MODEL", "/m"),
            ("ATLAS_TOKENIZER_PATH", "/t.json"),
            ("ATLAS_EXPAND_OUTLINE", "0"),
            ("ATLAS_OBSERVABILITY", "1"),
            ("ATLAS_WATCH", "true"),
            ("ATLAS_WATCH_DEBOUNCE_MS", "50"),
            ("ATLAS_WATCH_POLL", "1"),
            ("ATLAS_INJECT_FAILURE", "before-publish"),
        ]);
        assert_eq!(
            c.watch,
            WatchConfig {
                enabled: true,
                debounce: Duration::from_millis(50),
                force_poll: true,
                fresh_by_watcher: false,
                fresh_by_recheck: false,
            }
        );
        assert_eq!(c.placement.index_dir.as_deref(), Some("/g"));
        assert_eq!(c.lock_wait, Duration::from_millis(250));
        assert!(c.scip_run && !c.search.rerank && c.search.compact_by_default);
        assert_eq!(
            c.search.arms().unwrap(),
            Arms {
                bm25: true,
                vector: false,
                graph: true,
                propagate: false,
            }
        );
        assert_eq!(c.search.allocation().unwrap(), Allocation::File);
        assert_eq!(c.search.fusion().unwrap(), Fusion::Learned);
        assert_eq!(c.search.file_order().unwrap(), FileOrder::Rrf);
        assert_eq!(c.search.features_out, Some(PathBuf::from("/f.jsonl")));
        assert_eq!(c.embed, EmbedSource::Dir("/m".into()));
        assert_eq!(c.tokenizer, Some("/t.json".into()));
        assert!(!c.expand_outline && c.observability);
        assert_eq!(c.inject_failure.as_deref(), Some("before-publish"));
    }

    #[test]
    fn a_wrong_arm_list_fails_only_the_search_that_uses_it() {
        let c = config(&[("ATLAS_SEARCH_ARMS", "bm25,colbert")]);
        let err = c.search.arms().unwrap_err();
        assert_eq!(err.code(), "atlas-invalid-input");
        assert!(err.to_string().contains("colbert"));
        assert!(!c.search.wants_vectors());
        let c = config(&[("ATLAS_FUSION", "boosted")]);
        assert_eq!(c.search.fusion().unwrap_err().code(), "atlas-invalid-input");
        let c = config(&[("ATLAS_FILE_ORDER", " symbols ")]);
        assert_eq!(c.search.file_order().unwrap(), FileOrder::Symbols);
        // The learned file order is the default, and can be asked for by name.
        assert_eq!(config(&[]).search.file_order().unwrap(), FileOrder::Learned);
        let c = config(&[("ATLAS_FILE_ORDER", "learned")]);
        assert_eq!(c.search.file_order().unwrap(), FileOrder::Learned);
        let c = config(&[("ATLAS_FILE_ORDER", "alphabetical")]);
        assert_eq!(
            c.search.file_order().unwrap_err().code(),
            "atlas-invalid-input"
        );
        let c = config(&[("ATLAS_SEARCH_ALLOCATION", "files")]);
        let err = c.search.allocation().unwrap_err();
        assert_eq!(err.code(), "atlas-invalid-input");
        assert!(err.to_string().contains("files"));
        // Everything else reads as usual.
        assert_eq!(c.lock_wait, DEFAULT_LOCK_WAIT);
    }

    #[test]
    fn the_judge_is_on_only_by_its_switch_and_validates_what_it_reads() {
        let off = config(&[
            ("ATLAS_RELEVANCE_API_KEY", "k"),
            ("ATLAS_RELEVANCE_MODEL", "typesafe/jev-latest"),
        ]);
        assert!(!off.search.relevance.requested);
        for on in ["1", "true", "TRUE"] {
            assert!(
                config(&[("ATLAS_RELEVANCE", on)])
                    .search
                    .relevance
                    .requested
            );
        }
        assert!(
            !config(&[("ATLAS_RELEVANCE", "yes")])
                .search
                .relevance
                .requested
        );
        let r = config(&[
            ("ATLAS_RELEVANCE", "1"),
            ("ATLAS_RELEVANCE_API_URL", "https://evil.example/x"),
            ("ATLAS_RELEVANCE_MODEL", "gpt-4o"),
            ("ATLAS_RELEVANCE_RUBRIC", "v3"),
            ("ATLAS_RELEVANCE_CUT", "perhaps"),
            ("ATLAS_RELEVANCE_GATE", "identifier"),
        ])
        .search
        .relevance;
        assert_eq!(r.url, Err("invalid_url"));
        assert_eq!(r.model, Err("invalid_model"));
        assert_eq!(
            (r.rubric, r.rubric_problem),
            (Rubric::V2, Some("invalid_rubric"))
        );
        assert_eq!((r.cut, r.cut_problem), (true, Some("invalid_flag")));
        assert_eq!(r.gate, Gate::Identifier);
        // The key is reused from the semantic settings only for OpenRouter's chat URL,
        // and never printed.
        let reused = config(&[
            ("ATLAS_SEMANTIC_API_KEY", "secret-k"),
            (
                "ATLAS_SEMANTIC_API_URL",
                "https://openrouter.ai/api/v1/chat/completions",
            ),
        ]);
        assert_eq!(
            reused.search.relevance.key.as_ref().map(Secret::expose),
            Some("secret-k")
        );
        assert!(!format!("{reused:?}").contains("secret-k"));
        let elsewhere = config(&[
            ("ATLAS_SEMANTIC_API_KEY", "secret-k"),
            (
                "ATLAS_SEMANTIC_API_URL",
                "https://api.openai.com/v1/chat/completions",
            ),
        ]);
        assert_eq!(elsewhere.search.relevance.key, None);
    }

    #[test]
    fn endpoint_and_model_rules() {
        for ok in [
            "https://openrouter.ai/api/v1/systemone",
            "HTTPS://OpenRouter.ai/api/v1/systemone",
            "https://openrouter.ai:443/api/v1/systemone",
        ] {
            assert!(relevance_url_allowed(ok, false), "{ok}");
        }
        for bad in [
            "http://openrouter.ai/api/v1/systemone",
            "https://openrouter.ai.evil.com/api",
            "https://u:p@openrouter.ai/api/v1/systemone",
            "https://openrouter.ai/api/v1/systemone?k=1",
            "https://openrouter.ai/api/v1/systemone#f",
            "https://openrouter.ai:8443/api/v1/systemone",
            "ftp://openrouter.ai/",
            "http://127.0.0.1:8080/api",
        ] {
            assert!(!relevance_url_allowed(bad, false), "{bad}");
        }
        assert!(relevance_url_allowed("http://127.0.0.1:8080/api", true));
        assert!(!relevance_url_allowed("http://localhost:8080/api", true));
        assert!(!relevance_url_allowed("http://127.0.0.1/api", true));
        for ok in [
            "~typesafe/jev-latest",
            "typesafe/jev-latest",
            "typesafe/jev-1",
            "typesafe/jev-1.13",
            "typesafe/jev-1.13-20260917",
        ] {
            assert!(is_jev_model(ok), "{ok}");
        }
        for bad in [
            "~typesafe/jev-1.13",
            "typesafe/jev-",
            "typesafe/jev-1..2",
            "typesafe/jev-1.13-2026",
            "openai/gpt-4o",
            "typesafe/jev-latest-x",
        ] {
            assert!(!is_jev_model(bad), "{bad}");
        }
    }
}
