//! The graph file: a fixed header followed by an rkyv archive (R-GEN-4).
//!
//! ```text
//! offset size
//! 0      8    magic  b"ATLASGR\0"
//! 8      4    format version (u32 LE)
//! 12     4    oldest format version able to read this file (u32 LE)
//! 16     8    payload length in bytes (u64 LE)
//! 24     32   blake3 of the payload
//! 56     8    reserved, zero
//! 64     …    payload: rkyv archive of `GraphData` (16-byte aligned)
//! ```
//!
//! A reader rejects a file whose magic, length or checksum is wrong (`atlas-graph-corrupt`)
//! and one whose version it cannot read (`atlas-graph-incompatible`), before touching the
//! archive; the archive itself is then validated by bytecheck. No input can cause a panic
//! or undefined behaviour.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use memmap2::Mmap;

use super::data::{ArchivedGraphData, GraphData};
use crate::error::{AtlasError, IoContext, Result};

const MAGIC: &[u8; 8] = b"ATLASGR\0";
/// Format version written by this build. v2: parse status 2 (`truncated`); readers
/// validate referential integrity at open. v3: edges carry their call site's flags
/// (`facts::site`: handler, guard, result, returned, raised) and nodes the
/// `FLAG_DECLARES_ONLY` bit. v1 and v2 files have the same layout and are read (their
/// flags are clear or partial: flow then dispatches only through interfaces).
pub const FORMAT_VERSION: u32 = 3;
/// Oldest format version this build reads.
const OLDEST_READABLE: u32 = 1;
const HEADER_LEN: usize = 64;

/// Serializes `data` into the complete file bytes (header + payload).
pub fn encode(data: &GraphData) -> Result<Vec<u8>> {
    let payload =
        rkyv::to_bytes::<rkyv::rancor::Error>(data).map_err(|e| AtlasError::Internal {
            what: "graph",
            reason: format!("serialization failed: {e}"),
        })?;
    let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&OLDEST_READABLE.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(blake3::hash(&payload).as_bytes());
    bytes.resize(HEADER_LEN, 0);
    bytes.extend_from_slice(&payload);
    Ok(bytes)
}

/// Writes the file and fsyncs it.
pub fn write(path: &Path, data: &GraphData) -> Result<()> {
    let bytes = encode(data)?;
    let mut file = File::create(path).at(path)?;
    file.write_all(&bytes).at(path)?;
    file.sync_all().at(path)?;
    Ok(())
}

/// A validated, memory-mapped graph file.
#[derive(Clone)]
pub struct GraphFile {
    mmap: Arc<Mmap>,
    path: PathBuf,
}

/// Which file a path named when its mapping was validated.
#[derive(Clone, Copy, PartialEq, Eq)]
struct FileKey {
    device: u64,
    inode: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl FileKey {
    fn of(file: &File) -> Option<FileKey> {
        use std::os::unix::fs::MetadataExt;
        let meta = file.metadata().ok()?;
        Some(FileKey {
            device: meta.dev(),
            inode: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// Validated mappings by path, with the file each was validated from.
type Validated = HashMap<PathBuf, (FileKey, Arc<Mmap>)>;

/// Validated mappings a long-lived process keeps (`reuse_validated_mappings`).
static VALIDATED: OnceLock<Mutex<Validated>> = OnceLock::new();
/// Mappings kept at most; beyond it the cache starts again. A server follows one
/// repository, whose generations replace each other: the committed one and the one before
/// it are all it needs, and a mapping it keeps holds its pages (under a watcher that
/// publishes every few seconds, 8 kept mappings were most of a daemon's resident memory).
const VALIDATED_CAP: usize = 2;

/// From now on this process reuses a graph file's validated mapping while the path still
/// names the same file (device, inode, length, modification time) — for a long-lived
/// server, where checking a 45 MB payload's checksum on every query would dominate its
/// latency. Sound because a published generation is written once and never modified
/// (R-GEN-2): a new generation is a new file. One-shot commands never turn it on.
pub fn reuse_validated_mappings() {
    VALIDATED.get_or_init(|| Mutex::new(HashMap::new()));
}

impl GraphFile {
    pub fn open(path: &Path) -> Result<GraphFile> {
        let file = File::open(path).at(path)?;
        let key = VALIDATED.get().and_then(|_| FileKey::of(&file));
        if let (Some(cache), Some(key)) = (VALIDATED.get(), key)
            && let Ok(cache) = cache.lock()
            && let Some((known, mmap)) = cache.get(path)
            && *known == key
        {
            return Ok(GraphFile {
                mmap: Arc::clone(mmap),
                path: path.to_path_buf(),
            });
        }
        // SAFETY: generation files are written once into staging and never modified after
        // being published (R-GEN-2); readers map them read-only. A file truncated under us by
        // another process is outside that contract (documented in graph-schema/).
        let mmap = Arc::new(unsafe { Mmap::map(&file) }.at(path)?);
        validate(&mmap, path)?;
        if let (Some(cache), Some(key)) = (VALIDATED.get(), key)
            && let Ok(mut cache) = cache.lock()
        {
            if cache.len() >= VALIDATED_CAP {
                cache.clear();
            }
            cache.insert(path.to_path_buf(), (key, Arc::clone(&mmap)));
        }
        Ok(GraphFile {
            mmap,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The format version this file was written in (validated at open).
    pub fn version(&self) -> u32 {
        u32::from_le_bytes([self.mmap[8], self.mmap[9], self.mmap[10], self.mmap[11]])
    }

    pub fn len(&self) -> usize {
        self.mmap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.mmap.is_empty()
    }

    pub fn data(&self) -> &ArchivedGraphData {
        // SAFETY: `open` ran `validate`, which checked the checksum and the whole archive
        // with bytecheck; the mapping is immutable for the lifetime of `self`.
        unsafe { rkyv::access_unchecked::<ArchivedGraphData>(&self.mmap[HEADER_LEN..]) }
    }
}

/// Header, checksum and archive checks; returns the validated archive.
pub fn validate<'a>(bytes: &'a [u8], path: &Path) -> Result<&'a ArchivedGraphData> {
    let corrupt = |reason: String| AtlasError::GraphCorrupt {
        path: path.to_path_buf(),
        reason,
    };
    if bytes.len() < HEADER_LEN {
        return Err(corrupt(format!(
            "{} bytes, shorter than the {HEADER_LEN}-byte header",
            bytes.len()
        )));
    }
    if &bytes[..8] != MAGIC {
        return Err(corrupt("bad magic: not an atlas graph file".into()));
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let version = u32_at(8);
    let oldest = u32_at(12);
    let readable = if version >= FORMAT_VERSION {
        oldest <= FORMAT_VERSION
    } else {
        version >= OLDEST_READABLE
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
        return Err(corrupt(format!(
            "payload is {actual} bytes, header says {payload_len} (truncated?)"
        )));
    }
    let payload = &bytes[HEADER_LEN..];
    // Both cores: the checksum is most of the cost of opening a large graph.
    let mut hasher = blake3::Hasher::new();
    hasher.update_rayon(payload);
    if hasher.finalize().as_bytes() != &bytes[24..56] {
        return Err(corrupt("payload checksum mismatch".into()));
    }
    if !(payload.as_ptr() as usize).is_multiple_of(16) {
        return Err(corrupt("payload is not 16-byte aligned".into()));
    }
    let data = rkyv::access::<ArchivedGraphData, rkyv::rancor::Error>(payload)
        .map_err(|e| corrupt(format!("archive validation failed: {e}")))?;
    check_references(data, path)?;
    Ok(data)
}

/// Referential integrity (graph-schema/README.md, invariants): bytecheck proves the archive
/// is well-formed; this proves every id in it indexes its table, so that no read of a
/// validated graph can go out of bounds — even when a payload was altered and its checksum
/// recomputed. Linear in the size of the graph.
fn check_references(data: &ArchivedGraphData, path: &Path) -> Result<()> {
    check_ids(data).map_err(|reason| AtlasError::GraphCorrupt {
        path: path.to_path_buf(),
        reason,
    })
}

/// The checks of `check_references`; the reason names the first id out of range.
fn check_ids(data: &ArchivedGraphData) -> std::result::Result<(), String> {
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
            || !node(f.module.to_native())
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
