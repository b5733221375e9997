//! `find-all <literal>`: every occurrence of a fixed string in the committed generation's
//! files, found by ripgrep's own searcher (`grep-regex` with `fixed_strings`, so the
//! literal is escaped, never read as a regex; `grep-searcher` over the bytes
//! `source::read` returns). Each hit names the innermost definition whose span holds its
//! line (`Graph::innermost_at_line`), and is `kind: "literal"`: text in a file, never a
//! call relation.

use std::collections::HashMap;
use std::path::Path;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks};
use serde::Serialize;

use super::{Invocation, Truncated, bounded, ceiling, definitions_of, fit, flag_if};
use crate::error::{AtlasError, Result};
use crate::graph::ids::FileId;
use crate::graph::reader::Graph;

/// Hits per page when none is asked for, and the most a page may ask for.
pub const DEFAULT_MAX_HITS: usize = 50;
pub const MAX_HITS: usize = 500;
/// The longest literal searched (bytes).
const MAX_LITERAL: usize = 1_000;
/// Characters of a hit's line shown (a window around the hit in a longer line).
const LINE_CHARS: usize = 200;
/// Characters of context kept before the hit when a long line is windowed.
const LINE_LEAD: usize = 60;

#[derive(Debug, Clone, Default)]
pub struct FindAllRequest {
    pub literal: String,
    pub case_insensitive: bool,
    /// Hits before this one (in path, line, column order) are skipped: the page cursor.
    pub offset: usize,
    /// Hits per page (default [`DEFAULT_MAX_HITS`], at most [`MAX_HITS`]).
    pub max_hits: Option<usize>,
    pub max_bytes: Option<usize>,
    pub invocation: Invocation,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LiteralHit {
    /// Always `literal`: an occurrence of text, never a call or reference relation.
    pub kind: &'static str,
    pub path: String,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    /// The line (a window of it around the hit when it is long).
    pub text: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub text_clipped: bool,
    /// The innermost definition whose span holds the line: where the text sits, not who
    /// calls whom. `null` at a file's top level and in files changed since the build.
    pub enclosing: Option<String>,
    /// The file changed since the generation: its spans cannot place the hit.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct FindAllOutput {
    pub literal: String,
    pub case_insensitive: bool,
    pub graph_fingerprint: String,
    /// Files of the generation's file table searched.
    pub files_searched: usize,
    pub files_matched: usize,
    /// Files of the generation that could not be read now (gone, grown past the bound,
    /// no longer a regular file inside the root): not searched.
    pub files_unreadable: usize,
    /// Matched files whose content changed since the generation (hits marked `stale`).
    pub files_stale: usize,
    pub hits_total: usize,
    pub offset: usize,
    pub hits: Vec<LiteralHit>,
    pub truncated: Option<Truncated>,
}

/// One occurrence in the page window, before it is placed in its file.
struct Occurrence {
    line: u32,
    column: u32,
    text: String,
    clipped: bool,
}

/// Counts over the whole inventory and the occurrences of the page window.
#[derive(Default)]
struct Scan {
    files_searched: usize,
    files_matched: usize,
    files_unreadable: usize,
    files_stale: usize,
    hits_total: usize,
    page: Vec<LiteralHit>,
}

/// Literal occurrences of `request.literal` over the files of `graph`'s file table, read
/// under `root`.
pub fn find_all(graph: &Graph, root: &Path, request: &FindAllRequest) -> Result<FindAllOutput> {
    let max_bytes = ceiling(request.max_bytes)?;
    let max_hits = bounded("max-hits", request.max_hits, DEFAULT_MAX_HITS, 1..=MAX_HITS)?;
    let matcher = matcher(request)?;
    let window = request.offset..request.offset.saturating_add(max_hits);
    let mut scan = Scan::default();
    for file in graph.files() {
        search_file(graph, root, file, &matcher, &window, &mut scan)?;
    }
    let next = |offset: usize| next_page(request, offset);
    let build = |n: usize| FindAllOutput {
        literal: request.literal.clone(),
        case_insensitive: request.case_insensitive,
        graph_fingerprint: graph.fingerprint(),
        files_searched: scan.files_searched,
        files_matched: scan.files_matched,
        files_unreadable: scan.files_unreadable,
        files_stale: scan.files_stale,
        hits_total: scan.hits_total,
        offset: request.offset,
        hits: scan.page[..n].to_vec(),
        truncated: super::truncation(scan.hits_total, request.offset, n, max_hits, next),
    };
    fit(scan.page.len(), max_bytes, build)
}

/// The fixed-string matcher: the literal escaped by `grep-regex`, one line at most.
fn matcher(request: &FindAllRequest) -> Result<RegexMatcher> {
    let literal = &request.literal;
    let invalid = |reason: &str| AtlasError::InvalidInput {
        what: "literal",
        reason: reason.to_string(),
    };
    if literal.is_empty() {
        return Err(invalid(
            "an empty literal matches everything; name some text",
        ));
    }
    if literal.contains('\n') || literal.contains('\r') {
        return Err(invalid(
            "a literal is one line: it cannot hold a line break",
        ));
    }
    if literal.len() > MAX_LITERAL {
        return Err(invalid("longer than 1000 bytes"));
    }
    RegexMatcherBuilder::new()
        .fixed_strings(true)
        .case_insensitive(request.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(literal)
        .map_err(|e| invalid(&e.to_string()))
}

/// The argv of the page that starts at `offset`.
fn next_page(request: &FindAllRequest, offset: usize) -> Vec<String> {
    let mut flags = Vec::new();
    if request.case_insensitive {
        flags.push("--case-insensitive".to_string());
    }
    flags.extend(flag_if("--offset", Some(offset)));
    flags.extend(flag_if("--max-hits", request.max_hits));
    flags.extend(flag_if("--max-bytes", request.max_bytes));
    request
        .invocation
        .argv("find-all", flags, &[request.literal.as_str()])
}

/// Searches one file: counts every hit, keeps those whose global index is in `window`.
fn search_file(
    graph: &Graph,
    root: &Path,
    file: FileId,
    matcher: &RegexMatcher,
    window: &std::ops::Range<usize>,
    scan: &mut Scan,
) -> Result<()> {
    let Some(record) = graph.file(file) else {
        return Ok(());
    };
    let path = graph.file_path(file);
    let limit = record.size.to_native().saturating_mul(2).max(1 << 20);
    // Only through the confined reader: the file table names it, `read` keeps it inside
    // the root and regular.
    let Ok(bytes) = crate::source::read(root, path, limit) else {
        scan.files_unreadable += 1;
        return Ok(());
    };
    scan.files_searched += 1;
    let before = scan.hits_total;
    let occurrences = occurrences(matcher, &bytes, window, &mut scan.hits_total)?;
    if scan.hits_total == before {
        return Ok(());
    }
    scan.files_matched += 1;
    let stale = blake3::hash(&bytes).as_bytes() != &record.hash;
    if stale {
        scan.files_stale += 1;
    }
    let definitions = if stale || occurrences.is_empty() {
        Vec::new()
    } else {
        definitions_of(graph, file)
    };
    let mut labels: HashMap<u32, Option<String>> = HashMap::new();
    for occurrence in occurrences {
        let label = labels
            .entry(occurrence.line)
            .or_insert_with(|| {
                graph
                    .innermost_at_line(definitions.iter().copied(), occurrence.line - 1)
                    .map(|n| graph.label(n))
            })
            .clone();
        scan.page.push(LiteralHit {
            kind: "literal",
            path: path.to_string(),
            line: occurrence.line,
            column: occurrence.column,
            text: occurrence.text,
            text_clipped: occurrence.clipped,
            enclosing: label,
            stale,
        });
    }
    Ok(())
}

/// Every occurrence in `bytes` counted into `total`; those whose index falls in `window`
/// returned. A binary file (a NUL byte) is searched no further.
fn occurrences(
    matcher: &RegexMatcher,
    bytes: &[u8],
    window: &std::ops::Range<usize>,
    total: &mut usize,
) -> Result<Vec<Occurrence>> {
    let mut found = Vec::new();
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let sink = sinks::Bytes(|line_number, line| {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches(['\n', '\r']);
        matcher
            .find_iter(line, |m| {
                if window.contains(total) {
                    let column = String::from_utf8_lossy(&line[..m.start()]).chars().count();
                    let (text, clipped) = around(text, column);
                    found.push(Occurrence {
                        line: line_number as u32,
                        column: column as u32 + 1,
                        text,
                        clipped,
                    });
                }
                *total += 1;
                true
            })
            .map_err(std::io::Error::other)?;
        Ok(true)
    });
    searcher
        .search_slice(matcher, bytes, sink)
        .map_err(|e| AtlasError::Internal {
            what: "find-all search",
            reason: e.to_string(),
        })?;
    Ok(found)
}

/// The line, or a window of [`LINE_CHARS`] characters around the 0-based `column`.
fn around(line: &str, column: usize) -> (String, bool) {
    if line.chars().count() <= LINE_CHARS {
        return (line.to_string(), false);
    }
    let start = column.saturating_sub(LINE_LEAD);
    let text: String = line.chars().skip(start).take(LINE_CHARS).collect();
    (text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_windowed_around_the_hit() {
        let line = format!("{}needle{}", "a".repeat(500), "b".repeat(500));
        let (text, clipped) = around(&line, 500);
        assert!(clipped);
        assert_eq!(text.chars().count(), LINE_CHARS);
        assert!(text.contains("needle"), "{text}");
        assert_eq!(around("short", 0), ("short".to_string(), false));
    }

    #[test]
    fn the_literal_is_escaped_and_counted_per_occurrence() {
        let request = FindAllRequest {
            literal: "a.b(".into(),
            ..FindAllRequest::default()
        };
        let escaped = matcher(&request).unwrap();
        let mut total = 0;
        let found = occurrences(&escaped, b"a.b( axb( a.b(\nxa.b(\n", &(1..2), &mut total).unwrap();
        assert_eq!(total, 3, "`.` and `(` are literal");
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].line, found[0].column), (1, 11));
        for bad in ["", "a\nb"] {
            let request = FindAllRequest {
                literal: bad.into(),
                ..FindAllRequest::default()
            };
            assert!(matches!(
                matcher(&request),
                Err(AtlasError::InvalidInput { .. })
            ));
        }
    }
}
