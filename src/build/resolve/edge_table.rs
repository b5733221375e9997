//! The edge table, assembled settled: sorted and without duplicates, as `settle_edges`
//! would leave it, without sorting it.
//!
//! Every edge starts at a node of one file, except containment from a module. A file's
//! edges are its containment (a range of the sorted containment run), its import edges
//! and its references' edges (each sorted per file), so the table is the module
//! containment followed by each file's three runs merged, in file order. Files are
//! merged side by side, each into its own range of the table: copying every file's
//! edges into one table and merge-sorting the runs cost 10 ms of one processor on a
//! sympy edit, with the sort's scratch faulted in as well.

use super::*;
use rayon::prelude::*;
use std::mem::MaybeUninit;

impl Resolver<'_> {
    /// Replaces the edge table (the sorted containment `build_nodes` made) with the whole
    /// table: containment, each file's import edges (`self.imports`) and `references[f]`,
    /// file `f`'s references' edges, sorted.
    pub(super) fn assemble_edges(&mut self, references: &[&[ResolvedEdge]]) {
        let containment = std::mem::take(&mut self.edges);
        let file_nodes = &self.out.file_nodes;
        let first_file = file_nodes
            .first()
            .copied()
            .unwrap_or(self.out.nodes.len() as u32);
        let starts: Vec<usize> = file_nodes
            .iter()
            .map(|&node| containment.partition_point(|e| e.from < node))
            .chain([containment.len()])
            .collect();
        let modules = &containment[..starts.first().copied().unwrap_or(0)];
        debug_assert!(modules.iter().all(|e| e.from < first_file));
        let imports: Vec<Vec<ResolvedEdge>> = (0..file_nodes.len())
            .into_par_iter()
            .map(|file| self.import_edges(file))
            .collect();
        let runs: Vec<[&[ResolvedEdge]; 3]> = (0..file_nodes.len())
            .map(|file| {
                [
                    &containment[starts[file]..starts[file + 1]],
                    &imports[file][..],
                    references.get(file).copied().unwrap_or_default(),
                ]
            })
            .collect();
        let total = modules.len() + runs.iter().flatten().map(|r| r.len()).sum::<usize>();
        // Room for the whole-graph passes' edges: sized exactly, the first `implements`
        // edge of Go's pass copied the whole table (42 ms of an 11,702-file tree's edit).
        // Room never written is never faulted in.
        let mut table = Vec::with_capacity(total + total / 16 + 1024);
        table.extend_from_slice(modules);
        let mut rest = &mut table.spare_capacity_mut()[..total - modules.len()];
        let mut ranges = Vec::with_capacity(runs.len());
        for run in &runs {
            let (range, tail) = rest.split_at_mut(run.iter().map(|r| r.len()).sum());
            ranges.push(range);
            rest = tail;
        }
        ranges
            .into_par_iter()
            .zip(&runs)
            .for_each(|(range, run)| merge_into(range, run));
        // SAFETY: the ranges split `total - modules.len()` slots after the module edges,
        // and `merge_into` initialised every slot of each range (it writes each of its
        // runs' edges once, and a range is as long as its runs together).
        unsafe { table.set_len(total) };
        // Equal edges from two runs of a file are now neighbours.
        table.dedup();
        self.edges = table;
        self.edges_settled = true;
    }

    /// File `file`'s import edges (what its imports bind, at the import), sorted.
    fn import_edges(&self, file: usize) -> Vec<ResolvedEdge> {
        let Some(imports) = self.imports.get(file) else {
            return Vec::new();
        };
        let from = self.out.file_nodes[file];
        let mut edges: Vec<ResolvedEdge> = imports
            .edges
            .iter()
            .map(|&(target, site)| ResolvedEdge {
                from,
                to: target,
                kind: EdgeKind::Imports,
                subkind: EdgeSubkind::None,
                provenance: Provenance::TreeSitter,
                resolution: Resolution::Import,
                confidence: 95,
                site: Some(Site {
                    file: file as u32,
                    span: site.into(),
                }),
                flags: 0,
            })
            .collect();
        edges.sort_unstable();
        edges
    }
}

/// Merges sorted `runs` into `out`, which is exactly as long as they are together. The
/// first two (a file's containment and its imports) are short: they are merged aside,
/// then with the references, whose tail is copied whole once the others run out.
fn merge_into(out: &mut [MaybeUninit<ResolvedEdge>], runs: &[&[ResolvedEdge]; 3]) {
    let [containment, imports, references] = *runs;
    let mut short = Vec::with_capacity(containment.len() + imports.len());
    merge_two(containment, imports, |edge| short.push(edge));
    let mut slots = out.iter_mut();
    merge_two(&short, references, |edge| {
        // The caller sized `out` as the runs: there is a slot for every edge.
        slots
            .next()
            .expect("a merge range is as long as its runs")
            .write(edge);
    });
    debug_assert!(slots.next().is_none());
}

/// Gives the edges of two sorted runs to `put`, in order.
fn merge_two(mut a: &[ResolvedEdge], mut b: &[ResolvedEdge], mut put: impl FnMut(ResolvedEdge)) {
    while let (Some(x), Some(y)) = (a.first(), b.first()) {
        if y < x {
            put(*y);
            b = &b[1..];
        } else {
            put(*x);
            a = &a[1..];
        }
    }
    a.iter().chain(b).for_each(|&edge| put(edge));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(from: u32, to: u32) -> ResolvedEdge {
        ResolvedEdge {
            kind: EdgeKind::Calls,
            ..super::super::nodes::containment(from, to)
        }
    }

    #[test]
    fn merged_runs_are_the_sorted_runs_together() {
        let runs: [&[ResolvedEdge]; 3] = [
            &[edge(1, 2), edge(4, 1), edge(9, 9)],
            &[],
            &[edge(0, 7), edge(4, 1), edge(5, 0)],
        ];
        let mut out = vec![MaybeUninit::uninit(); 6];
        merge_into(&mut out, &runs);
        // SAFETY: `merge_into` initialised every slot.
        let merged: Vec<ResolvedEdge> = out
            .into_iter()
            .map(|e| unsafe { e.assume_init() })
            .collect();
        let mut expected: Vec<ResolvedEdge> = runs.concat();
        expected.sort();
        assert_eq!(merged, expected);
    }
}
