//! Hybrid search (SPEC §6, R-S-1..5): a BM25 arm (tantivy over identifier-aware tokens of
//! symbol names, qualified names, paths, signatures, docs and body excerpts, and of
//! Markdown sections), a vector arm (exact cosine over static embeddings) and a graph arm
//! (names, qualified names and traceback frames the query mentions), fused by reciprocal
//! rank fusion (`Σ 1/(60 + rank)`, ranks from 0), then a local lexical rerank (exact
//! symbol matches first; `ATLAS_RERANK=0` disables every reordering after RRF), dedup
//! and `top_k`. Commits (git history) only fill slots the fused pool left empty.
//!
//! The index lives per generation under `<graph>/search/<fingerprint>/` (see `index`),
//! built by `atlas build` or lazily by the first search that needs it (a `--frozen` read
//! never builds it), derived incrementally from the previous generation's index, and
//! collected with its generation.

pub mod embed;
pub mod index;
pub mod learned;
pub mod relevance;
pub mod signals;
pub mod sources;
pub mod text;

mod allocate;
pub(crate) mod beside;
mod fuse;
mod quantized;
mod response;
mod scope;
mod split;

pub use response::{
    Budget, CompactHit, FileGroup, GroupBy, Omitted, ResponseProfile, SearchResponse,
    group_by_file, respond,
};

use std::time::Duration;

use crate::config::{Config, EmbedSource, SearchConfig};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use memmap2::Mmap;
use serde::Serialize;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{Index, IndexReader, TantivyDocument, Term};

use crate::build::store::Store;
use crate::error::{AtlasError, IoContext, Result};
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::Graph;
use embed::Embedder;
use index::{Fields, FileLookup, IndexMeta, file_lookup, owned_file_lookup, tantivy_error};
use sources::Section;

pub const RRF_K: f64 = 60.0;
/// Index artifacts up to this size are checksummed at every open (metadata, tables).
const SMALL_ARTIFACT: u64 = 256 << 10;
/// A lexical index (tantivy and the sections table) up to this size is checksummed whole
/// at every open: a flipped bit changes answers, not only fails them (sympy's is 11 MB,
/// about 2 ms on two cores). Larger ones check lengths and small artifacts at open, and
/// every byte when `atlas build` or a warm process first opens them.
const FULL_CHECK_BYTES: u64 = 64 << 20;
/// Candidates each arm contributes to fusion.
pub const POOL: usize = 50;
/// Cosine below which a vector neighbour is noise, not a candidate: unrelated words
/// score 0.25–0.4 against code with the embedded model, related text 0.6 and more.
/// Below it the pool stays empty, and history may fill it (R-S-5).
const VECTOR_FLOOR: f32 = 0.45;
/// Beyond this many words a query is prose: the vector arm ranks the lexical
/// candidates only.
const VECTOR_RERANK_WORDS: usize = 32;
/// Queries of at most this many words also match name prefixes.
const PREFIX_MAX_WORDS: usize = 8;
/// Weight of a test-scope hit's fused score in the rerank (not in the reported `score`).
const TEST_PRIOR: f64 = 0.6;
/// The same for Markdown sections.
const SECTION_PRIOR: f64 = 0.5;
/// Weight of a hit under the scope a commit-style query names (`sync: …`, `scope`).
const SCOPE_PRIOR: f64 = 1.5;

/// An open search index of one generation.
pub struct SearchIndex {
    reader: IndexReader,
    fields: Fields,
    vectors: Option<Vectors>,
    dim: usize,
    sections: Vec<Section>,
    /// `(path, ordinal)` → section index.
    section_index: HashMap<(String, u32), u32>,
    pub meta: IndexMeta,
    /// Why the vector arm cannot run on this index (its vectors are missing or damaged).
    vectors_unavailable: Option<String>,
    /// The rows in int8, built at the first nearest-neighbour query of a process that
    /// keeps loaded indexes (`cosines`).
    quantized: std::sync::OnceLock<std::result::Result<quantized::Quantized, String>>,
    /// Each hit document's item once resolved, kept by a process that keeps loaded
    /// indexes: a warm question would otherwise load some 300 stored documents on every
    /// query. The index is read-only and its reader never reloads, so an address always
    /// names the same document.
    items: std::sync::Mutex<HashMap<tantivy::DocAddress, Option<u32>>>,
    /// Every file of the index's generation by its path, kept by a process that keeps
    /// loaded indexes instead of hashed again for every search (`files`).
    files: std::sync::OnceLock<FileLookup<'static>>,
}

/// The commit behind a history hit.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CommitInfo {
    pub hash: String,
    /// Author time, seconds since the Unix epoch.
    pub time: i64,
    pub subject: String,
    /// Indexed files it touched (at most 10).
    pub files: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub path: String,
    /// In-file qualified name (`Class.method`); a section's heading path
    /// (`Install > From source`); `commit:<hash12>` for history.
    pub symbol: String,
    /// A symbol kind, `section` or `commit`.
    pub kind: &'static str,
    /// 1-based, inclusive (a commit hit spans its first file).
    pub lines: [u32; 2],
    /// The RRF score (0 for commits, which only fill empty slots).
    pub score: f64,
    pub match_arms: Vec<&'static str>,
    /// Expansion reference: `path#Lstart-Lend@<8 hex of the file's blake3>`.
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<CommitInfo>,
    /// The graph node of a symbol hit.
    #[serde(skip)]
    pub node: Option<NodeId>,
    /// Rank in each arm, from 0.
    #[serde(skip)]
    pub ranks: Ranks,
    /// Jev's evaluation, when the judge ran and evaluated this hit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relevance: Option<HitRelevance>,
    /// How the propagation arm reached it: `callee of `Foo.bar` named in the query`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// A hit's Jev evaluation (R-J-6): its score on the rubric's scale, the confidence, and
/// whether it was too uncertain (< 0.70) to move.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct HitRelevance {
    pub score: f64,
    pub confidence: f64,
    pub uncertain: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchOutput {
    pub query: String,
    /// What was searched when it is not `query`: a Portuguese question with its English
    /// words appended (`glossary`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searched: Option<String>,
    /// Sections of the query on the reporter's environment, not searched
    /// (`query::environment`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub set_aside: Vec<crate::query::environment::SetAside>,
    pub hits: Vec<Hit>,
    /// Candidates each arm returned before fusion.
    pub arms: ArmCounts,
    pub reranked: bool,
    /// The judge's report, when `ATLAS_RELEVANCE` asked for it.
    pub relevance: Option<relevance::RelevanceReport>,
    /// The pool's files by evidence, best first, when allocation ran (`--group-by file`).
    #[serde(skip)]
    pub files: Vec<FileRank>,
}

/// A file and its evidence: the decayed sum of its candidates' weighted fused scores.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FileRank {
    pub path: String,
    pub evidence: f64,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct ArmCounts {
    pub bm25: usize,
    pub vector: usize,
    pub graph: usize,
    pub propagate: usize,
    /// Symbols BM25 found within the best files that the other arms had not.
    pub file: usize,
    /// Commits that filled empty slots.
    pub history: usize,
    /// Requested arms that could not run on this index, with the reason (damaged or
    /// missing data, a failure inside the arm). The other arms answered.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub unavailable: std::collections::BTreeMap<&'static str, String>,
}

/// A ranked arm of hybrid search, in fusion order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    Bm25,
    Vector,
    Graph,
    Propagate,
    /// BM25 within the best files (file-then-function allocation).
    File,
}

impl Arm {
    pub const ALL: [Arm; 5] = [
        Arm::Bm25,
        Arm::Vector,
        Arm::Graph,
        Arm::Propagate,
        Arm::File,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Arm::Bm25 => "bm25",
            Arm::Vector => "vector",
            Arm::Graph => "graph",
            Arm::Propagate => "propagate",
            Arm::File => "file",
        }
    }
}

/// A candidate's rank in each arm that found it (from 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ranks {
    pub bm25: Option<usize>,
    pub vector: Option<usize>,
    pub graph: Option<usize>,
    pub propagate: Option<usize>,
    pub file: Option<usize>,
}

impl Ranks {
    pub fn get(&self, arm: Arm) -> Option<usize> {
        match arm {
            Arm::Bm25 => self.bm25,
            Arm::Vector => self.vector,
            Arm::Graph => self.graph,
            Arm::Propagate => self.propagate,
            Arm::File => self.file,
        }
    }

    fn set(&mut self, arm: Arm, rank: usize) {
        match arm {
            Arm::Bm25 => self.bm25 = Some(rank),
            Arm::Vector => self.vector = Some(rank),
            Arm::Graph => self.graph = Some(rank),
            Arm::Propagate => self.propagate = Some(rank),
            Arm::File => self.file = Some(rank),
        }
    }

    /// The arms that found the candidate, in fusion order.
    pub fn arms(&self) -> Vec<&'static str> {
        Arm::ALL
            .into_iter()
            .filter(|&arm| self.get(arm).is_some())
            .map(Arm::as_str)
            .collect()
    }
}

/// One candidate's fused score and its rank in each arm (from 0).
#[derive(Debug, Clone, Copy, Default)]
struct Fused {
    score: f64,
    ranks: Ranks,
}

pub use crate::config::Arms;

/// Decompressed document-store blocks a loaded index keeps per segment (16 KiB each).
const DOC_STORE_CACHE_BLOCKS: usize = 1024;

/// Loaded indexes a long-lived process keeps, by directory (`reuse_loaded_indexes`).
type Loaded = HashMap<PathBuf, (IndexStamp, String, Arc<SearchIndex>)>;
static LOADED: std::sync::OnceLock<std::sync::Mutex<Loaded>> = std::sync::OnceLock::new();
/// Indexes kept at most; beyond it the cache starts again (as for graph mappings: the
/// committed generation's and the one before).
const LOADED_CAP: usize = 2;

/// Which files a loaded index was read from: its completion marker and its metadata
/// (device, inode, length, modification time). A repaired index rewrites both.
#[derive(Debug, Clone, PartialEq, Eq)]
struct IndexStamp(Vec<(u64, u64, u64, Option<std::time::SystemTime>)>);

impl IndexStamp {
    fn of(dir: &Path) -> Option<IndexStamp> {
        use std::os::unix::fs::MetadataExt;
        ["COMPLETE", "index.json"]
            .iter()
            .map(|name| {
                fs::metadata(dir.join(name))
                    .ok()
                    .map(|m| (m.dev(), m.ino(), m.len(), m.modified().ok()))
            })
            .collect::<Option<Vec<_>>>()
            .map(IndexStamp)
    }
}

/// From now on this process keeps each generation's loaded search index (tantivy reader,
/// vector mapping, sections) while its files are the same, instead of loading it on every
/// query — for the daemon and the MCP server. Sound because a completed index is never
/// modified in place: a repair writes new files (a new stamp). One-shot commands never
/// turn it on.
pub fn reuse_loaded_indexes() {
    LOADED.get_or_init(|| std::sync::Mutex::new(HashMap::new()));
}

impl SearchIndex {
    fn dir(store: &Store, fingerprint: &str) -> PathBuf {
        store.search_dir(fingerprint)
    }

    /// `load`, through the cache when this process keeps loaded indexes.
    fn load_shared(dir: &Path, embedder: &Embedder) -> Result<Arc<SearchIndex>> {
        let Some(cache) = LOADED.get() else {
            return SearchIndex::load(dir, embedder).map(Arc::new);
        };
        let stamp = IndexStamp::of(dir);
        if let Some(stamp) = &stamp
            && let Ok(cache) = cache.lock()
            && let Some((known, identity, index)) = cache.get(dir)
            && known == stamp
            && *identity == embedder.identity
        {
            return Ok(Arc::clone(index));
        }
        let index = Arc::new(SearchIndex::load(dir, embedder)?);
        if let Some(stamp) = stamp
            && let Ok(mut cache) = cache.lock()
        {
            if cache.len() >= LOADED_CAP {
                cache.clear();
            }
            cache.insert(
                dir.to_path_buf(),
                (stamp, embedder.identity.clone(), Arc::clone(&index)),
            );
        }
        Ok(index)
    }

    /// Opens the generation's index if it was built: `Ok(None)` when it was not,
    /// `atlas-search-corrupt` when it is damaged (damaged vectors only disable the vector
    /// arm, reported in every answer).
    pub fn open(
        store: &Store,
        fingerprint: &str,
        embedder: &Embedder,
    ) -> Result<Option<Arc<SearchIndex>>> {
        let dir = SearchIndex::dir(store, fingerprint);
        if !dir.join("COMPLETE").is_file() {
            return Ok(None);
        }
        SearchIndex::load_shared(&dir, embedder).map(Some)
    }

    /// Opens the index, building or repairing it first when it is missing or damaged
    /// (under the build lock, waiting a bounded time for another holder).
    fn open_or_build(
        store: &Store,
        fingerprint: &str,
        graph: &Graph,
        root: &Path,
        embedder: &Embedder,
        lock_wait: Duration,
    ) -> Result<Arc<SearchIndex>> {
        let opened = match SearchIndex::open(store, fingerprint, embedder) {
            Ok(Some(index)) if index.vectors_unavailable.is_none() => return Ok(index),
            opened @ (Ok(_) | Err(AtlasError::SearchCorrupt { .. })) => opened,
            Err(e) => return Err(e),
        };
        match SearchIndex::repair(store, fingerprint, graph, root, embedder, lock_wait) {
            // A store this process cannot write (another user's, a read-only mount, a
            // full disk) keeps what it has: an index with damaged vectors answers
            // without its vector arm, saying so; a damaged one is reported as damaged,
            // a missing one as not built.
            Err(AtlasError::Io { path, source })
                if crate::build::session::is_unwritable(&source) =>
            {
                match opened {
                    Ok(Some(index)) => Ok(index),
                    Ok(None) => Err(AtlasError::SearchUnavailable(format!(
                        "the search index of this generation is not built, and the graph directory cannot be written ({}: {source})",
                        path.display()
                    ))),
                    Err(e) => Err(e),
                }
            }
            repaired => repaired,
        }
    }

    /// Verifies the index in full and rebuilds whatever does not verify, then opens it.
    fn repair(
        store: &Store,
        fingerprint: &str,
        graph: &Graph,
        root: &Path,
        embedder: &Embedder,
        lock_wait: Duration,
    ) -> Result<Arc<SearchIndex>> {
        let lock = store.lock_within(lock_wait)?;
        SearchIndex::ensure_built(store, &lock, fingerprint, graph, root, embedder)?;
        drop(lock);
        SearchIndex::load_shared(&SearchIndex::dir(store, fingerprint), embedder)
    }

    /// The index a query reads: a `frozen` read never builds it (`None` when it is
    /// missing); otherwise it is built or repaired on first use.
    fn for_query(
        store: &Store,
        fingerprint: &str,
        graph: &Graph,
        root: &Path,
        embedder: &Embedder,
        frozen: bool,
        lock_wait: Duration,
    ) -> Result<Option<Arc<SearchIndex>>> {
        if frozen {
            SearchIndex::open(store, fingerprint, embedder)
        } else {
            SearchIndex::open_or_build(store, fingerprint, graph, root, embedder, lock_wait)
                .map(Some)
        }
    }

    /// One query end to end: open (or build) the index, search, and — when not frozen
    /// and an arm failed on damaged data the cheap checks did not see — verify, rebuild
    /// and search again once.
    #[allow(clippy::too_many_arguments)]
    pub fn query(
        store: &Store,
        fingerprint: &str,
        graph: &Graph,
        root: &Path,
        embedder: &Embedder,
        frozen: bool,
        text: &str,
        top_k: usize,
        compact: bool,
        config: &Config,
    ) -> Result<SearchOutput> {
        let lock_wait = config.lock_wait;
        let index =
            SearchIndex::for_query(store, fingerprint, graph, root, embedder, frozen, lock_wait)?
                .ok_or_else(|| {
                AtlasError::SearchUnavailable(
                    "the search index of this generation is not built; run without --frozen once"
                        .into(),
                )
            })?;
        let setting = relevance::Setting {
            config: &config.search.relevance,
            compact,
            root,
            ledger_dir: Some(store.dir()),
        };
        let output = index.search(graph, embedder, text, top_k, &config.search, Some(&setting));
        let damaged = match &output {
            Ok(out) => !out.arms.unavailable.is_empty(),
            Err(e) => matches!(e, AtlasError::SearchCorrupt { .. }),
        };
        if frozen || !damaged {
            return output;
        }
        drop(index);
        let repaired =
            match SearchIndex::repair(store, fingerprint, graph, root, embedder, lock_wait) {
                Ok(repaired) => repaired,
                // Nothing can be repaired in a store this process cannot write: the first
                // answer stands, its unavailable arms (or the damage) said.
                Err(AtlasError::Io { source, .. })
                    if crate::build::session::is_unwritable(&source) =>
                {
                    return output;
                }
                Err(e) => return Err(e),
            };
        // The judge may have been called by the first attempt: its cost stays this
        // search's (one cost line, one sum).
        let first_cost = output.ok().and_then(|o| o.relevance).map(|r| r.cost);
        let mut retried =
            repaired.search(graph, embedder, text, top_k, &config.search, Some(&setting))?;
        if let (Some(report), Some(first)) = (retried.relevance.as_mut(), first_cost) {
            report.cost.merge(&first);
        }
        Ok(retried)
    }

    /// Builds the generation's index unless it exists, from the newest other index
    /// whose generation still exists when there is one. The caller holds the build lock.
    fn ensure_built(
        store: &Store,
        lock: &crate::build::store::BuildLock,
        fingerprint: &str,
        graph: &Graph,
        root: &Path,
        embedder: &Embedder,
    ) -> Result<Option<IndexMeta>> {
        let dir = SearchIndex::dir(store, fingerprint);
        let vectors = format!("vectors-{}.bin", embedder.identity);
        // An existing index is trusted only when every byte verifies (a build repairs
        // what damage left behind, issue 10 C).
        let existing = read_meta(&dir).filter(|_| dir.join("COMPLETE").is_file());
        if let Some(meta) = &existing
            && meta.artifacts.contains_key(&vectors)
            && index::verify(&dir, meta).is_ok()
        {
            return Ok(None);
        }
        // A complete index that fails its checks may share the damaged file with the
        // others (packs and tantivy's files are hard links): repaired from scratch, not
        // from one of them, or the damage would come back with its old checksum.
        let repairing = existing.is_some();
        // Removed again if anything below fails (a full disk, a kill leaves it to the
        // next lock holder).
        let tmp = crate::build::store::Scratch::create(
            dir.with_extension(format!("tmp{}", std::process::id())),
        )?;
        let base = newest_base(store, fingerprint, &vectors).filter(|_| !repairing);
        let base_graph = base
            .as_ref()
            .and_then(|(_, fp, _)| Graph::open(&store.graph_path(fp)).ok());
        let base = match (base, &base_graph) {
            (Some((dir, fingerprint, meta)), Some(graph)) => Some(index::Base {
                dir,
                fingerprint,
                graph,
                meta,
            }),
            _ => None,
        };
        let meta = index::build(tmp.path(), fingerprint, graph, root, embedder, base)?;
        fs::write(tmp.join("COMPLETE"), fingerprint).at(tmp.path())?;
        // Whatever is in the way (a damaged index, a file) goes.
        if dir.is_dir() {
            fs::remove_dir_all(&dir).at(&dir)?;
        } else if dir.exists() {
            fs::remove_file(&dir).at(&dir)?;
        }
        // Fsynced before the rename, like a generation.
        tmp.persist_as(&dir)?;
        store.collect_search_garbage(lock, fingerprint);
        Ok(Some(meta))
    }

    fn load(dir: &Path, embedder: &Embedder) -> Result<SearchIndex> {
        let corrupt = |reason: String| AtlasError::SearchCorrupt {
            path: dir.to_path_buf(),
            reason,
        };
        let meta = read_meta(dir).ok_or_else(|| {
            corrupt(format!(
                "index.json is missing, unreadable or not version {}",
                index::INDEX_VERSION
            ))
        })?;
        // Cheap checks of everything but the vectors, which only disable their arm.
        let lexical = IndexMeta {
            artifacts: meta
                .artifacts
                .iter()
                .filter(|(name, _)| !name.starts_with("vectors-"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            ..meta.clone()
        };
        // Every artifact has its recorded length, and its checksum when the lexical index
        // is at most `FULL_CHECK_BYTES` (else the small ones': tantivy's metadata, the
        // sections table). The build verified every byte when it wrote them, and `atlas
        // build` verifies them all again before it trusts an index; damage a read does not
        // see here makes one arm fail, typed and isolated, and a read without --frozen
        // then rebuilds (issue 10, C).
        let lexical_bytes: u64 = lexical.artifacts.values().map(|a| a.bytes).sum();
        let small = |name: &str| {
            meta.artifacts
                .get(name)
                .is_some_and(|a| a.bytes <= SMALL_ARTIFACT || lexical_bytes <= FULL_CHECK_BYTES)
        };
        index::verify_where(dir, &lexical, small)?;
        let sections_path = dir.join("sections.json");
        let sections: Vec<Section> = fs::read(&sections_path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .ok_or_else(|| corrupt("sections.json is unreadable".into()))?;
        let section_index = sections
            .iter()
            .enumerate()
            .map(|(i, s)| ((s.path.clone(), s.ordinal), i as u32))
            .collect();
        let tantivy_dir = dir.join("tantivy");
        let opened = crate::isolate::isolate(|| -> Result<(IndexReader, Fields)> {
            let directory = index::ReadOnlyDirectory::open(&tantivy_dir)?;
            let index = Index::open(directory).map_err(|e| tantivy_error(&tantivy_dir, e))?;
            index::register_tokenizer(&index);
            let (_, fields) = index::schema();
            // Hits fall anywhere in the document store: a process that keeps this index
            // keeps the blocks it decompressed. With tantivy's default of 100, sympy's
            // store (0.6 MB compressed) did not fit, and a warm question's 200 hits
            // decompressed blocks again on every query (4% of its CPU).
            let reader = index
                .reader_builder()
                .reload_policy(tantivy::ReloadPolicy::Manual)
                .doc_store_cache_num_blocks(DOC_STORE_CACHE_BLOCKS)
                .try_into()
                .map_err(|e| tantivy_error(&tantivy_dir, e))?;
            Ok((reader, fields))
        });
        let (reader, fields) = opened.map_err(|panic| corrupt(format!("tantivy: {panic}")))??;
        let (vectors, vectors_unavailable) =
            match open_vectors(dir, &meta, &embedder.identity, embedder.dim) {
                Ok(vectors) => (Some(vectors), None),
                Err(reason) => (None, Some(reason)),
            };
        Ok(SearchIndex {
            reader,
            fields,
            vectors,
            dim: embedder.dim,
            sections,
            section_index,
            meta,
            vectors_unavailable,
            quantized: std::sync::OnceLock::new(),
            items: std::sync::Mutex::new(HashMap::default()),
            files: std::sync::OnceLock::new(),
        })
    }

    /// The text query over identifier tokens, all text fields boosted by weight.
    fn text_query(&self, query: &str) -> Vec<(Occur, Box<dyn Query>)> {
        let tokens = text::identifier_tokens(query);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        let boosts = [
            (self.fields.name, 3.0),
            (self.fields.qualified, 2.0),
            (self.fields.path, 1.0),
            (self.fields.signature, 1.0),
            (self.fields.doc, 1.0),
            (self.fields.body, 0.5),
        ];
        // Partial identifiers are typed as short queries; in prose, every word is the
        // prefix of some name and prefix terms only add noise.
        let short = query.split_whitespace().count() <= PREFIX_MAX_WORDS;
        for (token, count) in occurrences(&tokens) {
            // A word weighs as often as the text repeats it: one clause boosted by its
            // count, not a clause per occurrence (a pasted 30 KB log made 24,000
            // scorers, 160 MB).
            let times = count as f32;
            for (field, boost) in boosts {
                let term = TermQuery::new(
                    Term::from_field_text(field, token),
                    IndexRecordOption::WithFreqs,
                );
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(term), boost * times)),
                ));
            }
            // Partial identifiers (`search_hyb`, `EmbeddingEng`): a word is also a prefix
            // of a name's words.
            let plain = token.chars().all(|c| c.is_ascii_alphanumeric());
            if short && plain && token.len() >= 3 {
                for field in [self.fields.name, self.fields.qualified] {
                    clauses.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(
                            Box::new(longer_words(field, token)),
                            1.5 * times,
                        )),
                    ));
                }
            }
        }
        clauses
    }

    /// The best `limit` documents of one kind for the text query, best first.
    fn top_documents(
        &self,
        query: &str,
        kind: &str,
        limit: usize,
        in_files: &[&str],
    ) -> Result<Vec<TantivyDocument>> {
        Ok(self
            .scored_documents(query, kind, limit, in_files)?
            .into_iter()
            .map(|(_, document)| document)
            .collect())
    }

    /// `top_documents` with each document's BM25 score.
    fn scored_documents(
        &self,
        query: &str,
        kind: &str,
        limit: usize,
        in_files: &[&str],
    ) -> Result<Vec<(f32, TantivyDocument)>> {
        self.scored_by(self.text_query(query), kind, limit, in_files)
    }

    /// The best `limit` documents of one kind for a query's clauses, with their scores.
    fn scored_by(
        &self,
        clauses: Vec<(Occur, Box<dyn Query>)>,
        kind: &str,
        limit: usize,
        in_files: &[&str],
    ) -> Result<Vec<(f32, TantivyDocument)>> {
        let (searcher, top) = self.top_addresses(clauses, kind, limit, in_files)?;
        top.into_iter()
            .map(|(score, address)| Ok((score, searcher.doc(address).map_err(damaged)?)))
            .collect()
    }

    /// `scored_documents` as the items the documents stand for (`item_of`); a process
    /// that keeps loaded indexes resolves each document once (`items`).
    fn scored_items(
        &self,
        graph: &Graph,
        files: &FileLookup,
        query: &str,
        kind: &str,
        limit: usize,
        in_files: &[&str],
    ) -> Result<Vec<(f32, Option<u32>)>> {
        let (searcher, top) = self.top_addresses(self.text_query(query), kind, limit, in_files)?;
        let warm = LOADED.get().is_some();
        // The lock is held to look up and to add, never while documents load: another
        // worker's search goes on meanwhile.
        let items = || self.items.lock().unwrap_or_else(|e| e.into_inner());
        let known: Vec<Option<Option<u32>>> = if warm {
            let items = items();
            top.iter()
                .map(|(_, address)| items.get(address).copied())
                .collect()
        } else {
            vec![None; top.len()]
        };
        let mut learned = Vec::new();
        let scored = top
            .into_iter()
            .zip(known)
            .map(|((score, address), known)| {
                let item = match known {
                    Some(item) => item,
                    None => {
                        let document = searcher.doc(address).map_err(damaged)?;
                        let item = self.item_of(graph, files, &document);
                        learned.push((address, item));
                        item
                    }
                };
                Ok((score, item))
            })
            .collect::<Result<Vec<_>>>()?;
        if warm && !learned.is_empty() {
            items().extend(learned);
        }
        Ok(scored)
    }

    /// Every file of `graph` by its path. The index is its generation's (its directory is
    /// the graph's fingerprint), so a process that keeps loaded indexes builds it once.
    fn files<'g>(&'g self, graph: &'g Graph) -> std::borrow::Cow<'g, FileLookup<'g>> {
        if LOADED.get().is_some() {
            std::borrow::Cow::Borrowed(self.files.get_or_init(|| owned_file_lookup(graph)))
        } else {
            std::borrow::Cow::Owned(file_lookup(graph))
        }
    }

    /// The addresses of the best `limit` documents of one kind for a query's clauses,
    /// with their scores, and the searcher they were found with.
    fn top_addresses(
        &self,
        clauses: Vec<(Occur, Box<dyn Query>)>,
        kind: &str,
        limit: usize,
        in_files: &[&str],
    ) -> Result<(tantivy::Searcher, Vec<(f32, tantivy::DocAddress)>)> {
        if clauses.is_empty() || limit == 0 {
            return Ok((self.reader.searcher(), Vec::new()));
        }
        let of_kind: Box<dyn Query> = Box::new(TermQuery::new(
            Term::from_field_text(self.fields.kind, kind),
            IndexRecordOption::Basic,
        ));
        let mut must = vec![
            (
                Occur::Must,
                Box::new(BooleanQuery::new(clauses)) as Box<dyn Query>,
            ),
            (Occur::Must, of_kind),
        ];
        if !in_files.is_empty() {
            let any_file: Vec<(Occur, Box<dyn Query>)> = in_files
                .iter()
                .map(|path| {
                    let term: Box<dyn Query> = Box::new(TermQuery::new(
                        Term::from_field_text(self.fields.file, path),
                        IndexRecordOption::Basic,
                    ));
                    (Occur::Should, term)
                })
                .collect();
            must.push((Occur::Must, Box::new(BooleanQuery::new(any_file))));
        }
        let query = BooleanQuery::new(must);
        let searcher = self.reader.searcher();
        let statistics = Statistics::of(&searcher, self.fields.kind, kind == index::KIND_FILE)
            .map_err(damaged)?;
        let top = searcher
            .search_with_statistics_provider(
                &query,
                &TopDocs::with_limit(limit).order_by_score(),
                &statistics,
            )
            .map_err(damaged)?;
        Ok((searcher, top))
    }

    /// BM25 over documents of one kind (symbols or sections): items, best first.
    fn bm25(&self, graph: &Graph, files: &FileLookup, query: &str, kind: &str) -> Result<Vec<u32>> {
        Ok(self
            .scored_items(graph, files, query, kind, POOL, &[])?
            .into_iter()
            .filter_map(|(_, item)| item)
            .collect())
    }

    /// BM25 over symbol documents, asked once for both of its uses: the arm's items
    /// (the best `POOL` documents) and, with `evidence`, the files by the BM25 evidence
    /// of their symbols deep in the ranking (the best `split::EVIDENCE_DEPTH` documents,
    /// tests left out): a file's evidence sums its best symbols' scores with a harmonic
    /// decay, as `allocate::rank_files` weighs candidates; best first, at most
    /// `split::EVIDENCE_FILES`. Split fusion weighs RRF's file order with it
    /// (`split::fused_file_order`). The deeper ranking's head is the shallower one's
    /// whole (tantivy breaks ties by document), so one query serves both.
    fn symbols_by_bm25(
        &self,
        graph: &Graph,
        files: &FileLookup,
        query: &str,
        evidence: bool,
    ) -> Result<(Vec<u32>, Vec<FileId>)> {
        const { assert!(split::EVIDENCE_DEPTH >= POOL) };
        let depth = if evidence {
            split::EVIDENCE_DEPTH
        } else {
            POOL
        };
        let scored = self.scored_items(graph, files, query, index::KIND_SYMBOL, depth, &[])?;
        let items: Vec<Option<u32>> = scored.iter().map(|&(_, item)| item).collect();
        let arm: Vec<u32> = items.iter().take(POOL).flatten().copied().collect();
        if !evidence {
            return Ok((arm, Vec::new()));
        }
        let candidates: Vec<allocate::Candidate> = scored
            .iter()
            .zip(&items)
            .filter_map(|((score, _), item)| {
                let node = NodeId((*item)?);
                let file = graph.node(node).file();
                (!graph.is_test(node)).then_some(allocate::Candidate {
                    file: Some(file),
                    weight: f64::from(*score),
                    node: Some(node),
                })
            })
            .collect();
        let by_evidence = allocate::rank_files(&candidates)
            .into_iter()
            .take(split::EVIDENCE_FILES)
            .map(|f| f.file)
            .collect();
        Ok((arm, by_evidence))
    }

    /// Files by BM25 over their whole text (`index::KIND_FILE` documents), test files
    /// left out: best first, at most `split::EVIDENCE_FILES`.
    fn files_by_text(&self, graph: &Graph, files: &FileLookup, query: &str) -> Result<Vec<FileId>> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = text::identifier_tokens(query)
            .split(' ')
            .filter(|t| !t.is_empty() && !text::is_stopword(t))
            .map(|token| {
                let term = TermQuery::new(
                    Term::from_field_text(self.fields.text, token),
                    IndexRecordOption::WithFreqs,
                );
                (Occur::Should, Box::new(term) as Box<dyn Query>)
            })
            .collect();
        Ok(self
            .scored_by(clauses, index::KIND_FILE, split::EVIDENCE_FILES * 2, &[])?
            .iter()
            .filter_map(|(_, document)| {
                let path = document.get_first(self.fields.file)?.as_str()?;
                let file = *files.get(path)?;
                (!graph.is_test(graph.file(file)?.node())).then_some(file)
            })
            .take(split::EVIDENCE_FILES)
            .collect())
    }

    /// BM25 over the symbols of a few files, in one query: each file's items, best first,
    /// at most `per_file` of each (the query takes the best `per_file` × files, so a file
    /// that matches far better may leave another fewer).
    fn bm25_in_files(
        &self,
        graph: &Graph,
        files: &FileLookup,
        query: &str,
        paths: &[&str],
        per_file: usize,
    ) -> Result<Vec<Vec<u32>>> {
        let mut out = vec![Vec::new(); paths.len()];
        let scored = self.scored_items(
            graph,
            files,
            query,
            index::KIND_SYMBOL,
            per_file * paths.len(),
            paths,
        )?;
        for item in scored.into_iter().filter_map(|(_, item)| item) {
            let path = graph.file_path(graph.node(NodeId(item)).file());
            if let Some(list) = paths
                .iter()
                .position(|p| *p == path)
                .and_then(|i| out.get_mut(i))
                && list.len() < per_file
            {
                list.push(item);
            }
        }
        Ok(out)
    }

    /// The item a symbol or section document stands for in this generation.
    fn item_of(
        &self,
        graph: &Graph,
        files: &FileLookup,
        document: &TantivyDocument,
    ) -> Option<u32> {
        let text = |field| document.get_first(field).and_then(|v| v.as_str());
        let path = text(self.fields.file)?;
        let local = document
            .get_first(self.fields.local)
            .and_then(|v| v.as_u64())? as u32;
        match text(self.fields.kind)? {
            index::KIND_SECTION => self
                .section_index
                .get(&(path.to_string(), local))
                .map(|i| graph.node_count() as u32 + i),
            _ => {
                let file = *files.get(path)?;
                let node = NodeId(graph.file(file)?.node().0 + local);
                // An offset that no longer lands in its file is a stale document.
                (node.index() < graph.node_count()
                    && graph.node(node).file() == file
                    && index::searchable(graph, node))
                .then_some(node.0)
            }
        }
    }

    /// Commits matching the query, best first (R-S-5).
    fn commits(&self, query: &str, limit: usize) -> Result<Vec<CommitInfo>> {
        if self.meta.commits == 0 {
            return Ok(Vec::new());
        }
        let documents = self.top_documents(query, index::KIND_COMMIT, limit, &[])?;
        Ok(documents
            .iter()
            .map(|document| {
                let text = |field| {
                    document
                        .get_first(field)
                        .and_then(|v| v.as_str())
                        .unwrap_or("")
                        .to_string()
                };
                CommitInfo {
                    hash: text(self.fields.commit),
                    time: document
                        .get_first(self.fields.time)
                        .and_then(|v| v.as_i64())
                        .unwrap_or(0),
                    subject: text(self.fields.title),
                    files: text(self.fields.files)
                        .lines()
                        .take(10)
                        .map(str::to_string)
                        .collect(),
                }
            })
            .collect())
    }

    /// The cosine of every item with the query, `(cosine, item)` in row order; an error
    /// when the vectors are unavailable or a row is damaged (not a unit vector).
    ///
    /// With `nearest_of` (the node count: items from it on are sections), only the best
    /// `POOL` of each kind are wanted. A process that keeps loaded indexes then scores
    /// only the rows its int8 copy cannot rule out (`quantized`): what `nearest` keeps of
    /// them is what it keeps of every row, with the same cosines. That scan is put in
    /// `share` for other threads to help with (`quantized::Scan::help`).
    fn cosines<'s>(
        &'s self,
        embedder: &Embedder,
        query: &str,
        nearest_of: Option<u32>,
        share: &std::sync::OnceLock<quantized::Scan<'s>>,
    ) -> std::result::Result<Vec<(f32, u32)>, String> {
        let Some(vectors) = &self.vectors else {
            return Err(self
                .vectors_unavailable
                .clone()
                .unwrap_or_else(|| "no vectors".into()));
        };
        let q = embedder
            .embed(&[query.to_string()])
            .map_err(|e| e.to_string())?;
        let width = self.dim * 4;
        let items = &vectors.table.items;
        let mut row_values = vec![0f32; self.dim];
        let mut cosine_of = |row: usize| -> std::result::Result<Option<(f32, u32)>, String> {
            let Some(bytes) = vectors.row(row, width) else {
                return Ok(None);
            };
            for (value, chunk) in row_values.iter_mut().zip(bytes.chunks_exact(4)) {
                *value = f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
            let cosine = dot(&row_values, &q);
            // Unit vectors: a cosine outside [-1, 1] (or NaN) is a damaged row.
            if cosine.is_nan() || cosine.abs() > 1.001 {
                return Err(format!("vector row {row} is damaged (cosine {cosine})"));
            }
            Ok(Some((cosine, items[row])))
        };
        if let Some(node_count) = nearest_of
            && LOADED.get().is_some()
        {
            let quantized = self.quantized.get_or_init(|| {
                quantized::Quantized::build(
                    items.len(),
                    self.dim,
                    |row| vectors.row(row, width),
                    |row| items[row] >= node_count,
                )
            });
            let quantized = quantized.as_ref().map_err(Clone::clone)?;
            let scan = share.get_or_init(|| quantized.scan(&q, POOL));
            let mut scored = Vec::new();
            for row in scan.candidates()? {
                scored.extend(cosine_of(row)?);
            }
            return Ok(scored);
        }
        let mut scored: Vec<(f32, u32)> = Vec::with_capacity(items.len());
        for row in 0..items.len() {
            match cosine_of(row)? {
                Some(scored_row) => scored.push(scored_row),
                None => break,
            }
        }
        Ok(scored)
    }
}

/// BM25's collection statistics for one kind of document. File documents
/// (`index::KIND_FILE`) are scored among themselves, every other kind as if no file
/// document were in the index: the fields of each are their own, so only the document
/// count differs, and a file's text, many times a symbol's, would otherwise inflate
/// every idf and shrink the average length that norms divide by.
struct Statistics<'s> {
    searcher: &'s tantivy::Searcher,
    documents: u64,
}

impl<'s> Statistics<'s> {
    /// The statistics of file documents (`files`) or of every other kind; `kind` is the
    /// index's kind field.
    fn of(
        searcher: &'s tantivy::Searcher,
        kind: tantivy::schema::Field,
        files: bool,
    ) -> tantivy::Result<Statistics<'s>> {
        use tantivy::query::Bm25StatisticsProvider;
        // Deleted documents count on both sides, as tantivy's own statistics count them.
        let file_documents = searcher.doc_freq(&Term::from_field_text(kind, index::KIND_FILE))?;
        let all = Bm25StatisticsProvider::total_num_docs(searcher)?;
        let documents = if files {
            file_documents
        } else {
            all.saturating_sub(file_documents)
        };
        Ok(Statistics {
            searcher,
            documents,
        })
    }
}

impl tantivy::query::Bm25StatisticsProvider for Statistics<'_> {
    fn total_num_tokens(&self, field: tantivy::schema::Field) -> tantivy::Result<u64> {
        tantivy::query::Bm25StatisticsProvider::total_num_tokens(self.searcher, field)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.documents)
    }

    /// At most the document count: tantivy's idf asserts it (a damaged or odd index
    /// must not panic a search).
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.searcher.doc_freq(term)?.min(self.documents))
    }
}

/// Dot product in eight independent lanes, which the compiler vectorises.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_chunks, a_rest) = a.as_chunks::<8>();
    let (b_chunks, b_rest) = b.as_chunks::<8>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

/// The best `POOL` of `(cosine, item)` above the floor, best first.
fn nearest(mut scored: Vec<(f32, u32)>) -> Vec<u32> {
    let keep = POOL.min(scored.len());
    if keep == 0 {
        return Vec::new();
    }
    scored.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(keep);
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take_while(|(cosine, _)| *cosine >= VECTOR_FLOOR)
        .map(|(_, item)| item)
        .collect()
}

/// The index metadata of `dir`, when it is readable and of this build's version (older
/// layouts are rebuilt, not read).
fn read_meta(dir: &Path) -> Option<IndexMeta> {
    fs::read(dir.join("index.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<IndexMeta>(&b).ok())
        .filter(|m| m.version == index::INDEX_VERSION)
}

/// A generation's vectors: its row table and the packs it refers to, mmapped.
struct Vectors {
    table: index::VectorTable,
    packs: Vec<Mmap>,
}

impl Vectors {
    /// Row `row`'s bytes (`width` of them), `None` past the table.
    fn row(&self, row: usize, width: usize) -> Option<&[u8]> {
        let &(pack, in_pack) = self.table.locations.get(row)?;
        index::pack_row(self.packs.get(pack as usize)?, in_pack, width)
    }
}

/// The generation's vectors for this model after the cheap checks: the table and every
/// pack listed in `index.json` with this length, headers that fit the model, the table's
/// checksum, and every row's place inside its pack. Why not, otherwise.
fn open_vectors(
    dir: &Path,
    meta: &IndexMeta,
    model: &str,
    dim: usize,
) -> std::result::Result<Vectors, String> {
    let name = &format!("vectors-{model}.bin");
    let opened = |name: &str| -> std::result::Result<Mmap, String> {
        let recorded = meta
            .artifacts
            .get(name)
            .ok_or_else(|| format!("{name} is not listed in index.json"))?;
        let path = dir.join(name);
        let file = fs::File::open(&path).map_err(|e| format!("{name}: {e}"))?;
        let length = file.metadata().map_err(|e| format!("{name}: {e}"))?.len();
        if length != recorded.bytes {
            return Err(format!(
                "{name} is {length} bytes, the index recorded {}",
                recorded.bytes
            ));
        }
        // SAFETY: vector files are written once into a temporary directory and renamed
        // into place, packs shared by hard link; none is modified afterwards (a file
        // damaged under us reads as wrong values, which the scan detects, never as
        // out-of-bounds memory: lengths are checked).
        unsafe { Mmap::map(&file) }.map_err(|e| format!("{name}: {e}"))
    };
    if !meta.artifacts.contains_key(name) {
        return Err(format!("no vectors for this model ({name})"));
    }
    let table =
        index::parse_vector_table(&opened(name)?, dim).map_err(|e| format!("{name}: {e}"))?;
    let mut packs = Vec::with_capacity(table.packs.len());
    let mut sizes = Vec::with_capacity(table.packs.len());
    for id in &table.packs {
        let pack = index::pack_name(model, id);
        let mmap = opened(&pack)?;
        sizes.push(index::parse_pack_header(&mmap, dim).map_err(|e| format!("{pack}: {e}"))?);
        packs.push(mmap);
    }
    if let Some(row) = table
        .locations
        .iter()
        .position(|&(pack, row)| row as usize >= sizes[pack as usize])
    {
        return Err(format!("{name}: row {row} lies outside its pack"));
    }
    Ok(Vectors { table, packs })
}

fn symbol_hit(graph: &Graph, node: NodeId) -> Hit {
    let record = graph.node(node);
    let (path, hash) = graph
        .file_of(node)
        .map(|f| {
            (
                graph.str(f.path()).to_string(),
                crate::graph::format::hex(&f.hash[..4]),
            )
        })
        .unwrap_or_default();
    let lines = [
        record.span.start_line.to_native() + 1,
        record.span.end_line.to_native() + 1,
    ];
    Hit {
        reference: format!("{path}#L{}-L{}@{hash}", lines[0], lines[1]),
        path,
        symbol: graph.str(record.qualified()).to_string(),
        kind: graph.kind(node).as_str(),
        lines,
        score: 0.0,
        match_arms: Vec::new(),
        commit: None,
        node: Some(node),
        ranks: Ranks::default(),
        relevance: None,
        via: None,
    }
}

fn section_hit(graph: &Graph, files: &FileLookup, section: &Section) -> Hit {
    let hash = files
        .get(section.path.as_str())
        .and_then(|&f| graph.file(f))
        .map(|f| crate::graph::format::hex(&f.hash[..4]))
        .unwrap_or_default();
    Hit {
        reference: format!(
            "{}#L{}-L{}@{hash}",
            section.path, section.lines[0], section.lines[1]
        ),
        path: section.path.clone(),
        symbol: section.heading_path.clone(),
        kind: "section",
        lines: section.lines,
        score: 0.0,
        match_arms: Vec::new(),
        commit: None,
        node: None,
        ranks: Ranks::default(),
        relevance: None,
        via: None,
    }
}

/// The newest other complete index of this model whose generation still exists: the
/// base an update starts from. `(dir, fingerprint, meta)`.
fn newest_base(store: &Store, keep: &str, vectors: &str) -> Option<(PathBuf, String, IndexMeta)> {
    store
        .search_indexes(keep)
        .into_iter()
        .filter(|(dir, _)| dir.join(vectors).is_file())
        .find_map(|(dir, name)| {
            let meta = fs::read(dir.join("index.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<IndexMeta>(&b).ok())?;
            Some((dir, name, meta))
        })
}

/// The search index as the build's companion: built and published with its generation,
/// with the configured embedding model.
#[derive(Debug)]
pub struct IndexCompanion {
    pub embed: EmbedSource,
}

impl crate::build::pipeline::Companion for IndexCompanion {
    fn build(
        &self,
        store: &Store,
        lock: &crate::build::store::BuildLock,
        fingerprint: &str,
        code_root: &Path,
    ) -> Result<()> {
        let graph = Graph::open(&store.graph_path(fingerprint))?;
        let embedder = embed::Embedder::load(&self.embed)?;
        SearchIndex::ensure_built(store, lock, fingerprint, &graph, code_root, &embedder)
            .map(|_| ())
    }
}

/// The searchable words of `tokens` (`text::identifier_tokens`), stopwords left out,
/// each once with how often it occurs, in the order they first occur.
fn occurrences(tokens: &str) -> Vec<(&str, u32)> {
    let mut at: HashMap<&str, usize> = HashMap::default();
    let mut words: Vec<(&str, u32)> = Vec::new();
    for token in tokens
        .split(' ')
        .filter(|t| !t.is_empty() && !text::is_stopword(t))
    {
        match at.entry(token) {
            std::collections::hash_map::Entry::Occupied(seen) => words[*seen.get()].1 += 1,
            std::collections::hash_map::Entry::Vacant(new) => {
                new.insert(words.len());
                words.push((token, 1));
            }
        }
    }
    words
}

/// Matches the documents with a word in `field` that starts with `prefix` and is longer
/// (`prefix.+`), scored as a constant like any automaton query. The words between
/// `prefix` and its successor (last byte + 1) are exactly those, for an ASCII
/// alphanumeric `prefix`; a range walks the term dictionary without compiling a regex
/// automaton, which cost a question ~0.3 ms per word and field.
fn longer_words(field: tantivy::schema::Field, prefix: &str) -> tantivy::query::RangeQuery {
    debug_assert!(prefix.bytes().all(|b| b.is_ascii_alphanumeric()) && !prefix.is_empty());
    let mut successor = prefix.as_bytes().to_vec();
    if let Some(last) = successor.last_mut() {
        *last += 1;
    }
    let successor = String::from_utf8(successor).unwrap_or_default();
    tantivy::query::RangeQuery::new(
        std::ops::Bound::Excluded(Term::from_field_text(field, prefix)),
        std::ops::Bound::Excluded(Term::from_field_text(field, &successor)),
    )
}

/// A tantivy failure while reading a loaded index: the index is damaged.
fn damaged(e: tantivy::TantivyError) -> AtlasError {
    AtlasError::SearchCorrupt {
        path: PathBuf::from("tantivy"),
        reason: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_word_is_one_clause_weighed_by_its_count() {
        let tokens = text::identifier_tokens("parse the Config; parse_config parses config");
        let words = occurrences(&tokens);
        // In order of first occurrence, stopwords left out, each counted.
        assert_eq!(words.first(), Some(&("parse", 2)), "{words:?}");
        assert!(!words.iter().any(|(w, _)| *w == "the"), "{words:?}");
        let total: u32 = words.iter().map(|(_, n)| n).sum();
        let plain = tokens
            .split(' ')
            .filter(|t| !t.is_empty() && !text::is_stopword(t))
            .count();
        assert_eq!(total as usize, plain);
        let mut distinct: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), words.len(), "{words:?}");
    }

    /// An in-memory index of `(kind, text)` documents, the text in the field of its kind
    /// (symbols' `body`, files' `text`), committed as one segment.
    fn index_of(documents: &[(&str, &str)]) -> Index {
        let (schema, fields) = index::schema();
        let index = Index::create_in_ram(schema);
        index::register_tokenizer(&index);
        let mut writer: tantivy::IndexWriter =
            index.writer_with_num_threads(1, 15_000_000).unwrap();
        for (kind, text) in documents {
            let mut document = TantivyDocument::default();
            document.add_text(fields.kind, *kind);
            let field = if *kind == index::KIND_FILE {
                fields.text
            } else {
                fields.body
            };
            document.add_text(field, *text);
            writer.add_document(document).unwrap();
        }
        writer.commit().unwrap();
        index
    }

    /// The scores of a one-field query over `words`, in document order, with the
    /// statistics of `kind` (`None`: tantivy's own, over every document).
    fn scores(
        index: &Index,
        field: tantivy::schema::Field,
        words: &[&str],
        kind: Option<&str>,
    ) -> Vec<f32> {
        let clauses: Vec<(Occur, Box<dyn Query>)> = words
            .iter()
            .map(|word| {
                let term = TermQuery::new(
                    Term::from_field_text(field, word),
                    IndexRecordOption::WithFreqs,
                );
                (Occur::Should, Box::new(term) as Box<dyn Query>)
            })
            .collect();
        let searcher = index.reader().unwrap().searcher();
        let (query, top) = (
            BooleanQuery::new(clauses),
            TopDocs::with_limit(10).order_by_score(),
        );
        let mut top = match kind {
            Some(kind) => {
                let statistics =
                    Statistics::of(&searcher, index::schema().1.kind, kind == index::KIND_FILE)
                        .unwrap();
                searcher.search_with_statistics_provider(&query, &top, &statistics)
            }
            None => searcher.search(&query, &top),
        }
        .unwrap();
        top.sort_by_key(|(_, address)| address.doc_id);
        top.into_iter().map(|(score, _)| score).collect()
    }

    /// `text_query`'s premise: a word's clause boosted by its count scores every document
    /// as one clause per occurrence summed.
    #[test]
    fn a_word_boosted_by_its_count_scores_as_its_repeated_clauses() {
        let index = index_of(&SYMBOLS);
        let body = index::schema().1.body;
        let searcher = index.reader().unwrap().searcher();
        let clause = |word: &str, boost: f32| -> (Occur, Box<dyn Query>) {
            let term = TermQuery::new(
                Term::from_field_text(body, word),
                IndexRecordOption::WithFreqs,
            );
            (
                Occur::Should,
                Box::new(BoostQuery::new(Box::new(term), boost)),
            )
        };
        let run = |clauses: Vec<(Occur, Box<dyn Query>)>| {
            let collector = TopDocs::with_limit(10).order_by_score();
            let mut top = searcher
                .search(&BooleanQuery::new(clauses), &collector)
                .unwrap();
            top.sort_by_key(|(_, address)| address.doc_id);
            top
        };
        let text = "parse header parse parse";
        let repeated = run(text.split(' ').map(|w| clause(w, 0.5)).collect());
        let tokens = text::identifier_tokens(text);
        let counted = run(occurrences(&tokens)
            .into_iter()
            .map(|(w, n)| clause(w, 0.5 * n as f32))
            .collect());
        assert_eq!(repeated.len(), 3, "{repeated:?}");
        assert_eq!(repeated.len(), counted.len());
        for ((a, at), (b, bt)) in repeated.iter().zip(&counted) {
            assert_eq!(at, bt);
            assert!((a - b).abs() <= 1e-5 * a.abs(), "{a} against {b}");
        }
    }

    const SYMBOLS: [(&str, &str); 3] = [
        ("symbol", "parse header value"),
        ("symbol", "parse body"),
        ("symbol", "render header header"),
    ];
    const FILES: [(&str, &str); 2] = [
        (
            "file",
            "parse header value parse body lots of other words here",
        ),
        ("file", "render header header and more"),
    ];

    #[test]
    fn file_documents_leave_the_other_kinds_scores_as_they_were_and_score_among_themselves() {
        let (_, fields) = index::schema();
        let words = ["parse", "header"];
        let symbols_alone = index_of(&SYMBOLS);
        let both = index_of(&[SYMBOLS.as_slice(), FILES.as_slice()].concat());
        let before = scores(&symbols_alone, fields.body, &words, None);
        assert_eq!(before.len(), 3);
        assert_eq!(
            scores(
                &symbols_alone,
                fields.body,
                &words,
                Some(index::KIND_SYMBOL)
            ),
            before
        );
        assert_eq!(
            scores(&both, fields.body, &words, Some(index::KIND_SYMBOL)),
            before
        );
        // Tantivy's own statistics count the file documents too: every score moves.
        let plain = scores(&both, fields.body, &words, None);
        assert!(plain.iter().zip(&before).all(|(a, b)| a != b), "{plain:?}");
        // Files are scored as an index of files alone would score them.
        let files_alone = index_of(&FILES);
        let files = scores(&files_alone, fields.text, &words, None);
        assert_eq!(files.len(), 2);
        assert_eq!(
            scores(&both, fields.text, &words, Some(index::KIND_FILE)),
            files
        );
    }
}
