//! Hybrid search (SPEC §6, R-S-1..3): a BM25 arm (tantivy over identifier-aware tokens of
//! symbol names, qualified names, paths, signatures, docs and body excerpts) and a vector
//! arm (exact cosine over static embeddings), fused by reciprocal rank fusion
//! (`Σ 1/(60 + rank)`, ranks from 0), then a local lexical rerank (exact symbol matches
//! first; `ATLAS_RERANK=0` disables every reordering after RRF), dedup and `top_k`.
//!
//! The index is built lazily per generation under `<graph>/search/<fingerprint>/`, the
//! first time a search needs it (a `--frozen` read never builds it), and collected with
//! its generation.

pub mod embed;
pub mod signals;
pub mod text;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use serde::Serialize;
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, Query, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, STORED, Schema, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{TextAnalyzer, WhitespaceTokenizer};
use tantivy::{Index, IndexReader, TantivyDocument, Term, doc};

use crate::dump::node_label;
use crate::error::{AtlasError, IoContext, Result};
use crate::facts::SymbolKind;
use crate::graph::Graph;
use crate::store::Store;
use embed::Embedder;

pub const RRF_K: f64 = 60.0;
/// Candidates each arm contributes to fusion.
pub const POOL: usize = 50;
const TOKENIZER: &str = "atlas_ident";
const VECTOR_MAGIC: &[u8; 8] = b"ATLASVEC";
const EXCERPT_LINES: usize = 12;
/// Weight of a test-scope hit's fused score in the rerank (not in the reported `score`).
const TEST_PRIOR: f64 = 0.6;

fn search_error(reason: impl std::fmt::Display) -> AtlasError {
    AtlasError::InvalidInput {
        what: "search index",
        reason: reason.to_string(),
    }
}

struct Fields {
    node: Field,
    name: Field,
    qualified: Field,
    path: Field,
    signature: Field,
    doc: Field,
    body: Field,
}

fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        node: builder.add_u64_field("node", STORED),
        name: builder.add_text_field("name", text.clone()),
        qualified: builder.add_text_field("qualified", text.clone()),
        path: builder.add_text_field("path", text.clone()),
        signature: builder.add_text_field("signature", text.clone()),
        doc: builder.add_text_field("doc", text.clone()),
        body: builder.add_text_field("body", text),
    };
    (builder.build(), fields)
}

fn register_tokenizer(index: &Index) {
    index.tokenizers().register(
        TOKENIZER,
        TextAnalyzer::builder(WhitespaceTokenizer::default()).build(),
    );
}

/// Symbols worth searching: everything but modules, files and impl blocks.
fn searchable(graph: &Graph, node: u32) -> bool {
    !matches!(
        graph.kind(node),
        SymbolKind::Module | SymbolKind::File | SymbolKind::Impl
    )
}

/// The text of one symbol's parts, read from the current file when it still matches
/// the generation (stale files contribute names only).
struct SymbolText {
    signature: String,
    doc: String,
    body: String,
}

fn symbol_texts(graph: &Graph, root: &Path, nodes: &[u32]) -> Vec<SymbolText> {
    let mut files: HashMap<u32, Option<String>> = HashMap::new();
    nodes
        .iter()
        .map(|&node| {
            let record = graph.node(node);
            let file = record.file.to_native();
            let text = files.entry(file).or_insert_with(|| {
                let meta = graph.data().files.get(file as usize)?;
                let bytes = fs::read(root.join(graph.str(meta.path.to_native()))).ok()?;
                (blake3::hash(&bytes).as_bytes() == &meta.hash)
                    .then(|| String::from_utf8(bytes).ok())
                    .flatten()
            });
            let Some(text) = text.as_deref() else {
                return SymbolText {
                    signature: String::new(),
                    doc: String::new(),
                    body: String::new(),
                };
            };
            let slice = |start: u32, end: u32| {
                text.get(start as usize..end as usize)
                    .unwrap_or("")
                    .to_string()
            };
            let has_doc = record.flags & crate::graph::data::FLAG_HAS_DOC != 0;
            let span = &record.span;
            let body: String = text
                .get(span.start_byte.to_native() as usize..span.end_byte.to_native() as usize)
                .unwrap_or("")
                .lines()
                .take(EXCERPT_LINES)
                .collect::<Vec<_>>()
                .join("\n");
            SymbolText {
                signature: slice(
                    record.signature.start_byte.to_native(),
                    record.signature.end_byte.to_native(),
                ),
                doc: if has_doc {
                    slice(
                        record.doc.start_byte.to_native(),
                        record.doc.end_byte.to_native(),
                    )
                } else {
                    String::new()
                },
                body,
            }
        })
        .collect()
}

/// An open search index of one generation.
pub struct SearchIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    vectors: Option<Mmap>,
    dim: usize,
    rows: Vec<u32>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Hit {
    pub path: String,
    /// In-file qualified name (`Class.method`).
    pub symbol: String,
    pub kind: &'static str,
    /// 1-based, inclusive.
    pub lines: [u32; 2],
    /// The RRF score.
    pub score: f64,
    pub match_arms: Vec<&'static str>,
    /// Expansion reference: `path#Lstart-Lend@<8 hex of the file's blake3>`.
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(skip)]
    pub node: u32,
    /// Rank in each arm (`ARM_NAMES` order), from 0.
    #[serde(skip)]
    pub ranks: [Option<usize>; 3],
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchOutput {
    pub query: String,
    pub hits: Vec<Hit>,
    /// Candidates each arm returned before fusion.
    pub arms: ArmCounts,
    pub reranked: bool,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct ArmCounts {
    pub bm25: usize,
    pub vector: usize,
    pub graph: usize,
}

/// Arm names in fusion order; `Hit::ranks` is indexed the same way.
pub const ARM_NAMES: [&str; 3] = ["bm25", "vector", "graph"];

/// One candidate's fused score and its rank in each arm (from 0).
#[derive(Debug, Clone, Copy, Default)]
struct Fused {
    score: f64,
    ranks: [Option<usize>; 3],
}

/// Which arms run: all by default; `ATLAS_SEARCH_ARMS=bm25,vector` (any comma list of
/// `bm25`, `vector`, `graph`) runs a subset, for ablations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arms {
    pub bm25: bool,
    pub vector: bool,
    pub graph: bool,
}

impl Arms {
    pub fn from_env() -> Result<Arms> {
        match std::env::var("ATLAS_SEARCH_ARMS") {
            Ok(list) if !list.trim().is_empty() => Arms::parse(&list),
            _ => Ok(Arms {
                bm25: true,
                vector: true,
                graph: true,
            }),
        }
    }

    pub fn parse(list: &str) -> Result<Arms> {
        let mut arms = Arms {
            bm25: false,
            vector: false,
            graph: false,
        };
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "bm25" => arms.bm25 = true,
                "vector" => arms.vector = true,
                "graph" => arms.graph = true,
                other => {
                    return Err(AtlasError::InvalidInput {
                        what: "ATLAS_SEARCH_ARMS",
                        reason: format!(
                            "unknown arm `{other}` (expected a comma list of bm25, vector, graph)"
                        ),
                    });
                }
            }
        }
        Ok(arms)
    }
}

impl SearchIndex {
    fn dir(store: &Store, fingerprint: &str) -> PathBuf {
        store.dir().join("search").join(fingerprint)
    }

    /// Opens the generation's index if it exists.
    pub fn open(
        store: &Store,
        fingerprint: &str,
        embedder: &Embedder,
    ) -> Result<Option<SearchIndex>> {
        let dir = SearchIndex::dir(store, fingerprint);
        if !dir.join("COMPLETE").is_file() {
            return Ok(None);
        }
        SearchIndex::load(&dir, embedder).map(Some)
    }

    /// Opens the index, building it first when missing (takes the build lock).
    pub fn open_or_build(
        store: &Store,
        fingerprint: &str,
        graph: &Graph,
        root: &Path,
        embedder: &Embedder,
    ) -> Result<SearchIndex> {
        if let Some(index) = SearchIndex::open(store, fingerprint, embedder)? {
            return Ok(index);
        }
        let lock = store.lock(true)?;
        SearchIndex::ensure_built(store, &lock, fingerprint, graph, root, embedder)?;
        drop(lock);
        SearchIndex::load(&SearchIndex::dir(store, fingerprint), embedder)
    }

    /// Builds the generation's index unless it exists. The caller holds the build lock.
    pub fn ensure_built(
        store: &Store,
        _lock: &crate::store::BuildLock,
        fingerprint: &str,
        graph: &Graph,
        root: &Path,
        embedder: &Embedder,
    ) -> Result<()> {
        let dir = SearchIndex::dir(store, fingerprint);
        if dir.join("COMPLETE").is_file()
            && dir
                .join(format!("vectors-{}.bin", embedder.identity))
                .is_file()
        {
            return Ok(());
        }
        let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).at(&tmp)?;
        }
        fs::create_dir_all(tmp.join("tantivy")).at(&tmp)?;
        build(&tmp, graph, root, embedder)?;
        fs::write(tmp.join("COMPLETE"), fingerprint).at(&tmp)?;
        if dir.exists() {
            fs::remove_dir_all(&dir).at(&dir)?;
        }
        fs::rename(&tmp, &dir).at(&dir)?;
        collect_old(store, fingerprint);
        Ok(())
    }

    fn load(dir: &Path, embedder: &Embedder) -> Result<SearchIndex> {
        let index = Index::open_in_dir(dir.join("tantivy")).map_err(search_error)?;
        register_tokenizer(&index);
        let (_, fields) = schema();
        let reader = index.reader().map_err(search_error)?;
        let vectors_path = dir.join(format!("vectors-{}.bin", embedder.identity));
        let (vectors, rows) = match fs::File::open(&vectors_path) {
            Ok(file) => {
                // SAFETY: vector files are written once into a temporary directory and
                // renamed into place; they are never modified afterwards.
                let mmap = unsafe { Mmap::map(&file) }.at(&vectors_path)?;
                let rows = parse_vector_header(&mmap, embedder.dim).ok_or_else(|| {
                    AtlasError::GraphCorrupt {
                        path: vectors_path.clone(),
                        reason: "vector file header does not match the model".into(),
                    }
                })?;
                (Some(mmap), rows)
            }
            Err(_) => (None, Vec::new()),
        };
        Ok(SearchIndex {
            index,
            reader,
            fields,
            vectors,
            dim: embedder.dim,
            rows,
        })
    }

    fn bm25(&self, query: &str) -> Result<Vec<u32>> {
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
        for token in tokens
            .split(' ')
            .filter(|t| !t.is_empty() && !text::is_stopword(t))
        {
            for (field, boost) in boosts {
                let term = TermQuery::new(
                    Term::from_field_text(field, token),
                    IndexRecordOption::WithFreqs,
                );
                clauses.push((
                    Occur::Should,
                    Box::new(BoostQuery::new(Box::new(term), boost)),
                ));
            }
            // Partial identifiers (`search_hyb`, `EmbeddingEng`): a word is also a prefix
            // of a name's words.
            let plain = token.chars().all(|c| c.is_ascii_alphanumeric());
            if plain && token.len() >= 3 {
                for field in [self.fields.name, self.fields.qualified] {
                    if let Ok(prefix) =
                        tantivy::query::RegexQuery::from_pattern(&format!("{token}.+"), field)
                    {
                        clauses.push((
                            Occur::Should,
                            Box::new(BoostQuery::new(Box::new(prefix), 1.5)),
                        ));
                    }
                }
            }
        }
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let top = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(POOL).order_by_score(),
            )
            .map_err(search_error)?;
        let mut out = Vec::with_capacity(top.len());
        for (_, address) in top {
            let document: TantivyDocument = searcher.doc(address).map_err(search_error)?;
            if let Some(node) = document
                .get_first(self.fields.node)
                .and_then(|v| v.as_u64())
            {
                out.push(node as u32);
            }
        }
        Ok(out)
    }

    fn vector(&self, embedder: &Embedder, query: &str) -> Vec<u32> {
        let Some(mmap) = &self.vectors else {
            return Vec::new();
        };
        let q = embedder.embed(&[query.to_string()]);
        let offset = vector_data_offset(self.rows.len());
        let mut scored: Vec<(f32, u32)> = Vec::with_capacity(self.rows.len());
        for (row, &node) in self.rows.iter().enumerate() {
            let start = offset + row * self.dim * 4;
            let Some(bytes) = mmap.get(start..start + self.dim * 4) else {
                break;
            };
            let mut dot = 0.0f32;
            for (chunk, qv) in bytes.chunks_exact(4).zip(&q) {
                dot += f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]) * qv;
            }
            scored.push((dot, node));
        }
        let keep = POOL.min(scored.len());
        if keep == 0 {
            return Vec::new();
        }
        scored.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(keep);
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|(_, n)| n).collect()
    }

    /// Runs both arms, fuses, reranks, dedups and cuts to `top_k`.
    pub fn search(
        &self,
        graph: &Graph,
        embedder: &Embedder,
        query: &str,
        top_k: usize,
    ) -> Result<SearchOutput> {
        let _ = &self.index;
        let arms = Arms::from_env()?;
        let bm25 = if arms.bm25 {
            self.bm25(query)?
        } else {
            Vec::new()
        };
        let vector = if arms.vector {
            self.vector(embedder, query)
        } else {
            Vec::new()
        };
        let graph_arm = if arms.graph {
            signals::rank(graph, query, POOL)
        } else {
            Vec::new()
        };
        let mut fused: HashMap<u32, Fused> = HashMap::new();
        for (list, arm) in [(&bm25, 0), (&vector, 1), (&graph_arm, 2)] {
            for (rank, &node) in list.iter().enumerate() {
                let entry = fused.entry(node).or_default();
                entry.score += 1.0 / (RRF_K + rank as f64);
                entry.ranks[arm] = Some(rank);
            }
        }
        let mut ranked: Vec<(u32, Fused)> = fused.into_iter().collect();
        ranked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(a.0.cmp(&b.0)));
        let rerank = std::env::var("ATLAS_RERANK").map_or(true, |v| v != "0");
        if rerank {
            // Tests are rarely what a search is after: they keep their place among
            // themselves but weigh less against the code they test.
            let prior = |node: u32, score: f64| {
                let test_file = graph
                    .file_of(node)
                    .is_some_and(|f| f.class == crate::inventory::FileClass::Test as u8);
                if test_file || graph.node(node).flags & crate::graph::data::FLAG_TEST_SCOPE != 0 {
                    score * TEST_PRIOR
                } else {
                    score
                }
            };
            ranked.sort_by(|a, b| {
                prior(b.0, b.1.score)
                    .total_cmp(&prior(a.0, a.1.score))
                    .then(a.0.cmp(&b.0))
            });
            // Exact symbol matches stay first; for a one-identifier query, names that
            // contain it come next (`where_clause` ⊂ `_build_where_clause`); RRF order
            // otherwise (the sort is stable).
            // Only short, identifier-like queries: in prose (an issue text) some word
            // always equals some name, and promoting it would drown the fused ranking.
            let words: Vec<String> = query.split_whitespace().map(|w| w.to_lowercase()).collect();
            let words: Vec<String> = if words.len() <= 3 { words } else { Vec::new() };
            let squash = |s: &str| -> String {
                s.chars()
                    .filter(|c| c.is_alphanumeric())
                    .flat_map(char::to_lowercase)
                    .collect()
            };
            let single = (words.len() == 1)
                .then(|| squash(&words[0]))
                .filter(|w| w.len() >= 3);
            let tier = |node: u32| {
                let record = graph.node(node);
                let name = graph.str(record.name.to_native()).to_lowercase();
                let qualified = graph.str(record.qualified.to_native()).to_lowercase();
                if words.iter().any(|w| *w == name || *w == qualified) {
                    0
                } else if single
                    .as_ref()
                    .is_some_and(|w| squash(&name).contains(w.as_str()))
                {
                    1
                } else {
                    2
                }
            };
            // Within the promoted tiers the lexical (BM25) rank decides; the rest keep RRF
            // order (the sort is stable).
            ranked.sort_by_key(|r| {
                let t = tier(r.0);
                (
                    t,
                    if t < 2 {
                        r.1.ranks[0].unwrap_or(usize::MAX)
                    } else {
                        0
                    },
                )
            });
        }
        let mut seen = std::collections::HashSet::new();
        let mut hits = Vec::new();
        for (node, fused) in ranked {
            let label = node_label(graph, node);
            if !seen.insert(label) {
                continue;
            }
            let record = graph.node(node);
            let (path, hash) = graph
                .file_of(node)
                .map(|f| {
                    (
                        graph.str(f.path.to_native()).to_string(),
                        crate::graph::hex(&f.hash[..4]),
                    )
                })
                .unwrap_or_default();
            let lines = [
                record.span.start_line.to_native() + 1,
                record.span.end_line.to_native() + 1,
            ];
            let match_arms = ARM_NAMES
                .iter()
                .zip(fused.ranks)
                .filter(|(_, rank)| rank.is_some())
                .map(|(name, _)| *name)
                .collect();
            hits.push(Hit {
                reference: format!("{path}#L{}-L{}@{hash}", lines[0], lines[1]),
                path,
                symbol: graph.str(record.qualified.to_native()).to_string(),
                kind: graph.kind(node).as_str(),
                lines,
                score: (fused.score * 1e6).round() / 1e6,
                match_arms,
                node,
                ranks: fused.ranks,
            });
            if hits.len() >= top_k {
                break;
            }
        }
        Ok(SearchOutput {
            query: query.to_string(),
            hits,
            arms: ArmCounts {
                bm25: bm25.len(),
                vector: vector.len(),
                graph: graph_arm.len(),
            },
            reranked: rerank,
        })
    }
}

fn vector_data_offset(rows: usize) -> usize {
    // magic, dim, rows, then the row → node table, padded to 8 bytes.
    let header = 8 + 4 + 4 + rows * 4;
    header.div_ceil(8) * 8
}

fn parse_vector_header(bytes: &[u8], dim: usize) -> Option<Vec<u32>> {
    if bytes.len() < 16 || &bytes[..8] != VECTOR_MAGIC {
        return None;
    }
    let u32_at = |at: usize| {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if u32_at(8)? as usize != dim {
        return None;
    }
    let rows = u32_at(12)? as usize;
    if bytes.len() < vector_data_offset(rows) + rows * dim * 4 {
        return None;
    }
    (0..rows).map(|r| u32_at(16 + r * 4)).collect()
}

fn build(dir: &Path, graph: &Graph, root: &Path, embedder: &Embedder) -> Result<()> {
    let (schema, fields) = schema();
    let index = Index::create_in_dir(dir.join("tantivy"), schema).map_err(search_error)?;
    register_tokenizer(&index);
    let mut writer = index
        .writer_with_num_threads(1, 50_000_000)
        .map_err(search_error)?;
    let nodes: Vec<u32> = (0..graph.node_count() as u32)
        .filter(|&n| searchable(graph, n))
        .collect();
    let texts = symbol_texts(graph, root, &nodes);
    let mut embed_inputs = Vec::with_capacity(nodes.len());
    for (&node, text) in nodes.iter().zip(&texts) {
        let record = graph.node(node);
        let name = graph.str(record.name.to_native());
        let qualified = graph.str(record.qualified.to_native());
        let path = graph
            .file_of(node)
            .map_or("", |f| graph.str(f.path.to_native()));
        writer
            .add_document(doc!(
                fields.node => u64::from(node),
                fields.name => text::identifier_tokens(name),
                fields.qualified => text::identifier_tokens(qualified),
                fields.path => text::identifier_tokens(path),
                fields.signature => text::identifier_tokens(&text.signature),
                fields.doc => text::identifier_tokens(&text.doc),
                fields.body => text::identifier_tokens(&text.body),
            ))
            .map_err(search_error)?;
        let words = crate::graph::names::split_identifier(qualified).join(" ");
        embed_inputs.push(format!(
            "{words} {} {} {}",
            text.signature, text.doc, text.body
        ));
    }
    writer.commit().map_err(search_error)?;
    writer.wait_merging_threads().map_err(search_error)?;

    let vectors = embedder.embed(&embed_inputs);
    let mut bytes = Vec::with_capacity(vector_data_offset(nodes.len()) + vectors.len() * 4);
    bytes.extend_from_slice(VECTOR_MAGIC);
    bytes.extend_from_slice(&(embedder.dim as u32).to_le_bytes());
    bytes.extend_from_slice(&(nodes.len() as u32).to_le_bytes());
    for &node in &nodes {
        bytes.extend_from_slice(&node.to_le_bytes());
    }
    bytes.resize(vector_data_offset(nodes.len()), 0);
    for value in vectors {
        bytes.extend_from_slice(&value.to_le_bytes());
    }
    let path = dir.join(format!("vectors-{}.bin", embedder.identity));
    fs::write(&path, bytes).at(&path)
}

/// Removes search indexes of generations that no longer exist.
fn collect_old(store: &Store, keep: &str) {
    let Ok(entries) = fs::read_dir(store.dir().join("search")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name != keep && !store.generation_dir(&name).is_dir() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Response profiles of `atlas search` (R-S-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ResponseProfile {
    /// Every field of every hit.
    Full,
    /// Fewer fields per hit (path, symbol, lines, ref), conservative dedup, a budget at
    /// 70% of the ceiling.
    Compact,
}

impl ResponseProfile {
    pub fn as_str(self) -> &'static str {
        match self {
            ResponseProfile::Full => "full",
            ResponseProfile::Compact => "compact",
        }
    }

    /// The per-call choice, else `ATLAS_CONTEXT_OPTIMIZATION=1` makes compact the default.
    pub fn resolve(flag: Option<ResponseProfile>) -> ResponseProfile {
        flag.unwrap_or_else(|| {
            if std::env::var("ATLAS_CONTEXT_OPTIMIZATION").is_ok_and(|v| v == "1") {
                ResponseProfile::Compact
            } else {
                ResponseProfile::Full
            }
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct CompactHit {
    pub path: String,
    pub symbol: String,
    pub lines: [u32; 2],
    #[serde(rename = "ref")]
    pub reference: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Budget {
    /// `tokens` (exact, with `tokenizer`) or `chars` (fallback).
    pub mode: &'static str,
    pub tokenizer: String,
    /// The ceiling in tokens; `null` when counting fell back to characters.
    pub max_tokens: Option<usize>,
    /// The ceiling in the counting mode's units.
    pub ceiling: usize,
    /// What this response was allowed (70% of the ceiling in compact).
    pub budget: usize,
    pub used: usize,
    /// Whole results cut from the tail to fit.
    pub cut: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchResponse {
    pub query: String,
    pub profile: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hits: Option<Vec<Hit>>,
    #[serde(rename = "hits", skip_serializing_if = "Option::is_none")]
    pub compact_hits: Option<Vec<CompactHit>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arms: Option<ArmCounts>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reranked: Option<bool>,
    /// Present when results were cut to fit the budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

impl SearchResponse {
    /// Hits in the response, whichever profile shaped it.
    pub fn hit_count(&self) -> usize {
        self.hits.as_ref().map_or(0, Vec::len) + self.compact_hits.as_ref().map_or(0, Vec::len)
    }
}

/// Shapes a search result for a profile and applies the response ceiling (R-OBS-2):
/// whole results are cut from the tail until the JSON fits.
pub fn respond(
    output: SearchOutput,
    profile: ResponseProfile,
    max_tokens: usize,
) -> SearchResponse {
    let counter = crate::tokens::counter();
    let exact = counter.mode() == "tokens";
    // Characters stand in for tokens at ~4 per token when counting is unavailable.
    let ceiling = if exact { max_tokens } else { max_tokens * 4 };
    let budget = match profile {
        ResponseProfile::Full => ceiling,
        ResponseProfile::Compact => ceiling * 7 / 10,
    };
    let mut response = match profile {
        ResponseProfile::Full => SearchResponse {
            query: output.query,
            profile: "full",
            hits: Some(output.hits),
            compact_hits: None,
            arms: Some(output.arms),
            reranked: Some(output.reranked),
            budget: None,
        },
        ResponseProfile::Compact => {
            // Conservative dedup: a hit inside an earlier hit's lines of the same file.
            let mut kept: Vec<CompactHit> = Vec::new();
            for hit in output.hits {
                let inside = kept.iter().any(|k| {
                    k.path == hit.path && k.lines[0] <= hit.lines[0] && hit.lines[1] <= k.lines[1]
                });
                if !inside {
                    kept.push(CompactHit {
                        path: hit.path,
                        symbol: hit.symbol,
                        lines: hit.lines,
                        reference: hit.reference,
                    });
                }
            }
            SearchResponse {
                query: output.query,
                profile: "compact",
                hits: None,
                compact_hits: Some(kept),
                arms: None,
                reranked: None,
                budget: None,
            }
        }
    };
    let measure = |r: &SearchResponse| counter.count(&serde_json::to_string(r).unwrap_or_default());
    let mut cut = 0;
    loop {
        let used = measure(&response);
        let remaining = response.hits.as_ref().map_or(0, Vec::len)
            + response.compact_hits.as_ref().map_or(0, Vec::len);
        if used <= budget || remaining == 0 {
            if cut > 0 {
                response.budget = Some(Budget {
                    mode: counter.mode(),
                    tokenizer: counter.name.clone(),
                    max_tokens: exact.then_some(max_tokens),
                    ceiling,
                    budget,
                    used,
                    cut,
                });
            }
            return response;
        }
        if let Some(hits) = response.hits.as_mut() {
            hits.pop();
        }
        if let Some(hits) = response.compact_hits.as_mut() {
            hits.pop();
        }
        cut += 1;
    }
}
