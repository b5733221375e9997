//! The spine of `flow` (R-Q-5, issue 11): the path an engineer would draw.
//!
//! With one anchor, each hop follows the callee the behaviour goes through: the normal
//! path over error handlers, early-return guards and logging; the callee with the larger
//! downstream reach inside the repository; a value the flow carries on (returned,
//! assigned, called on); never a constructor, builder, getter or trivial wrapper when a
//! real step exists. A call to a method of a base class, trait or interface continues in
//! its implementations (`dispatch`). With two anchors, the spine is the shortest call path
//! between them, through dispatch too. Every hop says why it was taken.

use std::collections::{BTreeSet, HashMap, VecDeque};

use super::retrieve::{RelationInfo, relation_of};
use crate::graph::codes::EdgeKind;
use crate::graph::data::FLAG_DECLARES_ONLY;
use crate::graph::ids::NodeId;
use crate::graph::reader::{Direction, Graph};
use crate::syntax::facts::{SymbolKind, site};

/// Spine hops at most.
pub const SPINE_MAX: usize = 10;
/// The score a first hop needs to extend a one-anchor spine …
const MIN_HOP_SCORE: i64 = 10;
/// … and what each further hop needs more.
const HOP_SCORE_STEP: i64 = 6;
/// A call resolved through dispatch to its implementation: where a dynamic call goes is
/// worth a hop of its own.
const DISPATCH_BONUS: i64 = 20;
/// Nodes a reach count visits at most (reach is reported as "N+" beyond it): enough to
/// tell a hub from a helper, cheap on large graphs (docs/PERFORMANCE.md).
const REACH_CAP: usize = 100;
/// A path search visits at most this many nodes.
const VISIT_CAP: usize = 20_000;
/// Callee names that log, trace or print: not the behaviour.
const LOGGING: &[&str] = &[
    "log",
    "debug",
    "info",
    "warn",
    "warning",
    "error",
    "exception",
    "critical",
    "fatal",
    "trace",
    "print",
    "println",
    "eprintln",
    "printf",
    "eprintf",
    "logf",
    "debugf",
    "infof",
    "warnf",
    "errorf",
    "fatalf",
    "console",
];
/// Callee names that build or fetch rather than act.
const PLUMBING: &[&str] = &[
    "__init__",
    "new",
    "default",
    "init",
    "constructor",
    "builder",
    "build",
    "clone",
    "to_string",
    "to_owned",
    "into",
    "from",
    "as_ref",
    "as_str",
    "len",
    "is_empty",
];

/// One hop of a spine: the node, the call that reached it, and why it was taken.
#[derive(Debug, Clone)]
pub struct Hop {
    pub node: NodeId,
    pub via: Option<RelationInfo>,
    pub why: String,
}

/// How many source lines the steps of a one-anchor spine may require: the spine is
/// required evidence, so a chain longer than the page holds would fail the query.
#[derive(Debug, Clone, Copy)]
pub struct SpineBudget {
    /// Lines of one step's body shown at most (the profile's `lines_per_slice`).
    pub lines_per_slice: u32,
    /// Lines all steps may take together.
    pub lines: u32,
}

impl SpineBudget {
    /// Bytes a shown source line costs in the JSON document, on average with its escapes.
    const BYTES_PER_LINE: usize = 60;
    /// Lines a step costs beyond its body: ids, reasons, relation, signature.
    const STEP_OVERHEAD_LINES: u32 = 12;

    /// At most `share` percent of `max_bytes` for the spine's steps.
    pub fn of_page(max_bytes: usize, lines_per_slice: u32, share: usize) -> SpineBudget {
        SpineBudget {
            lines_per_slice,
            lines: (max_bytes / 100 * share / Self::BYTES_PER_LINE) as u32,
        }
    }

    fn cost(&self, graph: &Graph, node: NodeId) -> u32 {
        span_lines(graph, node).min(self.lines_per_slice) + Self::STEP_OVERHEAD_LINES
    }
}

/// Reach counts and implementation lookups of one query, memoised.
pub struct Spines<'g> {
    graph: &'g Graph,
    reach: HashMap<NodeId, usize>,
    /// `implementations` already found: a base class's method is met again at every call
    /// of it, and sympy's `Basic` has hundreds of subclasses to walk each time.
    implemented: std::cell::RefCell<HashMap<NodeId, Vec<NodeId>>>,
    /// Nodes named by the query: preferred among implementations.
    named: BTreeSet<NodeId>,
    budget: SpineBudget,
}

/// A callee considered for the next hop.
struct Step {
    node: NodeId,
    via: RelationInfo,
    score: i64,
    why: String,
}

impl<'g> Spines<'g> {
    pub fn new(graph: &'g Graph, named: BTreeSet<NodeId>, budget: SpineBudget) -> Self {
        Spines {
            graph,
            reach: HashMap::new(),
            implemented: Default::default(),
            named,
            budget,
        }
    }

    /// Distinct repository nodes reachable by calls from `node` (capped).
    pub fn reach(&mut self, node: NodeId) -> usize {
        if let Some(&r) = self.reach.get(&node) {
            return r;
        }
        let graph = self.graph;
        let mut seen = BTreeSet::from([node]);
        let mut queue = VecDeque::from([node]);
        while let Some(n) = queue.pop_front() {
            for e in graph.out_edges(n) {
                if e.kind != EdgeKind::Calls as u8 {
                    continue;
                }
                let next = e.node();
                if seen.len() > REACH_CAP {
                    break;
                }
                if seen.insert(next) {
                    queue.push_back(next);
                }
            }
            if seen.len() > REACH_CAP {
                break;
            }
        }
        let reach = seen.len() - 1;
        self.reach.insert(node, reach);
        reach
    }

    /// Overrides of `method` in the implementors and subclasses of its type, when the
    /// method belongs to a base class, trait or interface: where a call to it may go.
    pub fn implementations(&self, method: NodeId) -> Vec<NodeId> {
        if let Some(found) = self.implemented.borrow().get(&method) {
            return found.clone();
        }
        let found = self.find_implementations(method);
        self.implemented.borrow_mut().insert(method, found.clone());
        found
    }

    fn find_implementations(&self, method: NodeId) -> Vec<NodeId> {
        let graph = self.graph;
        if graph.kind(method) != SymbolKind::Method {
            return Vec::new();
        }
        let parent = graph.node(method).parent();
        if parent.is_none() {
            return Vec::new();
        }
        // By text: an implementor in another segment interns the name apart.
        let name = graph.str(graph.node(method).name());
        // The type that declares the method: its impl block names a trait or a type.
        let mut types = vec![parent];
        if graph.kind(parent) == SymbolKind::Impl {
            types.extend(
                graph
                    .out_edges(parent)
                    .iter()
                    .filter(|e| e.kind == EdgeKind::Implements as u8)
                    .map(|e| e.node()),
            );
        }
        let mut out = Vec::new();
        for ty in types {
            for implementor in graph
                .in_edges(ty)
                .iter()
                .filter(|e| e.kind == EdgeKind::Implements as u8)
                .map(|e| e.node())
            {
                for member in graph
                    .out_edges(implementor)
                    .iter()
                    .filter(|e| e.kind == EdgeKind::Contains as u8)
                    .map(|e| e.node())
                {
                    if member != method
                        && graph.str_is(graph.node(member).name(), name)
                        && graph.kind(member).is_callable()
                        && !out.contains(&member)
                    {
                        out.push(member);
                    }
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// Whether `method` only declares what implementations define: a trait or interface
    /// member, or a callable the extractor found only declares (abstract, `raise
    /// NotImplementedError`, `pass`, a signature without body).
    fn is_abstract(&self, method: NodeId) -> bool {
        let graph = self.graph;
        let record = graph.node(method);
        let parent = record.parent();
        (!parent.is_none() && graph.kind(parent) == SymbolKind::Interface)
            || record.flags & FLAG_DECLARES_ONLY != 0
    }

    /// The implementation a dispatched call most likely takes: the one the query names,
    /// else the only one, else the most called; the others are alternatives.
    fn pick_implementation(&self, implementations: &[NodeId]) -> Option<(NodeId, String)> {
        let graph = self.graph;
        if let Some(&named) = implementations.iter().find(|n| self.named.contains(n)) {
            return Some((named, "the implementation the query names".into()));
        }
        if let [only] = implementations {
            return Some((*only, "its only implementation".into()));
        }
        let best = implementations
            .iter()
            .copied()
            .filter(|&n| !graph.is_test(n))
            .max_by_key(|&n| (self.callers(n), graph.centrality(n), std::cmp::Reverse(n)))?;
        Some((
            best,
            format!(
                "the most called of {} implementations",
                implementations.len()
            ),
        ))
    }

    /// How much a call from the current node is worth following, and why.
    pub fn score(&mut self, via: &RelationInfo, on_path: &[NodeId]) -> Option<(i64, String)> {
        let graph = self.graph;
        let callee = via.to;
        if on_path.contains(&callee) {
            return None;
        }
        let kind = graph.kind(callee);
        let name = graph.str(graph.node(callee).name()).to_lowercase();
        let reach = self.reach(callee);
        let mut score = ((1.0 + reach as f64).ln() * 20.0) as i64 + i64::from(via.confidence / 10);
        // A name resolved only by being unique in the repository is a guess (precision
        // under one half, docs/QUALITY.md): the spine does not build on guesses.
        let guessed = via.resolution == crate::graph::codes::Resolution::UniqueName;
        let mut why = vec![if reach > REACH_CAP {
            format!("reach {REACH_CAP}+")
        } else {
            format!("reach {reach}")
        }];
        if via.flags & site::HANDLER != 0 {
            score -= 60;
            why.push("error handler".into());
        } else if via.flags & site::RAISED != 0 {
            score -= 60;
            why.push("raised error".into());
        } else if via.flags & site::GUARD != 0 {
            score -= 35;
            why.push("early-exit guard".into());
        } else {
            why.push("main path".into());
        }
        let constructs = matches!(
            kind,
            SymbolKind::Class | SymbolKind::Struct | SymbolKind::Enum
        ) || PLUMBING.contains(&name.as_str());
        // Building a value is plumbing even when the value is returned: the behaviour is
        // what is done with it.
        if !constructs && via.flags & site::RETURNED != 0 {
            // The function's own result comes from this call: the flow goes on there.
            score += 60;
            why.push("its result is returned".into());
        } else if !constructs && via.flags & site::RESULT != 0 {
            score += 15;
            why.push("result carried on".into());
        }
        if guessed {
            score -= 40;
            why.push("resolved by a unique name only".into());
        }
        if LOGGING.contains(&name.as_str()) || name.starts_with("log_") || name.ends_with("_log") {
            score -= 60;
            why.push("logging".into());
        }
        if constructs {
            score -= 40;
            why.push("constructor or builder".into());
        } else if (name.starts_with("get_") || name.starts_with("is_") || name.starts_with("has_"))
            && reach <= 1
        {
            score -= 25;
            why.push("getter".into());
        } else if reach <= 1 && span_lines(graph, callee) <= 3 {
            score -= 10;
            why.push("trivial".into());
        }
        if graph.is_test(callee) {
            score -= 80;
            why.push("test code".into());
        }
        if self.named.contains(&callee) {
            score += 100;
            why.push("named in the query".into());
        }
        Some((score, why.join(", ")))
    }

    /// The candidate next hops from `node`, best first; a call into a dispatched method
    /// continues in its likely implementation (hop marked `dispatch`).
    fn steps(&mut self, node: NodeId, on_path: &[NodeId]) -> Vec<Step> {
        let graph = self.graph;
        let mut best: HashMap<NodeId, Step> = HashMap::new();
        for edge in graph.out_edges(node) {
            if edge.kind != EdgeKind::Calls as u8 {
                continue;
            }
            let via = relation_of(node, edge, Direction::Outgoing);
            let Some((score, why)) = self.score(&via, on_path) else {
                continue;
            };
            let mut step = Step {
                node: via.to,
                via,
                score,
                why,
            };
            // A call continues in an implementation when its target only declares, or
            // when the query names one; a concrete base method is what runs.
            let implementations = self.implementations(step.node);
            let dispatches = !implementations.is_empty()
                && (self.is_abstract(step.node)
                    || implementations.iter().any(|n| self.named.contains(n)));
            if dispatches
                && let Some((chosen, reason)) = self.pick_implementation(&implementations)
                && !on_path.contains(&chosen)
            {
                // Scored as a call of the implementation, plus the worth of knowing where
                // a dynamic call goes.
                let mut via = step.via.clone();
                via.to = chosen;
                via.dispatch = true;
                let (score, why) = self
                    .score(&via, on_path)
                    .unwrap_or((step.score, String::new()));
                step.why = format!(
                    "dispatch: {} → {} ({reason}), {why}",
                    graph.label(step.node),
                    graph.label(chosen)
                );
                step.score = score + DISPATCH_BONUS;
                step.via = via;
                step.node = chosen;
            }
            // One candidate per callee: the call site that scores best.
            match best.get(&step.node) {
                Some(existing) if existing.score >= step.score => {}
                _ => {
                    best.insert(step.node, step);
                }
            }
        }
        let mut steps: Vec<Step> = best.into_values().collect();
        steps.sort_by(|a, b| b.score.cmp(&a.score).then(a.node.cmp(&b.node)));
        steps
    }

    /// The main path from `from`: greedily the best next hop, while one is worth it.
    pub fn main_path(&mut self, from: NodeId, why: &str) -> Vec<Hop> {
        self.chain(from, why, &[])
    }

    /// `main_path` avoiding `avoid` (the spine an alternative must leave).
    fn chain(&mut self, from: NodeId, why: &str, avoid: &[NodeId]) -> Vec<Hop> {
        let mut hops = vec![Hop {
            node: from,
            via: None,
            why: why.to_string(),
        }];
        let mut on_path: Vec<NodeId> = avoid.to_vec();
        on_path.push(from);
        let mut current = from;
        let mut lines = self.budget.cost(self.graph, from);
        while hops.len() < SPINE_MAX {
            let steps = self.steps(current, &on_path);
            let Some(step) = steps.into_iter().next() else {
                break;
            };
            // Nothing but plumbing, logging or error handling is left: the behaviour
            // stops here. Each hop away from the anchor asks a stronger reason, so the
            // chain ends where the signals fade rather than at the hop limit.
            if step.score < MIN_HOP_SCORE + HOP_SCORE_STEP * (hops.len() as i64 - 1) {
                break;
            }
            // The page must hold every step.
            lines += self.budget.cost(self.graph, step.node);
            if lines > self.budget.lines {
                break;
            }
            on_path.push(step.node);
            current = step.node;
            hops.push(Hop {
                node: step.node,
                via: Some(step.via),
                why: step.why,
            });
        }
        hops
    }

    /// The next best chains off `spine`: from each of its first hops, the best callee not
    /// taken, followed for a few hops, labelled by how it leaves the main path.
    pub fn alternatives(&mut self, spine: &[NodeId], limit: usize) -> Vec<(String, Vec<Hop>)> {
        let mut out = Vec::new();
        for &node in spine.iter().take(3) {
            if out.len() >= limit {
                break;
            }
            let steps = self.steps(node, spine);
            let Some(step) = steps.into_iter().next() else {
                continue;
            };
            let label = if step.via.flags & (site::HANDLER | site::RAISED) != 0 {
                "error path"
            } else if step.via.flags & site::GUARD != 0 {
                "guard path"
            } else if step.via.dispatch {
                "dispatch"
            } else {
                "alternative path"
            };
            let mut chain = self.chain(step.node, &step.why, spine);
            chain.truncate(4);
            if let Some(first) = chain.first_mut() {
                first.via = Some(step.via);
            }
            out.push((label.to_string(), chain));
        }
        out
    }

    /// Where a call to `method` runs when it only declares (a trait or interface member,
    /// an abstract body): its implementations, most called first; none for a concrete
    /// method.
    pub fn dispatch_targets(&self, method: NodeId) -> Vec<NodeId> {
        if !self.is_abstract(method) {
            return Vec::new();
        }
        self.implementations_by_use(method)
    }

    /// Calls into `node`.
    fn callers(&self, node: NodeId) -> usize {
        self.graph
            .in_edges(node)
            .iter()
            .filter(|e| e.kind == EdgeKind::Calls as u8)
            .count()
    }

    /// The implementations of `method` outside tests, most called first.
    fn implementations_by_use(&self, method: NodeId) -> Vec<NodeId> {
        let mut targets: Vec<NodeId> = self
            .implementations(method)
            .into_iter()
            .filter(|&n| !self.graph.is_test(n))
            .collect();
        targets.sort_by_cached_key(|&n| (std::cmp::Reverse(self.callers(n)), n));
        targets
    }

    /// For each dispatched hop of `hops`, the other implementations the call may reach
    /// (at most `limit` per hop, most called first), each a one-hop `dispatch` alternative.
    pub fn dispatch_alternatives(&mut self, hops: &[Hop], limit: usize) -> Vec<(String, Vec<Hop>)> {
        let graph = self.graph;
        let mut out = Vec::new();
        for hop in hops {
            let Some(via) = hop.via.as_ref().filter(|v| v.dispatch) else {
                continue;
            };
            // The declared method: the callee of the caller whose implementations hold
            // the hop.
            let Some(declared) = graph
                .out_edges(via.from)
                .iter()
                .filter(|e| e.kind == EdgeKind::Calls as u8)
                .map(|e| e.node())
                .find(|&m| self.implementations(m).contains(&hop.node))
            else {
                continue;
            };
            let others = self.implementations_by_use(declared);
            for other in others.into_iter().filter(|&n| n != hop.node).take(limit) {
                let mut relation = via.clone();
                relation.to = other;
                out.push((
                    "dispatch".to_string(),
                    vec![Hop {
                        node: other,
                        via: Some(relation),
                        why: format!(
                            "dispatch: another implementation of {}, reach {}",
                            graph.label(declared),
                            self.reach(other)
                        ),
                    }],
                ));
            }
        }
        out
    }

    /// The shortest call path from `from` to `to`, through dispatch too (a call to a base
    /// method continues in each implementation), optionally avoiding one edge.
    pub fn call_path(
        &mut self,
        from: NodeId,
        to: NodeId,
        avoid: Option<(NodeId, NodeId)>,
    ) -> Option<Vec<Hop>> {
        let graph = self.graph;
        let mut previous: HashMap<NodeId, (NodeId, RelationInfo)> = HashMap::new();
        let mut queue = VecDeque::from([(from, 0usize)]);
        let mut visited = BTreeSet::from([from]);
        while let Some((node, depth)) = queue.pop_front() {
            if node == to {
                let mut path = vec![to];
                let mut current = to;
                while let Some((prev, _)) = previous.get(&current) {
                    current = *prev;
                    path.push(current);
                }
                path.reverse();
                return Some(
                    path.into_iter()
                        .map(|n| {
                            let via = previous.get(&n).map(|(_, r)| r.clone());
                            let why = match &via {
                                None => "anchor".to_string(),
                                Some(r) if r.dispatch => format!(
                                    "dispatch: {} is an implementation of the called method",
                                    graph.label(n)
                                ),
                                Some(_) if n == to => "anchor".to_string(),
                                Some(_) => "on the call path between the anchors".to_string(),
                            };
                            Hop { node: n, via, why }
                        })
                        .collect(),
                );
            }
            if depth >= SPINE_MAX || visited.len() > VISIT_CAP {
                continue;
            }
            // Stronger edges first, so ties between equal-length paths prefer confidence
            // and the main path.
            let mut edges: Vec<RelationInfo> = graph
                .out_edges(node)
                .iter()
                .filter(|e| e.kind == EdgeKind::Calls as u8)
                .map(|e| relation_of(node, e, Direction::Outgoing))
                .collect();
            edges.sort_by_key(|r| {
                (
                    r.flags & (site::HANDLER | site::GUARD | site::RAISED) != 0,
                    std::cmp::Reverse(r.confidence),
                    r.to,
                )
            });
            let mut next: Vec<RelationInfo> = Vec::new();
            for relation in edges {
                for implementation in self.implementations(relation.to) {
                    let mut dispatched = relation.clone();
                    dispatched.to = implementation;
                    dispatched.dispatch = true;
                    next.push(dispatched);
                }
                next.push(relation);
            }
            for relation in next {
                let target = relation.to;
                if avoid == Some((node, target)) {
                    continue;
                }
                if visited.insert(target) {
                    previous.insert(target, (node, relation));
                    queue.push_back((target, depth + 1));
                }
            }
        }
        None
    }
}

fn span_lines(graph: &Graph, node: NodeId) -> u32 {
    let span = &graph.node(node).span;
    span.end_line.to_native() - span.start_line.to_native() + 1
}
