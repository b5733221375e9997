//! The resolved graph's frontier, file by file.
//!
//! Each file's entries are a run sorted by site (as `resolve_file` leaves them), shared
//! with the memo entry that holds them: an edit reuses nearly every file's frontier, and
//! copying sympy's 152k entries into one table took 3.8 ms and 7 MiB of fresh pages on
//! every edit. In file order, the runs are the frontier sorted by (file, site, name),
//! the order a segment's records take and the index a cut's range counts in.

use std::ops::Range;
use std::sync::Arc;

use super::FrontierEntry;

/// One run of entries per file, in file order.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Frontier {
    runs: Vec<Arc<Vec<FrontierEntry>>>,
    /// The index of each run's first entry, and the count after the last.
    starts: Vec<usize>,
}

impl Frontier {
    /// The frontier of runs in file order (each file's entries, sorted by site).
    pub fn from_runs(runs: Vec<Arc<Vec<FrontierEntry>>>) -> Frontier {
        let mut starts = Vec::with_capacity(runs.len() + 1);
        let mut next = 0;
        for run in &runs {
            starts.push(next);
            next += run.len();
        }
        starts.push(next);
        Frontier { runs, starts }
    }

    pub fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = &FrontierEntry> + '_ {
        self.runs.iter().flat_map(|run| run.iter())
    }

    /// The entries at `range` of the order.
    pub fn range(&self, range: Range<usize>) -> impl Iterator<Item = &FrontierEntry> + '_ {
        // From the last run starting at or before the range (runs may be empty).
        let first = self.starts[..self.runs.len()]
            .partition_point(|&start| start <= range.start)
            .saturating_sub(1);
        self.runs
            .iter()
            .zip(&self.starts)
            .skip(first)
            .take_while(move |(_, start)| **start < range.end)
            .flat_map(move |(run, &start)| {
                let to = (range.end - start).min(run.len());
                let from = range.start.saturating_sub(start).min(to);
                run[from..to].iter()
            })
    }

    /// Keeps the entries `keep` says to, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&FrontierEntry) -> bool) {
        let runs = std::mem::take(&mut self.runs)
            .into_iter()
            .map(|run| Arc::new(run.iter().filter(|e| keep(e)).cloned().collect()))
            .collect();
        *self = Frontier::from_runs(runs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::facts::{RefRole, Span};

    fn entry(file: u32, at: u32) -> FrontierEntry {
        FrontierEntry {
            name: "f".into(),
            role: RefRole::Call,
            from: file,
            file,
            site: Span {
                start_byte: at,
                end_byte: at + 1,
                start_line: 0,
                end_line: 0,
            },
            candidates: 0,
        }
    }

    #[test]
    fn a_range_of_the_order_spans_runs_as_one_table_would() {
        let runs: Vec<Vec<FrontierEntry>> = vec![
            vec![entry(0, 1), entry(0, 2)],
            vec![],
            vec![entry(2, 1)],
            vec![entry(3, 1), entry(3, 5), entry(3, 9)],
        ];
        let table: Vec<FrontierEntry> = runs.concat();
        let frontier = Frontier::from_runs(runs.into_iter().map(Arc::new).collect());
        assert_eq!(frontier.len(), table.len());
        assert!(frontier.iter().eq(table.iter()));
        for start in 0..=table.len() {
            for end in start..=table.len() {
                assert!(
                    frontier.range(start..end).eq(table[start..end].iter()),
                    "{start}..{end}"
                );
            }
        }
        let mut kept = frontier.clone();
        kept.retain(|e| e.site.start_byte != 1);
        let expected: Vec<&FrontierEntry> =
            table.iter().filter(|e| e.site.start_byte != 1).collect();
        assert!(kept.iter().eq(expected));
        assert_eq!(kept.len(), 3);
    }
}
