//! The graph directory: where it is (R-GEN-1), and its generations, lock and fact cache
//! (R-GEN-2, R-EXT-3).
//!
//! ```text
//! <graph>/CURRENT                  committed fingerprint (replaced atomically)
//! <graph>/ROOT                     absolute code root of the last build
//! <graph>/generations/<fp>/        graph.atlas, manifest.json (immutable once published)
//! <graph>/cache/<aa>/<key>.facts   per-file facts by content key
//! <graph>/.staging/<n>/            a build in progress
//! <graph>/lock                     serialises builds
//! ```
//!
//! Architecture invariant: a generation directory is complete before it is renamed into
//! `generations/`, and `CURRENT` only ever names a published generation, so a crash at
//! any point leaves the last committed generation intact and readable.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::fact_cache;
pub use super::fact_cache::{Cached, CachedFacts, LazyFacts};
use super::heads_pack::{self, HeadsPack};
use super::manifest::Manifest;
use crate::config::Placement;
use crate::error::{AtlasError, IoContext, Result};
use crate::graph::reader::Graph;
use crate::syntax::facts::FileFacts;

/// An exclusive lock on `path` (created when missing), held while the returned file is
/// open and released by the system when its process ends, however it ends: `Ok(None)` when
/// another process holds it. The watcher and the daemon mark themselves this way.
pub fn try_hold(path: &Path) -> Result<Option<File>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .at(path)?;
    // `is_held` probes with a brief shared lock: a probe is not a holder, so it is waited
    // out for a moment before the lock counts as taken.
    let started = std::time::Instant::now();
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) if started.elapsed() < PROBE_PATIENCE => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(fs::TryLockError::WouldBlock) => return Ok(None),
            Err(fs::TryLockError::Error(e)) => return Err(AtlasError::io(path, e)),
        }
    }
}

/// How long `try_hold` waits out a probe of `is_held`.
const PROBE_PATIENCE: std::time::Duration = std::time::Duration::from_millis(200);

/// Whether a live process holds `try_hold`'s lock on `path`.
pub fn is_held(path: &Path) -> bool {
    File::open(path)
        .is_ok_and(|file| matches!(file.try_lock_shared(), Err(fs::TryLockError::WouldBlock)))
}

pub const DEFAULT_GRAPH_DIR: &str = ".agent-spec/graph";
pub const GRAPH_FILE: &str = "graph.atlas";
/// A format-4 generation's segments, beside its root (`GRAPH_FILE`).
pub use crate::graph::format::SEGMENTS_DIR;
pub const MANIFEST_FILE: &str = "manifest.json";
/// The heads pack's name in the cache directory (`heads_pack`).
pub const HEADS_PACK_FILE: &str = "heads.pack";
/// Generations kept by garbage collection, the committed one included (R-GEN-2: ≥ 2).
const KEEP_GENERATIONS: usize = 2;

/// Which R-GEN-1 rule chose the graph directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphDirRule {
    Flag,
    EnvGraphDir,
    EnvIndexDir,
    Ascending,
    EditorRoot,
    CodeRoot,
}

impl GraphDirRule {
    pub fn as_str(self) -> &'static str {
        match self {
            GraphDirRule::Flag => "flag --graph",
            GraphDirRule::EnvGraphDir => "env ATLAS_GRAPH_DIR",
            GraphDirRule::EnvIndexDir => "env ATLAS_INDEX_DIR",
            GraphDirRule::Ascending => "ascending search",
            GraphDirRule::EditorRoot => "editor root",
            GraphDirRule::CodeRoot => "code root fallback",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub graph_dir: PathBuf,
    pub rule: GraphDirRule,
    pub code_root: PathBuf,
    /// The code root was given (`--code`), not inferred.
    pub code_given: bool,
}

impl Location {
    /// The code root that reads compare the graph against (issue 10, E): `--code`, else
    /// the directory the graph was found in, so that a moved or copied repository reads
    /// itself. A graph named from elsewhere (`--graph`, the environment) without `--code`
    /// reads the root its last build recorded. When that root is gone (the checkout
    /// moved, or a CI cache of the graph was restored beside another checkout), the
    /// working directory's tree stands for it only if it holds the graph's files
    /// (`holds_files_of`); any other tree is `CodeRootGone`: reading it would answer,
    /// and refresh the graph, from files of another repository. A graph with no
    /// recorded root (never built) takes the working directory's.
    pub fn read_root(&self, store: &Store) -> Result<PathBuf, AtlasError> {
        let named_elsewhere = matches!(
            self.rule,
            GraphDirRule::Flag | GraphDirRule::EnvGraphDir | GraphDirRule::EnvIndexDir
        );
        if self.code_given || !named_elsewhere {
            return Ok(self.code_root.clone());
        }
        match store.read_root() {
            Some(root) if root.is_dir() => Ok(root),
            Some(_) if holds_files_of(&self.code_root, store) => Ok(self.code_root.clone()),
            Some(root) => Err(AtlasError::CodeRootGone(root)),
            None => Ok(self.code_root.clone()),
        }
    }
}

impl Location {
    /// This location with the code root reads take (`read_root`), for a process that
    /// serves or refreshes a graph named from elsewhere (the daemon and its clients,
    /// `watch`): it serves the graph's repository, never the directory it was started in.
    pub fn for_reads(self, store: &Store) -> Result<Location, AtlasError> {
        let code_root = self.read_root(store)?;
        Ok(Location { code_root, ..self })
    }
}

/// Whether `dir` holds the committed graph's files: at least half of up to 64 of them,
/// spread over its file table, are files under it (by `stat`; nothing is read).
fn holds_files_of(dir: &Path, store: &Store) -> bool {
    let Ok((_, graph)) = store.open_current() else {
        return false;
    };
    let files: Vec<_> = graph.files().collect();
    let step = files.len().div_ceil(64).max(1);
    let sample: Vec<_> = files.iter().step_by(step).collect();
    let present = sample
        .iter()
        .filter(|&&&file| dir.join(graph.file_path(file)).is_file())
        .count();
    !sample.is_empty() && present * 2 >= sample.len()
}

/// Resolves the graph directory and code root (R-GEN-1).
///
/// Order: `--graph`; `ATLAS_GRAPH_DIR` (alias `ATLAS_INDEX_DIR`); an existing
/// `.agent-spec/graph` found ascending from the code directory (or the CWD when `--code`
/// is absent); the editor's root (`CLAUDE_PROJECT_DIR`, then the first of
/// `WORKSPACE_FOLDER_PATHS`) when `--code` is absent; else `<code root>/.agent-spec/graph`.
/// Without `--code`, the code root is the directory holding the found `.agent-spec`, the
/// editor root, or the CWD.
pub fn locate(
    graph_flag: Option<&Path>,
    code_flag: Option<&Path>,
    cwd: &Path,
    placement: &Placement,
) -> Location {
    let absolute = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            cwd.join(p)
        }
    };
    let code = code_flag.map(absolute);
    let env_dir = |value: &Option<String>| {
        value
            .as_deref()
            .filter(|v| !v.is_empty())
            .map(|v| absolute(Path::new(v)))
    };
    let editor_root = || {
        env_dir(&placement.claude_project_dir).or_else(|| {
            placement
                .workspace_folder_paths
                .as_deref()
                .and_then(|v| {
                    v.split([',', ':', ';'])
                        .find(|s| !s.is_empty())
                        .map(str::to_string)
                })
                .map(|v| absolute(Path::new(&v)))
        })
    };
    let start = code.clone().unwrap_or_else(|| cwd.to_path_buf());
    let ascending = start
        .ancestors()
        .find(|dir| dir.join(DEFAULT_GRAPH_DIR).join("CURRENT").is_file())
        .map(Path::to_path_buf);
    let code_root = code
        .clone()
        .or_else(|| ascending.clone())
        .or_else(|| editor_root().filter(|r| r.is_dir()))
        .unwrap_or_else(|| cwd.to_path_buf());

    let (graph_dir, rule) = if let Some(flag) = graph_flag {
        (absolute(flag), GraphDirRule::Flag)
    } else if let Some(dir) = env_dir(&placement.graph_dir) {
        (dir, GraphDirRule::EnvGraphDir)
    } else if let Some(dir) = env_dir(&placement.index_dir) {
        (dir, GraphDirRule::EnvIndexDir)
    } else if let Some(root) = ascending {
        (root.join(DEFAULT_GRAPH_DIR), GraphDirRule::Ascending)
    } else if let Some(root) = editor_root().filter(|r| code.is_none() && r.is_dir()) {
        (root.join(DEFAULT_GRAPH_DIR), GraphDirRule::EditorRoot)
    } else {
        (code_root.join(DEFAULT_GRAPH_DIR), GraphDirRule::CodeRoot)
    };
    Location {
        graph_dir,
        rule,
        code_root,
        code_given: code.is_some(),
    }
}

/// Exclusive build lock; released on drop (and by the OS if the process dies).
#[derive(Debug)]
pub struct BuildLock {
    _file: File,
}

/// A build's fact keys, for `Store::refresh_heads`: how many, and how to compute them.
pub(super) struct FactKeys<'a> {
    count: usize,
    compute: Box<dyn Fn() -> Vec<blake3::Hash> + Sync + 'a>,
}

impl<'a> FactKeys<'a> {
    pub(super) fn new(count: usize, compute: impl Fn() -> Vec<blake3::Hash> + Sync + 'a) -> Self {
        FactKeys {
            count,
            compute: Box::new(compute),
        }
    }
}

pub struct Store {
    dir: PathBuf,
    /// The heads pack, mapped on the first head a build reads (`Some(None)`: none to
    /// use) and let go once extraction is done (`release_heads`).
    heads: std::sync::Mutex<Option<Option<Arc<HeadsPack>>>>,
    /// Heads in the pack when it was first opened.
    heads_packed: std::sync::atomic::AtomicUsize,
    /// Whether heads are read from the pack: a build that reads every file's head says
    /// so (`read_every_head`); reading a few (a no-op's partial files) maps no pack.
    heads_wanted: std::sync::atomic::AtomicBool,
    /// Heads `load_facts_lazily` read that the pack did not give.
    heads_missed: std::sync::atomic::AtomicUsize,
    /// The pack, or a head in it, could not be trusted.
    heads_damaged: std::sync::atomic::AtomicBool,
    /// Keys whose entries were removed (`remove_facts`): the pack's heads of them are
    /// not used, so that their files are extracted again.
    removed: std::sync::Mutex<Vec<blake3::Hash>>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store {
            dir: dir.into(),
            heads: Default::default(),
            heads_packed: Default::default(),
            heads_wanted: Default::default(),
            heads_missed: Default::default(),
            heads_damaged: Default::default(),
            removed: Default::default(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn generations(&self) -> PathBuf {
        self.dir.join("generations")
    }

    pub fn generation_dir(&self, fingerprint: &str) -> PathBuf {
        self.generations().join(fingerprint)
    }

    pub fn graph_path(&self, fingerprint: &str) -> PathBuf {
        self.generation_dir(fingerprint).join(GRAPH_FILE)
    }

    /// The committed fingerprint, if any.
    pub fn current(&self) -> Result<Option<String>> {
        let path = self.dir.join("CURRENT");
        // Bytes, not text: a CURRENT that is not UTF-8 is damage like any other wrong
        // content (repaired by a build), not an I/O failure. At most a few bytes past a
        // fingerprint are read: a damaged CURRENT may be any size.
        let read = fs::File::open(&path).and_then(|file| {
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(file, 256), &mut bytes)?;
            Ok(bytes)
        });
        match read {
            Ok(bytes) => {
                let fp = std::str::from_utf8(&bytes).unwrap_or_default().trim();
                let valid = fp.len() == 64 && fp.bytes().all(|b| b.is_ascii_hexdigit());
                if !valid {
                    return Err(AtlasError::GraphCorrupt {
                        path,
                        reason: "CURRENT does not hold a fingerprint".into(),
                    });
                }
                Ok(Some(fp.to_string()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(AtlasError::io(path, e)),
        }
    }

    /// Opens the committed generation; the returned graph pins it for its lifetime.
    pub fn open_current(&self) -> Result<(String, Graph)> {
        let fp = self
            .current()?
            .ok_or_else(|| AtlasError::GraphMissing(self.dir.clone()))?;
        let path = self.graph_path(&fp);
        let graph = Graph::open(&path).map_err(|e| match e {
            // CURRENT names a generation that is not there: the store is damaged, and a
            // build (or a read that may write) rebuilds it.
            AtlasError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                AtlasError::GraphCorrupt {
                    path: path.clone(),
                    reason: "the generation CURRENT names is missing".into(),
                }
            }
            other => other,
        })?;
        if graph.fingerprint() != fp {
            return Err(AtlasError::GraphCorrupt {
                path: self.graph_path(&fp),
                reason: format!(
                    "graph fingerprint {} does not match CURRENT",
                    graph.fingerprint()
                ),
            });
        }
        Ok((fp, graph))
    }

    pub fn read_manifest(&self, fingerprint: &str) -> Result<Manifest> {
        let path = self.generation_dir(fingerprint).join(MANIFEST_FILE);
        let text = fs::read_to_string(&path).at(&path)?;
        serde_json::from_str(&text).map_err(|e| AtlasError::GraphCorrupt {
            path,
            reason: format!("manifest is not a manifest: {e}"),
        })
    }

    /// Takes the build lock, waiting at most `patience` for another holder to release it
    /// (polled, so that a reader's wait is bounded).
    pub fn lock_within(&self, patience: std::time::Duration) -> Result<BuildLock> {
        let started = std::time::Instant::now();
        loop {
            match self.lock(false) {
                Err(AtlasError::BuildLocked(path)) => {
                    if started.elapsed() >= patience {
                        return Err(AtlasError::BuildLocked(path));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(25));
                }
                other => return other,
            }
        }
    }

    /// Takes the build lock; `wait` blocks until it is free instead of failing.
    pub fn lock(&self, wait: bool) -> Result<BuildLock> {
        fs::create_dir_all(&self.dir).at(&self.dir)?;
        let path = self.dir.join("lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .at(&path)?;
        if wait {
            file.lock().at(&path)?;
        } else {
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => return Err(AtlasError::BuildLocked(path)),
                Err(fs::TryLockError::Error(e)) => return Err(AtlasError::io(path, e)),
            }
        }
        let lock = BuildLock { _file: file };
        self.clean_leftovers(&lock);
        Ok(lock)
    }

    /// Removes what killed or failed builds left behind — staging and temporary index
    /// directories, half-written pointer files — first thing under the lock, before
    /// anything new is written (a full disk is freed before it is filled again).
    fn clean_leftovers(&self, _lock: &BuildLock) {
        let _ = fs::remove_dir_all(self.dir.join(".staging"));
        let _ = fs::remove_dir_all(self.dir.join("cache").join(".tmp"));
        for name in ["CURRENT.tmp", "ROOT.tmp"] {
            let _ = fs::remove_file(self.dir.join(name));
        }
        let search = self.search_root();
        if search.exists() && !search.is_dir() {
            let _ = fs::remove_file(&search);
        }
        if let Ok(entries) = fs::read_dir(search) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().contains(".tmp") {
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
        }
    }

    /// Where generations' search indexes live: `search/<fingerprint>/`.
    fn search_root(&self) -> PathBuf {
        self.dir.join("search")
    }

    /// The directory of a generation's search index.
    pub fn search_dir(&self, fingerprint: &str) -> PathBuf {
        self.search_root().join(fingerprint)
    }

    /// Finished search indexes of generations that still exist, but `except`'s:
    /// (directory, fingerprint), newest first (the bases a new index may derive from).
    pub fn search_indexes(&self, except: &str) -> Vec<(PathBuf, String)> {
        let Ok(entries) = fs::read_dir(self.search_root()) else {
            return Vec::new();
        };
        let mut found: Vec<(std::time::SystemTime, PathBuf, String)> = entries
            .flatten()
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().to_string();
                let dir = entry.path();
                if name == except || name.contains('.') || !self.graph_path(&name).is_file() {
                    return None;
                }
                let modified = fs::metadata(dir.join("COMPLETE"))
                    .and_then(|m| m.modified())
                    .ok()?;
                Some((modified, dir, name))
            })
            .collect();
        found.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.cmp(&b.2)));
        found
            .into_iter()
            .map(|(_, dir, name)| (dir, name))
            .collect()
    }

    /// Removes search indexes of generations that no longer exist, but `keep`'s.
    pub fn collect_search_garbage(&self, _lock: &BuildLock, keep: &str) {
        let Ok(entries) = fs::read_dir(self.search_root()) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name != keep && !self.generation_dir(&name).is_dir() {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }

    /// A fresh staging directory, removed again unless it is installed.
    pub fn staging(&self, _lock: &BuildLock) -> Result<Scratch> {
        Scratch::create(
            self.dir
                .join(".staging")
                .join(std::process::id().to_string()),
        )
    }

    /// Publishes a complete staging directory as generation `fingerprint` and commits it.
    pub fn publish(&self, lock: &BuildLock, staging: Scratch, fingerprint: &str) -> Result<()> {
        self.install(lock, staging, fingerprint)?;
        self.commit(lock, fingerprint)
    }

    /// Moves a complete, fsynced staging directory into `generations/` (not yet committed:
    /// readers still read `CURRENT`'s generation).
    pub fn install(&self, _lock: &BuildLock, staging: Scratch, fingerprint: &str) -> Result<()> {
        let generations = self.generations();
        fs::create_dir_all(&generations).at(&generations)?;
        let target = self.generation_dir(fingerprint);
        if target.exists() {
            // Same inputs were published before; the old copy is byte-identical (the
            // staging directory is removed when `staging` drops).
            return Ok(());
        }
        staging.persist_as(&target)
    }

    /// Points `CURRENT` at an installed generation, atomically (R-GEN-2).
    pub fn commit(&self, _lock: &BuildLock, fingerprint: &str) -> Result<()> {
        let tmp = self.dir.join("CURRENT.tmp");
        {
            let mut file = File::create(&tmp).at(&tmp)?;
            file.write_all(fingerprint.as_bytes()).at(&tmp)?;
            file.write_all(b"\n").at(&tmp)?;
            file.sync_all().at(&tmp)?;
        }
        let current = self.dir.join("CURRENT");
        fs::rename(&tmp, &current).at(&current)?;
        sync_dir(&self.dir)?;
        Ok(())
    }

    pub fn write_root(&self, root: &Path) -> Result<()> {
        let path = self.dir.join("ROOT");
        let tmp = self.dir.join("ROOT.tmp");
        fs::write(&tmp, root.to_string_lossy().as_bytes()).at(&tmp)?;
        fs::rename(&tmp, &path).at(&path)
    }

    pub fn read_root(&self) -> Option<PathBuf> {
        fs::read_to_string(self.dir.join("ROOT"))
            .ok()
            .filter(|s| !s.trim().is_empty())
            .map(|s| PathBuf::from(s.trim()))
    }

    /// Removes old generations, keeping the committed one and the newest others up to
    /// `KEEP_GENERATIONS` in all. Returns how many were removed.
    pub fn collect_garbage(&self, _lock: &BuildLock) -> Result<usize> {
        let generations = self.generations();
        let current = self.current().ok().flatten();
        let mut others = Vec::new();
        let entries = match fs::read_dir(&generations) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(AtlasError::io(generations, e)),
        };
        for entry in entries {
            let entry = entry.at(&generations)?;
            let name = entry.file_name().to_string_lossy().to_string();
            if Some(&name) == current.as_ref() {
                continue;
            }
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(std::time::SystemTime::UNIX_EPOCH);
            others.push((modified, name));
        }
        others.sort();
        let keep_others = KEEP_GENERATIONS.saturating_sub(1);
        let remove = others.len().saturating_sub(keep_others);
        for (_, name) in others.into_iter().take(remove) {
            let dir = generations.join(&name);
            fs::remove_dir_all(&dir).at(&dir)?;
        }
        Ok(remove)
    }

    pub(super) fn cache_path(&self, key: &blake3::Hash) -> PathBuf {
        let hex = key.to_hex();
        self.dir
            .join("cache")
            .join(&hex[..2])
            .join(format!("{}.facts", &hex[2..]))
    }

    /// Cached facts for `key` (R-EXT-3), whole. An entry is trusted only when its header
    /// names this key, both its parts match their checksums and the facts hold together;
    /// anything else is `Damaged` — re-extracted and counted by the build
    /// (`cache_repaired`).
    pub fn load_facts(&self, key: &blake3::Hash) -> CachedFacts {
        fact_cache::read_whole(&self.cache_path(key), key)
    }

    /// Cached facts for `key` as a build holds them: the entry's head (the facts with
    /// only the references that are bases and the bindings that are fields), checked as
    /// [`Store::load_facts`] checks it, and its body read on first use ([`LazyFacts`]).
    /// The body is most of an entry, and a build reads it only for the files it resolves.
    /// The head comes from the heads pack when it holds it (checked as the entry's
    /// would be), else from the entry.
    pub fn load_facts_lazily(&self, key: &blake3::Hash) -> Cached<(Arc<FileFacts>, LazyFacts)> {
        use std::sync::atomic::Ordering::Relaxed;
        let path = self.cache_path(key);
        let removed = || {
            self.removed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .contains(key)
        };
        let wanted = self.heads_wanted.load(Relaxed);
        let packed = wanted
            .then(|| self.heads_pack())
            .flatten()
            .filter(|_| !removed());
        match packed.as_deref().and_then(|pack| pack.find(key)) {
            Some(Ok(head)) => match fact_cache::head_from(head, &path, key) {
                Ok(read) => return Cached::Hit(read),
                Err(_) => self.heads_damaged.store(true, Relaxed),
            },
            Some(Err(_)) => self.heads_damaged.store(true, Relaxed),
            None => {}
        }
        self.heads_missed.fetch_add(1, Relaxed);
        fact_cache::read_lazily(&path, key)
    }

    fn heads_path(&self) -> PathBuf {
        self.dir.join("cache").join(HEADS_PACK_FILE)
    }

    fn heads_pack(&self) -> Option<Arc<HeadsPack>> {
        let mut heads = self.heads.lock().unwrap_or_else(|p| p.into_inner());
        heads
            .get_or_insert_with(|| {
                let opened = HeadsPack::open(&self.heads_path()).unwrap_or_else(|_| {
                    self.heads_damaged
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    None
                });
                let packed = opened.as_ref().map_or(0, HeadsPack::len);
                self.heads_packed
                    .fetch_max(packed, std::sync::atomic::Ordering::Relaxed);
                opened.map(Arc::new)
            })
            .clone()
    }

    /// Heads are about to be read for every file: from the pack, where it holds them.
    pub(super) fn read_every_head(&self) {
        self.heads_wanted
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Lets go of the heads pack's mapping (extraction is done: its 12 MB on sympy would
    /// otherwise count in the build's memory to the end). It is mapped again if used.
    pub(super) fn release_heads(&self) {
        *self.heads.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Writes the heads pack again when the build shows it is worth it: the heads it read
    /// that the pack did not hold are more than one in sixteen of its files with facts
    /// (a cold build: all of them; an edit: one; a watcher's build, which takes the
    /// others from memory: one), the pack or one of its heads could not be trusted, or
    /// it holds more than twice as many heads as the build has files with facts (a tree
    /// that shrank). Called only by a build that loaded the facts of every file
    /// (`keys`), whose keys are computed only to write. A pack that cannot be written
    /// costs the next builds their speed, never their result: errors are dropped.
    /// Returns the heads packed, if it wrote.
    pub(super) fn refresh_heads(&self, _lock: &BuildLock, keys: &FactKeys<'_>) -> Option<usize> {
        use std::sync::atomic::Ordering::Relaxed;
        let missed = self.heads_missed.load(Relaxed);
        let packed = self.heads_packed.load(Relaxed);
        let worth = missed * 16 > keys.count
            || self.heads_damaged.load(Relaxed)
            || packed > 2 * keys.count + 64;
        if !worth {
            return None;
        }
        let keys = (keys.compute)();
        let aside = self.dir.join("cache").join(".tmp");
        fs::create_dir_all(&aside).ok()?;
        let aside = aside.join(HEADS_PACK_FILE);
        // Heads of removed entries are taken from the entries written again.
        let none_removed = self
            .removed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty();
        let old = self.heads_pack().filter(|_| none_removed);
        let written = heads_pack::write(&self.heads_path(), &aside, &keys, old.as_deref(), |key| {
            self.cache_path(key)
        });
        if written.is_err() {
            let _ = fs::remove_file(&aside);
        }
        self.cache_writes_done();
        written.ok()
    }

    /// Removes `key`'s entry (one found damaged after it was read).
    pub fn remove_facts(&self, key: &blake3::Hash) {
        let _ = fs::remove_file(self.cache_path(key));
        self.removed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(*key);
        // The pack still holds the head: it is written again without it.
        self.heads_damaged
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Removes the cache's (now empty) directory of entries being written: a build leaves
    /// nothing temporary behind, even when it fails later (a full disk).
    pub fn cache_writes_done(&self) {
        let _ = fs::remove_dir(self.dir.join("cache").join(".tmp"));
    }

    pub fn store_facts(&self, key: &blake3::Hash, facts: &FileFacts) -> Result<()> {
        let path = self.cache_path(key);
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        fs::create_dir_all(parent).at(parent)?;
        let bytes = fact_cache::encode(key, facts).map_err(|reason| AtlasError::CacheCorrupt {
            path: path.clone(),
            reason,
        })?;
        // Written aside, then renamed into place: a kill leaves its half-written entry in
        // `cache/.tmp/`, which the next lock holder removes whole.
        let tmp_dir = self.dir.join("cache").join(".tmp");
        fs::create_dir_all(&tmp_dir).at(&tmp_dir)?;
        let tmp = tmp_dir.join(format!(
            "{}.{}.{:?}",
            key.to_hex(),
            std::process::id(),
            std::thread::current().id()
        ));
        let written = fs::write(&tmp, &bytes)
            .at(&tmp)
            .and_then(|()| fs::rename(&tmp, &path).at(&path));
        if written.is_err() {
            // A full disk must not fill up with half-written entries.
            let _ = fs::remove_file(&tmp);
        }
        written
    }
}

/// A directory that is removed when dropped unless persisted: staging and temporary
/// index directories never outlive a failed or interrupted step.
pub struct Scratch {
    path: PathBuf,
    persisted: bool,
    /// Files hard-linked from a published generation: their bytes were fsynced when it
    /// was, and their new names are made durable by their directory's fsync.
    durable: std::collections::HashSet<PathBuf>,
}

impl Scratch {
    /// Creates `path` afresh (removing a leftover of the same name).
    pub fn create(path: PathBuf) -> Result<Scratch> {
        if path.exists() {
            fs::remove_dir_all(&path).at(&path)?;
        }
        // Guarded from here on: a partial creation is removed too.
        let scratch = Scratch {
            path,
            persisted: false,
            durable: Default::default(),
        };
        fs::create_dir_all(&scratch.path).at(&scratch.path)?;
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// Records that `path`, in this directory, is a hard link to a file of a published
    /// generation, which `persist_as` need not fsync again: on an edit, nearly every
    /// segment and cross part is one, and each fsync of a linked file still cost an open
    /// and a journal round (docs/PERFORMANCE.md).
    pub fn linked_durable(&mut self, path: PathBuf) {
        self.durable.insert(path);
    }

    /// Fsyncs every file (but those linked durable) and the directory itself, then
    /// renames it to `target`.
    pub fn persist_as(mut self, target: &Path) -> Result<()> {
        sync_tree(&self.path, &self.durable)?;
        fs::rename(&self.path, target).at(target)?;
        self.persisted = true;
        match target.parent() {
            Some(parent) => sync_dir(parent),
            None => Ok(()),
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.persisted {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Fsyncs every regular file under `dir` but the `durable` ones (side by side: they are
/// independent), then the directories themselves, deepest first.
fn sync_tree(dir: &Path, durable: &std::collections::HashSet<PathBuf>) -> Result<()> {
    use rayon::prelude::*;
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    collect_tree(dir, &mut files, &mut dirs)?;
    files
        .par_iter()
        .filter(|path| !durable.contains(*path))
        .try_for_each(|path| File::open(path).and_then(|f| f.sync_all()).at(path))?;
    for dir in dirs.iter().rev() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// The regular files under `dir` and its directories, `dir` first.
fn collect_tree(dir: &Path, files: &mut Vec<PathBuf>, dirs: &mut Vec<PathBuf>) -> Result<()> {
    dirs.push(dir.to_path_buf());
    for entry in fs::read_dir(dir).at(dir)? {
        let entry = entry.at(dir)?;
        let path = entry.path();
        let kind = entry.file_type().at(&path)?;
        if kind.is_dir() {
            collect_tree(&path, files, dirs)?;
        } else if kind.is_file() {
            files.push(path);
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    let file = File::open(dir).at(dir)?;
    file.sync_all().at(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> Placement {
        crate::config::Config::from_lookup(&|name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).into())
        })
        .placement
    }

    #[test]
    fn graph_dir_resolution_order() {
        let cwd = Path::new("/work/repo");
        let flag = locate(
            Some(Path::new("g")),
            None,
            cwd,
            &env_of(&[("ATLAS_GRAPH_DIR", "/env")]),
        );
        assert_eq!(
            (flag.graph_dir.as_path(), flag.rule),
            (Path::new("/work/repo/g"), GraphDirRule::Flag)
        );
        let env = locate(
            None,
            None,
            cwd,
            &env_of(&[("ATLAS_GRAPH_DIR", "/env"), ("ATLAS_INDEX_DIR", "/idx")]),
        );
        assert_eq!(
            (env.graph_dir.as_path(), env.rule),
            (Path::new("/env"), GraphDirRule::EnvGraphDir)
        );
        let alias = locate(None, None, cwd, &env_of(&[("ATLAS_INDEX_DIR", "/idx")]));
        assert_eq!(alias.rule, GraphDirRule::EnvIndexDir);
        let fallback = locate(
            None,
            Some(Path::new("/nonexistent/code")),
            cwd,
            &env_of(&[]),
        );
        assert_eq!(fallback.rule, GraphDirRule::CodeRoot);
        assert_eq!(
            fallback.graph_dir,
            Path::new("/nonexistent/code/.agent-spec/graph")
        );
    }

    #[test]
    fn ascending_search_finds_a_committed_graph_above() {
        let temp = tempfile::tempdir().unwrap();
        let graph = temp.path().join(DEFAULT_GRAPH_DIR);
        fs::create_dir_all(&graph).unwrap();
        fs::write(graph.join("CURRENT"), "0".repeat(64)).unwrap();
        let nested = temp.path().join("a/b");
        fs::create_dir_all(&nested).unwrap();
        let found = locate(None, None, &nested, &env_of(&[]));
        assert_eq!(found.rule, GraphDirRule::Ascending);
        assert_eq!(found.graph_dir, graph);
        assert_eq!(found.code_root, temp.path());
    }

    #[test]
    fn editor_root_applies_without_code_flag() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().to_string_lossy().to_string();
        let leaked: &'static str = Box::leak(root.clone().into_boxed_str());
        let pairs: &'static [(&str, &str)] = Box::leak(Box::new([("CLAUDE_PROJECT_DIR", leaked)]));
        let found = locate(None, None, Path::new("/"), &env_of(pairs));
        assert_eq!(found.rule, GraphDirRule::EditorRoot);
        assert_eq!(found.code_root, temp.path());
    }
}
