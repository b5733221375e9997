//! Flow retrieval (R-Q-5): the spine from the anchors (one anchor: the dominant
//! chain; two: the call path between them), alternatives, dispatch targets, the callees off the
//! spine, and where control leaves ordinary calls (runtime boundaries).

use super::*;

/// Runtime-boundary call names by category (R-Q-5).
pub(super) const BOUNDARIES: &[(&str, &[&str])] = &[
    (
        "task-spawn",
        &[
            "spawn",
            "spawn_blocking",
            "spawn_local",
            "create_task",
            "ensure_future",
            "run_in_executor",
            "start_new_thread",
            "setTimeout",
            "setInterval",
            "setImmediate",
            "nextTick",
            "queueMicrotask",
            "Thread",
            "Go",
        ],
    ),
    (
        "channel",
        &[
            "send",
            "recv",
            "try_recv",
            "try_send",
            "put_nowait",
            "get_nowait",
            "postMessage",
            "channel",
            "Queue",
        ],
    ),
    (
        "callback-registry",
        &[
            "register",
            "subscribe",
            "addEventListener",
            "add_listener",
            "add_done_callback",
            "addCallback",
            "connect_signal",
            "on",
        ],
    ),
    (
        "reflection",
        &[
            "getattr",
            "setattr",
            "eval",
            "exec",
            "__import__",
            "import_module",
            "forName",
            "getMethod",
            "getDeclaredMethod",
            "Reflect",
        ],
    ),
    (
        "framework-route",
        &[
            "route",
            "add_url_rule",
            "add_route",
            "HandleFunc",
            "add_api_route",
            "api_route",
            "RequestMapping",
            "GetMapping",
            "PostMapping",
        ],
    ),
    (
        "process-io",
        &[
            "Popen",
            "check_output",
            "check_call",
            "system",
            "execvp",
            "spawnSync",
            "execSync",
            "exec_command",
        ],
    ),
    (
        "network-io",
        &[
            "fetch",
            "urlopen",
            "urlretrieve",
            "TcpStream",
            "TcpListener",
            "UdpSocket",
            "socket",
            "Dial",
            "ListenAndServe",
            "XMLHttpRequest",
        ],
    ),
    (
        "file-io",
        &[
            "open",
            "read_to_string",
            "read_file",
            "readFile",
            "readFileSync",
            "writeFile",
            "writeFileSync",
            "write_all",
            "fopen",
            "ReadFile",
            "WriteFile",
        ],
    ),
    (
        "ffi",
        &["CDLL", "cdll", "dlopen", "LoadLibrary", "ffi", "extern"],
    ),
];

fn boundary_category(name: &str) -> Option<&'static str> {
    BOUNDARIES
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map(|(category, _)| *category)
}

/// How much one point of a spine score moves an off-spine callee's evidence score (a
/// callee's relation score is about 1000; spine signals span about ±150 points).
pub(super) const CALLEE_SIGNAL_WEIGHT: i64 = 3;
/// Implementations not taken listed per dispatched spine hop.
pub(super) const DISPATCH_ALTERNATIVES: usize = 4;

pub(super) fn flow(b: &mut Builder, intent: &Intent, budget: SpineBudget) -> Vec<NodeId> {
    let anchors: Vec<NodeId> = intent.anchors.iter().map(|a| a.node).collect();
    let Some(&first) = anchors.first() else {
        return Vec::new();
    };
    let mut spines = Spines::new(b.graph, anchors.iter().copied().collect(), budget);
    // With two anchors, the path between them: from the first to the second, or else
    // from the second to the first (`where is the discount applied in checkout` names
    // the callee first).
    let mut ends = anchors.get(1).map(|&second| (first, second));
    let hops = if let Some((first, second)) = ends {
        match spines.call_path(first, second, None) {
            Some(path) => path,
            None => match spines.call_path(second, first, None) {
                Some(path) => {
                    ends = Some((second, first));
                    path
                }
                None => {
                    no_call_path(b, intent, first, second);
                    return Vec::new();
                }
            },
        }
    } else {
        spines.main_path(first, &intent.anchors[0].describe())
    };
    let spine: Vec<NodeId> = hops.iter().map(|h| h.node).collect();
    for (step, hop) in hops.iter().enumerate() {
        let label = b.label(hop.node);
        let mut reasons = vec![format!("spine step {}", step + 1)];
        if let Some(anchor) = intent.anchors.iter().find(|a| a.node == hop.node) {
            reasons.push(anchor.describe());
        }
        if let Some(relation) = &hop.via {
            reasons.push(format!(
                "called by {} ({}/{}, confidence {})",
                b.label(relation.from),
                relation.provenance.as_str(),
                relation.resolution.as_str(),
                relation.confidence
            ));
        }
        b.push(
            Candidate {
                id_hash: IdHash::default(),
                class: EvidenceClass::Spine,
                score: 50_000u16.saturating_sub(step as u16),
                reasons,
                relation_reasons: None,
                required: true,
                node: Some(hop.node),
                relation: hop.via.clone(),
                slice: SliceTarget::Declaration(hop.node),
                on_spine: true,
                named: false,
                sites: super::Sites::new(),
                why: Some(hop.why.clone()),
                statement: None,
            },
            &label,
        );
    }
    let mut alternatives: Vec<(String, Vec<Hop>)> = Vec::new();
    if let Some((from, to)) = ends {
        // The best path avoiding each spine edge in turn.
        for window in spine.windows(2) {
            if alternatives.len() >= 3 {
                break;
            }
            if let Some(path) = spines.call_path(from, to, Some((window[0], window[1])))
                && path.iter().map(|h| h.node).collect::<Vec<_>>() != spine
            {
                let hops = path
                    .into_iter()
                    .filter(|h| !spine.contains(&h.node))
                    .collect();
                alternatives.push(("alternative path".into(), hops));
            }
        }
    } else {
        alternatives = spines.alternatives(&spine, 2);
    }
    // Where the spine went through dispatch, the implementations it did not take.
    alternatives.extend(spines.dispatch_alternatives(&hops, DISPATCH_ALTERNATIVES));
    // A question's next strong search hit starts an alternative chain (issue 9).
    if let Some(alternative) = intent
        .alternative
        .as_ref()
        .filter(|a| !spine.contains(&a.node))
    {
        let mut chain = spines.main_path(
            alternative.node,
            &format!("{}; start of an alternative chain", alternative.describe()),
        );
        if let Some(at) = chain.iter().position(|h| spine.contains(&h.node)) {
            chain.truncate(at);
        }
        alternatives.push(("alternative chain from the next search hit".into(), chain));
    }
    // What an alternative shows is not repeated as a callee.
    let shown: Vec<NodeId> = spine
        .iter()
        .copied()
        .chain(
            alternatives
                .iter()
                .flat_map(|(_, hops)| hops.iter().map(|h| h.node)),
        )
        .collect();
    for (n, (label, hops)) in alternatives.into_iter().enumerate() {
        for hop in hops {
            let why = format!("{label} {}: {}", n + 1, hop.why);
            match hop.via {
                Some(relation) => {
                    b.relation(
                        EvidenceClass::Alternative,
                        hop.node,
                        relation,
                        1,
                        false,
                        Note::AlternativePath(n + 1),
                    );
                    b.set_why(EvidenceClass::Alternative, hop.node, why);
                }
                None => {
                    let label = b.label(hop.node);
                    let mut candidate = Candidate::declaration(
                        IdHash::default(),
                        EvidenceClass::Alternative,
                        1_000,
                        hop.node,
                        why.clone(),
                    );
                    candidate.why = Some(why);
                    b.push(candidate, &label);
                }
            }
        }
    }
    // Off-spine callees of spine nodes, ranked by the spine's signals too (the main path
    // over error paths and logging, reach, results carried on), and callers of the first
    // anchor.
    for &node in &spine {
        for relation in b.edges(node, Direction::Outgoing, EdgeKind::Calls) {
            if shown.contains(&relation.to) {
                continue;
            }
            let target = relation.to;
            let signals = spines
                .score(&relation, &spine)
                .map_or((0, None), |(score, why)| {
                    ((score * CALLEE_SIGNAL_WEIGHT) as i32, Some(why))
                });
            b.relation_adjusted(
                EvidenceClass::Callee,
                target,
                relation.clone(),
                1,
                true,
                Note::None,
                signals,
            );
            // A call to a method that only declares runs in its implementations.
            for implementation in spines
                .dispatch_targets(target)
                .into_iter()
                .take(DISPATCH_ALTERNATIVES)
            {
                if shown.contains(&implementation) {
                    continue;
                }
                let mut dispatched = relation.clone();
                dispatched.to = implementation;
                dispatched.dispatch = true;
                let why = format!(
                    "dispatch: an implementation of {}, reach {}",
                    b.label(target),
                    spines.reach(implementation)
                );
                b.relation_adjusted(
                    EvidenceClass::Callee,
                    implementation,
                    dispatched,
                    1,
                    true,
                    Note::None,
                    (0, Some(why)),
                );
            }
        }
    }
    // Callables a spine step hands on (`run_sync(self.lookup_path, p)`): they run later
    // or elsewhere, on the flow's behalf.
    for &node in &spine {
        for relation in b.edges(node, Direction::Outgoing, EdgeKind::References) {
            let target = relation.to;
            if shown.contains(&target) || !b.graph.kind(target).is_callable() {
                continue;
            }
            let why = format!("passed on as a callback, reach {}", spines.reach(target));
            b.relation_adjusted(
                EvidenceClass::Callee,
                target,
                relation,
                1,
                true,
                Note::None,
                (0, Some(why)),
            );
        }
    }
    // Callers of where the spine starts.
    let start = ends.map_or(first, |(from, _)| from);
    b.walk_calls(start, Direction::Incoming, 1, EvidenceClass::Caller);
    frontier_of_spine(b, &spine);
    spine
}

/// Two anchors without a call path between them: a failure that names the hop that broke
/// it — the unresolved call site named like the second anchor, reachable from the first,
/// and why it is unresolved — with that site as frontier evidence (R-RES-2, issue 11).
pub(super) fn no_call_path(b: &mut Builder, intent: &Intent, first: NodeId, second: NodeId) {
    for anchor in &intent.anchors {
        b.declaration(anchor.node, anchor.describe());
    }
    let graph = b.graph;
    // What the first anchor reaches, and the unresolved calls named like the second.
    let mut reached = BTreeSet::from([first]);
    let mut queue = VecDeque::from([(first, 0usize)]);
    // The hop at which the visit cap first stopped the walk (reported, never silent).
    let mut capped_at = None;
    while let Some((node, depth)) = queue.pop_front() {
        if depth >= SPINE_MAX {
            continue;
        }
        if reached.len() > VISIT_CAP {
            capped_at.get_or_insert(depth as u32 + 1);
            continue;
        }
        for e in graph.out_edges(node) {
            if e.kind == EdgeKind::Calls as u8 && reached.insert(e.node()) {
                queue.push_back((e.node(), depth + 1));
            }
        }
    }
    let name = graph.str(graph.node(second).name());
    let broken: Vec<(NodeId, FileId, u32, u32)> = b
        .frontier_reaching_named(name)
        .into_iter()
        .filter(|(from, _, _, _)| reached.contains(from))
        .collect();
    let target = b.label(second);
    let text = match broken.first() {
        Some(&(from, file, line, candidates)) => {
            let why = if candidates == 0 {
                "external or dynamic: no definition by that name resolves".to_string()
            } else {
                format!(
                    "the receiver's type is unknown: {candidates} definition(s) share the name and none is provable"
                )
            };
            format!(
                "no call path from {} to {target} within {SPINE_MAX} calls: the hop that breaks it is the call to `{}` at {}:{} in {} — {why}",
                b.label(first),
                name,
                graph.file_path(file),
                line + 1,
                b.label(from)
            )
        }
        None => format!(
            "no call path from {} to {target} within {SPINE_MAX} calls: none of the {} symbols it reaches calls `{}`, resolved or not",
            b.label(first),
            reached.len() - 1,
            name
        ),
    };
    b.statement(
        EvidenceClass::Failure,
        "no-call-path",
        text,
        Some(first),
        true,
        50_000,
    );
    if let Some(hop) = capped_at {
        b.walk_capped(first, hop);
    }
    for (from, file, line, candidates) in broken.into_iter().take(4) {
        let identity = format!("frontier|{}|{}", name, b.label(from));
        b.push(
            Candidate {
                id_hash: IdHash::default(),
                class: EvidenceClass::Frontier,
                score: 45_000,
                reasons: vec![format!(
                    "unresolved `{}` in {} could reach {target} ({candidates} candidates): the broken hop",
                    name,
                    b.label(from)
                )],
                relation_reasons: None,
                required: true,
                node: Some(from),
                relation: None,
                slice: SliceTarget::Site(file, line),
                on_spine: false,
                named: false,
                sites: smallvec::smallvec![(file, line)],
                why: None,
                statement: None,
            },
            &identity,
        );
    }
    b.walk_calls(first, Direction::Outgoing, 1, EvidenceClass::Callee);
    b.walk_calls(second, Direction::Incoming, 1, EvidenceClass::Caller);
    frontier_of_spine(b, &[first, second]);
}

/// Runtime boundaries reached from the spine: resolved calls and unresolved call sites
/// whose callee name is a known boundary (R-Q-5). Required evidence.
pub(super) fn frontier_of_spine(b: &mut Builder, spine: &[NodeId]) {
    let graph = b.graph;
    let spine_set: BTreeSet<NodeId> = spine.iter().copied().collect();
    let mut boundaries: BTreeMap<(FileId, u32, String), (NodeId, &'static str)> = BTreeMap::new();
    // A reference's entry is in its symbol's file: only the spine's files are read.
    let files: BTreeSet<FileId> = spine
        .iter()
        .map(|&node| graph.node(node).file())
        .filter(|file| !file.is_none())
        .collect();
    for (_, entry) in files.iter().flat_map(|&file| graph.frontier_in_file(file)) {
        let from = entry.from();
        if !spine_set.contains(&from) {
            continue;
        }
        let name = graph.str(entry.name());
        if let Some(category) = boundary_category(name) {
            boundaries.insert(
                (
                    entry.file(),
                    entry.site.start_line.to_native(),
                    name.to_string(),
                ),
                (from, category),
            );
        }
    }
    for &node in spine {
        for relation in b.edges(node, Direction::Outgoing, EdgeKind::Calls) {
            let name = graph.str(graph.node(relation.to).name());
            if let (Some(category), Some((file, line))) = (boundary_category(name), relation.site) {
                boundaries.insert((file, line, name.to_string()), (node, category));
            }
        }
    }
    for ((file, line, name), (from, category)) in boundaries {
        let path = graph.file_path(file).to_string();
        let identity = format!("{path}:{line}:{name}");
        b.push(
            Candidate {
                id_hash: IdHash::default(),
                class: EvidenceClass::RuntimeBoundary,
                score: 40_000,
                reasons: vec![format!(
                    "{category}: `{name}` at {path}:{} in {}",
                    line + 1,
                    b.label(from)
                )],
                relation_reasons: None,
                required: true,
                node: Some(from),
                relation: None,
                slice: SliceTarget::Site(file, line),
                on_spine: true,
                named: false,
                sites: super::Sites::new(),
                why: None,
                statement: Some(Statement {
                    code: category,
                    text: format!("control leaves ordinary calls: {category} via `{name}`"),
                }),
            },
            &identity,
        );
    }
}
