//! Format 4: where a graph is cut into segments (graph-schema/README.md, "Format 4:
//! segments").
//!
//! Segment 0 holds the module nodes; each other segment holds a group of files — their
//! file nodes, definitions, the edges and frontier entries inside the group, and their
//! name tables — in local ids (`build::compile` writes them). The root holds what spans
//! segments: edges between them, each file's module, centrality, module edges and
//! statistics.
//!
//! Architecture invariant: the cut is a function of the paths and of the graph's shape
//! only, never of the edit history, so a cold build and an edited build cut the same
//! segments.

use std::ops::Range;

use super::data::NONE;

/// A group holds at least this many files before it may end at a directory change.
/// Smaller groups make an edit compile and write less, but move more edges into the
/// root, which every edit rewrites: 16 and 128 took a ripgrep edit from 60 to 43 ms
/// (64 and 512 before) and left sympy's unchanged, where 8 and 64 gained no more on
/// ripgrep and cost sympy (docs/PERFORMANCE.md). Readers take the cut from the root, so
/// these are the builder's choice, not the format's.
pub const MIN_GROUP_FILES: usize = 16;
/// A group never holds more files than this.
pub const MAX_GROUP_FILES: usize = 128;

/// The directory part of a repository path (`""` at the root).
fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// File groups over paths in order: a group ends at a directory change once it holds
/// [`MIN_GROUP_FILES`], and at [`MAX_GROUP_FILES`] in any case. A function of the paths
/// only, and local: a file added or removed moves at most the boundaries near it.
pub fn file_groups(paths: &[&str]) -> Vec<Range<usize>> {
    let mut groups = Vec::new();
    let mut start = 0;
    for i in 1..paths.len() {
        let size = i - start;
        if size >= MAX_GROUP_FILES
            || (size >= MIN_GROUP_FILES && dir_of(paths[i]) != dir_of(paths[i - 1]))
        {
            groups.push(start..i);
            start = i;
        }
    }
    if start < paths.len() {
        groups.push(start..paths.len());
    }
    groups
}

/// What the cut reads of a graph, in global ids.
pub struct Shape<'a> {
    /// File paths, in id (= path) order.
    pub paths: Vec<&'a str>,
    /// Each file's own node.
    pub file_nodes: Vec<u32>,
    /// Each node's file (`NONE` for modules), parent (`NONE` for roots), and whether it
    /// is a file node.
    pub node_files: Vec<u32>,
    pub node_parents: Vec<u32>,
    pub node_is_file: Vec<bool>,
    /// Frontier entries as (file, from), sorted by file.
    pub frontier: Vec<(u32, u32)>,
}

/// The id ranges one segment owns (global ids).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub nodes: Range<u32>,
    pub files: Range<u32>,
    pub frontier: Range<u32>,
}

/// The segment of every node (index into the cuts).
pub fn owners(cuts: &[Cut], node_count: usize) -> Vec<u32> {
    let mut owner = vec![0u32; node_count];
    for (index, cut) in cuts.iter().enumerate() {
        for n in cut.nodes.clone() {
            owner[n as usize] = index as u32;
        }
    }
    owner
}

/// The cut: modules, then file groups. A graph that does not fit it (SCIP symbols
/// appended after every file) is cut into modules and one group of every file, and
/// failing that kept whole. Every candidate is checked (`with_frontier`): each record of
/// a segment names only ids inside it, but for a file node's module.
pub fn cuts(shape: &Shape) -> Vec<Cut> {
    let nodes = shape.node_files.len() as u32;
    let whole = vec![Cut {
        nodes: 0..nodes,
        files: 0..shape.paths.len() as u32,
        frontier: 0..shape.frontier.len() as u32,
    }];
    let Some(&first) = shape.file_nodes.first() else {
        return whole;
    };
    let by_groups = |groups: Vec<Range<usize>>| -> Vec<Cut> {
        let mut out = vec![Cut {
            nodes: 0..first,
            files: 0..0,
            frontier: 0..0,
        }];
        for group in groups {
            let node_start = shape.file_nodes[group.start];
            let node_end = shape.file_nodes.get(group.end).copied().unwrap_or(nodes);
            out.push(Cut {
                nodes: node_start..node_end,
                files: group.start as u32..group.end as u32,
                frontier: 0..0,
            });
        }
        out
    };
    for candidate in [
        by_groups(file_groups(&shape.paths)),
        by_groups(std::iter::once(0..shape.paths.len()).collect()),
    ] {
        if let Some(cut) = with_frontier(shape, candidate) {
            return cut;
        }
    }
    whole
}

/// The cuts with their frontier runs, if every record of each stays inside it.
fn with_frontier(shape: &Shape, mut cuts: Vec<Cut>) -> Option<Vec<Cut>> {
    let node_count = shape.node_files.len();
    // Node ranges partition the nodes, in order.
    let mut next = 0;
    for cut in &cuts {
        if cut.nodes.start != next || cut.nodes.end < cut.nodes.start {
            return None;
        }
        next = cut.nodes.end;
    }
    if next as usize != node_count {
        return None;
    }
    let owner = owners(&cuts, node_count);
    let mut file_owner = vec![u32::MAX; shape.paths.len()];
    for (index, cut) in cuts.iter().enumerate() {
        for f in cut.files.clone() {
            file_owner[f as usize] = index as u32;
        }
    }
    let segment_of_file = |f: u32| file_owner.get(f as usize).copied();
    for n in 0..node_count {
        let own = owner[n];
        let file = shape.node_files[n];
        if file != NONE && segment_of_file(file) != Some(own) {
            return None;
        }
        let parent = shape.node_parents[n];
        if parent != NONE && owner.get(parent as usize) != Some(&own) && !shape.node_is_file[n] {
            return None;
        }
    }
    for (index, &node) in shape.file_nodes.iter().enumerate() {
        if owner.get(node as usize).copied() != Some(file_owner[index]) {
            return None;
        }
    }
    // Frontier entries are sorted by file: each segment's are one run.
    let mut at = 0u32;
    for (index, cut) in cuts.iter_mut().enumerate() {
        let start = at;
        while let Some(&(file, from)) = shape.frontier.get(at as usize)
            && segment_of_file(file) == Some(index as u32)
        {
            if owner.get(from as usize) != Some(&(index as u32)) {
                return None;
            }
            at += 1;
        }
        cut.frontier = start..at;
    }
    (at as usize == shape.frontier.len()).then_some(cuts)
}
