//! Graph files: a fixed header followed by an rkyv archive (R-GEN-4).
//!
//! ```text
//! offset size
//! 0      8    magic  b"ATLASGR\0" (a graph or a root), b"ATLASSG\0" (a segment) or
//!             b"ATLASCX\0" (a segment's cross part, format 5)
//! 8      4    format version (u32 LE)
//! 12     4    oldest format version able to read this file (u32 LE)
//! 16     8    payload length in bytes (u64 LE)
//! 24     32   blake3 of the payload
//! 56     8    reserved, zero
//! 64     …    payload: rkyv archive (16-byte aligned)
//! ```
//!
//! Formats 1–3 are one file whose payload is `GraphData`. Format 4 is a root file
//! (`RootDataV4`) naming segment files (`GraphData` in local ids) in its directory's
//! `segments/` (graph-schema/README.md). Format 5 moves the edges between segments out
//! of the root into one cross part per segment (`CrossData`, `segments/<hex>.cross`),
//! so that an edit rewrites the parts its edges touch, not all of them. A reader rejects a file whose magic, length or
//! checksum is wrong (`atlas-graph-corrupt`) and one whose version it cannot read
//! (`atlas-graph-incompatible`), before touching the archive; the archive itself is then
//! validated by bytecheck and its ids checked. No input can cause a panic or undefined
//! behaviour.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use memmap2::Mmap;

use super::data::{
    ArchivedCrossData, ArchivedCrossEntry, ArchivedEdgeRecord, ArchivedGraphData,
    ArchivedGraphStats, ArchivedModuleEdgeRecord, ArchivedRootData, ArchivedRootDataV4,
    ArchivedSegmentEntry, CrossData, GraphData, RootData,
};
use super::string_filter::StringFilter;
use crate::error::{AtlasError, IoContext, Result};

const MAGIC: &[u8; 8] = b"ATLASGR\0";
const SEGMENT_MAGIC: &[u8; 8] = b"ATLASSG\0";
const CROSS_MAGIC: &[u8; 8] = b"ATLASCX\0";
/// Format version written by this build. v2: parse status 2 (`truncated`); readers
/// validate referential integrity at open. v3: edges carry their call site's flags
/// (`facts::site`: handler, guard, result, returned, raised) and nodes the
/// `FLAG_DECLARES_ONLY` bit. v4: a generation is a root and segments, so that an edit
/// rewrites only the segments it touched. v5: the edges between segments move from the
/// root into one cross part per segment, so that an edit rewrites the parts its edges
/// touch and a root of a few hundred kilobytes (15 MB on sympy in v4). v1–v3 files are
/// one `GraphData`, v4 a root of every cross edge; both are read.
pub const FORMAT_VERSION: u32 = 5;
/// The last format whose root holds the edges between segments.
const LAST_WHOLE_ROOT: u32 = 4;
/// The format segments are written in: their layout has not changed since format 4, and
/// a segment linked from a format-4 generation into a format-5 one is the same file a
/// cold build writes.
const SEGMENT_VERSION: u32 = 4;
/// The last format that is one file.
const LAST_SINGLE_FILE: u32 = 3;
/// Oldest format version this build reads.
const OLDEST_READABLE: u32 = 1;
const HEADER_LEN: usize = 64;
/// The directory beside a format-4 root that holds its segments.
pub const SEGMENTS_DIR: &str = "segments";

/// The complete file bytes (header + payload) of an archived value.
fn encode_with<T>(magic: &[u8; 8], version: u32, value: &T, capacity: usize) -> Result<Vec<u8>>
where
    T: for<'a> rkyv::Serialize<
            rkyv::api::high::HighSerializer<
                Vec<u8>,
                rkyv::ser::allocator::ArenaHandle<'a>,
                rkyv::rancor::Error,
            >,
        >,
{
    // Serialized after room for the header, so that the payload is not copied again: a
    // root is 10 MB on sympy. Positions in an rkyv archive are relative, and the header's
    // length is a multiple of every alignment, so the payload's bytes are those
    // `rkyv::to_bytes` would give.
    // Room for the whole archive at once: grown by doubling, a root was copied (and its
    // fresh pages faulted in) four or five times over.
    let mut bytes = Vec::with_capacity(HEADER_LEN + capacity);
    bytes.resize(HEADER_LEN, 0);
    let mut bytes =
        rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(value, bytes).map_err(|e| {
            AtlasError::Internal {
                what: "graph",
                reason: format!("serialization failed: {e}"),
            }
        })?;
    let payload_len = (bytes.len() - HEADER_LEN) as u64;
    let hash = digest(&bytes[HEADER_LEN..]);
    let mut header = Vec::with_capacity(HEADER_LEN);
    header.extend_from_slice(magic);
    header.extend_from_slice(&version.to_le_bytes());
    // Formats 4 and 5 are readable by their own readers only: older ones refuse them with
    // a typed error.
    header.extend_from_slice(&version.to_le_bytes());
    header.extend_from_slice(&payload_len.to_le_bytes());
    header.extend_from_slice(hash.as_bytes());
    header.resize(HEADER_LEN, 0);
    bytes[..HEADER_LEN].copy_from_slice(&header);
    Ok(bytes)
}

/// A segment file's bytes.
pub fn encode_segment(data: &GraphData) -> Result<Vec<u8>> {
    encode_with(SEGMENT_MAGIC, SEGMENT_VERSION, data, 0)
}

/// A root file's bytes.
pub fn encode_root(root: &RootData) -> Result<Vec<u8>> {
    encode_with(MAGIC, FORMAT_VERSION, root, root_capacity(root))
}

/// A cross part's bytes.
pub fn encode_cross(cross: &CrossData) -> Result<Vec<u8>> {
    use std::mem::size_of;
    let estimate = 4 * (cross.out_offsets.len() + cross.in_offsets.len())
        + size_of::<ArchivedEdgeRecord>() * (cross.out_edges.len() + cross.in_edges.len());
    encode_with(
        CROSS_MAGIC,
        FORMAT_VERSION,
        cross,
        estimate + estimate / 8 + 1024,
    )
}

/// A generous estimate of a root's archived size: its tables are flat arrays of
/// fixed-size records. Room beyond what is written is never touched, so costs nothing.
fn root_capacity(root: &RootData) -> usize {
    use super::data::ArchivedCrossEntry;
    use std::mem::size_of;
    let words = root.file_modules.len() + root.centrality.len();
    let estimate = 4 * words
        + size_of::<ArchivedModuleEdgeRecord>() * root.module_edges.len()
        + size_of::<ArchivedSegmentEntry>() * root.segments.len()
        + size_of::<ArchivedCrossEntry>() * root.cross.len();
    estimate + estimate / 8 + 64 * 1024
}

/// The blake3 of `bytes`, on every processor where they are large (a root is 10 MB and
/// more, hashed on an edit's critical path).
pub fn digest(bytes: &[u8]) -> blake3::Hash {
    if bytes.len() < 1 << 20 {
        return blake3::hash(bytes);
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update_rayon(bytes);
    hasher.finalize()
}

/// The blake3 of a file's payload, as its header records it (a segment's name).
pub fn payload_hash(bytes: &[u8]) -> [u8; 32] {
    let mut hash = [0u8; 32];
    if let Some(recorded) = bytes.get(24..56) {
        hash.copy_from_slice(recorded);
    }
    hash
}

/// Where a root's segment `hash` lives: `segments/<hex>.atlas` beside the root.
pub fn segment_path(root: &Path, hash: &[u8; 32]) -> PathBuf {
    root.parent()
        .unwrap_or(Path::new("."))
        .join(segment_name(hash))
}

/// Where a root's cross part `hash` lives: `segments/<hex>.cross` beside the root.
pub fn cross_path(root: &Path, hash: &[u8; 32]) -> PathBuf {
    root.parent()
        .unwrap_or(Path::new("."))
        .join(cross_name(hash))
}

/// A segment file's name under its generation directory.
pub fn segment_name(hash: &[u8; 32]) -> String {
    format!("{SEGMENTS_DIR}/{}.atlas", hex(hash))
}

/// A cross part's name under its generation directory.
pub fn cross_name(hash: &[u8; 32]) -> String {
    format!("{SEGMENTS_DIR}/{}.cross", hex(hash))
}

/// A validated, memory-mapped file: a whole graph (formats 1–3) or a segment (format 4).
#[derive(Clone)]
pub struct GraphFile {
    mmap: Arc<Mmap>,
    path: PathBuf,
    /// The filter of its strings a long-lived process builds (`reader`), shared by every
    /// graph that maps this file: a new generation keeps most segments' filters.
    strings: Arc<OnceLock<StringFilter>>,
}

/// A validated, memory-mapped root (format 4 or 5).
#[derive(Clone)]
pub struct RootFile {
    mmap: Arc<Mmap>,
}

/// A validated, memory-mapped cross part (format 5).
#[derive(Clone)]
pub struct CrossFile {
    mmap: Arc<Mmap>,
    /// The segment's node count its CSR covers.
    nodes: u32,
    /// One above the largest node id and site file id its records name (0 when none):
    /// the part fits a graph with at least as many nodes and files.
    bounds: (u32, u32),
}

/// What a graph path holds.
pub enum Opened {
    /// Formats 1–3: the whole graph in one file.
    Whole(GraphFile),
    /// Formats 4 and 5: the root; its segments are opened by `GraphFile::open_segment`
    /// and, from format 5, their cross parts by `CrossFile::open`.
    Root(RootFile),
}

/// The tables both root layouts share, and where `cross` says the cross edges are.
macro_rules! root_view {
    ($root:expr, $cross:expr) => {
        RootView {
            fingerprint: &$root.fingerprint,
            segments: &$root.segments,
            file_modules: &$root.file_modules,
            centrality: &$root.centrality,
            module_edges: &$root.module_edges,
            stats: &$root.stats,
            cross: $cross,
        }
    };
}

/// A root read in place, whichever format wrote it.
#[derive(Clone, Copy)]
pub struct RootView<'a> {
    pub fingerprint: &'a [u8; 32],
    pub segments: &'a rkyv::vec::ArchivedVec<ArchivedSegmentEntry>,
    pub file_modules: &'a rkyv::vec::ArchivedVec<rkyv::rend::u32_le>,
    pub centrality: &'a rkyv::vec::ArchivedVec<rkyv::rend::u32_le>,
    pub module_edges: &'a rkyv::vec::ArchivedVec<ArchivedModuleEdgeRecord>,
    pub stats: &'a ArchivedGraphStats,
    pub cross: RootCross<'a>,
}

/// Where a root's edges between segments are.
#[derive(Clone, Copy)]
pub enum RootCross<'a> {
    /// Format 5: in one part per segment, listed here in the segments' order.
    Parts(&'a rkyv::vec::ArchivedVec<ArchivedCrossEntry>),
    /// Format 4: in the root, a CSR over every node in each direction.
    Whole(&'a ArchivedRootDataV4),
}

/// Maps `path` read-only.
fn map(path: &Path) -> Result<Arc<Mmap>> {
    let file = File::open(path).at(path)?;
    // SAFETY: generation files are written once into staging and never modified after
    // being published (R-GEN-2); readers map them read-only. A file truncated under us by
    // another process is outside that contract (documented in graph-schema/).
    Ok(Arc::new(unsafe { Mmap::map(&file) }.at(path)?))
}

/// Maps a file its root names: one that is missing is a corrupt generation (`what` the
/// root names is missing), not an I/O error.
fn map_named(path: &Path, what: &str) -> Result<Arc<Mmap>> {
    map(path).map_err(|e| match e {
        AtlasError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            corrupt(path, format!("a {what} the root names is missing"))
        }
        other => other,
    })
}

/// Opens the file a graph path names: a whole graph or a root.
pub fn open(path: &Path) -> Result<Opened> {
    let mmap = map(path)?;
    let (version, payload) = check_header(&mmap, path, MAGIC)?;
    if version <= LAST_SINGLE_FILE {
        validate_graph(payload, path, false)?;
        return Ok(Opened::Whole(GraphFile {
            mmap,
            path: path.to_path_buf(),
            strings: Arc::default(),
        }));
    }
    let archive =
        |e: rkyv::rancor::Error| corrupt(path, format!("archive validation failed (root): {e}"));
    let view = if version <= LAST_WHOLE_ROOT {
        RootFile::view_v4(
            rkyv::access::<ArchivedRootDataV4, rkyv::rancor::Error>(payload).map_err(archive)?,
        )
    } else {
        RootFile::view_v5(
            rkyv::access::<ArchivedRootData, rkyv::rancor::Error>(payload).map_err(archive)?,
        )
    };
    check_root(&view).map_err(|reason| corrupt(path, reason))?;
    Ok(Opened::Root(RootFile { mmap }))
}

impl GraphFile {
    /// Opens segment `hash` of the root at `root_path`: its header must name that hash.
    pub fn open_segment(root_path: &Path, hash: &[u8; 32]) -> Result<GraphFile> {
        let path = segment_path(root_path, hash);
        let mmap = map_named(&path, "segment")?;
        let (_, payload) = check_header(&mmap, &path, SEGMENT_MAGIC)?;
        if &payload_hash(&mmap) != hash {
            return Err(corrupt(
                &path,
                "the segment is not the one the root names".into(),
            ));
        }
        validate_graph(payload, &path, true)?;
        Ok(GraphFile {
            mmap,
            path,
            strings: Arc::default(),
        })
    }

    /// The filter of the file's strings, once built (`reader`).
    pub(crate) fn string_filter(&self) -> &OnceLock<StringFilter> {
        &self.strings
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format version this file was written in (validated at open).
    pub fn version(&self) -> u32 {
        version_of(&self.mmap)
    }

    /// Bytes mapped (header included).
    pub fn byte_len(&self) -> usize {
        self.mmap.len()
    }

    pub fn data(&self) -> &ArchivedGraphData {
        // SAFETY: `open` ran `validate_graph`, which checked the checksum and the whole
        // archive with bytecheck; the mapping is immutable for the lifetime of `self`.
        unsafe { rkyv::access_unchecked::<ArchivedGraphData>(&self.mmap[HEADER_LEN..]) }
    }
}

impl RootFile {
    pub fn version(&self) -> u32 {
        version_of(&self.mmap)
    }

    /// Bytes mapped (header included).
    pub fn byte_len(&self) -> usize {
        self.mmap.len()
    }

    /// The root's tables, whichever format wrote them.
    pub fn view(&self) -> RootView<'_> {
        let payload = &self.mmap[HEADER_LEN..];
        // SAFETY: `open` validated the checksum and the archive of this version's layout;
        // the mapping is immutable.
        if self.version() <= LAST_WHOLE_ROOT {
            Self::view_v4(unsafe { rkyv::access_unchecked::<ArchivedRootDataV4>(payload) })
        } else {
            Self::view_v5(unsafe { rkyv::access_unchecked::<ArchivedRootData>(payload) })
        }
    }

    fn view_v4(root: &ArchivedRootDataV4) -> RootView<'_> {
        root_view!(root, RootCross::Whole(root))
    }

    fn view_v5(root: &ArchivedRootData) -> RootView<'_> {
        root_view!(root, RootCross::Parts(&root.cross))
    }
}

impl CrossFile {
    /// Opens the cross part `entry` of the root at `root_path`, for a segment of
    /// `nodes` nodes in a graph of `graph_nodes` nodes and `graph_files` files: its
    /// header must name the entry's hash, its CSR cover the segment's nodes and hold the
    /// counts the entry lists, and every id it holds be in the graph's range.
    pub fn open(
        root_path: &Path,
        entry: &ArchivedCrossEntry,
        nodes: u32,
        graph_nodes: u32,
        graph_files: u32,
    ) -> Result<CrossFile> {
        let path = cross_path(root_path, &entry.hash);
        let mmap = map_named(&path, "cross part")?;
        let (_, payload) = check_header(&mmap, &path, CROSS_MAGIC)?;
        if payload_hash(&mmap) != entry.hash {
            return Err(corrupt(
                &path,
                "the cross part is not the one the root names".into(),
            ));
        }
        let data = rkyv::access::<ArchivedCrossData, rkyv::rancor::Error>(payload)
            .map_err(|e| corrupt(&path, format!("archive validation failed (cross): {e}")))?;
        if data.out_edges.len() != entry.out_edges.to_native() as usize
            || data.in_edges.len() != entry.in_edges.to_native() as usize
        {
            return Err(corrupt(
                &path,
                "the cross part's counts differ from the root's".into(),
            ));
        }
        let mut bounds = (0, 0);
        for (name, offsets, edges) in [
            ("out", &data.out_offsets, &data.out_edges),
            ("in", &data.in_offsets, &data.in_edges),
        ] {
            let (node_bound, file_bound) =
                check_csr(name, offsets, edges, nodes).map_err(|reason| corrupt(&path, reason))?;
            bounds = (bounds.0.max(node_bound), bounds.1.max(file_bound));
        }
        let file = CrossFile {
            mmap,
            nodes,
            bounds,
        };
        if !file.fits(nodes, graph_nodes, graph_files) {
            return Err(corrupt(
                &path,
                "a cross edge names an id out of range".into(),
            ));
        }
        Ok(file)
    }

    /// Whether this part, validated once, serves a segment of `nodes` nodes in a graph of
    /// `graph_nodes` nodes and `graph_files` files: a process that keeps mappings reuses
    /// a part across generations whose counts differ (its records name global ids).
    pub fn fits(&self, nodes: u32, graph_nodes: u32, graph_files: u32) -> bool {
        self.nodes == nodes && self.bounds.0 <= graph_nodes && self.bounds.1 <= graph_files
    }

    /// Bytes mapped (header included).
    pub fn byte_len(&self) -> usize {
        self.mmap.len()
    }

    pub fn data(&self) -> &ArchivedCrossData {
        // SAFETY: `open` validated the checksum, the archive and every id; the mapping is
        // immutable.
        unsafe { rkyv::access_unchecked::<ArchivedCrossData>(&self.mmap[HEADER_LEN..]) }
    }
}

fn version_of(bytes: &[u8]) -> u32 {
    u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]])
}

fn corrupt(path: &Path, reason: String) -> AtlasError {
    AtlasError::GraphCorrupt {
        path: path.to_path_buf(),
        reason,
    }
}

/// Header and checksum checks against `magic`: the version and the payload.
/// Payloads at least this large are checksummed on every core.
const PARALLEL_HASH_BYTES: usize = 4 << 20;

fn check_header<'a>(bytes: &'a [u8], path: &Path, magic: &[u8; 8]) -> Result<(u32, &'a [u8])> {
    if bytes.len() < HEADER_LEN {
        return Err(corrupt(
            path,
            format!(
                "{} bytes, shorter than the {HEADER_LEN}-byte header",
                bytes.len()
            ),
        ));
    }
    if &bytes[..8] != magic {
        return Err(corrupt(path, "bad magic: not an atlas graph file".into()));
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let version = u32_at(8);
    let oldest = u32_at(12);
    // Segments exist from format 4 on, cross parts from format 5.
    let first_of_kind = match magic {
        m if m == SEGMENT_MAGIC => SEGMENT_VERSION,
        m if m == CROSS_MAGIC => LAST_WHOLE_ROOT + 1,
        _ => OLDEST_READABLE,
    };
    let readable = if version >= FORMAT_VERSION {
        oldest <= FORMAT_VERSION
    } else {
        version >= first_of_kind
    };
    if !readable {
        return Err(AtlasError::GraphIncompatible {
            path: path.to_path_buf(),
            found: version,
            oldest: OLDEST_READABLE,
            current: FORMAT_VERSION,
        });
    }
    let mut len_bytes = [0u8; 8];
    len_bytes.copy_from_slice(&bytes[16..24]);
    let payload_len = u64::from_le_bytes(len_bytes);
    let actual = (bytes.len() - HEADER_LEN) as u64;
    if payload_len != actual {
        return Err(corrupt(
            path,
            format!("payload is {actual} bytes, header says {payload_len} (truncated?)"),
        ));
    }
    let payload = &bytes[HEADER_LEN..];
    // Both cores for a large file: the checksum is most of the cost of opening a graph.
    // A small one (most segments, which are opened side by side) is hashed on one: split
    // further, the threads spent more time handing work over than hashing.
    let mut hasher = blake3::Hasher::new();
    if payload.len() >= PARALLEL_HASH_BYTES {
        hasher.update_rayon(payload);
    } else {
        hasher.update(payload);
    }
    if hasher.finalize().as_bytes() != &bytes[24..56] {
        return Err(corrupt(path, "payload checksum mismatch".into()));
    }
    if !(payload.as_ptr() as usize).is_multiple_of(16) {
        return Err(corrupt(path, "payload is not 16-byte aligned".into()));
    }
    Ok((version, payload))
}

/// Archive and id checks of a graph payload (a whole graph, or a segment when
/// `segment`: a segment's files name their module in the root, so theirs may be `NONE`).
fn validate_graph<'a>(
    payload: &'a [u8],
    path: &Path,
    segment: bool,
) -> Result<&'a ArchivedGraphData> {
    let data = rkyv::access::<ArchivedGraphData, rkyv::rancor::Error>(payload)
        .map_err(|e| corrupt(path, format!("archive validation failed: {e}")))?;
    check_ids(data, segment).map_err(|reason| corrupt(path, reason))?;
    Ok(data)
}

/// A root's own consistency: its per-node and per-file tables match the segments'
/// counts, and every id it holds is in range. The segments and cross parts are checked
/// when opened.
fn check_root(root: &RootView) -> std::result::Result<(), String> {
    let mut nodes = 0u64;
    let mut files = 0u64;
    for s in root.segments.iter() {
        nodes += u64::from(s.nodes.to_native());
        files += u64::from(s.files.to_native());
    }
    if nodes > u64::from(u32::MAX - 1) || files > u64::from(u32::MAX - 1) {
        return Err("the segments hold more ids than a graph can".into());
    }
    let (nodes, files) = (nodes as u32, files as u32);
    if root.file_modules.len() != files as usize
        || root.file_modules.iter().any(|m| m.to_native() >= nodes)
    {
        return Err("the root's file modules do not match its segments".into());
    }
    if root.centrality.len() != nodes as usize {
        return Err("the root's centrality does not match its segments".into());
    }
    match root.cross {
        RootCross::Parts(parts) => {
            if parts.len() != root.segments.len() {
                return Err("the root lists a cross part per segment, but not as many".into());
            }
        }
        RootCross::Whole(v4) => {
            for (name, offsets, edges) in [
                ("out", &v4.cross_out_offsets, &v4.cross_out),
                ("in", &v4.cross_in_offsets, &v4.cross_in),
            ] {
                let (node_bound, file_bound) = check_csr(name, offsets, edges, nodes)?;
                if node_bound > nodes || file_bound > files {
                    return Err(format!("a cross {name}-edge names an id out of range"));
                }
            }
        }
    }
    if root
        .module_edges
        .iter()
        .any(|e| e.from.to_native() >= nodes || e.to.to_native() >= nodes)
    {
        return Err("module edge names a node out of range".into());
    }
    Ok(())
}

/// A CSR of edges between segments over `nodes` nodes, whose records name nodes and
/// site files by global id: its offsets partition the edges and its sites are ordered
/// and bounded. Returns one above the largest node id and site file id the records name,
/// for the caller to compare with the graph's counts.
fn check_csr(
    name: &str,
    offsets: &rkyv::vec::ArchivedVec<rkyv::rend::u32_le>,
    edges: &rkyv::vec::ArchivedVec<ArchivedEdgeRecord>,
    nodes: u32,
) -> std::result::Result<(u32, u32), String> {
    use super::data::NONE;
    if offsets.len() != nodes as usize + 1
        || offsets.first().map(|o| o.to_native()) != Some(0)
        || offsets.last().map(|o| o.to_native() as usize) != Some(edges.len())
        || offsets
            .windows(2)
            .any(|w| w[0].to_native() > w[1].to_native())
    {
        return Err(format!(
            "cross {name}-edge offsets do not partition the edges"
        ));
    }
    // Lines and bytes stay far from u32::MAX, as in a segment (`check_ids`).
    const BOUND: u32 = 1 << 31;
    let (mut node_bound, mut file_bound) = (0u32, 0u32);
    for e in edges.iter() {
        let site = &e.site;
        // `NONE` is no node (and would overflow the bound below).
        if e.node.to_native() == NONE
            || site.start_byte.to_native() > site.end_byte.to_native()
            || site.start_line.to_native() > site.end_line.to_native()
            || site.end_byte.to_native() >= BOUND
            || site.end_line.to_native() >= BOUND
        {
            return Err(format!("a cross {name}-edge names an id out of range"));
        }
        node_bound = node_bound.max(e.node.to_native() + 1);
        if e.site_file.to_native() != NONE {
            file_bound = file_bound.max(e.site_file.to_native() + 1);
        }
    }
    Ok((node_bound, file_bound))
}

/// Referential integrity (graph-schema/README.md, invariants): bytecheck proves the archive
/// is well-formed; this proves every id in it indexes its table, so that no read of a
/// validated graph can go out of bounds — even when a payload was altered and its checksum
/// recomputed. Linear in the size of the graph. The reason names the first id out of range.
fn check_ids(data: &ArchivedGraphData, segment: bool) -> std::result::Result<(), String> {
    use super::data::NONE;
    let strings = data.string_offsets.len().saturating_sub(1) as u32;
    let nodes = data.nodes.len() as u32;
    let files = data.files.len() as u32;
    let string = |id: u32| id < strings;
    let node = |id: u32| id < nodes;
    let file_or_none = |id: u32| id == NONE || id < files;
    let node_or_none = |id: u32| id == NONE || node(id);
    // Lines and bytes stay far from u32::MAX, so that `line + 1` never overflows.
    const BOUND: u32 = 1 << 31;
    let span_ok = |s: &super::data::ArchivedSpanRecord| {
        s.start_byte.to_native() <= s.end_byte.to_native()
            && s.start_line.to_native() <= s.end_line.to_native()
            && s.end_byte.to_native() < BOUND
            && s.end_line.to_native() < BOUND
    };
    let mut previous = 0u32;
    for offset in data.string_offsets.iter() {
        let offset = offset.to_native();
        if offset < previous || offset as usize > data.string_bytes.len() {
            return Err("string offsets out of order or out of range".into());
        }
        previous = offset;
    }
    for (index, f) in data.files.iter().enumerate() {
        if !string(f.path.to_native())
            || !node(f.node.to_native())
            || !(node(f.module.to_native()) || (segment && f.module.to_native() == NONE))
            || f.lines.to_native() >= BOUND
        {
            return Err(format!("file {index} names an id out of range"));
        }
    }
    for (index, n) in data.nodes.iter().enumerate() {
        let ids_ok = string(n.name.to_native())
            && string(n.qualified.to_native())
            && file_or_none(n.file.to_native())
            && node_or_none(n.parent.to_native())
            && (n.scip_symbol.to_native() == NONE || string(n.scip_symbol.to_native()));
        if !ids_ok || !span_ok(&n.span) || !span_ok(&n.signature) || !span_ok(&n.doc) {
            return Err(format!(
                "node {index} names an id out of range or a reversed span"
            ));
        }
    }
    for (name, offsets, edges) in [
        ("out", &data.out_offsets, &data.out_edges),
        ("in", &data.in_offsets, &data.in_edges),
    ] {
        if offsets.len() != nodes as usize + 1
            || offsets.first().map(|o| o.to_native()) != Some(0)
            || offsets.last().map(|o| o.to_native() as usize) != Some(edges.len())
            || offsets
                .windows(2)
                .any(|w| w[0].to_native() > w[1].to_native())
        {
            return Err(format!("{name}-edge offsets do not partition the edges"));
        }
        if let Some(at) = edges.iter().position(|e| {
            !node(e.node.to_native()) || !file_or_none(e.site_file.to_native()) || !span_ok(&e.site)
        }) {
            return Err(format!("{name}-edge {at} names an id out of range"));
        }
    }
    for (index, f) in data.frontier.iter().enumerate() {
        if !string(f.name.to_native())
            || !node(f.from.to_native())
            || !file_or_none(f.file.to_native())
            || !span_ok(&f.site)
        {
            return Err(format!("frontier entry {index} names an id out of range"));
        }
    }
    let frontier = data.frontier.len() as u32;
    if data
        .frontier_by_name
        .iter()
        .any(|i| i.to_native() >= frontier)
    {
        return Err("frontier index out of range".into());
    }
    if data
        .module_edges
        .iter()
        .any(|e| !node(e.from.to_native()) || !node(e.to.to_native()))
    {
        return Err("module edge names a node out of range".into());
    }
    for (name, table) in [
        ("exact", &data.names_exact),
        ("folded", &data.names_folded),
        ("suffix", &data.names_suffix),
        ("segments", &data.names_segments),
    ] {
        if table
            .iter()
            .any(|e| !string(e.key.to_native()) || !node(e.node.to_native()))
        {
            return Err(format!("name table {name} names an id out of range"));
        }
    }
    Ok(())
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}
