//! What Jev's evaluations do to the pool (R-J-6/7): ordering, then the compact profile's
//! `top_k` cut without refill or the conservative selection with refill. Pure functions
//! over pool items, so every rule is tested without a server.

use std::collections::HashMap;

use super::wire::Evaluation;

/// Confidence below which an evaluation marks its candidate uncertain (R-J-4).
pub const UNCERTAIN_BELOW: f64 = 0.70;
/// The conservative selection drops only evaluations at least this confident.
const CONSERVATIVE_CONFIDENCE: f64 = 0.90;

/// Jev order (R-J-6): exact symbol matches, uncertain and unevaluated candidates keep
/// their lexical-rerank position; confident evaluations fill the free positions, highest
/// score first (ties in lexical order).
pub fn order(
    pool: &[u32],
    evaluations: &HashMap<u32, Evaluation>,
    exact: &dyn Fn(u32) -> bool,
) -> Vec<u32> {
    let movable = |item: u32| {
        !exact(item)
            && evaluations
                .get(&item)
                .is_some_and(|e| e.confidence >= UNCERTAIN_BELOW)
    };
    // (lexical position, item, score) of every item that may move.
    let mut movers: Vec<(usize, u32, f64)> = pool
        .iter()
        .enumerate()
        .filter(|(_, item)| movable(**item))
        .filter_map(|(at, item)| evaluations.get(item).map(|e| (at, *item, e.score)))
        .collect();
    movers.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut movers = movers.into_iter().map(|(_, item, _)| item);
    pool.iter()
        .map(|&item| {
            if movable(item) {
                movers.next().unwrap_or(item)
            } else {
                item
            }
        })
        .collect()
}

/// How judged candidates are selected into the `top_k`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Selection {
    /// `top_k_no_refill_v1` (compact profile, cut on): take the `top_k`, then drop
    /// evaluated candidates below half the scale; nothing takes their place.
    Cut { threshold: f64 },
    /// Cut off (or not compact): drop only scores at most 1/8 of the scale with
    /// confidence ≥ 0.90, and refill from the pool.
    Conservative { threshold: f64 },
}

impl Selection {
    pub fn cut(scale: f64) -> Selection {
        Selection::Cut {
            threshold: scale / 2.0,
        }
    }

    pub fn conservative(scale: f64) -> Selection {
        Selection::Conservative {
            threshold: scale / 8.0,
        }
    }

    pub fn policy(self) -> &'static str {
        match self {
            Selection::Cut { .. } => "top_k_no_refill_v1",
            Selection::Conservative { .. } => "conservative_refill_v1",
        }
    }

    pub fn threshold(self) -> f64 {
        match self {
            Selection::Cut { threshold } | Selection::Conservative { threshold } => threshold,
        }
    }
}

/// The selected items, how many judged candidates were dropped, and whether everything
/// was dropped and the first local candidate came back (`relevance_unconfirmed_fallback`).
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    pub items: Vec<u32>,
    pub removed: usize,
    pub fallback: bool,
}

/// Selects from `ordered` (deduplicated, in Jev order) at most `top_k` items. Exact matches
/// and unevaluated candidates always stay; `local_first` is the first candidate of the
/// local ranking.
pub fn select(
    ordered: &[u32],
    top_k: usize,
    selection: Selection,
    evaluations: &HashMap<u32, Evaluation>,
    exact: &dyn Fn(u32) -> bool,
    local_first: Option<u32>,
) -> Selected {
    let mut items = Vec::new();
    let mut removed = 0;
    let mut dropped = Vec::new();
    match selection {
        Selection::Cut { threshold } => {
            for &item in ordered.iter().take(top_k) {
                // An uncertain evaluation is cut too: requiring confidence would void
                // the cut (most candidates are below 0.70).
                let cut =
                    !exact(item) && evaluations.get(&item).is_some_and(|e| e.score < threshold);
                if cut {
                    removed += 1;
                    dropped.push(item);
                } else {
                    items.push(item);
                }
            }
        }
        Selection::Conservative { threshold } => {
            for &item in ordered {
                if items.len() >= top_k {
                    break;
                }
                let cut = !exact(item)
                    && evaluations.get(&item).is_some_and(|e| {
                        e.score <= threshold && e.confidence >= CONSERVATIVE_CONFIDENCE
                    });
                if cut {
                    removed += 1;
                    dropped.push(item);
                } else {
                    items.push(item);
                }
            }
        }
    }
    let fallback = items.is_empty() && top_k > 0 && local_first.is_some();
    if fallback {
        items.extend(local_first);
        // What comes back was not omitted after all.
        if local_first.is_some_and(|first| dropped.contains(&first)) {
            removed -= 1;
        }
    }
    Selected {
        items,
        removed,
        fallback,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evals(pairs: &[(u32, f64, f64)]) -> HashMap<u32, Evaluation> {
        pairs
            .iter()
            .map(|&(item, score, confidence)| (item, Evaluation { score, confidence }))
            .collect()
    }

    #[test]
    fn confident_scores_fill_the_free_positions_and_the_rest_stay() {
        // 1 is exact, 3 uncertain, 5 unevaluated: they keep positions 0, 2 and 4.
        let pool = [1, 2, 3, 4, 5, 6];
        let e = evals(&[
            (1, 0.0, 0.99),
            (2, 0.5, 0.9),
            (3, 3.0, 0.5),
            (4, 2.0, 0.8),
            (6, 2.9, 0.95),
        ]);
        let exact = |i: u32| i == 1;
        assert_eq!(order(&pool, &e, &exact), vec![1, 6, 3, 4, 5, 2]);
        // Equal scores keep their lexical order.
        let e = evals(&[(2, 1.0, 0.9), (4, 1.0, 0.9)]);
        assert_eq!(order(&[4, 2], &e, &|_| false), vec![4, 2]);
    }

    #[test]
    fn the_cut_drops_low_scores_without_refill_and_keeps_exact_and_unevaluated() {
        let ordered = [1, 2, 3, 4, 5, 6];
        let e = evals(&[(1, 0.2, 0.99), (2, 2.0, 0.9), (3, 1.0, 0.95), (4, 1.4, 0.6)]);
        let exact = |i: u32| i == 1;
        let s = select(&ordered, 4, Selection::cut(3.0), &e, &exact, Some(1));
        // 3 and 4 are below 1.5 (4 uncertain, cut too); 5 and 6 do not refill.
        assert_eq!(s.items, vec![1, 2]);
        assert_eq!((s.removed, s.fallback), (2, false));
    }

    #[test]
    fn the_conservative_selection_drops_only_confident_lows_and_refills() {
        let ordered = [1, 2, 3, 4, 5];
        let e = evals(&[(1, 0.3, 0.95), (2, 0.3, 0.8), (3, 1.0, 0.99)]);
        let s = select(
            &ordered,
            3,
            Selection::conservative(3.0),
            &e,
            &|_| false,
            Some(1),
        );
        // 1 goes (0.3 ≤ 0.375, confident); 2 stays (not confident enough); 4 refills.
        assert_eq!(s.items, vec![2, 3, 4]);
        assert_eq!(s.removed, 1);
    }

    #[test]
    fn when_everything_is_dropped_the_first_local_candidate_comes_back() {
        let e = evals(&[(7, 0.1, 0.99), (8, 0.2, 0.99)]);
        let s = select(&[8, 7], 5, Selection::cut(2.0), &e, &|_| false, Some(7));
        assert_eq!(s.items, vec![7]);
        assert!(s.fallback);
        // 8 was omitted; 7 came back.
        assert_eq!(s.removed, 1);
    }
}
