//! Typed errors of the library, each with a stable machine code.
//!
//! Codes (`atlas-…`) are part of the contract: scripts and agents match on them, so they
//! never change meaning. Exit codes are derived from the category at the CLI edge.

use std::path::PathBuf;

/// Every failure the library reports. Rendering (text, JSON) and exit codes live in `cli`
/// (`cli::output::exit_code`).
#[derive(Debug, thiserror::Error)]
pub enum AtlasError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("code directory {0} does not exist or is not a directory")]
    CodeDirMissing(PathBuf),
    /// A graph named from elsewhere (`--graph`, the environment) without `--code`, whose
    /// last build's code root is gone: read nothing rather than whatever directory the
    /// command runs in.
    #[error(
        "the code root this graph was last built from, {0}, no longer exists, and the \
         working directory does not hold its files; pass --code with the repository's \
         directory (or build again there)"
    )]
    CodeRootGone(PathBuf),
    #[error("no committed graph in {0}; run `atlas build` first")]
    GraphMissing(PathBuf),
    #[error("graph file {path} is corrupt: {reason}")]
    GraphCorrupt { path: PathBuf, reason: String },
    #[error(
        "graph file {path} has format version {found}; this atlas reads versions {oldest}..={current}"
    )]
    GraphIncompatible {
        path: PathBuf,
        found: u32,
        oldest: u32,
        current: u32,
    },
    #[error("another build holds the lock {0}; retry when it finishes or pass --wait")]
    BuildLocked(PathBuf),
    #[error("the daemon's queue is full: {0}")]
    DaemonBusy(String),
    #[error("the daemon did not answer in time: {0}")]
    DaemonTimeout(String),
    #[error("the daemon request was cancelled: {0}")]
    DaemonCancelled(String),
    #[error("the daemon's worker failed: {0}")]
    DaemonFailed(String),
    #[error("no daemon can answer: {0}")]
    DaemonUnavailable(String),
    #[error("another process watches the graph {0} (`atlas status` shows it)")]
    WatchRunning(PathBuf),
    #[error("--strict: {count} file(s) parsed with errors, first: {first}")]
    StrictPartial { count: usize, first: String },
    #[error("build failed at injected failure point `{0}` (ATLAS_INJECT_FAILURE)")]
    InjectedFailure(String),
    #[error("query file for {language} is invalid: {reason}")]
    QueryInvalid {
        language: &'static str,
        reason: String,
    },
    #[error("fact cache entry {path} is unreadable: {reason}")]
    CacheCorrupt { path: PathBuf, reason: String },
    #[error("invalid value for {what}: {reason}")]
    InvalidInput { what: &'static str, reason: String },
    #[error("no symbol, path or module matches `{}`{}", clipped(.query), did_you_mean(.suggestions))]
    ContextNoMatch {
        query: String,
        /// Names near the query's unmatched names (typos), each with the argv that asks
        /// again with it.
        suggestions: Vec<NearName>,
    },
    #[error("`{term}` is ambiguous ({total} candidates via {tier}); name one of: {}", candidates.join(", "))]
    ContextAmbiguous {
        term: String,
        tier: &'static str,
        total: usize,
        /// Labels of the first candidates, by centrality.
        candidates: Vec<String>,
        /// For each listed candidate, the literal argv that asks again naming it alone.
        argv: Vec<Vec<String>>,
    },
    #[error("{}", required_budget_message(.id, *.max_bytes, *.needs))]
    ContextRequiredBudget {
        max_bytes: usize,
        /// Empty when no evidence at all fits: the page's envelope alone is over.
        id: String,
        /// The bytes the answer needs at least (its required evidence and envelope).
        needs: usize,
    },
    #[error("required evidence {id} is beyond the retrieval cap of {cap} candidates")]
    ContextRequiredCandidateCap { cap: usize, id: String },
    #[error("required evidence {id} needs a source slice beyond {limit} = {value}")]
    ContextRequiredSourceCap {
        limit: &'static str,
        value: usize,
        id: String,
    },
    #[error("the committed graph is {actual}, the continuation expects {expected}")]
    ContextGraphMismatch { expected: String, actual: String },
    #[error("unknown evidence id `{}` for this query and graph", clipped(.id))]
    ContextCursor { id: String },
    #[error("{failed} corpus case(s) failed")]
    EvalFailed { failed: usize },
    #[error("SCIP index {path} is corrupt: {reason}")]
    ScipCorrupt { path: PathBuf, reason: String },
    #[error("search is unavailable: {0}")]
    SearchUnavailable(String),
    #[error(
        "search index {path} is damaged: {reason}; `atlas build` (or any read without --frozen) rebuilds it"
    )]
    SearchCorrupt { path: PathBuf, reason: String },
    #[error("internal error in {what}: {reason}")]
    Internal { what: &'static str, reason: String },
    /// The reader of stdout went away (`atlas … | head`): reported quietly.
    #[error("stdout was closed by its reader")]
    BrokenPipe,
    #[error(
        "ref {reference} is stale: the file changed or was removed since it was issued; search again"
    )]
    ExpandStale { reference: String },
    #[error("ref `{}` names no file of the committed generation", clipped(.reference))]
    RefUnknown { reference: String },
}

impl AtlasError {
    /// The stable machine code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            AtlasError::Io { .. } => "atlas-io",
            AtlasError::CodeDirMissing(_) | AtlasError::CodeRootGone(_) => "atlas-code-missing",
            AtlasError::GraphMissing(_) => "atlas-graph-missing",
            AtlasError::GraphCorrupt { .. } => "atlas-graph-corrupt",
            AtlasError::GraphIncompatible { .. } => "atlas-graph-incompatible",
            AtlasError::BuildLocked(_) => "atlas-build-locked",
            AtlasError::WatchRunning(_) => "atlas-watch-running",
            AtlasError::DaemonBusy(_) => "atlas-daemon-busy",
            AtlasError::DaemonTimeout(_) => "atlas-daemon-timeout",
            AtlasError::DaemonCancelled(_) => "atlas-daemon-cancelled",
            AtlasError::DaemonFailed(_) => "atlas-daemon-failed",
            AtlasError::DaemonUnavailable(_) => "atlas-daemon-unavailable",
            AtlasError::StrictPartial { .. } => "atlas-build-strict-partial",
            AtlasError::InjectedFailure(_) => "atlas-build-injected-failure",
            AtlasError::QueryInvalid { .. } => "atlas-query-invalid",
            AtlasError::CacheCorrupt { .. } => "atlas-cache-corrupt",
            AtlasError::InvalidInput { .. } => "atlas-invalid-input",
            AtlasError::ContextNoMatch { .. } => "atlas-context-no-match",
            AtlasError::ContextAmbiguous { .. } => "atlas-context-ambiguous",
            AtlasError::ContextRequiredBudget { .. } => "atlas-context-required-budget",
            AtlasError::ContextRequiredCandidateCap { .. } => {
                "atlas-context-required-candidate-cap"
            }
            AtlasError::ContextRequiredSourceCap { .. } => "atlas-context-required-source-cap",
            AtlasError::ContextGraphMismatch { .. } => "atlas-context-graph-mismatch",
            AtlasError::ContextCursor { .. } => "atlas-context-cursor",
            AtlasError::EvalFailed { .. } => "atlas-eval-failed",
            AtlasError::ScipCorrupt { .. } => "atlas-scip-corrupt",
            AtlasError::SearchUnavailable(_) => "atlas-search-unavailable",
            AtlasError::SearchCorrupt { .. } => "atlas-search-corrupt",
            AtlasError::Internal { .. } => "atlas-internal",
            AtlasError::BrokenPipe => "atlas-broken-pipe",
            AtlasError::ExpandStale { .. } => "atlas-expand-stale",
            AtlasError::RefUnknown { .. } => "atlas-ref-unknown",
        }
    }

    /// Structured details for JSON error bodies.
    pub fn details(&self) -> serde_json::Value {
        match self {
            AtlasError::ContextAmbiguous {
                term,
                tier,
                total,
                candidates,
                argv,
            } => {
                let choices: Vec<serde_json::Value> = candidates
                    .iter()
                    .zip(argv)
                    .map(|(symbol, argv)| serde_json::json!({ "symbol": symbol, "argv": argv }))
                    .collect();
                serde_json::json!({ "term": term, "tier": tier, "total": total, "candidates": candidates, "choices": choices })
            }
            AtlasError::ContextRequiredBudget {
                max_bytes,
                id,
                needs,
            } => {
                serde_json::json!({ "max_bytes": max_bytes, "evidence_id": id, "needs_bytes": needs })
            }
            AtlasError::ContextRequiredCandidateCap { cap, id } => {
                serde_json::json!({ "retrieval_cap": cap, "evidence_id": id })
            }
            AtlasError::ContextRequiredSourceCap { limit, value, id } => {
                serde_json::json!({ "limit": limit, "value": value, "evidence_id": id })
            }
            AtlasError::ContextGraphMismatch { expected, actual } => {
                serde_json::json!({ "expected": expected, "actual": actual })
            }
            AtlasError::ContextCursor { id } => serde_json::json!({ "evidence_id": clipped(id) }),
            AtlasError::ContextNoMatch { query, suggestions } if suggestions.is_empty() => {
                serde_json::json!({ "query": clipped(query) })
            }
            AtlasError::ContextNoMatch { query, suggestions } => serde_json::json!({
                "query": clipped(query),
                "suggestions": suggestions.iter().map(|s| serde_json::json!({
                    "term": clipped(&s.term),
                    "name": s.name,
                    "argv": s.argv,
                })).collect::<Vec<_>>(),
            }),
            _ => serde_json::Value::Null,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AtlasError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = AtlasError> = std::result::Result<T, E>;

/// Attaches a path to an `io::Result`.
pub(crate) trait IoContext<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|e| AtlasError::io(path, e))
    }
}

/// What a required-budget failure says: what does not fit, and the ceiling that would hold
/// it (when there is one).
fn required_budget_message(id: &str, max_bytes: usize, needs: usize) -> String {
    let what = if id.is_empty() {
        "the answer's envelope (omission groups and receipt)".to_string()
    } else {
        format!("required evidence {id}")
    };
    let hint = if needs <= 1_000_000 {
        format!("; it needs at least {needs} bytes (--max-bytes {needs})")
    } else {
        format!(
            "; it needs at least {needs} bytes, beyond the largest ceiling (1000000): narrow the query"
        )
    };
    format!("{what} does not fit in --max-bytes {max_bytes}{hint}")
}

/// Input echoed in an error, at most 200 characters: a pasted 100 KB query is not
/// printed back whole (the cut is said, with the input's length).
/// A name near one the query wrote that matched nothing (`atlas-context-no-match`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NearName {
    /// The query's word, as written.
    pub term: String,
    /// The name offered in its place.
    pub name: String,
    /// The literal argv that asks again with `name` for `term`.
    pub argv: Vec<String>,
}

/// `; did you mean `a` or `b`?`, or nothing without suggestions.
fn did_you_mean(suggestions: &[NearName]) -> String {
    let names: Vec<String> = suggestions
        .iter()
        .map(|s| format!("`{}`", s.name))
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => format!("; did you mean {last}?"),
        Some((last, rest)) => format!("; did you mean {} or {last}?", rest.join(", ")),
    }
}

pub(crate) fn clipped(input: &str) -> String {
    const SHOWN: usize = 200;
    match input.char_indices().nth(SHOWN) {
        None => input.to_string(),
        Some((end, _)) => format!("{}… ({} bytes in all)", &input[..end], input.len()),
    }
}
