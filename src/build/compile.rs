//! Compiles a resolved graph into the archived form: interned strings, CSR edges in both
//! directions, module-level edges, centrality and sorted name tables (R-GEN-5).
//!
//! Architecture invariant: the output is a pure function of its inputs — every collection
//! is sorted before it is written — so equal inputs give byte-identical files (R-GEN-3).

use std::collections::BTreeMap;

use rayon::slice::ParallelSliceMut;
use rustc_hash::FxHashMap as HashMap;

use petgraph::graph::{DiGraph, NodeIndex};

use crate::build::resolve::{Resolved, Site};
use crate::graph::codes::EdgeKind;
use crate::graph::codes::FileClass;
use crate::graph::data::*;
use crate::graph::names::{module_path_of, normalize_qualified, split_identifier};
use crate::syntax::facts::{ParseStatus, Span, SymbolKind};
use crate::syntax::lang::Language;

/// What the compiler needs to know about each file beyond its facts.
pub struct FileMeta<'a> {
    pub path: &'a str,
    pub language: Option<Language>,
    pub class: FileClass,
    pub hash: [u8; 32],
    pub size: u64,
    pub lines: u32,
    pub parse_status: ParseStatus,
    pub error_count: u32,
}

struct Interner<'a> {
    ids: HashMap<&'a str, u32>,
}

impl Interner<'_> {
    fn id(&self, text: &str) -> u32 {
        self.ids[text]
    }
}

fn span_record(span: Span) -> SpanRecord {
    SpanRecord {
        start_byte: span.start_byte,
        end_byte: span.end_byte,
        start_line: span.start_line,
        end_line: span.end_line,
    }
}

fn site_record(site: Option<Site>) -> (u32, SpanRecord) {
    match site {
        Some(site) => (
            site.file,
            SpanRecord {
                start_byte: site.span.start_byte,
                end_byte: site.span.end_byte,
                start_line: site.span.start_line,
                end_line: site.span.end_line,
            },
        ),
        None => (NONE, SpanRecord::default()),
    }
}

/// Builds the archive data.
pub fn compile(fingerprint: [u8; 32], files: &[FileMeta], resolved: &Resolved) -> GraphData {
    let nodes = &resolved.nodes;

    // Name-table keys per node.
    let mut folded = Vec::new();
    let mut suffixes = Vec::new();
    let mut segments = Vec::new();
    let module_paths: Vec<String> = files.iter().map(|f| module_path_of(f.path)).collect();
    for (id, node) in nodes.iter().enumerate() {
        let id = id as u32;
        if matches!(
            node.kind,
            SymbolKind::Module | SymbolKind::File | SymbolKind::Impl
        ) {
            continue;
        }
        folded.push((node.name.to_lowercase(), id));
        for word in split_identifier(&node.name) {
            segments.push((word, id));
        }
        let module = node.file.map_or("", |f| module_paths[f as usize].as_str());
        let full = format!("{module}.{}", normalize_qualified(&node.qualified));
        let parts: Vec<&str> = full.split('.').filter(|p| !p.is_empty()).collect();
        for start in 0..parts.len().saturating_sub(1) {
            suffixes.push((parts[start..].join("."), id));
        }
    }

    // Intern every string, sorted, so string ids order like their text.
    let mut all: Vec<&str> = Vec::with_capacity(nodes.len() * 2 + suffixes.len() + segments.len());
    all.extend(files.iter().map(|f| f.path));
    for node in nodes {
        all.push(&node.name);
        all.push(&node.qualified);
        if let Some(symbol) = &node.scip_symbol {
            all.push(symbol);
        }
    }
    all.extend(resolved.frontier.iter().map(|f| f.name.as_str()));
    all.extend(
        folded
            .iter()
            .chain(&suffixes)
            .chain(&segments)
            .map(|(t, _)| t.as_str()),
    );
    // Distinct first (names repeat: every frontier entry, every overload), then sorted.
    let mut seen =
        rustc_hash::FxHashSet::with_capacity_and_hasher(all.len() / 2, Default::default());
    all.retain(|s| seen.insert(*s));
    drop(seen);
    all.par_sort_unstable();
    let interner = Interner {
        ids: all
            .iter()
            .enumerate()
            .map(|(i, s)| (*s, i as u32))
            .collect(),
    };
    let mut string_bytes = Vec::with_capacity(all.iter().map(|s| s.len()).sum());
    let mut string_offsets = Vec::with_capacity(all.len() + 1);
    string_offsets.push(0u32);
    for s in &all {
        string_bytes.extend_from_slice(s.as_bytes());
        string_offsets.push(string_bytes.len() as u32);
    }

    let centrality = centrality(nodes.len(), resolved);

    let file_records = files
        .iter()
        .enumerate()
        .map(|(i, f)| FileRecord {
            path: interner.id(f.path),
            language: f.language.map_or(255, Language::code),
            class: f.class as u8,
            parse_status: f.parse_status as u8,
            error_count: f.error_count,
            hash: f.hash,
            size: f.size,
            lines: f.lines,
            node: resolved.file_nodes[i],
            module: resolved.file_modules[i],
        })
        .collect();

    let node_records = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut flags = 0;
            if n.in_test_scope {
                flags |= FLAG_TEST_SCOPE;
            }
            if n.doc.is_some() {
                flags |= FLAG_HAS_DOC;
            }
            if n.declares_only {
                flags |= FLAG_DECLARES_ONLY;
            }
            NodeRecord {
                kind: n.kind as u8,
                visibility: n.visibility as u8,
                flags,
                name: interner.id(&n.name),
                qualified: interner.id(&n.qualified),
                file: n.file.unwrap_or(NONE),
                parent: n.parent.unwrap_or(NONE),
                span: span_record(n.span),
                signature: span_record(n.signature),
                doc: span_record(n.doc.unwrap_or_default()),
                centrality: centrality[i],
                scip_symbol: n.scip_symbol.as_ref().map_or(NONE, |s| interner.id(s)),
            }
        })
        .collect();

    // CSR, both directions. `resolved.edges` is sorted by (from, to, kind, …).
    let record = |other: u32, e: &crate::build::resolve::ResolvedEdge| {
        let (site_file, site) = site_record(e.site);
        EdgeRecord {
            node: other,
            kind: e.kind as u8,
            subkind: e.subkind as u8,
            provenance: e.provenance as u8,
            resolution: e.resolution as u8,
            confidence: e.confidence,
            flags: e.flags,
            site_file,
            site,
        }
    };
    let mut out_offsets = vec![0u32; nodes.len() + 1];
    let mut in_offsets = vec![0u32; nodes.len() + 1];
    for e in &resolved.edges {
        out_offsets[e.from as usize + 1] += 1;
        in_offsets[e.to as usize + 1] += 1;
    }
    for i in 0..nodes.len() {
        out_offsets[i + 1] += out_offsets[i];
        in_offsets[i + 1] += in_offsets[i];
    }
    let out_edges: Vec<EdgeRecord> = resolved.edges.iter().map(|e| record(e.to, e)).collect();
    let mut by_target: Vec<&crate::build::resolve::ResolvedEdge> = resolved.edges.iter().collect();
    by_target.par_sort_by_key(|e| (e.to, e.from, e.kind, e.site));
    let in_edges: Vec<EdgeRecord> = by_target.iter().map(|e| record(e.from, e)).collect();

    // Module-level edges: every non-containment edge between nodes of different modules.
    let module_of = |id: u32| -> u32 {
        let node = &nodes[id as usize];
        match (node.kind, node.file) {
            (SymbolKind::Module, _) => id,
            (_, Some(f)) => resolved.file_modules[f as usize],
            _ => id,
        }
    };
    let mut module_counts: BTreeMap<(u32, u32, u8), u32> = BTreeMap::new();
    for e in &resolved.edges {
        if e.kind == EdgeKind::Contains {
            continue;
        }
        let (a, b) = (module_of(e.from), module_of(e.to));
        if a != b {
            *module_counts.entry((a, b, e.kind as u8)).or_default() += 1;
        }
    }
    let module_edges = module_counts
        .into_iter()
        .map(|((from, to, kind), count)| ModuleEdgeRecord {
            from,
            to,
            kind,
            count,
        })
        .collect();

    let frontier = resolved
        .frontier
        .iter()
        .map(|f| FrontierRecord {
            name: interner.id(&f.name),
            role: f.role as u8,
            from: f.from,
            file: f.file,
            site: span_record(f.site),
            candidates: f.candidates,
        })
        .collect();

    let mut by_name: Vec<(u32, u32)> = resolved
        .frontier
        .iter()
        .enumerate()
        .map(|(i, f)| (interner.id(&f.name), i as u32))
        .collect();
    by_name.par_sort_unstable();
    let frontier_by_name: Vec<u32> = by_name.into_iter().map(|(_, i)| i).collect();
    let table = |pairs: Vec<(u32, u32)>| {
        let mut entries: Vec<NameEntry> = pairs
            .into_iter()
            .map(|(key, node)| NameEntry { key, node })
            .collect();
        entries.par_sort_unstable();
        entries.dedup();
        entries
    };
    let names_exact = table(
        nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !matches!(n.kind, SymbolKind::Module | SymbolKind::File))
            .map(|(i, n)| (interner.id(&n.name), i as u32))
            .collect(),
    );
    let keyed = |pairs: &[(String, u32)]| pairs.iter().map(|(t, n)| (interner.id(t), *n)).collect();

    GraphData {
        fingerprint,
        string_bytes,
        string_offsets,
        files: file_records,
        nodes: node_records,
        out_offsets,
        out_edges,
        in_offsets,
        in_edges,
        frontier,
        frontier_by_name,
        module_edges,
        names_exact,
        names_folded: table(keyed(&folded)),
        names_suffix: table(keyed(&suffixes)),
        names_segments: table(keyed(&segments)),
        stats: GraphStats {
            external_references: resolved.external_references,
            scip_documents: resolved
                .scip
                .as_ref()
                .map_or(0, |m| m.stats.documents_ingested as u32),
            scip_stale: resolved
                .scip
                .as_ref()
                .map_or(0, |m| m.stats.documents_stale as u32),
            scip_outside: resolved
                .scip
                .as_ref()
                .map_or(0, |m| m.stats.documents_outside_inventory as u32),
        },
    }
}

/// PageRank over the dependency edges (everything but containment), computed on a petgraph
/// graph by sparse power iteration: petgraph's `page_rank` visits every node pair per
/// iteration, which is quadratic and too slow past a few thousand nodes.
fn centrality(node_count: usize, resolved: &Resolved) -> Vec<u32> {
    if node_count == 0 {
        return Vec::new();
    }
    let mut graph: DiGraph<(), ()> = DiGraph::with_capacity(node_count, resolved.edges.len());
    for _ in 0..node_count {
        graph.add_node(());
    }
    for e in &resolved.edges {
        if e.kind != EdgeKind::Contains && e.from != e.to {
            graph.add_edge(
                NodeIndex::new(e.from as usize),
                NodeIndex::new(e.to as usize),
                (),
            );
        }
    }
    const DAMPING: f64 = 0.85;
    const ITERATIONS: usize = 20;
    let n = node_count as f64;
    let out_degree: Vec<usize> = graph
        .node_indices()
        .map(|i| graph.neighbors(i).count())
        .collect();
    let mut rank = vec![1.0 / n; node_count];
    let mut next = vec![0.0; node_count];
    for _ in 0..ITERATIONS {
        let dangling: f64 = rank
            .iter()
            .zip(&out_degree)
            .filter(|(_, d)| **d == 0)
            .map(|(r, _)| r)
            .sum();
        let base = (1.0 - DAMPING) / n + DAMPING * dangling / n;
        next.iter_mut().for_each(|x| *x = base);
        for index in graph.node_indices() {
            let degree = out_degree[index.index()];
            if degree == 0 {
                continue;
            }
            let share = DAMPING * rank[index.index()] / degree as f64;
            for target in graph.neighbors(index) {
                next[target.index()] += share;
            }
        }
        std::mem::swap(&mut rank, &mut next);
    }
    rank.iter()
        .map(|r| (r * n * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32)
        .collect()
}
