//! Query intent (R-Q-1) and name matching (R-Q-2).
//!
//! The parser recognises only identifiers (`name`, `a::b::c`, `pkg.mod.Class.method`),
//! repository-relative paths and the relation words. Every other word is a free term for
//! hybrid search — reported, never silently dropped, never interpreted by a model.

use crate::facts::SymbolKind;
use crate::graph::names::{normalize_qualified, split_identifier};
use crate::graph::{Graph, NameTable};
use crate::model::EdgeKind;

pub const RELATION_WORDS: &[&str] = &[
    "calls",
    "callers",
    "callees",
    "references",
    "uses-type",
    "implements",
    "contains",
];

/// Matching tiers, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchTier {
    ExactId,
    ExactSymbol,
    ExactPath,
    CaseInsensitive,
    QualifiedSuffix,
    Segmented,
    Substring,
}

impl MatchTier {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchTier::ExactId => "exact-id",
            MatchTier::ExactSymbol => "exact-symbol",
            MatchTier::ExactPath => "exact-path",
            MatchTier::CaseInsensitive => "case-insensitive",
            MatchTier::QualifiedSuffix => "qualified-suffix",
            MatchTier::Segmented => "segmented",
            MatchTier::Substring => "substring",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    Calls,
    Callers,
    Callees,
    References,
    UsesType,
    Implements,
    Contains,
}

impl Relation {
    fn parse(word: &str) -> Option<Relation> {
        Some(match word {
            "calls" => Relation::Calls,
            "callers" => Relation::Callers,
            "callees" => Relation::Callees,
            "references" => Relation::References,
            "uses-type" => Relation::UsesType,
            "implements" => Relation::Implements,
            "contains" => Relation::Contains,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Calls => "calls",
            Relation::Callers => "callers",
            Relation::Callees => "callees",
            Relation::References => "references",
            Relation::UsesType => "uses-type",
            Relation::Implements => "implements",
            Relation::Contains => "contains",
        }
    }

    pub fn edge_kind(self) -> EdgeKind {
        match self {
            Relation::Calls | Relation::Callers | Relation::Callees => EdgeKind::Calls,
            Relation::References => EdgeKind::References,
            Relation::UsesType => EdgeKind::UsesType,
            Relation::Implements => EdgeKind::Implements,
            Relation::Contains => EdgeKind::Contains,
        }
    }
}

/// A query term resolved to graph nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub term: String,
    pub node: u32,
    pub tier: MatchTier,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ambiguity {
    pub term: String,
    pub tier: MatchTier,
    /// Labels (`path::Qualified`) of up to 20 candidates, by centrality.
    pub candidates: Vec<String>,
    pub total: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intent {
    pub anchors: Vec<Anchor>,
    pub relations: Vec<Relation>,
    /// Words that named nothing in the graph: hybrid-search input.
    pub free_terms: Vec<String>,
    pub ambiguities: Vec<Ambiguity>,
}

impl Intent {
    pub fn has_relation(&self, relation: Relation) -> bool {
        self.relations.contains(&relation)
    }
}

fn is_identifier_shaped(token: &str) -> bool {
    let normalized = token.replace("::", ".");
    !normalized.is_empty()
        && normalized.split('.').all(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
                && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
}

fn is_path_shaped(token: &str) -> bool {
    token.contains('/') || crate::inventory::role_of(token).is_some()
}

/// Parses `query` and matches its terms against `graph`.
pub fn parse(graph: &Graph, query: &str) -> Intent {
    let mut intent = Intent::default();
    let tokens: Vec<String> = query
        .split_whitespace()
        .map(|t| {
            t.trim_matches(|c| matches!(c, '"' | '\'' | '`' | ',' | ';' | '(' | ')'))
                .to_string()
        })
        .filter(|t| !t.is_empty())
        .collect();
    let mut pending: Vec<(String, MatchTier, Vec<u32>)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let token = &tokens[i];
        if let Some(relation) = Relation::parse(&token.to_lowercase()) {
            intent.relations.push(relation);
            i += 1;
            continue;
        }
        if is_path_shaped(token) {
            let path = token.trim_start_matches("./").trim_end_matches('/');
            match path_nodes(graph, path) {
                nodes if !nodes.is_empty() => {
                    pending.push((token.clone(), MatchTier::ExactPath, nodes));
                }
                _ => intent.free_terms.push(token.clone()),
            }
            i += 1;
            continue;
        }
        if !is_identifier_shaped(token) {
            intent.free_terms.push(token.clone());
            i += 1;
            continue;
        }
        if let Some((tier, nodes)) = strong_match(graph, token) {
            pending.push((token.clone(), tier, nodes));
            i += 1;
            continue;
        }
        // `compile ctx` ~ `compile_context`: two adjacent plain words may name one symbol.
        if let Some(next) = tokens.get(i + 1).filter(|n| {
            is_identifier_shaped(n)
                && Relation::parse(&n.to_lowercase()).is_none()
                && strong_match(graph, n).is_none()
        }) {
            let pair = format!("{token} {next}");
            let nodes = segmented(graph, &pair);
            if !nodes.is_empty() {
                pending.push((pair, MatchTier::Segmented, nodes));
                i += 2;
                continue;
            }
        }
        let nodes = segmented(graph, token);
        if !nodes.is_empty() {
            pending.push((token.clone(), MatchTier::Segmented, nodes));
        } else {
            let nodes = substring(graph, token);
            if nodes.is_empty() {
                intent.free_terms.push(token.clone());
            } else {
                pending.push((token.clone(), MatchTier::Substring, nodes));
            }
        }
        i += 1;
    }
    // Relation words about calls make callables the meaning of a shared name.
    let callables_only = intent
        .relations
        .iter()
        .any(|r| matches!(r, Relation::Calls | Relation::Callers | Relation::Callees));
    for (term, tier, nodes) in pending {
        push_match(graph, &mut intent, &term, tier, nodes, callables_only);
    }
    intent
}

/// Exact id, exact symbol, case-insensitive and qualified-suffix tiers.
fn strong_match(graph: &Graph, token: &str) -> Option<(MatchTier, Vec<u32>)> {
    let qualified = token.contains("::") || token.contains('.');
    if qualified {
        let normalized = normalize_qualified(token);
        let nodes = graph.lookup(NameTable::Suffix, &normalized);
        if !nodes.is_empty() {
            let exact: Vec<u32> = nodes
                .iter()
                .copied()
                .filter(|&n| full_id(graph, n) == normalized)
                .collect();
            return Some(if exact.is_empty() {
                (MatchTier::QualifiedSuffix, nodes)
            } else {
                (MatchTier::ExactId, exact)
            });
        }
        return None;
    }
    let nodes = graph.lookup(NameTable::Exact, token);
    if !nodes.is_empty() {
        return Some((MatchTier::ExactSymbol, nodes));
    }
    let nodes = graph.lookup(NameTable::Folded, &token.to_lowercase());
    if !nodes.is_empty() {
        return Some((MatchTier::CaseInsensitive, nodes));
    }
    None
}

/// `module.path.Qualified.name` of a symbol node.
pub fn full_id(graph: &Graph, node: u32) -> String {
    let record = graph.node(node);
    let qualified = normalize_qualified(graph.str(record.qualified.to_native()));
    match graph.file_of(node) {
        Some(file) => format!(
            "{}.{qualified}",
            crate::graph::names::module_path_of(graph.str(file.path.to_native()))
        ),
        None => qualified,
    }
}

fn path_nodes(graph: &Graph, path: &str) -> Vec<u32> {
    let data = graph.data();
    if let Some(file) = data
        .files
        .iter()
        .find(|f| graph.str(f.path.to_native()) == path)
    {
        return vec![file.node.to_native()];
    }
    // A directory: its module node.
    (0..graph.node_count() as u32)
        .filter(|&n| {
            graph.kind(n) == SymbolKind::Module
                && graph.str(graph.node(n).qualified.to_native()) == path
        })
        .collect()
}

/// Nodes whose name segments start with every word of `text`, in order.
fn segmented(graph: &Graph, text: &str) -> Vec<u32> {
    let words = split_identifier(text);
    let Some(first) = words.first() else {
        return Vec::new();
    };
    let mut nodes = graph.lookup_prefix(NameTable::Segments, first, 4096);
    nodes.sort_unstable();
    nodes.dedup();
    nodes.retain(|&n| {
        let name = graph.str(graph.node(n).name.to_native());
        let segments = split_identifier(name);
        segments.len() >= words.len() && words_match(&words, &segments)
    });
    nodes
}

/// Each query word is a prefix (or an in-order subsequence starting at the first
/// letter, `ctx` ~ `context`) of a distinct segment, in order.
fn words_match(words: &[String], segments: &[String]) -> bool {
    let mut next = 0;
    for word in words {
        let Some(found) = segments[next..].iter().position(|s| abbreviates(word, s)) else {
            return false;
        };
        next += found + 1;
    }
    true
}

fn abbreviates(word: &str, segment: &str) -> bool {
    if segment.starts_with(word) {
        return true;
    }
    let mut chars = segment.chars();
    word.chars().next() == segment.chars().next() && word.chars().all(|w| chars.any(|s| s == w))
}

/// Normalised substring of symbol names (separators and case ignored).
fn substring(graph: &Graph, token: &str) -> Vec<u32> {
    let needle: String = token
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    if needle.len() < 3 {
        return Vec::new();
    }
    graph
        .data()
        .names_folded
        .iter()
        .filter(|e| {
            let key: String = graph
                .str(e.key.to_native())
                .chars()
                .filter(|c| c.is_alphanumeric())
                .collect();
            key.contains(&needle)
        })
        .map(|e| e.node.to_native())
        .take(4096)
        .collect()
}

fn push_match(
    graph: &Graph,
    intent: &mut Intent,
    term: &str,
    tier: MatchTier,
    mut nodes: Vec<u32>,
    callables_only: bool,
) {
    nodes.sort_unstable();
    nodes.dedup();
    if callables_only && nodes.len() > 1 {
        let callables: Vec<u32> = nodes
            .iter()
            .copied()
            .filter(|&n| graph.kind(n).is_callable())
            .collect();
        if !callables.is_empty() {
            nodes = callables;
        }
    }
    // Rust `mod x;` declarations and impl blocks rarely are what a name means when a
    // real definition shares it.
    if nodes.len() > 1 {
        let preferred: Vec<u32> = nodes
            .iter()
            .copied()
            .filter(|&n| !matches!(graph.kind(n), SymbolKind::Module | SymbolKind::Impl))
            .collect();
        if !preferred.is_empty() {
            nodes = preferred;
        }
    }
    // A name that is some candidate's whole in-file qualified name (a top-level `simplify`
    // against methods `Basic.simplify`) is an exact match for that candidate alone.
    if nodes.len() > 1 && tier == MatchTier::ExactSymbol {
        let whole: Vec<u32> = nodes
            .iter()
            .copied()
            .filter(|&n| graph.str(graph.node(n).qualified.to_native()) == term)
            .collect();
        if !whole.is_empty() && whole.len() < nodes.len() {
            nodes = whole;
        }
    }
    // Overloads (`@overload`, TypeScript signatures) share one label: the widest
    // definition is the implementation.
    if nodes.len() > 1 {
        let label = crate::dump::node_label(graph, nodes[0]);
        if nodes
            .iter()
            .all(|&n| crate::dump::node_label(graph, n) == label)
        {
            let widest = nodes.iter().copied().max_by_key(|&n| {
                let span = &graph.node(n).span;
                (span.end_byte.to_native() - span.start_byte.to_native(), n)
            });
            nodes = widest.into_iter().collect();
        }
    }
    if nodes.len() == 1 {
        intent.anchors.push(Anchor {
            term: term.to_string(),
            node: nodes[0],
            tier,
        });
        return;
    }
    let total = nodes.len();
    nodes.sort_by_key(|&n| (std::cmp::Reverse(graph.node(n).centrality.to_native()), n));
    intent.ambiguities.push(Ambiguity {
        term: term.to_string(),
        tier,
        candidates: nodes
            .iter()
            .take(20)
            .map(|&n| crate::dump::node_label(graph, n))
            .collect(),
        total,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shapes() {
        assert!(is_identifier_shaped("compile_context"));
        assert!(is_identifier_shaped("a::b::c"));
        assert!(is_identifier_shaped("pkg.Class.method"));
        assert!(!is_identifier_shaped("how?"));
        assert!(is_path_shaped("src/main.rs"));
        assert!(is_path_shaped("main.py"));
        assert!(!is_path_shaped("Cart.total"));
    }

    #[test]
    fn abbreviations_and_prefixes() {
        let segments = split_identifier("compile_context");
        assert!(words_match(&split_identifier("compile ctx"), &segments));
        assert!(words_match(&split_identifier("comp cont"), &segments));
        assert!(!words_match(
            &split_identifier("context compile"),
            &segments
        ));
        assert!(!words_match(&split_identifier("xyz"), &segments));
    }
}
