//! Incremental resolution: an edit re-resolves only the files whose recorded reads
//! (`reads`) meet what changed, and reuses every other file's edges and frontier from
//! the last resolution, with node ids translated (graph-schema/README.md, "The edit path").
//!
//! A file is re-resolved when
//! - its facts changed (its digest differs);
//! - it read the facts of a *reshaped* file: one whose interface changed (what other
//!   files can read of its facts: definitions, bindings, bases; byte offsets by rank, so
//!   that a body edit which only shifts later definitions reshapes nothing);
//! - it read the import bindings of a file whose bindings moved (compared through a
//!   digest in stable terms: a bound symbol as its file and index there);
//! - it looked up a key in the edit's delta: a key the reshaped files contributed before
//!   or after the edit (a name defined, removed or redefined).
//!
//! Import binding is reused the same way, pass by pass (`Resolver::bind_all_imports`): a
//! file's pass is bound again when its facts changed, it read a reshaped file or a delta
//! key, or it read the bindings of a file whose previous pass came out differently.
//!
//! Reuse needs the same files in the same order (node ids of unchanged files then differ
//! only by the shift of the changed files' definitions): any other change resolves every
//! file. The tables and the whole-graph passes (containment, Go implementations, SCIP)
//! are rebuilt by every resolution.

use std::sync::Arc;

use super::reads::{self, Reads};
use super::*;

/// What resolving one file read and produced, kept for the next resolution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileMemo {
    /// The digest of the facts the file was resolved with (`fact_digest`).
    pub digest: [u8; 32],
    /// Digest of what other files' resolution can read of its facts (`interface_digest`).
    pub interface: [u8; 32],
    /// Digest of the file's import bindings in stable terms (`imports_digest`), as its
    /// last pass of import binding left them.
    pub bindings: [u8; 32],
    /// Files whose facts the resolution read, sorted (the file itself included).
    pub reads_files: Vec<u32>,
    /// Files whose import bindings the resolution read, sorted.
    pub reads_bindings: Vec<u32>,
    /// Table keys the resolution looked up (`reads::key`), sorted.
    pub reads_keys: Vec<u64>,
    /// Table keys the file's definitions are entered under, sorted.
    pub contributes: Vec<u64>,
    /// The file's reference edges, in the memo's node ids; their sites are in the file.
    pub edges: Vec<ResolvedEdge>,
    /// Sorted by site; shared with the resolved graph's frontier (`Frontier`).
    pub frontier: Arc<Vec<FrontierEntry>>,
    pub external_references: u64,
    /// Each pass of the file's import binding (`IMPORT_PASSES` of them).
    pub imports: Vec<ImportsMemo>,
}

/// What one pass of binding a file's imports read and produced, kept for the next
/// resolution: a pass is bound again only when its reads meet what changed, as a file's
/// references are resolved again.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportsMemo {
    /// Digest of `result` in stable terms (`imports_digest`).
    pub digest: [u8; 32],
    /// Files whose facts or top-level names the pass read, sorted.
    pub reads_files: Vec<u32>,
    /// Files whose bindings (of the pass before) the pass read, sorted.
    pub reads_bindings: Vec<u32>,
    /// Table keys the pass looked up, sorted.
    pub reads_keys: Vec<u64>,
    /// What the pass bound, in the memo's node ids. Passes with equal results share it.
    pub result: Arc<FileImports>,
}

/// A whole resolution's per-file results.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Memo {
    /// Digest of the files resolved (paths and languages, in order).
    pub files_digest: [u8; 32],
    /// Fingerprint of the generation compiled from this resolution (zero when unknown).
    pub generation: [u8; 32],
    /// What that generation's centrality was computed from (`compile::centrality_inputs`;
    /// zero when unknown): an edit that leaves it equal keeps the centrality.
    pub centrality_inputs: [u8; 32],
    /// Node id of each file's node, in the memo's ids.
    pub file_nodes: Vec<u32>,
    pub files: Vec<FileMemo>,
    /// What the memo file on disk holds of this memo, when it was read from one (or
    /// descends from one read): a build writes only the entries that differ from it
    /// (`resolution_cache`).
    pub on_disk: Option<OnDisk>,
}

/// The memo file (`resolution.bin`) a memo extends: its checksum, and per file whether
/// the entry differs from the file's (such entries are written beside it, in
/// `resolution.delta`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OnDisk {
    pub checksum: [u8; 32],
    pub differs: Vec<bool>,
}

/// How much of a resolution was redone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redone {
    /// Files whose references were resolved; the others' were reused.
    pub resolved: usize,
    /// Per file, whether everything resolution made of it is the prior resolution's: its
    /// facts, its references' resolution and its last pass of import binding were all
    /// reused (empty without a prior). Such a file's nodes, edges and frontier are the
    /// prior's in terms of the file, except for what the whole-graph passes (Go
    /// implementations, SCIP) add.
    pub unchanged: Vec<bool>,
    /// Whether every node keeps the prior resolution's id (the same files, each defining
    /// as many nodes): then an unchanged file's edges are the prior's in global ids too.
    pub same_ids: bool,
}

/// The digest a memo keeps of a file's facts: its content hash, language, and whether
/// it has facts (the facts are a function of these, for one extractor: the memo is kept
/// per atlas build).
pub fn fact_digest(content: &[u8; 32], language: Option<Language>, has_facts: bool) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(content);
    hasher.update(&[language.map_or(0xff, |l| l.code()), u8::from(has_facts)]);
    *hasher.finalize().as_bytes()
}

/// The digest of the files a resolution covers (paths and languages, in order) and of the
/// crate table it read them with: a crate named anew resolves every file again, as a file
/// added does.
pub fn files_digest(units: &[SourceUnit], crates: &RustCrates) -> [u8; 32] {
    let mut hasher = blake3::Hasher::new();
    crates.digest_into(&mut hasher);
    for unit in units {
        hasher.update(&(unit.path.len() as u64).to_le_bytes());
        hasher.update(unit.path.as_bytes());
        hasher.update(&[unit.language.map_or(0xff, |l| l.code())]);
    }
    *hasher.finalize().as_bytes()
}

/// Resolves all files, reusing the prior resolution where the edit leaves a file's
/// resolution as it was. `digests` are the units' `fact_digest`s. The result equals
/// `resolve`'s. `prior` is called once the tables are built, which need no prior: a
/// prior still being read from disk is waited for only then. The resolver's tables are
/// returned to be freed where it costs the caller least.
pub fn resolve_incremental<'a>(
    units: &'a [SourceUnit<'a>],
    crates: &'a RustCrates,
    digests: &[[u8; 32]],
    scip: Option<&ScipFacts>,
    prior: impl FnOnce() -> Option<Memo>,
) -> (Resolved<'a>, Memo, Redone, Tables<'a>) {
    let mut resolver = Resolver::new(units, crates);
    resolver.build_nodes();
    resolver.build_indexes();
    let (memo, redone) = resolver.resolve_reusing(digests, prior());
    resolver.go_implementations();
    if let Some(scip) = scip {
        resolver.merge_scip(scip);
    }
    let resolved = resolver.take_resolved();
    (resolved, memo, redone, Tables(resolver))
}

impl<'a> Resolver<'a> {
    fn resolve_reusing(&mut self, digests: &[[u8; 32]], prior: Option<Memo>) -> (Memo, Redone) {
        use rayon::prelude::*;
        let count = self.units.len();
        let contributes: Vec<Vec<u64>> = std::mem::take(&mut self.contributes)
            .into_par_iter()
            .map(|mut keys| {
                keys.sort_unstable();
                keys.dedup();
                keys
            })
            .collect();
        let files_digest = files_digest(self.units, self.rust_crates);
        let mut prior = prior.filter(|p| {
            p.files_digest == files_digest
                && p.files.len() == count
                && p.file_nodes.len() == count
                && digests.len() == count
        });
        // A file's interface is digested again only when its facts changed.
        let interfaces: Vec<[u8; 32]> = (0..count)
            .into_par_iter()
            .map(|f| match &prior {
                Some(p) if p.files[f].digest == digests[f] => p.files[f].interface,
                _ => interface_digest(self.units[f].facts, self.all_type_bindings(f as u32)),
            })
            .collect();
        let old_file_nodes = prior.as_ref().map(|p| p.file_nodes.clone());
        let new_file_nodes = self.out.file_nodes.clone();
        let translate = old_file_nodes
            .as_deref()
            .map(|old| Translation::new(old, &new_file_nodes));
        let changes = prior
            .as_ref()
            .map(|p| Changes::new(p, digests, &interfaces, &contributes));
        let prior_imports = prior.as_mut().map(|p| {
            p.files
                .iter_mut()
                .map(|f| std::mem::take(&mut f.imports))
                .collect()
        });
        let (mut imports, imports_reused, passes_reused) =
            self.bind_all_imports(prior_imports.zip(changes.as_ref()), translate.as_ref());
        let bindings: Vec<[u8; 32]> = imports
            .iter()
            .map(|passes| passes.last().map_or([0; 32], |pass| pass.digest))
            .collect();
        let redo = match (&prior, &changes) {
            (Some(prior), Some(changes)) => to_redo(prior, changes, &bindings),
            _ => vec![true; count],
        };
        let results: Vec<Option<(FileResolution, Reads)>> = (0..count as u32)
            .into_par_iter()
            .map(|file| {
                redo[file as usize].then(|| {
                    reads::start();
                    let result = self.resolve_file(file);
                    let mut reads = reads::finish();
                    reads.files.insert(file);
                    // Whatever an edge reaches was read, however the lookup got there.
                    for edge in &result.edges {
                        if let Some(target) = self.out.nodes[edge.to as usize].file {
                            reads.files.insert(target);
                        }
                    }
                    (result, reads)
                })
            })
            .collect();
        // The prior's results are moved into the new memo, ids translated in place.
        let prior = prior.take();
        // What the memo file on disk still holds of the new memo: an entry reused whole,
        // none of its ids moved, every pass of its imports reused, is the file's.
        let mut on_disk = prior
            .as_ref()
            .and_then(|p| p.on_disk.clone())
            .filter(|d| d.differs.len() == count && translate.as_ref().is_some_and(|t| t.identity));
        let mut old_files = prior.map(|p| p.files.into_iter());
        let mut files = Vec::with_capacity(count);
        let mut resolved = 0;
        for (index, (result, contributes)) in results.into_iter().zip(contributes).enumerate() {
            let old = old_files.as_mut().and_then(Iterator::next);
            let memo = match (result, old, &translate) {
                (Some((result, reads)), _, _) => {
                    resolved += 1;
                    if let Some(d) = &mut on_disk {
                        d.differs[index] = true;
                    }
                    FileMemo {
                        digest: digests.get(index).copied().unwrap_or_default(),
                        interface: interfaces[index],
                        bindings: bindings[index],
                        reads_files: sorted(reads.files),
                        reads_bindings: sorted(reads.bindings),
                        reads_keys: sorted(reads.keys),
                        contributes,
                        edges: result.edges,
                        frontier: Arc::new(result.frontier),
                        external_references: result.external_references,
                        imports: std::mem::take(&mut imports[index]),
                    }
                }
                (None, Some(mut old), Some(translate)) => {
                    if !translate.identity {
                        for edge in &mut old.edges {
                            edge.from = translate.id(edge.from);
                            edge.to = translate.id(edge.to);
                        }
                        for entry in Arc::make_mut(&mut old.frontier) {
                            entry.from = translate.id(entry.from);
                        }
                    }
                    if let Some(d) = &mut on_disk {
                        d.differs[index] |= !passes_reused[index]
                            || old.bindings != bindings[index]
                            || old.contributes != contributes;
                    }
                    FileMemo {
                        bindings: bindings[index],
                        contributes,
                        imports: std::mem::take(&mut imports[index]),
                        ..old
                    }
                }
                // `redo` is all true without a prior.
                _ => FileMemo::default(),
            };
            files.push(memo);
        }
        let references: Vec<&[ResolvedEdge]> = files.iter().map(|m| &m.edges[..]).collect();
        self.assemble_edges(&references);
        self.out.frontier = Frontier::from_runs(files.iter().map(|m| m.frontier.clone()).collect());
        self.out.external_references += files.iter().map(|m| m.external_references).sum::<u64>();
        // The table is settled; `finish` sorts in what the whole-graph passes add.
        let same_ids = translate.as_ref().is_some_and(|t| t.identity);
        let unchanged = match &changes {
            Some(changes) => (0..count)
                .map(|f| !changes.changed[f] && !redo[f] && imports_reused[f])
                .collect(),
            None => Vec::new(),
        };
        let memo = Memo {
            files_digest,
            generation: [0; 32],
            centrality_inputs: [0; 32],
            file_nodes: self.out.file_nodes.clone(),
            files,
            on_disk,
        };
        (
            memo,
            Redone {
                resolved,
                unchanged,
                same_ids,
            },
        )
    }

    /// A digest of what a file's imports bind, in terms that outlive node ids: a symbol
    /// as (file, index in the file), files as file indices. (What a reader learns of a
    /// bound symbol is covered by its file's interface: `reads::bound`.)
    fn imports_digest(&self, imports: &FileImports) -> [u8; 32] {
        let stable = |id: u32| -> (u32, u32) {
            match self.out.nodes[id as usize].file {
                Some(f) => (f, id - self.out.file_nodes[f as usize]),
                None => (u32::MAX, id),
            }
        };
        let mut h = Digest::default();
        let mut entries: Vec<(&String, &Target)> = imports.bindings.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (name, target) in entries {
            h.write(name.as_bytes());
            h.write_u8(0xff);
            match target {
                Target::Symbol(id) => {
                    let (f, i) = stable(*id);
                    h.write_u8(1);
                    h.write_u32(f);
                    h.write_u32(i);
                }
                Target::Files(files) => {
                    h.write_u8(2);
                    h.write_usize(files.len());
                    files.iter().for_each(|&f| h.write_u32(f));
                }
            }
        }
        h.write_u8(0xfe);
        imports.wildcards.iter().for_each(|&f| h.write_u32(f));
        h.write_u8(0xfe);
        let mut names: Vec<&String> = imports.unresolved.iter().collect();
        names.sort_unstable();
        for name in names {
            h.write(name.as_bytes());
            h.write_u8(0xff);
        }
        h.write_u8(u8::from(imports.unresolved_wildcard));
        let mut names: Vec<&String> = imports.external.iter().collect();
        names.sort_unstable();
        for name in names {
            h.write(name.as_bytes());
            h.write_u8(0xff);
        }
        h.finish()
    }

    /// Binds every file's imports, in `IMPORT_PASSES` passes so that re-exports
    /// (`from .app import Flask` in a package `__init__`, `pub use`) resolve for their
    /// importers: each pass reads the bindings of the pass before, so three passes
    /// follow re-export chains two deep. Adds the last pass's `imports` edges.
    ///
    /// With a prior resolution of the same files (each file's passes, and what changed
    /// since), a file's pass is bound again only when its recorded reads meet the
    /// change: its facts changed, it read a reshaped file or a delta key, or it read the
    /// bindings of a file whose previous pass came out differently. Every other pass is
    /// reused, its ids translated. Returns each file's passes for the next resolution,
    /// whether its last pass (the one whose edges are kept) was reused, and whether
    /// every pass was.
    pub(super) fn bind_all_imports(
        &mut self,
        prior: Option<(Vec<Vec<ImportsMemo>>, &Changes)>,
        translate: Option<&Translation>,
    ) -> (Vec<Vec<ImportsMemo>>, Vec<bool>, Vec<bool>) {
        use rayon::prelude::*;
        let count = self.units.len();
        let (mut prior, changes) = match prior {
            Some((passes, changes))
                if passes.len() == count
                    && passes.iter().all(|p| p.len() == IMPORT_PASSES)
                    && translate.is_some() =>
            {
                (Some(passes), Some(changes))
            }
            _ => (None, None),
        };
        let mut memos: Vec<Vec<ImportsMemo>> = (0..count)
            .map(|_| Vec::with_capacity(IMPORT_PASSES))
            .collect();
        // The first pass reads no bindings: none changed before it.
        let mut rebound = vec![false; count];
        let mut reused_last = vec![false; count];
        let mut reused_all = vec![true; count];
        // Per file, the last reused prior result and its translation: passes that share
        // a result share its translation.
        let mut translated: Vec<Option<(Arc<FileImports>, Arc<FileImports>)>> = vec![None; count];
        self.imports = Vec::new();
        for pass in 0..IMPORT_PASSES {
            let olds: Vec<Option<ImportsMemo>> = match &mut prior {
                Some(passes) => passes
                    .iter_mut()
                    .map(|p| Some(std::mem::take(&mut p[pass])))
                    .collect(),
                None => vec![None; count],
            };
            let this = &*self;
            let rebound_before = &rebound;
            // (the pass, whether its result changed, whether it was reused)
            let results: Vec<(ImportsMemo, bool, bool)> = olds
                .into_par_iter()
                .enumerate()
                .map(|(file, old)| {
                    let reusable = match (&old, changes) {
                        (Some(old), Some(changes)) => {
                            !changes.meets(file, &old.reads_files, &old.reads_keys)
                                && !old.reads_bindings.iter().any(|&g| {
                                    rebound_before.get(g as usize).copied().unwrap_or(true)
                                })
                        }
                        _ => false,
                    };
                    match old {
                        Some(old) if reusable => (old, false, true),
                        old => {
                            reads::start();
                            let result = this.bind_imports(file as u32);
                            let reads = reads::finish();
                            let digest = this.imports_digest(&result);
                            let rebound = old.is_none_or(|old| old.digest != digest);
                            let memo = ImportsMemo {
                                digest,
                                reads_files: sorted(reads.files),
                                reads_bindings: sorted(reads.bindings),
                                reads_keys: sorted(reads.keys),
                                result: Arc::new(result),
                            };
                            (memo, rebound, false)
                        }
                    }
                })
                .collect();
            let mut current = Vec::with_capacity(count);
            for (file, (mut memo, changed, reused)) in results.into_iter().enumerate() {
                rebound[file] = changed;
                reused_last[file] = reused;
                reused_all[file] &= reused;
                if let Some(translate) = translate.filter(|t| !t.identity)
                    && reused
                {
                    memo.result = match &translated[file] {
                        Some((old, new)) if Arc::ptr_eq(old, &memo.result) => new.clone(),
                        _ => {
                            let new = Arc::new(translate.imports(&memo.result));
                            translated[file] = Some((memo.result.clone(), new.clone()));
                            new
                        }
                    };
                }
                // Equal results of consecutive passes are one (kept once in the memo).
                // Passes all reused are as the build that bound them left them: equal
                // ones already one (comparing them would decode every file's names).
                if !reused_all[file]
                    && let Some(previous) = memos[file].last()
                    && !Arc::ptr_eq(&previous.result, &memo.result)
                    && previous.result == memo.result
                {
                    memo.result = previous.result.clone();
                }
                current.push(memo.result.clone());
                memos[file].push(memo);
            }
            self.imports = current;
        }
        (memos, reused_last, reused_all)
    }
}

/// A blake3 digest fed like a `Hasher` (a 64-bit hash could collide, and a collision
/// here would reuse a resolution that changed).
#[derive(Default)]
struct Digest(blake3::Hasher);

impl Digest {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    fn write_u8(&mut self, v: u8) {
        self.0.update(&[v]);
    }
    fn write_u32(&mut self, v: u32) {
        self.0.update(&v.to_le_bytes());
    }
    fn write_usize(&mut self, v: usize) {
        self.0.update(&(v as u64).to_le_bytes());
    }
    fn write_str(&mut self, v: &str) {
        self.write_usize(v.len());
        self.write(v.as_bytes());
    }
    fn write_opt_str(&mut self, v: Option<&str>) {
        match v {
            Some(v) => {
                self.write_u8(1);
                self.write_str(v);
            }
            None => self.write_u8(0),
        }
    }
    fn write_opt_u32(&mut self, v: Option<u32>) {
        self.write_u32(v.map_or(u32::MAX, |v| v));
    }
    fn finish(&self) -> [u8; 32] {
        *self.0.finalize().as_bytes()
    }
}

/// A digest of what resolving *another* file can read of these facts: definitions,
/// bindings, the package, the bases (`Inherit`/`Implement` references); not the other
/// references, which only the file's own resolution reads. Byte offsets enter as their
/// rank among the file's offsets: the resolver only compares offsets of one file with
/// each other, so a body edit that shifts the definitions after it keeps the interface.
/// Sizes do matter where overloads are told apart (`implementation_weight`), so those
/// enter as they are.
pub(super) fn interface_digest(facts: Option<&FileFacts>, bindings: &[TypeBinding]) -> [u8; 32] {
    let mut h = Digest::default();
    let Some(facts) = facts else {
        h.write_u8(0);
        return h.finish();
    };
    h.write_u8(1);
    let mut offsets: Vec<u32> = vec![0];
    for def in &facts.defs {
        for span in [
            Some(def.span),
            Some(def.name_span),
            Some(def.signature),
            def.doc,
        ]
        .into_iter()
        .flatten()
        {
            offsets.extend([span.start_byte, span.end_byte]);
        }
    }
    for binding in bindings {
        offsets.extend([binding.site.start_byte, binding.site.end_byte]);
    }
    offsets.sort_unstable();
    offsets.dedup();
    let rank = |offset: u32| offsets.partition_point(|&o| o < offset) as u32;
    let span = |h: &mut Digest, span: Span| {
        h.write_u32(rank(span.start_byte));
        h.write_u32(rank(span.end_byte));
    };
    h.write_opt_str(facts.package.as_deref());
    h.write_usize(facts.defs.len());
    let mut groups: HashMap<(&str, SymbolKind), u32> = HashMap::default();
    for def in &facts.defs {
        *groups
            .entry((def.qualified.as_str(), def.kind))
            .or_default() += 1;
        h.write_u8(def.kind.code());
        h.write_str(&def.name);
        h.write_str(&def.qualified);
        h.write_str(&def.member_scope);
        span(&mut h, def.span);
        span(&mut h, def.name_span);
        span(&mut h, def.signature);
        match def.doc {
            Some(doc) => {
                h.write_u8(1);
                span(&mut h, doc);
            }
            None => h.write_u8(0),
        }
        h.write_opt_u32(def.parent);
        h.write_u8(def.visibility.code());
        h.write_u8(u8::from(def.in_test_scope));
        h.write_opt_str(def.returns.as_deref());
        h.write_u8(u8::from(def.declares_only));
    }
    for (index, def) in facts.defs.iter().enumerate() {
        if groups[&(def.qualified.as_str(), def.kind)] > 1 {
            h.write_usize(index);
            h.write_u32(def.span.end_byte.saturating_sub(def.signature.end_byte));
            h.write_u32(def.span.end_byte.saturating_sub(def.span.start_byte));
        }
    }
    h.write_usize(bindings.len());
    for b in bindings {
        h.write_opt_u32(b.scope);
        h.write_str(&b.name);
        h.write_opt_str(b.type_name.as_deref());
        h.write_opt_str(b.items.as_deref());
        h.write_opt_str(b.initializer.as_deref());
        span(&mut h, b.site);
        h.write_opt_str(b.value.as_deref());
        h.write_opt_u32(b.value_scope);
        h.write_u8(u8::from(b.element));
    }
    for r in &facts.refs {
        if matches!(r.role, RefRole::Inherit | RefRole::Implement) {
            h.write_u8(r.role.code());
            h.write_opt_u32(r.from);
            h.write_str(&r.name);
        }
    }
    h.finish()
}

/// How many passes bind imports (`Resolver::bind_all_imports`).
pub const IMPORT_PASSES: usize = 3;

/// What an edit changed since the last resolution of the same files.
pub(super) struct Changes {
    /// Files whose facts changed.
    changed: Vec<bool>,
    /// Files whose interface changed: what other files read of their facts.
    reshaped: Vec<bool>,
    /// Table keys the reshaped files contribute, before and after.
    delta: HashSet<u64>,
}

impl Changes {
    fn new(
        prior: &Memo,
        digests: &[[u8; 32]],
        interfaces: &[[u8; 32]],
        contributes: &[Vec<u64>],
    ) -> Changes {
        let files = 0..prior.files.len();
        let changed: Vec<bool> = files
            .clone()
            .map(|f| prior.files[f].digest != digests[f])
            .collect();
        let reshaped: Vec<bool> = files
            .map(|f| prior.files[f].interface != interfaces[f])
            .collect();
        let mut delta: HashSet<u64> = HashSet::default();
        for (f, _) in reshaped.iter().enumerate().filter(|(_, c)| **c) {
            delta.extend(prior.files[f].contributes.iter().copied());
            delta.extend(contributes[f].iter().copied());
        }
        Changes {
            changed,
            reshaped,
            delta,
        }
    }

    /// Whether a file that read these files and keys must be resolved (or bound) again.
    fn meets(&self, file: usize, reads_files: &[u32], reads_keys: &[u64]) -> bool {
        self.changed[file]
            || reads_files
                .iter()
                .any(|&g| self.reshaped.get(g as usize).copied().unwrap_or(true))
            || (!self.delta.is_empty() && reads_keys.iter().any(|k| self.delta.contains(k)))
    }
}

/// Which files to resolve again, given the last resolution of the same files, what
/// changed since, and the files' import bindings now.
fn to_redo(prior: &Memo, changes: &Changes, bindings: &[[u8; 32]]) -> Vec<bool> {
    use rayon::prelude::*;
    let rebound: Vec<bool> = (0..prior.files.len())
        .map(|f| prior.files[f].bindings != bindings[f])
        .collect();
    prior
        .files
        .par_iter()
        .enumerate()
        .map(|(f, memo)| {
            changes.meets(f, &memo.reads_files, &memo.reads_keys)
                || memo
                    .reads_bindings
                    .iter()
                    .any(|&g| rebound.get(g as usize).copied().unwrap_or(true))
        })
        .collect()
}

/// Old node ids to new ones, for files whose definitions are the same: module nodes keep
/// their ids (same files, same directories), a file's nodes shift with its file node.
pub(super) struct Translation<'m> {
    old: &'m [u32],
    new: &'m [u32],
    /// No file's definitions were added or removed: every id stays.
    identity: bool,
}

impl<'m> Translation<'m> {
    fn new(old: &'m [u32], new: &'m [u32]) -> Self {
        Translation {
            old,
            new,
            identity: old == new,
        }
    }

    fn id(&self, id: u32) -> u32 {
        if self.identity {
            return id;
        }
        let file = self.old.partition_point(|&start| start <= id);
        match file.checked_sub(1) {
            Some(f) => self.new[f] + (id - self.old[f]),
            None => id,
        }
    }
}

impl Translation<'_> {
    /// A pass of import binding in the new ids.
    fn imports(&self, imports: &FileImports) -> FileImports {
        let target = |target: &Target| match target {
            Target::Symbol(id) => Target::Symbol(self.id(*id)),
            Target::Files(files) => Target::Files(files.clone()),
        };
        FileImports {
            bindings: imports.bindings.translated(target),
            wildcards: imports.wildcards.clone(),
            unresolved: imports.unresolved.clone(),
            unresolved_wildcard: imports.unresolved_wildcard,
            external: imports.external.clone(),
            edges: imports
                .edges
                .iter()
                .map(|&(id, site)| (self.id(id), site))
                .collect(),
        }
    }
}

fn sorted<T: Ord>(set: HashSet<T>) -> Vec<T> {
    let mut v: Vec<T> = set.into_iter().collect();
    v.sort_unstable();
    v
}
