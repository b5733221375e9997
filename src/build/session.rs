//! Reading sessions: the committed generation a read works on, refreshed first unless the
//! read is frozen (R-GEN-8), and whether the working tree (or the atlas that built it) has
//! moved on since. Context and search open their graph here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use super::inventory::{self, InventoryLimits};
use super::manifest::{Manifest, built_by_this};
use super::pipeline::{self, BuildOptions, Companion, LockWait};
use super::stamps::Stamps;
use super::store::{Location, Store};
use crate::config::Config;
use crate::error::{AtlasError, Result};
use crate::graph::reader::Graph;

/// R-GEN-8: whether a read may refresh the graph first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Freshness {
    /// Read the committed generation as it is; never build, never write.
    pub frozen: bool,
    /// Do not build a missing graph (fail instead).
    pub no_build: bool,
}

/// The committed generation a read works on, and how it was reached.
pub struct Session {
    pub fingerprint: String,
    pub graph: Graph,
    /// The code root the graph is compared with (`Location::read_root`).
    pub root: PathBuf,
    /// The graph was rebuilt (incrementally) before this read.
    pub refreshed: bool,
    /// Why the graph could not be refreshed although sources changed (another build held
    /// the lock past the bound): the read answers from the committed generation.
    pub stale: Option<String>,
}

/// Opens the committed graph, refreshing it first unless frozen (R-GEN-8). Another
/// process's build never fails a read: it waits for it (bounded), then answers from the
/// committed generation with a staleness note when the lock is still held.
pub fn open_session(
    location: &Location,
    freshness: Freshness,
    companion: Option<Arc<dyn Companion>>,
    config: &Config,
) -> Result<Session> {
    let store = Store::new(&location.graph_dir);
    let root = location.read_root(&store)?;
    let mut refreshed = false;
    let mut stale = None;
    // A watcher in this process keeps the committed generation fresh: a read does not
    // scan the tree again (until a first generation exists).
    let watched = config.watch.fresh_by_watcher
        && store.current().ok().flatten().is_some()
        && super::watch::WatchStatus::read(&location.graph_dir).is_some_and(|w| w.keeps_fresh());
    // A process that stays up re-checks a tree it found clean by `stat` alone.
    let rechecked = config.watch.fresh_by_recheck
        && !freshness.frozen
        && !watched
        && super::settled::remembered(&location.graph_dir).is_some_and(|settled| {
            store
                .current()
                .ok()
                .flatten()
                .is_some_and(|fingerprint| settled.holds(&fingerprint, &root))
        });
    if !freshness.frozen && !watched && !rechecked {
        // Before the check: what it finds clean is what the tree was from here on.
        let as_of = super::stamps::now_ns();
        let needs_build = match store.open_current() {
            Err(AtlasError::GraphMissing(_)) if freshness.no_build => {
                return Err(AtlasError::GraphMissing(location.graph_dir.clone()));
            }
            Err(AtlasError::GraphMissing(_)) => true,
            // An unreadable committed generation is rebuilt, not fatal, when we may write.
            Err(AtlasError::GraphCorrupt { .. } | AtlasError::GraphIncompatible { .. })
                if !freshness.no_build =>
            {
                true
            }
            Err(e) => return Err(e),
            Ok((fingerprint, graph)) => {
                // A missing or unreadable manifest reads as another builder: rebuilt.
                let manifest = store.read_manifest(&fingerprint).ok();
                // Files the build skipped (binary, too large, bundles) are in the tree but
                // not in the file table: they are not changes.
                let skipped: std::collections::HashSet<String> = manifest
                    .iter()
                    .flat_map(|m| m.skipped.iter().map(|s| s.path.clone()))
                    .collect();
                // A read may write: it records the stamps of the files it had to hash.
                let cache = StampCache {
                    graph_dir: &location.graph_dir,
                    record: true,
                };
                // The walk's inventory is also what a clean verdict depends on.
                let inventory = inventory::scan(&root, &InventoryLimits::default())?;
                let changes = changes_of(&graph, &root, &inventory, &skipped, Some(cache), as_of);
                let stale = staleness_of(manifest.as_ref(), changes).stale;
                if config.watch.fresh_by_recheck {
                    let settled = (!stale)
                        .then(|| {
                            super::settled::Settled::record(&root, &fingerprint, &inventory, as_of)
                        })
                        .flatten();
                    super::settled::remember(&location.graph_dir, settled);
                }
                stale
            }
        };
        if needs_build {
            let mut options = BuildOptions::configured(&root, &location.graph_dir, config);
            // A read refreshes the graph; it never runs SCIP indexers.
            options.scip_run = false;
            let patience = config.lock_wait;
            options.lock_wait = LockWait::Within(patience);
            // A read that searches publishes the refreshed generation with its index.
            options.companion = companion;
            match pipeline::build(&options) {
                Ok(_) => refreshed = true,
                Err(AtlasError::BuildLocked(_)) if store.current().ok().flatten().is_some() => {
                    stale = Some(format!(
                        "sources changed, but another build held the lock for more than {} ms; this answer reads the committed generation",
                        patience.as_millis()
                    ));
                }
                // A store on a read-only mount, owned by another user or on a full disk
                // cannot take the refresh; the committed generation still answers, stale
                // and saying so. A failed build publishes nothing, so it is intact.
                Err(AtlasError::Io { path, source })
                    if is_unwritable(&source) && store.current().ok().flatten().is_some() =>
                {
                    stale = Some(format!(
                        "sources changed, but the graph directory cannot be written ({}: {source}); this answer reads the committed generation",
                        path.display()
                    ));
                }
                Err(e) => return Err(e),
            }
        }
    }
    let (fingerprint, graph) = store.open_current()?;
    Ok(Session {
        fingerprint,
        graph,
        root,
        refreshed,
        stale,
    })
}

/// Whether `error` says the store cannot be written at all (not that one write went wrong).
pub(crate) fn is_unwritable(error: &std::io::Error) -> bool {
    use std::io::ErrorKind;
    matches!(
        error.kind(),
        ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem | ErrorKind::StorageFull
    )
}

#[derive(Debug, Serialize)]
pub struct Staleness {
    pub stale: bool,
    pub changed: usize,
    pub added: usize,
    pub removed: usize,
    /// The generation was built by another atlas (extractor, resolver, queries or format):
    /// the next read rebuilds it even though no source changed.
    pub builder_changed: bool,
    /// Up to 20 example paths.
    pub examples: Vec<String>,
}

/// The inventoried files that differ from the committed generation, each list sorted by
/// path: content changed (by blake3 against the file table), added, removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub changed: Vec<String>,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.added.is_empty() && self.removed.is_empty()
    }
}

/// Where `changes` takes file stamps from (`build::stamps`), and whether it may record the
/// stamps of files it had to hash.
#[derive(Debug, Clone, Copy)]
pub struct StampCache<'a> {
    pub graph_dir: &'a Path,
    pub record: bool,
}

/// Files changed, added or removed since the committed generation: the inventory scanned
/// again and hashed against the graph's file table — except files whose stamp the cache
/// vouches for. Files skipped by the build (binary, too large, …: `skipped`) are not
/// counted as added. Writes nothing but, when `cache.record`, the stamp cache.
pub fn changes(
    graph: &Graph,
    code_root: &Path,
    skipped: &std::collections::HashSet<String>,
    cache: Option<StampCache>,
) -> Result<Changes> {
    // Before any stat: the date the stamps recorded below are trusted from.
    let as_of = super::stamps::now_ns();
    let inventory = inventory::scan(code_root, &InventoryLimits::default())?;
    Ok(changes_of(
        graph, code_root, &inventory, skipped, cache, as_of,
    ))
}

/// `changes` against an inventory scanned after `as_of`.
fn changes_of(
    graph: &Graph,
    code_root: &Path,
    inventory: &inventory::Inventory,
    skipped: &std::collections::HashSet<String>,
    cache: Option<StampCache>,
    as_of: i64,
) -> Changes {
    let stamps = cache.map(|c| Stamps::read(c.graph_dir, &graph.fingerprint_bytes()));
    // What a rewrite of the stamps keeps: entries vouched for now, and files hashed clean
    // now — never an entry of a file found changed or gone.
    let mut confirmed: Vec<(String, super::stamps::Stamp)> = Vec::new();
    let mut hashed_clean = false;
    let committed: HashMap<&str, super::stamps::Known> = graph
        .files()
        .filter_map(|f| graph.file(f))
        .map(|f| {
            let record = f.record();
            let known = super::stamps::Known {
                hash: record.hash,
                class: record.class,
                lines: record.lines.to_native(),
            };
            (graph.str(f.path()), known)
        })
        .collect();
    let mut changed = Vec::new();
    let mut added = Vec::new();
    for file in &inventory.files {
        match committed.get(file.path.as_str()) {
            Some(known) => {
                if let (Some(stamps), Some(stamp)) = (&stamps, &file.stamp)
                    && stamps.vouches(&file.path, stamp)
                {
                    confirmed.push((file.path.clone(), *stamp));
                    continue;
                }
                let current =
                    crate::source::read(code_root, &file.path, file.size.max(1).saturating_mul(2))
                        .map(|b| *blake3::hash(&b).as_bytes());
                if current.ok() != Some(known.hash) {
                    changed.push(file.path.clone());
                } else if let Some(stamp) = file.stamp {
                    confirmed.push((file.path.clone(), stamp));
                    hashed_clean = true;
                }
            }
            // A file the build skipped is not a change while its stamp vouches for it (a
            // file skipped for its content is stamped). Otherwise it is read again: text
            // that would now compile (a binary or Latin-1 file rewritten as source) is.
            None if skipped.contains(&file.path) => {
                if let (Some(stamps), Some(stamp)) = (&stamps, &file.stamp)
                    && stamps.vouches(&file.path, stamp)
                {
                    confirmed.push((file.path.clone(), *stamp));
                } else if crate::source::read(
                    code_root,
                    &file.path,
                    file.size.max(1).saturating_mul(2),
                )
                .is_ok_and(|bytes| super::load::is_compilable_text(&bytes))
                {
                    changed.push(file.path.clone());
                }
            }
            None => added.push(file.path.clone()),
        }
    }
    let current_paths: std::collections::HashSet<&str> =
        inventory.files.iter().map(|f| f.path.as_str()).collect();
    let mut removed: Vec<String> = committed
        .keys()
        .filter(|p| !current_paths.contains(*p))
        .map(|p| p.to_string())
        .collect();
    removed.sort();
    if let (Some(mut stamps), Some(cache)) = (stamps, cache)
        && cache.record
        && hashed_clean
    {
        // The generation's file table describes each confirmed file's content.
        stamps.known = confirmed
            .iter()
            .filter_map(|(path, _)| Some((path.clone(), *committed.get(path.as_str())?)))
            .collect();
        stamps.entries = confirmed.into_iter().collect();
        stamps.write(cache.graph_dir, as_of);
    }
    Changes {
        changed,
        added,
        removed,
    }
}

/// Files changed, added or removed since the committed generation, counted, and whether
/// another atlas built it. Files skipped by the build (binary, too large, …) are not
/// counted as added.
pub fn staleness(
    graph: &Graph,
    manifest: Option<&Manifest>,
    code_root: &Path,
    skipped: &std::collections::HashSet<String>,
    cache: Option<StampCache>,
) -> Result<Staleness> {
    let changes = changes(graph, code_root, skipped, cache)?;
    Ok(staleness_of(manifest, changes))
}

/// The staleness of a graph whose code root is gone (`Location::read_root`): every file
/// it holds is removed.
pub fn staleness_of_gone_root(graph: &Graph, manifest: Option<&Manifest>) -> Staleness {
    let mut removed: Vec<String> = graph
        .files()
        .filter_map(|f| graph.file(f))
        .map(|f| graph.str(f.path()).to_string())
        .collect();
    removed.sort();
    let changes = Changes {
        removed,
        ..Changes::default()
    };
    staleness_of(manifest, changes)
}

/// The staleness `changes` make, with whether another atlas built the generation.
fn staleness_of(manifest: Option<&Manifest>, changes: Changes) -> Staleness {
    // A missing or unreadable manifest reads as another builder's.
    let builder_changed = !manifest.is_some_and(built_by_this);
    let Changes {
        changed,
        added,
        removed,
    } = changes;
    let mut examples: Vec<String> = changed
        .iter()
        .chain(&added)
        .chain(&removed)
        .cloned()
        .collect();
    examples.sort();
    examples.truncate(20);
    Staleness {
        stale: builder_changed || !(changed.is_empty() && added.is_empty() && removed.is_empty()),
        changed: changed.len(),
        added: added.len(),
        removed: removed.len(),
        builder_changed,
        examples,
    }
}
