//! The build pipeline: inventory → read + extract (cached) → resolve → compile → publish.
//!
//! One call, one generation. The build lock is held throughout, the generation is written
//! into staging and published atomically (R-GEN-2), and unchanged inputs publish nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use rayon::prelude::*;
use serde::Serialize;

use std::collections::BTreeMap;

use super::compile::FileMeta;
use super::inventory::{InventoryLimits, SkipReason, Skipped, Truncation};
use super::load::{FactMemo, LoadCounters, Loaded, load};
use super::manifest::{
    Artifact, MANIFEST_VERSION, Manifest, SkippedFile, TruncationReport, builder_id, built_by_this,
};
use super::resolve::SourceUnit;
use crate::build::store::{GRAPH_FILE, MANIFEST_FILE, SEGMENTS_DIR, Store};
use crate::config::Config;
use crate::error::{AtlasError, IoContext, Result};
use crate::graph::format::{self, hex};
use crate::syntax::extract::EXTRACTOR_VERSION;
use crate::syntax::facts::ParseStatus;
use crate::syntax::lang::Language;

/// What a build does when another process holds the lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockWait {
    /// Fail at once with `atlas-build-locked`.
    Fail,
    /// Block until the lock is free (`build --wait`).
    Forever,
    /// Wait at most this long (reads that refresh the graph first).
    Within(std::time::Duration),
}

#[derive(Debug, Clone)]
pub struct BuildOptions {
    pub code_root: PathBuf,
    pub graph_dir: PathBuf,
    pub strict: bool,
    /// Wait for a concurrent build instead of failing with `atlas-build-locked`.
    /// What to do when another build holds the lock.
    pub lock_wait: LockWait,
    pub limits: InventoryLimits,
    /// Told how extraction advances (the CLI draws a bar).
    pub progress: Option<Arc<dyn Progress>>,
    /// SCIP indexes to ingest (`index.scip` at the code root is added automatically).
    pub scip: Vec<PathBuf>,
    /// Run the SCIP indexers found on PATH first (R-SCIP-3).
    pub scip_run: bool,
    /// What a later stage builds beside the generation before it is committed (the
    /// hybrid-search index): published together, or not at all.
    pub companion: Option<Arc<dyn Companion>>,
    /// Where SCIP indexers are looked for (a `PATH` value).
    pub search_path: Option<std::ffi::OsString>,
    /// Test hook: fail at this point (`after-extract`, `before-publish`).
    pub inject_failure: Option<String>,
    /// Facts kept between this process's builds (`atlas watch`): see `FactMemo`.
    pub memo: Option<Arc<FactMemo>>,
    /// The process exits once this build returns (`atlas build`): the resolver's tables
    /// and what the build holds at its end are left to the exit rather than freed
    /// (freeing the tables beside compilation took a sympy edit's compilation 6 ms of
    /// CPU on a machine whose two cores are busy). Never set in a process that goes on.
    pub exits_after: bool,
}

/// Progress of a long stage, reported to whoever shows it.
pub trait Progress: Send + Sync + std::fmt::Debug {
    fn start(&self, stage: &str, total: usize);
    fn advance(&self, done: usize);
    fn finish(&self);
}

/// An artifact built beside a generation, inside the build lock, after the generation is
/// installed and before `CURRENT` names it. A later stage (search) provides it, so the
/// build never depends on that stage.
pub trait Companion: Send + Sync + std::fmt::Debug {
    fn build(
        &self,
        store: &Store,
        lock: &super::store::BuildLock,
        fingerprint: &str,
        code_root: &Path,
    ) -> Result<()>;
}

impl BuildOptions {
    pub fn new(code_root: impl Into<PathBuf>, graph_dir: impl Into<PathBuf>) -> Self {
        BuildOptions {
            code_root: code_root.into(),
            graph_dir: graph_dir.into(),
            strict: false,
            lock_wait: LockWait::Fail,
            limits: InventoryLimits::default(),
            progress: None,
            scip: Vec::new(),
            scip_run: false,
            companion: None,
            search_path: None,
            inject_failure: None,
            memo: None,
            exits_after: false,
        }
    }

    /// Options for `code_root` and `graph_dir` with what the configuration says about
    /// builds (SCIP indexers, `PATH`, the failure hook).
    pub fn configured(
        code_root: impl Into<PathBuf>,
        graph_dir: impl Into<PathBuf>,
        config: &Config,
    ) -> Self {
        BuildOptions {
            scip_run: config.scip_run,
            search_path: config.search_path.clone(),
            inject_failure: config.inject_failure.clone(),
            ..BuildOptions::new(code_root, graph_dir)
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct PartialFile {
    pub path: String,
    /// `partial` (syntax errors) or `truncated` (an extraction limit was hit).
    pub status: &'static str,
    pub errors: u32,
    /// 1-based lines of the first errors.
    pub lines: Vec<u32>,
    /// The limit that truncated extraction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct BuildReport {
    pub fingerprint: String,
    pub generation: PathBuf,
    /// True when the inputs matched the committed generation and nothing was written.
    pub unchanged: bool,
    pub files: usize,
    /// Lines of the compiled files.
    pub lines: u64,
    /// Files whose facts were extracted by this build (cache misses).
    pub parsed: usize,
    /// Files whose facts came from the cache.
    pub cached: usize,
    /// Damaged fact-cache entries (checksum, key or consistency) that were re-extracted.
    pub cache_repaired: usize,
    /// Files not read at all: the committed generation's stamps vouched for their content
    /// (`build::stamps`).
    pub unread: usize,
    /// Files whose facts this process kept from its last build (`atlas watch`), not read
    /// from the cache.
    pub from_memory: usize,
    /// Files whose references this build resolved; the others' resolution was reused
    /// from the last build's (`build::resolution_cache`).
    pub resolved: usize,
    pub symbols: usize,
    pub edges: usize,
    pub frontier: usize,
    pub graph_bytes: u64,
    pub partial: Vec<PartialFile>,
    pub skipped: Vec<SkippedFile>,
    pub truncated: Option<TruncationReport>,
    /// What SCIP contributed (when an index was ingested).
    pub scip: Option<crate::build::resolve::merge_scip::ScipMerge>,
    /// Per-language indexer runs (`--scip-run`).
    pub scip_runs: Vec<crate::build::scip::run::IndexerRun>,
    pub timings_ms: Timings,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Timings {
    pub inventory: f64,
    pub extract: f64,
    pub resolve: f64,
    pub compile: f64,
    pub scip: f64,
    pub publish: f64,
    pub search: f64,
    pub total: f64,
}

fn ms(since: Instant) -> f64 {
    millis(since.elapsed())
}

/// A duration in milliseconds, two decimals: how build, watch and daemon reports time.
pub fn millis(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

/// Test hook (`ATLAS_INJECT_FAILURE=<point>`): fails the build at that point, to prove a
/// failed build leaves the committed generation intact. Points: `after-extract`,
/// `before-publish`; `stall-<point>` hangs there instead.
fn inject(options: &BuildOptions, point: &str) -> Result<()> {
    // `stall-<point>`: hang there for ten seconds, for tests that kill a build midway.
    if injected(options).any(|value| value.strip_prefix("stall-") == Some(point)) {
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
    if injected(options).any(|value| value == point) {
        return Err(AtlasError::InjectedFailure(point.to_string()));
    }
    Ok(())
}

/// The failures and stalls `ATLAS_INJECT_FAILURE` asks for: one, or several joined by
/// commas (`slow-memo-write,before-publish`).
fn injected(options: &BuildOptions) -> impl Iterator<Item = &str> {
    options
        .inject_failure
        .as_deref()
        .into_iter()
        .flat_map(|value| value.split(','))
}

pub fn build(options: &BuildOptions) -> Result<BuildReport> {
    let started = Instant::now();
    if !options.code_root.is_dir() {
        return Err(AtlasError::CodeDirMissing(options.code_root.clone()));
    }
    let store = Store::new(&options.graph_dir);
    let lock = match options.lock_wait {
        LockWait::Fail => store.lock(false)?,
        LockWait::Forever => store.lock(true)?,
        LockWait::Within(patience) => store.lock_within(patience)?,
    };
    match attempt(options, &store, &lock, started)? {
        Attempt::Built(report) => Ok(*report),
        // The damaged entries are gone: their files are extracted again this time.
        Attempt::Damaged { repaired, .. } => match attempt(options, &store, &lock, started)? {
            Attempt::Built(mut report) => {
                report.cache_repaired += repaired;
                Ok(*report)
            }
            Attempt::Damaged { path, reason, .. } => Err(AtlasError::CacheCorrupt { path, reason }),
        },
    }
}

/// How one attempt at a build ended.
enum Attempt {
    Built(Box<BuildReport>),
    /// Resolution found cache entries whose bodies could not be trusted
    /// (`LazyFacts::damage`); they were removed, and nothing was published. The first
    /// one's path and reason are kept for the error should a second attempt find more.
    Damaged {
        repaired: usize,
        path: PathBuf,
        reason: String,
    },
}

fn attempt(
    options: &BuildOptions,
    store: &Store,
    lock: &super::store::BuildLock,
    started: Instant,
) -> Result<Attempt> {
    let mut timings = Timings::default();
    let stage = Instant::now();
    // Before any stat: the date this build's file stamps are trusted from.
    let stamped_at = super::stamps::now_ns();
    // The committed generation's stamps (files they vouch for are not read again) are
    // read beside the walk.
    let (inventory, stamps) = std::thread::scope(|scope| {
        let stamps = scope.spawn(|| committed_stamps(options, store));
        let inventory = super::inventory::scan(&options.code_root, &options.limits);
        let stamps = stamps
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        inventory.map(|inventory| (inventory, stamps))
    })?;
    timings.inventory = ms(stage);

    // The last resolution is read beside extraction, from the first content that changed.
    let builder = builder_id();
    let prior = PriorRead::new(options, &builder);

    // Every file vouched for by the committed generation's stamps, and its inputs those
    // of that generation: nothing to publish, and no facts to load (`unchanged_unread`).
    let stage = Instant::now();
    let unchanged = unchanged_unread(
        options,
        store,
        lock,
        &inventory,
        stamps.as_ref(),
        &prior,
        stamped_at,
    );
    if let Some(mut report) = unchanged.inspect_err(|_| prior.stop())? {
        timings.extract = ms(stage) - report.timings_ms.search;
        timings.search = report.timings_ms.search;
        timings.total = ms(started);
        report.timings_ms = timings;
        prior.stop();
        return Ok(Attempt::Built(Box::new(report)));
    }

    let stage = Instant::now();
    let counters = LoadCounters::default();
    let (files, skipped) = load_all(
        options,
        store,
        &inventory,
        stamps.as_ref(),
        &counters,
        &prior,
    );
    timings.extract = ms(stage);
    inject(options, "after-extract")?;

    let partial = partial_files(&files);
    refuse_partial_if_strict(options, &partial)?;

    let stage = Instant::now();
    let (fingerprint_bytes, scip_paths, scip_runs) =
        fingerprint_inputs(options, &files, &skipped, &inventory)?;
    timings.scip = ms(stage);
    let fingerprint = hex(&fingerprint_bytes);
    let skipped_report: Vec<SkippedFile> = skipped.iter().map(skipped_file).collect();
    let truncated = inventory.truncated.as_ref().map(truncation_report);
    let parsed = counters.parsed.load(Ordering::Relaxed);
    let cache_repaired = counters.repaired.load(Ordering::Relaxed);
    let unread = counters.unread.load(Ordering::Relaxed);
    let from_memory = counters.from_memory.load(Ordering::Relaxed);

    // Same inputs as the committed generation: nothing to publish — if that generation
    // still opens with its manifest. A generation that fails validation (corrupt, or written by an older
    // incompatible build) is rebuilt and replaced.
    // An unreadable CURRENT (garbage written into it) is not the build's business: it
    // publishes a fresh generation over it.
    let committed = committed_opens(store, &fingerprint);
    if committed.is_none() && store.generation_dir(&fingerprint).exists() {
        let dir = store.generation_dir(&fingerprint);
        std::fs::remove_dir_all(&dir).at(&dir)?;
    }
    if let Some((graph, manifest)) = committed {
        drop(graph);
        prior.stop();
        let counts = LoadCounts {
            parsed,
            repaired: cache_repaired,
            unread,
            from_memory,
        };
        let unchanged = Unchanged {
            fingerprint: fingerprint_bytes,
            files: &files,
            skipped: &skipped,
            partial,
            counts,
            scip_runs,
        };
        let mut report = report_unchanged(
            options, store, lock, &inventory, &manifest, unchanged, stamped_at,
        )?;
        store.refresh_heads(lock, &fact_keys(&files));
        timings.search = report.timings_ms.search;
        timings.total = ms(started);
        report.timings_ms = timings;
        free_aside(files);
        return Ok(Attempt::Built(Box::new(report)));
    }

    let stage = Instant::now();
    // The committed root, for compilation to reuse segments from, is read and validated
    // beside resolution.
    let previous = {
        let store = Store::new(&options.graph_dir);
        std::thread::Builder::new()
            .name("atlas-previous".into())
            .spawn(move || Previous::load(&store))
    };
    let units = source_units(&files);
    let crates = rust_crates(&files, &options.code_root);
    let scip_facts = if scip_paths.is_empty() {
        None
    } else {
        let scip_stage = Instant::now();
        let facts = ingest_scip(&scip_paths, &files, &options.code_root)?;
        timings.scip += ms(scip_stage);
        Some(facts)
    };
    // An edit re-resolves only the files its change can reach (`resolve::incremental`).
    // The prior is waited for once resolution has built its tables, which need none: a
    // memo still being read (12 MB on sympy) finishes beside the node table instead of
    // before it.
    let digests: Vec<[u8; 32]> = files
        .iter()
        .map(|f| super::resolve::fact_digest(&f.hash, f.language, f.facts.is_some()))
        .collect();
    let mut prior_generation = None;
    let take_prior = || {
        // Resolution consumes the prior: a watcher lets go of its copy, so the memo is
        // moved, not cloned, when nothing else holds it.
        let prior = prior.take();
        if let Some(kept) = &options.memo {
            kept.forget_resolution();
        }
        let prior = prior.map(|(p, written)| {
            let mut prior = Arc::try_unwrap(p).unwrap_or_else(|shared| (*shared).clone());
            // A kept memo written whole is that memo file, every entry alike.
            if let Some(checksum) = written {
                prior.on_disk = Some(super::resolve::OnDisk {
                    checksum,
                    differs: vec![false; prior.files.len()],
                });
            }
            prior
        });
        prior_generation = prior.as_ref().map(|p| (p.generation, p.centrality_inputs));
        prior
    };
    let (resolved, mut memo, redone, tables) = super::resolve::resolve_incremental(
        &units,
        &crates,
        &digests,
        scip_facts.as_ref(),
        take_prior,
    );
    if let Some(damaged) = damaged_bodies(options, store, &files) {
        return Ok(damaged);
    }
    memo.generation = fingerprint_bytes;
    memo.centrality_inputs = super::compile::centrality_inputs(&resolved);
    let memo = Arc::new(memo);
    if let Some(kept) = &options.memo {
        kept.keep_resolution(memo.clone());
    }
    timings.resolve = ms(stage);

    let stage = Instant::now();
    // An edit reuses the committed generation's segments whose inputs did not change.
    let previous = match previous {
        Ok(reader) => reader.join().ok().flatten(),
        Err(_) => Previous::load(store),
    };
    // The committed generation, where the prior resolution is its own (what both reuses
    // below need), with the centrality inputs that resolution recorded.
    let committed_prior = previous.as_ref().zip(prior_generation).and_then(
        |(previous, (generation, centrality_inputs))| {
            (previous.fingerprint == generation).then_some((previous, centrality_inputs))
        },
    );
    // A segment whose files resolution left unchanged is that generation's segment at the
    // same place.
    let unchanged = committed_prior
        .filter(|_| scip_facts.is_none())
        .map(|(previous, _)| UnchangedSegments {
            previous,
            files: &files,
            unchanged: &redone.unchanged,
        });
    // A cross part whose segment is at the same place and that no changed edge reaches is
    // that generation's part.
    let unchanged_cross = committed_prior
        .filter(|_| scip_facts.is_none() && redone.same_ids)
        .filter(|_| {
            !files
                .iter()
                .any(|f| f.language == Some(crate::syntax::lang::Language::Go))
        })
        .and_then(|(previous, _)| {
            UnchangedCross::new(previous, &files, &redone.unchanged, &resolved)
        });
    // Where it was computed from the same inputs, the committed generation's centrality
    // is this one's (PageRank is a function of them alone): a body edit that moves no
    // reference between symbols keeps it.
    let centrality = committed_prior
        .filter(|(_, inputs)| *inputs == memo.centrality_inputs)
        .map(|(previous, _)| previous.centrality.clone());
    // The resolver's tables are freed beside compilation (they borrow the facts, so on a
    // scoped thread; where none can be started, they are freed here), or left to the exit
    // of a process that ends with the build.
    let compiled = std::thread::scope(|scope| {
        if options.exits_after {
            std::mem::forget(tables);
        } else {
            let _ = std::thread::Builder::new()
                .name("atlas-free".into())
                .spawn_scoped(scope, move || drop(tables));
        }
        super::compile::compile(
            fingerprint_bytes,
            &file_metas(&files),
            &resolved,
            &|inputs| previous.as_ref()?.by_inputs.get(inputs).cloned(),
            &|index, cut| unchanged.as_ref()?.entry(index, cut),
            &|index, cut| unchanged_cross.as_ref()?.entry(index, cut),
            centrality,
        )
    });
    // `check-cross-reuse` (tests): every cross part taken unbuilt is built after all, and
    // must be the part it stands for.
    if injected(options).any(|value| value == "check-cross-reuse") {
        check_cross_reuse(&compiled, || {
            super::compile::compile(
                fingerprint_bytes,
                &file_metas(&files),
                &resolved,
                &|_| None,
                &|_, _| None,
                &|_, _| None,
                None,
            )
        })?;
    }
    let mut encoded = encode_generation(compiled)?;
    timings.compile = ms(stage);
    // Written beside publication, whose writes and fsyncs leave the processors idle;
    // beside compilation, it took a processor from compilation's parallel work.
    let memo_writer = {
        let (dir, memo, builder) = (options.graph_dir.clone(), memo.clone(), builder.clone());
        let kept = options.memo.clone();
        // `slow-memo-write`: the written memo waits half a second before its rename, for
        // tests of a build that fails meanwhile.
        let slow = injected(options).any(|value| value == "slow-memo-write");
        JoinedOnDrop(
            std::thread::Builder::new()
                .name("atlas-resolution".into())
                .spawn(move || {
                    let whole = super::resolution_cache::write(&dir, &builder, &memo, || {
                        if slow {
                            std::thread::sleep(std::time::Duration::from_millis(500));
                        }
                    });
                    // A watcher's next memo extends the file just written.
                    if let (Some(checksum), Some(kept)) = (whole, kept) {
                        kept.wrote_resolution(&memo, checksum);
                    }
                })
                .ok(),
        )
    };

    let stage = Instant::now();
    let mut staging = store.staging(lock)?;
    let artifacts = write_generation(&mut staging, &mut encoded, previous.as_ref())?;
    let symbols = resolved
        .nodes
        .iter()
        .filter(|n| {
            !matches!(
                n.kind,
                crate::syntax::facts::SymbolKind::Module | crate::syntax::facts::SymbolKind::File
            )
        })
        .count();
    let manifest = Manifest {
        manifest_version: MANIFEST_VERSION,
        format_version: format::FORMAT_VERSION,
        extractor_version: EXTRACTOR_VERSION,
        builder: Some(builder_id()),
        fingerprint: fingerprint.clone(),
        files: files.len(),
        symbols,
        edges: resolved.edges.len(),
        frontier: resolved.frontier.len(),
        skipped: skipped_report.clone(),
        truncated: truncated.clone(),
        unsupported: inventory.unsupported.clone(),
        scip: resolved.scip.as_ref().map(to_json).transpose()?,
        scip_runs: scip_runs.iter().map(to_json).collect::<Result<_>>()?,
        artifacts,
    };
    let manifest_text =
        serde_json::to_string_pretty(&manifest).map_err(|e| AtlasError::Internal {
            what: "manifest",
            reason: e.to_string(),
        })?;
    write_staged(&staging.join(MANIFEST_FILE), manifest_text.as_bytes())?;
    inject(options, "before-publish")?;
    // The generation and its search index are published together: readers of the
    // committed generation never find it without its index (issue 10, D).
    store.install(lock, staging, &fingerprint)?;
    timings.publish = ms(stage);
    let stage = Instant::now();
    build_search(options, store, lock, &fingerprint)?;
    timings.search = ms(stage);
    let stage = Instant::now();
    store.commit(lock, &fingerprint)?;
    store.write_root(&options.code_root)?;
    // Old generations are removed (a syscall per file) beside the stamps' write and the
    // memo's.
    std::thread::scope(|scope| {
        let garbage = scope.spawn(|| {
            let removed = store.collect_garbage(lock);
            store.refresh_heads(lock, &fact_keys(&files));
            removed
        });
        record_stamps(
            options,
            &inventory,
            &files,
            &skipped,
            fingerprint_bytes,
            stamped_at,
        );
        drop(memo_writer);
        garbage
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    timings.publish += ms(stage);
    timings.total = ms(started);

    let report = BuildReport {
        generation: store.generation_dir(&fingerprint),
        fingerprint,
        unchanged: false,
        files: files.len(),
        lines: files.iter().map(|f| u64::from(f.lines)).sum(),
        parsed,
        cached: files.len() - parsed,
        cache_repaired,
        unread,
        from_memory,
        resolved: redone.resolved,
        symbols,
        edges: resolved.edges.len(),
        frontier: resolved.frontier.len(),
        graph_bytes: encoded.bytes,
        partial,
        skipped: skipped_report,
        truncated,
        scip: resolved.scip.clone(),
        scip_runs,
        timings_ms: timings,
    };
    // The nodes borrow the facts: they go first (their names are not theirs to free).
    let super::resolve::Resolved {
        nodes,
        edges,
        frontier,
        ..
    } = resolved;
    if options.exits_after {
        std::mem::forget(nodes);
    } else {
        drop(nodes);
    }
    drop(units);
    if options.exits_after {
        std::mem::forget((files, edges, frontier, encoded, memo));
    } else {
        free_aside((files, edges, frontier, encoded, memo));
    }
    Ok(Attempt::Built(Box::new(report)))
}

/// The committed generation and its manifest, when it is `fingerprint`'s, opens, and this
/// atlas built it (what an unchanged build may answer with).
fn committed_opens(
    store: &Store,
    fingerprint: &str,
) -> Option<(crate::graph::reader::Graph, Manifest)> {
    if store.current().ok().flatten().as_deref() != Some(fingerprint) {
        return None;
    }
    let manifest = store.read_manifest(fingerprint).ok()?;
    committed_graph(store, fingerprint, &manifest).map(|graph| (graph, manifest))
}

/// The generation `fingerprint`, whose manifest is `manifest`, when it opens and this
/// atlas built it.
fn committed_graph(
    store: &Store,
    fingerprint: &str,
    manifest: &Manifest,
) -> Option<crate::graph::reader::Graph> {
    if !built_by_this(manifest) {
        return None;
    }
    crate::graph::reader::Graph::open(&store.graph_path(fingerprint)).ok()
}

/// A no-op build that loads no facts. When the committed generation's stamps vouch for
/// every inventoried file but a few, which are read and hashed (so each holds a known
/// content), the fingerprint needs only their hashes, and an unchanged generation needs
/// nothing else:
/// its partial files are read from its file table, their diagnostics from their few cache
/// entries. On a 13,890-file tree the facts a no-op loaded cost 0.7 s and 0.9 GiB.
/// `None` whenever anything differs, or cannot be told without the facts: the build then
/// loads them and decides as before.
fn unchanged_unread(
    options: &BuildOptions,
    store: &Store,
    lock: &super::store::BuildLock,
    inventory: &super::inventory::Inventory,
    stamps: Option<&super::stamps::Stamps>,
    prior: &PriorRead,
    stamped_at: i64,
) -> Result<Option<BuildReport>> {
    // Indexers run by this build are inputs it cannot know unchanged without running them.
    if options.scip_run {
        return Ok(None);
    }
    let Some(current) = store.current().ok().flatten() else {
        return Ok(None);
    };
    // The stamps are the committed generation's (`committed_stamps`).
    let Some(stamps) = stamps.filter(|s| hex(&s.fingerprint) == current) else {
        return Ok(None);
    };
    let Ok(manifest) = store.read_manifest(&current) else {
        return Ok(None);
    };
    // Files the committed build skipped for their content, by path.
    let skipped_for_content: std::collections::HashMap<&str, SkipReason> = manifest
        .skipped
        .iter()
        .filter_map(|s| Some((s.path.as_str(), skipped_for(&s.reason)?)))
        .collect();
    let mut files = Vec::with_capacity(inventory.files.len());
    let mut skipped = inventory.skipped.clone();
    // Files the stamps do not vouch for (written in the last seconds, touched) are read and
    // hashed here, a few at most: more mean a build with work to do.
    let mut read: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for file in &inventory.files {
        let Some(stamp) = file.stamp.as_ref() else {
            return Ok(None);
        };
        if let Some(known) = stamps.vouched(&file.path, stamp) {
            let Some(class) = crate::graph::codes::FileClass::from_code(known.class) else {
                return Ok(None);
            };
            files.push(Loaded {
                path: file.path.clone(),
                language: file.language(),
                class,
                hash: known.hash,
                size: stamp.size,
                lines: known.lines,
                facts: None,
                lazy: None,
            });
        } else if stamps.vouches(&file.path, stamp)
            && let Some(reason) = skipped_for_content.get(file.path.as_str())
        {
            // Its content is the one the committed build skipped: skipped again.
            skipped.push(Skipped {
                path: file.path.clone(),
                reason: reason.clone(),
            });
        } else if read.len() < MAX_READ_BY_NO_OP {
            read.insert(&file.path);
            let limit = options.limits.max_file_bytes;
            match super::load::identify(&options.code_root, file, limit) {
                Ok(loaded) => {
                    // Content that changed makes this a build: its prior is read now,
                    // beside the rest of this check.
                    if stamps
                        .known
                        .get(&file.path)
                        .is_none_or(|known| known.hash != loaded.hash)
                    {
                        prior.start();
                    }
                    files.push(loaded)
                }
                Err(skip) => skipped.push(skip),
            }
        } else {
            return Ok(None);
        }
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    let (fingerprint_bytes, _, scip_runs) =
        fingerprint_inputs(options, &files, &skipped, inventory)?;
    let fingerprint = hex(&fingerprint_bytes);
    // The manifest read above is the committed generation's: `current`.
    if fingerprint != current {
        return Ok(None);
    }
    let Some(graph) = committed_graph(store, &fingerprint, &manifest) else {
        return Ok(None);
    };
    let counters = LoadCounters::default();
    let Some(partial) =
        committed_partial_files(store, options, &graph, inventory, &files, &counters)
    else {
        return Ok(None);
    };
    drop(graph);
    refuse_partial_if_strict(options, &partial)?;
    let parsed = counters.parsed.load(Ordering::Relaxed);
    let counts = LoadCounts {
        parsed,
        repaired: counters.repaired.load(Ordering::Relaxed),
        // The partial files were read for their diagnostics, as were those hashed.
        unread: files.len()
            - partial
                .iter()
                .filter(|p| !read.contains(p.path.as_str()))
                .count()
            - files
                .iter()
                .filter(|f| read.contains(f.path.as_str()))
                .count(),
        from_memory: 0,
    };
    let unchanged = Unchanged {
        fingerprint: fingerprint_bytes,
        files: &files,
        skipped: &skipped,
        partial,
        counts,
        scip_runs,
    };
    report_unchanged(
        options, store, lock, inventory, &manifest, unchanged, stamped_at,
    )
    .map(Some)
}

/// How a build's files were loaded, counted.
struct LoadCounts {
    parsed: usize,
    repaired: usize,
    unread: usize,
    from_memory: usize,
}

/// A build whose inputs are the committed generation's, as far as its report goes.
struct Unchanged<'b> {
    fingerprint: [u8; 32],
    files: &'b [Loaded],
    skipped: &'b [Skipped],
    partial: Vec<PartialFile>,
    counts: LoadCounts,
    scip_runs: Vec<crate::build::scip::run::IndexerRun>,
}

/// Finishes a build that publishes nothing: the root recorded, the search index made sure
/// of, the stamps written; reported with the committed manifest's counts. Its timings
/// hold only the search stage's.
fn report_unchanged(
    options: &BuildOptions,
    store: &Store,
    lock: &super::store::BuildLock,
    inventory: &super::inventory::Inventory,
    manifest: &Manifest,
    unchanged: Unchanged,
    stamped_at: i64,
) -> Result<BuildReport> {
    let fingerprint = hex(&unchanged.fingerprint);
    // The root and its segments, as the manifest lists them.
    let graph_bytes = manifest.artifacts.values().map(|a| a.bytes).sum();
    store.write_root(&options.code_root)?;
    let stage = Instant::now();
    build_search(options, store, lock, &fingerprint)?;
    let search = ms(stage);
    let files = unchanged.files;
    record_stamps(
        options,
        inventory,
        files,
        unchanged.skipped,
        unchanged.fingerprint,
        stamped_at,
    );
    let counts = unchanged.counts;
    Ok(BuildReport {
        generation: store.generation_dir(&fingerprint),
        fingerprint,
        unchanged: true,
        files: files.len(),
        lines: files.iter().map(|f| u64::from(f.lines)).sum(),
        parsed: counts.parsed,
        cached: files.len() - counts.parsed,
        cache_repaired: counts.repaired,
        unread: counts.unread,
        from_memory: counts.from_memory,
        resolved: 0,
        symbols: manifest.symbols,
        edges: manifest.edges,
        frontier: manifest.frontier,
        graph_bytes,
        partial: unchanged.partial,
        skipped: unchanged.skipped.iter().map(skipped_file).collect(),
        truncated: inventory.truncated.as_ref().map(truncation_report),
        scip: None,
        scip_runs: unchanged.scip_runs,
        timings_ms: Timings {
            search,
            ..Timings::default()
        },
    })
}

/// `--strict` refuses a build with partial files.
fn refuse_partial_if_strict(options: &BuildOptions, partial: &[PartialFile]) -> Result<()> {
    match partial.first() {
        Some(first) if options.strict => Err(AtlasError::StrictPartial {
            count: partial.len(),
            first: first.path.clone(),
        }),
        _ => Ok(()),
    }
}

/// The fingerprint of a build's inputs (R-GEN-3), with the SCIP indexes among them and
/// the indexer runs that wrote them.
fn fingerprint_inputs(
    options: &BuildOptions,
    files: &[Loaded],
    skipped: &[Skipped],
    inventory: &super::inventory::Inventory,
) -> Result<(
    [u8; 32],
    Vec<PathBuf>,
    Vec<crate::build::scip::run::IndexerRun>,
)> {
    let (scip_paths, scip_runs) = scip_inputs(options, files)?;
    let scip_hashes = crate::build::scip::input_hashes(&scip_paths)?;
    let fingerprint = fingerprint(files, skipped, &inventory.truncated, &scip_hashes, options);
    Ok((fingerprint, scip_paths, scip_runs))
}

/// Files a no-op build reads and hashes because the stamps do not vouch for them, at most.
const MAX_READ_BY_NO_OP: usize = 64;

/// A skip a file's content decides (binary, not UTF-8), from its manifest code: the same
/// content is skipped again for the same reason. Other skips depend on more than the
/// content (a read that failed) and are not carried over.
fn skipped_for(code: &str) -> Option<SkipReason> {
    [SkipReason::Binary, SkipReason::NotUtf8]
        .into_iter()
        .find(|reason| reason.code() == code)
}

/// The partial and truncated files of `files`, as the committed generation built them:
/// its file table says which, their facts say where (the lines of their first errors,
/// the limit). Their facts are loaded as any build loads them: from the cache, or read
/// and extracted again when the cache lost them (counted in `counters`). `None` when a
/// file no longer holds the content the generation was built from.
fn committed_partial_files(
    store: &Store,
    options: &BuildOptions,
    graph: &crate::graph::reader::Graph,
    inventory: &super::inventory::Inventory,
    files: &[Loaded],
    counters: &LoadCounters,
) -> Option<Vec<PartialFile>> {
    let mut partial = Vec::new();
    for id in graph.files() {
        if graph.file(id)?.record().parse_status == ParseStatus::Complete as u8 {
            continue;
        }
        let path = graph.file_path(id);
        let find = |f: &Loaded| f.path.as_str().cmp(path);
        let expected = &files[files.binary_search_by(find).ok()?];
        let file = &inventory.files[inventory
            .files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()?];
        let limit = options.limits.max_file_bytes;
        let loaded = load(store, &options.code_root, file, limit, counters, None, None).ok()?;
        if loaded.hash != expected.hash {
            return None;
        }
        partial.push(loaded);
    }
    partial.sort_by(|a, b| a.path.cmp(&b.path));
    Some(partial_files(&partial))
}

/// A thread joined wherever its owner goes out of scope, on `?` too: a build that fails
/// while the resolution memo is being written must not exit under the writer, which
/// would leave its temporary file behind (a full disk, `bench/bad_inputs.py` E18–E23;
/// `tests/graph_file.rs::a_build_that_fails_while_its_memo_is_written_leaves_no_temporary_file`).
/// The writer removes that file itself when its write fails.
struct JoinedOnDrop(Option<std::thread::JoinHandle<()>>);

impl Drop for JoinedOnDrop {
    fn drop(&mut self) {
        if let Some(thread) = self.0.take() {
            let _ = thread.join();
        }
    }
}

/// Frees a build's large structures (every file's facts, the resolved graph: hundreds of
/// thousands of small allocations) on a thread of their own. A one-shot build returns
/// without waiting for it, and its process exits; a watcher's next build is not held up.
fn free_aside<T: Send + 'static>(value: T) {
    // When no thread can be started, the closure, and the value with it, is freed here.
    let _ = std::thread::Builder::new()
        .name("atlas-free".into())
        .spawn(move || drop(value));
}

/// A generation's files, encoded: the root, its segments and their cross parts (format
/// 5).
struct Encoded {
    root: Vec<u8>,
    /// The segments, then the cross parts, in the root's order: (name under the
    /// generation directory, bytes — `None` for one reused from the previous generation).
    files: Vec<(String, Option<Vec<u8>>)>,
    bytes: u64,
}

/// The committed generation's segments by inputs digest, for an edit to reuse: its
/// directory, its manifest's artifacts, and the entries whose file is there.
struct Previous {
    dir: PathBuf,
    /// The committed generation's fingerprint, as its root states it.
    fingerprint: [u8; 32],
    artifacts: BTreeMap<String, Artifact>,
    by_inputs: std::collections::HashMap<[u8; 32], crate::graph::data::SegmentEntry>,
    /// Its segments in order (`None` where the manifest lacks the file), with the first
    /// file id of each.
    in_order: Vec<(u32, Option<crate::graph::data::SegmentEntry>)>,
    /// Its centrality, per node.
    centrality: Vec<u32>,
    /// Its root, mapped and validated (format 5: where its cross parts are).
    root: format::RootFile,
}

/// Which segments of an edited graph are the committed generation's at the same place,
/// known without their inputs digest: the prior resolution was the committed
/// generation's, and resolution left every file of the segment unchanged
/// (`resolve::Redone::unchanged`: facts, references and imports reused). Such a segment
/// holds the same records in local ids, provided it holds the same files and as many
/// nodes and frontier entries. Segments with Go files are digested still: the
/// structural `implements` pass is whole-graph (as SCIP is, which disables this).
struct UnchangedSegments<'p> {
    previous: &'p Previous,
    files: &'p [Loaded],
    unchanged: &'p [bool],
}

impl UnchangedSegments<'_> {
    fn entry(
        &self,
        index: usize,
        cut: &crate::graph::segments::Cut,
    ) -> Option<crate::graph::data::SegmentEntry> {
        let (first_file, entry) = self.previous.in_order.get(index)?;
        let entry = entry.as_ref()?;
        let same_place = *first_file == cut.files.start
            && entry.files == cut.files.end - cut.files.start
            && entry.nodes == cut.nodes.end - cut.nodes.start
            && entry.frontier == cut.frontier.end - cut.frontier.start;
        let unchanged = cut.files.clone().all(|f| {
            self.unchanged.get(f as usize) == Some(&true)
                && self.files[f as usize].language != Some(crate::syntax::lang::Language::Go)
        });
        (same_place && unchanged && !self.unchanged.is_empty()).then(|| entry.clone())
    }
}

/// Fails when a cross part `compiled` took unbuilt differs from the one `build_all`
/// builds (the `check-cross-reuse` injection of tests).
fn check_cross_reuse(
    compiled: &super::compile::Compiled,
    build_all: impl FnOnce() -> super::compile::Compiled,
) -> Result<()> {
    use super::compile::CompiledCross;
    let fresh = build_all();
    for (index, (part, built)) in compiled.cross.iter().zip(&fresh.cross).enumerate() {
        let (CompiledCross::Reused(entry), CompiledCross::Built(data)) = (part, built) else {
            continue;
        };
        let bytes = format::encode_cross(data)?;
        if format::payload_hash(&bytes) != entry.hash {
            return Err(AtlasError::Internal {
                what: "graph",
                reason: format!("cross part {index} was taken unbuilt but differs from its build"),
            });
        }
    }
    Ok(())
}

/// Which cross parts of an edited graph are the committed generation's at the same
/// place, known without building them: the prior resolution was the committed
/// generation's, no node id moved, and no edge that changed has an end in the part's
/// segment. The edges that changed are those from the files resolution did not leave
/// unchanged, before the edit (read from the committed generation's cross parts) and
/// after; `touched` holds their ends. Graphs with Go files (the structural `implements`
/// pass adds edges from unchanged files) or SCIP build every part.
struct UnchangedCross<'p> {
    previous: &'p Previous,
    unchanged: &'p [bool],
    /// Sorted node ids: both ends of every edge from a changed file, before and after.
    touched: Vec<u32>,
}

impl<'p> UnchangedCross<'p> {
    fn new(
        previous: &'p Previous,
        files: &[Loaded],
        unchanged: &'p [bool],
        resolved: &super::resolve::Resolved,
    ) -> Option<UnchangedCross<'p>> {
        let view = previous.root.view();
        let format::RootCross::Parts(parts) = view.cross else {
            return None;
        };
        if unchanged.len() != files.len() || view.segments.len() != previous.in_order.len() {
            return None;
        }
        let graph_nodes: u32 = view.segments.iter().map(|e| e.nodes.to_native()).sum();
        let graph_files: u32 = view.segments.iter().map(|e| e.files.to_native()).sum();
        let node_end = |f: usize| {
            resolved
                .file_nodes
                .get(f + 1)
                .copied()
                .unwrap_or(resolved.nodes.len() as u32)
        };
        let mut touched = Vec::new();
        // The committed generation's segments, with their first node id.
        let mut bases = Vec::with_capacity(view.segments.len());
        let mut base = 0u32;
        for e in view.segments.iter() {
            bases.push(base);
            base += e.nodes.to_native();
        }
        let mut opened: std::collections::HashMap<usize, format::CrossFile> =
            std::collections::HashMap::new();
        for (f, _) in unchanged.iter().enumerate().filter(|(_, same)| !**same) {
            let nodes = *resolved.file_nodes.get(f)?..node_end(f);
            // After: the edges from the file's nodes (sorted by source).
            let edges = &resolved.edges;
            let first = edges.partition_point(|e| e.from < nodes.start);
            let last = edges.partition_point(|e| e.from < nodes.end);
            touched.extend(nodes.clone());
            touched.extend(edges[first..last].iter().map(|e| e.to));
            // Before: its rows of its segment's cross part in the committed generation
            // (the edges within the segment end in it, which the file's nodes touch).
            let segment = previous
                .in_order
                .partition_point(|(first_file, _)| *first_file as usize <= f)
                .checked_sub(1)?;
            let part = match opened.entry(segment) {
                std::collections::hash_map::Entry::Occupied(part) => part.into_mut(),
                std::collections::hash_map::Entry::Vacant(slot) => {
                    let file = format::CrossFile::open(
                        &previous.dir.join(GRAPH_FILE),
                        parts.get(segment)?,
                        view.segments.get(segment)?.nodes.to_native(),
                        graph_nodes,
                        graph_files,
                    )
                    .ok()?;
                    slot.insert(file)
                }
            };
            let data = part.data();
            let local = nodes.start.checked_sub(bases[segment])? as usize
                ..nodes.end.checked_sub(bases[segment])? as usize;
            let rows = data.out_offsets.get(local.start)?.to_native() as usize
                ..data.out_offsets.get(local.end)?.to_native() as usize;
            touched.extend(data.out_edges.get(rows)?.iter().map(|e| e.node.to_native()));
        }
        touched.sort_unstable();
        touched.dedup();
        Some(UnchangedCross {
            previous,
            unchanged,
            touched,
        })
    }

    fn entry(
        &self,
        index: usize,
        cut: &crate::graph::segments::Cut,
    ) -> Option<crate::graph::data::CrossEntry> {
        let (first_file, entry) = self.previous.in_order.get(index)?;
        let entry = entry.as_ref()?;
        let same_place = *first_file == cut.files.start
            && entry.files == cut.files.end - cut.files.start
            && entry.nodes == cut.nodes.end - cut.nodes.start;
        let files_unchanged = cut
            .files
            .clone()
            .all(|f| self.unchanged.get(f as usize) == Some(&true));
        let first = self.touched.partition_point(|&n| n < cut.nodes.start);
        let untouched = self.touched.get(first).is_none_or(|&n| n >= cut.nodes.end);
        if !(same_place && files_unchanged && untouched) {
            return None;
        }
        let view = self.previous.root.view();
        let format::RootCross::Parts(parts) = view.cross else {
            return None;
        };
        let part = parts.get(index)?;
        let cross = crate::graph::data::CrossEntry {
            hash: part.hash,
            out_edges: part.out_edges.to_native(),
            in_edges: part.in_edges.to_native(),
        };
        // Linked from that generation, so it must be one of its files.
        self.previous
            .artifacts
            .contains_key(&format::cross_name(&cross.hash))
            .then_some(cross)
    }
}

impl Previous {
    /// Reads the committed generation's root (validated) and manifest; `None` when
    /// there is none, or it is not format 4, or either does not read.
    fn load(store: &Store) -> Option<Previous> {
        let fingerprint = store.current().ok().flatten()?;
        let dir = store.generation_dir(&fingerprint);
        let manifest = store.read_manifest(&fingerprint).ok()?;
        let format::Opened::Root(root) = format::open(&dir.join(GRAPH_FILE)).ok()? else {
            return None;
        };
        let file = root;
        let root = file.view();
        let mut in_order = Vec::with_capacity(root.segments.len());
        let mut first_file = 0u32;
        for e in root.segments.iter() {
            let entry = crate::graph::data::SegmentEntry {
                hash: e.hash,
                inputs: e.inputs,
                nodes: e.nodes.to_native(),
                files: e.files.to_native(),
                strings: e.strings.to_native(),
                frontier: e.frontier.to_native(),
            };
            let files = entry.files;
            let present = manifest
                .artifacts
                .contains_key(&format::segment_name(&entry.hash));
            in_order.push((first_file, present.then_some(entry)));
            first_file = first_file.checked_add(files)?;
        }
        let by_inputs = in_order
            .iter()
            .filter_map(|(_, e)| e.as_ref())
            .map(|e| (e.inputs, e.clone()))
            .collect();
        Some(Previous {
            dir,
            fingerprint: *root.fingerprint,
            centrality: root.centrality.iter().map(|c| c.to_native()).collect(),
            artifacts: manifest.artifacts,
            by_inputs,
            in_order,
            root: file.clone(),
        })
    }
}

/// Encodes the compiled segments (the reused ones are files already), their cross parts
/// and their root.
fn encode_generation(compiled: super::compile::Compiled) -> Result<Encoded> {
    use super::compile::{CompiledCross, CompiledSegment};
    let super::compile::Compiled {
        mut root,
        segments,
        cross,
    } = compiled;
    let segment_bytes: Vec<Option<Vec<u8>>> = segments
        .par_iter()
        .map(|segment| match segment {
            CompiledSegment::Built(data) => format::encode_segment(data).map(Some),
            CompiledSegment::Reused(_) => Ok(None),
        })
        .collect::<Result<_>>()?;
    let cross_bytes: Vec<Option<Vec<u8>>> = cross
        .par_iter()
        .map(|part| match part {
            CompiledCross::Built(data) => format::encode_cross(data).map(Some),
            CompiledCross::Reused(_) => Ok(None),
        })
        .collect::<Result<_>>()?;
    let mut files = Vec::with_capacity(segments.len() + cross.len());
    let mut total = 0u64;
    for ((entry, segment), bytes) in root.segments.iter_mut().zip(&segments).zip(segment_bytes) {
        if let (CompiledSegment::Built(data), Some(bytes)) = (segment, &bytes) {
            entry.hash = format::payload_hash(bytes);
            entry.strings = data.string_offsets.len().saturating_sub(1) as u32;
        }
        total += bytes.as_ref().map_or(0, |b| b.len() as u64);
        files.push((format::segment_name(&entry.hash), bytes));
    }
    for (entry, bytes) in root.cross.iter_mut().zip(cross_bytes) {
        if let Some(bytes) = &bytes {
            entry.hash = format::payload_hash(bytes);
        }
        total += bytes.as_ref().map_or(0, |b| b.len() as u64);
        files.push((format::cross_name(&entry.hash), bytes));
    }
    let root = format::encode_root(&root)?;
    total += root.len() as u64;
    Ok(Encoded {
        root,
        files,
        bytes: total,
    })
}

/// Writes a generation's files into staging, with their artifacts for the manifest. A
/// file the previous generation holds, reused or built again alike, is hard-linked from
/// it (a reused one copied, a built one written, where links are refused): its name is
/// its payload's hash, so equal names are equal files.
fn write_generation(
    staging: &mut super::store::Scratch,
    encoded: &mut Encoded,
    previous: Option<&Previous>,
) -> Result<BTreeMap<String, Artifact>> {
    let segments_dir = staging.join(SEGMENTS_DIR);
    std::fs::create_dir_all(&segments_dir).at(&segments_dir)?;
    // Each file once (equal names are equal files), linked or written side by side: an
    // edit links some 180 files from the previous generation, a syscall each.
    let mut seen = std::collections::HashSet::new();
    let unique: Vec<&(String, Option<Vec<u8>>)> = encoded
        .files
        .iter()
        .filter(|(name, _)| seen.insert(name.as_str()))
        .collect();
    let staged = &*staging;
    let placed: Vec<(String, Artifact, Option<PathBuf>, u64)> = unique
        .par_iter()
        .map(|(name, bytes)| {
            let (artifact, linked) = place(staged, name, bytes.as_deref(), previous)?;
            let counted = if bytes.is_none() { artifact.bytes } else { 0 };
            Ok((name.clone(), artifact, linked, counted))
        })
        .collect::<Result<_>>()?;
    let mut artifacts = BTreeMap::new();
    for (name, artifact, linked, counted) in placed {
        if let Some(target) = linked {
            staging.linked_durable(target);
        }
        encoded.bytes += counted;
        artifacts.insert(name, artifact);
    }
    write_staged(&staging.join(GRAPH_FILE), &encoded.root)?;
    artifacts.insert(
        GRAPH_FILE.to_string(),
        Artifact {
            bytes: encoded.root.len() as u64,
            blake3: format::digest(&encoded.root).to_hex().to_string(),
        },
    );
    Ok(artifacts)
}

/// Puts one file of a generation into staging: hard-linked from the previous generation
/// where it holds the name (the link's target is returned, durable once the directory
/// is), else written, or copied where a link is refused.
fn place(
    staging: &super::store::Scratch,
    name: &str,
    bytes: Option<&[u8]>,
    previous: Option<&Previous>,
) -> Result<(Artifact, Option<PathBuf>)> {
    let target = staging.join(name);
    let held = previous.and_then(|p| Some((p, p.artifacts.get(name)?)));
    let linked = held.filter(|(p, _)| std::fs::hard_link(p.dir.join(name), &target).is_ok());
    Ok(match (linked, bytes, previous) {
        (Some((_, artifact)), _, _) => (artifact.clone(), Some(target)),
        (None, Some(bytes), _) => {
            write_staged(&target, bytes)?;
            let artifact = Artifact {
                bytes: bytes.len() as u64,
                blake3: blake3::hash(bytes).to_hex().to_string(),
            };
            (artifact, None)
        }
        (None, None, Some(previous)) => {
            let source = previous.dir.join(name);
            std::fs::copy(&source, &target).at(&source)?;
            let artifact = match held {
                Some((_, artifact)) => artifact.clone(),
                None => {
                    let bytes = std::fs::read(&target).at(&target)?;
                    Artifact {
                        bytes: bytes.len() as u64,
                        blake3: blake3::hash(&bytes).to_hex().to_string(),
                    }
                }
            };
            (artifact, None)
        }
        (None, None, None) => {
            return Err(AtlasError::Internal {
                what: "graph",
                reason: format!("{name} was reused without a previous generation"),
            });
        }
    })
}

/// The fact cache key of every loaded file with facts, computed on first use: what
/// the heads pack holds (`Store::refresh_heads`).
fn fact_keys(files: &[Loaded]) -> super::store::FactKeys<'_> {
    let with_facts = || files.iter().filter(|f| f.facts.is_some());
    super::store::FactKeys::new(with_facts().count(), move || {
        with_facts()
            .filter_map(|f| Some(super::load::fact_key(&f.hash, f.language?)))
            .collect()
    })
}

/// Records the stamps of the files this build read, so that the fresh reads that follow
/// need not hash them again (`build::stamps`; best effort).
fn record_stamps(
    options: &BuildOptions,
    inventory: &super::inventory::Inventory,
    files: &[Loaded],
    skipped: &[Skipped],
    fingerprint: [u8; 32],
    stamped_at: i64,
) {
    // A file skipped for its content keeps its stamp (and no content): while the stamp
    // holds, it is skipped again without a read (`unchanged_unread`).
    let unstamped: std::collections::HashSet<&str> = skipped
        .iter()
        .filter(|s| skipped_for(s.reason.code()).is_none())
        .map(|s| s.path.as_str())
        .collect();
    let mut stamps = super::stamps::Stamps::new(fingerprint);
    stamps.entries = inventory
        .files
        .iter()
        .filter(|f| !unstamped.contains(f.path.as_str()))
        .filter_map(|f| f.stamp.map(|stamp| (f.path.clone(), stamp)))
        .collect();
    // What each file held when it was loaded: the next build need not read it again
    // while its stamp holds.
    stamps.known = files
        .iter()
        .filter(|f| stamps.entries.contains_key(&f.path))
        .map(|f| {
            let known = super::stamps::Known {
                hash: f.hash,
                class: f.class.code(),
                lines: f.lines,
            };
            (f.path.clone(), known)
        })
        .collect();
    stamps.write(&options.graph_dir, stamped_at);
}

/// The committed generation's stamps, when they are its.
fn committed_stamps(options: &BuildOptions, store: &Store) -> Option<super::stamps::Stamps> {
    let current = store.current().ok().flatten()?;
    super::stamps::Stamps::read_committed(&options.graph_dir, &current)
}

/// Reads, hashes, classifies and extracts every inventoried file in parallel (cached facts
/// skip parsing): the loaded files, and every file skipped (inventory and load), by path.
fn load_all(
    options: &BuildOptions,
    store: &Store,
    inventory: &super::inventory::Inventory,
    stamps: Option<&super::stamps::Stamps>,
    counters: &LoadCounters,
    prior: &PriorRead,
) -> (Vec<Loaded>, Vec<Skipped>) {
    let progress = options.progress.as_deref();
    if let Some(progress) = progress {
        progress.start("extracting", inventory.files.len());
    }
    store.read_every_head();
    let loaded: Vec<std::result::Result<Loaded, Skipped>> = inventory
        .files
        .par_iter()
        .map(|file| {
            let known = stamps
                .as_ref()
                .zip(file.stamp.as_ref())
                .and_then(|(stamps, stamp)| stamps.vouched(&file.path, stamp));
            if known.is_none() {
                prior.start();
            }
            let result = load(
                store,
                &options.code_root,
                file,
                options.limits.max_file_bytes,
                counters,
                known,
                options.memo.as_deref(),
            );
            if let Some(progress) = progress {
                progress.advance(1);
            }
            result
        })
        .collect();
    if let Some(progress) = progress {
        progress.finish();
    }
    let mut files = Vec::with_capacity(loaded.len());
    let mut skipped = inventory.skipped.clone();
    for item in loaded {
        match item {
            Ok(file) => files.push(file),
            Err(skip) => skipped.push(skip),
        }
    }
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    store.cache_writes_done();
    store.release_heads();
    if let Some(memo) = &options.memo {
        memo.keep(&files);
    }
    (files, skipped)
}

/// The last resolution (`resolve::incremental`), read on a thread of its own once
/// extraction meets a file the committed stamps do not vouch for: a no-op build (every
/// file vouched for) never reads it, and one that turns out to be a no-op stops the read.
/// A watcher's kept resolution needs no read.
struct PriorRead {
    /// A watcher's kept memo, with the checksum of the memo file it was written whole as.
    kept: Option<super::load::KeptResolution>,
    graph_dir: PathBuf,
    builder: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    started: std::sync::Once,
    reader: std::sync::Mutex<Option<std::thread::JoinHandle<Option<super::resolve::Memo>>>>,
}

impl PriorRead {
    fn new(options: &BuildOptions, builder: &str) -> Self {
        PriorRead {
            kept: options.memo.as_ref().and_then(|m| m.resolution()),
            graph_dir: options.graph_dir.clone(),
            builder: builder.to_string(),
            stop: Arc::default(),
            started: std::sync::Once::new(),
            reader: std::sync::Mutex::new(None),
        }
    }

    fn start(&self) {
        if self.kept.is_some() {
            return;
        }
        self.started.call_once(|| {
            let (dir, builder, stop) = (
                self.graph_dir.clone(),
                self.builder.clone(),
                self.stop.clone(),
            );
            let reader = std::thread::Builder::new()
                .name("atlas-resolution".into())
                .spawn(move || super::resolution_cache::read(&dir, &builder, &stop))
                .ok();
            *self.reader.lock().unwrap_or_else(|p| p.into_inner()) = reader;
        });
    }

    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The prior, waiting for its read (started now if nothing started it).
    /// With a kept memo, the checksum of the memo file it was written whole as.
    fn take(self) -> Option<super::load::KeptResolution> {
        if self.kept.is_some() {
            return self.kept;
        }
        self.start();
        let reader = self.reader.into_inner().unwrap_or_else(|p| p.into_inner());
        let read = reader.and_then(|r| r.join().ok()).flatten();
        read.map(|memo| (Arc::new(memo), None))
    }
}

/// Where resolution read cache entries whose bodies could not be trusted: each entry is
/// removed and the process's kept facts forgotten, so that the next attempt extracts
/// those files again.
fn damaged_bodies(options: &BuildOptions, store: &Store, files: &[Loaded]) -> Option<Attempt> {
    let damaged: Vec<(&Loaded, &str)> = files
        .iter()
        .filter_map(|f| Some((f, f.lazy.as_ref()?.damage()?)))
        .collect();
    let (first, reason) = damaged.first()?;
    let key = |file: &Loaded| Some(super::load::fact_key(&file.hash, file.language?));
    for (file, _) in &damaged {
        if let Some(key) = key(file) {
            store.remove_facts(&key);
        }
    }
    if let Some(memo) = &options.memo {
        memo.forget();
    }
    Some(Attempt::Damaged {
        repaired: damaged.len(),
        path: key(first).map_or_else(|| options.graph_dir.join("cache"), |k| store.cache_path(&k)),
        reason: format!("{}: {reason}", first.path),
    })
}

/// Files extracted with syntax errors or cut by a limit, for the report.
fn partial_files(files: &[Loaded]) -> Vec<PartialFile> {
    files
        .iter()
        .filter_map(|f| {
            let facts = f.facts.as_ref()?;
            (facts.parse_status != ParseStatus::Complete).then(|| PartialFile {
                path: f.path.clone(),
                status: facts.parse_status.as_str(),
                errors: facts.error_count,
                lines: facts.error_lines.iter().map(|l| l + 1).collect(),
                limit: facts.limit.clone(),
            })
        })
        .collect()
}

/// The SCIP indexes this build ingests: those given, those the indexers on PATH write
/// (`--scip-run`), and `index.scip` at the root; with the indexer runs.
fn scip_inputs(
    options: &BuildOptions,
    files: &[Loaded],
) -> Result<(Vec<PathBuf>, Vec<crate::build::scip::run::IndexerRun>)> {
    let mut scip_paths: Vec<PathBuf> = options.scip.clone();
    let mut scip_runs = Vec::new();
    if options.scip_run {
        let languages: std::collections::BTreeSet<Language> =
            files.iter().filter_map(|f| f.language).collect();
        let output_dir = options.graph_dir.join("scip");
        std::fs::create_dir_all(&output_dir).at(&output_dir)?;
        scip_runs = crate::build::scip::run::run_indexers(
            &options.code_root,
            &languages,
            &output_dir,
            options.search_path.as_deref(),
        );
        scip_paths.extend(scip_runs.iter().filter_map(|r| r.output.clone()));
    }
    if let Some(default) = crate::build::scip::default_index(&options.code_root)
        && !scip_paths.contains(&default)
    {
        scip_paths.push(default);
    }
    Ok((scip_paths, scip_runs))
}

/// What compilation needs of each loaded file.
fn file_metas(files: &[Loaded]) -> Vec<FileMeta<'_>> {
    files
        .iter()
        .map(|f| FileMeta {
            path: &f.path,
            language: f.language,
            class: f.class,
            hash: f.hash,
            size: f.size,
            lines: f.lines,
            parse_status: f
                .facts
                .as_ref()
                .map_or(ParseStatus::Complete, |x| x.parse_status),
            error_count: f.facts.as_ref().map_or(0, |x| x.error_count),
        })
        .collect()
}

/// The loaded files as resolution sees them.
fn source_units(files: &[Loaded]) -> Vec<SourceUnit<'_>> {
    files
        .iter()
        .map(|f| SourceUnit {
            path: &f.path,
            language: f.language,
            facts: f.facts.as_deref(),
            lazy: f.lazy.as_deref(),
        })
        .collect()
}

/// The Rust library crates the loaded manifests name (`cargo::RustCrates::read`).
fn rust_crates(files: &[Loaded], code_root: &Path) -> super::cargo::RustCrates {
    super::cargo::RustCrates::read(
        code_root,
        files
            .iter()
            .filter(|f| f.class == crate::graph::codes::FileClass::Manifest)
            .map(|f| (f.path.as_str(), f.size, &f.hash)),
    )
}

/// Ingests SCIP indexes for the compiled (extracted) files, reading their current text.
fn ingest_scip(
    paths: &[PathBuf],
    files: &[Loaded],
    root: &Path,
) -> Result<crate::build::scip::ScipFacts> {
    let compiled: std::collections::HashSet<&str> = files
        .iter()
        .filter(|f| f.language.is_some())
        .map(|f| f.path.as_str())
        .collect();
    crate::build::scip::ingest(paths, &|path| compiled.contains(path), &|path| {
        crate::source::read(root, path, u64::from(u32::MAX))
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
    })
}

/// Builds the hybrid-search index of a committed generation (when asked).
fn build_search(
    options: &BuildOptions,
    store: &Store,
    lock: &super::store::BuildLock,
    fingerprint: &str,
) -> Result<()> {
    match &options.companion {
        Some(companion) => companion.build(store, lock, fingerprint, &options.code_root),
        None => Ok(()),
    }
}

/// Writes a file of the staging directory. Not fsynced here: `Store::install` fsyncs
/// the whole staging directory, every file at once, before it is renamed into place.
fn write_staged(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).at(path)
}

/// A report as JSON data (for the manifest).
fn to_json<T: Serialize>(value: &T) -> Result<serde_json::Value> {
    serde_json::to_value(value).map_err(|e| AtlasError::Internal {
        what: "manifest",
        reason: e.to_string(),
    })
}

fn skipped_file(s: &Skipped) -> SkippedFile {
    let detail = match &s.reason {
        SkipReason::TooLarge { size, limit } => format!("{size} bytes > limit {limit}"),
        SkipReason::Unreadable(msg) => msg.clone(),
        SkipReason::MinifiedBundle => "minified or hashed bundle".into(),
        SkipReason::Binary => "binary content".into(),
        SkipReason::NotUtf8 => "not valid UTF-8".into(),
    };
    SkippedFile {
        path: s.path.clone(),
        reason: s.reason.code().to_string(),
        detail,
    }
}

fn truncation_report(t: &Truncation) -> TruncationReport {
    TruncationReport {
        limit: t.limit.to_string(),
        files_seen: t.files_seen,
        files_kept: t.files_kept,
        bytes_seen: t.bytes_seen,
        bytes_kept: t.bytes_kept,
    }
}

/// blake3 over the canonical build inputs (R-GEN-3).
fn fingerprint(
    files: &[Loaded],
    skipped: &[Skipped],
    truncated: &Option<Truncation>,
    scip_hashes: &[[u8; 32]],
    options: &BuildOptions,
) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"atlas-graph\0");
    hasher.update(&format::FORMAT_VERSION.to_le_bytes());
    hasher.update(&EXTRACTOR_VERSION.to_le_bytes());
    hasher.update(&super::resolve::RESOLVER_VERSION.to_le_bytes());
    for language in Language::ALL {
        hasher.update(language.query_hash().as_bytes());
    }
    hasher.update(&(options.limits.max_files as u64).to_le_bytes());
    hasher.update(&options.limits.max_total_bytes.to_le_bytes());
    hasher.update(&options.limits.max_file_bytes.to_le_bytes());
    for file in files {
        hasher.update(file.path.as_bytes());
        hasher.update(&[0]);
        hasher.update(&file.hash);
    }
    hasher.update(b"\0skipped\0");
    for s in skipped {
        hasher.update(s.path.as_bytes());
        hasher.update(&[0]);
        hasher.update(s.reason.code().as_bytes());
        hasher.update(&[0]);
    }
    if let Some(t) = truncated {
        hasher
            .update(format!("truncated:{}:{}:{}", t.limit, t.files_seen, t.bytes_seen).as_bytes());
    }
    hasher.update(b"\0scip\0");
    for hash in scip_hashes {
        hasher.update(hash);
    }
    *hasher.finalize().as_bytes()
}

/// `atlas eval edges`: heuristic edges against a SCIP index (R-RES-4).
#[derive(Debug, Clone, Serialize)]
pub struct EdgeReport {
    pub scip: crate::build::scip::ScipStats,
    pub diagnostics: Vec<crate::build::scip::ScipDiagnostic>,
    pub evaluation: crate::build::resolve::merge_scip::EdgeEvaluation,
}

pub fn evaluate_edges(options: &BuildOptions) -> Result<EdgeReport> {
    if !options.code_root.is_dir() {
        return Err(AtlasError::CodeDirMissing(options.code_root.clone()));
    }
    let store = Store::new(&options.graph_dir);
    let inventory = super::inventory::scan(&options.code_root, &options.limits)?;
    let counters = LoadCounters::default();
    let files: Vec<Loaded> = inventory
        .files
        .par_iter()
        .filter_map(|file| {
            load(
                &store,
                &options.code_root,
                file,
                options.limits.max_file_bytes,
                &counters,
                None,
                None,
            )
            .ok()
        })
        .collect();
    let scip = ingest_scip(&options.scip, &files, &options.code_root)?;
    let units = source_units(&files);
    let crates = rust_crates(&files, &options.code_root);
    let evaluation = super::resolve::evaluate_against_scip(&units, &crates, &scip);
    Ok(EdgeReport {
        scip: scip.stats.clone(),
        diagnostics: scip.diagnostics.clone(),
        evaluation,
    })
}
