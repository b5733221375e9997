//! Loading one inventoried file: read it as the inventory allows (confined, regular,
//! bounded), hash and classify it, and take its facts from the cache by content or extract
//! them (R-EXT-3), repairing a cache entry that cannot be trusted.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::inventory::{SkipReason, Skipped};
use crate::build::stamps::Known;
use crate::build::store::{Cached, LazyFacts, Store};
use crate::graph::codes::FileClass;
use crate::syntax::extract::{self, EXTRACTOR_VERSION};
use crate::syntax::facts::FileFacts;
use crate::syntax::lang::Language;

/// What loading the inventory did, counted across threads.
#[derive(Default)]
pub(super) struct LoadCounters {
    /// Files extracted (cache misses).
    pub(super) parsed: AtomicUsize,
    /// Cache entries that could not be trusted and were re-extracted.
    pub(super) repaired: AtomicUsize,
    /// Files taken from the stamps' description, not read.
    pub(super) unread: AtomicUsize,
    /// Files whose facts came from the process's memory (`FactMemo`), not the cache.
    pub(super) from_memory: AtomicUsize,
}

/// A kept resolution, and the checksum of the memo file it was written whole as.
pub(super) type KeptResolution = (Arc<crate::build::resolve::Memo>, Option<[u8; 32]>);

/// Facts kept in memory between the builds of one long-lived process (`atlas watch`
/// builds in its own). A cache key's facts are a pure function of the key, so a kept
/// entry is what the cache on disk would give, without reading, checking and decoding
/// it again: most of an edit's extraction. It holds the last build's facts only, which
/// that build held anyway. It also keeps the last build's resolution
/// (`resolve::Memo`), so that the next build does not read it back from disk.
#[derive(Default)]
pub struct FactMemo {
    entries: std::sync::Mutex<rustc_hash::FxHashMap<[u8; 32], Held>>,
    /// The last build's resolution, and the checksum of the memo file it was written
    /// whole as, once its build wrote it: the next build's memo extends that file (a
    /// delta, not the whole).
    resolution: std::sync::Mutex<Option<KeptResolution>>,
}

impl std::fmt::Debug for FactMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FactMemo({} entries)", self.len())
    }
}

impl FactMemo {
    /// Entries kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, rustc_hash::FxHashMap<[u8; 32], Held>> {
        // A panic while holding it leaves a map that is still whole.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn get(&self, key: &blake3::Hash) -> Option<Held> {
        self.lock().get(key.as_bytes()).cloned()
    }

    /// The last build's resolution, when this process made one, with the checksum of
    /// the memo file it was written whole as, if it was.
    pub(super) fn resolution(&self) -> Option<KeptResolution> {
        self.resolution
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Lets go of the kept resolution (a build about to consume it).
    pub(super) fn forget_resolution(&self) {
        *self.resolution.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Records that `memo`, if it is still the kept resolution, was written whole as the
    /// memo file sealed by `checksum`.
    pub(super) fn wrote_resolution(
        &self,
        memo: &Arc<crate::build::resolve::Memo>,
        checksum: [u8; 32],
    ) {
        let mut kept = self.resolution.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((kept, written)) = kept.as_mut()
            && Arc::ptr_eq(kept, memo)
        {
            *written = Some(checksum);
        }
    }

    /// Forgets everything kept: facts and resolution (a build found a kept entry's body
    /// damaged).
    pub(super) fn forget(&self) {
        self.lock().clear();
        self.forget_resolution();
    }

    pub(super) fn keep_resolution(&self, memo: Arc<crate::build::resolve::Memo>) {
        *self.resolution.lock().unwrap_or_else(|p| p.into_inner()) = Some((memo, None));
    }

    /// Keeps the facts of `files` (a build's), and only those: what the tree no longer
    /// holds is released.
    pub(super) fn keep(&self, files: &[Loaded]) {
        let kept = files
            .iter()
            .filter_map(|f| {
                let key = fact_key(&f.hash, f.language?);
                Some((*key.as_bytes(), (f.facts.clone()?, f.lazy.clone())))
            })
            .collect();
        *self.lock() = kept;
    }
}

/// A file's facts and, when they came from the cache, its references held back
/// (`Loaded::lazy`).
type Held = (Arc<FileFacts>, Option<Arc<LazyFacts>>);

/// A file after reading and extraction.
#[derive(Clone)]
pub(super) struct Loaded {
    pub(super) path: String,
    pub(super) language: Option<Language>,
    pub(super) class: FileClass,
    pub(super) hash: [u8; 32],
    pub(super) size: u64,
    pub(super) lines: u32,
    /// Facts taken from the cache hold only their bases in `facts.refs` and their
    /// fields in `facts.bindings`: every reference and binding is in `lazy`, decoded on
    /// first use (`Store::load_facts_lazily`). `None` when `facts` is whole (facts just
    /// extracted).
    pub(super) facts: Option<Arc<FileFacts>>,
    pub(super) lazy: Option<Arc<LazyFacts>>,
}

/// Cache key of a file's facts (R-EXT-3).
pub(super) fn fact_key(hash: &[u8; 32], language: Language) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(hash);
    hasher.update(&EXTRACTOR_VERSION.to_le_bytes());
    hasher.update(&[language.code()]);
    hasher.update(language.query_hash().as_bytes());
    hasher.finalize()
}

fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8000)].contains(&0)
}

/// Whether content is text a build compiles (not binary, UTF-8): what a file skipped for
/// its content must become to be a change (`session::changes`).
pub(super) fn is_compilable_text(bytes: &[u8]) -> bool {
    !looks_binary(bytes) && std::str::from_utf8(bytes).is_ok()
}

/// Reads, hashes, classifies and (unless cached) extracts one inventoried file. A file
/// whose content the committed generation's stamps vouch for (`known`) is not read: its
/// hash, class and lines are the known ones, and its facts the cached ones (read as usual
/// when the cache no longer has them).
pub(super) fn load(
    store: &Store,
    root: &Path,
    file: &super::inventory::InventoryFile,
    limit: u64,
    counters: &LoadCounters,
    known: Option<&Known>,
    memo: Option<&FactMemo>,
) -> std::result::Result<Loaded, Skipped> {
    if let Some(loaded) = known.and_then(|known| load_known(store, file, known, memo, counters)) {
        counters.unread.fetch_add(1, Ordering::Relaxed);
        return Ok(loaded);
    }
    let skip = |reason| Skipped {
        path: file.path.clone(),
        reason,
    };
    let (mut loaded, bytes) = read_identified(root, file, limit)?;
    // `read_identified` checked that the content is UTF-8.
    let text = std::str::from_utf8(&bytes).map_err(|_| skip(SkipReason::NotUtf8))?;
    if let Some(language) = loaded.language {
        let key = fact_key(&loaded.hash, language);
        if let Some((facts, lazy)) = memo.and_then(|memo| memo.get(&key)) {
            counters.from_memory.fetch_add(1, Ordering::Relaxed);
            (loaded.facts, loaded.lazy) = (Some(facts), lazy);
            return Ok(loaded);
        }
        let facts = match store.load_facts_lazily(&key) {
            Cached::Hit((facts, lazy)) => {
                loaded.lazy = Some(Arc::new(lazy));
                facts
            }
            damaged_or_missing => {
                if matches!(damaged_or_missing, Cached::Damaged(_)) {
                    counters.repaired.fetch_add(1, Ordering::Relaxed);
                }
                let facts = extract::extract(language, text)
                    .map_err(|e| skip(SkipReason::Unreadable(e.to_string())))?;
                // A cache write failure costs a re-parse next time, never the build.
                let _ = store.store_facts(&key, &facts);
                counters.parsed.fetch_add(1, Ordering::Relaxed);
                Arc::new(facts)
            }
        };
        loaded.facts = Some(facts);
    }
    Ok(loaded)
}

/// `file` read, hashed and classified, without its facts: what a no-op build needs of a
/// file its stamps do not vouch for (`pipeline::unchanged_unread`).
pub(super) fn identify(
    root: &Path,
    file: &super::inventory::InventoryFile,
    limit: u64,
) -> std::result::Result<Loaded, Skipped> {
    read_identified(root, file, limit).map(|(loaded, _)| loaded)
}

/// `file` read as an inventory file, hashed and classified (no facts yet), with its bytes;
/// skipped when it cannot be read or is not UTF-8 text.
fn read_identified(
    root: &Path,
    file: &super::inventory::InventoryFile,
    limit: u64,
) -> std::result::Result<(Loaded, Vec<u8>), Skipped> {
    let skip = |reason| Skipped {
        path: file.path.clone(),
        reason,
    };
    // Read as an inventory file: never a FIFO, never through a symlink out of the root,
    // never beyond the inventory's size limit (the file may have changed since the walk).
    let bytes = crate::source::read(root, &file.path, limit)
        .map_err(|e| skip(SkipReason::Unreadable(e.to_string())))?;
    if looks_binary(&bytes) {
        return Err(skip(SkipReason::Binary));
    }
    let text = std::str::from_utf8(&bytes).map_err(|_| skip(SkipReason::NotUtf8))?;
    let loaded = Loaded {
        path: file.path.clone(),
        language: file.language(),
        class: super::inventory::classify(&file.path, text),
        hash: *blake3::hash(&bytes).as_bytes(),
        size: bytes.len() as u64,
        lines: text.lines().count() as u32,
        facts: None,
        lazy: None,
    };
    Ok((loaded, bytes))
}

/// `file` as the stamps describe it, with its cached facts; `None` when the cache does
/// not hold them (the caller reads the file).
fn load_known(
    store: &Store,
    file: &super::inventory::InventoryFile,
    known: &Known,
    memo: Option<&FactMemo>,
    counters: &LoadCounters,
) -> Option<Loaded> {
    let class = FileClass::from_code(known.class)?;
    let (facts, lazy) = match file.language() {
        Some(language) => {
            let key = fact_key(&known.hash, language);
            match memo.and_then(|memo| memo.get(&key)) {
                Some((facts, lazy)) => {
                    counters.from_memory.fetch_add(1, Ordering::Relaxed);
                    (Some(facts), lazy)
                }
                None => match store.load_facts_lazily(&key) {
                    Cached::Hit((facts, lazy)) => (Some(facts), Some(Arc::new(lazy))),
                    _ => return None,
                },
            }
        }
        None => (None, None),
    };
    Some(Loaded {
        path: file.path.clone(),
        language: file.language(),
        class,
        hash: known.hash,
        size: file.stamp?.size,
        lines: known.lines,
        facts,
        lazy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::inventory::FileRole;
    use std::path::PathBuf;

    #[test]
    fn a_file_that_cannot_be_read_is_skipped_as_unreadable() {
        // Root reads everything, so a permission test cannot fail here; a file that
        // vanishes between inventory and read exercises the same path.
        let temp = tempfile::tempdir().unwrap();
        let store = Store::new(temp.path().join("graph"));
        let file = crate::build::inventory::InventoryFile {
            path: "gone.py".into(),
            size: 10,
            role: FileRole::Code(Language::Python),
            stamp: None,
        };
        let counters = LoadCounters::default();
        let skipped = match load(&store, temp.path(), &file, u64::MAX, &counters, None, None) {
            Err(skipped) => skipped,
            Ok(_) => panic!("a missing file cannot load"),
        };
        assert_eq!(skipped.path, "gone.py");
        assert_eq!(skipped.reason.code(), "unreadable");
        assert_eq!(counters.parsed.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_corrupt_cache_entry_is_a_miss_not_an_error() {
        let temp = tempfile::tempdir().unwrap();
        let store = Store::new(temp.path().join("graph"));
        std::fs::write(temp.path().join("a.py"), "def f():\n    return 1\n").unwrap();
        let file = crate::build::inventory::InventoryFile {
            path: "a.py".into(),
            size: 22,
            role: FileRole::Code(Language::Python),
            stamp: None,
        };
        let counters = LoadCounters::default();
        assert!(load(&store, temp.path(), &file, u64::MAX, &counters, None, None).is_ok());
        assert_eq!(counters.parsed.load(Ordering::Relaxed), 1);
        // Overwrite every cache entry with garbage: the next load re-parses and counts a
        // repair.
        for entry in walk(&temp.path().join("graph/cache")) {
            std::fs::write(entry, b"garbage").unwrap();
        }
        let loaded = load(&store, temp.path(), &file, u64::MAX, &counters, None, None)
            .map_err(|s| s.path)
            .unwrap();
        assert_eq!(counters.parsed.load(Ordering::Relaxed), 2);
        assert_eq!(counters.repaired.load(Ordering::Relaxed), 1);
        assert_eq!(loaded.facts.unwrap().defs[0].name, "f");
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
