//! Inspection helpers (R-MCP-2): small, bounded reads of a committed generation that an
//! agent asks for between context queries — literal occurrences (`find_all`), a file's
//! outline (`file_api`), the repository map (`repo_map`), call trees (`trace_calls`) and
//! which files changed since the generation (`check_freshness`).
//!
//! The CLI subcommands and the MCP tools are shells over these calls and print the same
//! JSON document. Every answer has a byte ceiling (`max_bytes`, default
//! [`DEFAULT_MAX_BYTES`], measured on the compact JSON [`to_json`] returns) and says what
//! it cut: `truncated` carries the count left out and the literal argv of the next page,
//! never a silent cap. A path in input names a file of the committed generation's file
//! table or nothing; files are read only through `crate::source::read`.

pub mod file_api;
pub mod find_all;
pub mod freshness;
pub mod repo_map;
pub mod trace_calls;

use serde::Serialize;

use crate::error::{AtlasError, Result};
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::Graph;
use crate::syntax::facts::SymbolKind;

pub use file_api::{FileApiOutput, FileApiRequest, file_api};
pub use find_all::{FindAllOutput, FindAllRequest, find_all};
pub use freshness::{FreshnessOutput, FreshnessRequest, check_freshness};
pub use repo_map::{RepoMapOutput, RepoMapRequest, repo_map};
pub use trace_calls::{TraceCallsOutput, TraceCallsRequest, TraceDirection, trace_calls};

/// The response ceiling when none is asked for (bytes of the compact JSON).
pub const DEFAULT_MAX_BYTES: usize = 16_000;
/// The range a `max_bytes` must be in (the same as `context --max-bytes`).
pub const MAX_BYTES_RANGE: std::ops::RangeInclusive<usize> = 1024..=1_000_000;

/// How the asking command line was spelled: what a continuation argv repeats so that it
/// reads the same graph the same way (`--code`, `--graph`, `--format`, `--frozen`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Invocation {
    pub code_arg: Option<String>,
    pub graph_arg: Option<String>,
    /// `json` or `text`, when the surface prints one.
    pub format: Option<&'static str>,
    pub frozen: bool,
}

impl Invocation {
    /// `["atlas", --code …, --graph …, command, flags…, --format …, --frozen, positional…]`
    /// (a positional that starts with `-` comes after `--`), replayable as is.
    pub fn argv(&self, command: &str, flags: Vec<String>, positional: &[&str]) -> Vec<String> {
        let mut argv = vec!["atlas".to_string()];
        for (flag, value) in [("--code", &self.code_arg), ("--graph", &self.graph_arg)] {
            if let Some(value) = value {
                argv.push(flag.into());
                argv.push(value.clone());
            }
        }
        argv.push(command.to_string());
        argv.extend(flags);
        if let Some(format) = self.format {
            argv.push("--format".into());
            argv.push(format.into());
        }
        if self.frozen {
            argv.push("--frozen".into());
        }
        if positional.iter().any(|p| p.starts_with('-')) {
            argv.push("--".into());
        }
        argv.extend(positional.iter().map(|p| p.to_string()));
        argv
    }
}

/// `[flag, value]` when the value was asked for (continuations repeat what was given).
pub(crate) fn flag_if(flag: &str, value: Option<usize>) -> Vec<String> {
    value.map_or_else(Vec::new, |v| vec![flag.to_string(), v.to_string()])
}

/// What a page left out, and how to ask for the rest.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Truncated {
    /// `max-bytes` (the response ceiling) or `max-items` (the page size).
    pub reason: &'static str,
    /// Items after this page.
    pub omitted: usize,
    /// The literal argv (`argv[0]` = `atlas`) that returns the next page.
    pub next: Vec<String>,
}

/// The compact JSON document of an answer: what the CLI prints (plus a newline) and the
/// MCP tools return, and what `max_bytes` measures.
pub fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| AtlasError::Internal {
        what: "inspection JSON",
        reason: e.to_string(),
    })
}

/// `max_bytes` as asked, checked against [`MAX_BYTES_RANGE`].
pub fn ceiling(max_bytes: Option<usize>) -> Result<usize> {
    let bytes = max_bytes.unwrap_or(DEFAULT_MAX_BYTES);
    if MAX_BYTES_RANGE.contains(&bytes) {
        Ok(bytes)
    } else {
        Err(AtlasError::InvalidInput {
            what: "max-bytes",
            reason: format!("{bytes} is not in 1024..=1000000"),
        })
    }
}

/// A count option checked against its range (`depth`, page sizes).
pub(crate) fn bounded(
    what: &'static str,
    value: Option<usize>,
    default: usize,
    range: std::ops::RangeInclusive<usize>,
) -> Result<usize> {
    let value = value.unwrap_or(default);
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(AtlasError::InvalidInput {
            what,
            reason: format!("{value} is not in {}..={}", range.start(), range.end()),
        })
    }
}

/// The largest page that fits the ceiling: `build(n)` is the answer holding the first `n`
/// of `available` items (with its own `truncated` for `n`). Answers grow with `n`, so a
/// binary search over whole serializations finds it; the envelope alone not fitting is a
/// typed error rather than an empty page that would ask for itself again.
pub(crate) fn fit<O: Serialize>(
    available: usize,
    max_bytes: usize,
    build: impl Fn(usize) -> O,
) -> Result<O> {
    let fits = |n: usize| -> Result<bool> { Ok(to_json(&build(n))?.len() <= max_bytes) };
    if !fits(0)? || (available > 0 && !fits(1)?) {
        return Err(AtlasError::InvalidInput {
            what: "max-bytes",
            reason: format!("{max_bytes} bytes cannot hold this answer's first item; ask for more"),
        });
    }
    let (mut lo, mut hi) = (if available > 0 { 1 } else { 0 }, available);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid)? {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Ok(build(lo))
}

/// `truncated` of a page of `returned` items starting at `offset` out of `total`, cut by
/// the ceiling when fewer than `page` items were returned; `next(offset)` is the argv.
pub(crate) fn truncation(
    total: usize,
    offset: usize,
    returned: usize,
    page: usize,
    next: impl Fn(usize) -> Vec<String>,
) -> Option<Truncated> {
    let shown = offset.saturating_add(returned).min(total);
    (shown < total).then(|| Truncated {
        reason: if returned < page {
            "max-bytes"
        } else {
            "max-items"
        },
        omitted: total - shown,
        next: next(shown),
    })
}

/// `text` clipped to `max` characters; whether it was.
pub(crate) fn clip(text: &str, max: usize) -> (String, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (text[..at].to_string(), true),
        None => (text.to_string(), false),
    }
}

/// The definitions of a file (not the file node itself), in the order of their spans:
/// its node's `contains` tree, followed within the file.
pub(crate) fn definitions_of(graph: &Graph, file: FileId) -> Vec<NodeId> {
    let Some(record) = graph.file(file) else {
        return Vec::new();
    };
    let contains = crate::graph::codes::EdgeKind::Contains as u8;
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![record.node()];
    while let Some(node) = stack.pop() {
        for edge in graph.out_edges(node) {
            let child = edge.node();
            if edge.kind == contains
                && graph.node(child).file() == file
                && graph.kind(child) != SymbolKind::File
                && seen.insert(child)
            {
                out.push(child);
                stack.push(child);
            }
        }
    }
    out.sort_by_cached_key(|&n| {
        let span = &graph.node(n).span;
        (
            span.start_byte.to_native(),
            std::cmp::Reverse(span.end_byte.to_native()),
            n,
        )
    });
    out
}

/// 1-based, inclusive lines of a node's span.
pub(crate) fn lines_of(graph: &Graph, node: NodeId) -> [u32; 2] {
    let span = &graph.node(node).span;
    [
        span.start_line.to_native() + 1,
        span.end_line.to_native() + 1,
    ]
}

#[cfg(test)]
mod tests;
