//! The heads pack (`cache/heads.pack`): the fact cache's heads (`fact_cache`) of a
//! build's files in one mapped file, so that an edit reads one file where it opened and
//! read every entry (1,500 opens on sympy, 11,700 on the large tree: a third of an
//! edit's extraction).
//!
//! ```text
//! magic(8) version(4) fact-cache-version(4) count(8) index-offset(8) blake3(rest)(32)
//!                                                                              64 bytes
//! heads: each head's bytes (as in its entry) at an offset that is a multiple of 16
//! index: count × [key(32) offset(8) length(8)], by key, to the end
//! ```
//!
//! A cache of the cache: the pack is checked whole when it is opened (one checksum over
//! its heads and index: hashing 1,500 heads one by one cost 7.7 ms of an edit on sympy,
//! the whole 12 MB 1.3 ms), and each head as its entry's is (archive, facts); the body
//! still comes from the entry on first use. A pack that cannot be trusted is not used,
//! nor a head in it that cannot be: it is read from its entry, and the build writes the
//! pack again (`Store::refresh_heads`). Version 1 (one checksum per head) is refused as
//! another version. A build writes it when the heads it read that were not in it are
//! more than one in sixteen of its files (an edit adds one), so a run of edits reads one
//! pack and writes it rarely. The pack is replaced by a rename, never written in place.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use super::fact_cache::{self, ALIGN};

const MAGIC: &[u8; 8] = b"ATLHEADS";
pub(super) const VERSION: u32 = 2;
const HEADER: usize = 64;
const ENTRY: usize = 48;
const _: () = assert!(ENTRY.is_multiple_of(ALIGN));
const _: () = assert!(HEADER.is_multiple_of(ALIGN));

/// Where a pack's heads are: the mapped file and its index's place.
pub(super) struct HeadsPack {
    map: memmap2::Mmap,
    index: usize,
    count: usize,
}

fn word(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

impl HeadsPack {
    /// The pack at `path`: `Ok(None)` when there is none, `Err` (why) when it cannot be
    /// trusted. Its header and index are checked here; each head when it is read.
    pub(super) fn open(path: &Path) -> Result<Option<HeadsPack>, String> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        // SAFETY: a pack is written aside and renamed into place under the build lock,
        // never written in place, so the mapped bytes do not change under the build.
        let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| e.to_string())?;
        if map.len() < HEADER || &map[..8] != MAGIC {
            return Err("not a heads pack".into());
        }
        if map[8..12] != VERSION.to_le_bytes() || map[12..16] != fact_cache::VERSION.to_le_bytes() {
            return Err("another heads pack version".into());
        }
        let (count, index) = (word(&map, 16), word(&map, 24));
        let end = count
            .checked_mul(ENTRY as u64)
            .and_then(|len| len.checked_add(index));
        if index < HEADER as u64 || end != Some(map.len() as u64) {
            return Err("the index is not where the header says".into());
        }
        let (count, index) = (count as usize, index as usize);
        let mut hasher = blake3::Hasher::new();
        if hasher.update_rayon(&map[HEADER..]).finalize().as_bytes() != &map[32..64] {
            return Err("checksum mismatch".into());
        }
        Ok(Some(HeadsPack { map, index, count }))
    }

    /// Heads in the pack.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    fn entry(&self, at: usize) -> &[u8] {
        &self.map[self.index + at * ENTRY..][..ENTRY]
    }

    /// The bytes of the head packed under `key` (checked with the pack): `None` when the
    /// pack does not hold it, `Err` when its index entry points outside the heads.
    pub(super) fn find(&self, key: &blake3::Hash) -> Option<Result<&[u8], String>> {
        let key = key.as_bytes().as_slice();
        let (mut low, mut high) = (0, self.count);
        while low < high {
            let middle = low + (high - low) / 2;
            if &self.entry(middle)[..32] < key {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let entry = (low < self.count)
            .then(|| self.entry(low))
            .filter(|entry| &entry[..32] == key)?;
        let (offset, len) = (word(entry, 32), word(entry, 40));
        let end = offset.checked_add(len);
        if offset < HEADER as u64
            || !offset.is_multiple_of(ALIGN as u64)
            || end.is_none_or(|end| end > self.index as u64)
        {
            return Some(Err("a head's place is outside the pack".into()));
        }
        Some(Ok(&self.map[offset as usize..(offset + len) as usize]))
    }
}

/// Writes the pack of `keys`' heads to `path` (through `aside`, renamed into place),
/// each head taken from `old` (checked when it was opened) when it holds it, else from
/// its entry (`entry` gives its path); a key whose head neither has is left out.
/// Returns the heads packed.
pub(super) fn write(
    path: &Path,
    aside: &Path,
    keys: &[blake3::Hash],
    old: Option<&HeadsPack>,
    entry: impl Fn(&blake3::Hash) -> std::path::PathBuf,
) -> std::io::Result<usize> {
    let mut sorted: Vec<&blake3::Hash> = keys.iter().collect();
    sorted.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    sorted.dedup();
    let mut out = std::io::BufWriter::with_capacity(1 << 20, File::create(aside)?);
    out.write_all(&[0; HEADER])?;
    let mut at = HEADER as u64;
    let mut index = Vec::with_capacity(sorted.len() * ENTRY);
    let mut hasher = blake3::Hasher::new();
    for key in sorted {
        let from_entry;
        let bytes: &[u8] = match old.and_then(|pack| pack.find(key)).and_then(Result::ok) {
            Some(bytes) => bytes,
            None => match fact_cache::head_bytes(&entry(key), key) {
                Some(bytes) => {
                    from_entry = bytes;
                    &from_entry
                }
                None => continue,
            },
        };
        index.extend_from_slice(key.as_bytes());
        index.extend_from_slice(&at.to_le_bytes());
        index.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        let padding = bytes.len().next_multiple_of(ALIGN) - bytes.len();
        for part in [bytes, &[0; ALIGN][..padding]] {
            out.write_all(part)?;
            hasher.update(part);
        }
        at += (bytes.len() + padding) as u64;
    }
    let count = index.len() / ENTRY;
    out.write_all(&index)?;
    hasher.update(&index);
    let mut header = Vec::with_capacity(HEADER);
    header.extend_from_slice(MAGIC);
    header.extend_from_slice(&VERSION.to_le_bytes());
    header.extend_from_slice(&fact_cache::VERSION.to_le_bytes());
    header.extend_from_slice(&(count as u64).to_le_bytes());
    header.extend_from_slice(&at.to_le_bytes());
    header.extend_from_slice(hasher.finalize().as_bytes());
    let mut file = out.into_inner().map_err(|e| e.into_error())?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(&header)?;
    drop(file);
    std::fs::rename(aside, path)?;
    Ok(count)
}
