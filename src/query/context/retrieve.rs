//! Stage one: retrieval (R-Q-4/5). From an intent to a candidate set in which every
//! candidate has a stable evidence id, a class, a u16 score with reasons and a required
//! flag. Nothing here reads source or knows about bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};

use super::spine::{Hop, SPINE_MAX, SpineBudget, Spines};
use crate::graph::codes::FileClass;
use crate::graph::codes::{EdgeKind, EdgeSubkind, Provenance, Resolution};
use crate::graph::data::ArchivedEdgeRecord;
use crate::graph::ids::{FileId, NodeId, StrId};
use crate::graph::reader::{Direction, Graph};
use crate::query::intent::{Intent, Relation};
use crate::query::profile::EvidenceClass;
use crate::query::profile::ProfileName;
use crate::syntax::facts::SymbolKind;

/// What a candidate shows as source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SliceTarget {
    None,
    /// The node's declaration span.
    Declaration(NodeId),
    /// A few lines around a site: (file, 0-based line).
    Site(FileId, u32),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationInfo {
    pub kind: EdgeKind,
    pub extends: bool,
    pub from: NodeId,
    pub to: NodeId,
    pub provenance: Provenance,
    pub resolution: Resolution,
    pub confidence: u8,
    /// (file, 0-based line).
    pub site: Option<(FileId, u32)>,
    /// `facts::site` bits of a call (handler, guard, result carried on).
    pub flags: u8,
    /// A hop through dynamic dispatch: the call names a base method, `to` is the
    /// implementation the flow continues in.
    pub dispatch: bool,
}

#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: String,
    pub class: EvidenceClass,
    pub score: u16,
    /// Reasons of candidates that are not relations (relations render theirs lazily:
    /// most candidates are never printed, and formatting labels dominates retrieval).
    pub reasons: Vec<String>,
    pub relation_reasons: Option<RelationReasons>,
    pub required: bool,
    pub node: Option<NodeId>,
    pub relation: Option<RelationInfo>,
    pub slice: SliceTarget,
    pub on_spine: bool,
    /// The query names this symbol or its path.
    pub named: bool,
    /// A typed statement (failure evidence, module summaries).
    pub statement: Option<Statement>,
    /// Every site of this evidence — (file, 0-based line) — when one entry stands for
    /// several relations of the same symbol (a callee called from nine lines).
    pub sites: Vec<(FileId, u32)>,
    /// Why a spine or alternative hop was taken (`reach 214, main path`).
    pub why: Option<String>,
}

/// What a relation candidate's reasons say, rendered on demand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationReasons {
    pub hop: u32,
    pub bonus: u32,
    pub policy: bool,
    pub note: Note,
    pub unique: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    None,
    /// Reached through this node (hop ≥ 2).
    Via(NodeId),
    Text(&'static str),
    AlternativePath(usize),
}

impl Candidate {
    /// An optional symbol shown by its declaration, with one reason: what ranking
    /// sources (representatives, search hits) contribute.
    fn declaration(
        id: String,
        class: EvidenceClass,
        score: u16,
        node: NodeId,
        reason: String,
    ) -> Self {
        Candidate {
            id,
            class,
            score,
            reasons: vec![reason],
            relation_reasons: None,
            required: false,
            node: Some(node),
            relation: None,
            slice: SliceTarget::Declaration(node),
            on_spine: false,
            named: false,
            sites: Vec::new(),
            why: None,
            statement: None,
        }
    }

    /// The candidate's reasons as printed.
    pub fn reasons(&self, graph: &Graph) -> Vec<String> {
        let (Some(lazy), Some(relation)) = (&self.relation_reasons, &self.relation) else {
            return self.reasons.clone();
        };
        let mut reasons = vec![
            format!(
                "{} {} → {} ({}/{})",
                relation.kind.as_str(),
                graph.label(relation.from),
                graph.label(relation.to),
                relation.provenance.as_str(),
                relation.resolution.as_str()
            ),
            format!("confidence {}", relation.confidence),
            format!("hop {}", lazy.hop),
        ];
        if lazy.bonus > 0 {
            reasons.push(format!("centrality +{}", lazy.bonus));
        }
        if lazy.policy {
            reasons.push("test/generated/vendored ×0.5".into());
        }
        match &lazy.note {
            Note::None => {}
            Note::Via(node) => reasons.push(format!("via {}", graph.label(*node))),
            Note::Text(text) => reasons.push(text.to_string()),
            Note::AlternativePath(n) => reasons.push(format!("alternative path {n}")),
        }
        if lazy.unique {
            reasons.push("unique implementation".into());
        }
        reasons
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub code: &'static str,
    pub text: String,
}

pub struct Retrieval {
    pub candidates: Vec<Candidate>,
    /// Spine node ids in order (flow), for rendering.
    pub spine: Vec<NodeId>,
    /// Distinct files touched while traversing (load profile input).
    pub paths_traversed: usize,
}

const MAX_HOPS: u32 = 2;
const IMPACT_HOPS: u32 = 4;
const VISIT_CAP: usize = 20_000;

/// Runtime-boundary call names by category (R-Q-5).
const BOUNDARIES: &[(&str, &[&str])] = &[
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

pub fn boundary_category(name: &str) -> Option<&'static str> {
    BOUNDARIES
        .iter()
        .find(|(_, names)| names.contains(&name))
        .map(|(category, _)| *category)
}

pub fn evidence_id(class: EvidenceClass, identity: &str) -> String {
    let hash = blake3::hash(format!("{class}\0{identity}").as_bytes());
    format!("ev-{class}-{}", &hash.to_hex()[..16])
}

struct Builder<'g> {
    graph: &'g Graph,
    named: BTreeSet<NodeId>,
    candidates: Vec<Candidate>,
    seen: HashMap<String, usize>,
    touched_files: BTreeSet<FileId>,
}

pub(super) fn relation_of(
    from: NodeId,
    edge: &ArchivedEdgeRecord,
    direction: Direction,
) -> RelationInfo {
    let other = edge.node();
    let (from, to) = if direction == Direction::Outgoing {
        (from, other)
    } else {
        (other, from)
    };
    let site_file = edge.site_file();
    RelationInfo {
        kind: EdgeKind::from_code(edge.kind).unwrap_or(EdgeKind::References),
        extends: EdgeSubkind::from_code(edge.subkind) == Some(EdgeSubkind::Extends),
        from,
        to,
        provenance: Provenance::from_code(edge.provenance).unwrap_or(Provenance::TreeSitter),
        resolution: Resolution::from_code(edge.resolution).unwrap_or(Resolution::UniqueName),
        confidence: edge.confidence,
        site: (!site_file.is_none()).then(|| (site_file, edge.site.start_line.to_native())),
        flags: edge.flags,
        dispatch: false,
    }
}

impl<'g> Builder<'g> {
    fn label(&self, node: NodeId) -> String {
        self.graph.label(node)
    }

    fn is_policy_class(&self, node: NodeId) -> bool {
        self.graph.file_of(node).is_some_and(|f| {
            matches!(
                FileClass::from_code(f.class),
                Some(FileClass::Test | FileClass::Generated | FileClass::Vendored)
            )
        }) || self.graph.node(node).flags & crate::graph::data::FLAG_TEST_SCOPE != 0
    }

    /// Centrality bonus: up to +150 for hubs (mean centrality is 1000).
    fn bonus(&self, node: NodeId) -> u32 {
        (self.graph.node(node).centrality.to_native() / 20).min(150)
    }

    fn relation_score(
        &self,
        node: NodeId,
        confidence: u8,
        hop: u32,
        decay_square: bool,
    ) -> (u16, u32, bool) {
        let divisor = if decay_square { hop * hop } else { hop };
        let bonus = self.bonus(node);
        let mut score = u32::from(confidence) * 10 / divisor.max(1) + bonus;
        let policy = self.is_policy_class(node);
        if policy {
            score /= 2;
        }
        (score.min(u16::MAX as u32) as u16, bonus, policy)
    }

    fn push(&mut self, mut candidate: Candidate, identity: &str) {
        candidate.id = evidence_id(candidate.class, identity);
        if let Some(node) = candidate.node {
            candidate.named |= self.named.contains(&node);
            let file = self.graph.node(node).file();
            if !file.is_none() {
                self.touched_files.insert(file);
            }
        }
        match self.seen.get(&candidate.id) {
            Some(&index) => {
                let existing = &mut self.candidates[index];
                // One entry per symbol and class: the same evidence reached again keeps
                // its strongest form and every site.
                let mut sites = std::mem::take(&mut existing.sites);
                for site in &candidate.sites {
                    if !sites.contains(site) {
                        sites.push(*site);
                    }
                }
                if (candidate.required, candidate.score) > (existing.required, existing.score) {
                    *existing = candidate;
                }
                existing.sites = sites;
            }
            None => {
                self.seen
                    .insert(candidate.id.clone(), self.candidates.len());
                self.candidates.push(candidate);
            }
        }
    }

    fn declaration(&mut self, node: NodeId, reason: String) {
        let kind = self.graph.kind(node);
        let slice = if matches!(kind, SymbolKind::Module | SymbolKind::File) {
            SliceTarget::None
        } else {
            SliceTarget::Declaration(node)
        };
        let label = self.label(node);
        self.push(
            Candidate {
                id: String::new(),
                class: EvidenceClass::Declaration,
                score: 60_000,
                reasons: vec![reason],
                relation_reasons: None,
                required: true,
                node: Some(node),
                relation: None,
                slice,
                on_spine: false,
                named: true,
                sites: Vec::new(),
                why: None,
                statement: None,
            },
            &label,
        );
    }

    fn relation(
        &mut self,
        class: EvidenceClass,
        node: NodeId,
        relation: RelationInfo,
        hop: u32,
        decay_square: bool,
        note: Note,
    ) {
        self.relation_adjusted(class, node, relation, hop, decay_square, note, (0, None));
    }

    /// `relation` with its score moved by `adjust` and the reason (flow's spine signals on
    /// a callee).
    #[allow(clippy::too_many_arguments)]
    fn relation_adjusted(
        &mut self,
        class: EvidenceClass,
        node: NodeId,
        relation: RelationInfo,
        hop: u32,
        decay_square: bool,
        note: Note,
        (adjust, why): (i32, Option<String>),
    ) {
        let (score, bonus, policy) =
            self.relation_score(node, relation.confidence, hop, decay_square);
        let score = (i32::from(score) + adjust).clamp(1, i32::from(u16::MAX)) as u16;
        let slice = match (class, relation.site) {
            (
                EvidenceClass::Caller
                | EvidenceClass::Dependent
                | EvidenceClass::ReversePath
                | EvidenceClass::Reference
                | EvidenceClass::TypeUse,
                Some((file, line)),
            ) => SliceTarget::Site(file, line),
            _ => SliceTarget::Declaration(node),
        };
        // One entry per (class, symbol): its relations' sites are gathered on it.
        let identity = self.label(node);
        let sites: Vec<(FileId, u32)> = relation.site.into_iter().collect();
        self.push(
            Candidate {
                id: String::new(),
                class,
                score,
                reasons: Vec::new(),
                relation_reasons: Some(RelationReasons {
                    hop,
                    bonus,
                    policy,
                    note,
                    unique: false,
                }),
                required: false,
                node: Some(node),
                relation: Some(relation),
                slice,
                on_spine: false,
                named: false,
                sites,
                why,
                statement: None,
            },
            &identity,
        );
    }

    /// Records why a hop was taken on the entry of `(class, node)`.
    fn set_why(&mut self, class: EvidenceClass, node: NodeId, why: String) {
        let id = evidence_id(class, &self.label(node));
        if let Some(&index) = self.seen.get(&id) {
            self.candidates[index].why = Some(why);
        }
    }

    fn statement(
        &mut self,
        class: EvidenceClass,
        code: &'static str,
        text: String,
        node: Option<NodeId>,
        required: bool,
        score: u16,
    ) {
        let identity = format!("{code}|{text}");
        self.push(
            Candidate {
                id: String::new(),
                class,
                score,
                reasons: vec![code.to_string()],
                relation_reasons: None,
                required,
                node,
                relation: None,
                slice: SliceTarget::None,
                on_spine: false,
                named: false,
                sites: Vec::new(),
                why: None,
                statement: Some(Statement { code, text }),
            },
            &identity,
        );
    }

    fn edges(&self, node: NodeId, direction: Direction, kind: EdgeKind) -> Vec<RelationInfo> {
        let edges = self.graph.edges(node, direction);
        edges
            .iter()
            .filter(|e| e.kind == kind as u8)
            .map(|e| relation_of(node, e, direction))
            .collect()
    }

    /// Frontier entries named like `node` that could reach it.
    fn frontier_reaching(&self, node: NodeId) -> Vec<(NodeId, FileId, u32, u32)> {
        self.frontier_reaching_named(self.graph.node(node).name())
    }

    /// Unresolved call or reference sites named `name` (a string id), with at least one
    /// definition of that name: `(from, file, 0-based line, candidates)`.
    fn frontier_reaching_named(&self, name: StrId) -> Vec<(NodeId, FileId, u32, u32)> {
        let frontier = &self.graph.data().frontier;
        self.graph
            .frontier_named(name)
            .into_iter()
            .filter_map(|i| frontier.get(i as usize))
            .filter(|f| f.candidates.to_native() > 0)
            .map(|f| {
                (
                    f.from(),
                    f.file(),
                    f.site.start_line.to_native(),
                    f.candidates.to_native(),
                )
            })
            .collect()
    }

    fn frontier_candidates(&mut self, anchor: NodeId, score: u16) -> usize {
        let entries = self.frontier_reaching(anchor);
        let name = self.graph.str(self.graph.node(anchor).name()).to_string();
        for (from, file, line, candidates) in &entries {
            // One entry per calling symbol; its unresolved sites are gathered on it.
            let identity = format!("frontier|{name}|{}", self.label(*from));
            let reasons = vec![format!(
                "unresolved `{name}` in {} could reach {} ({} candidates)",
                self.label(*from),
                self.label(anchor),
                candidates
            )];
            self.push(
                Candidate {
                    id: String::new(),
                    class: EvidenceClass::Frontier,
                    score,
                    reasons,
                    relation_reasons: None,
                    required: false,
                    node: Some(*from),
                    relation: None,
                    slice: SliceTarget::Site(*file, *line),
                    on_spine: false,
                    named: false,
                    sites: vec![(*file, *line)],
                    why: None,
                    statement: None,
                },
                &identity,
            );
        }
        entries.len()
    }

    /// Implementations of `node`: implementors of a trait/interface/class, and for a
    /// method of one, the same-named members of the implementors.
    fn implementations(&mut self, node: NodeId) -> usize {
        let graph = self.graph;
        let kind = graph.kind(node);
        let mut found = Vec::new();
        for relation in self.edges(node, Direction::Incoming, EdgeKind::Implements) {
            found.push((relation.from, relation));
        }
        if kind == SymbolKind::Method {
            let parent = graph.node(node).parent();
            let name = graph.node(node).name();
            if !parent.is_none() {
                for relation in self.edges(parent, Direction::Incoming, EdgeKind::Implements) {
                    let implementor = relation.from;
                    for member in self.edges(implementor, Direction::Outgoing, EdgeKind::Contains) {
                        if graph.node(member.to).name() == name {
                            found.push((member.to, relation.clone()));
                        }
                    }
                }
            }
        }
        let unique = found.len() == 1;
        for (implementor, relation) in &found {
            self.relation(
                EvidenceClass::Implementation,
                *implementor,
                relation.clone(),
                1,
                false,
                Note::None,
            );
        }
        if let (true, Some((implementor, _))) = (unique, found.first()) {
            // A unique implementation is required evidence (R-Q-5).
            let id = evidence_id(EvidenceClass::Implementation, &self.label(*implementor));
            if let Some(last) = self.seen.get(&id).map(|&i| &mut self.candidates[i]) {
                last.required = true;
                match last.relation_reasons.as_mut() {
                    Some(lazy) => lazy.unique = true,
                    None => last.reasons.push("unique implementation".into()),
                }
            }
        }
        found.len()
    }

    /// Callers or callees up to `hops`, breadth first.
    fn walk_calls(
        &mut self,
        anchor: NodeId,
        direction: Direction,
        hops: u32,
        class: EvidenceClass,
    ) -> usize {
        let mut frontier = vec![anchor];
        let mut visited: BTreeSet<NodeId> = BTreeSet::from([anchor]);
        let mut direct = 0;
        for hop in 1..=hops {
            let mut next = Vec::new();
            for &node in &frontier {
                for relation in self.edges(node, direction, EdgeKind::Calls) {
                    let other = match direction {
                        Direction::Outgoing => relation.to,
                        Direction::Incoming => relation.from,
                    };
                    if hop == 1 {
                        direct += 1;
                    }
                    let note = if hop > 1 { Note::Via(node) } else { Note::None };
                    self.relation(class, other, relation, hop, true, note);
                    if visited.insert(other) && visited.len() < VISIT_CAP {
                        next.push(other);
                    }
                }
            }
            frontier = next;
        }
        direct
    }
}

/// Retrieves the candidates of `intent` for `profile`. `spine_lines` bounds the source
/// lines a one-anchor spine may require (its steps are required evidence and must fit
/// the page: see `SpineBudget`).
pub fn retrieve(
    graph: &Graph,
    intent: &Intent,
    profile: ProfileName,
    spine_lines: SpineBudget,
) -> Retrieval {
    let mut builder = Builder {
        graph,
        named: intent.anchors.iter().map(|a| a.node).collect(),
        candidates: Vec::new(),
        seen: HashMap::new(),
        touched_files: BTreeSet::new(),
    };
    let mut spine = Vec::new();
    match profile {
        ProfileName::Symbol => symbol(&mut builder, intent),
        ProfileName::Flow => spine = flow(&mut builder, intent, spine_lines),
        ProfileName::Architecture => architecture(&mut builder, intent),
        ProfileName::Impact => impact(&mut builder, intent),
    }
    Retrieval {
        paths_traversed: builder.touched_files.len(),
        candidates: builder.candidates,
        spine,
    }
}

fn wants(intent: &Intent, relation: Relation) -> bool {
    intent.relations.is_empty() || intent.has_relation(relation)
}

fn symbol(b: &mut Builder, intent: &Intent) {
    for anchor in &intent.anchors {
        let node = anchor.node;
        b.declaration(node, anchor.describe());
        let kind = b.graph.kind(node);
        if matches!(kind, SymbolKind::File | SymbolKind::Module)
            || wants(intent, Relation::Contains)
        {
            for member in b.edges(node, Direction::Outgoing, EdgeKind::Contains) {
                b.relation(
                    EvidenceClass::Member,
                    member.to,
                    member.clone(),
                    1,
                    false,
                    Note::None,
                );
            }
        }
        if wants(intent, Relation::Callers) || intent.has_relation(Relation::Calls) {
            let callers = b.walk_calls(node, Direction::Incoming, MAX_HOPS, EvidenceClass::Caller);
            if callers == 0 && kind.is_callable() {
                let unresolved = b.frontier_candidates(node, 350);
                failure_for_callers(b, node, unresolved);
            }
        }
        if wants(intent, Relation::Callees) || intent.has_relation(Relation::Calls) {
            b.walk_calls(node, Direction::Outgoing, MAX_HOPS, EvidenceClass::Callee);
        }
        if wants(intent, Relation::Implements) {
            b.implementations(node);
            for relation in b.edges(node, Direction::Outgoing, EdgeKind::Implements) {
                b.relation(
                    EvidenceClass::Implementation,
                    relation.to,
                    relation,
                    1,
                    false,
                    Note::Text("implemented by the anchor"),
                );
            }
        }
        if wants(intent, Relation::References) {
            for relation in b.edges(node, Direction::Incoming, EdgeKind::References) {
                b.relation(
                    EvidenceClass::Reference,
                    relation.from,
                    relation,
                    1,
                    false,
                    Note::None,
                );
            }
        }
        if wants(intent, Relation::UsesType) {
            for relation in b.edges(node, Direction::Incoming, EdgeKind::UsesType) {
                b.relation(
                    EvidenceClass::TypeUse,
                    relation.from,
                    relation,
                    1,
                    false,
                    Note::None,
                );
            }
        }
    }
}

/// "Zero callers" and "callers unknown (frontier)" are different answers (R-RES-2).
fn failure_for_callers(b: &mut Builder, node: NodeId, unresolved: usize) {
    let label = b.label(node);
    if unresolved > 0 {
        b.statement(
            EvidenceClass::Failure,
            "callers-unknown",
            format!("{label} has no resolved callers; {unresolved} unresolved call site(s) share its name and could reach it (see frontier evidence)"),
            Some(node),
            true,
            50_000,
        );
    } else {
        b.statement(
            EvidenceClass::Failure,
            "no-callers",
            format!("{label} has zero callers: no call edge and no unresolved call site names it"),
            Some(node),
            true,
            50_000,
        );
    }
}

/// How much one point of a spine score moves an off-spine callee's evidence score (a
/// callee's relation score is about 1000; spine signals span about ±150 points).
const CALLEE_SIGNAL_WEIGHT: i64 = 3;
/// Implementations not taken listed per dispatched spine hop.
const DISPATCH_ALTERNATIVES: usize = 4;

fn flow(b: &mut Builder, intent: &Intent, budget: SpineBudget) -> Vec<NodeId> {
    let anchors: Vec<NodeId> = intent.anchors.iter().map(|a| a.node).collect();
    let Some(&first) = anchors.first() else {
        return Vec::new();
    };
    let mut spines = Spines::new(b.graph, anchors.iter().copied().collect(), budget);
    let hops = if let Some(&second) = anchors.get(1) {
        match spines.call_path(first, second, None) {
            Some(path) => path,
            None => {
                no_call_path(b, intent, first, second);
                return Vec::new();
            }
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
                id: String::new(),
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
                sites: Vec::new(),
                why: Some(hop.why.clone()),
                statement: None,
            },
            &label,
        );
    }
    let mut alternatives: Vec<(String, Vec<Hop>)> = Vec::new();
    if let Some(&second) = anchors.get(1) {
        // The best path avoiding each spine edge in turn.
        for window in spine.windows(2) {
            if alternatives.len() >= 3 {
                break;
            }
            if let Some(path) = spines.call_path(first, second, Some((window[0], window[1])))
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
                        String::new(),
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
    b.walk_calls(first, Direction::Incoming, 1, EvidenceClass::Caller);
    frontier_of_spine(b, &spine);
    spine
}

/// Two anchors without a call path between them: a failure that names the hop that broke
/// it — the unresolved call site named like the second anchor, reachable from the first,
/// and why it is unresolved — with that site as frontier evidence (R-RES-2, issue 11).
fn no_call_path(b: &mut Builder, intent: &Intent, first: NodeId, second: NodeId) {
    for anchor in &intent.anchors {
        b.declaration(anchor.node, anchor.describe());
    }
    let graph = b.graph;
    // What the first anchor reaches, and the unresolved calls named like the second.
    let mut reached = BTreeSet::from([first]);
    let mut queue = VecDeque::from([(first, 0usize)]);
    while let Some((node, depth)) = queue.pop_front() {
        if depth >= SPINE_MAX || reached.len() > VISIT_CAP {
            continue;
        }
        for e in graph.out_edges(node) {
            if e.kind == EdgeKind::Calls as u8 && reached.insert(e.node()) {
                queue.push_back((e.node(), depth + 1));
            }
        }
    }
    let name = graph.node(second).name();
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
                graph.str(name),
                graph.file_path(file),
                line + 1,
                b.label(from)
            )
        }
        None => format!(
            "no call path from {} to {target} within {SPINE_MAX} calls: none of the {} symbols it reaches calls `{}`, resolved or not",
            b.label(first),
            reached.len() - 1,
            graph.str(name)
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
    for (from, file, line, candidates) in broken.into_iter().take(4) {
        let identity = format!("frontier|{}|{}", graph.str(name), b.label(from));
        b.push(
            Candidate {
                id: String::new(),
                class: EvidenceClass::Frontier,
                score: 45_000,
                reasons: vec![format!(
                    "unresolved `{}` in {} could reach {target} ({candidates} candidates): the broken hop",
                    graph.str(name),
                    b.label(from)
                )],
                relation_reasons: None,
                required: true,
                node: Some(from),
                relation: None,
                slice: SliceTarget::Site(file, line),
                on_spine: false,
                named: false,
                sites: vec![(file, line)],
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
fn frontier_of_spine(b: &mut Builder, spine: &[NodeId]) {
    let graph = b.graph;
    let spine_set: BTreeSet<NodeId> = spine.iter().copied().collect();
    let mut boundaries: BTreeMap<(FileId, u32, String), (NodeId, &'static str)> = BTreeMap::new();
    for entry in graph.data().frontier.iter() {
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
                id: String::new(),
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
                sites: Vec::new(),
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

fn module_of(graph: &Graph, node: NodeId) -> NodeId {
    match graph.kind(node) {
        SymbolKind::Module => node,
        _ => graph.file_of(node).map_or(node, |f| f.module()),
    }
}

fn architecture(b: &mut Builder, intent: &Intent) {
    let graph = b.graph;
    let data = graph.data();
    // Modules in scope: the named ones (and their descendants), else every module.
    let mut scope: BTreeSet<NodeId> = BTreeSet::new();
    let mut named_modules: BTreeSet<NodeId> = BTreeSet::new();
    for anchor in &intent.anchors {
        let module = module_of(graph, anchor.node);
        named_modules.insert(module);
        if graph.kind(anchor.node) != SymbolKind::Module {
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
    for (index, file) in data.files.iter().enumerate() {
        files_per_module
            .entry(file.module())
            .or_default()
            .push(FileId(index as u32));
    }
    for &module in &scope {
        let files = files_per_module.get(&module).cloned().unwrap_or_default();
        if files.is_empty() && !named_modules.contains(&module) {
            continue;
        }
        let symbols: usize = files
            .iter()
            .map(|&f| {
                let node = data.files[f.index()].node();
                b.edges(node, Direction::Outgoing, EdgeKind::Contains).len()
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
                id: String::new(),
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
                sites: Vec::new(),
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
            .flat_map(|&f| {
                let node = data.files[f.index()].node();
                b.edges(node, Direction::Outgoing, EdgeKind::Contains)
                    .into_iter()
                    .map(|r| r.to)
            })
            .collect();
        symbols_in_module.sort_by_key(|&n| {
            (
                b.is_policy_class(n),
                graph.node(n).visibility != crate::syntax::facts::Visibility::Public as u8,
                std::cmp::Reverse(graph.node(n).centrality.to_native()),
                n,
            )
        });
        for (rank, &node) in symbols_in_module.iter().take(3).enumerate() {
            let centrality = graph.node(node).centrality.to_native();
            let mut score = (centrality / 4).min(20_000);
            if b.is_policy_class(node) {
                score /= 2;
            }
            let label = b.label(node);
            b.push(
                Candidate::declaration(
                    String::new(),
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
    for edge in data.module_edges.iter() {
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
                id: String::new(),
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
                sites: Vec::new(),
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

fn impact(b: &mut Builder, intent: &Intent) {
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
        let mut frontier = vec![node];
        let mut visited = BTreeSet::from([node]);
        let mut affected: BTreeSet<NodeId> = BTreeSet::new();
        let mut dependents = 0;
        for hop in 1..=IMPACT_HOPS {
            let mut next = Vec::new();
            for &current in &frontier {
                for kind in kinds {
                    if hop > 1 && kind == EdgeKind::Imports {
                        continue;
                    }
                    for relation in b.edges(current, Direction::Incoming, kind) {
                        let dependent = relation.from;
                        if visited.contains(&dependent) {
                            continue;
                        }
                        if hop == 1 {
                            dependents += 1;
                        }
                        let class = if hop == 1 {
                            EvidenceClass::Dependent
                        } else {
                            EvidenceClass::ReversePath
                        };
                        let note = if hop > 1 {
                            Note::Via(current)
                        } else {
                            Note::None
                        };
                        b.relation(class, dependent, relation, hop, false, note);
                        affected.insert(module_of(b.graph, dependent));
                        if visited.len() < VISIT_CAP {
                            visited.insert(dependent);
                            next.push(dependent);
                        }
                    }
                }
            }
            frontier = next;
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

/// Search hits for the query's free words as one candidate class (R-S-1).
pub fn add_search_hits(
    retrieval: &mut Retrieval,
    graph: &Graph,
    hits: &[crate::query::search::Hit],
) {
    let mut seen: std::collections::HashSet<String> =
        retrieval.candidates.iter().map(|c| c.id.clone()).collect();
    // An anchor, a spine step or an alternative chain's step is already shown.
    let shown: std::collections::HashSet<NodeId> = retrieval
        .candidates
        .iter()
        .filter(|c| {
            matches!(
                c.class,
                EvidenceClass::Declaration | EvidenceClass::Spine | EvidenceClass::Alternative
            )
        })
        .filter_map(|c| c.node)
        .collect();
    // Sections and commits are not graph evidence; the context compiler keeps symbols.
    for (hit, node) in hits
        .iter()
        .filter_map(|h| h.node.map(|n| (h, n)))
        .filter(|(_, n)| !shown.contains(n))
    {
        let label = graph.label(node);
        let id = evidence_id(EvidenceClass::SearchHit, &label);
        if !seen.insert(id.clone()) {
            continue;
        }
        let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| (r + 1).to_string());
        retrieval.candidates.push(Candidate::declaration(
            id,
            EvidenceClass::SearchHit,
            (hit.score * 20_000.0).round().min(65_535.0) as u16,
            node,
            format!(
                "search: bm25 rank {}, vector rank {}, graph rank {}, RRF {:.4}",
                rank(hit.ranks.bm25),
                rank(hit.ranks.vector),
                rank(hit.ranks.graph),
                hit.score
            ),
        ));
    }
}
