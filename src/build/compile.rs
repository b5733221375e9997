//! Compiles a resolved graph into the archived form (R-GEN-5), format 4: segments —
//! each with its interned strings, CSR edges in both directions, frontier and sorted name
//! tables, in local ids — and a root with the edges between segments, module-level edges
//! and centrality (`graph::segments` decides the cut).
//!
//! Architecture invariant: the output is a pure function of its inputs — every collection
//! is sorted before it is written — so equal inputs give byte-identical files (R-GEN-3);
//! and a segment is a pure function of its own inputs digest, so an edit compiles only
//! the segments whose digest changed.

use rayon::prelude::*;
use rustc_hash::FxHashMap as HashMap;

use crate::build::resolve::{FrontierEntry, Resolved, ResolvedEdge, ResolvedNode, Site};
use crate::graph::codes::EdgeKind;
use crate::graph::codes::FileClass;
use crate::graph::data::*;
use crate::graph::format;
use crate::graph::names::{module_path_of, normalize_qualified, split_identifier};
use crate::graph::segments::{self, Cut, Shape};
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

/// A blake3 hasher fed through a buffer: a segment's digest is millions of 4-byte
/// pieces, and one `update` per piece costs more than the hashing. The bytes hashed, and
/// so the digest, are the same as feeding the pieces one by one.
struct BufferedHasher {
    hasher: blake3::Hasher,
    buffer: Vec<u8>,
}

impl Default for BufferedHasher {
    fn default() -> Self {
        BufferedHasher {
            hasher: blake3::Hasher::new(),
            buffer: Vec::with_capacity(Self::FLUSH_AT),
        }
    }
}

impl BufferedHasher {
    const FLUSH_AT: usize = 64 * 1024;

    fn update(&mut self, bytes: &[u8]) -> &mut Self {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= Self::FLUSH_AT {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
        }
        self
    }

    fn finalize(mut self) -> blake3::Hash {
        self.hasher.update(&self.buffer);
        self.hasher.finalize()
    }
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

/// A compiled generation: its root, its segments and their cross parts, in the root's
/// order.
pub struct Compiled {
    pub root: RootData,
    pub segments: Vec<CompiledSegment>,
    pub cross: Vec<CompiledCross>,
}

pub enum CompiledCross {
    /// Compiled now.
    Built(CrossData),
    /// The committed generation's part at the same place, which no changed edge touches
    /// (its root entry).
    Reused(CrossEntry),
}

pub enum CompiledSegment {
    /// Compiled now (boxed: an archive is large beside a root entry).
    Built(Box<GraphData>),
    /// The previous generation's segment with the same inputs (its root entry).
    Reused(SegmentEntry),
}

/// Compiles a resolved graph into a root, segments and their cross parts (format 5). A
/// segment whose inputs digest `reuse` knows is not compiled again, nor one that
/// `unchanged` vouches for by its place (index and cut), which is not even digested; a
/// cross part that `unchanged_cross` vouches for likewise is not built. The segment
/// hashes and string counts of built segments, and the built cross parts' hashes, are
/// filled in when they are encoded.
pub fn compile(
    fingerprint: [u8; 32],
    files: &[FileMeta],
    resolved: &Resolved,
    reuse: &(dyn Fn(&[u8; 32]) -> Option<SegmentEntry> + Sync),
    unchanged: &(dyn Fn(usize, &Cut) -> Option<SegmentEntry> + Sync),
    unchanged_cross: &(dyn Fn(usize, &Cut) -> Option<CrossEntry> + Sync),
    centrality: Option<Vec<u32>>,
) -> Compiled {
    let shape = Shape {
        paths: files.iter().map(|f| f.path).collect(),
        file_nodes: resolved.file_nodes.clone(),
        node_files: resolved
            .nodes
            .iter()
            .map(|n| n.file.unwrap_or(NONE))
            .collect(),
        node_parents: resolved
            .nodes
            .iter()
            .map(|n| n.parent.unwrap_or(NONE))
            .collect(),
        node_is_file: resolved
            .nodes
            .iter()
            .map(|n| n.kind == SymbolKind::File)
            .collect(),
        frontier: resolved.frontier.iter().map(|f| (f.file, f.from)).collect(),
    };
    let cuts = segments::cuts(&shape);
    drop(shape);
    let owner = segments::owners(&cuts, resolved.nodes.len());
    let segments: Vec<(CompiledSegment, [u8; 32])> = cuts
        .par_iter()
        .enumerate()
        .map(|(index, cut)| {
            if let Some(entry) = unchanged(index, cut) {
                let inputs = entry.inputs;
                return (CompiledSegment::Reused(entry), inputs);
            }
            let part = Part::new(files, resolved, cut);
            let inputs = part.digest();
            match reuse(&inputs) {
                Some(entry) => (CompiledSegment::Reused(entry), inputs),
                None => (CompiledSegment::Built(Box::new(part.compile())), inputs),
            }
        })
        .collect();
    let known_cross: Vec<Option<CrossEntry>> = cuts
        .par_iter()
        .enumerate()
        .map(|(index, cut)| unchanged_cross(index, cut))
        .collect();
    let (root, cross) = compile_root(
        fingerprint,
        resolved,
        &cuts,
        &owner,
        &segments,
        known_cross,
        centrality,
    );
    Compiled {
        root,
        segments: segments.into_iter().map(|(s, _)| s).collect(),
        cross,
    }
}

/// One segment's share of the resolved graph, in global ids.
struct Part<'a> {
    files: &'a [FileMeta<'a>],
    resolved: &'a Resolved<'a>,
    cut: &'a Cut,
    /// The out-edges of the cut's nodes that stay inside it (both ends and the site).
    edges: Vec<&'a ResolvedEdge>,
}

impl<'a> Part<'a> {
    fn new(files: &'a [FileMeta<'a>], resolved: &'a Resolved<'a>, cut: &'a Cut) -> Part<'a> {
        // `resolved.edges` is sorted by source: the cut's out-edges are one run.
        let all = &resolved.edges;
        let start = all.partition_point(|e| e.from < cut.nodes.start);
        let end = all.partition_point(|e| e.from < cut.nodes.end);
        let edges = all[start..end]
            .iter()
            .filter(|e| {
                cut.nodes.contains(&e.to) && e.site.is_none_or(|s| cut.files.contains(&s.file))
            })
            .collect();
        Part {
            files,
            resolved,
            cut,
            edges,
        }
    }

    fn nodes(&self) -> &'a [ResolvedNode<'a>] {
        &self.resolved.nodes[self.cut.nodes.start as usize..self.cut.nodes.end as usize]
    }

    fn files(&self) -> &'a [FileMeta<'a>] {
        &self.files[self.cut.files.start as usize..self.cut.files.end as usize]
    }

    fn frontier(&self) -> Vec<&'a FrontierEntry> {
        let range = self.cut.frontier.start as usize..self.cut.frontier.end as usize;
        self.resolved.frontier.range(range).collect()
    }

    /// A node id in local terms (`NONE` outside the cut).
    fn node(&self, id: u32) -> u32 {
        if self.cut.nodes.contains(&id) {
            id - self.cut.nodes.start
        } else {
            NONE
        }
    }

    fn file(&self, id: u32) -> u32 {
        if self.cut.files.contains(&id) {
            id - self.cut.files.start
        } else {
            NONE
        }
    }

    /// blake3 of everything `compile` reads, in local ids: equal digests compile to
    /// byte-identical segments.
    fn digest(&self) -> [u8; 32] {
        let mut h = BufferedHasher::default();
        let text = |h: &mut BufferedHasher, t: &str| {
            h.update(&(t.len() as u64).to_le_bytes());
            h.update(t.as_bytes());
        };
        let num = |h: &mut BufferedHasher, n: u32| {
            h.update(&n.to_le_bytes());
        };
        let span = |h: &mut BufferedHasher, s: Span| {
            for n in [s.start_byte, s.end_byte, s.start_line, s.end_line] {
                h.update(&n.to_le_bytes());
            }
        };
        h.update(b"atlas-segment-inputs\0");
        num(&mut h, format::FORMAT_VERSION);
        num(&mut h, self.files().len() as u32);
        for f in self.files() {
            text(&mut h, f.path);
            h.update(&[
                f.language.map_or(255, Language::code),
                f.class as u8,
                f.parse_status as u8,
            ]);
            h.update(&f.hash);
            h.update(&f.size.to_le_bytes());
            num(&mut h, f.lines);
            num(&mut h, f.error_count);
        }
        for (i, &node) in self.resolved.file_nodes
            [self.cut.files.start as usize..self.cut.files.end as usize]
            .iter()
            .enumerate()
        {
            num(&mut h, i as u32);
            num(&mut h, self.node(node));
        }
        num(&mut h, self.nodes().len() as u32);
        for n in self.nodes() {
            h.update(&[
                n.kind as u8,
                n.visibility as u8,
                u8::from(n.in_test_scope),
                u8::from(n.declares_only),
            ]);
            text(&mut h, &n.name);
            text(&mut h, &n.qualified);
            num(&mut h, n.file.map_or(NONE, |f| self.file(f)));
            num(&mut h, n.parent.map_or(NONE, |p| self.node(p)));
            span(&mut h, n.span);
            span(&mut h, n.signature);
            match n.doc {
                Some(doc) => {
                    h.update(&[1]);
                    span(&mut h, doc);
                }
                None => {
                    h.update(&[0]);
                }
            }
            match &n.scip_symbol {
                Some(symbol) => {
                    h.update(&[1]);
                    text(&mut h, symbol);
                }
                None => {
                    h.update(&[0]);
                }
            }
        }
        num(&mut h, self.edges.len() as u32);
        for e in &self.edges {
            num(&mut h, self.node(e.from));
            num(&mut h, self.node(e.to));
            h.update(&[
                e.kind as u8,
                e.subkind as u8,
                e.provenance as u8,
                e.resolution as u8,
                e.confidence,
                e.flags,
            ]);
            let (site_file, site) = site_record(e.site);
            num(
                &mut h,
                if site_file == NONE {
                    NONE
                } else {
                    self.file(site_file)
                },
            );
            for n in [
                site.start_byte,
                site.end_byte,
                site.start_line,
                site.end_line,
            ] {
                num(&mut h, n);
            }
        }
        num(&mut h, self.frontier().len() as u32);
        for f in self.frontier() {
            text(&mut h, &f.name);
            h.update(&[f.role as u8]);
            num(&mut h, self.node(f.from));
            num(&mut h, self.file(f.file));
            span(&mut h, f.site);
            num(&mut h, f.candidates);
        }
        *h.finalize().as_bytes()
    }

    /// The segment's archive, in local ids. Only its own records count: fingerprint,
    /// centrality, module edges and statistics are the root's.
    fn compile(&self) -> GraphData {
        let nodes = self.nodes();
        let files = self.files();
        let frontier = self.frontier();

        // Each node's dotted path (module, then qualified name, empty parts dropped):
        // its suffixes are tails of it, keyed without a copy each.
        let mut module_of: Option<(u32, String)> = None;
        let dotted: Vec<Option<String>> = nodes
            .iter()
            .map(|node| {
                if matches!(
                    node.kind,
                    SymbolKind::Module | SymbolKind::File | SymbolKind::Impl
                ) {
                    return None;
                }
                // Nodes come file by file: each file's module path is made once.
                let module = match node.file {
                    Some(f) => {
                        if module_of.as_ref().is_none_or(|(file, _)| *file != f) {
                            module_of = Some((f, module_path_of(self.files[f as usize].path)));
                        }
                        module_of.as_ref().map_or("", |(_, module)| module.as_str())
                    }
                    None => "",
                };
                Some(dotted_path(module, &normalize_qualified(&node.qualified)))
            })
            .collect();

        // Name-table keys per node (local ids).
        let mut folded: Vec<(std::borrow::Cow<str>, u32)> = Vec::new();
        let mut suffixes: Vec<(&str, u32)> = Vec::new();
        let mut segments = Vec::new();
        let mut exact: Vec<(&str, u32)> = Vec::new();
        for (local, (node, dotted)) in nodes.iter().zip(&dotted).enumerate() {
            let local = local as u32;
            if matches!(node.kind, SymbolKind::Module | SymbolKind::File) {
                continue;
            }
            exact.push((&node.name, local));
            let Some(dotted) = dotted else {
                continue;
            };
            folded.push((folded_name(&node.name), local));
            for word in split_identifier(&node.name) {
                segments.push((word, local));
            }
            // Every tail that starts at a part, but the last part alone.
            let mut tail = dotted.as_str();
            while let Some((_, rest)) = tail.split_once('.') {
                suffixes.push((tail, local));
                tail = rest;
            }
        }

        // Intern the segment's strings, sorted, so string ids order like their text.
        // Most are repeats (frontier names, name-table keys): only the distinct ones are
        // sorted.
        let mut distinct: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
        distinct.extend(files.iter().map(|f| f.path));
        for node in nodes {
            distinct.insert(&node.name);
            distinct.insert(&node.qualified);
            if let Some(symbol) = &node.scip_symbol {
                distinct.insert(symbol);
            }
        }
        distinct.extend(frontier.iter().map(|f| &*f.name));
        distinct.extend(folded.iter().map(|(t, _)| &**t));
        distinct.extend(suffixes.iter().map(|(t, _)| *t));
        distinct.extend(segments.iter().map(|(t, _)| t.as_str()));
        let mut all: Vec<&str> = distinct.into_iter().collect();
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

        let file_nodes =
            &self.resolved.file_nodes[self.cut.files.start as usize..self.cut.files.end as usize];
        let file_modules =
            &self.resolved.file_modules[self.cut.files.start as usize..self.cut.files.end as usize];
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
                node: self.node(file_nodes[i]),
                module: self.node(file_modules[i]),
            })
            .collect();

        let node_records = nodes
            .iter()
            .map(|n| {
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
                    file: n.file.map_or(NONE, |f| self.file(f)),
                    parent: n.parent.map_or(NONE, |p| self.node(p)),
                    span: span_record(n.span),
                    signature: span_record(n.signature),
                    doc: span_record(n.doc.unwrap_or_default()),
                    // Global: the root's.
                    centrality: 0,
                    scip_symbol: n.scip_symbol.as_ref().map_or(NONE, |s| interner.id(s)),
                }
            })
            .collect();

        // CSR, both directions, in local ids. `self.edges` is sorted by (from, to, …).
        let record =
            |other: u32, e: &ResolvedEdge| edge_record(self.node(other), e, |file| self.file(file));
        let (out_offsets, in_offsets) = offsets(
            nodes.len(),
            self.edges
                .iter()
                .map(|e| (self.node(e.from), self.node(e.to))),
        );
        let out_edges: Vec<EdgeRecord> = self.edges.iter().map(|e| record(e.to, e)).collect();
        let by_target = by_target(&self.edges, &in_offsets, |e| self.node(e.to));
        let in_edges: Vec<EdgeRecord> = by_target.iter().map(|e| record(e.from, e)).collect();

        let frontier_records: Vec<FrontierRecord> = frontier
            .iter()
            .map(|f| FrontierRecord {
                name: interner.id(&f.name),
                role: f.role as u8,
                from: self.node(f.from),
                file: self.file(f.file),
                site: span_record(f.site),
                candidates: f.candidates,
            })
            .collect();
        let mut by_name: Vec<(u32, u32)> = frontier_records
            .iter()
            .enumerate()
            .map(|(i, f)| (f.name, i as u32))
            .collect();
        by_name.sort_unstable();
        let table = |pairs: Vec<(&str, u32)>| {
            let mut entries: Vec<NameEntry> = pairs
                .into_iter()
                .map(|(key, node)| NameEntry {
                    key: interner.id(key),
                    node,
                })
                .collect();
            entries.sort_unstable();
            entries.dedup();
            entries
        };
        // The four tables side by side: an edit often compiles one segment alone.
        let ((names_exact, names_folded), (names_suffix, names_segments)) = rayon::join(
            || {
                rayon::join(
                    || table(exact),
                    || table(folded.iter().map(|(t, n)| (&**t, *n)).collect()),
                )
            },
            || {
                rayon::join(
                    || table(suffixes),
                    || table(segments.iter().map(|(t, n)| (t.as_str(), *n)).collect()),
                )
            },
        );

        GraphData {
            fingerprint: [0; 32],
            string_bytes,
            string_offsets,
            files: file_records,
            nodes: node_records,
            out_offsets,
            out_edges,
            in_offsets,
            in_edges,
            frontier: frontier_records,
            frontier_by_name: by_name.into_iter().map(|(_, i)| i).collect(),
            module_edges: Vec::new(),
            names_exact,
            names_folded,
            names_suffix,
            names_segments,
            stats: GraphStats::default(),
        }
    }
}

/// `module.qualified` with its empty parts dropped: the text whose tails are a node's
/// suffix keys.
fn dotted_path(module: &str, qualified: &str) -> String {
    let mut out = String::with_capacity(module.len() + 1 + qualified.len());
    for part in module.split('.').chain(qualified.split('.')) {
        if part.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(part);
    }
    out
}

/// A name folded to lower case, without a copy when it has no upper case.
fn folded_name(name: &str) -> std::borrow::Cow<'_, str> {
    if name.is_ascii() && !name.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(name.to_lowercase())
    }
}

/// An edge's record: `other` is its other end, and `file` maps the site's file id (to a
/// segment's local id; the root keeps global ids).
fn edge_record(other: u32, e: &ResolvedEdge, file: impl Fn(u32) -> u32) -> EdgeRecord {
    let (site_file, site) = site_record(e.site);
    EdgeRecord {
        node: other,
        kind: e.kind as u8,
        subkind: e.subkind as u8,
        provenance: e.provenance as u8,
        resolution: e.resolution as u8,
        confidence: e.confidence,
        flags: e.flags,
        site_file: if site_file == NONE {
            NONE
        } else {
            file(site_file)
        },
        site,
    }
}

/// CSR offsets for `count` nodes from (from, to) pairs: (by source, by target).
fn offsets(count: usize, pairs: impl Iterator<Item = (u32, u32)>) -> (Vec<u32>, Vec<u32>) {
    let mut out_offsets = vec![0u32; count + 1];
    let mut in_offsets = vec![0u32; count + 1];
    for (from, to) in pairs {
        out_offsets[from as usize + 1] += 1;
        in_offsets[to as usize + 1] += 1;
    }
    for i in 0..count {
        out_offsets[i + 1] += out_offsets[i];
        in_offsets[i + 1] += in_offsets[i];
    }
    (out_offsets, in_offsets)
}

/// `edges` in the order a stable sort by (target, source, kind, site) gives them, which
/// is the in-edge order of the format: placed by target at the in-offsets (`offsets`,
/// whose targets `target` gives), then each target's few edges sorted by the rest of the
/// key. A sort of the whole list by that key cost a fifth of a sympy edit's compile.
fn by_target<'e>(
    edges: &[&'e ResolvedEdge],
    in_offsets: &[u32],
    target: impl Fn(&ResolvedEdge) -> u32,
) -> Vec<&'e ResolvedEdge> {
    let Some(&first) = edges.first() else {
        return Vec::new();
    };
    let mut next: Vec<u32> = in_offsets.to_vec();
    let mut out = vec![first; edges.len()];
    for &e in edges {
        let slot = &mut next[target(e) as usize];
        out[*slot as usize] = e;
        *slot += 1;
    }
    for bounds in in_offsets.windows(2) {
        let bucket = &mut out[bounds[0] as usize..bounds[1] as usize];
        if bucket.len() > 1 {
            bucket.sort_by_key(|e| (e.from, e.kind, e.site));
        }
    }
    out
}

/// The root, what spans segments in global ids, and each segment's cross part. The
/// root's cross entries (hashes) are filled in when the parts are encoded.
fn compile_root(
    fingerprint: [u8; 32],
    resolved: &Resolved,
    cuts: &[Cut],
    owner: &[u32],
    segments: &[(CompiledSegment, [u8; 32])],
    known_cross: Vec<Option<CrossEntry>>,
    known_centrality: Option<Vec<u32>>,
) -> (RootData, Vec<CompiledCross>) {
    // The three whole-graph parts are independent: side by side, they cost an edit the
    // longest of them rather than their sum (a third of a sympy edit's compile).
    // Centrality is taken as given where it is known (`centrality_inputs` unchanged).
    let known_centrality = known_centrality.filter(|c| c.len() == resolved.nodes.len());
    let (cross, (module_edges, centrality)) = rayon::join(
        || cross_parts(resolved, cuts, owner, known_cross),
        || {
            rayon::join(
                || module_edges(resolved),
                || known_centrality.unwrap_or_else(|| centrality(resolved.nodes.len(), resolved)),
            )
        },
    );
    let root = RootData {
        fingerprint,
        segments: cuts
            .iter()
            .zip(segments)
            .map(|(cut, (segment, inputs))| match segment {
                CompiledSegment::Reused(entry) => entry.clone(),
                CompiledSegment::Built(_) => SegmentEntry {
                    hash: [0; 32],
                    inputs: *inputs,
                    nodes: cut.nodes.end - cut.nodes.start,
                    files: cut.files.end - cut.files.start,
                    strings: 0,
                    frontier: cut.frontier.end - cut.frontier.start,
                },
            })
            .collect(),
        cross: cross
            .iter()
            .map(|part| match part {
                CompiledCross::Built(part) => CrossEntry {
                    hash: [0; 32],
                    out_edges: part.out_edges.len() as u32,
                    in_edges: part.in_edges.len() as u32,
                },
                CompiledCross::Reused(entry) => entry.clone(),
            })
            .collect(),
        file_modules: resolved.file_modules.clone(),
        centrality,
        module_edges,
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
    };
    (root, cross)
}

/// Each segment's cross part: the edges with one end in the segment whose other end, or
/// whose site, lies in another segment, as a CSR over the segment's nodes in each
/// direction, the records in global ids. Only the parts `known` does not give are built,
/// from the edges that reach them: an edit builds the few its edges touch.
fn cross_parts(
    resolved: &Resolved,
    cuts: &[Cut],
    owner: &[u32],
    known: Vec<Option<CrossEntry>>,
) -> Vec<CompiledCross> {
    debug_assert!(resolved.edges.is_sorted(), "the resolver settles its edges");
    let mut file_owner = vec![NONE; resolved.file_nodes.len()];
    for (index, cut) in cuts.iter().enumerate() {
        for f in cut.files.clone() {
            file_owner[f as usize] = index as u32;
        }
    }
    let is_cross = |e: &ResolvedEdge| {
        let own = owner[e.from as usize];
        own != owner[e.to as usize] || e.site.is_some_and(|s| file_owner[s.file as usize] != own)
    };
    // The in-edges of the parts to build, in the in-edge order of the format (by target,
    // then source, kind and site: `by_target`), found side by side and placed by target.
    let incoming: Vec<&ResolvedEdge> = resolved
        .edges
        .par_iter()
        .filter(|e| known[owner[e.to as usize] as usize].is_none() && is_cross(e))
        .collect();
    let (_, in_offsets) = offsets(
        resolved.nodes.len(),
        incoming.iter().map(|e| (e.from, e.to)),
    );
    let incoming = by_target(&incoming, &in_offsets, |e| e.to);
    let record = |other: u32, e: &ResolvedEdge| edge_record(other, e, |file| file);
    let rows = |nodes: &std::ops::Range<u32>, ends: &mut dyn Iterator<Item = u32>| {
        let mut offsets = vec![0u32; (nodes.end - nodes.start) as usize + 1];
        for end in ends {
            offsets[(end - nodes.start) as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        offsets
    };
    cuts.par_iter()
        .zip(known)
        .map(|(cut, known)| {
            if let Some(entry) = known {
                return CompiledCross::Reused(entry);
            }
            // Out-edges: the sorted edges' run of the segment's sources, in their order.
            let edges = &resolved.edges;
            let first = edges.partition_point(|e| e.from < cut.nodes.start);
            let last = edges.partition_point(|e| e.from < cut.nodes.end);
            let out: Vec<&ResolvedEdge> =
                edges[first..last].iter().filter(|e| is_cross(e)).collect();
            let ins = &in_offsets[cut.nodes.start as usize..=cut.nodes.end as usize];
            let (first_in, last_in) = (ins[0], ins[ins.len() - 1]);
            CompiledCross::Built(CrossData {
                out_offsets: rows(&cut.nodes, &mut out.iter().map(|e| e.from)),
                out_edges: out.iter().map(|e| record(e.to, e)).collect(),
                in_offsets: ins.iter().map(|o| o - first_in).collect(),
                in_edges: incoming[first_in as usize..last_in as usize]
                    .iter()
                    .map(|e| record(e.from, e))
                    .collect(),
            })
        })
        .collect()
}

/// Module-level edges: every non-containment edge between nodes of different modules,
/// counted by (from, to, kind), in that order. A node in a file is in its file's
/// directory, a module declared in a file (`mod tests { … }`) too.
fn module_edges(resolved: &Resolved) -> Vec<ModuleEdgeRecord> {
    let nodes = &resolved.nodes;
    let module_of = |id: u32| -> u32 {
        match nodes[id as usize].file {
            Some(f) => resolved.file_modules[f as usize],
            None => id,
        }
    };
    let mut module_counts: HashMap<(u32, u32, u8), u32> = HashMap::default();
    for e in &resolved.edges {
        if e.kind == EdgeKind::Contains {
            continue;
        }
        let (a, b) = (module_of(e.from), module_of(e.to));
        if a != b {
            *module_counts.entry((a, b, e.kind as u8)).or_default() += 1;
        }
    }
    let mut module_counts: Vec<((u32, u32, u8), u32)> = module_counts.into_iter().collect();
    module_counts.sort_unstable();
    module_counts
        .into_iter()
        .map(|((from, to, kind), count)| ModuleEdgeRecord {
            from,
            to,
            kind,
            count,
        })
        .collect()
}

/// PageRank's damping and its fixed number of iterations (centrality).
const DAMPING: f64 = 0.85;
const ITERATIONS: usize = 20;

/// PageRank over the dependency edges (everything but containment), by sparse power
/// iteration. Each node *pulls* its sources' shares, in source order (its sources are
/// bucketed by a counting sort of `resolved.edges`, which is sorted by source), so the
/// nodes' sums are independent and computed in parallel, and each sum adds the same
/// terms in the same order as pushing every source's share to its targets did: the
/// result is the same bit for bit (`tests::pulled_ranks_equal_pushed_ranks_bit_for_bit`).
fn centrality(node_count: usize, resolved: &Resolved) -> Vec<u32> {
    use rayon::prelude::*;
    if node_count == 0 {
        return Vec::new();
    }
    let counted = |e: &&ResolvedEdge| counted(e);
    let mut degree = vec![0u32; node_count];
    let mut in_offsets = vec![0u32; node_count + 1];
    for e in resolved.edges.iter().filter(counted) {
        degree[e.from as usize] += 1;
        in_offsets[e.to as usize + 1] += 1;
    }
    for i in 0..node_count {
        in_offsets[i + 1] += in_offsets[i];
    }
    let mut sources = vec![0u32; in_offsets[node_count] as usize];
    let mut fill: Vec<u32> = in_offsets[..node_count].to_vec();
    for e in resolved.edges.iter().filter(counted) {
        let at = &mut fill[e.to as usize];
        sources[*at as usize] = e.from;
        *at += 1;
    }
    let n = node_count as f64;
    let mut rank = vec![1.0 / n; node_count];
    let mut share = vec![0.0; node_count];
    for _ in 0..ITERATIONS {
        let dangling: f64 = rank
            .iter()
            .zip(&degree)
            .filter(|(_, d)| **d == 0)
            .map(|(r, _)| r)
            .sum();
        let base = (1.0 - DAMPING) / n + DAMPING * dangling / n;
        share
            .par_iter_mut()
            .zip(rank.par_iter().zip(degree.par_iter()))
            .with_min_len(4096)
            .for_each(|(share, (rank, &degree))| {
                if degree > 0 {
                    *share = DAMPING * rank / degree as f64;
                }
            });
        rank.par_iter_mut()
            .enumerate()
            .with_min_len(4096)
            .for_each(|(node, rank)| {
                let from = &sources[in_offsets[node] as usize..in_offsets[node + 1] as usize];
                let mut sum = base;
                for &source in from {
                    sum += share[source as usize];
                }
                *rank = sum;
            });
    }
    rank.iter()
        .map(|r| (r * n * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32)
        .collect()
}

/// A digest of all that centrality is a function of: the node count and the counted
/// edges' (source, target) in order (the order fixes the floating-point sums). A graph
/// whose digest is the committed generation's has that generation's centrality, bit for
/// bit.
pub fn centrality_inputs(resolved: &Resolved) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&(resolved.nodes.len() as u64).to_le_bytes());
    let mut buffer = Vec::with_capacity(64 * 1024);
    for e in resolved.edges.iter().filter(|e| counted(e)) {
        buffer.extend_from_slice(&e.from.to_le_bytes());
        buffer.extend_from_slice(&e.to.to_le_bytes());
        if buffer.len() >= 64 * 1024 {
            hasher.update(&buffer);
            buffer.clear();
        }
    }
    hasher.update(&buffer);
    *hasher.finalize().as_bytes()
}

/// Whether an edge counts for centrality: a reference between two nodes (containment
/// and self-references do not).
fn counted(e: &ResolvedEdge) -> bool {
    e.kind != EdgeKind::Contains && e.from != e.to
}

#[cfg(test)]
mod tests {
    use super::BufferedHasher;
    use crate::build::resolve::Resolved;
    use crate::graph::codes::EdgeKind;

    #[test]
    fn suffix_keys_are_the_tails_of_the_dotted_path_that_joined_parts_gave() {
        for (module, qualified) in [
            ("pkg.mod", "Class.method"),
            ("", "f"),
            ("a", ".b..c."),
            ("", ""),
            ("x", "Ünïcode.Çlass"),
        ] {
            // The former construction: every tail of the non-empty parts, joined.
            let full = format!("{module}.{qualified}");
            let parts: Vec<&str> = full.split('.').filter(|p| !p.is_empty()).collect();
            let joined: Vec<String> = (0..parts.len().saturating_sub(1))
                .map(|start| parts[start..].join("."))
                .collect();
            let dotted = super::dotted_path(module, qualified);
            let mut tails = Vec::new();
            let mut tail = dotted.as_str();
            while let Some((_, rest)) = tail.split_once('.') {
                tails.push(tail.to_string());
                tail = rest;
            }
            assert_eq!(tails, joined, "{module} + {qualified}");
        }
        for name in ["snake_case", "CamelCase", "ÄÖ", "ǅx", "x1"] {
            assert_eq!(super::folded_name(name), name.to_lowercase());
        }
    }

    #[test]
    fn a_buffered_digest_equals_the_pieces_hashed_one_by_one() {
        // Pieces of every small size, past several flushes of the buffer.
        let pieces: Vec<Vec<u8>> = (0..60_000u32)
            .map(|i| i.to_le_bytes()[..(i % 5) as usize].to_vec())
            .chain(std::iter::once(vec![7; 3 * BufferedHasher::FLUSH_AT + 1]))
            .collect();
        let mut plain = blake3::Hasher::new();
        let mut buffered = BufferedHasher::default();
        for piece in &pieces {
            plain.update(piece);
            buffered.update(piece);
        }
        assert_eq!(buffered.finalize(), plain.finalize());
    }

    /// The ranks as they were computed before they were pulled: each source pushes its
    /// share to its targets, sources in order.
    fn pushed_centrality(node_count: usize, resolved: &Resolved) -> Vec<u32> {
        if node_count == 0 {
            return Vec::new();
        }
        let mut offsets = vec![0u32; node_count + 1];
        let mut targets = Vec::with_capacity(resolved.edges.len());
        for e in &resolved.edges {
            if e.kind != EdgeKind::Contains && e.from != e.to {
                offsets[e.from as usize + 1] += 1;
                targets.push(e.to);
            }
        }
        for i in 0..node_count {
            offsets[i + 1] += offsets[i];
        }
        use super::{DAMPING, ITERATIONS};
        let n = node_count as f64;
        let mut rank = vec![1.0 / n; node_count];
        let mut next = vec![0.0; node_count];
        for _ in 0..ITERATIONS {
            let dangling: f64 = rank
                .iter()
                .zip(offsets.windows(2))
                .filter(|(_, w)| w[0] == w[1])
                .map(|(r, _)| r)
                .sum();
            let base = (1.0 - DAMPING) / n + DAMPING * dangling / n;
            next.iter_mut().for_each(|x| *x = base);
            for (index, w) in offsets.windows(2).enumerate() {
                let (start, end) = (w[0] as usize, w[1] as usize);
                if start == end {
                    continue;
                }
                let share = DAMPING * rank[index] / (end - start) as f64;
                for &target in &targets[start..end] {
                    next[target as usize] += share;
                }
            }
            std::mem::swap(&mut rank, &mut next);
        }
        rank.iter()
            .map(|r| (r * n * 1000.0).round().clamp(0.0, u32::MAX as f64) as u32)
            .collect()
    }

    #[test]
    fn pulled_ranks_equal_pushed_ranks_bit_for_bit() {
        use crate::build::resolve::ResolvedEdge;
        use crate::graph::codes::{EdgeSubkind, Provenance, Resolution};
        // A pseudo-random graph with duplicate edges, self-loops, containment (not
        // counted) and nodes with no out-edges, sorted by source as resolution leaves it.
        let nodes = 3_000u32;
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let kinds = [
            EdgeKind::Calls,
            EdgeKind::References,
            EdgeKind::Contains,
            EdgeKind::Imports,
        ];
        let mut edges: Vec<ResolvedEdge> = (0..20_000)
            .map(|_| {
                let from = (next() % u64::from(nodes / 2)) as u32 * 2;
                let to = if next() % 50 == 0 {
                    from
                } else {
                    (next() % u64::from(nodes)) as u32
                };
                ResolvedEdge {
                    from,
                    to,
                    kind: kinds[(next() % 4) as usize],
                    subkind: EdgeSubkind::None,
                    provenance: Provenance::TreeSitter,
                    resolution: Resolution::Import,
                    confidence: 90,
                    site: None,
                    flags: 0,
                }
            })
            .collect();
        let duplicates: Vec<ResolvedEdge> = edges.iter().step_by(7).copied().collect();
        edges.extend(duplicates);
        edges.sort();
        let resolved = Resolved {
            edges,
            ..Resolved::default()
        };
        let pulled = super::centrality(nodes as usize, &resolved);
        assert_eq!(pulled, pushed_centrality(nodes as usize, &resolved));
        assert!(pulled.iter().any(|&r| r != pulled[0]), "ranks differ");
    }

    #[test]
    fn centrality_inputs_see_references_between_nodes_and_nothing_else() {
        use crate::build::resolve::{ResolvedEdge, ResolvedNode, Site, SpanKey};
        use crate::graph::codes::{EdgeSubkind, Provenance, Resolution};
        let edge = |from, to, kind| ResolvedEdge {
            from,
            to,
            kind,
            subkind: EdgeSubkind::None,
            provenance: Provenance::TreeSitter,
            resolution: Resolution::Scope,
            confidence: 90,
            site: None,
            flags: 0,
        };
        let node = ResolvedNode {
            kind: crate::syntax::facts::SymbolKind::Function,
            name: "f".into(),
            qualified: "f".into(),
            file: Some(0),
            span: Default::default(),
            signature: Default::default(),
            doc: None,
            parent: None,
            visibility: crate::syntax::facts::Visibility::Public,
            in_test_scope: false,
            declares_only: false,
            scip_symbol: None,
        };
        let graph = |edges: Vec<ResolvedEdge>, nodes: usize| Resolved {
            edges,
            nodes: vec![node.clone(); nodes],
            ..Resolved::default()
        };
        let base = vec![
            edge(0, 1, EdgeKind::Calls),
            edge(1, 2, EdgeKind::References),
        ];
        let digest = super::centrality_inputs(&graph(base.clone(), 3));
        // Where a call sits, how sure or how resolved it is, containment and
        // self-references: PageRank reads none of them.
        let mut moved = base.clone();
        moved[0].site = Some(Site {
            file: 0,
            span: SpanKey {
                start_byte: 40,
                end_byte: 44,
                start_line: 3,
                end_line: 3,
            },
        });
        moved[0].confidence = 70;
        moved[1].kind = EdgeKind::Calls;
        moved.push(edge(0, 2, EdgeKind::Contains));
        moved.push(edge(2, 2, EdgeKind::Calls));
        assert_eq!(super::centrality_inputs(&graph(moved, 3)), digest);
        // A reference added or retargeted, or a node added: another digest.
        let mut added = base.clone();
        added.push(edge(2, 0, EdgeKind::Calls));
        assert_ne!(super::centrality_inputs(&graph(added, 3)), digest);
        let mut retargeted = base.clone();
        retargeted[1].to = 0;
        assert_ne!(super::centrality_inputs(&graph(retargeted, 3)), digest);
        assert_ne!(super::centrality_inputs(&graph(base, 4)), digest);
    }
}
