//! Stage one: retrieval (R-Q-4/5). From an intent to a candidate set in which every
//! candidate has a stable evidence id, a class, a u16 score with reasons and a required
//! flag. Nothing here reads source or knows about bytes.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rustc_hash::FxHashMap as HashMap;

use super::spine::{Hop, SPINE_MAX, SpineBudget, Spines};
use crate::graph::codes::FileClass;
use crate::graph::codes::{EdgeKind, EdgeSubkind, Provenance, Resolution};
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::{Direction, EdgeRef, Graph};
use crate::query::intent::{Anchor, Intent, Relation};
use crate::query::profile::EvidenceClass;
use crate::query::profile::ProfileName;
use crate::syntax::facts::SymbolKind;

mod architecture;
mod flow;

use architecture::{architecture, impact};
use flow::flow;

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

/// An evidence id as the builder keeps it: the first eight bytes of the blake3 hash of
/// `{class}\0{identity}`, whose sixteen hex digits its text spells (`Candidate::id`).
/// Most candidates are never shown, so their text is never made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IdHash(pub u64);

impl IdHash {
    /// The class and hash whose id (`Candidate::id`) is exactly `text`; `None` for any
    /// other text. A cursor is read once instead of every candidate's id being written.
    pub fn parse(text: &str) -> Option<(EvidenceClass, IdHash)> {
        // Class names may hold `-`; the sixteen hex digits never do.
        let (class, hex) = text.strip_prefix("ev-")?.rsplit_once('-')?;
        let lower_hex =
            hex.len() == 16 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !lower_hex {
            return None;
        }
        let hash = u64::from_str_radix(hex, 16).ok()?;
        Some((EvidenceClass::parse(class)?, IdHash(hash)))
    }
}

#[derive(Debug, Clone)]
pub struct Candidate {
    /// With `class`, the evidence id (`id`); equal within one entry only.
    pub id_hash: IdHash,
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
    /// several relations of the same symbol (a callee called from nine lines). A site
    /// reached twice is listed twice: projection shows each once, for the few
    /// candidates it shows (a hub's walk meets thousands).
    pub sites: Sites,
    /// Why a spine or alternative hop was taken (`reach 214, main path`).
    pub why: Option<String>,
}

/// A candidate's sites, two of them inline: most candidates have one, and a hub's walk
/// builds thousands (an allocation each, when they were a `Vec`).
pub type Sites = smallvec::SmallVec<[(FileId, u32); 2]>;

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
    /// The evidence id: `ev-{class}-{16 hex digits of its hash}`.
    pub fn id(&self) -> String {
        format!("ev-{}-{:016x}", self.class.as_str(), self.id_hash.0)
    }

    /// The order of `id`s, without their text: the class names, then the hashes. Equal
    /// to comparing the texts: the hex digits sort as the hash does, and the one class
    /// name that begins another (`module`, `module-relation`) is followed by a hex digit,
    /// which sorts before any letter after `-` (`ids_order_as_their_text`).
    pub fn id_order(&self) -> (&'static str, IdHash) {
        (self.class.as_str(), self.id_hash)
    }

    /// `id_order` as one integer: the class name's place among all class names, then
    /// the hash (`ids_order_as_their_id_order_key`).
    pub fn id_order_key(&self) -> u128 {
        (u128::from(class_name_place(self.class)) << 64) | u128::from(self.id_hash.0)
    }

    /// An optional symbol shown by its declaration, with one reason: what ranking
    /// sources (representatives, search hits) contribute.
    fn declaration(
        id_hash: IdHash,
        class: EvidenceClass,
        score: u16,
        node: NodeId,
        reason: String,
    ) -> Self {
        Candidate {
            id_hash,
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
            sites: Sites::new(),
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

/// The place of `class`'s name among all class names, in string order.
fn class_name_place(class: EvidenceClass) -> u8 {
    static PLACES: std::sync::LazyLock<[u8; EvidenceClass::ALL.len()]> =
        std::sync::LazyLock::new(|| {
            let mut places = [0; EvidenceClass::ALL.len()];
            for (place, class) in places.iter_mut().zip(EvidenceClass::ALL) {
                let before = EvidenceClass::ALL
                    .iter()
                    .filter(|other| other.as_str() < class.as_str())
                    .count();
                *place = before as u8;
            }
            places
        });
    // `ALL` is in declaration order (`profile::tests::every_class_is_in_all_at_its_own_index`).
    PLACES.get(class as usize).copied().unwrap_or(u8::MAX)
}

/// An evidence id as the builder's tables know it: its class and hash. Equal keys are
/// equal ids.
type EvidenceKey = (EvidenceClass, IdHash);

/// The hash of the evidence id of the identity `parts` joined; hashed in parts: a hub's
/// thousands of candidates each take one, so no intermediate string is built.
fn id_hash_of_parts(class: EvidenceClass, parts: &[&str]) -> IdHash {
    // blake3 of `{class}\0{identity}`. An identity that fits a small buffer is hashed in
    // one call, which skips the streaming `Hasher` (a hub's walk hashes thousands; 5%
    // faster in a loop over 2,400 labels).
    const SMALL: usize = 256;
    let class = class.as_str().as_bytes();
    let len = class.len() + 1 + parts.iter().map(|p| p.len()).sum::<usize>();
    let hash = if len <= SMALL {
        let mut buffer = [0u8; SMALL];
        let mut at = 0;
        for piece in [class, b"\0"]
            .into_iter()
            .chain(parts.iter().map(|p| p.as_bytes()))
        {
            buffer[at..at + piece.len()].copy_from_slice(piece);
            at += piece.len();
        }
        blake3::hash(&buffer[..at])
    } else {
        let mut hasher = blake3::Hasher::new();
        hasher.update(class);
        hasher.update(b"\0");
        for part in parts {
            hasher.update(part.as_bytes());
        }
        hasher.finalize()
    };
    let mut first = [0u8; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    IdHash(u64::from_be_bytes(first))
}

/// Whether `node` is of a test, generated or vendored file, or in a test scope.
fn is_policy_class(graph: &Graph, node: NodeId) -> bool {
    let record = graph.node(node);
    matches!(
        graph.file_class(record.file()),
        Some(FileClass::Test | FileClass::Generated | FileClass::Vendored)
    ) || record.flags & crate::graph::data::FLAG_TEST_SCOPE != 0
}

/// Centrality bonus: up to +150 for hubs (mean centrality is 1000).
fn bonus(graph: &Graph, node: NodeId) -> u32 {
    (graph.centrality(node) / 20).min(150)
}

struct Builder<'g> {
    graph: &'g Graph,
    named: BTreeSet<NodeId>,
    /// Files the query names by path: what they hold is named too (R-PROJ-6).
    named_files: rustc_hash::FxHashSet<FileId>,
    candidates: Vec<Candidate>,
    seen: HashMap<EvidenceKey, usize>,
    /// The entry each (class, symbol) went to: a symbol reached again (a hub's thousands
    /// of call sites) merges without building its label and evidence id again.
    by_symbol: HashMap<(EvidenceClass, NodeId), usize>,
    touched_files: rustc_hash::FxHashSet<FileId>,
    /// Each scored node's centrality bonus and policy class: a walk meets the same
    /// caller once per call site.
    node_terms: HashMap<NodeId, (u32, bool)>,
}

/// Where an edge's relation is written, when it is: (file, 0-based line).
fn site_of(edge: EdgeRef<'_>) -> Option<(FileId, u32)> {
    let file = edge.site_file();
    (!file.is_none()).then(|| (file, edge.site.start_line.to_native()))
}

pub(super) fn relation_of(from: NodeId, edge: EdgeRef<'_>, direction: Direction) -> RelationInfo {
    let other = edge.node();
    let (from, to) = if direction == Direction::Outgoing {
        (from, other)
    } else {
        (other, from)
    };
    RelationInfo {
        kind: EdgeKind::from_code(edge.kind).unwrap_or(EdgeKind::References),
        extends: EdgeSubkind::from_code(edge.subkind) == Some(EdgeSubkind::Extends),
        from,
        to,
        provenance: Provenance::from_code(edge.provenance).unwrap_or(Provenance::TreeSitter),
        resolution: Resolution::from_code(edge.resolution).unwrap_or(Resolution::UniqueName),
        confidence: edge.confidence,
        site: site_of(edge),
        flags: edge.flags,
        dispatch: false,
    }
}

impl<'g> Builder<'g> {
    fn label(&self, node: NodeId) -> String {
        self.graph.label(node)
    }

    fn relation_score(
        &mut self,
        node: NodeId,
        confidence: u8,
        hop: u32,
        decay_square: bool,
    ) -> (u16, u32, bool) {
        let (bonus, policy) = self.node_terms(node);
        (
            score_of(confidence, hop, decay_square, (bonus, policy)),
            bonus,
            policy,
        )
    }

    /// `node`'s centrality bonus and policy class, computed once per node.
    fn node_terms(&mut self, node: NodeId) -> (u32, bool) {
        let graph = self.graph;
        *self
            .node_terms
            .entry(node)
            .or_insert_with(|| (bonus(graph, node), is_policy_class(graph, node)))
    }

    /// Adds `candidate` as the evidence of `identity`; the same evidence reached again is
    /// merged into one entry. Returns the entry's index.
    fn push(&mut self, mut candidate: Candidate, identity: &str) -> usize {
        candidate.id_hash = id_hash_of_parts(candidate.class, &[identity]);
        self.merge(candidate)
    }

    /// `push` of a symbol's evidence, whose identity is the symbol's label.
    fn push_symbol(&mut self, candidate: Candidate, node: NodeId) {
        let entry = self.by_symbol.get(&(candidate.class, node)).copied();
        self.push_symbol_to(candidate, node, entry);
    }

    /// `push_symbol`, with the entry `(class, node)` went to already looked up.
    fn push_symbol_to(&mut self, mut candidate: Candidate, node: NodeId, entry: Option<usize>) {
        match entry {
            Some(index) => {
                self.merge_into(candidate, Some(index));
            }
            None => {
                let class = candidate.class;
                candidate.id_hash = id_hash_of_parts(class, &self.graph.label_parts(node));
                let index = self.merge(candidate);
                self.by_symbol.insert((class, node), index);
            }
        }
    }

    /// Adds `candidate` as a new entry, or merges it into the entry of the same id.
    fn merge(&mut self, candidate: Candidate) -> usize {
        // A new entry goes to the end (`merge_into`): its index is known before it is.
        let next = self.candidates.len();
        let existing = match self.seen.entry((candidate.class, candidate.id_hash)) {
            std::collections::hash_map::Entry::Occupied(entry) => Some(*entry.get()),
            std::collections::hash_map::Entry::Vacant(entry) => {
                entry.insert(next);
                None
            }
        };
        self.merge_into(candidate, existing)
    }

    /// Adds `candidate` as a new entry, or merges it into the entry at `existing` (the
    /// same evidence id).
    fn merge_into(&mut self, mut candidate: Candidate, existing: Option<usize>) -> usize {
        if let Some(node) = candidate.node {
            let file = self.graph.node(node).file();
            candidate.named |= self.named.contains(&node) || self.named_files.contains(&file);
            if !file.is_none() {
                self.touched_files.insert(file);
            }
        }
        match existing {
            Some(index) => {
                let existing = &mut self.candidates[index];
                // One entry per symbol and class: the same evidence reached again keeps
                // its strongest form and every site.
                // Repeated sites are dropped where they are shown (`project::distinct_sites`).
                let mut sites = std::mem::take(&mut existing.sites);
                sites.extend_from_slice(&candidate.sites);
                if (candidate.required, candidate.score) > (existing.required, existing.score) {
                    // The same id: a symbol met again (`by_symbol`) was not hashed again.
                    candidate.id_hash = existing.id_hash;
                    *existing = candidate;
                }
                existing.sites = sites;
                index
            }
            None => {
                self.candidates.push(candidate);
                self.candidates.len() - 1
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
        self.push_symbol(
            Candidate {
                id_hash: IdHash::default(),
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
                sites: Sites::new(),
                why: None,
                statement: None,
            },
            node,
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
        // A symbol met again that this relation does not outscore only gains the site:
        // what `merge` would do, without building the candidate it would drop.
        let entry = self.by_symbol.get(&(class, node)).copied();
        if let Some(index) = entry
            && self.joins_at(index, score, relation.site)
        {
            return;
        }
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
        let sites: Sites = relation.site.into_iter().collect();
        // One entry per (class, symbol): its relations' sites are gathered on it.
        self.push_symbol_to(
            Candidate {
                id_hash: IdHash::default(),
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
            node,
            entry,
        );
    }

    /// A walk's edge from `from` to `node` at `hop`, as `relation` (unadjusted, squared
    /// decay) takes it, and the entry it went to (always one).
    fn walk_edge(
        &mut self,
        class: EvidenceClass,
        (from, direction): (NodeId, Direction),
        node: NodeId,
        edge: EdgeRef<'_>,
        hop: u32,
    ) -> Option<Met> {
        let terms = self.node_terms(node);
        if let Some(&index) = self.by_symbol.get(&(class, node)) {
            let met = Met { node, index, terms };
            self.walk_edge_again(class, (from, direction), met, edge, hop);
            return Some(met);
        }
        self.walk_relation(class, (from, direction), node, edge, hop);
        // `relation` leaves every (class, symbol) it takes with an entry.
        let index = *self.by_symbol.get(&(class, node))?;
        Some(Met { node, index, terms })
    }

    /// A walk's edge to a symbol with an entry (`met`, its entry and score terms). Most
    /// edges of a hub's walk reach a symbol already met with a score at least as good:
    /// only the site joins its entry, and no relation is built.
    fn walk_edge_again(
        &mut self,
        class: EvidenceClass,
        (from, direction): (NodeId, Direction),
        met: Met,
        edge: EdgeRef<'_>,
        hop: u32,
    ) {
        let score = score_of(edge.confidence, hop, true, met.terms).max(1);
        if !self.joins_at(met.index, score, site_of(edge)) {
            self.walk_relation(class, (from, direction), met.node, edge, hop);
        }
    }

    /// The relation a walk's edge from `from` to `node` at `hop` is, taken as evidence.
    fn walk_relation(
        &mut self,
        class: EvidenceClass,
        (from, direction): (NodeId, Direction),
        node: NodeId,
        edge: EdgeRef<'_>,
        hop: u32,
    ) {
        let relation = relation_of(from, edge, direction);
        let note = if hop > 1 { Note::Via(from) } else { Note::None };
        self.relation(class, node, relation, hop, true, note);
    }

    /// When entry `index` scores `score` or more, `site` joins it (what merging a
    /// relation that does not outscore it would do); false, with nothing done, otherwise.
    fn joins_at(&mut self, index: usize, score: u16, site: Option<(FileId, u32)>) -> bool {
        let existing = &mut self.candidates[index];
        if (false, score) > (existing.required, existing.score) {
            return false;
        }
        existing.sites.extend(site);
        true
    }

    /// Records why a hop was taken on the entry of `(class, node)`.
    fn set_why(&mut self, class: EvidenceClass, node: NodeId, why: String) {
        let index = match self.by_symbol.get(&(class, node)) {
            Some(&index) => Some(index),
            None => {
                let key = (
                    class,
                    id_hash_of_parts(class, &self.graph.label_parts(node)),
                );
                self.seen.get(&key).copied()
            }
        };
        if let Some(index) = index {
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
                id_hash: IdHash::default(),
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
                sites: Sites::new(),
                why: None,
                statement: Some(Statement { code, text }),
            },
            &identity,
        );
    }

    /// `node`'s relations of `kind` in `direction`, read from the map as they are taken:
    /// the iterator borrows the graph, not the builder, which takes each in turn (an
    /// impact walk reads thousands of nodes' edges, most of them never kept).
    fn edges(
        &self,
        node: NodeId,
        direction: Direction,
        kind: EdgeKind,
    ) -> impl Iterator<Item = RelationInfo> + use<'g> {
        let graph: &'g Graph = self.graph;
        graph
            .edges(node, direction)
            .filter(move |e| e.kind == kind as u8)
            .map(move |e| relation_of(node, e, direction))
    }

    /// Frontier entries named like `node` that could reach it.
    fn frontier_reaching(&self, node: NodeId) -> Vec<(NodeId, FileId, u32, u32)> {
        self.frontier_reaching_named(self.graph.str(self.graph.node(node).name()))
    }

    /// Unresolved call or reference sites named `name`, with at least one definition of
    /// that name: `(from, file, 0-based line, candidates)`.
    fn frontier_reaching_named(&self, name: &str) -> Vec<(NodeId, FileId, u32, u32)> {
        self.graph
            .frontier_named(name)
            .into_iter()
            .filter_map(|i| self.graph.frontier(i))
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
                    id_hash: IdHash::default(),
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
                    sites: smallvec::smallvec![(*file, *line)],
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
            // By text: an implementor in another segment interns the name apart.
            let name = graph.str(graph.node(node).name());
            if !parent.is_none() {
                for relation in self.edges(parent, Direction::Incoming, EdgeKind::Implements) {
                    let implementor = relation.from;
                    for member in self.edges(implementor, Direction::Outgoing, EdgeKind::Contains) {
                        if graph.str(graph.node(member.to).name()) == name {
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
            let class = EvidenceClass::Implementation;
            let key = (
                class,
                id_hash_of_parts(class, &self.graph.label_parts(*implementor)),
            );
            if let Some(last) = self.seen.get(&key).map(|&i| &mut self.candidates[i]) {
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
        let mut visited: rustc_hash::FxHashSet<NodeId> = [anchor].into_iter().collect();
        let mut direct = 0;
        // The hop at which the visit cap first stopped the walk (reported, never silent).
        let mut capped_at = None;
        for hop in 1..=hops {
            let mut next = Vec::new();
            let graph = self.graph;
            for &node in &frontier {
                // A node's edges come grouped by their other end (graph-schema: sorted by
                // (node, other end, kind, site)): a caller's many call sites of a hub
                // follow each other, and after the first they join its entry directly.
                let mut last: Option<Met> = None;
                // The edges straight from the map: no list of them is built per node.
                for edge in graph
                    .edges(node, direction)
                    .iter()
                    .filter(|e| e.kind == EdgeKind::Calls as u8)
                {
                    let other = edge.node();
                    if hop == 1 {
                        direct += 1;
                    }
                    if let Some(met) = last.filter(|met| met.node == other) {
                        // Visited with the edge before.
                        self.walk_edge_again(class, (node, direction), met, edge, hop);
                        continue;
                    }
                    last = self.walk_edge(class, (node, direction), other, edge, hop);
                    if visited.insert(other) {
                        if visited.len() < VISIT_CAP {
                            next.push(other);
                        } else if capped_at.is_none() {
                            capped_at = Some(hop);
                        }
                    }
                }
            }
            frontier = next;
        }
        if let Some(hop) = capped_at {
            self.walk_capped(anchor, hop);
        }
        direct
    }

    /// Says that a walk from `anchor` met the visit cap at `hop`: what lies beyond the
    /// nodes it visited is not in the answer.
    fn walk_capped(&mut self, anchor: NodeId, hop: u32) {
        let label = self.label(anchor);
        self.statement(
            EvidenceClass::Failure,
            "walk-capped",
            format!(
                "the walk from {label} visited {VISIT_CAP} nodes at hop {hop} and followed no more: what lies further than the nodes listed is not counted"
            ),
            Some(anchor),
            true,
            40_000,
        );
    }
}

/// A walk's last edge's other end, the entry that edge went to, and the end's score
/// terms (`Builder::walk_edge`).
#[derive(Clone, Copy)]
struct Met {
    node: NodeId,
    index: usize,
    terms: (u32, bool),
}

/// A relation's score: its confidence decayed by the hop (squared for walks), plus the
/// symbol's centrality bonus, halved for a test, generated or vendored symbol.
fn score_of(confidence: u8, hop: u32, decay_square: bool, (bonus, policy): (u32, bool)) -> u16 {
    let divisor = if decay_square { hop * hop } else { hop };
    let mut score = u32::from(confidence) * 10 / divisor.max(1) + bonus;
    if policy {
        score /= 2;
    }
    score.min(u16::MAX as u32) as u16
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
        named_files: intent
            .anchors
            .iter()
            .filter(|a| graph.kind(a.node) == SymbolKind::File)
            .map(|a| graph.node(a.node).file())
            .collect(),
        candidates: Vec::new(),
        seen: HashMap::default(),
        by_symbol: HashMap::default(),
        touched_files: Default::default(),
        node_terms: HashMap::default(),
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

/// What `retrieve` reads of an intent: two intents equal in these have one retrieval.
pub fn inputs_of(intent: &Intent) -> (&[Anchor], &[Relation], Option<&Anchor>) {
    (
        &intent.anchors,
        &intent.relations,
        intent.alternative.as_ref(),
    )
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

/// Search hits for the query's free words as one candidate class (R-S-1).
pub fn add_search_hits(
    retrieval: &mut Retrieval,
    graph: &Graph,
    hits: &[crate::query::search::Hit],
) {
    // Borrowed ids: a hub has thousands of candidates, and most queries few hits.
    let existing: rustc_hash::FxHashSet<EvidenceKey> = retrieval
        .candidates
        .iter()
        .map(|c| (c.class, c.id_hash))
        .collect();
    let mut added: Vec<Candidate> = Vec::new();
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
        let class = EvidenceClass::SearchHit;
        let id_hash = id_hash_of_parts(class, &graph.label_parts(node));
        if existing.contains(&(class, id_hash)) || added.iter().any(|c| c.id_hash == id_hash) {
            continue;
        }
        let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| (r + 1).to_string());
        // Jev's evaluation, when the judge ran: it ordered these hits (R-J-6).
        let judged = hit.relevance.map_or(String::new(), |j| {
            format!(
                ", jev {:.2} (confidence {:.2}{})",
                j.score,
                j.confidence,
                if j.uncertain { ", uncertain" } else { "" }
            )
        });
        // The propagation arm's reason, when it found the hit: the seed and the edge.
        let via = hit.via.as_ref().map_or(String::new(), |via| {
            format!(", propagate rank {} ({via})", rank(hit.ranks.propagate))
        });
        added.push(Candidate::declaration(
            id_hash,
            class,
            (hit.score * 20_000.0).round().min(65_535.0) as u16,
            node,
            format!(
                "search: bm25 rank {}, vector rank {}, graph rank {}, RRF {:.4}{via}{judged}",
                rank(hit.ranks.bm25),
                rank(hit.ranks.vector),
                rank(hit.ranks.graph),
                hit.score
            ),
        ));
    }
    retrieval.candidates.extend(added);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(class: EvidenceClass, id_hash: IdHash) -> Candidate {
        Candidate::declaration(id_hash, class, 1, NodeId(0), String::new())
    }

    #[test]
    fn an_id_spells_the_first_sixteen_hex_digits_of_its_blake3_hash() {
        let class = EvidenceClass::Caller;
        let parts = ["sympy/core/numbers.py", "::", "Rational.__new__"];
        let text = format!("caller\0{}", parts.concat());
        let hex = blake3::hash(text.as_bytes()).to_hex();
        let id = candidate(class, id_hash_of_parts(class, &parts)).id();
        assert_eq!(id, format!("ev-caller-{}", &hex[..16]));
        // Hashed in parts or whole, the identity is the same.
        assert_eq!(
            id_hash_of_parts(class, &parts),
            id_hash_of_parts(class, &[&parts.concat()])
        );
        // Short identities are hashed from a buffer, long ones streamed: the same hash on
        // either side of the line (`caller\0` + 246 + `::f` is 256 bytes).
        for len in [240, 246, 247, 400, 5_000] {
            let path = "p".repeat(len);
            let parts = [path.as_str(), "::", "f"];
            let text = format!("caller\0{}", parts.concat());
            let hex = blake3::hash(text.as_bytes()).to_hex();
            let id = candidate(class, id_hash_of_parts(class, &parts)).id();
            assert_eq!(id, format!("ev-caller-{}", &hex[..16]), "{len}");
        }
    }

    #[test]
    fn an_id_parses_back_to_its_class_and_hash_and_nothing_else_does() {
        for class in EvidenceClass::ALL {
            for hash in [0u64, 0xabc, u64::MAX] {
                let id = candidate(class, IdHash(hash)).id();
                assert_eq!(IdHash::parse(&id), Some((class, IdHash(hash))), "{id}");
            }
        }
        for text in [
            "START",
            "ev-caller-00000000000000ab-",
            "ev-caller-00000000000000AB",
            "ev-caller-0000000000000ab",
            "ev-nothing-00000000000000ab",
            "caller-00000000000000ab",
        ] {
            assert_eq!(IdHash::parse(text), None, "{text}");
        }
    }

    /// A candidate of every class with each of `hashes`.
    fn of_every_class(hashes: &[IdHash]) -> Vec<Candidate> {
        EvidenceClass::ALL
            .into_iter()
            .flat_map(|class| hashes.iter().map(move |&h| candidate(class, h)))
            .collect()
    }

    #[test]
    fn ids_order_as_their_text() {
        let hashes: Vec<IdHash> = [0u64, 1, 0x0f, 0x1000_0000_0000_0000, u64::MAX]
            .into_iter()
            .map(IdHash)
            .chain(
                (0..24)
                    .map(|i| id_hash_of_parts(EvidenceClass::Member, &[&format!("identity {i}")])),
            )
            .collect();
        let all = of_every_class(&hashes);
        for a in &all {
            for b in &all {
                assert_eq!(
                    a.id_order().cmp(&b.id_order()),
                    a.id().cmp(&b.id()),
                    "{} against {}",
                    a.id(),
                    b.id()
                );
            }
        }
    }

    #[test]
    fn ids_order_as_their_id_order_key() {
        let hashes = [0u64, 1, 0x0f, 0x1000_0000_0000_0000, u64::MAX - 1, u64::MAX].map(IdHash);
        let all = of_every_class(&hashes);
        for a in &all {
            for b in &all {
                assert_eq!(
                    a.id_order_key().cmp(&b.id_order_key()),
                    a.id_order().cmp(&b.id_order()),
                    "{} against {}",
                    a.id(),
                    b.id()
                );
            }
        }
    }
}
