//! Split fusion (issue 16; `ATLAS_FUSION=split`, the default): RRF ranks the files, the
//! learned scorer ranks the symbols within that file order.
//!
//! Measured on commit-message sets (docs/QUALITY.md), the learned scorer finds changed
//! functions better than RRF on every set, but ranks files worse on some (a Rust set falls
//! below whole-file BM25). RRF's file order holds on all of them. So the pool is merged:
//! a file first appears where RRF first shows it, and every slot goes to the best remaining
//! candidate by the learned weight among the files already shown and the next one.
//!
//! By default the file order is RRF's weighed with each file's own BM25 evidence
//! (`fused_file_order`, `ATLAS_FILE_ORDER=fused`): RRF's first appearance favours the file
//! of one strong name, the evidence a file that many symbols match, and a file whose
//! whole text matches (BM25 over file documents, scored among themselves).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use crate::graph::ids::FileId;

use super::{allocate, learned};
use crate::config::{FileOrder, Fusion};

/// How far a file's place in each order counts (`1 / (FILE_ORDER_K + place)`, places from
/// 1): small, so that the first places weigh most.
const FILE_ORDER_K: f64 = 5.0;
/// The weight of a file's place by its symbols' BM25 evidence against its place in RRF's
/// order (which counts 1).
const EVIDENCE_WEIGHT: f64 = 0.5;
/// The weight of a file's place by BM25 over its whole text (`ATLAS_FILE_ORDER=fused`;
/// `symbols` leaves it out). Chosen on commit-message sets, short and long
/// (docs/QUALITY.md): 0.5 raised file Acc@1, Acc@5 and MRR on average on both, 0.25 less.
const TEXT_WEIGHT: f64 = 0.5;

/// Symbol documents whose BM25 scores make the files' evidence (`SearchIndex::symbols_by_bm25`).
pub const EVIDENCE_DEPTH: usize = 200;
/// Files of that ranking that count.
pub const EVIDENCE_FILES: usize = 50;

/// Each file's score in the fused file order (`ATLAS_FILE_ORDER=fused`): its place in RRF's
/// order of first appearance, weighed with its place among files by the BM25 evidence of
/// their symbols and its place by BM25 over their whole text. RRF's order decides where
/// they agree or the evidence says little; a file that many symbols match, or whose text
/// does, moves ahead of one that a single name brought in.
///
/// Measured on commit-message sets in four languages (docs/QUALITY.md): the symbols'
/// weight 0.5 (with K 5, over 200 documents) lost no file figure on any set; 1 and 2 did.
/// The text's weight: `TEXT_WEIGHT`.
pub fn fused_file_order(rrf: &[FileId], evidence: &FileEvidence) -> HashMap<FileId, f64> {
    let mut scores: HashMap<FileId, f64> = HashMap::new();
    let orders = [
        (rrf, 1.0),
        (evidence.symbols.as_slice(), EVIDENCE_WEIGHT),
        (evidence.text.as_slice(), TEXT_WEIGHT),
    ];
    for (order, weight) in orders {
        for (place, file) in order.iter().enumerate() {
            *scores.entry(*file).or_default() += weight / (FILE_ORDER_K + place as f64 + 1.0);
        }
    }
    scores
}

/// Whether split fusion orders the files that hold symbols by the learned file scorer
/// (`file_scores`) rather than by the fused file order: always under `split-files`, and
/// on prose under the default file order. Measured on commit-message sets
/// (docs/QUALITY.md): on messages of 40 words and more it raised the six sets' mean file
/// figures (the Python sets most; gin and tokio lost a little), and it was mixed on
/// one-line messages and lowered short questions (codesteer-golden).
pub fn files_by_scorer(fusion: Fusion, file_order: FileOrder, prose: bool) -> bool {
    match fusion {
        Fusion::SplitFiles => true,
        Fusion::Split => file_order == FileOrder::Learned && prose,
        Fusion::Rrf | Fusion::Learned => false,
    }
}

/// Files by evidence of their own, for the fused file order.
#[derive(Debug, Default)]
pub struct FileEvidence {
    /// By their symbols' BM25 evidence (`SearchIndex::symbols_by_bm25`).
    pub symbols: Vec<FileId>,
    /// By BM25 over their whole text (`SearchIndex::files_by_text`).
    pub text: Vec<FileId>,
}

impl FileEvidence {
    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty() && self.text.is_empty()
    }
}

/// One candidate, in RRF order: its file (`None`: it stands alone, as a file of its own),
/// its learned weight, and its file's score by the file scorer (`None`: the file keeps the
/// place RRF gives it, as a file of Markdown sections does).
#[derive(Debug, Clone, Copy)]
pub struct Candidate {
    pub file: Option<FileId>,
    pub weight: f64,
    pub file_score: Option<f64>,
}

/// One candidate as the file scorer sees it, in RRF order: its file, its RRF weight, and
/// its symbol features (`None` for a Markdown section).
pub struct Scored<'a> {
    pub file: Option<FileId>,
    pub rrf_weight: f64,
    pub features: Option<&'a [f64; learned::FEATURES.len()]>,
}

/// The file scorer's score of each file holding symbol candidates.
pub fn file_scores(pool: &[Scored]) -> HashMap<FileId, f64> {
    let mut order: Vec<FileId> = Vec::new();
    let mut candidates: HashMap<FileId, Vec<&[f64; learned::FEATURES.len()]>> = HashMap::new();
    let mut weighed: Vec<allocate::Candidate> = Vec::new();
    for entry in pool {
        let (Some(file), Some(features)) = (entry.file, entry.features) else {
            continue;
        };
        candidates
            .entry(file)
            .or_insert_with(|| {
                order.push(file);
                Vec::new()
            })
            .push(features);
        weighed.push(allocate::Candidate {
            file: Some(file),
            weight: entry.rrf_weight,
            node: None,
        });
    }
    // The same evidence as allocation's and `--group-by file`'s, over symbols only.
    let evidence: HashMap<FileId, f64> = allocate::rank_files(&weighed)
        .into_iter()
        .map(|f| (f.file, f.evidence))
        .collect();
    let best = evidence.values().copied().fold(0.0, f64::max);
    order
        .iter()
        .enumerate()
        .map(|(rank, file)| {
            let relative = if best > 0.0 {
                evidence[file] / best
            } else {
                0.0
            };
            let x = learned::file_features(rank, relative, &candidates[file]);
            (*file, learned::file_score(&x))
        })
        .collect()
}

/// A group's next candidate in the merge, ordered by weight, then by RRF position.
struct Head {
    weight: f64,
    position: usize,
    group: usize,
}

impl PartialEq for Head {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head {}
impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head {
    /// The heap pops the greatest: the higher weight, then the earlier RRF position.
    fn cmp(&self, other: &Self) -> Ordering {
        self.weight
            .total_cmp(&other.weight)
            .then(other.position.cmp(&self.position))
    }
}

/// The first `count` files holding code (not only Markdown sections) in the order the
/// candidates' weights show them, best first: the files split fusion shows first.
pub fn first_code_files(candidates: &[allocate::Candidate], count: usize) -> Vec<FileId> {
    let mut order: Vec<&allocate::Candidate> = candidates.iter().collect();
    order.sort_by(|a, b| b.weight.total_cmp(&a.weight));
    let mut chosen: Vec<FileId> = Vec::new();
    for candidate in order {
        if chosen.len() == count {
            break;
        }
        if let (Some(file), Some(_)) = (candidate.file, candidate.node)
            && !chosen.contains(&file)
        {
            chosen.push(file);
        }
    }
    chosen
}

/// The merged order, as positions into `candidates` (which are in RRF order): the order in
/// which files first appear is RRF's, and within it candidates follow their weights.
pub fn order(candidates: &[Candidate]) -> Vec<usize> {
    // Groups by first appearance: group g is the g-th file RRF shows.
    let mut group_of_file: HashMap<FileId, usize> = HashMap::new();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (position, candidate) in candidates.iter().enumerate() {
        let group = match candidate.file {
            Some(file) => *group_of_file.entry(file).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            }),
            None => {
                groups.push(Vec::new());
                groups.len() - 1
            }
        };
        groups[group].push(position);
    }
    // Files the scorer ranks take the slots such files hold, best first; the others keep
    // theirs.
    let score_of = |group: &Vec<usize>| candidates[group[0]].file_score;
    let slots: Vec<usize> = (0..groups.len())
        .filter(|&g| score_of(&groups[g]).is_some())
        .collect();
    let mut scored: Vec<Vec<usize>> = slots
        .iter()
        .map(|&g| std::mem::take(&mut groups[g]))
        .collect();
    scored.sort_by(|a, b| {
        score_of(b)
            .unwrap_or(0.0)
            .total_cmp(&score_of(a).unwrap_or(0.0))
            .then(a[0].cmp(&b[0]))
    });
    for (slot, group) in slots.into_iter().zip(scored) {
        groups[slot] = group;
    }
    for group in &mut groups {
        group.sort_by(|&a, &b| {
            candidates[b]
                .weight
                .total_cmp(&candidates[a].weight)
                .then(a.cmp(&b))
        });
    }
    let head = |group: usize, at: usize| -> Option<Head> {
        groups[group].get(at).map(|&position| Head {
            weight: candidates[position].weight,
            position,
            group,
        })
    };
    let mut next_in_group = vec![0usize; groups.len()];
    // Heads of the groups already opened; `unopened` is the next group to open.
    let mut opened: BinaryHeap<Head> = BinaryHeap::new();
    let mut unopened = 0;
    let mut out = Vec::with_capacity(candidates.len());
    loop {
        let waiting = (unopened < groups.len())
            .then(|| head(unopened, 0))
            .flatten();
        // The next group opens when its best beats every open group's best.
        let taken = match (waiting, opened.peek()) {
            (Some(waiting), Some(best)) if waiting <= *best => opened.pop(),
            (Some(waiting), _) => {
                unopened += 1;
                Some(waiting)
            }
            (None, _) => opened.pop(),
        };
        let Some(taken) = taken else { break };
        out.push(taken.position);
        next_in_group[taken.group] += 1;
        if let Some(following) = head(taken.group, next_in_group[taken.group]) {
            opened.push(following);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_scorer_orders_files_on_prose_by_default_and_always_under_split_files() {
        use FileOrder::{Fused, Learned, Rrf, Symbols};
        // The defaults: the fused order for a short query, the scorer for prose.
        assert!(!files_by_scorer(Fusion::Split, Learned, false));
        assert!(files_by_scorer(Fusion::Split, Learned, true));
        // Another file order asked for by name is kept, prose or not.
        for order in [Fused, Symbols, Rrf] {
            assert!(!files_by_scorer(Fusion::Split, order, true));
            assert!(files_by_scorer(Fusion::SplitFiles, order, false));
        }
        for fusion in [Fusion::Rrf, Fusion::Learned] {
            assert!(!files_by_scorer(fusion, Learned, true));
        }
    }

    fn c(file: u32, weight: f64) -> Candidate {
        Candidate {
            file: Some(FileId(file)),
            weight,
            file_score: None,
        }
    }

    fn first_files(candidates: &[Candidate], order: &[usize]) -> Vec<Option<FileId>> {
        let mut seen = Vec::new();
        for &i in order {
            if !seen.contains(&candidates[i].file) {
                seen.push(candidates[i].file);
            }
        }
        seen
    }

    #[test]
    fn files_appear_in_rrf_order_and_symbols_follow_their_weights_within() {
        // RRF order: file 7, file 3, file 7, file 9, file 3.
        let pool = [c(7, 0.2), c(3, 0.9), c(7, 0.8), c(9, 0.95), c(3, 0.1)];
        let order = order(&pool);
        // File 7 opens with its best (0.8); file 3's 0.9 beats file 7's 0.2; file 9 waits
        // for file 3 to open, then its 0.95 comes next.
        assert_eq!(order, vec![2, 1, 3, 0, 4]);
        assert_eq!(
            first_files(&pool, &order),
            vec![Some(FileId(7)), Some(FileId(3)), Some(FileId(9))]
        );
    }

    #[test]
    fn a_candidate_without_a_file_keeps_its_place_among_the_files() {
        let pool = [
            c(1, 0.5),
            Candidate {
                file: None,
                weight: 0.9,
                file_score: None,
            },
            c(2, 0.99),
            c(1, 0.6),
        ];
        let order = order(&pool);
        // The fileless candidate opens after file 1 and before file 2.
        assert_eq!(order, vec![3, 1, 2, 0]);
    }

    #[test]
    fn scored_files_take_the_slots_of_scored_files_best_first_and_the_others_keep_theirs() {
        let scored = |file: u32, weight: f64, score: f64| Candidate {
            file: Some(FileId(file)),
            weight,
            file_score: Some(score),
        };
        // RRF shows files 1 (scored 0.1), 8 (sections only: unscored), 2 (scored 0.9).
        let pool = [
            scored(1, 0.5, 0.1),
            c(8, 0.4),
            scored(2, 0.3, 0.9),
            scored(1, 0.2, 0.1),
        ];
        let order = order(&pool);
        // File 2 takes file 1's slot, file 8 keeps its own, file 1 comes third.
        assert_eq!(
            first_files(&pool, &order),
            vec![Some(FileId(2)), Some(FileId(8)), Some(FileId(1))]
        );
        assert_eq!(order, vec![2, 1, 0, 3]);
    }

    #[test]
    fn file_scores_read_each_files_candidates_and_its_rrf_rank() {
        let mut x = [0.0; learned::FEATURES.len()];
        let test = learned::FEATURES.iter().position(|f| *f == "test").unwrap();
        let mut test_x = x;
        test_x[test] = 1.0;
        x[0] = 1.0;
        let pool = [
            Scored {
                file: Some(FileId(4)),
                rrf_weight: 2.0,
                features: Some(&x),
            },
            Scored {
                file: Some(FileId(5)),
                rrf_weight: 1.0,
                features: Some(&test_x),
            },
            Scored {
                file: Some(FileId(6)),
                rrf_weight: 1.0,
                features: None,
            },
        ];
        let scores = file_scores(&pool);
        assert_eq!(scores.len(), 2, "a file of sections only is not scored");
        let expected = |rank, evidence, x: &[f64; learned::FEATURES.len()]| {
            learned::file_score(&learned::file_features(rank, evidence, &[x]))
        };
        assert_eq!(scores[&FileId(4)], expected(0, 1.0, &x));
        assert_eq!(scores[&FileId(5)], expected(1, 0.5, &test_x));
    }

    #[test]
    fn the_fused_file_order_keeps_rrfs_order_unless_the_evidence_disagrees_enough() {
        let f = |ids: &[u32]| ids.iter().map(|&i| FileId(i)).collect::<Vec<_>>();
        let symbols = |ids: &[u32]| FileEvidence {
            symbols: f(ids),
            text: Vec::new(),
        };
        let ranked = |scores: HashMap<FileId, f64>| {
            let mut files: Vec<(FileId, f64)> = scores.into_iter().collect();
            files.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            files
                .into_iter()
                .map(|(file, _)| file.0)
                .collect::<Vec<_>>()
        };
        // No evidence, or evidence in the same order: RRF's order.
        assert_eq!(
            ranked(fused_file_order(&f(&[3, 1, 2]), &FileEvidence::default())),
            [3, 1, 2]
        );
        assert_eq!(
            ranked(fused_file_order(&f(&[3, 1, 2]), &symbols(&[3, 1, 2]))),
            [3, 1, 2]
        );
        // Neighbours swapped by the evidence: RRF's first stays first (1/6 + 0.5/7 against
        // 1/7 + 0.5/6).
        assert_eq!(
            ranked(fused_file_order(&f(&[3, 1]), &symbols(&[1, 3]))),
            [3, 1]
        );
        // RRF's second, first by far by evidence, passes RRF's first when that one comes
        // fourth by evidence (1/6 + 0.5/9 < 1/7 + 0.5/6).
        assert_eq!(
            ranked(fused_file_order(&f(&[3, 1, 5, 6]), &symbols(&[1, 5, 6, 3]))),
            [1, 3, 5, 6]
        );
        // A file only the evidence shows comes after the files RRF shows first.
        let scores = fused_file_order(&f(&[3, 1]), &symbols(&[9]));
        assert!(scores[&FileId(9)] < scores[&FileId(1)], "{scores:?}");
        assert!(scores[&FileId(9)] > 0.0);
    }

    #[test]
    fn the_whole_texts_order_adds_its_own_weight_beside_the_symbols() {
        let f = |ids: &[u32]| ids.iter().map(|&i| FileId(i)).collect::<Vec<_>>();
        let evidence = |symbols: &[u32], text: &[u32]| FileEvidence {
            symbols: f(symbols),
            text: f(text),
        };
        let term = |weight: f64, place: usize| weight / (FILE_ORDER_K + place as f64 + 1.0);
        let scores = fused_file_order(&f(&[3, 1]), &evidence(&[3, 1], &[1, 3]));
        assert_eq!(
            scores[&FileId(1)],
            term(1.0, 1) + term(EVIDENCE_WEIGHT, 1) + term(TEXT_WEIGHT, 0)
        );
        // Where RRF and the symbols agree by one place, a text that disagrees does not
        // overturn them (1/6 + 0.5/6 + 0.5/7 against 1/7 + 0.5/7 + 0.5/6)...
        assert!(scores[&FileId(3)] > scores[&FileId(1)], "{scores:?}");
        // ...but a text that agrees with the symbols against RRF moves a file up (1/7 +
        // 0.5/6 + 0.5/6 against 1/6 + 0.5/7), which the symbols alone did not (1/7 + 0.5/6
        // against 1/6 + 0.5/7).
        let swapped = fused_file_order(&f(&[3, 1]), &evidence(&[1, 3], &[1]));
        assert!(swapped[&FileId(1)] > swapped[&FileId(3)], "{swapped:?}");
        let alone = fused_file_order(&f(&[3, 1]), &evidence(&[1, 3], &[]));
        assert!(alone[&FileId(3)] > alone[&FileId(1)], "{alone:?}");
        // No evidence at all is RRF's order.
        let none = fused_file_order(&f(&[3, 1]), &evidence(&[], &[]));
        assert!(none[&FileId(3)] > none[&FileId(1)]);
        assert!(FileEvidence::default().is_empty());
        assert!(!evidence(&[], &[1]).is_empty());
    }

    #[test]
    fn equal_weights_keep_rrf_order_and_every_candidate_appears_once() {
        let pool: Vec<Candidate> = (0..40).map(|i| c(i % 5, 0.5)).collect();
        let order = order(&pool);
        assert_eq!(order, (0..40).collect::<Vec<_>>());
        let pool: Vec<Candidate> = (0..40).map(|i| c(i % 7, f64::from(i % 3))).collect();
        let mut sorted = super::order(&pool);
        let files = first_files(&pool, &sorted);
        let rrf_files: Vec<Option<FileId>> = (0..7).map(|i| Some(FileId(i))).collect();
        assert_eq!(files, rrf_files);
        sorted.sort_unstable();
        assert_eq!(sorted, (0..40).collect::<Vec<_>>());
    }
}
