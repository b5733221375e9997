//! `atlas context`: the two-stage context compiler (SPEC §5).
//!
//! query → intent (`query`) → retrieval (`retrieve`: candidates with stable ids, classes,
//! scores, required flags) → projection (`project`: relevance gate, slices, byte ceiling)
//! → `ContextOutput` with omission manifest and receipt. The JSON rendering is the
//! contract (graph-schema/context.schema.json); `serialized_bytes` is computed on the
//! exact bytes printed (R-PROJ-5).

pub mod anchor;
mod assemble;
mod fit;
pub mod project;
pub mod retrieve;
pub mod spine;
pub mod text;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::build::pipeline::Companion;
use crate::build::session::{Freshness, Session, open_session};
use crate::build::store::{Location, Store};
use crate::config::Config;
use crate::error::{AtlasError, Result};
use crate::graph::reader::Graph;
use crate::query::crates::Crates;
use crate::query::intent::{self, Intent};
use crate::query::profile::EvidenceClass;
use crate::query::profile::{Profile, ProfileName};
use crate::query::search;
use assemble::Assembly;
use fit::{ECHO_SLACK, Fit, Page, fit_page, query_echoes, required_budget};
use project::{Diagnostic, EvidenceItem, Limits, Omission, ProjectInput, RelationOut};
pub use project::{DiagnosticCode, OmissionReason};

/// v2: one evidence entry per (class, symbol) with `sites`, anchors with
/// `anchor_reason`, diagnostics with `candidates`, the `after-cursor` omission reason.
const SCHEMA: &str = "atlas.context.v2";
/// Percent of the byte ceiling a one-anchor spine's steps may require: the rest holds the
/// runtime boundaries, alternatives and callees (a two-anchor path is never cut).
const SPINE_PAGE_SHARE: usize = 60;

#[derive(Debug, Clone)]
pub struct ContextRequest {
    pub query: String,
    pub profile: ProfileName,
    pub max_bytes: Option<usize>,
    pub min_score: Option<u16>,
    /// The top of a score band (`--max-score`): optional candidates scoring above it were
    /// dealt with by an earlier page (a below-relevance continuation's band).
    pub max_score: Option<u16>,
    pub expect_graph: Option<String>,
    /// `START` or an evidence id.
    pub after: Option<String>,
    /// `--code` and `--graph` exactly as given, carried into continuation argv.
    pub code_arg: Option<String>,
    pub graph_arg: Option<String>,
    /// `--frozen` / `--no-build` (R-GEN-8), replayed by continuations.
    pub freshness: Freshness,
    /// `--format` (`json` or `text`) when the surface prints one, replayed by
    /// continuations; the library itself never renders text.
    pub format: Option<&'static str>,
}

/// What a continuation or a re-asked query changes in a request's argv.
#[derive(Debug, Clone, Copy, Default)]
pub struct ArgvChange<'a> {
    pub query: Option<&'a str>,
    /// `(expected fingerprint, evidence id)`.
    pub after: Option<(&'a str, &'a str)>,
    pub max_bytes: Option<usize>,
    pub min_score: Option<u16>,
    /// `Some(band top)` sets `--max-score`; `Some(None)` drops it.
    pub max_score: Option<Option<u16>>,
    /// Drop `--frozen` (to refresh stale sources).
    pub thaw: bool,
}

impl ContextRequest {
    pub fn new(query: impl Into<String>, profile: ProfileName) -> Self {
        ContextRequest {
            query: query.into(),
            profile,
            max_bytes: None,
            min_score: None,
            max_score: None,
            expect_graph: None,
            after: None,
            code_arg: None,
            graph_arg: None,
            freshness: Freshness::default(),
            format: None,
        }
    }

    /// The literal argv of this request with `change` applied: every flag that shapes the
    /// answer exactly once, as given (R-OMIT-1), so that replaying it in a new process
    /// gives the same document.
    pub fn argv_with(&self, change: ArgvChange) -> Vec<String> {
        let mut argv: Vec<String> = vec![
            "atlas".into(),
            "context".into(),
            change.query.unwrap_or(&self.query).into(),
            "--profile".into(),
            self.profile.as_str().into(),
        ];
        let mut flag = |name: &str, value: Option<String>| {
            if let Some(value) = value {
                argv.push(name.into());
                argv.push(value);
            }
        };
        flag("--code", self.code_arg.clone());
        flag("--graph", self.graph_arg.clone());
        flag(
            "--max-bytes",
            change.max_bytes.or(self.max_bytes).map(|b| b.to_string()),
        );
        flag(
            "--min-score",
            change.min_score.or(self.min_score).map(|s| s.to_string()),
        );
        flag(
            "--max-score",
            change
                .max_score
                .unwrap_or(self.max_score)
                .map(|s| s.to_string()),
        );
        if let Some((fingerprint, after)) = change.after {
            flag("--expect-graph", Some(fingerprint.into()));
            flag("--after", Some(after.into()));
        }
        flag("--format", self.format.map(str::to_string));
        if self.freshness.frozen && !change.thaw {
            argv.push("--frozen".into());
        }
        if self.freshness.no_build {
            argv.push("--no-build".into());
        }
        argv
    }

    /// The argv that asks `query` instead, with every other flag as given.
    pub fn argv_for_query(&self, query: &str) -> Vec<String> {
        self.argv_with(ArgvChange {
            query: Some(query),
            ..ArgvChange::default()
        })
    }

    /// Parses a continuation argv (`["atlas", "context", …]`, as printed in omissions and
    /// diagnostics) back into a request, with the command line's flags and ranges.
    pub fn from_argv(argv: &[String]) -> Result<ContextRequest> {
        let invalid = |reason: String| AtlasError::InvalidInput {
            what: "continuation argv",
            reason,
        };
        let mut args = argv.iter().skip(1);
        let mut positional: Vec<&String> = Vec::new();
        let mut values: Vec<(String, String)> = Vec::new();
        let mut switches: Vec<String> = Vec::new();
        while let Some(arg) = args.next() {
            let Some(flag) = arg.strip_prefix("--") else {
                positional.push(arg);
                continue;
            };
            let (name, inline) = match flag.split_once('=') {
                Some((name, value)) => (name, Some(value.to_string())),
                None => (flag, None),
            };
            match name {
                "frozen" | "no-build" => switches.push(name.to_string()),
                "code" | "graph" | "profile" | "max-bytes" | "min-score" | "max-score"
                | "expect-graph" | "after" | "format" => {
                    let value = match inline {
                        Some(value) => value,
                        None => args
                            .next()
                            .cloned()
                            .ok_or_else(|| invalid(format!("--{name} needs a value")))?,
                    };
                    if values.iter().any(|(n, _)| n == name) {
                        return Err(invalid(format!("--{name} given twice")));
                    }
                    values.push((name.to_string(), value));
                }
                other => return Err(invalid(format!("unknown flag --{other}"))),
            }
        }
        let [command, query] = positional[..] else {
            return Err(invalid("expected `atlas context <query> …`".into()));
        };
        if command != "context" {
            return Err(invalid("not an `atlas context` command".into()));
        }
        let value = |name: &str| {
            values
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        };
        let profile = value("profile").ok_or_else(|| invalid("--profile is required".into()))?;
        let profile = ProfileName::parse(&profile)
            .ok_or_else(|| invalid(format!("unknown profile `{profile}`")))?;
        let max_bytes = match value("max-bytes") {
            Some(text) => Some(
                text.parse::<usize>()
                    .ok()
                    .filter(|b| (1024..=1_000_000).contains(b))
                    .ok_or_else(|| {
                        invalid(format!("--max-bytes {text} is not in 1024..=1000000"))
                    })?,
            ),
            None => None,
        };
        let min_score = match value("min-score") {
            Some(text) => Some(
                text.parse::<u16>()
                    .map_err(|_| invalid(format!("--min-score {text} is not in 0..=65535")))?,
            ),
            None => None,
        };
        let max_score = match value("max-score") {
            Some(text) => Some(
                text.parse::<u16>()
                    .map_err(|_| invalid(format!("--max-score {text} is not in 0..=65535")))?,
            ),
            None => None,
        };
        let format = match value("format").as_deref() {
            None => None,
            Some("json") => Some("json"),
            Some("text") => Some("text"),
            Some(other) => return Err(invalid(format!("unknown format `{other}`"))),
        };
        let after = value("after");
        let expect_graph = value("expect-graph");
        if after.is_some() && expect_graph.is_none() {
            return Err(invalid("--after requires --expect-graph".into()));
        }
        Ok(ContextRequest {
            query: query.clone(),
            profile,
            max_bytes,
            min_score,
            max_score,
            expect_graph,
            after,
            code_arg: value("code"),
            graph_arg: value("graph"),
            freshness: Freshness {
                frozen: switches.iter().any(|s| s == "frozen"),
                no_build: switches.iter().any(|s| s == "no-build"),
            },
            format,
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct GraphOut {
    pub fingerprint: String,
    /// The graph was rebuilt (incrementally) before this query.
    pub refreshed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct AnchorOut {
    pub term: String,
    pub symbol: String,
    pub kind: &'static str,
    /// How the name matched; absent for a search anchor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<&'static str>,
    /// `name` (the query names it), `ranked` (the best candidate of an ambiguous name in
    /// a question) or `search` (the best hit of a question that names nothing).
    pub anchor_reason: &'static str,
    /// The search arms that found a search anchor.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arms: Vec<&'static str>,
}

impl AnchorOut {
    fn of(graph: &Graph, anchor: &intent::Anchor) -> AnchorOut {
        AnchorOut {
            term: anchor.term.clone(),
            symbol: graph.label(anchor.node),
            kind: graph.kind(anchor.node).as_str(),
            tier: anchor.tier.map(intent::MatchTier::as_str),
            anchor_reason: anchor.reason.as_str(),
            arms: match &anchor.reason {
                intent::AnchorReason::Search { arms } => arms.clone(),
                _ => Vec::new(),
            },
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct IntentOut {
    pub anchors: Vec<AnchorOut>,
    pub relations: Vec<&'static str>,
    pub free_terms: Vec<String>,
    /// Flow: where an alternative chain starts (a question's next strong search hit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alternative: Option<AnchorOut>,
}

#[derive(Debug, Clone, Serialize)]
pub struct SpineStep {
    pub id: String,
    pub symbol: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<RelationOut>,
    /// Why this hop was taken (`reach 214, main path, result carried on`).
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProfileOut {
    pub name: String,
    pub version: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct RetrievalReceipt {
    pub total: usize,
    pub eligible: usize,
    pub returned: usize,
    pub cursor_prefix: usize,
    pub hard_cap: usize,
    /// returned / eligible.
    pub coverage: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ProjectionReceipt {
    pub above_relevance: usize,
    pub retained: usize,
    pub below_threshold: usize,
    pub byte_omitted: usize,
    pub item_capped: usize,
    pub cursor_prefix: usize,
    pub skeletonized: usize,
    pub policy_skeletonized: usize,
    pub source_unavailable: usize,
    /// retained / above_relevance.
    pub retention: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct TimingsOut {
    pub freshness: f64,
    pub retrieval: f64,
    pub projection: f64,
    pub total: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Receipt {
    pub profile: ProfileOut,
    pub limits: Limits,
    pub retrieval: RetrievalReceipt,
    pub projection: ProjectionReceipt,
    /// Byte length of the printed JSON document (this field included).
    pub serialized_bytes: usize,
    pub truncated_classes: Vec<&'static str>,
    pub graph_fingerprint: String,
    pub read_back_required: bool,
    pub follow_ups: usize,
    /// `light | traversal | source-heavy | mixed`, from paths traversed and slices read.
    pub load_profile: &'static str,
    pub paths_traversed: usize,
    pub slices_read: usize,
    pub refreshed: bool,
    pub timings_ms: TimingsOut,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContextOutput {
    pub schema: &'static str,
    pub query: String,
    pub profile: String,
    pub graph: GraphOut,
    pub intent: IntentOut,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spine: Vec<SpineStep>,
    pub evidence: Vec<EvidenceItem>,
    pub omissions: Vec<Omission>,
    pub diagnostics: Vec<Diagnostic>,
    pub receipt: Receipt,
}

/// A finished context: the data and its exact JSON text.
pub struct ContextResult {
    pub output: ContextOutput,
    pub json: String,
    /// The Jev report of the query's search, when `ATLAS_RELEVANCE` asked for the judge
    /// (its cost line goes to stderr; the receipt's schema is closed).
    pub relevance: Option<crate::query::search::relevance::RelevanceReport>,
}

/// The compact JSON of a response or of one of its parts.
fn json_of(value: &impl Serialize) -> Result<String> {
    serde_json::to_string(value).map_err(|e| AtlasError::Internal {
        what: "context JSON",
        reason: e.to_string(),
    })
}

fn ms(since: Instant) -> f64 {
    (since.elapsed().as_secs_f64() * 1e6).round() / 1e3
}

/// A committed generation opened for one query, with how it was opened.
#[derive(Clone, Copy)]
pub struct OpenGraph<'a> {
    pub graph: &'a Graph,
    pub fingerprint: &'a str,
    pub code_root: &'a Path,
    /// The graph was rebuilt before this query.
    pub refreshed: bool,
    /// Why sources that changed could not be refreshed (`Session::stale`).
    pub stale: Option<&'a str>,
    pub freshness_ms: f64,
    pub started: Instant,
}

/// Free-text search over the open graph: returns hits, or why search is unavailable.
pub type SearchFn<'a> = dyn Fn(&str) -> Result<Vec<crate::query::search::Hit>> + 'a;

/// Runs one context query end to end, with `config`'s search, model and lock settings.
pub fn run(
    location: &Location,
    request: &ContextRequest,
    config: &Config,
) -> Result<ContextResult> {
    let started = Instant::now();
    // Nothing to look for is a wrong call (as an empty search is), not a no-match.
    if request.query.trim().is_empty() {
        return Err(AtlasError::InvalidInput {
            what: "context query",
            reason: "it is empty: give a name, a path or a question".into(),
        });
    }
    super::check_query_length(&request.query)?;
    let freshness = request.freshness;
    let may_search = intent::may_search(&request.query);
    if may_search && config.search.wants_vectors() {
        // A question searches: the model loads while the graph opens.
        search::embed::warm_up(&config.embed);
    }
    let Session {
        fingerprint,
        graph,
        root,
        refreshed,
        stale,
    } = open_session(
        location,
        freshness,
        may_search.then(|| {
            Arc::new(search::IndexCompanion {
                embed: config.embed.clone(),
            }) as Arc<dyn Companion>
        }),
        config,
    )?;
    let freshness_ms = ms(started);
    let store = Store::new(&location.graph_dir);
    let relevance = std::cell::RefCell::new(None);
    let search = |text: &str| -> Result<Vec<search::Hit>> {
        let embedder = search::embed::Embedder::load(&config.embed)?;
        search::SearchIndex::query(
            &store,
            &fingerprint,
            &graph,
            &root,
            &embedder,
            freshness.frozen,
            text,
            search::POOL,
            false,
            config,
        )
        .map(|out| {
            *relevance.borrow_mut() = out.relevance;
            out.hits
        })
    };
    let open = OpenGraph {
        graph: &graph,
        fingerprint: &fingerprint,
        code_root: &root,
        refreshed,
        stale: stale.as_deref(),
        freshness_ms,
        started,
    };
    let mut result = compile_context_with(&open, request, Some(&search), config.early_retrieval)
        .inspect_err(|_| {
            // An answer says so in a diagnostic; an error (a name added since the build is
            // a no-match) says it here, or the reason would be lost.
            if let Some(reason) = &stale {
                eprintln!("warning[atlas-context-stale-graph]: {reason}");
            }
        })?;
    result.relevance = relevance.into_inner();
    Ok(result)
}

fn limits_of(profile: &Profile, request: &ContextRequest) -> Limits {
    let mut overridden = Vec::new();
    if request.max_bytes.is_some() {
        overridden.push("max_bytes");
    }
    if request.min_score.is_some() {
        overridden.push("min_score");
    }
    if request.max_score.is_some() {
        overridden.push("max_score");
    }
    Limits {
        retrieval_cap: profile.retrieval_cap,
        max_paths: profile.max_paths,
        max_slices: profile.max_slices,
        lines_per_slice: profile.lines_per_slice,
        max_bytes: request.max_bytes.unwrap_or(profile.max_bytes),
        min_score: request.min_score.unwrap_or(profile.min_score),
        max_score: request.max_score,
        overridden,
    }
}

/// From the query to the intent retrieval starts from (R-Q-1/2, issue 9): names matched,
/// a single name's equally good matches a typed error, free words searched, an ambiguous
/// name in a question ranked, a question that names nothing anchored on its search hits.
///
/// With `early`, work that does not wait for the search runs beside it on a search helper
/// thread (`search::beside`): the query's names are read while a question sure to be
/// searched (`intent::certain_search`) is searched, and names search cannot change
/// (written as code, paths, frames: no plain word, no ambiguity) are walked then too.
/// A walk is kept only when settling on the hits left what retrieval reads of the intent
/// as it was (`retrieve::inputs_of`), which it leaves such names.
fn understand(
    graph: &Graph,
    code_root: &Path,
    request: &ContextRequest,
    search: Option<&SearchFn>,
    early: Option<Early>,
) -> Result<Understood> {
    let beside = early.filter(|_| search::beside::has_helpers());
    if let (Some(early), Some(search)) = (beside, search)
        && let Some(text) = intent::certain_search(&request.query)
    {
        let (found, (parsed, walked)) = search::beside::beside(
            || search(&text),
            || {
                let intent = intent::parse(graph, &Crates::of(graph, code_root), &request.query);
                let walked = walks_early(&intent)
                    .then(|| early_walk(graph, &intent, early))
                    .flatten();
                (intent, walked)
            },
        );
        debug_assert!(wants_search(&parsed) && parsed.search_text == text);
        reject_a_lone_ambiguous_name(graph, request, &parsed)?;
        return settle_understood(graph, request, parsed, Some(found), walked);
    }
    let intent = intent::parse(graph, &Crates::of(graph, code_root), &request.query);
    reject_a_lone_ambiguous_name(graph, request, &intent)?;
    let searches = wants_search(&intent);
    let Some(early) = beside.filter(|_| searches && search.is_some() && walks_early(&intent))
    else {
        let found = searches.then(|| searched(search, &intent));
        return settle_understood(graph, request, intent, found, None);
    };
    let (found, walked) = search::beside::beside(
        || searched(search, &intent),
        || early_walk(graph, &intent, early),
    );
    settle_understood(graph, request, intent, Some(found), walked)
}

/// A question's single name with equally good matches is a typed error, not a choice.
fn reject_a_lone_ambiguous_name(
    graph: &Graph,
    request: &ContextRequest,
    intent: &Intent,
) -> Result<()> {
    match intent.ambiguities.iter().find(|a| a.tier.is_strong()) {
        Some(ambiguity) if intent.single_name => {
            Err(anchor::ambiguity_error(graph, ambiguity, request))
        }
        _ => Ok(()),
    }
}

/// Whether the intent's free text goes to hybrid search.
fn wants_search(intent: &Intent) -> bool {
    let wants = !intent.free_terms.is_empty()
        || !intent.ambiguities.is_empty()
        || !intent.plain_word_anchors.is_empty()
        || (intent.anchors.is_empty() && intent.question);
    wants && !intent.search_text.trim().is_empty()
}

/// Whether the intent's names are walked beside its search: only names search cannot
/// change (a plain word's anchor stands only if search confirms it, and a ranked
/// ambiguity adds one: a walk begun on either is often lost).
fn walks_early(intent: &Intent) -> bool {
    wants_search(intent)
        && !intent.anchors.is_empty()
        && intent.plain_word_anchors.is_empty()
        && intent.ambiguities.is_empty()
}

/// The retrieval of `intent` made beside its search (`understand`).
fn early_walk(graph: &Graph, intent: &Intent, early: Early) -> Option<retrieve::Retrieval> {
    // A panic here is the same walk's in the normal path, or none of the answer's.
    crate::isolate::isolate(|| retrieve::retrieve(graph, intent, early.profile, early.spine)).ok()
}

/// The hits of the intent's free text, or why search is unavailable.
fn searched(search: Option<&SearchFn>, intent: &Intent) -> Result<Vec<crate::query::search::Hit>> {
    match search {
        Some(search) => search(&intent.search_text),
        None => Err(AtlasError::SearchUnavailable(
            "no search index in this context".into(),
        )),
    }
}

/// The intent settled on what its search `found` (`None`: not searched), with the walk
/// made beside the search when it still holds.
fn settle_understood(
    graph: &Graph,
    request: &ContextRequest,
    mut intent: Intent,
    found: Option<Result<Vec<crate::query::search::Hit>>>,
    walked: Option<retrieve::Retrieval>,
) -> Result<Understood> {
    let walked_from = walked.is_some().then(|| intent.clone());
    let (hits, diagnostics) = settle(graph, request, found, &mut intent)?;
    // Settling leaves the names walked early as they were; were that to change, the walk
    // is dropped.
    let walked = walked.filter(|_| {
        walked_from
            .as_ref()
            .is_some_and(|from| retrieve::inputs_of(from) == retrieve::inputs_of(&intent))
    });
    Ok((intent, hits, diagnostics, walked))
}

/// The intent, the search hits, the diagnostics, and the retrieval made beside the search
/// when it still holds (`understand`).
type Understood = (
    Intent,
    Vec<crate::query::search::Hit>,
    Vec<Diagnostic>,
    Option<retrieve::Retrieval>,
);

/// A retrieval to start beside a question's search (`understand`).
#[derive(Clone, Copy)]
struct Early {
    profile: ProfileName,
    spine: spine::SpineBudget,
}

/// Settles the intent on what its search `found` (`None`: not searched): plain-word
/// anchors confirmed, ambiguities ranked, a question that names nothing anchored on the
/// hits, or a typed error when nothing anchors.
fn settle(
    graph: &Graph,
    request: &ContextRequest,
    found: Option<Result<Vec<crate::query::search::Hit>>>,
    intent: &mut Intent,
) -> Result<(Vec<crate::query::search::Hit>, Vec<Diagnostic>)> {
    let mut diagnostics = Vec::new();
    let mut hits = Vec::new();
    let mut search_error = None;
    // Free words go to hybrid search as one candidate source (R-Q-1).
    match found {
        None => {}
        Some(Ok(found)) => hits = found,
        Some(Err(error)) => {
            if !intent.free_terms.is_empty() {
                diagnostics.push(Diagnostic {
                    code: DiagnosticCode::UnusedTerm,
                    message: unused_terms_message(&intent.free_terms, &error),
                    path: None,
                    candidates: Vec::new(),
                });
            }
            search_error = Some(error);
        }
    }
    if search_error.is_none() {
        anchor::confirm_plain_words(intent, &hits);
    }
    diagnostics.extend(anchor::rank_ambiguities(graph, intent, &hits, request));
    if intent.anchors.is_empty() && intent.question {
        anchor::anchor_on_search(graph, intent, &hits, request.profile);
    }
    if intent.anchors.is_empty() && request.profile != ProfileName::Architecture {
        // A question only search could answer fails with why search could not, never as
        // a "no match" that hides a damaged or missing index.
        if let Some(error) = search_error {
            return Err(error);
        }
        return Err(AtlasError::ContextNoMatch {
            query: request.query.clone(),
            suggestions: anchor::near_names(graph, intent, request),
        });
    }
    for anchor in &intent.anchors {
        if let Some((line, lines)) = intent::line_past_end(graph, anchor) {
            let path = graph.label(anchor.node);
            diagnostics.push(Diagnostic {
                code: DiagnosticCode::LinePastEnd,
                message: format!(
                    "`{}`: line {line} is past the end of {path} ({lines} lines in this generation); the file is anchored",
                    anchor.term
                ),
                path: Some(path),
                candidates: Vec::new(),
            });
        }
    }
    Ok((hits, diagnostics))
}

/// How many unused terms one `atlas-context-unused-term` diagnostic names; it counts the
/// rest. A pasted traceback has dozens, and the page's bytes are the evidence's.
const UNUSED_TERMS_NAMED: usize = 12;

/// The one diagnostic for the free terms search could not take: the first
/// `UNUSED_TERMS_NAMED` of them named, the rest counted, and why search is unavailable.
fn unused_terms_message(terms: &[String], error: &AtlasError) -> String {
    let named: Vec<String> = terms
        .iter()
        .take(UNUSED_TERMS_NAMED)
        .map(|term| format!("`{term}`"))
        .collect();
    let more = terms.len().saturating_sub(UNUSED_TERMS_NAMED);
    let (subject, verb) = match (terms.len(), more) {
        (1, _) => (named.join(", "), "names"),
        (_, 0) => (named.join(", "), "name"),
        (_, more) => (
            format!("{} and {more} more terms", named.join(", ")),
            "name",
        ),
    };
    format!("{subject} {verb} no symbol or path, and hybrid search is unavailable: {error}")
}

/// Compiles the context of `request` over an open graph.
pub fn compile_context(
    open: &OpenGraph,
    request: &ContextRequest,
    search: Option<&SearchFn>,
) -> Result<ContextResult> {
    compile_context_with(open, request, search, true)
}

/// `compile_context`; with `early_retrieval`, what does not wait for a question's search
/// (reading its names, walking those written as code) runs beside it (`understand`).
fn compile_context_with(
    open: &OpenGraph,
    request: &ContextRequest,
    search: Option<&SearchFn>,
    early_retrieval: bool,
) -> Result<ContextResult> {
    let OpenGraph {
        graph,
        fingerprint,
        code_root,
        refreshed,
        stale,
        freshness_ms,
        started,
    } = *open;
    if let Some(expected) = &request.expect_graph
        && expected != fingerprint
    {
        return Err(AtlasError::ContextGraphMismatch {
            expected: expected.clone(),
            actual: fingerprint.to_string(),
        });
    }
    let profile = request.profile.load()?;
    let limits = limits_of(&profile, request);

    let stage = Instant::now();
    let spine_budget =
        spine::SpineBudget::of_page(limits.max_bytes, limits.lines_per_slice, SPINE_PAGE_SHARE);
    let early = early_retrieval.then_some(Early {
        profile: request.profile,
        spine: spine_budget,
    });
    let (intent, search_hits, mut diagnostics, walked) =
        understand(graph, code_root, request, search, early)?;
    let mut retrieval = match walked {
        Some(retrieval) => retrieval,
        None => retrieve::retrieve(graph, &intent, request.profile, spine_budget),
    };
    retrieve::add_search_hits(&mut retrieval, graph, &search_hits);
    let ranks = profile.class_ranks();
    let class_rank = |class: EvidenceClass| {
        ranks
            .get(class as usize)
            .copied()
            .unwrap_or_else(|| profile.class_rank(class))
    };
    project::order(&mut retrieval.candidates, &class_rank);
    let retrieval_ms = ms(stage);

    let stage = Instant::now();
    let input = ProjectInput {
        graph,
        code_root,
        limits: &limits,
        class_rank: &class_rank,
        after: request.after.as_deref(),
    };
    if let Some(reason) = stale {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::StaleGraph,
            message: reason.to_string(),
            path: None,
            candidates: Vec::new(),
        });
    }
    if refreshed {
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::Refreshed,
            message: "sources changed since the committed generation; the graph was rebuilt incrementally before this query".into(),
            path: None,
            candidates: Vec::new(),
        });
    }

    let assembly = Assembly {
        request,
        fingerprint,
        limits: &limits,
        profile: &profile,
        graph,
        intent: &intent,
        diagnostics: &diagnostics,
        paths_traversed: retrieval.paths_traversed,
        refreshed,
    };
    let candidates = &retrieval.candidates;
    // Under the profile's own ceiling, a long query (a pasted traceback, an issue's text)
    // can leave no room for its required evidence: the answer repeats the query in its
    // `query` and in each continuation argv. The default ceiling is then raised by those
    // echoes, and says so; a ceiling given by `--max-bytes` is kept as given.
    let raised_limits;
    let raised_diagnostics;
    let raised_assembly;
    let (assembly, page) = match fit_page(&input, &assembly, candidates)? {
        Fit::Page(page) => (&assembly, page),
        Fit::Over(id) => {
            // A given ceiling is kept: its echoes are not even measured.
            if request.max_bytes.is_some() {
                return Err(required_budget(&input, &assembly, candidates, id));
            }
            let echo = query_echoes(&input, &assembly, candidates)?;
            raised_limits = Limits {
                max_bytes: limits.max_bytes + echo.bytes + ECHO_SLACK,
                ..limits.clone()
            };
            raised_diagnostics = {
                let mut raised = diagnostics.clone();
                raised.push(Diagnostic {
                    code: DiagnosticCode::CeilingRaised,
                    message: format!(
                        "the query ({} bytes as JSON) is repeated in this answer's `query` and {} continuation argv; the profile's {}-byte ceiling could not hold the required evidence beside them and was raised to {} (--max-bytes sets a ceiling that is kept)",
                        echo.query_bytes,
                        echo.argvs,
                        limits.max_bytes,
                        raised_limits.max_bytes
                    ),
                    path: None,
                    candidates: Vec::new(),
                });
                raised
            };
            let input = ProjectInput {
                limits: &raised_limits,
                ..input
            };
            raised_assembly = Assembly {
                limits: &raised_limits,
                diagnostics: &raised_diagnostics,
                ..assembly
            };
            match fit_page(&input, &raised_assembly, candidates)? {
                Fit::Page(page) => (&raised_assembly, page),
                // The error's ceiling is for `--max-bytes`, which is never raised.
                Fit::Over(_) => return Err(required_budget(&input, &assembly, candidates, id)),
            }
        }
    };
    let Page {
        projection,
        item_lengths,
        omissions,
    } = *page;
    let projection_ms = ms(stage);
    let timings = TimingsOut {
        freshness: freshness_ms,
        retrieval: retrieval_ms,
        projection: projection_ms,
        total: ms(started),
    };
    // serialized_bytes counts itself: iterate to the fixed point.
    // The projection is settled: its omission groups are too (`omissions`).
    let at_zero = assemble::fitted_length(
        json_of(&assembly.frame(&projection, omissions.clone(), timings.clone(), 0))?.len(),
        &item_lengths,
    );
    let mut bytes = assemble::self_counted_length(at_zero);
    let mut output = assembly.output(&projection, omissions.clone(), timings.clone(), bytes);
    // One render when the count was right; the fixed point by trial otherwise.
    let mut rendered = None;
    for _ in 0..4 {
        let json = json_of(&output)?;
        if json.len() == bytes {
            rendered = Some(json);
            break;
        }
        bytes = json.len();
        output = assembly.output(&projection, omissions.clone(), timings.clone(), bytes);
    }
    let json = match rendered {
        Some(json) => json,
        None => json_of(&output)?,
    };
    // The answer is made: the candidates are freed on a helper (a hub's walk leaves tens
    // of thousands).
    drop(projection);
    crate::query::search::beside::drop_beside(retrieval);
    Ok(ContextResult {
        output,
        json,
        relevance: None,
    })
}
