//! Learned fusion (issue 16, item 3; `ATLAS_FUSION=learned`): a logistic-regression scorer
//! over each candidate's evidence, in place of RRF's fixed weights and the rerank's hand
//! priors (tests 0.6, sections 0.5, scope 1.5).
//!
//! The weights are constants (`WEIGHTS`, written by `bench/fusion/train.py` from
//! commit-message sets of repositories outside the evaluation; the training data is not
//! in the binary). `ATLAS_SEARCH_FEATURES=<file>` appends each search's candidates and
//! their features to a file, which is how that script collects them.

use crate::graph::ids::NodeId;
use crate::graph::reader::Graph;
use crate::syntax::facts::SymbolKind;

use super::{RRF_K, Ranks};

/// The features, in `WEIGHTS` order.
pub const FEATURES: [&str; 22] = [
    "rrf",
    "bm25_rr",
    "vector_rr",
    "graph_rr",
    "propagate_rr",
    "file_rr",
    "in_bm25",
    "in_vector",
    "in_graph",
    "in_propagate",
    "in_file",
    "test",
    "section",
    "scope",
    "callable",
    "type",
    "data",
    "log_lines",
    "log_centrality",
    "file_evidence",
    "file_order_rr",
    "file_text_rr",
];

/// What a candidate's features are computed from, beside its fused ranks.
pub struct Context {
    pub test: bool,
    pub section: bool,
    pub in_scope: bool,
    /// `None` for sections.
    pub kind: Option<SymbolKind>,
    pub lines: u32,
    pub centrality: u32,
    /// Where its file stands (all 0 when it has none).
    pub file: FileStanding,
}

/// Where a candidate's file stands among the files of one search.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FileStanding {
    /// Its evidence in the arms' pool over the best file's.
    pub evidence: f64,
    /// The reciprocal of its place in the fused file order (`split::fused_file_order`,
    /// over the pool's files and those the evidence ranks; the pool's in RRF's order
    /// where that is off). The pool's files merge the results in this order.
    pub order: f64,
    /// The reciprocal of its place by BM25 over the files' whole text.
    pub text: f64,
}

impl Context {
    pub fn of(graph: &Graph, item: u32, in_scope: bool, file: FileStanding) -> Context {
        if item >= graph.node_count() as u32 {
            return Context {
                test: false,
                section: true,
                in_scope,
                kind: None,
                lines: 0,
                centrality: 0,
                file,
            };
        }
        let node = NodeId(item);
        let record = graph.node(node);
        let span = &record.span;
        Context {
            test: graph.is_test(node),
            section: false,
            in_scope,
            kind: Some(graph.kind(node)),
            lines: span
                .end_line
                .to_native()
                .saturating_sub(span.start_line.to_native())
                + 1,
            centrality: graph.centrality(node),
            file,
        }
    }
}

/// The feature vector of one candidate (its RRF score and ranks per arm), in `FEATURES`
/// order.
pub fn features(rrf: f64, ranks: &Ranks, context: &Context) -> [f64; FEATURES.len()] {
    let reciprocal = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (1.0 + r as f64));
    let present = |rank: Option<usize>| f64::from(u8::from(rank.is_some()));
    let flag = |on: bool| f64::from(u8::from(on));
    let Ranks {
        bm25,
        vector,
        graph,
        propagate,
        file,
    } = *ranks;
    let kind = context.kind;
    [
        // RRF scaled to about one per arm.
        rrf * RRF_K,
        reciprocal(bm25),
        reciprocal(vector),
        reciprocal(graph),
        reciprocal(propagate),
        reciprocal(file),
        present(bm25),
        present(vector),
        present(graph),
        present(propagate),
        present(file),
        flag(context.test),
        flag(context.section),
        flag(context.in_scope),
        flag(kind.is_some_and(|k| k.is_callable())),
        flag(kind.is_some_and(|k| k.is_type())),
        flag(kind.is_some_and(|k| {
            matches!(
                k,
                SymbolKind::Constant | SymbolKind::Variable | SymbolKind::Field
            )
        })),
        (1.0 + f64::from(context.lines)).ln() / 5.0,
        (1.0 + f64::from(context.centrality)).ln() / 10.0,
        context.file.evidence,
        context.file.order,
        context.file.text,
    ]
}

/// The scorer's weights (`FEATURES` order) and bias, trained by `bench/fusion/train.py`.
pub const WEIGHTS: [f64; FEATURES.len()] = [
    1.077662, 1.327817, 0.904631, 0.399505, -0.139218, -0.106224, -0.375858, -0.452766, 0.074692,
    -0.505408, 0.762634, -3.242686, 0.0, 0.313238, -0.793493, -1.948554, -0.639538, 2.416416,
    -0.013721, 0.213973, 0.139322, 1.496442,
];
pub const BIAS: f64 = -6.170557;

/// The file scorer's features (`FILE_WEIGHTS` order), from a file's symbol candidates:
/// the file's rank as RRF shows it, its RRF evidence over the best file's, how many
/// candidates it holds, the best reciprocal rank each arm gave one of them, whether all
/// are tests, the scope flag, the best RRF score and size among them, and where the file
/// stands in the fused file order and by BM25 over its whole text.
pub const FILE_FEATURES: [&str; 14] = [
    "rrf_file_rr",
    "evidence",
    "log_candidates",
    "max_bm25_rr",
    "max_vector_rr",
    "max_graph_rr",
    "max_propagate_rr",
    "max_file_rr",
    "all_test",
    "scope",
    "max_rrf",
    "max_log_lines",
    "file_order_rr",
    "file_text_rr",
];

/// Positions in `FEATURES` that the file features read (pinned by a test).
mod at {
    pub const RRF: usize = 0;
    pub const BM25_RR: usize = 1;
    pub const VECTOR_RR: usize = 2;
    pub const GRAPH_RR: usize = 3;
    pub const PROPAGATE_RR: usize = 4;
    pub const FILE_RR: usize = 5;
    pub const TEST: usize = 11;
    pub const SCOPE: usize = 13;
    pub const LOG_LINES: usize = 17;
    pub const FILE_ORDER: usize = 20;
    pub const FILE_TEXT: usize = 21;
}

/// The file features of one file: `rrf_rank` among the files with symbol candidates (from
/// 0), `evidence` over the best such file's, and its candidates' symbol features.
pub fn file_features(
    rrf_rank: usize,
    evidence: f64,
    candidates: &[&[f64; FEATURES.len()]],
) -> [f64; FILE_FEATURES.len()] {
    let max = |i: usize| candidates.iter().map(|x| x[i]).fold(0.0, f64::max);
    [
        1.0 / (1.0 + rrf_rank as f64),
        evidence,
        (1.0 + candidates.len() as f64).ln() / 3.0,
        max(at::BM25_RR),
        max(at::VECTOR_RR),
        max(at::GRAPH_RR),
        max(at::PROPAGATE_RR),
        max(at::FILE_RR),
        f64::from(u8::from(candidates.iter().all(|x| x[at::TEST] > 0.0))),
        max(at::SCOPE),
        max(at::RRF),
        max(at::LOG_LINES),
        max(at::FILE_ORDER),
        max(at::FILE_TEXT),
    ]
}

/// The file scorer's weights (`FILE_FEATURES` order) and bias, trained by
/// `bench/fusion/train.py` (a changed file is positive).
pub const FILE_WEIGHTS: [f64; FILE_FEATURES.len()] = [
    -0.422149, 1.456813, 0.448474, 0.439206, 0.640093, 0.795833, 0.367725, -0.270499, -3.315002,
    0.716767, -0.03344, 0.929752, 1.05695, 2.233336,
];
pub const FILE_BIAS: f64 = -5.076925;

/// The file score: higher is more likely a changed file.
pub fn file_score(x: &[f64; FILE_FEATURES.len()]) -> f64 {
    FILE_BIAS + x.iter().zip(FILE_WEIGHTS).map(|(x, w)| x * w).sum::<f64>()
}

/// The learned score: higher is more likely a changed symbol.
pub fn score(x: &[f64; FEATURES.len()]) -> f64 {
    BIAS + x.iter().zip(WEIGHTS).map(|(x, w)| x * w).sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> Context {
        Context {
            test: false,
            section: false,
            in_scope: true,
            kind: Some(SymbolKind::Method),
            lines: 9,
            centrality: 0,
            file: FileStanding {
                evidence: 0.5,
                order: 0.25,
                text: 1.0,
            },
        }
    }

    #[test]
    fn features_read_ranks_kinds_and_flags_in_their_order() {
        let ranks = Ranks {
            bm25: Some(0),
            vector: None,
            graph: Some(3),
            propagate: None,
            file: Some(7),
        };
        let x = features(2.0 / RRF_K, &ranks, &context());
        let at = |name: &str| x[FEATURES.iter().position(|f| *f == name).unwrap()];
        assert_eq!(at("rrf"), 2.0);
        assert_eq!(at("bm25_rr"), 1.0);
        assert_eq!(at("vector_rr"), 0.0);
        assert_eq!(at("graph_rr"), 0.25);
        assert_eq!((at("file_rr"), at("in_file")), (0.125, 1.0));
        assert_eq!((at("propagate_rr"), at("in_propagate")), (0.0, 0.0));
        assert_eq!(
            (at("in_bm25"), at("in_vector"), at("in_graph")),
            (1.0, 0.0, 1.0)
        );
        assert_eq!((at("callable"), at("type"), at("data")), (1.0, 0.0, 0.0));
        assert_eq!((at("test"), at("section"), at("scope")), (0.0, 0.0, 1.0));
        assert!((at("log_lines") - 10f64.ln() / 5.0).abs() < 1e-12);
        assert_eq!(at("log_centrality"), 0.0);
        assert_eq!(at("file_evidence"), 0.5);
        assert_eq!((at("file_order_rr"), at("file_text_rr")), (0.25, 1.0));
    }

    #[test]
    fn the_file_features_read_the_features_they_name() {
        let named = [
            (at::RRF, "rrf"),
            (at::BM25_RR, "bm25_rr"),
            (at::VECTOR_RR, "vector_rr"),
            (at::GRAPH_RR, "graph_rr"),
            (at::PROPAGATE_RR, "propagate_rr"),
            (at::FILE_RR, "file_rr"),
            (at::TEST, "test"),
            (at::SCOPE, "scope"),
            (at::LOG_LINES, "log_lines"),
            (at::FILE_ORDER, "file_order_rr"),
            (at::FILE_TEXT, "file_text_rr"),
        ];
        for (i, name) in named {
            assert_eq!(FEATURES[i], name);
        }
    }

    #[test]
    fn a_candidate_with_more_evidence_scores_higher() {
        // Whatever the trained weights, the score is their dot product with the features.
        let x = features(0.0, &Ranks::default(), &context());
        let by_hand = BIAS + x.iter().zip(WEIGHTS).map(|(x, w)| x * w).sum::<f64>();
        assert_eq!(score(&x), by_hand);
    }
}
