//! `file-api <path>`: a file's outline from the graph — each definition's kind, qualified
//! name, signature text, first doc line and span — and the whole file when its text fits
//! in half the response budget (else a ref `atlas expand` pages through).
//!
//! The path names a file of the committed generation's file table or nothing: anything
//! else (`/etc/passwd`, `../x`, the graph directory, a symlink out) is the uniform
//! `atlas-ref-unknown` that `expand` answers, and no file is read because of it. The
//! file's bytes are verified against the generation's hash; a changed file says so and
//! shows only what the graph knows.

use std::path::Path;

use serde::Serialize;

use super::{Invocation, Truncated, bounded, ceiling, clip, definitions_of, fit, flag_if};
use crate::error::{AtlasError, Result};
use crate::graph::data::FLAG_HAS_DOC;
use crate::graph::format::hex;
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::Graph;
use crate::source::Refusal;

/// Definitions per page when none is asked for, and the most a page may ask for.
pub const DEFAULT_MAX_DEFINITIONS: usize = 200;
pub const MAX_DEFINITIONS: usize = 2_000;
/// Characters of a signature and of a doc line shown.
const SIGNATURE_CHARS: usize = 300;
const DOC_CHARS: usize = 200;

#[derive(Debug, Clone, Default)]
pub struct FileApiRequest {
    /// Repository-relative, as the file table spells it (`./` is ignored).
    pub path: String,
    /// Definitions before this one (in span order) are skipped; a page after the first
    /// never repeats the file's text.
    pub offset: usize,
    pub max_definitions: Option<usize>,
    pub max_bytes: Option<usize>,
    pub invocation: Invocation,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DefinitionOut {
    pub kind: &'static str,
    /// In-file qualified name (`Class.method`, `Type::method`).
    pub symbol: String,
    /// 1-based, inclusive.
    pub lines: [u32; 2],
    pub visibility: &'static str,
    /// The declaration's signature as written (clipped); absent when the file is stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The first line of its doc comment or docstring.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
}

/// Why the file's text is not in the answer, and how to read it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ContentOmitted {
    /// `over-half-budget`, `later-page` or `stale`.
    pub reason: &'static str,
    pub bytes: u64,
    /// `atlas expand` of the whole file (paginated, hash-verified); absent when stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expand: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FileApiOutput {
    pub path: String,
    pub graph_fingerprint: String,
    pub language: &'static str,
    pub class: &'static str,
    pub lines: u32,
    pub bytes: u64,
    /// The file's bytes no longer hash to the generation's: the outline is the graph's,
    /// without text; rebuild (any read without `--frozen`) to see the current file.
    pub stale: bool,
    pub definitions_total: usize,
    pub offset: usize,
    pub definitions: Vec<DefinitionOut>,
    /// The whole file, when it fits in half of `max_bytes` (first page only).
    pub content: Option<String>,
    pub content_omitted: Option<ContentOmitted>,
    pub truncated: Option<Truncated>,
}

/// The outline (and text) of the file `request.path` of `graph`, read under `root`.
pub fn file_api(graph: &Graph, root: &Path, request: &FileApiRequest) -> Result<FileApiOutput> {
    let max_bytes = ceiling(request.max_bytes)?;
    let max_definitions = bounded(
        "max-definitions",
        request.max_definitions,
        DEFAULT_MAX_DEFINITIONS,
        1..=MAX_DEFINITIONS,
    )?;
    let path = request.path.trim_start_matches("./");
    // One uniform error for every path that is not in the file table, so that it tells
    // nothing about files outside (as `expand` does).
    let unknown = || AtlasError::RefUnknown {
        reference: request.path.clone(),
    };
    let file = graph.file_index(path).ok_or_else(unknown)?;
    let record = graph.file(file).ok_or_else(unknown)?;
    let size = record.size.to_native();
    let text = match crate::source::read(root, path, size) {
        Ok(bytes) if blake3::hash(&bytes).as_bytes() == &record.hash => {
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        Ok(_) => None,
        // Grown or gone since the build: stale, not unknown.
        Err(refusal) if matches!(refusal, Refusal::TooLarge { .. }) || refusal.is_not_found() => {
            None
        }
        Err(_) => return Err(unknown()),
    };
    let nodes = definitions_of(graph, file);
    let start = request.offset.min(nodes.len());
    let page: Vec<DefinitionOut> = nodes[start..]
        .iter()
        .take(max_definitions)
        .map(|&n| definition(graph, n, text.as_deref()))
        .collect();
    let (content, content_omitted) = content(graph, file, text, request, max_bytes);
    let next = |offset: usize| next_page(request, offset);
    let build = |n: usize| FileApiOutput {
        path: path.to_string(),
        graph_fingerprint: graph.fingerprint(),
        language: crate::syntax::lang::Language::from_code(record.language)
            .map_or("text", |l| l.as_str()),
        class: crate::graph::codes::FileClass::from_code(record.class).map_or("?", |c| c.as_str()),
        lines: record.lines.to_native(),
        bytes: size,
        stale: content_omitted
            .as_ref()
            .is_some_and(|c| c.reason == "stale"),
        definitions_total: nodes.len(),
        offset: request.offset,
        definitions: page[..n].to_vec(),
        content: content.clone(),
        content_omitted: content_omitted.clone(),
        truncated: super::truncation(nodes.len(), request.offset, n, max_definitions, next),
    };
    fit(page.len(), max_bytes, build)
}

/// The file's text when it fits in half the budget on the first page, else why not.
fn content(
    graph: &Graph,
    file: FileId,
    text: Option<String>,
    request: &FileApiRequest,
    max_bytes: usize,
) -> (Option<String>, Option<ContentOmitted>) {
    let offset = request.offset;
    let Some(record) = graph.file(file) else {
        return (None, None);
    };
    let bytes = record.size.to_native();
    let Some(text) = text else {
        let omitted = ContentOmitted {
            reason: "stale",
            bytes,
            expand: None,
        };
        return (None, Some(omitted));
    };
    // Measured as it is printed: escaped JSON.
    let printed = serde_json::to_string(&text).map_or(usize::MAX, |s| s.len());
    if offset == 0 && printed <= max_bytes / 2 {
        return (Some(text), None);
    }
    let path = graph.file_path(file);
    let lines = text.lines().count().max(1);
    let reference = format!("{path}#L1-L{lines}@{}", hex(&record.hash[..4]));
    let omitted = ContentOmitted {
        reason: if offset == 0 {
            "over-half-budget"
        } else {
            "later-page"
        },
        bytes,
        // `expand` reads the committed generation as it is: it has no `--frozen`.
        expand: Some(
            Invocation {
                frozen: false,
                ..request.invocation.clone()
            }
            .argv("expand", Vec::new(), &[reference.as_str()]),
        ),
    };
    (None, Some(omitted))
}

fn definition(graph: &Graph, node: NodeId, text: Option<&str>) -> DefinitionOut {
    let record = graph.node(node);
    let slice = |span: &crate::graph::data::ArchivedSpanRecord| {
        text.and_then(|t| {
            t.get(span.start_byte.to_native() as usize..span.end_byte.to_native() as usize)
        })
    };
    let signature = slice(&record.signature)
        .map(|s| clip(s.trim(), SIGNATURE_CHARS).0)
        .filter(|s| !s.is_empty());
    let doc = (record.flags & FLAG_HAS_DOC != 0)
        .then(|| slice(&record.doc))
        .flatten()
        .and_then(first_doc_line)
        .map(|line| clip(&line, DOC_CHARS).0);
    DefinitionOut {
        kind: graph.kind(node).as_str(),
        symbol: graph.str(record.qualified()).to_string(),
        lines: super::lines_of(graph, node),
        visibility: crate::syntax::facts::Visibility::from_code(record.visibility)
            .map_or("?", |v| v.as_str()),
        signature,
        doc,
    }
}

/// The first line of a doc comment or docstring with its markers removed.
fn first_doc_line(doc: &str) -> Option<String> {
    const MARKERS: &[&str] = &[
        "\"\"\"", "'''", "///", "//!", "/**", "/*!", "/*", "*/", "//", "#", "*",
    ];
    doc.lines()
        .map(|line| {
            let mut line = line.trim();
            while let Some(marker) = MARKERS.iter().find(|m| line.starts_with(**m)) {
                line = line[marker.len()..].trim_start();
            }
            while let Some(marker) = MARKERS.iter().find(|m| line.ends_with(**m)) {
                line = line[..line.len() - marker.len()].trim_end();
            }
            line.to_string()
        })
        .find(|line| !line.is_empty())
}

fn next_page(request: &FileApiRequest, offset: usize) -> Vec<String> {
    let mut flags = flag_if("--offset", Some(offset));
    flags.extend(flag_if("--max-definitions", request.max_definitions));
    flags.extend(flag_if("--max-bytes", request.max_bytes));
    request
        .invocation
        .argv("file-api", flags, &[request.path.as_str()])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doc_lines_lose_their_markers() {
        assert_eq!(
            first_doc_line("\"\"\"Price for a quantity.\"\"\"").as_deref(),
            Some("Price for a quantity.")
        );
        assert_eq!(
            first_doc_line("/// Parses.\n/// More.").as_deref(),
            Some("Parses.")
        );
        assert_eq!(
            first_doc_line("/**\n * Opens a cart.\n */").as_deref(),
            Some("Opens a cart.")
        );
        assert_eq!(first_doc_line("#\n"), None);
    }
}
