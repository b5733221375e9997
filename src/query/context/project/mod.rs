//! Stage two: projection (R-PROJ-1..6, R-OMIT-1). Relevance gate → priority plan →
//! hash-verified line slices → byte pruning → evidence + omission manifest.
//!
//! Architecture invariant: required evidence is never dropped — if it cannot fit, the
//! result is a typed error, never a partial success (R-PROJ-3). The byte limit is a
//! ceiling, not a target: nothing below the relevance threshold is added to fill it.

use std::path::Path;

use serde::Serialize;

use super::retrieve::{Candidate, IdHash, RelationInfo, SliceTarget};
use super::{ArgvChange, ContextRequest};
use crate::error::AtlasError;
use crate::graph::codes::FileClass;
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::Graph;
use crate::query::profile::EvidenceClass;
use crate::syntax::facts::SymbolKind;

mod output;
mod sources;

use sources::Sources;
pub use sources::{KEPT_BYTES, keep_verified_sources};

pub use output::{
    Choice, Diagnostic, DiagnosticCode, EvidenceItem, Omission, OmissionReason, RelationOut,
    SiteOut, SourceOut, StatementOut, TopCandidate,
};

#[derive(Debug, Clone, Serialize)]
pub struct Limits {
    pub retrieval_cap: usize,
    pub max_paths: usize,
    pub max_slices: usize,
    pub lines_per_slice: u32,
    pub max_bytes: usize,
    pub min_score: u16,
    /// The top of a score band (`--max-score`), absent unless set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_score: Option<u16>,
    /// Limits set by flags rather than the profile.
    pub overridden: Vec<&'static str>,
}

/// Sites listed on one evidence entry; `site_count` gives the rest.
pub const MAX_SITES: usize = 8;

/// Per-reason counters for the receipt.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub total: usize,
    pub cursor_prefix: usize,
    pub returned: usize,
    pub above_relevance: usize,
    pub below_threshold: usize,
    pub byte_omitted: usize,
    pub item_capped: usize,
    pub skeletonized: usize,
    pub policy_skeletonized: usize,
    pub source_unavailable: usize,
    pub slices_read: usize,
    pub read_back_required: bool,
}

/// An omitted candidate by its position in the total order (its id is the candidate's:
/// a hub omits thousands, none of which is copied).
struct Omitted {
    position: usize,
    class: EvidenceClass,
    reason: OmissionReason,
    symbol: OmittedSymbol,
    score: u16,
}

/// An omitted candidate's symbol: a node is labelled only if it tops its group (most
/// omitted candidates never do, and a hub omits thousands).
enum OmittedSymbol {
    Node(Option<NodeId>),
    Label(Option<String>),
}

pub struct Projection<'c> {
    pub evidence: Vec<EvidenceItem>,
    pub diagnostics: Vec<Diagnostic>,
    pub counters: Counters,
    omitted: Vec<Omitted>,
    /// The candidates in total order (their ids name continuation cursors).
    candidates: &'c [Candidate],
    /// Position (in the total order) of each retained item, parallel to `evidence`.
    positions: Vec<usize>,
    /// The position of this page's first candidate (none: the page is empty).
    top: Option<usize>,
    /// The bytes for evidence this page had, and the position of the candidate that ended
    /// it with the bytes it needs at the top of a page (when bytes ended it; for one cut
    /// before its source was read, its skeleton's: a lower bound).
    budget: usize,
    page_end_needs: Option<(usize, usize)>,
    /// The bytes of this page without its evidence, once measured (`settle_frame`).
    frame: Option<usize>,
    /// Parallel to `evidence`: what each item needs at the top of a page.
    sizes_at_top: Vec<usize>,
    required_positions: Vec<bool>,
}

/// What the projector needs besides candidates.
#[derive(Clone, Copy)]
pub struct ProjectInput<'a> {
    pub graph: &'a Graph,
    pub code_root: &'a Path,
    pub limits: &'a Limits,
    pub class_rank: &'a dyn Fn(EvidenceClass) -> usize,
    pub after: Option<&'a str>,
}

/// The total order of R-Q-4: required first, class rank, score descending, evidence id.
pub fn order(candidates: &mut [Candidate], class_rank: &dyn Fn(EvidenceClass) -> usize) {
    // Each candidate's key is taken once (a hub has thousands: the class rank is a call
    // through the profile), the id's order included (`Candidate::id_order_key`), so
    // sorting never reaches back into the candidates. The sort is stable and permutes in
    // place: a hub's candidates are not moved through a second list.
    candidates.sort_by_cached_key(|c| order_key(c, class_rank(c.class)));
}

/// `(!required, class rank, score descending, id_order)` packed in one integer, which
/// compares as that tuple does (`tests::the_order_key_orders_as_its_parts`) without
/// comparing class names.
fn order_key(c: &Candidate, class_rank: usize) -> u128 {
    // 1 + 16 + 16 bits above the id's 72 (`id_order_key`); a rank is at most the number
    // of classes.
    let head = (u128::from(!c.required) << 32)
        | ((class_rank.min(u16::MAX as usize) as u128) << 16)
        | u128::from(u16::MAX - c.score);
    (head << 72) | c.id_order_key()
}

/// Lines `first..=last` (0-based) of `text`, whose line starts are `starts`.
fn lines_of(text: &str, starts: &[usize], first: u32, last: u32) -> String {
    let Some(&start) = starts.get(first as usize) else {
        return String::new();
    };
    text[start..]
        .lines()
        .take((last.saturating_sub(first) + 1) as usize)
        .collect::<Vec<_>>()
        .join("\n")
}

fn relation_out(graph: &Graph, r: &RelationInfo) -> RelationOut {
    RelationOut {
        kind: r.kind.as_str(),
        subkind: r.extends.then_some("extends"),
        from: graph.label(r.from),
        to: graph.label(r.to),
        provenance: r.provenance.as_str(),
        resolution: r.resolution.as_str(),
        confidence: r.confidence,
        site: r.site.map(|(file, line)| SiteOut {
            path: graph.file_path(file).to_string(),
            line: line + 1,
        }),
        dispatch: r.dispatch,
    }
}

fn file_of_candidate(graph: &Graph, c: &Candidate) -> Option<FileId> {
    match c.slice {
        SliceTarget::Site(file, _) => Some(file),
        SliceTarget::Declaration(node) => Some(graph.node(node).file()).filter(|f| !f.is_none()),
        SliceTarget::None => c
            .node
            .map(|n| graph.node(n).file())
            .filter(|f| !f.is_none()),
    }
}

/// A candidate's sites, each once, by path then line (file ids are in path order,
/// `Graph::file_index`).
fn distinct_sites(sites: &[(FileId, u32)]) -> Vec<(FileId, u32)> {
    if sites.len() < 2 {
        return sites.to_vec();
    }
    let mut sites = sites.to_vec();
    sites.sort_unstable();
    sites.dedup();
    sites
}

/// The graph-only skeleton of a candidate (no source text).
fn skeleton(graph: &Graph, c: &Candidate) -> EvidenceItem {
    let sites = distinct_sites(&c.sites);
    let node_info = c
        .node
        .filter(|_| c.statement.is_none() || c.class == EvidenceClass::RuntimeBoundary)
        .map(|n| {
            let record = graph.node(n);
            let kind = graph.kind(n);
            let symbolic = !matches!(kind, SymbolKind::Module | SymbolKind::File);
            (
                graph.label(n),
                kind.as_str(),
                (!record.file().is_none()).then(|| graph.file_path(record.file()).to_string()),
                symbolic.then(|| {
                    [
                        record.span.start_line.to_native() + 1,
                        record.span.end_line.to_native() + 1,
                    ]
                }),
            )
        });
    let (symbol, kind, path, lines) = match node_info {
        Some((s, k, p, l)) => (Some(s), Some(k), p, l),
        None => (None, None, None, None),
    };
    EvidenceItem {
        id: c.id(),
        class: c.class,
        score: c.score,
        required: c.required,
        reasons: c.reasons(graph),
        symbol,
        kind,
        path,
        lines,
        relation: c.relation.as_ref().map(|r| relation_out(graph, r)),
        why: c.why.clone(),
        sites: if sites.len() > 1 {
            sites
                .iter()
                .take(MAX_SITES)
                .map(|&(file, line)| SiteOut {
                    path: graph.file_path(file).to_string(),
                    line: line + 1,
                })
                .collect()
        } else {
            Vec::new()
        },
        site_count: (sites.len() > 1).then_some(sites.len()),
        statement: c.statement.as_ref().map(|s| StatementOut {
            code: s.code,
            text: s.text.clone(),
        }),
        signature: None,
        source: None,
        projection: "graph",
        diagnostics: Vec::new(),
    }
}

fn item_bytes(item: &EvidenceItem) -> usize {
    json_len(item) + 1
}

/// The length of `value` as compact JSON, counted without building the text.
pub(super) fn json_len(value: &impl Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Percent of the evidence budget optional sibling bodies may fill; past it they are
/// signature skeletons (R-PROJ-4), so more of the ranked siblings stay on the page.
const SIBLING_BODY_SHARE: usize = 60;

/// Classes whose optional, off-spine bodies may be reduced to signatures (R-PROJ-4) —
/// only while the page keeps some implementation in full. A `representative`
/// (architecture) is such an implementation itself: never a skeleton.
fn sibling_class(class: EvidenceClass) -> bool {
    matches!(
        class,
        EvidenceClass::Caller
            | EvidenceClass::Callee
            | EvidenceClass::Member
            | EvidenceClass::Implementation
            | EvidenceClass::Reference
            | EvidenceClass::TypeUse
            | EvidenceClass::Alternative
            | EvidenceClass::Dependent
            | EvidenceClass::ReversePath
    )
}

/// Where a page starts in the total order: after the cursor's id (R-OMIT-2).
pub fn cursor_start(candidates: &[Candidate], after: Option<&str>) -> Result<usize, AtlasError> {
    match after {
        None | Some("START") => Ok(0),
        Some(id) => IdHash::parse(id)
            .and_then(|key| candidates.iter().position(|c| (c.class, c.id_hash) == key))
            .map(|position| position + 1)
            .ok_or_else(|| AtlasError::ContextCursor { id: id.to_string() }),
    }
}

pub fn project<'c>(
    input: &ProjectInput,
    candidates: &'c [Candidate],
    budget_for_evidence: usize,
) -> Result<Projection<'c>, AtlasError> {
    let graph = input.graph;
    let limits = input.limits;
    let mut counters = Counters {
        total: candidates.len(),
        ..Counters::default()
    };
    let start = cursor_start(candidates, input.after)?;
    let mut omitted = Vec::new();
    let omit =
        |position: usize, c: &Candidate, reason: OmissionReason, omitted: &mut Vec<Omitted>| {
            omitted.push(Omitted {
                position,
                class: c.class,
                reason,
                symbol: OmittedSymbol::Node(c.node),
                score: c.score,
            });
        };

    // A band page (`--max-score`) leaves optional candidates above its band to the earlier
    // page that showed or listed them: they count with the cursor's prefix.
    let above_band = |c: &Candidate| !c.required && limits.max_score.is_some_and(|m| c.score > m);
    let eligible: Vec<usize> = (start..candidates.len())
        .filter(|&position| !above_band(&candidates[position]))
        .collect();
    counters.cursor_prefix = candidates.len() - eligible.len();
    // Retrieval cap (retrieval loss), applied after the cursor.
    let returned_len = eligible.len().min(limits.retrieval_cap);
    counters.returned = returned_len;
    for &position in &eligible[returned_len..] {
        let c = &candidates[position];
        if c.required {
            return Err(AtlasError::ContextRequiredCandidateCap {
                cap: limits.retrieval_cap,
                id: c.id(),
            });
        }
        omit(position, c, OmissionReason::RetrievalCap, &mut omitted);
    }

    let mut sources = Sources::new(graph, input.code_root);
    let mut evidence = Vec::new();
    let mut positions = Vec::new();
    let mut required_positions = Vec::new();
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut paths: Vec<FileId> = Vec::new();
    let mut used = 0usize;
    let mut stale_reported: Vec<FileId> = Vec::new();
    // Whether some body is kept in full: only then may siblings become skeletons.
    let mut full_kept = false;
    // What earlier pages showed is omitted here, with the argv that shows it again.
    for (position, c) in candidates.iter().enumerate() {
        if position < start || above_band(c) {
            omit(position, c, OmissionReason::AfterCursor, &mut omitted);
        }
    }
    // A page is a contiguous run of the total order: the first optional candidate it
    // cannot hold (bytes or an item cap) ends it, and every later one above the relevance
    // gate is omitted for the same reason. Its continuation, resuming after the candidate
    // before that one, then repeats nothing this page showed.
    let mut page_end: Option<OmissionReason> = None;
    // The bytes the candidate that ended the page needs at the top of a page.
    let mut page_end_needs: Option<(usize, usize)> = None;
    // Parallel to `evidence`: what each kept item needs at the top of a page.
    let mut sizes_at_top: Vec<usize> = Vec::new();

    for &position in &eligible[..returned_len] {
        let c = &candidates[position];
        // Relevance gate, before any byte consideration.
        if !c.required && c.score < limits.min_score {
            counters.below_threshold += 1;
            omit(position, c, OmissionReason::BelowRelevance, &mut omitted);
            continue;
        }
        counters.above_relevance += 1;
        if let Some(reason) = page_end.filter(|_| !c.required) {
            match reason {
                OmissionReason::ItemCap => counters.item_capped += 1,
                _ => counters.byte_omitted += 1,
            }
            omit(position, c, reason, &mut omitted);
            continue;
        }
        let file = file_of_candidate(graph, c);
        if let Some(file) = file
            && !paths.contains(&file)
            && paths.len() >= limits.max_paths
        {
            if c.required {
                return Err(AtlasError::ContextRequiredSourceCap {
                    limit: "max_paths",
                    value: limits.max_paths,
                    id: c.id(),
                });
            }
            counters.item_capped += 1;
            omit(position, c, OmissionReason::ItemCap, &mut omitted);
            page_end = Some(OmissionReason::ItemCap);
            continue;
        }
        let mut item = skeleton(graph, c);
        let skeleton_able = !c.required && !c.on_spine && sibling_class(c.class) && full_kept;
        let mut wants_source = c.slice != SliceTarget::None;
        if wants_source && counters.slices_read >= limits.max_slices {
            if c.required {
                return Err(AtlasError::ContextRequiredSourceCap {
                    limit: "max_slices",
                    value: limits.max_slices,
                    id: c.id(),
                });
            }
            if !skeleton_able {
                counters.item_capped += 1;
                omit(position, c, OmissionReason::ItemCap, &mut omitted);
                page_end = Some(OmissionReason::ItemCap);
                continue;
            }
            // Out of slices: a sibling keeps its graph skeleton, read from no source.
            wants_source = false;
            item.projection = "skeleton";
            counters.skeletonized += 1;
        }
        // Nothing smaller than the graph skeleton can be kept: when even that does not
        // fit, the source is not read (a full page's tail costs no file reads).
        if !c.required && used + item_bytes(&item) > budget_for_evidence {
            if item.projection == "skeleton" {
                counters.skeletonized -= 1;
            }
            counters.byte_omitted += 1;
            omit(position, c, OmissionReason::ByteCeiling, &mut omitted);
            page_end = Some(OmissionReason::ByteCeiling);
            page_end_needs = Some((position, item_bytes(&item)));
            continue;
        }
        let mut full_item: Option<EvidenceItem> = None;
        if let (true, Some(file)) = (wants_source, file) {
            let source = sources.get(file);
            if source.stale {
                item.projection = "stale-skeleton";
                item.diagnostics.push(DiagnosticCode::StaleSource);
                counters.read_back_required = true;
                counters.source_unavailable += 1;
                if !stale_reported.contains(&file) {
                    stale_reported.push(file);
                    diagnostics.push(Diagnostic {
                        code: DiagnosticCode::StaleSource,
                        message: "file changed since the graph was built; evidence keeps its graph skeleton without text — read it back".into(),
                        path: Some(graph.file_path(file).to_string()),
                        candidates: Vec::new(),
                    });
                }
                omit(position, c, OmissionReason::SourceUnavailable, &mut omitted);
            } else if let Some(body) = &source.text {
                let text = body.text.as_str();
                let policy_class = matches!(
                    source.class,
                    Some(FileClass::Test | FileClass::Generated | FileClass::Vendored)
                ) || c.node.is_some_and(|n| {
                    graph.node(n).flags & crate::graph::data::FLAG_TEST_SCOPE != 0
                });
                let admitted = !policy_class || c.named || c.on_spine;
                let (first, last, signature) = match c.slice {
                    SliceTarget::Declaration(node) => {
                        let record = graph.node(node);
                        let signature = text
                            .get(
                                record.signature.start_byte.to_native() as usize
                                    ..record.signature.end_byte.to_native() as usize,
                            )
                            .map(str::to_string);
                        (
                            record.span.start_line.to_native(),
                            record.span.end_line.to_native(),
                            signature,
                        )
                    }
                    SliceTarget::Site(_, line) => (line.saturating_sub(2), line + 2, None),
                    SliceTarget::None => (0, 0, None),
                };
                // Never past the file's last line (a site near the end of a short file).
                let last = last.min(body.last_line);
                let first = first.min(last);
                let clipped_last = last.min(first + limits.lines_per_slice.saturating_sub(1));
                item.signature = signature.clone();
                if admitted {
                    counters.slices_read += 1;
                    let mut full = item.clone();
                    full.projection = "full";
                    full.source = Some(SourceOut {
                        lines: [first + 1, clipped_last + 1],
                        text: lines_of(text, &body.starts, first, clipped_last),
                        clipped: clipped_last < last,
                    });
                    full_item = Some(full);
                    item.projection = "skeleton";
                } else {
                    item.projection = "policy-skeleton";
                    counters.policy_skeletonized += 1;
                    omit(position, c, OmissionReason::Policy, &mut omitted);
                }
            }
        }
        // Byte ceiling: the full body if it fits, else a sibling skeleton, else omit. An
        // optional sibling body may use only the first part of the page, so the rest holds
        // the signatures of the siblings ranked after it instead of one more body.
        let full_ceiling = if skeleton_able {
            budget_for_evidence / 100 * SIBLING_BODY_SHARE
        } else {
            budget_for_evidence
        };
        // The chosen form and its size, measured once, and the size it needs at the top
        // of a page, where no sibling body is kept yet.
        let (chosen, size, at_top) = match full_item {
            Some(full) => {
                let size = item_bytes(&full);
                // Required evidence is kept whole; the page's measured length decides
                // whether it fits (an estimate here could refuse what fits).
                if used + size <= full_ceiling || c.required {
                    (full, size, size)
                } else if let Some(skeleton) = skeleton_able
                    .then(|| item_bytes(&item))
                    .filter(|skeleton| used + skeleton <= budget_for_evidence)
                {
                    counters.skeletonized += 1;
                    counters.slices_read -= 1;
                    (item, skeleton, size)
                } else {
                    counters.slices_read -= 1;
                    counters.byte_omitted += 1;
                    omit(position, c, OmissionReason::ByteCeiling, &mut omitted);
                    page_end = Some(OmissionReason::ByteCeiling);
                    // At the top of a page no sibling body is kept yet: it needs its body.
                    page_end_needs = Some((position, size));
                    continue;
                }
            }
            None => {
                let size = item_bytes(&item);
                if used + size > budget_for_evidence && !c.required {
                    if item.projection == "skeleton" {
                        counters.skeletonized -= 1;
                    }
                    counters.byte_omitted += 1;
                    omit(position, c, OmissionReason::ByteCeiling, &mut omitted);
                    page_end = Some(OmissionReason::ByteCeiling);
                    page_end_needs = Some((position, size));
                    continue;
                }
                (item, size, size)
            }
        };
        used += size;
        full_kept |= chosen.projection == "full";
        if let Some(file) = file
            && !paths.contains(&file)
        {
            paths.push(file);
        }
        evidence.push(chosen);
        positions.push(position);
        required_positions.push(c.required);
        sizes_at_top.push(at_top);
    }
    Ok(Projection {
        evidence,
        diagnostics,
        counters,
        omitted,
        candidates,
        positions,
        required_positions,
        top: eligible.first().copied(),
        budget: budget_for_evidence,
        page_end_needs,
        sizes_at_top,
        frame: None,
    })
}

impl Projection<'_> {
    /// Byte pruning after the envelope was measured: moves the last optional item to the
    /// byte-ceiling omissions; returns its index in `evidence`, or `None` when every item
    /// left is required.
    pub fn drop_last_optional(&mut self) -> Option<usize> {
        let index = self.required_positions.iter().rposition(|r| !r)?;
        let item = self.evidence.remove(index);
        let position = self.positions.remove(index);
        self.required_positions.remove(index);
        // The page now ends at this item.
        self.page_end_needs = Some((position, self.sizes_at_top.remove(index)));
        match item.projection {
            "full" => self.counters.slices_read = self.counters.slices_read.saturating_sub(1),
            // Counted when it was chosen; an omitted item is not a skeleton on this page.
            "skeleton" => self.counters.skeletonized = self.counters.skeletonized.saturating_sub(1),
            _ => {}
        }
        self.counters.byte_omitted += 1;
        self.omitted.push(Omitted {
            position,
            class: item.class,
            reason: OmissionReason::ByteCeiling,
            symbol: OmittedSymbol::Label(item.symbol),
            score: item.score,
        });
        Some(index)
    }

    /// The ceiling a continuation needs when the candidate that ended this page could
    /// not fit even at the top of the next page: doubled until that candidate fits beside
    /// this page's envelope and `slack` (at least doubled once, at most the maximum).
    fn ceiling_for_page_end(&self, max_bytes: usize, slack: usize) -> usize {
        let reserve = self.reserve(max_bytes);
        let needs = self.page_end_needs.map_or(0, |(_, needs)| needs);
        let mut ceiling = max_bytes.saturating_mul(2);
        while ceiling < 1_000_000 && ceiling.saturating_sub(reserve) < needs + slack {
            ceiling = ceiling.saturating_mul(2);
        }
        ceiling.clamp(1024, 1_000_000)
    }

    /// The ceiling a byte-ceiling group's continuation needs when its first candidate
    /// would not fit at the top of the next page (`None`: the page's own ceiling holds it).
    fn raised_ceiling(
        &self,
        first: usize,
        request: &ContextRequest,
        fingerprint: &str,
        max_bytes: usize,
    ) -> Option<usize> {
        if Some(first) == self.top {
            return Some(self.ceiling_for_page_end(max_bytes, 0));
        }
        let (position, needs) = self.page_end_needs?;
        if position != first {
            return None;
        }
        // The next page's envelope also lists what this one showed: one `after-cursor`
        // group (its argv and ~200 bytes) per class this page shows that no earlier did.
        let top = self.top.unwrap_or(first).min(first);
        let mut earlier: Vec<EvidenceClass> = Vec::new();
        for c in &self.candidates[..top] {
            if !earlier.contains(&c.class) {
                earlier.push(c.class);
            }
        }
        let mut classes: Vec<EvidenceClass> = Vec::new();
        for c in &self.candidates[top..first] {
            if !earlier.contains(&c.class) && !classes.contains(&c.class) {
                classes.push(c.class);
            }
        }
        let argv: usize = request
            .argv_with(ArgvChange {
                after: Some((fingerprint, "START")),
                ..ArgvChange::default()
            })
            .iter()
            .map(|a| a.len() + 3)
            .sum();
        let slack = classes.len() * (argv + 200);
        (needs + slack + self.reserve(max_bytes) > max_bytes)
            .then(|| self.ceiling_for_page_end(max_bytes, slack))
    }

    /// Records the measured bytes of this page without its evidence; returns whether that
    /// changed what was known (the omission groups' continuations may change with it).
    pub fn settle_frame(&mut self, frame: usize) -> bool {
        let changed = self.frame != Some(frame);
        self.frame = Some(frame);
        changed
    }

    /// The bytes of a page at this ceiling that are not evidence: measured once the page
    /// is settled, else what the projection set aside.
    fn reserve(&self, max_bytes: usize) -> usize {
        self.frame
            .unwrap_or_else(|| max_bytes.saturating_sub(self.budget))
    }

    pub fn retained(&self) -> usize {
        self.evidence.len()
    }

    /// The omission manifest: grouped by (class, reason), each with its continuation:
    /// the request's own argv (every flag that shapes the answer, once) plus what fetches
    /// the group. A page is a page: a byte-ceiling continuation keeps the ceiling, unless
    /// the group's first item could not fit even at the top of this page.
    pub fn omissions(
        &self,
        graph: &Graph,
        request: &ContextRequest,
        fingerprint: &str,
        limits: &Limits,
    ) -> Vec<Omission> {
        // Groups in the order of their class names, then reasons, each gathered in one
        // pass: its count, its first position and its top member (best score, then
        // smallest id).
        struct Group<'o> {
            count: usize,
            first: usize,
            top: &'o Omitted,
        }
        let id = |o: &Omitted| self.candidates[o.position].id_order_key();
        // Few groups, met mostly in runs: a short list searched in order, then sorted.
        let mut groups: Vec<((EvidenceClass, OmissionReason), Group)> = Vec::new();
        for o in &self.omitted {
            let key = (o.class, o.reason);
            match groups.iter_mut().find(|(k, _)| *k == key) {
                Some((_, g)) => {
                    g.count += 1;
                    g.first = g.first.min(o.position);
                    if o.score > g.top.score || (o.score == g.top.score && id(o) <= id(g.top)) {
                        g.top = o;
                    }
                }
                None => groups.push((
                    key,
                    Group {
                        count: 1,
                        first: o.position,
                        top: o,
                    },
                )),
            }
        }
        groups.sort_unstable_by_key(|((class, reason), _)| (class.as_str(), reason.as_str()));
        let mut out = Vec::new();
        for (_, group) in groups {
            let class = group.top.class;
            let reason = group.top.reason;
            let first = group.first;
            let m = group.top;
            let top = TopCandidate {
                id: self.candidates[m.position].id(),
                symbol: match &m.symbol {
                    OmittedSymbol::Node(node) => node.map(|n| graph.label(n)),
                    OmittedSymbol::Label(label) => label.clone(),
                },
                score: m.score,
            };
            // What earlier pages showed is fetched again from the beginning.
            let after = if first == 0 || reason == OmissionReason::AfterCursor {
                "START".to_string()
            } else {
                self.candidates[first - 1].id()
            };
            let argv = match reason {
                // Stale source: refresh the graph (no --frozen) and ask again.
                OmissionReason::SourceUnavailable => request.argv_with(ArgvChange {
                    thaw: true,
                    ..ArgvChange::default()
                }),
                // Policy: name the group's top symbol, whose body a query that names it
                // admits (R-PROJ-6) in every profile; its path alone is answered as a
                // file (its dependents, its modules), which need not show that body.
                OmissionReason::Policy => request.argv_with(ArgvChange {
                    query: top.symbol.as_deref(),
                    ..ArgvChange::default()
                }),
                _ => {
                    let raised = (reason == OmissionReason::ByteCeiling)
                        .then(|| self.raised_ceiling(first, request, fingerprint, limits.max_bytes))
                        .flatten();
                    let below = reason == OmissionReason::BelowRelevance;
                    // A group beyond the retrieval cap whose best scores under this
                    // page's threshold would fetch a page that shows none of it: its
                    // continuation lowers the threshold to that best.
                    let capped_below = reason == OmissionReason::RetrievalCap
                        && !self.candidates[m.position].required
                        && top.score < limits.min_score;
                    request.argv_with(ArgvChange {
                        after: Some((fingerprint, &after)),
                        max_bytes: raised,
                        // The band under this page's threshold, down to the group's best:
                        // what this page showed scores above it and is not shown again.
                        min_score: (below || capped_below).then_some(top.score),
                        max_score: if below {
                            Some(Some(limits.min_score.saturating_sub(1)))
                        } else if reason == OmissionReason::AfterCursor {
                            Some(None)
                        } else {
                            None
                        },
                        ..ArgvChange::default()
                    })
                }
            };
            out.push(Omission {
                class,
                reason,
                count: group.count,
                top,
                argv,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_sites_are_each_site_once_by_path_then_line() {
        let site = |file: u32, line: u32| (FileId(file), line);
        let sites = [
            site(2, 10),
            site(1, 7),
            site(2, 10),
            site(1, 5),
            site(1, 7),
            site(3, 1),
        ];
        assert_eq!(
            distinct_sites(&sites),
            [site(1, 5), site(1, 7), site(2, 10), site(3, 1)]
        );
        assert_eq!(distinct_sites(&[site(4, 4)]), [site(4, 4)]);
        assert!(distinct_sites(&[]).is_empty());
    }

    #[test]
    fn the_order_key_orders_as_its_parts() {
        use crate::query::context::retrieve::IdHash;
        let mut all = Vec::new();
        for class in EvidenceClass::ALL {
            for required in [false, true] {
                for score in [0, 1, 300, u16::MAX - 1, u16::MAX] {
                    for hash in [0, 7, u64::MAX] {
                        all.push(Candidate {
                            id_hash: IdHash(hash),
                            class,
                            score,
                            reasons: Vec::new(),
                            relation_reasons: None,
                            required,
                            node: None,
                            relation: None,
                            slice: SliceTarget::None,
                            on_spine: false,
                            named: false,
                            statement: None,
                            sites: Default::default(),
                            why: None,
                        });
                    }
                }
            }
        }
        // Ranks that tie some classes (several classes share the unranked last place).
        let rank = |class: EvidenceClass| (class as usize * 7) % 5;
        let parts = |c: &Candidate| {
            (
                !c.required,
                rank(c.class),
                std::cmp::Reverse(c.score),
                c.id_order(),
            )
        };
        for a in &all {
            for b in &all {
                assert_eq!(
                    order_key(a, rank(a.class)).cmp(&order_key(b, rank(b.class))),
                    parts(a).cmp(&parts(b))
                );
            }
        }
    }
}
