//! `atlas expand <ref>…` (R-X-1): the source behind a search hit's `ref`, read from the
//! original file and verified against the hash the ref was issued for — on the same bytes
//! it returns. Large content is paginated by Unicode character offsets; a large class
//! with indexed methods opens as its header plus an outline of its direct methods.

use serde::Serialize;

use crate::error::{AtlasError, Result};
use crate::graph::format::hex;
use crate::graph::ids::NodeId;
use crate::graph::reader::Graph;
use crate::source::Refusal;
use crate::syntax::facts::SymbolKind;

/// At most this many refs per call.
const MAX_REFS: usize = 5;
/// Characters returned per page.
const PAGE_CHARS: usize = 6_000;
/// Classes longer than this (characters) open as an outline.
const OUTLINE_THRESHOLD: usize = 6_000;
const OUTLINE_MAX: usize = 100;

/// `path#Lstart-Lend@hash8[~offset]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ref {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub hash8: String,
    /// Character offset of the page within the range.
    pub offset: usize,
}

impl Ref {
    pub fn parse(text: &str) -> Result<Ref> {
        let bad = || AtlasError::InvalidInput {
            what: "ref",
            reason: format!("`{text}` is not path#Lstart-Lend@hash[~offset]"),
        };
        let (path, rest) = text.rsplit_once('#').ok_or_else(bad)?;
        let (lines, hash) = rest.split_once('@').ok_or_else(bad)?;
        let (hash8, offset) = match hash.split_once('~') {
            Some((h, o)) => (h, o.parse().map_err(|_| bad())?),
            None => (hash, 0),
        };
        let (start, end) = lines.split_once('-').ok_or_else(bad)?;
        let start_line: u32 = start
            .strip_prefix('L')
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        let end_line: u32 = end
            .strip_prefix('L')
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        if path.is_empty() || start_line == 0 || end_line < start_line || hash8.len() != 8 {
            return Err(bad());
        }
        Ok(Ref {
            path: path.to_string(),
            start_line,
            end_line,
            hash8: hash8.to_string(),
            offset,
        })
    }

    pub fn render(&self) -> String {
        let base = format!(
            "{}#L{}-L{}@{}",
            self.path, self.start_line, self.end_line, self.hash8
        );
        if self.offset == 0 {
            base
        } else {
            format!("{base}~{}", self.offset)
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct OutlineEntry {
    #[serde(rename = "ref")]
    pub reference: String,
    pub symbol: String,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub lines: [u32; 2],
}

#[derive(Debug, Clone, Serialize)]
pub struct Expanded {
    #[serde(rename = "ref")]
    pub reference: String,
    pub path: String,
    pub lines: [u32; 2],
    pub content: String,
    /// Unicode character offsets of `content` within the range: start inclusive, end exclusive.
    pub content_range: [usize; 2],
    pub content_complete: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outline: Option<Vec<OutlineEntry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outline_omitted: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExpandOutput {
    pub items: Vec<Expanded>,
}

/// Expands up to `MAX_REFS` refs against the files under `root`. `outline`: a large class
/// is its header plus a method outline (else it is returned whole, paginated).
pub fn expand(
    graph: &Graph,
    root: &std::path::Path,
    refs: &[String],
    outline: bool,
) -> Result<ExpandOutput> {
    if refs.len() > MAX_REFS {
        return Err(AtlasError::InvalidInput {
            what: "refs",
            reason: format!("{} refs given; at most {MAX_REFS} per call", refs.len()),
        });
    }
    let outline_enabled = outline;
    let mut items = Vec::new();
    for text in refs {
        let r = Ref::parse(text)?;
        // A ref names a file of the committed generation's inventory, resolved through
        // its file table, never a path of the machine (issue 10, A). One uniform error
        // for anything else, so that it tells nothing about files outside.
        let unknown = || AtlasError::RefUnknown {
            reference: text.clone(),
        };
        let file = graph.file_index(&r.path).ok_or_else(unknown)?;
        let size = graph.file(file).map_or(0, |f| f.size.to_native());
        let bytes = match crate::source::read(root, graph.file_path(file), size) {
            Ok(bytes) => bytes,
            // Grown or gone since the build: the ref is stale, not unknown.
            Err(refusal)
                if matches!(refusal, Refusal::TooLarge { .. }) || refusal.is_not_found() =>
            {
                return Err(AtlasError::ExpandStale {
                    reference: r.render(),
                });
            }
            Err(_) => return Err(unknown()),
        };
        // Verified on the very bytes returned below.
        let hash = blake3::hash(&bytes);
        if hex(&hash.as_bytes()[..4]) != r.hash8 {
            return Err(AtlasError::ExpandStale {
                reference: r.render(),
            });
        }
        let file_text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = file_text.lines().collect();
        let first = (r.start_line - 1) as usize;
        let last = (r.end_line as usize).min(lines.len());
        // The file is the one the ref was issued for (its hash matched): lines past its
        // end are a wrong ref, not a changed file.
        if first >= last {
            return Err(AtlasError::InvalidInput {
                what: "ref",
                reason: format!(
                    "{} names lines {}-{}, but {} has {} lines",
                    r.render(),
                    r.start_line,
                    r.end_line,
                    r.path,
                    lines.len()
                ),
            });
        }
        let range: String = lines[first..last].join("\n");
        let total_chars = range.chars().count();

        // A large class opens as header + outline of its direct methods.
        if outline_enabled
            && r.offset == 0
            && total_chars > OUTLINE_THRESHOLD
            && let Some(outline) = class_outline(graph, &r, &hex(&hash.as_bytes()[..4]))
        {
            let (header_end, entries, omitted) = outline;
            let header: String = lines[first..header_end.min(last)].join("\n");
            let header_chars = header.chars().count();
            items.push(Expanded {
                reference: r.render(),
                path: r.path.clone(),
                lines: [r.start_line, header_end as u32],
                content: header,
                content_range: [0, header_chars],
                content_complete: false,
                next_ref: Some(
                    Ref {
                        offset: header_chars,
                        ..r.clone()
                    }
                    .render(),
                ),
                outline: Some(entries),
                outline_omitted: Some(omitted),
                warnings: vec!["expand_class_outline"],
            });
            continue;
        }
        // Pages are issued only for offsets inside the range: one at or past its end is
        // a wrong ref, not an empty page.
        if r.offset > 0 && r.offset >= total_chars {
            return Err(AtlasError::InvalidInput {
                what: "ref",
                reason: format!(
                    "{} starts at character {}, but lines {}-{} of {} hold {} characters",
                    r.render(),
                    r.offset,
                    r.start_line,
                    last,
                    r.path,
                    total_chars
                ),
            });
        }
        let start = r.offset;
        let end = (start + PAGE_CHARS).min(total_chars);
        let content: String = range.chars().skip(start).take(end - start).collect();
        let complete = end == total_chars;
        items.push(Expanded {
            reference: r.render(),
            path: r.path.clone(),
            lines: [r.start_line, last as u32],
            content,
            content_range: [start, end],
            content_complete: complete,
            next_ref: (!complete).then(|| {
                Ref {
                    offset: end,
                    ..r.clone()
                }
                .render()
            }),
            outline: None,
            outline_omitted: None,
            warnings: Vec::new(),
        });
    }
    Ok(ExpandOutput { items })
}

/// (header end line, outline entries, omitted count) for a class whose span is the ref's.
fn class_outline(graph: &Graph, r: &Ref, hash8: &str) -> Option<(usize, Vec<OutlineEntry>, usize)> {
    let file = graph.file_index(&r.path)?;
    let class = graph.nodes().find(|&n| {
        let record = graph.node(n);
        record.file() == file
            && graph.kind(n).is_type_container()
            && record.span.start_line.to_native() + 1 == r.start_line
    })?;
    let mut methods: Vec<NodeId> = graph
        .out_edges(class)
        .iter()
        .filter(|e| e.kind == crate::graph::codes::EdgeKind::Contains as u8)
        .map(|e| e.node())
        .filter(|&n| matches!(graph.kind(n), SymbolKind::Method | SymbolKind::Function))
        .collect();
    if methods.is_empty() {
        return None;
    }
    methods.sort_by_key(|&n| graph.node(n).span.start_line.to_native());
    let header_end = graph.node(methods[0]).span.start_line.to_native() as usize;
    let omitted = methods.len().saturating_sub(OUTLINE_MAX);
    let entries = methods
        .iter()
        .take(OUTLINE_MAX)
        .map(|&n| {
            let record = graph.node(n);
            let lines = [
                record.span.start_line.to_native() + 1,
                record.span.end_line.to_native() + 1,
            ];
            OutlineEntry {
                reference: format!("{}#L{}-L{}@{hash8}", r.path, lines[0], lines[1]),
                symbol: graph.str(record.qualified()).to_string(),
                kind: graph.kind(n).as_str(),
                lines,
            }
        })
        .collect();
    Some((header_end, entries, omitted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_round_trip_and_reject_garbage() {
        let r = Ref::parse("shop/util.py#L1-L2@0123abcd").unwrap();
        assert_eq!((r.start_line, r.end_line, r.offset), (1, 2, 0));
        assert_eq!(r.render(), "shop/util.py#L1-L2@0123abcd");
        let paged = Ref::parse("a/b.rs#L10-L90@0123abcd~6000").unwrap();
        assert_eq!(paged.offset, 6000);
        assert_eq!(paged.render(), "a/b.rs#L10-L90@0123abcd~6000");
        for bad in [
            "",
            "x.py",
            "x.py#L2-L1@0123abcd",
            "x.py#L0-L1@0123abcd",
            "x.py#L1-L2@abc",
            "x.py#1-2@0123abcd",
        ] {
            assert!(Ref::parse(bad).is_err(), "{bad}");
        }
    }
}
