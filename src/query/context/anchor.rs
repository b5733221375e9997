//! Where a profile starts when the query is a question (issue 9): an ambiguous name among
//! other words is ranked rather than fatal, and a question that names nothing is anchored
//! by its best search hits. A single name with several equally good matches stays a typed
//! error, whose details name every candidate with the argv that asks for it alone.

use std::collections::HashMap;

use super::ContextRequest;
use super::project::{Choice, Diagnostic, DiagnosticCode};
use crate::error::{AtlasError, NearName};
use crate::graph::ids::NodeId;
use crate::graph::reader::Graph;
use crate::query::intent::{Ambiguity, Anchor, AnchorReason, Intent, Word, unique_name, words};
use crate::query::profile::ProfileName;
use crate::query::search::Hit;
use crate::syntax::facts::SymbolKind;

/// Candidates listed in an ambiguity error (the total is always given).
const LISTED: usize = 20;
/// Other candidates listed in a question's ambiguity diagnostic: it shares the answer's
/// byte ceiling.
const LISTED_IN_QUESTION: usize = 5;
/// Search hits considered as anchors of a question, best first.
const ANCHOR_POOL: usize = 5;
/// A plain word's symbol must be among this many first lexical hits to anchor.
const PLAIN_WORD_CONFIRMATION: usize = 3;
/// A second hit starts an alternative chain when its fused score is at least this share
/// of the anchor's.
const ALTERNATIVE_SHARE: f64 = 0.6;

/// The choices of an ambiguity, each with the argv that asks again naming it alone.
fn choices(
    graph: &Graph,
    ambiguity: &Ambiguity,
    nodes: &[NodeId],
    request: &ContextRequest,
    limit: usize,
) -> Vec<Choice> {
    nodes
        .iter()
        .take(limit)
        .map(|&node| {
            let mut name = unique_name(graph, node);
            // A ref that ends several files (`mod.rs:200`): each file keeps its line.
            if graph.kind(node) == SymbolKind::File {
                name.push_str(ref_tail(&ambiguity.term));
            }
            Choice {
                symbol: graph.label(node),
                argv: request.argv_for_query(&replace_term(&request.query, &ambiguity.term, &name)),
            }
        })
        .collect()
}

/// What follows a ref's file name: its `:line[:column]` or `#L…` (empty when none).
fn ref_tail(term: &str) -> &str {
    let name = term.rfind(['/', '\\']).map_or(0, |at| at + 1);
    term[name..]
        .find([':', '#'])
        .map_or("", |at| &term[name + at..])
}

/// The query with `term` (as typed, or as the words of a phrase) replaced by `name`.
fn replace_term(query: &str, term: &str, name: &str) -> String {
    if let Some(at) = query.find(term) {
        return format!("{}{name}{}", &query[..at], &query[at + term.len()..]);
    }
    // A phrase spelled over several words (`compile  ctx`): replace its words.
    let words: Vec<&str> = term.split(' ').collect();
    let mut out: Vec<String> = Vec::new();
    let mut replaced = false;
    let mut skip = 0;
    for word in query.split_whitespace() {
        if skip > 0 && words.contains(&word) {
            skip -= 1;
            continue;
        }
        if !replaced && word == words[0] {
            out.push(name.to_string());
            replaced = true;
            skip = words.len() - 1;
            continue;
        }
        out.push(word.to_string());
    }
    if !replaced {
        out.insert(0, name.to_string());
    }
    out.join(" ")
}

/// A single name with several equally good matches (R-Q-2).
pub fn ambiguity_error(
    graph: &Graph,
    ambiguity: &Ambiguity,
    request: &ContextRequest,
) -> AtlasError {
    let choices = choices(graph, ambiguity, &ambiguity.nodes, request, LISTED);
    AtlasError::ContextAmbiguous {
        term: ambiguity.term.clone(),
        tier: ambiguity.tier.as_str(),
        total: ambiguity.nodes.len(),
        candidates: choices.iter().map(|c| c.symbol.clone()).collect(),
        argv: choices.into_iter().map(|c| c.argv).collect(),
    }
}

/// Names offered when nothing matched.
const OFFERED: usize = 3;
/// Names that matched nothing looked up for suggestions, in query order (docs/CLI.md).
const SUGGESTED_TERMS: usize = 8;

/// Names near the query's names that matched nothing (a typo: `Rationl`), each with the
/// argv that asks again with it: code-shaped words, and a plain word asked alone.
pub fn near_names(graph: &Graph, intent: &Intent, request: &ContextRequest) -> Vec<NearName> {
    let mut out: Vec<NearName> = Vec::new();
    let unmatched: std::collections::HashSet<&str> =
        intent.free_terms.iter().map(String::as_str).collect();
    let mut looked_up: Vec<String> = Vec::new();
    for word in words(&request.query) {
        let term = match word {
            Word::Code(term) => term,
            Word::Plain(term) if intent.single_name => term,
            _ => continue,
        };
        if !unmatched.contains(term.as_str()) || looked_up.contains(&term) {
            continue;
        }
        // Each lookup measures the term against every name of the graph: a pasted log of
        // thousands of names took seconds. Names past the first few get no suggestion.
        if looked_up.len() == SUGGESTED_TERMS {
            break;
        }
        looked_up.push(term.clone());
        for name in crate::query::intent::near_names(graph, &term, OFFERED - out.len()) {
            out.push(NearName {
                argv: request.argv_for_query(&replace_term(&request.query, &term, &name)),
                term: term.clone(),
                name,
            });
        }
        if out.len() >= OFFERED {
            break;
        }
    }
    out
}

/// Fused search score per node.
fn scores(hits: &[Hit]) -> HashMap<NodeId, f64> {
    let mut out = HashMap::new();
    for hit in hits {
        if let Some(node) = hit.node {
            out.entry(node).or_insert(hit.score);
        }
    }
    out
}

/// Resolves every ambiguity of a question by ranking its candidates — search score,
/// non-test before test, centrality — anchoring the best and listing the others in an
/// `atlas-context-ambiguous` diagnostic with the argv that names each.
pub fn rank_ambiguities(
    graph: &Graph,
    intent: &mut Intent,
    hits: &[Hit],
    request: &ContextRequest,
) -> Vec<Diagnostic> {
    let scores = scores(hits);
    let mut diagnostics = Vec::new();
    for mut ambiguity in std::mem::take(&mut intent.ambiguities) {
        ambiguity.nodes.sort_by(|&a, &b| {
            let score = |n: NodeId| scores.get(&n).copied().unwrap_or(0.0);
            score(b)
                .total_cmp(&score(a))
                .then(graph.is_test(a).cmp(&graph.is_test(b)))
                .then(graph.centrality(b).cmp(&graph.centrality(a)))
                .then(a.cmp(&b))
        });
        let best = ambiguity.nodes[0];
        let others = &ambiguity.nodes[1..];
        intent.anchors.push(Anchor {
            term: ambiguity.term.clone(),
            node: best,
            tier: Some(ambiguity.tier),
            reason: AnchorReason::Ranked,
        });
        if others.is_empty() {
            continue;
        }
        diagnostics.push(Diagnostic {
            code: DiagnosticCode::Ambiguous,
            message: format!(
                "`{}` names {} symbols ({}); anchored on {} (best by search score, non-test, centrality); the next {} of {} other(s) are listed with the argv that names each",
                ambiguity.term,
                ambiguity.nodes.len(),
                ambiguity.tier.as_str(),
                graph.label(best),
                others.len().min(LISTED_IN_QUESTION),
                others.len()
            ),
            path: None,
            candidates: choices(graph, &ambiguity, others, request, LISTED_IN_QUESTION),
        });
    }
    diagnostics
}

/// Hits that are evidence of the words, not only near them: a BM25 or graph-arm match on
/// a symbol (vector neighbours exist for any text).
fn lexical(hits: &[Hit]) -> Vec<&Hit> {
    hits.iter()
        .filter(|h| h.node.is_some() && (h.ranks.bm25.is_some() || h.ranks.graph.is_some()))
        .collect()
}

/// The arms a search anchor names (`anchors[].arms` in the context schema v2): those that
/// retrieve from the whole index. `propagate` and `file` only re-rank or extend what these
/// found, and the v2 format has no value for them.
const ANCHOR_ARMS: [&str; 3] = ["bm25", "vector", "graph"];

fn search_anchor(graph: &Graph, intent: &Intent, hit: &Hit, node: NodeId) -> Anchor {
    Anchor {
        term: intent.search_text.clone(),
        node: graph.implementation(node),
        tier: None,
        reason: AnchorReason::Search {
            arms: hit
                .match_arms
                .iter()
                .copied()
                .filter(|arm| ANCHOR_ARMS.contains(arm))
                .collect(),
        },
    }
}

fn module_of(graph: &Graph, node: NodeId) -> NodeId {
    match graph.file_of(node) {
        Some(file) => file.module(),
        None => node,
    }
}

/// A plain word of a question anchors only when search agrees: its symbol is among the
/// first lexical hits of the question. Otherwise the word was prose (`how does a command
/// line get parsed`): it goes back to the free words and search anchors the question.
pub fn confirm_plain_words(intent: &mut Intent, hits: &[Hit]) {
    if intent.plain_word_anchors.is_empty() {
        return;
    }
    let first: Vec<NodeId> = lexical(hits)
        .iter()
        .take(PLAIN_WORD_CONFIRMATION)
        .filter_map(|h| h.node)
        .collect();
    let unconfirmed = std::mem::take(&mut intent.plain_word_anchors);
    let mut kept = Vec::new();
    for anchor in std::mem::take(&mut intent.anchors) {
        if unconfirmed.contains(&anchor.node) && !first.contains(&anchor.node) {
            intent.free_terms.push(anchor.term);
        } else {
            kept.push(anchor);
        }
    }
    intent.anchors = kept;
}

/// Anchors a question that names nothing on its best search hits: flow starts its spine
/// from the best callable hit (and an alternative chain from the next strong one), symbol
/// and impact take the top hit, architecture the modules of the top hits. Code before
/// tests among the first hits. Returns whether anything was anchored.
pub fn anchor_on_search(
    graph: &Graph,
    intent: &mut Intent,
    hits: &[Hit],
    profile: ProfileName,
) -> bool {
    let lexical = lexical(hits);
    let pool: Vec<&Hit> = lexical.iter().take(ANCHOR_POOL).copied().collect();
    let Some(&top) = pool.first() else {
        return false;
    };
    let prefer = |wanted: &dyn Fn(NodeId) -> bool| -> &Hit {
        pool.iter()
            .copied()
            .find(|h| h.node.is_some_and(|n| wanted(n) && !graph.is_test(n)))
            .or_else(|| pool.iter().copied().find(|h| h.node.is_some_and(wanted)))
            .unwrap_or(top)
    };
    match profile {
        ProfileName::Flow => {
            let callable = |n: NodeId| graph.kind(n).is_callable();
            let best = prefer(&callable);
            let node = best.node.unwrap_or(NodeId(0));
            intent
                .anchors
                .push(search_anchor(graph, intent, best, node));
            intent.alternative = pool
                .iter()
                .filter(|h| h.node != best.node && h.score >= best.score * ALTERNATIVE_SHARE)
                .find(|h| h.node.is_some_and(|n| callable(n) && !graph.is_test(n)))
                .and_then(|h| h.node.map(|n| search_anchor(graph, intent, h, n)));
        }
        ProfileName::Symbol | ProfileName::Impact => {
            let best = prefer(&|_| true);
            let node = best.node.unwrap_or(NodeId(0));
            intent
                .anchors
                .push(search_anchor(graph, intent, best, node));
        }
        ProfileName::Architecture => {
            let mut modules: Vec<NodeId> = Vec::new();
            for hit in pool.iter().take(3) {
                let module = module_of(graph, hit.node.unwrap_or(NodeId(0)));
                if !modules.contains(&module) {
                    modules.push(module);
                    intent
                        .anchors
                        .push(search_anchor(graph, intent, hit, module));
                }
            }
        }
    }
    !intent.anchors.is_empty()
}

#[cfg(test)]
mod tests {
    use super::replace_term;

    #[test]
    fn a_term_is_replaced_where_it_was_typed() {
        assert_eq!(
            replace_term("why is `total` wrong", "total", "shop.models.Cart.total"),
            "why is `shop.models.Cart.total` wrong"
        );
        assert_eq!(
            replace_term("compile  ctx calls", "compile ctx", "atlas.compile_context"),
            "atlas.compile_context calls"
        );
    }
}
