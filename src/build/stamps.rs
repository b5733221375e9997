//! File stamps: which inventoried files are known to still hold the content the committed
//! generation was built from, without reading them again.
//!
//! A fresh read compares the working tree with the committed generation. Hashing every file
//! costs about 40 ms on sympy and about 200 ms on an 11,853-file tree. A stamp is what
//! `stat` says of a file: size, modification and change times, inode. When the stamp
//! recorded after a file was last hashed is still the stamp of the file, and the
//! modification was not within the racy window before the record was written, its content
//! is the one hashed. Git's index works the same way.
//!
//! A build uses them too: a file whose stamp is vouched for, and whose content the
//! stamps describe (`Known`: blake3, class, lines), is not read again; its facts come from
//! the cache by that hash. On sympy that spares reading and hashing 1,946 files per edit.
//! When the stamps vouch for every file and the inputs are the committed generation's, a
//! build loads no facts at all (`pipeline::unchanged_unread`). A file skipped for its
//! content (binary, not UTF-8) is stamped without a description: while its stamp holds,
//! it is skipped again for the reason the committed manifest gives.
//!
//! `<graph>/stamps.bin` is a cache, never an authority: it belongs to one generation (its
//! fingerprint), it is rewritten whole and atomically, and a missing, damaged or foreign
//! file (or one of another version: version 1 had no `Known`) only means every file is
//! hashed. Layout (little-endian): magic `ATLASST1`, format version `u32` (2), reserved
//! `u32`, the generation's fingerprint (32 bytes), the time it was written (ns since the
//! epoch, `i64`), the entry count (`u32`). Then each entry: path length (`u16`), path
//! bytes, size (`u64`), mtime and ctime (ns, `i64`), inode (`u64`), then `1` and the
//! content's blake3 (32 bytes), class code (`u8`) and line count (`u32`), or `0` when the
//! content is not described. Last, the blake3 of everything before it (32 bytes).

// Keyed by path: a few thousand entries hashed on every build, where SipHash cost more
// than the table.
use rustc_hash::FxHashMap as HashMap;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

pub const STAMPS_FILE: &str = "stamps.bin";
const MAGIC: &[u8; 8] = b"ATLASST1";
const VERSION: u32 = 2;
/// Modifications this close to the record's writing are not trusted: a file written in the
/// same clock tick as its stamp could change again without changing the stamp.
pub(crate) const RACY_NS: i64 = 2_000_000_000;
/// Files a stamp file may list; beyond it the file is not read (it was not written by us).
const MAX_ENTRIES: usize = 4_000_000;

/// What `stat` says of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
}

impl Stamp {
    pub fn of(metadata: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            size: metadata.len(),
            // Saturating: a file dated centuries ahead must not overflow.
            mtime_ns: nanos(metadata.mtime(), metadata.mtime_nsec()),
            ctime_ns: nanos(metadata.ctime(), metadata.ctime_nsec()),
            ino: metadata.ino(),
        }
    }
}

fn nanos(seconds: i64, nanos: i64) -> i64 {
    seconds.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// What the generation holds of a stamped file's content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    pub hash: [u8; 32],
    /// `FileClass` code.
    pub class: u8,
    pub lines: u32,
}

/// The stamps recorded for one generation.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stamps {
    pub fingerprint: [u8; 32],
    pub written_ns: i64,
    pub entries: HashMap<String, Stamp>,
    /// The content of stamped files, where the writer knew it.
    pub known: HashMap<String, Known>,
}

pub fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

impl Stamps {
    pub fn new(fingerprint: [u8; 32]) -> Stamps {
        Stamps {
            fingerprint,
            written_ns: 0,
            entries: HashMap::default(),
            known: HashMap::default(),
        }
    }

    /// What `path` holds, when its stamp is vouched for and its content is known.
    pub fn vouched(&self, path: &str, stamp: &Stamp) -> Option<&Known> {
        self.vouches(path, stamp)
            .then(|| self.known.get(path))
            .flatten()
    }

    /// Whether `path`'s content is known to be the one hashed for this generation: its
    /// stamp is the recorded one, and it was not modified within the racy window before
    /// the record was written.
    pub fn vouches(&self, path: &str, stamp: &Stamp) -> bool {
        let settled = self.written_ns.saturating_sub(RACY_NS);
        self.entries.get(path) == Some(stamp)
            && stamp.mtime_ns < settled
            && stamp.ctime_ns < settled
    }

    /// The stamps of `graph_dir` for the generation `fingerprint`; empty when there are
    /// none, they belong to another generation, or the file does not verify.
    pub fn read(graph_dir: &Path, fingerprint: &[u8; 32]) -> Stamps {
        let path = graph_dir.join(STAMPS_FILE);
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .filter(|stamps| stamps.fingerprint == *fingerprint)
            .unwrap_or_else(|| Stamps::new(*fingerprint))
    }

    /// The stamps of `graph_dir` when they belong to the generation whose fingerprint is
    /// `fingerprint_hex` (the committed one, as `CURRENT` names it).
    pub fn read_committed(graph_dir: &Path, fingerprint_hex: &str) -> Option<Stamps> {
        let path = graph_dir.join(STAMPS_FILE);
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| decode(&bytes))
            .filter(|stamps| crate::graph::format::hex(&stamps.fingerprint) == fingerprint_hex)
    }

    /// Writes the stamps atomically, dated `as_of`: a time taken before the files were
    /// stat'ed, so that a change between the stat and the write can never look settled.
    /// Best effort (a read-only or full disk only means the next read hashes again).
    pub fn write(&mut self, graph_dir: &Path, as_of_ns: i64) {
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        self.written_ns = as_of_ns;
        let bytes = self.encode();
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = graph_dir.join(format!("{STAMPS_FILE}.{}.{n}.tmp", std::process::id()));
        if std::fs::write(&tmp, bytes).is_ok()
            && std::fs::rename(&tmp, graph_dir.join(STAMPS_FILE)).is_err()
        {
            let _ = std::fs::remove_file(&tmp);
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut paths: Vec<(&String, &Stamp)> = self
            .entries
            .iter()
            .filter(|(p, _)| p.len() <= usize::from(u16::MAX))
            .collect();
        paths.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = Vec::with_capacity(64 + paths.len() * 48);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.fingerprint);
        out.extend_from_slice(&self.written_ns.to_le_bytes());
        out.extend_from_slice(&(paths.len() as u32).to_le_bytes());
        for (path, stamp) in paths {
            out.extend_from_slice(&(path.len() as u16).to_le_bytes());
            out.extend_from_slice(path.as_bytes());
            out.extend_from_slice(&stamp.size.to_le_bytes());
            out.extend_from_slice(&stamp.mtime_ns.to_le_bytes());
            out.extend_from_slice(&stamp.ctime_ns.to_le_bytes());
            out.extend_from_slice(&stamp.ino.to_le_bytes());
            match self.known.get(path.as_str()) {
                Some(known) => {
                    out.push(1);
                    out.extend_from_slice(&known.hash);
                    out.push(known.class);
                    out.extend_from_slice(&known.lines.to_le_bytes());
                }
                None => out.push(0),
            }
        }
        let checksum = blake3::hash(&out);
        out.extend_from_slice(checksum.as_bytes());
        out
    }
}

/// Reads `bytes` as a stamp file; `None` for anything that does not verify.
fn decode(bytes: &[u8]) -> Option<Stamps> {
    let (body, checksum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if blake3::hash(body).as_bytes() != checksum {
        return None;
    }
    let mut r = Reader(body);
    if r.take(8)? != MAGIC || r.u32()? != VERSION {
        return None;
    }
    r.u32()?;
    let fingerprint: [u8; 32] = r.take(32)?.try_into().ok()?;
    let written_ns = r.i64()?;
    let count = r.u32()? as usize;
    if count > MAX_ENTRIES {
        return None;
    }
    let mut entries = HashMap::with_capacity_and_hasher(count, Default::default());
    let mut known = HashMap::with_capacity_and_hasher(count, Default::default());
    for _ in 0..count {
        let len = usize::from(u16::from_le_bytes(r.take(2)?.try_into().ok()?));
        let path = std::str::from_utf8(r.take(len)?).ok()?.to_string();
        let stamp = Stamp {
            size: r.u64()?,
            mtime_ns: r.i64()?,
            ctime_ns: r.i64()?,
            ino: r.u64()?,
        };
        match r.take(1)?[0] {
            0 => {}
            1 => {
                let hash: [u8; 32] = r.take(32)?.try_into().ok()?;
                let class = r.take(1)?[0];
                let lines = r.u32()?;
                known.insert(path.clone(), Known { hash, class, lines });
            }
            _ => return None,
        }
        entries.insert(path, stamp);
    }
    r.0.is_empty().then_some(Stamps {
        fingerprint,
        written_ns,
        entries,
        known,
    })
}

/// A little-endian reader over a cache file's bytes: every read is checked.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }
    pub(super) fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    pub(super) fn u16(&mut self) -> Option<u16> {
        Some(u16::from_le_bytes(self.take(2)?.try_into().ok()?))
    }
    pub(super) fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    pub(super) fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    pub(super) fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    /// A `u32` count, then that many `u32`s.
    pub(super) fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = self.len_of(4)?;
        // Taken at once, sized once: the memo reads some 30k of these lists.
        let bytes = self.take(n * 4)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        )
    }
    /// A `u32` count, then that many `u64`s.
    pub(super) fn u64s(&mut self) -> Option<Vec<u64>> {
        let n = self.len_of(8)?;
        let bytes = self.take(n * 8)?;
        Some(
            bytes
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect(),
        )
    }
    /// A `u32` count of items at least `size` bytes each; `None` when the bytes left
    /// cannot hold them (so that a damaged count never sizes an allocation).
    pub(super) fn len_of(&mut self, size: usize) -> Option<usize> {
        let count = self.u32()? as usize;
        (count.checked_mul(size)? <= self.0.len()).then_some(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamps() -> Stamps {
        let mut s = Stamps::new([7; 32]);
        s.written_ns = 10 * RACY_NS;
        let stamp = Stamp {
            size: 12,
            mtime_ns: RACY_NS,
            ctime_ns: RACY_NS,
            ino: 42,
        };
        s.entries.insert("src/a.py".into(), stamp);
        s.entries.insert("b.rs".into(), Stamp { ino: 43, ..stamp });
        s.known.insert(
            "b.rs".into(),
            Known {
                hash: [9; 32],
                class: 1,
                lines: 300,
            },
        );
        s
    }

    #[test]
    fn stamps_round_trip_and_damage_reads_as_none() {
        let s = stamps();
        let bytes = s.encode();
        assert_eq!(decode(&bytes), Some(s));
        for i in [0, 9, 20, bytes.len() / 2, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            assert_eq!(decode(&damaged), None, "byte {i}");
        }
        assert_eq!(decode(&bytes[..bytes.len() - 5]), None);
        assert_eq!(decode(b""), None);
    }

    #[test]
    fn only_an_unchanged_settled_stamp_vouches() {
        let s = stamps();
        let stamp = s.entries["src/a.py"];
        assert!(s.vouches("src/a.py", &stamp));
        assert!(!s.vouches("src/other.py", &stamp));
        assert!(!s.vouches("src/a.py", &Stamp { size: 13, ..stamp }));
        assert!(!s.vouches(
            "src/a.py",
            &Stamp {
                ctime_ns: stamp.ctime_ns + 1,
                ..stamp
            }
        ));
        // Modified within the racy window before the record: hashed again.
        let mut racy = s.clone();
        racy.written_ns = stamp.mtime_ns + RACY_NS / 2;
        assert!(!racy.vouches("src/a.py", &stamp));
    }

    #[test]
    fn only_a_vouched_stamp_with_known_content_spares_the_read() {
        let s = stamps();
        let b = s.entries["b.rs"];
        assert_eq!(s.vouched("b.rs", &b).map(|k| k.lines), Some(300));
        // Vouched for, but its content is not described.
        assert_eq!(s.vouched("src/a.py", &s.entries["src/a.py"]), None);
        // Described, but the stamp changed.
        assert_eq!(s.vouched("b.rs", &Stamp { size: 1, ..b }), None);
    }

    #[test]
    fn a_version_1_file_reads_as_none() {
        let mut bytes = stamps().encode();
        bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
        let body = bytes.len() - 32;
        let checksum = *blake3::hash(&bytes[..body]).as_bytes();
        bytes[body..].copy_from_slice(&checksum);
        assert_eq!(decode(&bytes), None);
    }
}
