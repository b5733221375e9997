//! `repo-map`: the architecture profile rendered as a map. The context compiler runs the
//! `architecture` profile without an anchor — every module in scope, ranked, gated by the
//! profile's relevance threshold, with its most central public symbols as
//! representatives — and this module turns its evidence into one compact entry per
//! module: file and symbol counts, its main relations to other modules (the graph's
//! module edges), its representatives. Pages follow the profile's ranking; each page is
//! shown in path order, so it reads as a tree.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::{Invocation, Truncated, bounded, ceiling, fit, flag_if};
use crate::error::Result;
use crate::graph::codes::EdgeKind;
use crate::graph::ids::NodeId;
use crate::graph::reader::{Direction, Graph};
use crate::query::context::{ContextOutput, ContextRequest, OpenGraph, compile_context};
use crate::query::profile::{EvidenceClass, ProfileName};
use crate::syntax::facts::SymbolKind;

/// Modules per page when none is asked for, and the most a page may ask for.
pub const DEFAULT_MAX_MODULES: usize = 60;
pub const MAX_MODULES: usize = 1_000;
/// Relations listed per module and direction (all are counted).
const RELATIONS: usize = 4;

#[derive(Debug, Clone, Default)]
pub struct RepoMapRequest {
    /// Modules before this one (in the profile's ranking) are skipped.
    pub offset: usize,
    pub max_modules: Option<usize>,
    pub max_bytes: Option<usize>,
    pub invocation: Invocation,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleRelation {
    /// The other module (`path/`).
    pub module: String,
    /// `calls`, `imports`, `uses-type`, …
    pub kind: &'static str,
    /// Edges between the two modules of this kind.
    pub count: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Representative {
    pub symbol: String,
    pub kind: &'static str,
    pub lines: [u32; 2],
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ModuleOut {
    /// The module's directory (`shop/`; the repository root is `./`).
    pub module: String,
    /// Directory levels below the root (a tree's indentation).
    pub depth: usize,
    pub files: usize,
    /// Top-level definitions of its files.
    pub symbols: usize,
    /// Modules this one depends on, most edges first.
    pub depends_on: Vec<ModuleRelation>,
    /// Modules that depend on this one, most edges first.
    pub used_by: Vec<ModuleRelation>,
    /// Relations past the ones listed, both directions.
    pub relations_omitted: usize,
    /// Its most central symbols (public first), as the profile ranked them.
    pub representatives: Vec<Representative>,
}

/// Evidence the architecture profile itself left out.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ProfileOmission {
    pub class: &'static str,
    /// `below-relevance`, `retrieval-cap`, …
    pub reason: &'static str,
    pub count: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct RepoMapOutput {
    pub profile: &'static str,
    pub graph_fingerprint: String,
    /// Files and modules of the whole generation.
    pub files: usize,
    pub modules_in_graph: usize,
    /// Modules the profile put on the map (ranked), of which this page shows some.
    pub modules_total: usize,
    pub offset: usize,
    /// This page's modules, in path order.
    pub modules: Vec<ModuleOut>,
    pub profile_omitted: Vec<ProfileOmission>,
    pub truncated: Option<Truncated>,
}

/// The map of `graph`'s modules (source slices of representatives read under `root`).
pub fn repo_map(graph: &Graph, root: &Path, request: &RepoMapRequest) -> Result<RepoMapOutput> {
    let max_bytes = ceiling(request.max_bytes)?;
    let max_modules = bounded(
        "max-modules",
        request.max_modules,
        DEFAULT_MAX_MODULES,
        1..=MAX_MODULES,
    )?;
    let context = architecture(graph, root)?;
    let modules = ranked_modules(graph, &context);
    let total = modules.len();
    let start = request.offset.min(total);
    let page: Vec<ModuleOut> = modules[start..]
        .iter()
        .take(max_modules)
        .map(|(module, representatives)| module_out(graph, *module, representatives.clone()))
        .collect();
    let module_count = graph
        .nodes()
        .take_while(|&n| graph.kind(n) == SymbolKind::Module)
        .count();
    let profile_omitted = context
        .omissions
        .iter()
        .map(|o| ProfileOmission {
            class: o.class.as_str(),
            reason: o.reason.as_str(),
            count: o.count,
        })
        .collect::<Vec<_>>();
    let next = |offset: usize| {
        let mut flags = flag_if("--offset", Some(offset));
        flags.extend(flag_if("--max-modules", request.max_modules));
        flags.extend(flag_if("--max-bytes", request.max_bytes));
        request.invocation.argv("repo-map", flags, &[])
    };
    let build = |n: usize| {
        let mut shown = page[..n].to_vec();
        shown.sort_by(|a, b| a.module.cmp(&b.module));
        RepoMapOutput {
            profile: ProfileName::Architecture.as_str(),
            graph_fingerprint: graph.fingerprint(),
            files: graph.file_count(),
            modules_in_graph: module_count,
            modules_total: total,
            offset: request.offset,
            modules: shown,
            profile_omitted: profile_omitted.clone(),
            truncated: super::truncation(total, request.offset, n, max_modules, next),
        }
    };
    fit(page.len(), max_bytes, build)
}

/// The architecture profile without an anchor, with room for all it retrieves.
fn architecture(graph: &Graph, root: &Path) -> Result<ContextOutput> {
    let mut request = ContextRequest::new("", ProfileName::Architecture);
    request.max_bytes = Some(*super::MAX_BYTES_RANGE.end());
    let fingerprint = graph.fingerprint();
    let open = OpenGraph {
        graph,
        fingerprint: &fingerprint,
        code_root: root,
        refreshed: false,
        stale: None,
        freshness_ms: 0.0,
        started: Instant::now(),
    };
    Ok(compile_context(&open, &request, None)?.output)
}

/// The modules of the profile's evidence in its order, each with its representatives.
fn ranked_modules(graph: &Graph, context: &ContextOutput) -> Vec<(NodeId, Vec<Representative>)> {
    let by_label: HashMap<String, NodeId> = graph
        .nodes()
        .take_while(|&n| graph.kind(n) == SymbolKind::Module)
        .map(|m| (graph.label(m), m))
        .collect();
    let mut order: Vec<NodeId> = Vec::new();
    let mut representatives: BTreeMap<NodeId, Vec<Representative>> = BTreeMap::new();
    for item in &context.evidence {
        match item.class {
            EvidenceClass::Module => {
                if let Some(&module) = item
                    .statement
                    .as_ref()
                    .and_then(|s| module_label(&s.text))
                    .and_then(|label| by_label.get(label))
                {
                    order.push(module);
                }
            }
            EvidenceClass::Representative => {
                let module = item
                    .path
                    .as_deref()
                    .and_then(|p| graph.file_index(p))
                    .and_then(|f| graph.file(f))
                    .map(|f| f.module());
                if let (Some(module), Some(symbol)) = (module, &item.symbol) {
                    representatives
                        .entry(module)
                        .or_default()
                        .push(Representative {
                            symbol: symbol.clone(),
                            kind: item.kind.unwrap_or("?"),
                            lines: item.lines.unwrap_or([0, 0]),
                        });
                }
            }
            _ => {}
        }
    }
    order
        .into_iter()
        .map(|m| (m, representatives.remove(&m).unwrap_or_default()))
        .collect()
}

/// The module a summary statement names: `module shop/: 4 file(s), 9 top-level
/// symbol(s)` (module evidence is a statement; its label is the text's subject).
fn module_label(statement: &str) -> Option<&str> {
    statement
        .strip_prefix("module ")?
        .rsplit_once(": ")
        .map(|(label, _)| label)
}

fn module_out(graph: &Graph, module: NodeId, representatives: Vec<Representative>) -> ModuleOut {
    let files: Vec<NodeId> = graph
        .files()
        .filter_map(|f| graph.file(f))
        .filter(|f| f.module() == module)
        .map(|f| f.node())
        .collect();
    let symbols = files
        .iter()
        .map(|&f| {
            graph
                .edges(f, Direction::Outgoing)
                .iter()
                .filter(|e| e.kind == EdgeKind::Contains as u8)
                .count()
        })
        .sum();
    let label = graph.label(module);
    let (depends_on, out_cut) = relations(graph, module, true);
    let (used_by, in_cut) = relations(graph, module, false);
    ModuleOut {
        depth: label.trim_end_matches('/').matches('/').count() + usize::from(label != "./"),
        module: label,
        files: files.len(),
        symbols,
        depends_on,
        used_by,
        relations_omitted: out_cut + in_cut,
        representatives,
    }
}

/// The module edges leaving (`outgoing`) or reaching `module`, most edges first; the
/// count of those past [`RELATIONS`].
fn relations(graph: &Graph, module: NodeId, outgoing: bool) -> (Vec<ModuleRelation>, usize) {
    let mut found: Vec<ModuleRelation> = graph
        .module_edges()
        .filter(|e| if outgoing { e.from() } else { e.to() } == module)
        .filter(|e| e.from() != e.to())
        .map(|e| ModuleRelation {
            module: graph.label(if outgoing { e.to() } else { e.from() }),
            kind: EdgeKind::from_code(e.kind).map_or("?", EdgeKind::as_str),
            count: e.count.to_native(),
        })
        .collect();
    found.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| a.module.cmp(&b.module))
            .then_with(|| a.kind.cmp(b.kind))
    });
    let cut = found.len().saturating_sub(RELATIONS);
    found.truncate(RELATIONS);
    (found, cut)
}
