//! Architecture and impact retrieval: the modules in scope with their summaries,
//! relations and representatives; what depends on a symbol, hop by hop, and the modules it affects.

use super::*;

pub(super) fn module_of(graph: &Graph, node: NodeId) -> NodeId {
    match graph.file_of(node) {
        Some(file) => file.module(),
        None => node,
    }
}

pub(super) fn architecture(b: &mut Builder, intent: &Intent) {
    let graph = b.graph;
    // Modules in scope: the named ones (and their descendants), else every module.
    let mut scope: BTreeSet<NodeId> = BTreeSet::new();
    let mut named_modules: BTreeSet<NodeId> = BTreeSet::new();
    for anchor in &intent.anchors {
        let module = module_of(graph, anchor.node);
        named_modules.insert(module);
        if !graph.is_directory(anchor.node) {
            b.declaration(anchor.node, anchor.describe());
        }
    }
    let module_nodes: Vec<NodeId> = graph
        .nodes()
        .take_while(|&n| graph.kind(n) == SymbolKind::Module)
        .collect();
    if named_modules.is_empty() {
        scope.extend(module_nodes.iter().copied());
    } else {
        for &m in &module_nodes {
            let path = graph.str(graph.node(m).qualified());
            if named_modules.iter().any(|&n| {
                let named = graph.str(graph.node(n).qualified());
                n == m || named == "." || path.starts_with(&format!("{named}/"))
            }) {
                scope.insert(m);
            }
        }
    }
    // Module summaries.
    let mut files_per_module: BTreeMap<NodeId, Vec<FileId>> = BTreeMap::new();
    for file in graph.files() {
        if let Some(record) = graph.file(file) {
            files_per_module
                .entry(record.module())
                .or_default()
                .push(file);
        }
    }
    for &module in &scope {
        let files = files_per_module.get(&module).cloned().unwrap_or_default();
        if files.is_empty() && !named_modules.contains(&module) {
            continue;
        }
        let symbols: usize = files
            .iter()
            .map(|&f| {
                graph.file(f).map_or(0, |file| {
                    b.edges(file.node(), Direction::Outgoing, EdgeKind::Contains)
                        .count()
                })
            })
            .sum();
        let path = graph.str(graph.node(module).qualified()).to_string();
        let named = named_modules.contains(&module);
        let score = (200 + 40 * files.len() as u32 + 5 * symbols as u32).min(20_000) as u16;
        let text = format!(
            "module {path}/: {} file(s), {symbols} top-level symbol(s)",
            files.len()
        );
        b.push(
            Candidate {
                id_hash: IdHash::default(),
                class: EvidenceClass::Module,
                score: if named { 60_000 } else { score },
                reasons: vec![if named {
                    "named module".to_string()
                } else {
                    format!("{} files", files.len())
                }],
                relation_reasons: None,
                required: named,
                node: Some(module),
                relation: None,
                slice: SliceTarget::None,
                on_spine: false,
                named,
                sites: super::Sites::new(),
                why: None,
                statement: Some(Statement {
                    code: "module",
                    text,
                }),
            },
            &path,
        );
        // Representatives: the most central symbols of the module's code, its public
        // ones first (what other modules use it through).
        let mut symbols_in_module: Vec<NodeId> = files
            .iter()
            .filter_map(|&f| graph.file(f))
            .flat_map(|file| {
                b.edges(file.node(), Direction::Outgoing, EdgeKind::Contains)
                    .map(|r| r.to)
            })
            .collect();
        symbols_in_module.sort_by_cached_key(|&n| {
            (
                super::is_policy_class(b.graph, n),
                graph.node(n).visibility != crate::syntax::facts::Visibility::Public as u8,
                std::cmp::Reverse(graph.centrality(n)),
                n,
            )
        });
        for (rank, &node) in symbols_in_module.iter().take(3).enumerate() {
            let centrality = graph.centrality(node);
            let mut score = (centrality / 4).min(20_000);
            if super::is_policy_class(b.graph, node) {
                score /= 2;
            }
            let label = b.label(node);
            b.push(
                Candidate::declaration(
                    IdHash::default(),
                    EvidenceClass::Representative,
                    score as u16,
                    node,
                    format!("centrality {centrality}, rank {} in {path}/", rank + 1),
                ),
                &label,
            );
        }
    }
    // Relationships between modules in scope.
    for edge in graph.module_edges() {
        let (from, to) = (edge.from(), edge.to());
        if !(scope.contains(&from) || scope.contains(&to)) {
            continue;
        }
        let kind = EdgeKind::from_code(edge.kind).map_or("?", EdgeKind::as_str);
        let count = edge.count.to_native();
        let (a, c) = (
            graph.str(graph.node(from).qualified()).to_string(),
            graph.str(graph.node(to).qualified()).to_string(),
        );
        let touches_named = named_modules.contains(&from) || named_modules.contains(&to);
        let score = (250 + 25 * count + if touches_named { 200 } else { 0 }).min(20_000) as u16;
        b.push(
            Candidate {
                id_hash: IdHash::default(),
                class: EvidenceClass::ModuleRelation,
                score,
                reasons: vec![format!("{count} {kind} edge(s)")],
                relation_reasons: None,
                required: false,
                node: None,
                relation: None,
                slice: SliceTarget::None,
                on_spine: false,
                named: false,
                sites: super::Sites::new(),
                why: None,
                statement: Some(Statement {
                    code: "module-relation",
                    text: format!("{a}/ {kind} {c}/ ×{count}"),
                }),
            },
            &format!("{a}|{kind}|{c}"),
        );
    }
}

pub(super) fn impact(b: &mut Builder, intent: &Intent) {
    for anchor in &intent.anchors {
        let node = anchor.node;
        b.declaration(node, anchor.describe());
        let kinds = [
            EdgeKind::Calls,
            EdgeKind::References,
            EdgeKind::UsesType,
            EdgeKind::Implements,
            EdgeKind::Imports,
        ];
        // What the anchor stands for: a file or a directory is what it defines, so its
        // dependents are those of its definitions (imports name `Cart`, not
        // `shop/models.py`). Uses from inside stay inside: the seeds are visited.
        let seeds = impact_seeds(b, node);
        let mut frontier = seeds.clone();
        // Visited nodes are only asked for (thousands, for a hub's file): a hash set.
        let mut visited: rustc_hash::FxHashSet<NodeId> = seeds.iter().copied().collect();
        let mut affected: BTreeSet<NodeId> = BTreeSet::new();
        let mut dependents = 0;
        // The hop at which the visit cap first stopped the walk (reported, never silent).
        let mut capped_at = None;
        // A node's edges of each kind, in the kinds' order: its edges are read once.
        let mut by_kind: [Vec<EdgeRef>; _] = kinds.map(|_| Vec::new());
        for hop in 1..=IMPACT_HOPS {
            let mut next = Vec::new();
            for &current in &frontier {
                by_kind.iter_mut().for_each(Vec::clear);
                for edge in b.graph.edges(current, Direction::Incoming) {
                    if let Some(at) = kinds.iter().position(|&kind| kind as u8 == edge.kind)
                        && (hop == 1 || kinds[at] != EdgeKind::Imports)
                    {
                        by_kind[at].push(edge);
                    }
                }
                for edges in &by_kind {
                    for &edge in edges {
                        let dependent = edge.node();
                        if visited.contains(&dependent) {
                            continue;
                        }
                        let relation = relation_of(current, edge, Direction::Incoming);
                        if hop == 1 {
                            dependents += 1;
                        }
                        let class = if hop == 1 {
                            EvidenceClass::Dependent
                        } else {
                            EvidenceClass::ReversePath
                        };
                        // Through which symbol: the hop before, or the definition of
                        // the anchored file it depends on.
                        let note = if hop > 1 || current != node {
                            Note::Via(current)
                        } else {
                            Note::None
                        };
                        b.relation(class, dependent, relation, hop, false, note);
                        affected.insert(module_of(b.graph, dependent));
                        if visited.len() < VISIT_CAP {
                            visited.insert(dependent);
                            next.push(dependent);
                        } else if capped_at.is_none() {
                            capped_at = Some(hop);
                        }
                    }
                }
            }
            frontier = next;
        }
        if let Some(hop) = capped_at {
            b.walk_capped(node, hop);
        }
        b.implementations(node);
        let unresolved = b.frontier_candidates(node, 400);
        if dependents == 0 {
            let label = b.label(node);
            let (code, text) = if unresolved > 0 {
                (
                    "dependents-unknown",
                    format!(
                        "{label} has no resolved dependents; {unresolved} unresolved reference(s) share its name and could reach it"
                    ),
                )
            } else {
                (
                    "no-dependents",
                    format!(
                        "{label} has zero dependents in the graph and no unresolved reference names it"
                    ),
                )
            };
            b.statement(EvidenceClass::Failure, code, text, Some(node), true, 50_000);
        }
        affected.remove(&module_of(b.graph, node));
        for module in affected {
            let path = b.graph.str(b.graph.node(module).qualified()).to_string();
            b.statement(
                EvidenceClass::AffectedModule,
                "affected-module",
                format!("module {path}/ depends on {}", b.label(node)),
                Some(module),
                false,
                300,
            );
        }
    }
}

/// The nodes whose dependents are `node`'s: `node` itself, and for a file (or a module
/// declared in one) every definition it contains, for a directory those of the files
/// directly in it. In node order.
fn impact_seeds(b: &Builder, node: NodeId) -> Vec<NodeId> {
    let graph = b.graph;
    let containers: Vec<NodeId> = match graph.kind(node) {
        SymbolKind::File | SymbolKind::Module if !graph.is_directory(node) => vec![node],
        SymbolKind::Module => graph
            .files()
            .filter_map(|f| graph.file(f))
            .filter(|f| f.module() == node)
            .map(|f| f.node())
            .collect(),
        _ => return vec![node],
    };
    // A node is a seed from the moment it is stacked, so none is stacked twice.
    let mut seeds: BTreeSet<NodeId> = containers.iter().copied().collect();
    seeds.insert(node);
    let mut stack = containers;
    while let Some(container) = stack.pop() {
        for relation in b.edges(container, Direction::Outgoing, EdgeKind::Contains) {
            if seeds.insert(relation.to) {
                stack.push(relation.to);
            }
        }
    }
    seeds.into_iter().collect()
}
