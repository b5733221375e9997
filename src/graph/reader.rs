//! The read-only, zero-copy view of a validated graph that every query uses.
//!
//! A graph is one or more mapped *parts*: the whole file for formats 1–3, or the
//! segments of a format-4 or 5 generation (graph-schema/README.md, "The edit path"),
//! each with, from format 5, its cross part (the edges it shares with other segments, in
//! global ids). Each part
//! numbers its nodes, files, strings and frontier entries from 0; the reader hands out
//! global ids (a part's base plus the local id), so callers never see a part. Records are
//! read in place through small views (`NodeRef`, `FileRef`, `EdgeRef`, `FrontierRef`)
//! that translate the ids they hold and deref to the archived record for everything else.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use super::data;
use super::data::{
    ArchivedEdgeRecord, ArchivedFileRecord, ArchivedFrontierRecord, ArchivedGraphData,
    ArchivedGraphStats, ArchivedModuleEdgeRecord, ArchivedNameEntry, ArchivedNodeRecord, NONE,
};
use super::format::{CrossFile, GraphFile, Opened, RootCross, RootFile, RootView, hex};
use super::ids::{FileId, NodeId, StrId};
use super::string_filter::StringFilter;

use crate::error::Result;
use crate::syntax::facts::SymbolKind;

/// Which way an edge is followed from a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the node to the edge's target (callees, members, what it implements).
    Outgoing,
    /// From the edge's source to the node (callers, implementors, dependents).
    Incoming,
}

/// Which name table a lookup searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameTable {
    Exact,
    Folded,
    Suffix,
    Segments,
}

/// The global ids a part's local ids start at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Bases {
    node: u32,
    file: u32,
    string: u32,
    frontier: u32,
}

impl Bases {
    fn node(&self, local: u32) -> NodeId {
        NodeId(shift(self.node, local))
    }

    fn file(&self, local: u32) -> FileId {
        FileId(shift(self.file, local))
    }

    fn string(&self, local: u32) -> StrId {
        StrId(shift(self.string, local))
    }
}

/// `base + local`, keeping the stored "no value".
fn shift(base: u32, local: u32) -> u32 {
    if local == NONE { NONE } else { base + local }
}

/// One mapped, validated part and where its ids start.
struct Part {
    file: GraphFile,
    base: Bases,
    /// Format 5: the segment's edges to and from other segments.
    cross: Option<(CrossFile, std::ptr::NonNull<data::ArchivedCrossData>)>,
    /// The archive's root in `file`'s mapping, found once: every accessor reads through
    /// it, and finding it again costs a few dependent loads each time.
    data: std::ptr::NonNull<ArchivedGraphData>,
    /// Whether the part's string blob is UTF-8 and every string offset falls on a
    /// character boundary, checked on first use: then no string needs checking again.
    strings_utf8: OnceLock<bool>,
}

// SAFETY: `data` points into the immutable mapping `file` owns (through an `Arc`), and
// the cross pointer into the one its cross file owns; neither moves nor changes while the
// part lives, and the part only ever reads through them.
unsafe impl Send for Part {}
// SAFETY: as above: shared reads of immutable memory.
unsafe impl Sync for Part {}

impl Part {
    fn new(file: GraphFile, cross: Option<CrossFile>, base: Bases) -> Part {
        let data = std::ptr::NonNull::from(file.data());
        let cross = cross.map(|c| {
            let data = std::ptr::NonNull::from(c.data());
            (c, data)
        });
        Part {
            file,
            base,
            cross,
            data,
            strings_utf8: OnceLock::new(),
        }
    }

    fn data(&self) -> &ArchivedGraphData {
        // SAFETY: see the `Send` impl: the pointee lives as long as `self.file`.
        unsafe { self.data.as_ref() }
    }

    /// The filter of the part's strings where it pays: in a process that keeps graphs
    /// open (`reuse_validated_mappings`), reading a graph of several parts. Built on first
    /// use and kept with the mapping, which later generations share.
    fn string_filter(&self, parts: usize) -> Option<&StringFilter> {
        if parts < 2 || VALIDATED.get().is_none() {
            return None;
        }
        Some(self.file.string_filter().get_or_init(|| {
            let d = self.data();
            let count = d.string_offsets.len().saturating_sub(1) as u32;
            StringFilter::of((0..count).map(|id| local_str_bytes(d, id)))
        }))
    }

    /// False when the part holds no string `key` (the filter says so), true when it may.
    fn may_hold(&self, parts: usize, key: &str) -> bool {
        self.string_filter(parts)
            .is_none_or(|filter| filter.may_hold(key.as_bytes()))
    }

    fn cross(&self) -> Option<&data::ArchivedCrossData> {
        // SAFETY: as `data`: the pointee lives as long as the cross file the part owns.
        self.cross
            .as_ref()
            .map(|(_, data)| unsafe { data.as_ref() })
    }

    /// String `local` of this part; invalid UTF-8 (a corrupt file) reads as "".
    fn str(&self, local: u32) -> &str {
        let bytes = local_str_bytes(self.data(), local);
        if *self
            .strings_utf8
            .get_or_init(|| strings_are_utf8(self.data()))
        {
            // SAFETY: the blob is UTF-8 and `bytes` runs between two of its offsets, each
            // on a character boundary (`strings_are_utf8`), or is empty.
            unsafe { std::str::from_utf8_unchecked(bytes) }
        } else {
            std::str::from_utf8(bytes).unwrap_or("")
        }
    }
}

/// Whether every string of `d` is UTF-8 as a slice of its blob: the blob is UTF-8 and
/// each offset is a character boundary in it.
fn strings_are_utf8(d: &ArchivedGraphData) -> bool {
    let Ok(blob) = std::str::from_utf8(d.string_bytes.as_slice()) else {
        return false;
    };
    d.string_offsets
        .iter()
        .all(|offset| blob.is_char_boundary(offset.to_native() as usize))
}

struct Inner {
    /// In id order: part `i` owns the global ids from its bases up to part `i + 1`'s.
    parts: Vec<Part>,
    /// Formats 4 and 5: what spans the segments.
    root: Option<RootFile>,
    /// Totals over the parts.
    counts: Bases,
    /// Where each part's ids begin, by kind.
    starts: Starts,
}

/// Where each kind's ids begin in every part. Every node, file and string read begins by
/// finding the part that holds its id.
#[derive(Default)]
struct Starts {
    node: PartStarts,
    file: PartStarts,
    string: PartStarts,
    frontier: PartStarts,
}

/// One kind's first global id in every part, in part order, and where a block of ids
/// begins: finding an id's part reads its block's entry and steps over the few starts
/// inside the block, where a binary search over every start took a tenth of a hub's
/// impact walk (94 parts on sympy).
#[derive(Default)]
struct PartStarts {
    starts: Vec<u32>,
    /// log2 of the ids in a block.
    shift: u32,
    /// For each block of ids, the part holding its first id.
    blocks: Vec<u32>,
}

impl PartStarts {
    /// `starts` of parts holding `count` ids in all (an empty part starts where the next
    /// does).
    fn new(starts: Vec<u32>, count: u32) -> PartStarts {
        // Blocks of about a quarter of a part: a block holds a start rarely.
        let per_part = count / (starts.len() as u32).max(1);
        let shift = (per_part / 4).max(1).ilog2().min(24);
        let blocks = (0..=count >> shift)
            .map(|block| last_start_at_most(&starts, block << shift) as u32)
            .collect();
        PartStarts {
            starts,
            shift,
            blocks,
        }
    }

    /// The last part whose start is at most `id` (the first part for none: there is
    /// always a part starting at 0).
    fn part_of(&self, id: u32) -> usize {
        let block = (id >> self.shift) as usize;
        let Some(&first) = self.blocks.get(block).or(self.blocks.last()) else {
            return 0;
        };
        let mut at = first as usize;
        while self.starts.get(at + 1).is_some_and(|&next| next <= id) {
            at += 1;
        }
        at
    }

    fn start(&self, part: usize) -> u32 {
        self.starts.get(part).copied().unwrap_or(0)
    }
}

/// The last index of `starts` (ascending) whose start is at most `id`; 0 for none.
fn last_start_at_most(starts: &[u32], id: u32) -> usize {
    starts
        .partition_point(|&start| start <= id)
        .saturating_sub(1)
}

/// A validated, memory-mapped graph. Cheap to query; every accessor is zero-copy; a clone
/// shares the mappings.
#[derive(Clone)]
pub struct Graph {
    inner: Arc<Inner>,
}

/// Which file a path named when its graph was validated.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileKey {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileKey {
    fn of(path: &Path) -> Option<FileKey> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(FileKey {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// What a long-lived process keeps validated (`reuse_validated_mappings`).
#[derive(Default)]
struct Validated {
    /// Graphs by root (or whole-graph) path, with the file the path named.
    graphs: HashMap<PathBuf, (FileKey, Graph)>,
    /// The segments of those graphs by hash, with the file each was read from: a new
    /// generation shares most of its segments (hard links: the same file) with the one
    /// before, and those are not validated again.
    segments: HashMap<[u8; 32], (FileKey, GraphFile)>,
    /// Cross parts likewise, by hash: their records name global ids, so a part serves
    /// another generation where it fits that graph's counts (`CrossFile::fits`).
    cross: HashMap<[u8; 32], (FileKey, CrossFile)>,
}

static VALIDATED: OnceLock<Mutex<Validated>> = OnceLock::new();
/// Graphs kept at most; beyond it the cache starts again. A server follows one
/// repository, whose generations replace each other: the committed one and the one before
/// it are all it needs, and a mapping it keeps holds its pages (under a watcher that
/// publishes every few seconds, 8 kept mappings were most of a daemon's resident memory).
const VALIDATED_CAP: usize = 2;

/// From now on this process reuses a validated graph while its path still names the same
/// file (device, inode, length, modification time) — for a long-lived server, where
/// checking a 45 MB payload's checksum on every query would dominate its latency. Sound
/// because a published generation is written once and never modified (R-GEN-2): a new
/// generation is a new root (whose segments are named by their hashes). One-shot commands
/// never turn it on.
pub fn reuse_validated_mappings() {
    VALIDATED.get_or_init(|| Mutex::new(Validated::default()));
}

/// Segment `hash` of the root at `root_path`, validated — or, in a process that reuses
/// mappings, the mapping already validated from the same file.
fn open_segment(root_path: &Path, hash: &[u8; 32]) -> Result<GraphFile> {
    let Some(cache) = VALIDATED.get() else {
        return GraphFile::open_segment(root_path, hash);
    };
    let key = FileKey::of(&super::format::segment_path(root_path, hash));
    if let Some(key) = key
        && let Ok(cache) = cache.lock()
        && let Some((known, file)) = cache.segments.get(hash)
        && *known == key
    {
        return Ok(file.clone());
    }
    let file = GraphFile::open_segment(root_path, hash)?;
    if let Some(key) = key
        && let Ok(mut cache) = cache.lock()
    {
        cache.segments.insert(*hash, (key, file.clone()));
    }
    Ok(file)
}

/// Cross part `entry` of the root at `root_path`, validated for a segment of `nodes`
/// nodes in a graph of `graph_nodes` nodes and `graph_files` files — or, in a process
/// that reuses mappings, the mapping already validated from the same file, where it
/// fits those counts.
fn open_cross(
    root_path: &Path,
    entry: &data::ArchivedCrossEntry,
    nodes: u32,
    graph_nodes: u32,
    graph_files: u32,
) -> Result<CrossFile> {
    let open = || CrossFile::open(root_path, entry, nodes, graph_nodes, graph_files);
    let Some(cache) = VALIDATED.get() else {
        return open();
    };
    let key = FileKey::of(&super::format::cross_path(root_path, &entry.hash));
    if let Some(key) = key
        && let Ok(cache) = cache.lock()
        && let Some((known, file)) = cache.cross.get(&entry.hash)
        && *known == key
        && file.fits(nodes, graph_nodes, graph_files)
    {
        return Ok(file.clone());
    }
    let file = open()?;
    if let Some(key) = key
        && let Ok(mut cache) = cache.lock()
    {
        cache.cross.insert(entry.hash, (key, file.clone()));
    }
    Ok(file)
}

impl Graph {
    /// Opens the graph at `path`: a whole graph (formats 1–3), or a root and the
    /// segments it names (format 4) with their cross parts (format 5), each validated.
    pub fn open(path: &Path) -> Result<Graph> {
        let key = VALIDATED.get().and_then(|_| FileKey::of(path));
        if let (Some(cache), Some(key)) = (VALIDATED.get(), key)
            && let Ok(cache) = cache.lock()
            && let Some((known, graph)) = cache.graphs.get(path)
            && *known == key
        {
            return Ok(graph.clone());
        }
        let graph = match super::format::open(path)? {
            Opened::Whole(file) => Graph::from_parts(vec![(file, None)], None),
            Opened::Root(root) => {
                use rayon::prelude::*;
                let view = root.view();
                let graph_nodes: u32 = view.segments.iter().map(|e| e.nodes.to_native()).sum();
                let graph_files: u32 = view.segments.iter().map(|e| e.files.to_native()).sum();
                // Side by side: checking each segment's checksum is most of an open's cost,
                // and one segment at a time left a core idle between small ones.
                let files = view
                    .segments
                    .as_slice()
                    .par_iter()
                    .enumerate()
                    .map(|(index, entry)| {
                        let file = open_segment(path, &entry.hash)?;
                        let d = file.data();
                        let counts = (
                            d.nodes.len(),
                            d.files.len(),
                            d.string_offsets.len().saturating_sub(1),
                            d.frontier.len(),
                        );
                        let listed = (
                            entry.nodes.to_native() as usize,
                            entry.files.to_native() as usize,
                            entry.strings.to_native() as usize,
                            entry.frontier.to_native() as usize,
                        );
                        if counts != listed {
                            return Err(crate::error::AtlasError::GraphCorrupt {
                                path: file.path().to_path_buf(),
                                reason: "the segment's counts differ from the root's".into(),
                            });
                        }
                        let cross = match view.cross {
                            // `check_root` saw one entry per segment.
                            RootCross::Parts(parts) => Some(open_cross(
                                path,
                                &parts[index],
                                entry.nodes.to_native(),
                                graph_nodes,
                                graph_files,
                            )?),
                            RootCross::Whole(_) => None,
                        };
                        Ok((file, cross))
                    })
                    .collect::<Vec<Result<(GraphFile, Option<CrossFile>)>>>()
                    // The first damaged segment in the root's order, whichever thread met it.
                    .into_iter()
                    .collect::<Result<Vec<_>>>()?;
                Graph::from_parts(files, Some(root))
            }
        };
        if let (Some(cache), Some(key)) = (VALIDATED.get(), key)
            && let Ok(mut cache) = cache.lock()
        {
            if cache.graphs.len() >= VALIDATED_CAP {
                cache.graphs.clear();
            }
            cache
                .graphs
                .insert(path.to_path_buf(), (key, graph.clone()));
            // Keep the segments of the kept graphs only.
            let kept: std::collections::HashSet<[u8; 32]> = cache
                .graphs
                .values()
                .flat_map(|(_, g)| g.segment_hashes())
                .collect();
            cache.segments.retain(|hash, _| kept.contains(hash));
            let kept: std::collections::HashSet<[u8; 32]> = cache
                .graphs
                .values()
                .flat_map(|(_, g)| g.cross_hashes())
                .collect();
            cache.cross.retain(|hash, _| kept.contains(hash));
        }
        Ok(graph)
    }

    fn from_parts(files: Vec<(GraphFile, Option<CrossFile>)>, root: Option<RootFile>) -> Graph {
        let mut counts = Bases::default();
        let mut parts = Vec::with_capacity(files.len());
        let mut bases = Vec::with_capacity(files.len());
        for (file, cross) in files {
            let base = counts;
            bases.push(base);
            let d = file.data();
            counts.node += d.nodes.len() as u32;
            counts.file += d.files.len() as u32;
            counts.string += d.string_offsets.len().saturating_sub(1) as u32;
            counts.frontier += d.frontier.len() as u32;
            parts.push(Part::new(file, cross, base));
        }
        let of = |kind: fn(&Bases) -> u32| {
            PartStarts::new(bases.iter().map(kind).collect(), kind(&counts))
        };
        let starts = Starts {
            node: of(|b| b.node),
            file: of(|b| b.file),
            string: of(|b| b.string),
            frontier: of(|b| b.frontier),
        };
        Graph {
            inner: Arc::new(Inner {
                parts,
                root,
                counts,
                starts,
            }),
        }
    }

    fn root(&self) -> Option<RootView<'_>> {
        self.inner.root.as_ref().map(RootFile::view)
    }

    fn parts(&self) -> &[Part] {
        &self.inner.parts
    }

    /// The part holding global id `id` of the kind `base` selects, and the local id.
    fn part_by(&self, id: u32, kind: impl Fn(&Starts) -> &PartStarts) -> (&Part, u32) {
        let starts = kind(&self.inner.starts);
        let at = starts.part_of(id);
        (&self.parts()[at], id - starts.start(at).min(id))
    }

    /// The whole graph of formats 1–3 (which holds what a format-4 root holds).
    fn whole(&self) -> &ArchivedGraphData {
        self.parts()[0].data()
    }

    /// Bytes mapped: the root and every part's files.
    pub fn byte_len(&self) -> usize {
        self.inner.root.as_ref().map_or(0, RootFile::byte_len)
            + self
                .parts()
                .iter()
                .map(|p| p.file.byte_len() + p.cross.as_ref().map_or(0, |(c, _)| c.byte_len()))
                .sum::<usize>()
    }

    /// The format version of the file this graph was read from.
    pub fn format_version(&self) -> u32 {
        match &self.inner.root {
            Some(root) => root.version(),
            None => self.parts()[0].file.version(),
        }
    }

    /// How many segments the graph is read from (1 for formats 1–3).
    pub fn segment_count(&self) -> usize {
        self.parts().len()
    }

    /// The hashes of a format-4 or 5 graph's segments (none for formats 1–3).
    fn segment_hashes(&self) -> Vec<[u8; 32]> {
        match self.root() {
            Some(root) => root.segments.iter().map(|e| e.hash).collect(),
            None => Vec::new(),
        }
    }

    /// The hashes of a format-5 graph's cross parts (none before format 5).
    fn cross_hashes(&self) -> Vec<[u8; 32]> {
        match self.root().map(|r| r.cross) {
            Some(RootCross::Parts(parts)) => parts.iter().map(|e| e.hash).collect(),
            _ => Vec::new(),
        }
    }

    pub fn fingerprint_bytes(&self) -> [u8; 32] {
        match self.root() {
            Some(root) => *root.fingerprint,
            None => self.whole().fingerprint,
        }
    }

    pub fn fingerprint(&self) -> String {
        hex(&self.fingerprint_bytes())
    }

    pub fn stats(&self) -> &ArchivedGraphStats {
        match self.root() {
            Some(root) => root.stats,
            None => &self.whole().stats,
        }
    }

    /// Module-level edges (global ids).
    pub fn module_edges(&self) -> impl Iterator<Item = &ArchivedModuleEdgeRecord> {
        match self.root() {
            Some(root) => root.module_edges.iter(),
            None => self.whole().module_edges.iter(),
        }
    }

    /// Bytes of string `id` (empty when out of range).
    fn str_bytes(&self, id: StrId) -> &[u8] {
        if id.0 >= self.inner.counts.string {
            return &[];
        }
        let (part, local) = self.part_by(id.0, |s| &s.string);
        local_str_bytes(part.data(), local)
    }

    /// String `id`; an id out of range or invalid UTF-8 (a corrupt file) reads as "".
    pub fn str(&self, id: StrId) -> &str {
        if id.0 >= self.inner.counts.string {
            return "";
        }
        let (part, local) = self.part_by(id.0, |s| &s.string);
        part.str(local)
    }

    /// `self.str(id) == text`, without checking UTF-8 when the bytes differ anyway
    /// (comparing names across a class hierarchy takes thousands).
    pub fn str_is(&self, id: StrId, text: &str) -> bool {
        let bytes = self.str_bytes(id);
        // Equal bytes are `text`'s, so valid; other bytes read as "" only if invalid.
        bytes == text.as_bytes() || (text.is_empty() && std::str::from_utf8(bytes).is_err())
    }

    pub fn node_count(&self) -> usize {
        self.inner.counts.node as usize
    }

    /// Every node id, in order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + use<> {
        (0..self.inner.counts.node).map(NodeId)
    }

    /// Node `id` (which must be below `node_count`).
    pub fn node(&self, id: NodeId) -> NodeRef<'_> {
        let (part, local) = self.part_by(id.0, |s| &s.node);
        NodeRef {
            record: &part.data().nodes[local as usize],
            base: &part.base,
            file_modules: self.root().map(|r| r.file_modules),
        }
    }

    /// PageRank of node `id`, scaled so that the mean over all nodes is 1000.
    pub fn centrality(&self, id: NodeId) -> u32 {
        match self.root() {
            Some(root) => root.centrality.get(id.index()).map_or(0, |c| c.to_native()),
            None => self.node(id).record.centrality.to_native(),
        }
    }

    pub fn kind(&self, id: NodeId) -> SymbolKind {
        SymbolKind::from_code(self.node(id).kind).unwrap_or(SymbolKind::Variable)
    }

    /// Whether `id` is a directory's module node (the root `.` among them). A module
    /// declared in a file (Rust's `mod m { … }` and `mod m;`, TypeScript's `namespace`)
    /// is a definition of that file like any other: labelled `path::name`, its module
    /// the file's.
    pub fn is_directory(&self, id: NodeId) -> bool {
        self.kind(id) == SymbolKind::Module && self.node(id).file() == FileId::NONE
    }

    pub fn file_of(&self, id: NodeId) -> Option<FileRef<'_>> {
        self.file(self.node(id).file())
    }

    pub fn file_count(&self) -> usize {
        self.inner.counts.file as usize
    }

    /// Every file id, in path order.
    pub fn files(&self) -> impl Iterator<Item = FileId> + use<> {
        (0..self.inner.counts.file).map(FileId)
    }

    /// The record of file `id` (`None` for `FileId::NONE` or out of range).
    pub fn file(&self, id: FileId) -> Option<FileRef<'_>> {
        if id.0 >= self.inner.counts.file {
            return None;
        }
        let (part, local) = self.part_by(id.0, |s| &s.file);
        Some(FileRef {
            record: part.data().files.get(local as usize)?,
            base: &part.base,
            module: self
                .root()
                .and_then(|r| r.file_modules.get(id.index()))
                .map(|m| NodeId(m.to_native())),
        })
    }

    /// The class of file `id` (`None` for `FileId::NONE`, out of range or an unknown
    /// code): what `file` reads of it, without locating its module (a walk asks this of
    /// thousands of files).
    pub fn file_class(&self, id: FileId) -> Option<crate::graph::codes::FileClass> {
        if id.0 >= self.inner.counts.file {
            return None;
        }
        let (part, local) = self.part_by(id.0, |s| &s.file);
        let record = part.data().files.get(local as usize)?;
        crate::graph::codes::FileClass::from_code(record.class)
    }

    /// A symbol of a test file, or inside a test scope (`#[cfg(test)]`, …).
    pub fn is_test(&self, id: NodeId) -> bool {
        self.file_of(id).is_some_and(|f| {
            crate::graph::codes::FileClass::from_code(f.class)
                == Some(crate::graph::codes::FileClass::Test)
        }) || self.node(id).flags & data::FLAG_TEST_SCOPE != 0
    }

    /// The implementation among a callable's overloads (`@overload` stubs, TypeScript
    /// signatures share its qualified name in one file): not a stub, else the one with
    /// the largest body. Any other node is its own implementation.
    pub fn implementation(&self, id: NodeId) -> NodeId {
        let record = self.node(id);
        let parent = record.parent();
        if parent.is_none() || !self.kind(id).is_callable() {
            return id;
        }
        let qualified = self.str(record.qualified());
        let body = |n: NodeId| {
            let r = self.node(n);
            let end = r.span.end_byte.to_native();
            (
                r.flags & data::FLAG_DECLARES_ONLY == 0,
                end.saturating_sub(r.signature.end_byte.to_native()),
                end.saturating_sub(r.span.start_byte.to_native()),
                std::cmp::Reverse(n),
            )
        };
        self.out_edges(parent)
            .filter(|e| e.kind == crate::graph::codes::EdgeKind::Contains as u8)
            .map(|e| e.node())
            .filter(|&n| {
                self.str(self.node(n).qualified()) == qualified && self.kind(n).is_callable()
            })
            .max_by_key(|&n| body(n))
            .unwrap_or(id)
    }

    /// The file whose repository path is `path` (files are sorted by path).
    pub fn file_index(&self, path: &str) -> Option<FileId> {
        let path_of = |i: u32| self.file(FileId(i)).map_or("", |f| self.str(f.path()));
        let (mut lo, mut hi) = (0u32, self.inner.counts.file);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if path_of(mid) < path {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        (lo < self.inner.counts.file && path_of(lo) == path).then_some(FileId(lo))
    }

    /// Label of a node: `path::Qualified` for symbols, the path for files, `path/` for
    /// modules.
    pub fn label(&self, id: NodeId) -> String {
        self.label_parts(id).concat()
    }

    /// `label` in the pieces it is joined from, for a caller that hashes or compares it
    /// without building the string.
    /// The innermost of `nodes` (the smallest span) whose span holds the 0-based `line`.
    pub fn innermost_at_line(
        &self,
        nodes: impl IntoIterator<Item = NodeId>,
        line: u32,
    ) -> Option<NodeId> {
        nodes
            .into_iter()
            .filter(|&n| {
                let span = &self.node(n).span;
                span.start_line.to_native() <= line && line <= span.end_line.to_native()
            })
            .min_by_key(|&n| {
                let span = &self.node(n).span;
                span.end_byte.to_native() - span.start_byte.to_native()
            })
    }

    pub fn label_parts(&self, id: NodeId) -> [&str; 3] {
        let node = self.node(id);
        let qualified = self.str(node.qualified());
        match SymbolKind::from_code(node.kind).unwrap_or(SymbolKind::Variable) {
            SymbolKind::Module if node.file() == FileId::NONE => [qualified, "/", ""],
            SymbolKind::File => [qualified, "", ""],
            _ => [self.file_path(node.file()), "::", qualified],
        }
    }

    pub fn file_path(&self, file: FileId) -> &str {
        self.file(file).map_or("", |f| self.str(f.path()))
    }

    /// The edges of `id` in `direction` (`edge.node()` is the other end).
    pub fn edges(&self, id: NodeId, direction: Direction) -> Edges<'_> {
        let (part, local) = self.part_by(id.0, |s| &s.node);
        let d = part.data();
        let (offsets, edges) = match direction {
            Direction::Outgoing => (&d.out_offsets, &d.out_edges),
            Direction::Incoming => (&d.in_offsets, &d.in_edges),
        };
        let slice = |offsets: &'_ rkyv::vec::ArchivedVec<rkyv::rend::u32_le>, at: usize| {
            (
                offsets[at].to_native() as usize,
                offsets[at + 1].to_native() as usize,
            )
        };
        let (a, b) = slice(offsets, local as usize);
        // Format 5: the part's own cross part, over its local ids; format 4: the root's,
        // over global ids.
        let cross = match (part.cross(), self.root().map(|r| r.cross)) {
            (Some(cross), _) => {
                let (offsets, edges) = match direction {
                    Direction::Outgoing => (&cross.out_offsets, &cross.out_edges),
                    Direction::Incoming => (&cross.in_offsets, &cross.in_edges),
                };
                let (a, b) = slice(offsets, local as usize);
                edges[a..b].iter()
            }
            (None, Some(RootCross::Whole(root))) => {
                let (offsets, edges) = match direction {
                    Direction::Outgoing => (&root.cross_out_offsets, &root.cross_out),
                    Direction::Incoming => (&root.cross_in_offsets, &root.cross_in),
                };
                let (a, b) = slice(offsets, id.index());
                edges[a..b].iter()
            }
            _ => [].iter(),
        };
        Edges {
            records: edges[a..b].iter(),
            base: &part.base,
            cross: cross.peekable(),
        }
    }

    pub fn out_edges(&self, id: NodeId) -> Edges<'_> {
        self.edges(id, Direction::Outgoing)
    }

    pub fn in_edges(&self, id: NodeId) -> Edges<'_> {
        self.edges(id, Direction::Incoming)
    }

    pub fn frontier_count(&self) -> usize {
        self.inner.counts.frontier as usize
    }

    /// Frontier entry `index` (global), if in range.
    pub fn frontier(&self, index: u32) -> Option<FrontierRef<'_>> {
        if index >= self.inner.counts.frontier {
            return None;
        }
        let (part, local) = self.part_by(index, |s| &s.frontier);
        Some(FrontierRef {
            record: part.data().frontier.get(local as usize)?,
            base: &part.base,
        })
    }

    /// Every frontier entry with its global index, in stored order.
    pub fn frontier_entries(&self) -> impl Iterator<Item = (u32, FrontierRef<'_>)> {
        self.parts().iter().flat_map(|part| {
            part.data()
                .frontier
                .iter()
                .enumerate()
                .map(move |(i, record)| {
                    (
                        part.base.frontier + i as u32,
                        FrontierRef {
                            record,
                            base: &part.base,
                        },
                    )
                })
        })
    }

    /// The frontier entries whose reference site is in `file`, with their global indexes,
    /// in stored order. Every format stores a part's entries sorted by file (the
    /// resolver's order) and a file's entries in its own part, so this is a binary search,
    /// not a walk of the frontier (sympy's is 150,000 entries).
    pub fn frontier_in_file(&self, file: FileId) -> impl Iterator<Item = (u32, FrontierRef<'_>)> {
        let (part, _) = self.part_by(file.0, |s| &s.file);
        let records = part.data().frontier.as_slice();
        let base = &part.base;
        let file_of = |r: &ArchivedFrontierRecord| base.file(r.file.to_native()).0;
        let start = records.partition_point(|r| file_of(r) < file.0);
        let end = start + records[start..].partition_point(|r| file_of(r) <= file.0);
        records[start..end]
            .iter()
            .enumerate()
            .map(move |(i, record)| {
                (
                    base.frontier + (start + i) as u32,
                    FrontierRef { record, base },
                )
            })
    }

    /// Nodes whose key in `table` equals `key`, by binary search, in id order.
    pub fn lookup(&self, table: NameTable, key: &str) -> Vec<NodeId> {
        let mut out = Vec::new();
        let parts = self.parts().len();
        for part in self.parts() {
            if !part.may_hold(parts, key) {
                continue;
            }
            let d = part.data();
            let Some(id) = local_string_id(d, key) else {
                continue;
            };
            let entries = name_table(d, table);
            let start = entries.partition_point(|e| e.key.to_native() < id);
            out.extend(
                entries[start..]
                    .iter()
                    .take_while(|e| e.key.to_native() == id)
                    .map(|e| part.base.node(e.node.to_native())),
            );
        }
        out
    }

    /// Frontier entries (global indexes) whose name is `name`, by binary search.
    pub fn frontier_named(&self, name: &str) -> Vec<u32> {
        let mut out = Vec::new();
        let parts = self.parts().len();
        for part in self.parts() {
            if !part.may_hold(parts, name) {
                continue;
            }
            let d = part.data();
            let Some(name_id) = local_string_id(d, name) else {
                continue;
            };
            let index = &d.frontier_by_name;
            let name_of = |i: &rkyv::rend::u32_le| {
                d.frontier
                    .get(i.to_native() as usize)
                    .map_or(u32::MAX, |f| f.name.to_native())
            };
            let start = index.partition_point(|i| name_of(i) < name_id);
            out.extend(
                index[start..]
                    .iter()
                    .take_while(|i| name_of(i) == name_id)
                    .map(|i| part.base.frontier + i.to_native()),
            );
        }
        out
    }

    /// Every entry of `table` as (key, node): sorted by (key, node) within each part, parts
    /// in id order.
    pub fn name_entries(&self, table: NameTable) -> impl Iterator<Item = (&str, NodeId)> {
        self.parts().iter().flat_map(move |part| {
            name_table(part.data(), table).iter().map(move |e| {
                (
                    part.str(e.key.to_native()),
                    part.base.node(e.node.to_native()),
                )
            })
        })
    }

    /// Builds now the string filters its lookups would build on first use (only in a
    /// process that keeps graphs open: `reuse_validated_mappings`).
    pub fn build_string_filters(&self) {
        let parts = self.parts().len();
        for part in self.parts() {
            part.string_filter(parts);
        }
    }

    /// Nodes whose key in `table` starts with `prefix`: the first `limit` in key order
    /// (keys are sorted by text), in id order (a node once per key that holds it).
    pub fn lookup_prefix(&self, table: NameTable, prefix: &str, limit: usize) -> Vec<NodeId> {
        let mut found: Vec<(&[u8], NodeId)> = Vec::new();
        let parts = self.parts().len();
        for part in self.parts() {
            if part
                .string_filter(parts)
                .is_some_and(|filter| !filter.may_start(prefix.as_bytes()))
            {
                continue;
            }
            let d = part.data();
            let strings = d.string_offsets.len().saturating_sub(1);
            let (mut lo, mut hi) = (0usize, strings);
            while lo < hi {
                let mid = (lo + hi) / 2;
                if local_str_bytes(d, mid as u32) < prefix.as_bytes() {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            let first = lo as u32;
            let entries = name_table(d, table);
            let start = entries.partition_point(|e| e.key.to_native() < first);
            found.extend(
                entries[start..]
                    .iter()
                    .map(|e| (local_str_bytes(d, e.key.to_native()), e))
                    .take_while(|(text, _)| text.starts_with(prefix.as_bytes()))
                    .take(limit)
                    .map(|(text, e)| (text, part.base.node(e.node.to_native()))),
            );
        }
        // Which are the first `limit` needs the key order only when there are more
        // (each part gave its first `limit`).
        if found.len() > limit {
            found.sort_unstable();
            found.truncate(limit);
        }
        let mut nodes: Vec<NodeId> = found.into_iter().map(|(_, node)| node).collect();
        nodes.sort_unstable();
        nodes
    }
}

/// Bytes of a part's local string `id` (empty when out of range).
fn local_str_bytes(d: &ArchivedGraphData, id: u32) -> &[u8] {
    let offsets = &d.string_offsets;
    let (Some(start), Some(end)) = (offsets.get(id as usize), offsets.get(id as usize + 1)) else {
        return &[];
    };
    d.string_bytes
        .get(start.to_native() as usize..end.to_native() as usize)
        .unwrap_or(&[])
}

/// The local id of `text` in a part's sorted string table, if interned there.
fn local_string_id(d: &ArchivedGraphData, text: &str) -> Option<u32> {
    let mut lo = 0usize;
    let mut hi = d.string_offsets.len().saturating_sub(1);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match local_str_bytes(d, mid as u32).cmp(text.as_bytes()) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid as u32),
        }
    }
    None
}

fn name_table(d: &ArchivedGraphData, table: NameTable) -> &[ArchivedNameEntry] {
    match table {
        NameTable::Exact => &d.names_exact,
        NameTable::Folded => &d.names_folded,
        NameTable::Suffix => &d.names_suffix,
        NameTable::Segments => &d.names_segments,
    }
}

/// A node read in place: its ids are global; every other field derefs to the record.
#[derive(Clone, Copy)]
pub struct NodeRef<'g> {
    record: &'g ArchivedNodeRecord,
    base: &'g Bases,
    /// Formats 4 and 5: the root's table of each file's module.
    file_modules: Option<&'g rkyv::vec::ArchivedVec<rkyv::rend::u32_le>>,
}

impl<'g> NodeRef<'g> {
    pub fn name(&self) -> StrId {
        self.base.string(self.record.name.to_native())
    }

    pub fn qualified(&self) -> StrId {
        self.base.string(self.record.qualified.to_native())
    }

    /// The file that declares the node (`NONE` for modules).
    pub fn file(&self) -> FileId {
        self.base.file(self.record.file.to_native())
    }

    /// The containing node (`NONE` for roots).
    pub fn parent(&self) -> NodeId {
        let parent = self.record.parent.to_native();
        // A segment's file node names its module through the root.
        if parent == NONE
            && let Some(file_modules) = self.file_modules
            && let Some(module) = file_modules.get(self.file().index())
            && self.record.kind == SymbolKind::File as u8
        {
            return NodeId(module.to_native());
        }
        self.base.node(parent)
    }

    /// The SCIP symbol string, or `NONE`.
    pub fn scip_symbol(&self) -> StrId {
        self.base.string(self.record.scip_symbol.to_native())
    }
}

impl<'g> NodeRef<'g> {
    /// The archived record, for the fields that hold no id, borrowed for the graph's
    /// lifetime.
    pub fn record(&self) -> &'g ArchivedNodeRecord {
        self.record
    }
}

impl std::ops::Deref for NodeRef<'_> {
    type Target = ArchivedNodeRecord;

    fn deref(&self) -> &ArchivedNodeRecord {
        self.record
    }
}

/// A file read in place: its ids are global; every other field derefs to the record.
#[derive(Clone, Copy)]
pub struct FileRef<'g> {
    record: &'g ArchivedFileRecord,
    base: &'g Bases,
    /// Format 4: the module, as the root records it.
    module: Option<NodeId>,
}

impl FileRef<'_> {
    pub fn path(&self) -> StrId {
        self.base.string(self.record.path.to_native())
    }

    /// The file's own node.
    pub fn node(&self) -> NodeId {
        self.base.node(self.record.node.to_native())
    }

    /// The module (directory) node that contains the file.
    pub fn module(&self) -> NodeId {
        self.module
            .unwrap_or_else(|| self.base.node(self.record.module.to_native()))
    }
}

impl<'g> FileRef<'g> {
    /// The archived record, for the fields that hold no id, borrowed for the graph's
    /// lifetime.
    pub fn record(&self) -> &'g ArchivedFileRecord {
        self.record
    }
}

impl std::ops::Deref for FileRef<'_> {
    type Target = ArchivedFileRecord;

    fn deref(&self) -> &ArchivedFileRecord {
        self.record
    }
}

/// An edge read in place: `node()` is the other end (the target of an outgoing edge, the
/// source of an incoming one); every other field derefs to the record.
#[derive(Clone, Copy)]
pub struct EdgeRef<'g> {
    record: &'g ArchivedEdgeRecord,
    base: &'g Bases,
}

impl EdgeRef<'_> {
    pub fn node(&self) -> NodeId {
        self.base.node(self.record.node.to_native())
    }

    /// The file of the edge's site (`NONE` when it has none).
    pub fn site_file(&self) -> FileId {
        self.base.file(self.record.site_file.to_native())
    }
}

impl<'g> EdgeRef<'g> {
    /// The archived record, for the fields that hold no id, borrowed for the graph's
    /// lifetime.
    pub fn record(&self) -> &'g ArchivedEdgeRecord {
        self.record
    }
}

impl std::ops::Deref for EdgeRef<'_> {
    type Target = ArchivedEdgeRecord;

    fn deref(&self) -> &ArchivedEdgeRecord {
        self.record
    }
}

/// The edges of one node in one direction, by the other end's id: those inside the
/// node's part (local ids) merged with those between segments (its cross part's, or a
/// format-4 root's: global ids).
#[derive(Clone)]
pub struct Edges<'g> {
    records: std::slice::Iter<'g, ArchivedEdgeRecord>,
    base: &'g Bases,
    cross: std::iter::Peekable<std::slice::Iter<'g, ArchivedEdgeRecord>>,
}

/// Cross-segment edges hold global ids already.
static GLOBAL: Bases = Bases {
    node: 0,
    file: 0,
    string: 0,
    frontier: 0,
};

impl Edges<'_> {
    /// The same edges from the start (so that `edges.iter()` reads like a slice's).
    pub fn iter(&self) -> Self {
        self.clone()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<'g> Iterator for Edges<'g> {
    type Item = EdgeRef<'g>;

    fn next(&mut self) -> Option<EdgeRef<'g>> {
        let own = self
            .records
            .as_slice()
            .first()
            .map(|r| shift(self.base.node, r.node.to_native()));
        let cross = self.cross.peek().map(|r| r.node.to_native());
        let take_cross = match (own, cross) {
            (Some(own), Some(cross)) => cross < own,
            (None, Some(_)) => true,
            _ => false,
        };
        if take_cross {
            let record = self.cross.next()?;
            return Some(EdgeRef {
                record,
                base: &GLOBAL,
            });
        }
        let record = self.records.next()?;
        Some(EdgeRef {
            record,
            base: self.base,
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.records.len() + self.cross.len();
        (n, Some(n))
    }
}

impl ExactSizeIterator for Edges<'_> {}

/// A frontier entry read in place: its ids are global; every other field derefs to the
/// record.
#[derive(Clone, Copy)]
pub struct FrontierRef<'g> {
    record: &'g ArchivedFrontierRecord,
    base: &'g Bases,
}

impl FrontierRef<'_> {
    pub fn name(&self) -> StrId {
        self.base.string(self.record.name.to_native())
    }

    /// The symbol whose reference could not be resolved.
    pub fn from(&self) -> NodeId {
        self.base.node(self.record.from.to_native())
    }

    pub fn file(&self) -> FileId {
        self.base.file(self.record.file.to_native())
    }
}

impl<'g> FrontierRef<'g> {
    /// The archived record, for the fields that hold no id, borrowed for the graph's
    /// lifetime.
    pub fn record(&self) -> &'g ArchivedFrontierRecord {
        self.record
    }
}

impl std::ops::Deref for FrontierRef<'_> {
    type Target = ArchivedFrontierRecord;

    fn deref(&self) -> &ArchivedFrontierRecord {
        self.record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::data::GraphData;

    fn archived(data: &GraphData) -> rkyv::util::AlignedVec {
        rkyv::to_bytes::<rkyv::rancor::Error>(data).unwrap()
    }

    proptest::proptest! {
        #[test]
        fn an_ids_part_is_the_last_that_starts_at_or_before_it(
            sizes in proptest::collection::vec(
                proptest::prop_oneof![proptest::strategy::Just(0u32), 1u32..4, 1u32..3_000],
                1..40,
            ),
            past in 0u32..5,
        ) {
            // Parts of every size, empty ones (a start repeated) among them.
            let mut starts = Vec::new();
            let mut count = 0;
            for size in sizes {
                starts.push(count);
                count += size;
            }
            let table = PartStarts::new(starts.clone(), count);
            for id in 0..=count + past {
                let expected = starts.iter().rposition(|&start| start <= id).unwrap_or(0);
                proptest::prop_assert_eq!(table.part_of(id), expected, "id {} of {:?}", id, starts);
            }
        }
    }

    #[test]
    fn a_blob_is_trusted_whole_only_when_every_offset_is_a_character_boundary() {
        let mut data = GraphData {
            string_bytes: "añb".as_bytes().to_vec(),
            string_offsets: vec![0, 1, 3, 4],
            ..GraphData::default()
        };
        let bytes = archived(&data);
        let d = rkyv::access::<ArchivedGraphData, rkyv::rancor::Error>(&bytes).unwrap();
        assert!(strings_are_utf8(d));
        // An offset inside `ñ` (two bytes): each string must be checked on its own.
        data.string_offsets = vec![0, 2, 4];
        let bytes = archived(&data);
        let d = rkyv::access::<ArchivedGraphData, rkyv::rancor::Error>(&bytes).unwrap();
        assert!(!strings_are_utf8(d));
        // Invalid UTF-8 anywhere in the blob.
        data.string_bytes = vec![b'a', 0xff];
        data.string_offsets = vec![0, 1, 2];
        let bytes = archived(&data);
        let d = rkyv::access::<ArchivedGraphData, rkyv::rancor::Error>(&bytes).unwrap();
        assert!(!strings_are_utf8(d));
        // An offset beyond the blob.
        data.string_bytes = b"ab".to_vec();
        data.string_offsets = vec![0, 9];
        let bytes = archived(&data);
        let d = rkyv::access::<ArchivedGraphData, rkyv::rancor::Error>(&bytes).unwrap();
        assert!(!strings_are_utf8(d));
    }
}
