//! The graph arm of hybrid search: evidence that a query names code the graph knows,
//! rather than sharing words with it. Issue texts and bug reports carry three such
//! signals, strongest first:
//!
//! - stack-trace frames (`File "…/pkg/mod.py", line 12, in name`): the innermost symbol at
//!   that line of the repository file whose path ends the frame's path;
//! - qualified mentions (`Class.method`, `pkg.mod.func`) matched against the qualified-name
//!   suffix table; a Rust path (`grep_searcher::Searcher::search_path`) by its longest
//!   tail the table holds (a crate's name is no module path of the graph);
//! - identifier mentions (`snake_case`, `camelCase`, `` `quoted` ``, `name(`) matched
//!   against exact names, weighted by how rare the name is (a name defined 40 times says
//!   little about which definition is meant).
//!
//! Ties are broken by centrality. The arm is fused by RRF like the others
//! (`ATLAS_SEARCH_ARMS` selects arms).
//!
//! The propagation arm (`propagate`, issue 16) follows the edges the graph was built for:
//! a share of a seed's evidence — what the graph arm found, and then the best BM25
//! symbols — flows one hop to its callees, callers and (from a class) members. A query
//! that names no code seeds nothing. Only from a seed
//! whose name few definitions share, only through small fan-outs, and only to a
//! neighbour that matches the text too (it is in the BM25 pool, and its rank there
//! scales what it receives): so it reorders lexical candidates by their relation to what
//! the query names, and never floods the pool with a hub's neighbours.

use std::collections::HashMap;

use super::index::searchable;
use crate::graph::codes::EdgeKind;
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::{Direction, Graph, NameTable};
use crate::syntax::facts::SymbolKind;

/// Names defined more often than this are not evidence of any one definition.
const MAX_DEFINITIONS: usize = 40;
const FRAME_WEIGHT: f64 = 4.0;
const QUALIFIED_WEIGHT: f64 = 2.0;
/// Weight of a word that matches a name but does not look like code (`simplify`,
/// `Parser`, `version`): prose words collide with names all the time, and the BM25 arm
/// already weighs them as words.
const PLAIN_WORD_WEIGHT: f64 = 0.0;
/// A file named by path contributes this many of its most central symbols …
const PATH_SYMBOLS: usize = 10;
/// … with this weight (the first; the rest slightly less).
const PATH_WEIGHT: f64 = 1.0;
/// Variables, fields and constants are named by prose as often as by intent.
const DATA_WEIGHT: f64 = 0.5;

/// Seeds taken from the top of each list (the graph arm's, then BM25's).
const SEEDS: usize = 10;
/// A seed whose name more definitions share than this passes nothing on: which
/// definition the text meant is unclear.
const MAX_SEED_DEFINITIONS: usize = 3;
/// A seed with more neighbours than this along one edge kind passes nothing along it
/// (a hub's callers say nothing about the query).
const MAX_FANOUT: usize = 16;
/// The share of a seed's weight a callee or caller receives …
const CALL_DECAY: f64 = 0.5;
/// … and a member of a named class.
const MEMBER_DECAY: f64 = 0.6;
/// BM25 seeds weigh this much of a named seed (matching words is weaker evidence than
/// naming).
const LEXICAL_SEED_WEIGHT: f64 = 0.5;

/// How a neighbour was reached from its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Callee,
    Caller,
    Member,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Callee => "callee",
            Via::Caller => "caller",
            Via::Member => "member",
        }
    }
}

/// A candidate the propagation arm found, with the seed and edge it came through.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Propagated {
    pub node: NodeId,
    pub score: f64,
    pub seed: NodeId,
    pub via: Via,
    /// The seed came from the graph arm (the query names it), not from BM25.
    pub named: bool,
}

impl Propagated {
    /// `callee of `Add.flatten` named in the query`.
    pub fn describe(&self, graph: &Graph) -> String {
        format!(
            "{} of `{}` {}",
            self.via.as_str(),
            graph.str(graph.node(self.seed).qualified()),
            if self.named {
                "named in the query"
            } else {
                "matching the query"
            }
        )
    }
}

/// One hop of evidence from the seeds (`named`: the graph arm's ranking; `lexical`: the
/// BM25 arm's, which every neighbour must be in, and whose best symbols seed too when
/// `named` is not empty), best first, at most `limit`.
pub fn propagate(
    graph: &Graph,
    named: &[NodeId],
    lexical: &[NodeId],
    limit: usize,
) -> Vec<Propagated> {
    let lexical_rank: HashMap<NodeId, usize> =
        lexical.iter().enumerate().map(|(r, &n)| (n, r)).collect();
    let seeds = named
        .iter()
        .take(SEEDS)
        .enumerate()
        .map(|(r, &n)| (n, 1.0 / (1.0 + r as f64), true))
        .chain(
            lexical
                .iter()
                // Only when the query names code: among lexical candidates alone,
                // propagation only reinforces what matched words (measured: natural
                // queries of codesteer-golden, MRR 0.667 → 0.448).
                .take(if named.is_empty() { 0 } else { SEEDS })
                .enumerate()
                .map(|(r, &n)| (n, LEXICAL_SEED_WEIGHT / (1.0 + r as f64), false)),
        );
    let mut best: HashMap<NodeId, Propagated> = HashMap::new();
    for (seed, weight, from_graph) in seeds {
        let name = graph.str(graph.node(seed).name());
        if graph.lookup(NameTable::Exact, name).len() > MAX_SEED_DEFINITIONS {
            continue;
        }
        let hops = [
            (
                Direction::Outgoing,
                EdgeKind::Calls,
                Via::Callee,
                CALL_DECAY,
            ),
            (
                Direction::Incoming,
                EdgeKind::Calls,
                Via::Caller,
                CALL_DECAY,
            ),
            (
                Direction::Outgoing,
                EdgeKind::Contains,
                Via::Member,
                MEMBER_DECAY,
            ),
        ];
        for (direction, kind, via, decay) in hops {
            if via == Via::Member && !graph.kind(seed).is_type_container() {
                continue;
            }
            let mut neighbours: Vec<NodeId> = graph
                .edges(seed, direction)
                .filter(|e| e.kind == kind as u8)
                .map(|e| e.node())
                .filter(|&n| n != seed)
                .collect();
            neighbours.sort_unstable();
            neighbours.dedup();
            if neighbours.len() > MAX_FANOUT {
                continue;
            }
            for node in neighbours {
                // The neighbour must match the text: its own evidence scales the share.
                let Some(&rank) = lexical_rank.get(&node) else {
                    continue;
                };
                if !searchable(graph, node) {
                    continue;
                }
                let score = weight * decay / (1.0 + rank as f64 / 10.0);
                let candidate = Propagated {
                    node,
                    score,
                    seed,
                    via,
                    named: from_graph,
                };
                best.entry(node)
                    .and_modify(|b| {
                        if score > b.score {
                            *b = candidate;
                        }
                    })
                    .or_insert(candidate);
            }
        }
    }
    let mut ranked: Vec<Propagated> = best.into_values().collect();
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| graph.centrality(b.node).cmp(&graph.centrality(a.node)))
            .then(a.node.cmp(&b.node))
    });
    ranked.truncate(limit);
    ranked
}

/// One mention of something that may be code, as written in the query.
#[derive(Debug, PartialEq)]
struct Mention<'q> {
    text: &'q str,
    /// Written as code: backticks, a call, `snake_case`, inner capitals or dots.
    code_like: bool,
}

/// A traceback frame: the path as printed, its line (1-based) and function name.
#[derive(Debug, PartialEq)]
struct Frame<'q> {
    path: &'q str,
    line: u32,
    name: &'q str,
}

/// Nodes the query names, best first, at most `limit`.
pub fn rank(graph: &Graph, query: &str, limit: usize) -> Vec<NodeId> {
    let mut scores: HashMap<NodeId, f64> = HashMap::new();
    let searchable = |node: NodeId| searchable(graph, node);

    let frames = frames(query);
    if !frames.is_empty() {
        let files = frame_files(graph, &frames);
        for (frame, file) in frames.iter().zip(files) {
            let Some(file) = file else { continue };
            if let Some(node) = innermost_at(graph, file, frame.line, frame.name) {
                *scores.entry(node).or_default() += FRAME_WEIGHT;
            }
        }
    }

    // Files the text names by path (`xarray/core/dataset.py`, `…/autodoc/__init__.py`):
    // their most central symbols are candidates.
    for file in mentioned_files(graph, query) {
        let mut nodes: Vec<NodeId> = graph
            .nodes()
            .filter(|&n| graph.node(n).file() == file && searchable(n))
            .collect();
        nodes.sort_by_cached_key(|&n| std::cmp::Reverse(graph.centrality(n)));
        for (i, node) in nodes.into_iter().take(PATH_SYMBOLS).enumerate() {
            // Decreasing, so that centrality orders the file's symbols.
            *scores.entry(node).or_default() += PATH_WEIGHT / (1.0 + i as f64 * 0.1);
        }
    }

    for path in rust_paths(query) {
        let segments: Vec<&str> = path.split('.').collect();
        let found = (0..segments.len().saturating_sub(1)).find_map(|from| {
            let nodes = graph.lookup(NameTable::Suffix, &segments[from..].join("."));
            (!nodes.is_empty() && nodes.len() <= MAX_DEFINITIONS).then_some(nodes)
        });
        if let Some(nodes) = found {
            let weight = QUALIFIED_WEIGHT / (nodes.len() as f64).sqrt();
            for node in nodes.into_iter().filter(|&n| searchable(n)) {
                *scores.entry(node).or_default() += weight * kind_weight(graph, node);
            }
        }
    }

    let mut counts: HashMap<&str, (usize, bool)> = HashMap::new();
    for mention in mentions(query) {
        let entry = counts.entry(mention.text).or_default();
        entry.0 += 1;
        entry.1 |= mention.code_like;
    }
    for (text, (count, code_like)) in counts {
        let repeat = 1.0 + (count as f64).ln();
        if text.contains('.') {
            let nodes = graph.lookup(NameTable::Suffix, text);
            if !nodes.is_empty() && nodes.len() <= MAX_DEFINITIONS {
                let weight = QUALIFIED_WEIGHT * repeat / (nodes.len() as f64).sqrt();
                for node in nodes.into_iter().filter(|&n| searchable(n)) {
                    *scores.entry(node).or_default() += weight * kind_weight(graph, node);
                }
            }
            continue;
        }
        let nodes = graph.lookup(NameTable::Exact, text);
        if nodes.is_empty() || nodes.len() > MAX_DEFINITIONS {
            continue;
        }
        let base = if code_like { 1.0 } else { PLAIN_WORD_WEIGHT };
        if base == 0.0 {
            continue;
        }
        let weight = base * repeat / (nodes.len() as f64).sqrt();
        for node in nodes.into_iter().filter(|&n| searchable(n)) {
            *scores.entry(node).or_default() += weight * kind_weight(graph, node);
        }
    }

    let mut ranked: Vec<(NodeId, f64)> = scores.into_iter().collect();
    ranked.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then_with(|| {
                let centrality = |n: NodeId| graph.centrality(n);
                centrality(b.0).cmp(&centrality(a.0))
            })
            .then(a.0.cmp(&b.0))
    });
    ranked.truncate(limit);
    ranked.into_iter().map(|(n, _)| n).collect()
}

fn kind_weight(graph: &Graph, node: NodeId) -> f64 {
    match graph.kind(node) {
        SymbolKind::Variable | SymbolKind::Field | SymbolKind::Constant => DATA_WEIGHT,
        _ => 1.0,
    }
}

/// Python traceback frames: `File "<path>", line <n>, in <name>`.
fn frames(query: &str) -> Vec<Frame<'_>> {
    let mut out = Vec::new();
    let mut rest = query;
    while let Some(at) = rest.find("File \"") {
        rest = &rest[at + 6..];
        let Some(close) = rest.find('"') else { break };
        let path = &rest[..close];
        let after = &rest[close + 1..];
        let Some(line_part) = after.strip_prefix(", line ") else {
            continue;
        };
        let digits: &str = &line_part[..line_part
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(line_part.len())];
        let Ok(line) = digits.parse::<u32>() else {
            continue;
        };
        let name = line_part[digits.len()..]
            .strip_prefix(", in ")
            .map(|s| {
                let end = s
                    .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '<' || c == '>'))
                    .unwrap_or(s.len());
                &s[..end]
            })
            .unwrap_or("");
        out.push(Frame { path, line, name });
    }
    out
}

/// Repository files the query names by a path with at least one directory, matched by
/// whole path components in either direction (an absolute path ending with the file's
/// path, or a partial path the file's path ends with). Traceback frames count too.
fn mentioned_files(graph: &Graph, query: &str) -> Vec<FileId> {
    let mut out: Vec<FileId> = Vec::new();
    for word in query.split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')))
    {
        let word = word
            .trim_matches(|c| c == '.' || c == '/')
            .replace('\\', "/");
        let has_extension = word.rsplit_once('.').is_some_and(|(_, ext)| {
            (1..=5).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
        });
        if !word.contains('/') || !has_extension {
            continue;
        }
        let aligned = |long: &str, short: &str| {
            long == short
                || (long.ends_with(short) && long.as_bytes()[long.len() - short.len() - 1] == b'/')
        };
        let matches: Vec<FileId> = graph
            .files()
            .filter(|&f| {
                let path = graph.file_path(f);
                aligned(&word, path) || aligned(path, &word)
            })
            .collect();
        // A partial path that fits several files names none of them.
        if let [file] = matches[..]
            && !out.contains(&file)
        {
            out.push(file);
        }
    }
    out
}

/// For each frame, the repository file whose path is the longest whole-component suffix
/// of the frame's path (`/usr/lib/python3/site-packages/pkg/a.py` → `pkg/a.py`).
fn frame_files(graph: &Graph, frames: &[Frame]) -> Vec<Option<FileId>> {
    frames
        .iter()
        .map(|frame| {
            let printed = frame.path.replace('\\', "/");
            let mut best: Option<(usize, FileId)> = None;
            for file in graph.files() {
                let path = graph.file_path(file);
                let aligned = printed == path
                    || (printed.ends_with(path)
                        && printed.as_bytes()[printed.len() - path.len() - 1] == b'/');
                if aligned && best.is_none_or(|(len, _)| path.len() > len) {
                    best = Some((path.len(), file));
                }
            }
            best.map(|(_, i)| i)
        })
        .collect()
}

/// The smallest searchable symbol of `file` whose span holds `line` (1-based), preferring
/// one named like the frame.
fn innermost_at(graph: &Graph, file: FileId, line: u32, name: &str) -> Option<NodeId> {
    let line = line.checked_sub(1)?;
    let mut best: Option<(bool, u32, NodeId)> = None;
    for node in graph.nodes() {
        let record = graph.node(node);
        if record.file() != file || !searchable(graph, node) {
            continue;
        }
        let (start, end) = (
            record.span.start_line.to_native(),
            record.span.end_line.to_native(),
        );
        if start > line || line > end {
            continue;
        }
        let named = graph.str(record.name()) == name;
        let key = (named, u32::MAX - (end - start), node);
        if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
            best = Some(key);
        }
    }
    best.map(|(_, _, node)| node)
}

/// The Rust paths of a text (`grep_searcher::Searcher::search_path`, `crate::a::B`), each
/// once, dotted as the suffix table keys them, without a `crate`/`self`/`super` root. A
/// path that continues a file name (pytest's `tests/test_a.py::TestA::test_b`) is a
/// test id, not a Rust path.
fn rust_paths(query: &str) -> Vec<String> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out: Vec<String> = Vec::new();
    let mut rest = query;
    while let Some(at) = rest.find("::") {
        let head = &rest[..at];
        let start = head.trim_end_matches(is_ident).len();
        let preceded = head[..start].chars().next_back();
        let mut segments: Vec<&str> = vec![&head[start..]];
        let mut tail = &rest[at..];
        while let Some(after) = tail.strip_prefix("::") {
            let end = after.find(|c: char| !is_ident(c)).unwrap_or(after.len());
            if end == 0 {
                break;
            }
            segments.push(&after[..end]);
            tail = &after[end..];
        }
        rest = tail.strip_prefix("::").unwrap_or(tail);
        if matches!(preceded, Some('.' | '/' | '\\')) {
            continue;
        }
        while segments
            .first()
            .is_some_and(|s| s.is_empty() || matches!(*s, "crate" | "self" | "super"))
        {
            segments.remove(0);
        }
        if segments.len() >= 2 {
            let path = segments.join(".");
            if !out.contains(&path) {
                out.push(path);
            }
        }
    }
    out
}

/// Words of the query that could name code, with whether they are written as code.
fn mentions(query: &str) -> Vec<Mention<'_>> {
    let bytes = query.as_bytes();
    let mut out = Vec::new();
    let mut start = None;
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
    for i in 0..=bytes.len() {
        let inside = i < bytes.len() && is_word(bytes[i]);
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                start = None;
                let raw = &query[s..i];
                let text = raw.trim_matches('.');
                if text.len() < 3 || text.starts_with(|c: char| c.is_ascii_digit()) {
                    continue;
                }
                let lead = s + (raw.len() - raw.trim_start_matches('.').len());
                let before = query[..lead].chars().next_back();
                let after = query[lead + text.len()..].chars().next();
                let quoted = before == Some('`') || after == Some('`');
                let called = after == Some('(');
                let shaped = text.contains('_')
                    || text.contains('.')
                    || text.chars().skip(1).any(|c| c.is_ascii_uppercase());
                if text.contains('.') {
                    // `obj.method` also mentions `method`; `a.b.c` also `b.c`.
                    let parts: Vec<&str> = text.split('.').filter(|p| !p.is_empty()).collect();
                    if parts.len() >= 2 {
                        out.push(Mention {
                            text,
                            code_like: true,
                        });
                        if let Some(last) = parts.last().filter(|l| l.len() >= 3) {
                            out.push(Mention {
                                text: last,
                                code_like: true,
                            });
                        }
                    }
                    continue;
                }
                out.push(Mention {
                    text,
                    code_like: quoted || called || shaped,
                });
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceback_frames_are_parsed() {
        let text = "Traceback (most recent call last):\n  File \"/home/u/env/lib/pkg/core.py\", line 42, in resolve\n    x()\n  File \"<stdin>\", line 1, in <module>\nFile \"broken";
        let frames = frames(text);
        assert_eq!(
            frames,
            vec![
                Frame {
                    path: "/home/u/env/lib/pkg/core.py",
                    line: 42,
                    name: "resolve"
                },
                Frame {
                    path: "<stdin>",
                    line: 1,
                    name: "<module>"
                },
            ]
        );
    }

    #[test]
    fn rust_paths_are_dotted_without_their_root_and_never_test_ids() {
        assert_eq!(
            rust_paths(
                "why does grep_searcher::Searcher::search_path skip `crate::lines::locate()`, \
                 unlike grep_searcher::Searcher::search_path; see ::std::fs::read and \
                 tests/test_a.py::TestA::test_b or x:: or ::"
            ),
            [
                "grep_searcher.Searcher.search_path",
                "lines.locate",
                "std.fs.read"
            ]
        );
        assert!(rust_paths("a plain sentence: no path").is_empty());
        assert!(rust_paths("super::x").is_empty());
    }

    #[test]
    fn mentions_know_code_from_prose() {
        let found =
            mentions("Calling `simplify` on Foo.bar_baz() breaks parse_expr(x), not sympify.");
        let code: Vec<&str> = found
            .iter()
            .filter(|m| m.code_like)
            .map(|m| m.text)
            .collect();
        let plain: Vec<&str> = found
            .iter()
            .filter(|m| !m.code_like)
            .map(|m| m.text)
            .collect();
        assert_eq!(code, ["simplify", "Foo.bar_baz", "bar_baz", "parse_expr"]);
        assert_eq!(plain, ["Calling", "breaks", "not", "sympify"]);
    }
}
