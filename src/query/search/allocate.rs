//! File-then-function allocation (issue 16, `ATLAS_SEARCH_ALLOCATION=file`).
//!
//! A bug report names a behaviour; the code behind it usually sits in one to three files,
//! and several of the pool's candidates point at the same file. So files are ranked
//! first, from their candidates' evidence; the best three then bring their own symbols
//! by BM25 within each file (the `file` arm: the global pools hold 50 per arm, and a
//! file's other functions rarely make it), fused with what the other arms (propagation
//! included) found. A class keeps its methods right behind it.
//!
//! The order depends on the pool alone, never on `top_k`: a longer `--top-k` extends
//! the same ranking.

use std::collections::HashMap;

use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::Graph;

/// A file's evidence sums its best candidates' weights with a harmonic decay (the best
/// counts whole, the next half, then a third…) over at most this many.
const FILE_DEPTH: usize = 5;
/// The best files whose own symbols join the pool by BM25 within the file.
pub const IN_FILE_FILES: usize = 3;
/// Symbols each of them adds at most.
pub const IN_FILE_POOL: usize = 20;
/// A class pulls its methods behind it from within this many first positions.
const CLASS_WINDOW: usize = 20;

/// A file and its evidence, for `--group-by file`.
#[derive(Debug, Clone, PartialEq)]
pub struct FileEvidence {
    pub file: FileId,
    pub evidence: f64,
}

/// One candidate as allocation sees it.
pub struct Candidate {
    /// Its file (`None`: no file, it keeps its place among the others by weight).
    pub file: Option<FileId>,
    /// Its fused score with the rerank's priors applied (tests and prose weigh less).
    pub weight: f64,
    /// The node, for a class and its methods (`None` for sections).
    pub node: Option<NodeId>,
}

/// Files by evidence, best first (ties by file id).
pub fn rank_files(candidates: &[Candidate]) -> Vec<FileEvidence> {
    let mut weights: HashMap<FileId, Vec<f64>> = HashMap::new();
    for c in candidates {
        if let Some(file) = c.file {
            weights.entry(file).or_default().push(c.weight);
        }
    }
    let mut files: Vec<FileEvidence> = weights
        .into_iter()
        .map(|(file, mut w)| {
            w.sort_by(|a, b| b.total_cmp(a));
            let evidence = w
                .iter()
                .take(FILE_DEPTH)
                .enumerate()
                .map(|(i, w)| w / (i + 1) as f64)
                .sum();
            FileEvidence { file, evidence }
        })
        .collect();
    files.sort_by(|a, b| b.evidence.total_cmp(&a.evidence).then(a.file.cmp(&b.file)));
    files
}

/// The allocated order of `candidates[promoted..]` (the promoted exact-name tiers stay in
/// front as they are), as positions into `candidates`; with the files by evidence.
///
/// Candidates are ordered by their own weight: adding a share of the file's evidence to
/// each (0.1 to 0.5 of it) was measured on commit-message sets and traded file Acc@5 for
/// Acc@1 without a function-level gain (docs/QUALITY.md), so the best files spend their
/// slots through the symbols BM25 finds within them (the `file` arm), not by a lift.
pub fn allocate(
    graph: &Graph,
    candidates: &[Candidate],
    promoted: usize,
) -> (Vec<usize>, Vec<FileEvidence>) {
    let files = rank_files(candidates);
    let promoted = promoted.min(candidates.len());
    let mut rest: Vec<usize> = (promoted..candidates.len()).collect();
    // Stable: equal weights keep the fused order.
    rest.sort_by(|&a, &b| candidates[b].weight.total_cmp(&candidates[a].weight));
    let mut order: Vec<usize> = (0..promoted).collect();
    order.extend(keep_classes_together(graph, candidates, rest));
    (order, files)
}

/// Moves the methods (and other members) of a class that rank within the first
/// `CLASS_WINDOW` positions right behind it, in their order.
fn keep_classes_together(graph: &Graph, candidates: &[Candidate], order: Vec<usize>) -> Vec<usize> {
    let window = order.len().min(CLASS_WINDOW);
    let mut placed = vec![false; order.len()];
    let mut out = Vec::with_capacity(order.len());
    for i in 0..order.len() {
        if placed[i] {
            continue;
        }
        placed[i] = true;
        out.push(order[i]);
        let Some(class) = candidates[order[i]].node else {
            continue;
        };
        if i >= window || !graph.kind(class).is_type_container() {
            continue;
        }
        for j in i + 1..window {
            if !placed[j]
                && let Some(member) = candidates[order[j]].node
                && graph.node(member).parent() == class
            {
                placed[j] = true;
                out.push(order[j]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(file: u32, weight: f64) -> Candidate {
        Candidate {
            file: Some(FileId(file)),
            weight,
            node: None,
        }
    }

    #[test]
    fn a_file_several_candidates_point_at_outranks_one_lucky_name() {
        let candidates = [
            candidate(1, 0.050),
            candidate(2, 0.030),
            candidate(2, 0.030),
            candidate(2, 0.020),
        ];
        let files = rank_files(&candidates);
        assert_eq!(files[0].file, FileId(2));
        // 0.030 + 0.030/2 + 0.020/3
        assert!((files[0].evidence - 0.051_666).abs() < 1e-5);
        assert_eq!(
            files[1],
            FileEvidence {
                file: FileId(1),
                evidence: 0.050
            }
        );
    }

    #[test]
    fn only_the_best_candidates_of_a_file_count() {
        let many: Vec<Candidate> = (0..40).map(|_| candidate(7, 0.01)).collect();
        let files = rank_files(&many);
        let expected: f64 = (1..=FILE_DEPTH).map(|i| 0.01 / i as f64).sum();
        assert!((files[0].evidence - expected).abs() < 1e-12);
    }
}
