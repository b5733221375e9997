//! `atlas graph dump`: a stable, sorted, line-per-fact text rendering of a graph, for
//! snapshot tests and for people. Ordering follows node ids, which are deterministic.

use std::fmt::Write;

use crate::graph::codes::FileClass;
use crate::graph::codes::{EdgeKind, EdgeSubkind, Provenance, Resolution};
use crate::graph::reader::Graph;
use crate::syntax::facts::{RefRole, SymbolKind};
use crate::syntax::lang::Language;

pub fn dump(graph: &Graph) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# atlas graph dump (format {})",
        graph.format_version()
    );
    let _ = writeln!(out, "fingerprint {}", graph.fingerprint());
    for file in graph.files().filter_map(|f| graph.file(f)) {
        let language = Language::from_code(file.language).map_or("-", Language::as_str);
        let class = FileClass::from_code(file.class).map_or("?", FileClass::as_str);
        let status = crate::syntax::facts::ParseStatus::from_code(file.parse_status)
            .map_or("partial", crate::syntax::facts::ParseStatus::as_str);
        let _ = writeln!(
            out,
            "file {} {language} {class} {status} lines={}",
            escaped(graph.str(file.path())),
            file.lines.to_native()
        );
    }
    for id in graph.nodes() {
        let node = graph.node(id);
        let kind = graph.kind(id);
        if kind == SymbolKind::File || graph.is_directory(id) {
            continue;
        }
        let vis = crate::syntax::facts::Visibility::from_code(node.visibility)
            .unwrap_or(crate::syntax::facts::Visibility::Internal)
            .as_str();
        let test = if node.flags & crate::graph::data::FLAG_TEST_SCOPE != 0 {
            " test-scope"
        } else {
            ""
        };
        let declares = if node.flags & crate::graph::data::FLAG_DECLARES_ONLY != 0 {
            " declares-only"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "symbol {} {} L{}-{} {vis}{test}{declares}",
            kind.as_str(),
            escaped(&graph.label(id)),
            node.span.start_line.to_native() + 1,
            node.span.end_line.to_native() + 1,
        );
    }
    for id in graph.nodes() {
        for edge in graph.out_edges(id) {
            let kind = EdgeKind::from_code(edge.kind).map_or("?", EdgeKind::as_str);
            let extends = if EdgeSubkind::from_code(edge.subkind) == Some(EdgeSubkind::Extends) {
                "(extends)"
            } else {
                ""
            };
            let provenance = Provenance::from_code(edge.provenance).map_or("?", Provenance::as_str);
            let resolution = Resolution::from_code(edge.resolution).map_or("?", Resolution::as_str);
            let site = if edge.site_file().is_none() {
                String::new()
            } else {
                format!(
                    " @{}:{}",
                    escaped(graph.file_path(edge.site_file())),
                    edge.site.start_line.to_native() + 1
                )
            };
            let _ = writeln!(
                out,
                "edge {kind}{extends} {} -> {}{site} [{provenance} {resolution} {}]{}",
                escaped(&graph.label(id)),
                escaped(&graph.label(edge.node())),
                edge.confidence,
                site_flags(edge.flags)
            );
        }
    }
    for (_, entry) in graph.frontier_entries() {
        let role = role_name(entry.role);
        let _ = writeln!(
            out,
            "frontier {} {role} @{}:{} from {} candidates={}",
            escaped(graph.str(entry.name())),
            escaped(graph.file_path(entry.file())),
            entry.site.start_line.to_native() + 1,
            escaped(&graph.label(entry.from())),
            entry.candidates.to_native()
        );
    }
    for edge in graph.module_edges() {
        let kind = EdgeKind::from_code(edge.kind).map_or("?", EdgeKind::as_str);
        let _ = writeln!(
            out,
            "module-edge {kind} {} -> {} x{}",
            escaped(&graph.label(edge.from())),
            escaped(&graph.label(edge.to())),
            edge.count.to_native()
        );
    }
    out
}

/// A call's site flags (`facts::site`), ` {result,returned}`; empty when none is set.
fn site_flags(flags: u8) -> String {
    use crate::syntax::facts::site;
    let names: Vec<&str> = [
        (site::HANDLER, "handler"),
        (site::GUARD, "guard"),
        (site::RESULT, "result"),
        (site::RETURNED, "returned"),
        (site::RAISED, "raised"),
    ]
    .into_iter()
    .filter(|(bit, _)| flags & bit != 0)
    .map(|(_, name)| name)
    .collect();
    if names.is_empty() {
        String::new()
    } else {
        format!(" {{{}}}", names.join(","))
    }
}

fn role_name(code: u8) -> &'static str {
    [
        RefRole::Call,
        RefRole::TypeUse,
        RefRole::Import,
        RefRole::Read,
        RefRole::Write,
        RefRole::Inherit,
        RefRole::Implement,
    ]
    .into_iter()
    .find(|r| *r as u8 == code)
    .map_or("?", RefRole::as_str)
}

/// One line per record: control characters in names and paths (a file named `a\nb.py`)
/// are escaped, so that a record never spans lines.
fn escaped(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() || c == '\\') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn control_characters_never_break_a_record() {
        assert_eq!(escaped("a\nb.py"), "a\\nb.py");
        assert_eq!(escaped("plain/path.rs"), "plain/path.rs");
        assert_eq!(escaped("x\u{7}"), "x\\u{7}");
    }
}
