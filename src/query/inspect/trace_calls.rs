//! `trace-calls <symbol>`: the call tree of one symbol to a depth, callers or callees,
//! over the graph's `calls` edges only. The symbol is matched as `context` matches a name
//! (`query::intent`, callables first): several equally good matches are the typed
//! ambiguity error with an argv per candidate, none is the typed no-match error.
//!
//! Breadth first, so a cut page keeps the nearest calls. Every edge carries provenance,
//! resolution, confidence and its sites; a node met again is marked (`cycle` when it is
//! an ancestor, `seen` otherwise) and not followed; fan-out is capped per node with the
//! count of what was cut; each expanded node says which unresolved call sites (the
//! frontier) could reach it or leave it, so "no callers" and "callers unknown" differ.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use serde::Serialize;

use super::{Invocation, Truncated, bounded, ceiling, fit, flag_if, lines_of};
use crate::error::{AtlasError, Result};
use crate::graph::codes::{EdgeKind, Provenance, Resolution};
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::{Direction, EdgeRef, Graph};
use crate::query::crates::Crates;
use crate::query::intent::{self, unique_name};
use crate::syntax::facts::RefRole;

pub const DEFAULT_DEPTH: usize = 2;
pub const MAX_DEPTH: usize = 5;
pub const DEFAULT_MAX_FANOUT: usize = 12;
pub const MAX_FANOUT: usize = 100;
/// Edges per page when none is asked for, and the most a page may ask for.
pub const DEFAULT_MAX_EDGES: usize = 100;
pub const MAX_EDGES: usize = 1_000;
/// The whole tree stops growing here; the nodes left unexpanded are counted.
const TREE_EDGES: usize = 5_000;
/// Sites listed per edge and unresolved sites listed per node (all are counted).
const SITES: usize = 5;
const FRONTIER_SITES: usize = 3;
/// Candidates named in an ambiguity error (the total is always given).
const LISTED: usize = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum TraceDirection {
    /// Who calls the symbol, and who calls them.
    #[default]
    Callers,
    /// What the symbol calls, and what that calls.
    Callees,
}

impl TraceDirection {
    pub fn as_str(self) -> &'static str {
        match self {
            TraceDirection::Callers => "callers",
            TraceDirection::Callees => "callees",
        }
    }

    fn graph_direction(self) -> Direction {
        match self {
            TraceDirection::Callers => Direction::Incoming,
            TraceDirection::Callees => Direction::Outgoing,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct TraceCallsRequest {
    pub symbol: String,
    pub direction: TraceDirection,
    /// Hops from the symbol (default [`DEFAULT_DEPTH`], at most [`MAX_DEPTH`]).
    pub depth: Option<usize>,
    /// Calls followed per node (default [`DEFAULT_MAX_FANOUT`]); the rest are counted.
    pub max_fanout: Option<usize>,
    /// Edges before this one (in breadth-first order) are skipped.
    pub offset: usize,
    pub max_edges: Option<usize>,
    pub max_bytes: Option<usize>,
    pub invocation: Invocation,
}

/// An unresolved call site (a frontier entry).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct UnresolvedSite {
    /// The name called.
    pub name: String,
    /// The symbol the call sits in.
    pub from: String,
    /// `path:line`.
    pub site: String,
    /// Definitions in the graph the name could mean.
    pub candidates: u32,
}

/// Unresolved call sites that could reach a node (callers) or leave it (callees).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FrontierOut {
    pub unresolved: usize,
    pub sites: Vec<UnresolvedSite>,
}

#[derive(Debug, Clone, Serialize)]
pub struct RootOut {
    pub symbol: String,
    pub kind: &'static str,
    pub lines: [u32; 2],
    /// How the name matched (`exact-symbol`, `qualified-suffix`, …).
    pub tier: &'static str,
    /// Calls of the symbol past `max_fanout`.
    pub fanout_omitted: usize,
    pub frontier: FrontierOut,
}

#[derive(Debug, Clone, Serialize)]
pub struct TraceEdge {
    /// Hops from the root (1 = a direct caller or callee).
    pub depth: u32,
    /// Always caller → callee, whatever the direction of the trace.
    pub caller: String,
    pub callee: String,
    pub provenance: &'static str,
    pub resolution: &'static str,
    pub confidence: u8,
    /// `path:line` of the call sites (the first [`SITES`]); `site_count` counts them all.
    pub sites: Vec<String>,
    pub site_count: usize,
    /// Kind and lines of the end the trace reached.
    pub kind: &'static str,
    pub lines: [u32; 2],
    /// `cycle` (an ancestor of this edge) or `seen` (reached before): not followed again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revisit: Option<&'static str>,
    /// Calls of the reached end not followed because the trace is at its depth.
    #[serde(skip_serializing_if = "is_zero")]
    pub beyond_depth: usize,
    /// Calls of the reached end past `max_fanout`.
    #[serde(skip_serializing_if = "is_zero")]
    pub fanout_omitted: usize,
    /// Unresolved call sites of the reached end, when it was expanded and has some.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontier: Option<FrontierOut>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, Serialize)]
pub struct TraceCallsOutput {
    pub query: String,
    pub direction: &'static str,
    pub depth: usize,
    pub max_fanout: usize,
    pub graph_fingerprint: String,
    pub root: RootOut,
    pub edges_total: usize,
    /// Nodes whose calls were not followed because the tree reached its size bound.
    pub unexpanded: usize,
    pub offset: usize,
    pub edges: Vec<TraceEdge>,
    pub truncated: Option<Truncated>,
}

/// The call tree of `request.symbol` in `graph`. The tree is the graph's: no source is
/// read, only the crates' manifests under `root` when the symbol starts with a crate's
/// name (`query::crates`).
pub fn trace_calls(
    graph: &Graph,
    root: &Path,
    request: &TraceCallsRequest,
) -> Result<TraceCallsOutput> {
    let max_bytes = ceiling(request.max_bytes)?;
    let depth = bounded("depth", request.depth, DEFAULT_DEPTH, 1..=MAX_DEPTH)?;
    let max_fanout = bounded(
        "max-fanout",
        request.max_fanout,
        DEFAULT_MAX_FANOUT,
        1..=MAX_FANOUT,
    )?;
    let max_edges = bounded(
        "max-edges",
        request.max_edges,
        DEFAULT_MAX_EDGES,
        1..=MAX_EDGES,
    )?;
    let (anchor, tier) = resolve(graph, root, request)?;
    let mut walk = Walk::new(graph, request.direction, max_fanout);
    let (root_fanout, root_frontier) = walk.run(anchor, depth);
    let root = RootOut {
        symbol: graph.label(anchor),
        kind: graph.kind(anchor).as_str(),
        lines: lines_of(graph, anchor),
        tier,
        fanout_omitted: root_fanout,
        frontier: root_frontier,
    };
    let total = walk.edges.len();
    let start = request.offset.min(total);
    let page: Vec<TraceEdge> = walk.edges[start..]
        .iter()
        .take(max_edges)
        .cloned()
        .collect();
    let next = |offset: usize| next_page(request, offset);
    let build = |n: usize| TraceCallsOutput {
        query: request.symbol.clone(),
        direction: request.direction.as_str(),
        depth,
        max_fanout,
        graph_fingerprint: graph.fingerprint(),
        root: root.clone(),
        edges_total: total,
        unexpanded: walk.unexpanded,
        offset: request.offset,
        edges: page[..n].to_vec(),
        truncated: super::truncation(total, request.offset, n, max_edges, next),
    };
    fit(page.len(), max_bytes, build)
}

/// The node `request.symbol` names, as `context` matches a lone name about calls.
fn resolve(
    graph: &Graph,
    root: &Path,
    request: &TraceCallsRequest,
) -> Result<(NodeId, &'static str)> {
    let symbol = request.symbol.trim();
    if symbol.is_empty() || symbol.contains(char::is_whitespace) {
        return Err(AtlasError::InvalidInput {
            what: "symbol",
            reason: format!("`{}` is not one name", request.symbol),
        });
    }
    // The relation word makes a shared name mean its callables, as in `context … calls`.
    let intent = intent::parse(graph, &Crates::of(graph, root), &format!("{symbol} calls"));
    if let Some(ambiguity) = intent.ambiguities.first() {
        let listed: Vec<NodeId> = ambiguity.nodes.iter().copied().take(LISTED).collect();
        return Err(AtlasError::ContextAmbiguous {
            term: ambiguity.term.clone(),
            tier: ambiguity.tier.as_str(),
            total: ambiguity.nodes.len(),
            candidates: listed.iter().map(|&n| graph.label(n)).collect(),
            argv: listed
                .iter()
                .map(|&n| {
                    let named = TraceCallsRequest {
                        symbol: unique_name(graph, n),
                        offset: 0,
                        ..request.clone()
                    };
                    next_page(&named, 0)
                })
                .collect(),
        });
    }
    let anchor = intent
        .anchors
        .first()
        .ok_or_else(|| AtlasError::ContextNoMatch {
            query: request.symbol.clone(),
            suggestions: Vec::new(),
        })?;
    Ok((anchor.node, anchor.tier.map_or("name", |t| t.as_str())))
}

/// The argv of the page that starts at `offset` (`offset` 0: the first page).
fn next_page(request: &TraceCallsRequest, offset: usize) -> Vec<String> {
    let mut flags = vec![
        "--direction".to_string(),
        request.direction.as_str().to_string(),
    ];
    flags.extend(flag_if("--depth", request.depth));
    flags.extend(flag_if("--max-fanout", request.max_fanout));
    flags.extend(flag_if("--offset", (offset > 0).then_some(offset)));
    flags.extend(flag_if("--max-edges", request.max_edges));
    flags.extend(flag_if("--max-bytes", request.max_bytes));
    request
        .invocation
        .argv("trace-calls", flags, &[request.symbol.as_str()])
}

/// The calls of one node to one other node, gathered over their sites.
struct Group {
    other: NodeId,
    best: usize,
    sites: Vec<(FileId, u32)>,
}

/// The breadth-first walk and what it found.
struct Walk<'g> {
    graph: &'g Graph,
    direction: TraceDirection,
    max_fanout: usize,
    edges: Vec<TraceEdge>,
    /// The node each reached node was first reached from.
    parent: HashMap<NodeId, NodeId>,
    /// The edge that first reached a node: its expansion is written there.
    reached_by: HashMap<NodeId, usize>,
    unexpanded: usize,
    /// Callees: unresolved calls by the symbol they sit in.
    frontier_from: HashMap<NodeId, Vec<usize>>,
}

impl<'g> Walk<'g> {
    fn new(graph: &'g Graph, direction: TraceDirection, max_fanout: usize) -> Walk<'g> {
        let mut frontier_from: HashMap<NodeId, Vec<usize>> = HashMap::new();
        if direction == TraceDirection::Callees {
            for (index, entry) in graph.frontier_entries() {
                if entry.role == RefRole::Call as u8 {
                    frontier_from
                        .entry(entry.from())
                        .or_default()
                        .push(index as usize);
                }
            }
        }
        Walk {
            graph,
            direction,
            max_fanout,
            edges: Vec::new(),
            parent: HashMap::new(),
            reached_by: HashMap::new(),
            unexpanded: 0,
            frontier_from,
        }
    }

    /// Walks from `anchor` to `depth`; returns the anchor's fan-out cut and frontier.
    fn run(&mut self, anchor: NodeId, depth: usize) -> (usize, FrontierOut) {
        let mut queue = VecDeque::from([(anchor, 0usize)]);
        let mut root = (0, self.frontier(anchor));
        while let Some((node, hops)) = queue.pop_front() {
            if self.edges.len() >= TREE_EDGES {
                self.unexpanded = queue.len() + 1;
                break;
            }
            let groups = self.groups(node);
            let cut = groups.len().saturating_sub(self.max_fanout);
            for group in groups.into_iter().take(self.max_fanout) {
                if let Some(next) = self.reach(node, group, hops + 1, depth) {
                    queue.push_back((next, hops + 1));
                }
            }
            if node == anchor {
                root.0 = cut;
            } else if let Some(&at) = self.reached_by.get(&node) {
                let frontier = self.frontier(node);
                let edge = &mut self.edges[at];
                edge.fanout_omitted = cut;
                edge.frontier = (frontier.unresolved > 0).then_some(frontier);
            }
        }
        root
    }

    /// Records the edge from `node` to its group's other end; returns that end when it is
    /// to be expanded.
    fn reach(&mut self, node: NodeId, group: Group, hops: usize, depth: usize) -> Option<NodeId> {
        let other = group.other;
        let revisit = if other == node || self.is_ancestor(other, node) {
            Some("cycle")
        } else if self.parent.contains_key(&other) {
            Some("seen")
        } else {
            None
        };
        let beyond_depth = if revisit.is_none() && hops >= depth {
            self.groups(other).len()
        } else {
            0
        };
        let edge = self.edge(node, &group, hops, revisit, beyond_depth);
        self.edges.push(edge);
        if revisit.is_some() {
            return None;
        }
        self.parent.insert(other, node);
        self.reached_by.insert(other, self.edges.len() - 1);
        (hops < depth).then_some(other)
    }

    /// `candidate` is one of the nodes `node` was reached through (the root included).
    fn is_ancestor(&self, candidate: NodeId, node: NodeId) -> bool {
        let mut current = node;
        while let Some(&up) = self.parent.get(&current) {
            if up == candidate {
                return true;
            }
            current = up;
        }
        false
    }

    /// The calls of `node` in the walk's direction, one group per other end, strongest
    /// resolution first, then by label.
    fn groups(&self, node: NodeId) -> Vec<Group> {
        let edges: Vec<EdgeRef> = self
            .graph
            .edges(node, self.direction.graph_direction())
            .collect();
        let mut by_other: BTreeMap<NodeId, Group> = BTreeMap::new();
        for (index, edge) in edges.iter().enumerate() {
            if edge.kind != EdgeKind::Calls as u8 {
                continue;
            }
            let group = by_other.entry(edge.node()).or_insert(Group {
                other: edge.node(),
                best: index,
                sites: Vec::new(),
            });
            if edge.confidence > edges[group.best].confidence {
                group.best = index;
            }
            group
                .sites
                .push((edge.site_file(), edge.site.start_line.to_native()));
        }
        let mut groups: Vec<Group> = by_other.into_values().collect();
        for group in &mut groups {
            group.sites.sort();
            group.sites.dedup();
        }
        groups.sort_by_cached_key(|g| {
            (
                std::cmp::Reverse(edges[g.best].confidence),
                self.graph.label(g.other),
            )
        });
        groups
    }

    fn edge(
        &self,
        node: NodeId,
        group: &Group,
        hops: usize,
        revisit: Option<&'static str>,
        beyond_depth: usize,
    ) -> TraceEdge {
        let graph = self.graph;
        // The group's best edge, read again (a group holds only its position).
        let record = graph
            .edges(node, self.direction.graph_direction())
            .nth(group.best);
        let (provenance, resolution, confidence) = record.map_or((u8::MAX, u8::MAX, 0), |r| {
            (r.provenance, r.resolution, r.confidence)
        });
        let (caller, callee) = match self.direction {
            TraceDirection::Callers => (group.other, node),
            TraceDirection::Callees => (node, group.other),
        };
        TraceEdge {
            depth: hops as u32,
            caller: graph.label(caller),
            callee: graph.label(callee),
            provenance: Provenance::from_code(provenance).map_or("?", |p| p.as_str()),
            resolution: Resolution::from_code(resolution).map_or("?", |r| r.as_str()),
            confidence,
            sites: group
                .sites
                .iter()
                .take(SITES)
                .map(|&(file, line)| format!("{}:{}", graph.file_path(file), line + 1))
                .collect(),
            site_count: group.sites.len(),
            kind: graph.kind(group.other).as_str(),
            lines: lines_of(graph, group.other),
            revisit,
            beyond_depth,
            fanout_omitted: 0,
            frontier: None,
        }
    }

    /// Unresolved call sites that could reach `node` (callers: named like it, with a
    /// definition to mean) or that leave it (callees: the calls in it nothing resolved).
    fn frontier(&self, node: NodeId) -> FrontierOut {
        let graph = self.graph;
        let entries: Vec<usize> = match self.direction {
            TraceDirection::Callers => graph
                .frontier_named(graph.str(graph.node(node).name()))
                .into_iter()
                .map(|i| i as usize)
                .filter(|&i| {
                    graph.frontier(i as u32).is_some_and(|entry| {
                        entry.role == RefRole::Call as u8 && entry.candidates.to_native() > 0
                    })
                })
                .collect(),
            TraceDirection::Callees => self.frontier_from.get(&node).cloned().unwrap_or_default(),
        };
        let sites = entries
            .iter()
            .take(FRONTIER_SITES)
            .filter_map(|&i| graph.frontier(i as u32))
            .map(|entry| UnresolvedSite {
                name: graph.str(entry.name()).to_string(),
                from: graph.label(entry.from()),
                site: format!(
                    "{}:{}",
                    graph.file_path(entry.file()),
                    entry.site.start_line.to_native() + 1
                ),
                candidates: entry.candidates.to_native(),
            })
            .collect();
        FrontierOut {
            unresolved: entries.len(),
            sites,
        }
    }
}
