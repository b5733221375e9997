//! The on-disk search index of one generation, under `<graph>/search/<fingerprint>/`:
//!
//! - `tantivy/`: one document per symbol, Markdown section and commit, with
//!   identifier-aware text fields; symbols and sections are keyed by `(file, local)` (the
//!   symbol's offset from its file node, the section's ordinal), which stay the same for
//!   an unchanged file across generations even when node ids shift;
//! - `vectors-<model>.bin`: unit vectors, one row per item (a node id, or `node_count +
//!   i` for section `i`), flat little-endian `f32`, mmapped;
//! - `sections.json`: the sections table; `index.json`: what was built and how.
//!
//! A new generation's index is derived from the previous one when it can be: documents
//! and vectors of unchanged files are carried over and only changed files are read,
//! tokenized and embedded again (SCIP-enriched graphs, a different index version or a
//! mostly-changed tree are rebuilt in full). Either way the result is written into a
//! temporary directory and renamed into place, so a killed build leaves no half index.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tantivy::schema::{
    Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{TextAnalyzer, WhitespaceTokenizer};
use tantivy::{Index, IndexWriter, TantivyDocument, Term};

use super::embed::Embedder;
use super::sources::{self, Commit, Section};
use super::text::identifier_tokens;
use crate::error::{AtlasError, IoContext, Result};
use crate::graph::ids::{FileId, NodeId};
use crate::graph::reader::Graph;
use crate::syntax::facts::SymbolKind;

mod vectors;

use vectors::write_vectors;
pub use vectors::{
    Location, VectorTable, VectorsDefect, pack_name, pack_row, parse_pack_header,
    parse_vector_table, vector_checksum_ok,
};

/// Bumped when documents or the layout change: older indexes are rebuilt, not updated.
/// v4: vectors behind a checksummed header, `index.json` lists every artifact with its
/// length and blake3. v5: vectors as a row table over packs shared between generations.
/// v6: a file document (`KIND_FILE`) per file with searchable symbols: its whole text.
pub const INDEX_VERSION: u32 = 6;
pub const TOKENIZER: &str = "atlas_ident";
/// The row table's magic (`vectors-<model>.bin`).
const VECTOR_MAGIC: &[u8; 8] = b"ATLASVEC";
/// A pack's magic (`vectors-<model>-<id>.pack`).
const PACK_MAGIC: &[u8; 8] = b"ATLASVPK";
/// Vector layout version (graph-schema/README.md, "Search index"). 3: a row table over
/// packs of rows (2: one file of rows).
pub const VECTOR_FORMAT: u32 = 3;
/// Both kinds of vector file: `magic(8) format(4) dim(4) rows(4) packs(4)
/// payload-length(8) blake3(payload)(32)`, then the payload. A pack's is its rows
/// (`rows × dim` little-endian `f32`, packs 0); a table's, its packs' ids (16 hex
/// characters each), then per row `item, pack, row in pack` (three `u32`).
const VECTOR_HEADER: usize = 64;
/// A pack id's bytes in a table.
const PACK_ID: usize = 16;
/// A table row's bytes.
const TABLE_ROW: usize = 12;
/// Lines of a symbol's body the embedding sees (a static model averages its tokens:
/// longer text blurs it).
const EXCERPT_LINES: usize = 12;
/// Lines of a function's body BM25 sees: identifiers and messages deep in a body are
/// evidence (an error message quoted in a bug report). Type containers keep the
/// excerpt: their members are documents of their own.
const BODY_LINES: usize = 300;
/// Beyond this share of changed files, a full rebuild is cheaper than an update.
const INCREMENTAL_MAX_CHANGED: f64 = 0.5;

pub const KIND_SYMBOL: &str = "symbol";
pub const KIND_SECTION: &str = "section";
pub const KIND_COMMIT: &str = "commit";
/// One document per source file that holds searchable symbols: its path and whole text.
pub const KIND_FILE: &str = "file";

/// A tantivy failure as Atlas reports it: the disk (an I/O error — a full disk is
/// `atlas-io`) or the index itself (`atlas-search-corrupt`), never bad input.
pub fn tantivy_error(dir: &Path, error: tantivy::TantivyError) -> AtlasError {
    use tantivy::TantivyError as T;
    use tantivy::directory::error::OpenWriteError;
    let io = match &error {
        T::IoError(e) => Some(e.kind()),
        T::OpenWriteError(OpenWriteError::IoError { io_error, .. }) => Some(io_error.kind()),
        _ => None,
    };
    match io {
        Some(kind) if kind != std::io::ErrorKind::NotFound => AtlasError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(kind, error.to_string()),
        },
        _ => AtlasError::SearchCorrupt {
            path: dir.to_path_buf(),
            reason: error.to_string(),
        },
    }
}

fn internal(error: impl std::fmt::Display) -> AtlasError {
    AtlasError::Internal {
        what: "search index",
        reason: error.to_string(),
    }
}

#[derive(Clone, Copy)]
pub struct Fields {
    pub kind: Field,
    pub file: Field,
    pub local: Field,
    pub title: Field,
    pub commit: Field,
    pub time: Field,
    pub files: Field,
    pub name: Field,
    pub qualified: Field,
    pub path: Field,
    pub signature: Field,
    pub doc: Field,
    pub body: Field,
    /// A file document's whole text (`KIND_FILE`).
    pub text: Field,
}

pub fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(TOKENIZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        kind: builder.add_text_field("kind", STRING | STORED),
        file: builder.add_text_field("file", STRING | STORED),
        local: builder.add_u64_field("local", STORED | INDEXED),
        title: builder.add_text_field("title", STORED),
        commit: builder.add_text_field("commit", STORED),
        time: builder.add_i64_field("time", STORED),
        files: builder.add_text_field("files", STORED),
        name: builder.add_text_field("name", text.clone()),
        qualified: builder.add_text_field("qualified", text.clone()),
        path: builder.add_text_field("path", text.clone()),
        signature: builder.add_text_field("signature", text.clone()),
        doc: builder.add_text_field("doc", text.clone()),
        body: builder.add_text_field("body", text.clone()),
        text: builder.add_text_field("text", text),
    };
    (builder.build(), fields)
}

pub fn register_tokenizer(index: &Index) {
    index.tokenizers().register(
        TOKENIZER,
        TextAnalyzer::builder(WhitespaceTokenizer::default()).build(),
    );
}

/// Symbols worth searching: everything but modules, files and impl blocks.
pub fn searchable(graph: &Graph, node: NodeId) -> bool {
    !matches!(
        graph.kind(node),
        SymbolKind::Module | SymbolKind::File | SymbolKind::Impl
    )
}

/// What `index.json` records about a built index.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct IndexMeta {
    pub version: u32,
    pub fingerprint: String,
    /// `full`, or `incremental` from the index of `base`.
    pub mode: String,
    pub base: Option<String>,
    /// Files whose documents were (re)built.
    pub files_indexed: usize,
    pub symbols: usize,
    pub sections: usize,
    pub commits: usize,
    /// Vectors computed (the rest were carried over).
    pub embedded: usize,
    /// The git HEAD whose history is indexed, if any.
    pub head: Option<String>,
    /// Why history is absent, when git was there but failed.
    pub history_error: Option<String>,
    /// Every file of the index (relative path → length and blake3), recorded by the
    /// build (files it shares with the base by hard link keep the base's entries): what
    /// readers check before trusting the index.
    #[serde(default)]
    pub artifacts: BTreeMap<String, Artifact>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Artifact {
    pub bytes: u64,
    pub blake3: String,
}

/// Files of an index directory that are not artifacts: its own metadata and markers, and
/// tantivy's lock files.
fn is_artifact(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    let lock = name.starts_with(".tantivy-") && name.ends_with(".lock");
    !(lock || matches!(name, "index.json" | "COMPLETE"))
}

/// The artifacts of a freshly built index: the vector files as their writer hashed them
/// (`written`), the files still linked from the base with the entries the base recorded (so damage the base
/// carried is not laundered into a fresh checksum), and the rest read and hashed.
fn artifacts_of(
    dir: &Path,
    linked: &BTreeMap<String, (Artifact, Inode)>,
    written: Vec<(String, Artifact)>,
) -> Result<BTreeMap<String, Artifact>> {
    let written: HashMap<String, Artifact> = written.into_iter().collect();
    let known = |relative: &str, path: &Path| -> Option<Artifact> {
        if let Some(artifact) = written.get(relative) {
            return Some(artifact.clone());
        }
        let (artifact, linked_inode) = linked.get(relative)?;
        // Still the base's file: tantivy renames new metadata over a name (same length
        // or not), so only the same inode vouches for the content.
        (inode(path).as_ref() == Some(linked_inode)).then(|| artifact.clone())
    };
    walk_artifacts(dir, &known)
}

/// A file's identity on its filesystem: `(device, inode)`.
type Inode = (u64, u64);

#[cfg(unix)]
fn inode(path: &Path) -> Option<Inode> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Elsewhere no identity is read, and every file is hashed again.
#[cfg(not(unix))]
fn inode(_path: &Path) -> Option<Inode> {
    None
}

/// Every artifact of `dir`: `known`'s entry where it has one, else read and hashed.
fn walk_artifacts(
    dir: &Path,
    known: &dyn Fn(&str, &Path) -> Option<Artifact>,
) -> Result<BTreeMap<String, Artifact>> {
    fn walk(
        dir: &Path,
        prefix: &str,
        known: &dyn Fn(&str, &Path) -> Option<Artifact>,
        out: &mut BTreeMap<String, Artifact>,
    ) -> Result<()> {
        for entry in fs::read_dir(dir).at(dir)? {
            let entry = entry.at(dir)?;
            let name = entry.file_name().to_string_lossy().to_string();
            let relative = format!("{prefix}{name}");
            let path = entry.path();
            if entry.file_type().at(&path)?.is_dir() {
                walk(&path, &format!("{relative}/"), known, out)?;
            } else if is_artifact(&relative) {
                let artifact = match known(&relative, &path) {
                    Some(artifact) => artifact,
                    None => {
                        let bytes = fs::read(&path).at(&path)?;
                        Artifact {
                            bytes: bytes.len() as u64,
                            blake3: checksum(&bytes),
                        }
                    }
                };
                out.insert(relative, artifact);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(dir, "", known, &mut out)?;
    Ok(out)
}

/// Damage a reader can see cheaply: an artifact missing, or of another length.
fn check_lengths(dir: &Path, meta: &IndexMeta) -> Result<()> {
    lengths(dir, meta).map_err(|reason| damaged(dir, reason))
}

/// The index in `dir` is damaged (`atlas-search-corrupt`).
fn damaged(dir: &Path, reason: String) -> AtlasError {
    AtlasError::SearchCorrupt {
        path: dir.to_path_buf(),
        reason,
    }
}

fn lengths(dir: &Path, meta: &IndexMeta) -> std::result::Result<(), String> {
    if meta.artifacts.is_empty() {
        return Err("index.json lists no artifacts".into());
    }
    for (relative, artifact) in &meta.artifacts {
        match fs::metadata(dir.join(relative)) {
            Ok(m) if m.len() == artifact.bytes => {}
            Ok(m) => {
                return Err(format!(
                    "{relative} is {} bytes, the index recorded {}",
                    m.len(),
                    artifact.bytes
                ));
            }
            Err(e) => return Err(format!("{relative}: {e}")),
        }
    }
    Ok(())
}

/// Every artifact byte against its recorded blake3 (what `atlas build` checks before it
/// trusts an existing index).
pub fn verify(dir: &Path, meta: &IndexMeta) -> Result<()> {
    verify_where(dir, meta, |_| true)
}

/// `verify` for the artifacts `which` selects.
pub fn verify_where(dir: &Path, meta: &IndexMeta, which: impl Fn(&str) -> bool) -> Result<()> {
    check_lengths(dir, meta)?;
    for (relative, artifact) in meta.artifacts.iter().filter(|(name, _)| which(name)) {
        let path = dir.join(relative);
        let file = fs::File::open(&path).map_err(|e| {
            // A file this process may not read is not damage (nor would a rebuild by it
            // help): an I/O error naming it.
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                AtlasError::io(&path, e)
            } else {
                damaged(dir, format!("{relative}: {e}"))
            }
        })?;
        // SAFETY: a finished index is never modified (written once, renamed into place);
        // the mapping lives only for this hash.
        let bytes = unsafe { memmap2::Mmap::map(&file) }
            .map_err(|e| damaged(dir, format!("{relative}: {e}")))?;
        if checksum(&bytes) != artifact.blake3 {
            return Err(damaged(
                dir,
                format!("{relative} does not match its checksum"),
            ));
        }
    }
    Ok(())
}

/// blake3 of `bytes` as hex, on every core for large inputs.
pub fn checksum(bytes: &[u8]) -> String {
    hash(bytes).to_hex().to_string()
}

/// blake3 of `bytes`, on every core for large inputs.
fn hash(bytes: &[u8]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    if bytes.len() > 1 << 20 {
        hasher.update_rayon(bytes);
    } else {
        hasher.update(bytes);
    }
    hasher.finalize()
}

/// The previous generation's index an update starts from.
pub struct Base<'g> {
    pub dir: PathBuf,
    pub fingerprint: String,
    pub graph: &'g Graph,
    pub meta: IndexMeta,
}

impl Base<'_> {
    /// Hard-links the base's artifact `relative` into `dir` and records the entry the
    /// base has for it in `linked`; copies it where links are refused (some
    /// filesystems), and the copy is hashed with the new files.
    fn share(
        &self,
        relative: &str,
        dir: &Path,
        linked: &mut BTreeMap<String, (Artifact, Inode)>,
    ) -> Result<()> {
        let (from, target) = (self.dir.join(relative), dir.join(relative));
        if fs::hard_link(&from, &target).is_err() {
            fs::copy(&from, &target).at(&from)?;
        } else if let (Some(artifact), Some(identity)) =
            (self.meta.artifacts.get(relative), inode(&target))
        {
            linked.insert(relative.to_string(), (artifact.clone(), identity));
        }
        Ok(())
    }
}

/// `(kind, file, local)`: a document's identity that survives generations.
type Key<'a> = (&'static str, &'a str, u32);

/// The file text when it still matches the generation; stale or unreadable files give
/// `None` (their symbols are indexed by name only).
fn current_text(graph: &Graph, root: &Path, file: FileId) -> Option<String> {
    let meta = graph.file(file)?;
    let bytes = crate::source::read(root, graph.str(meta.path()), meta.size.to_native()).ok()?;
    (blake3::hash(&bytes).as_bytes() == &meta.hash)
        .then(|| String::from_utf8(bytes).ok())
        .flatten()
}

/// The text of one symbol's parts.
#[derive(Default)]
struct SymbolText {
    signature: String,
    doc: String,
    /// The first `EXCERPT_LINES` lines.
    body: String,
    /// What BM25 indexes: up to `BODY_LINES` lines of a function, else the excerpt.
    full_body: String,
}

fn symbol_text(graph: &Graph, text: Option<&str>, node: NodeId) -> SymbolText {
    let Some(text) = text else {
        return SymbolText::default();
    };
    let record = graph.node(node);
    let slice = |span: &crate::graph::data::ArchivedSpanRecord| {
        text.get(span.start_byte.to_native() as usize..span.end_byte.to_native() as usize)
            .unwrap_or("")
    };
    let has_doc = record.flags & crate::graph::data::FLAG_HAS_DOC != 0;
    SymbolText {
        signature: slice(&record.signature).to_string(),
        doc: if has_doc {
            slice(&record.doc).to_string()
        } else {
            String::new()
        },
        body: slice(&record.span)
            .lines()
            .take(EXCERPT_LINES)
            .collect::<Vec<_>>()
            .join("\n"),
        full_body: if graph.kind(node).is_type_container() {
            String::new()
        } else {
            slice(&record.span)
                .lines()
                .take(BODY_LINES)
                .collect::<Vec<_>>()
                .join("\n")
        },
    }
}

/// Searchable nodes per file, in node order.
fn nodes_by_file(graph: &Graph) -> Vec<Vec<NodeId>> {
    let mut out = vec![Vec::new(); graph.file_count()];
    for node in graph.nodes() {
        let file = graph.node(node).file();
        if !file.is_none()
            && searchable(graph, node)
            && let Some(list) = out.get_mut(file.index())
        {
            list.push(node);
        }
    }
    out
}

/// A node's offset from its file node: stable while the file's content is.
pub fn local_of(graph: &Graph, node: NodeId) -> Option<(FileId, u32)> {
    let file = graph.node(node).file();
    let record = graph.file(file)?;
    Some((file, node.0.checked_sub(record.node().0)?))
}

/// Whether symbols can be keyed by offset: SCIP-added symbols are appended after every
/// file's definitions, so their offsets are not stable.
fn offsets_are_stable(graph: &Graph) -> bool {
    graph.nodes().all(|n| graph.node(n).scip_symbol().is_none())
}

/// Repository path → file index: paths borrowed from the graph for one search, or owned
/// by a loaded index that keeps its lookup (`owned_file_lookup`).
pub type FileLookup<'g> = rustc_hash::FxHashMap<std::borrow::Cow<'g, str>, FileId>;

/// Every file by its path; built for each search, so hashed cheaply (the paths are the
/// repository's, not an adversary's).
pub fn file_lookup(graph: &Graph) -> FileLookup<'_> {
    let mut files =
        FileLookup::with_capacity_and_hasher(graph.file_count(), rustc_hash::FxBuildHasher);
    files.extend(graph.files().map(|f| (graph.file_path(f).into(), f)));
    files
}

/// `file_lookup` with its paths copied, for a loaded index to keep beside its graph.
pub fn owned_file_lookup(graph: &Graph) -> FileLookup<'static> {
    file_lookup(graph)
        .into_iter()
        .map(|(path, file)| (path.into_owned().into(), file))
        .collect()
}

/// What an update from `base` re-indexes: `(changed or added files, removed paths)`;
/// `None` when a full build is due (another index version, SCIP-added symbols, or most
/// files changed).
fn update_plan(graph: &Graph, base: &Base) -> Option<(Vec<FileId>, Vec<String>)> {
    if base.meta.version != INDEX_VERSION
        || !offsets_are_stable(graph)
        || !offsets_are_stable(base.graph)
    {
        return None;
    }
    let (old, new) = (file_lookup(base.graph), file_lookup(graph));
    let hash = |g: &Graph, f: FileId| g.file(f).map(|r| r.hash);
    let changed: Vec<FileId> = graph
        .files()
        .filter(|&f| {
            old.get(graph.file_path(f))
                .is_none_or(|&o| hash(base.graph, o) != hash(graph, f))
        })
        .collect();
    let removed: Vec<String> = old
        .keys()
        .filter(|p| !new.contains_key(*p))
        .map(|p| p.to_string())
        .collect();
    let limit = INCREMENTAL_MAX_CHANGED * new.len().max(1) as f64;
    ((changed.len() + removed.len()) as f64 <= limit).then_some((changed, removed))
}

/// Builds the index of `graph` into `dir` (a fresh temporary directory), from `base`
/// when given and usable.
pub fn build(
    dir: &Path,
    fingerprint: &str,
    graph: &Graph,
    root: &Path,
    embedder: &Embedder,
    base: Option<Base>,
) -> Result<IndexMeta> {
    // Which files need their documents (re)built: all of them unless an update applies.
    let plan = base.as_ref().and_then(|b| update_plan(graph, b));
    let (base, changed, removed) = match plan {
        Some((changed, removed)) => (base, changed, removed),
        None => (None, graph.files().collect(), Vec::new()),
    };
    let changed_set: HashSet<FileId> = changed.iter().copied().collect();

    let by_file = nodes_by_file(graph);
    // Sections of every Markdown file (the table is rewritten each generation; only
    // changed files' sections are re-indexed).
    let mut sections: Vec<Section> = Vec::new();
    let mut texts: HashMap<FileId, Option<String>> = HashMap::new();
    for f in graph.files() {
        let path = graph.file_path(f);
        if !sources::is_markdown(path) {
            continue;
        }
        let text = current_text(graph, root, f);
        if let Some(text) = &text {
            sections.extend(sources::markdown_sections(path, text));
        }
        texts.insert(f, text);
    }

    let tantivy_dir = dir.join("tantivy");
    // The base's artifacts this index shares by hard link, with the entries the base
    // recorded for them.
    let mut linked: BTreeMap<String, (Artifact, Inode)> = BTreeMap::new();
    let index = match &base {
        Some(b) => {
            fs::create_dir_all(&tantivy_dir).at(&tantivy_dir)?;
            let from = b.dir.join("tantivy");
            for entry in fs::read_dir(&from).at(&from)? {
                let entry = entry.at(&from)?;
                if entry.file_type().at(&from)?.is_file() {
                    let name = entry.file_name();
                    if name.to_string_lossy().starts_with(".tantivy") {
                        continue; // lock files
                    }
                    // Shared: tantivy never writes a file it did not create
                    // (`open_write` is create-new, `atomic_write` renames a temporary
                    // file over the name), so the base's copy cannot change under it.
                    b.share(
                        &format!("tantivy/{}", name.to_string_lossy()),
                        dir,
                        &mut linked,
                    )?;
                }
            }
            Index::open_in_dir(&tantivy_dir).map_err(|e| tantivy_error(&tantivy_dir, e))?
        }
        None => {
            let (schema, _) = schema();
            fs::create_dir_all(&tantivy_dir).at(&tantivy_dir)?;
            Index::create_in_dir(&tantivy_dir, schema)
                .map_err(|e| tantivy_error(&tantivy_dir, e))?
        }
    };
    register_tokenizer(&index);
    let (_, fields) = schema();
    let mut writer: IndexWriter = index
        .writer_with_num_threads(1, 50_000_000)
        .map_err(|e| tantivy_error(dir, e))?;
    for path in removed
        .iter()
        .map(String::as_str)
        .chain(changed.iter().map(|&f| graph.file_path(f)))
    {
        writer.delete_term(Term::from_field_text(fields.file, path));
    }

    for &f in &changed {
        let nodes = &by_file[f.index()];
        if nodes.is_empty() {
            continue;
        }
        let text = match texts.get(&f) {
            Some(text) => text.clone(),
            None => current_text(graph, root, f),
        };
        let path = graph.file_path(f);
        // The file's whole text, for files' BM25 evidence (`SearchIndex::files_by_text`):
        // symbols' documents leave out module-level code and weigh a file's words by
        // symbol, not by file.
        if let Some(text) = text.as_deref() {
            let mut document = TantivyDocument::default();
            document.add_text(fields.kind, KIND_FILE);
            document.add_text(fields.file, path);
            document.add_text(fields.text, identifier_tokens(path));
            document.add_text(fields.text, identifier_tokens(text));
            writer
                .add_document(document)
                .map_err(|e| tantivy_error(dir, e))?;
        }
        for &node in nodes {
            let Some((_, local)) = local_of(graph, node) else {
                continue;
            };
            let record = graph.node(node);
            let parts = symbol_text(graph, text.as_deref(), node);
            let mut document = TantivyDocument::default();
            document.add_text(fields.kind, KIND_SYMBOL);
            document.add_text(fields.file, path);
            document.add_u64(fields.local, u64::from(local));
            document.add_text(fields.name, identifier_tokens(graph.str(record.name())));
            document.add_text(
                fields.qualified,
                identifier_tokens(graph.str(record.qualified())),
            );
            document.add_text(fields.path, identifier_tokens(path));
            document.add_text(fields.signature, identifier_tokens(&parts.signature));
            document.add_text(fields.doc, identifier_tokens(&parts.doc));
            let body = if parts.full_body.is_empty() {
                &parts.body
            } else {
                &parts.full_body
            };
            document.add_text(fields.body, identifier_tokens(body));
            writer
                .add_document(document)
                .map_err(|e| tantivy_error(dir, e))?;
        }
    }
    let changed_paths: HashSet<&str> = changed.iter().map(|&f| graph.file_path(f)).collect();
    for section in sections
        .iter()
        .filter(|s| changed_paths.contains(s.path.as_str()))
    {
        let mut document = TantivyDocument::default();
        document.add_text(fields.kind, KIND_SECTION);
        document.add_text(fields.file, &section.path);
        document.add_u64(fields.local, u64::from(section.ordinal));
        document.add_text(fields.title, &section.heading_path);
        document.add_text(fields.name, identifier_tokens(&section.title));
        document.add_text(fields.qualified, identifier_tokens(&section.heading_path));
        document.add_text(fields.path, identifier_tokens(&section.path));
        document.add_text(fields.body, identifier_tokens(&section.body));
        writer
            .add_document(document)
            .map_err(|e| tantivy_error(dir, e))?;
    }

    // History: re-read only when HEAD moved (or the base had none).
    let indexed: HashSet<&str> = graph.files().map(|f| graph.file_path(f)).collect();
    let mut head = None;
    let mut history_error = None;
    let mut commits = base.as_ref().map_or(0, |b| b.meta.commits);
    match sources::git_history(root, &indexed) {
        Ok(Some((new_head, history))) => {
            let same = base
                .as_ref()
                .is_some_and(|b| b.meta.head.as_deref() == Some(new_head.as_str()));
            if !same {
                writer.delete_term(Term::from_field_text(fields.kind, KIND_COMMIT));
                commits = history.len();
                for commit in &history {
                    writer
                        .add_document(commit_document(&fields, commit))
                        .map_err(|e| tantivy_error(dir, e))?;
                }
            }
            head = Some(new_head);
        }
        Ok(None) => {
            writer.delete_term(Term::from_field_text(fields.kind, KIND_COMMIT));
            commits = 0;
        }
        Err(reason) => {
            writer.delete_term(Term::from_field_text(fields.kind, KIND_COMMIT));
            commits = 0;
            history_error = Some(reason);
        }
    }
    writer.commit().map_err(|e| tantivy_error(dir, e))?;
    writer
        .wait_merging_threads()
        .map_err(|e| tantivy_error(dir, e))?;

    let vectors = write_vectors(
        dir,
        graph,
        root,
        embedder,
        &by_file,
        &sections,
        &changed_set,
        base.as_ref(),
        &mut texts,
        &mut linked,
    )?;
    let table = serde_json::to_vec(&sections).map_err(internal)?;
    let table_path = dir.join("sections.json");
    fs::write(&table_path, table).at(&table_path)?;
    let meta = IndexMeta {
        version: INDEX_VERSION,
        fingerprint: fingerprint.to_string(),
        mode: if base.is_some() {
            "incremental"
        } else {
            "full"
        }
        .into(),
        base: base.as_ref().map(|b| b.fingerprint.clone()),
        files_indexed: changed.len(),
        symbols: by_file.iter().map(Vec::len).sum(),
        sections: sections.len(),
        commits,
        embedded: vectors.embedded,
        head,
        history_error,
        artifacts: artifacts_of(dir, &linked, vectors.written)?,
    };
    let meta_path = dir.join("index.json");
    fs::write(
        &meta_path,
        serde_json::to_vec_pretty(&meta).map_err(internal)?,
    )
    .at(&meta_path)?;
    share_as(&dir.join("tantivy"), &meta_path)?;
    Ok(meta)
}

/// Tantivy writes `meta.json` and `.managed.json` through temporary files that only
/// their owner may read; every other file of the index is as readable as the umask lets
/// a new file be. Those two are given the mode `model` (a file written here) has, so
/// that whoever may read the graph (another user, a CI cache restored elsewhere) may
/// search it too.
#[cfg(unix)]
fn share_as(tantivy_dir: &Path, model: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(model).at(model)?.permissions().mode() & 0o777;
    for name in ["meta.json", ".managed.json"] {
        let path = tantivy_dir.join(name);
        let Ok(metadata) = fs::metadata(&path) else {
            continue;
        };
        if metadata.permissions().mode() & 0o777 != mode {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).at(&path)?;
        }
    }
    Ok(())
}

#[cfg(not(unix))]
fn share_as(_tantivy_dir: &Path, _model: &Path) -> Result<()> {
    Ok(())
}

fn commit_document(fields: &Fields, commit: &Commit) -> TantivyDocument {
    let mut document = TantivyDocument::default();
    document.add_text(fields.kind, KIND_COMMIT);
    document.add_text(fields.commit, &commit.hash);
    document.add_i64(fields.time, commit.time);
    document.add_text(fields.files, commit.files.join("\n"));
    let subject = commit.message.lines().next().unwrap_or("");
    document.add_text(fields.title, subject);
    document.add_text(fields.doc, identifier_tokens(&commit.message));
    document.add_text(fields.path, identifier_tokens(&commit.files.join(" ")));
    document
}

/// tantivy's mmap directory for reading a finished, immutable index: no lock file (a
/// read-only graph directory stays searchable), no watcher, every write refused.
#[derive(Clone, Debug)]
pub struct ReadOnlyDirectory(tantivy::directory::MmapDirectory);

impl ReadOnlyDirectory {
    pub fn open(dir: &Path) -> Result<ReadOnlyDirectory> {
        tantivy::directory::MmapDirectory::open(dir)
            .map(ReadOnlyDirectory)
            .map_err(|e| AtlasError::SearchCorrupt {
                path: dir.to_path_buf(),
                reason: e.to_string(),
            })
    }
}

fn read_only_error() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::PermissionDenied,
        "a finished search index is read-only",
    )
}

impl tantivy::Directory for ReadOnlyDirectory {
    fn get_file_handle(
        &self,
        path: &Path,
    ) -> std::result::Result<
        std::sync::Arc<dyn tantivy::directory::FileHandle>,
        tantivy::directory::error::OpenReadError,
    > {
        self.0.get_file_handle(path)
    }

    fn delete(
        &self,
        path: &Path,
    ) -> std::result::Result<(), tantivy::directory::error::DeleteError> {
        Err(tantivy::directory::error::DeleteError::IoError {
            io_error: std::sync::Arc::new(read_only_error()),
            filepath: path.to_path_buf(),
        })
    }

    fn exists(
        &self,
        path: &Path,
    ) -> std::result::Result<bool, tantivy::directory::error::OpenReadError> {
        self.0.exists(path)
    }

    fn open_write(
        &self,
        path: &Path,
    ) -> std::result::Result<tantivy::directory::WritePtr, tantivy::directory::error::OpenWriteError>
    {
        Err(tantivy::directory::error::OpenWriteError::IoError {
            io_error: std::sync::Arc::new(read_only_error()),
            filepath: path.to_path_buf(),
        })
    }

    fn atomic_read(
        &self,
        path: &Path,
    ) -> std::result::Result<Vec<u8>, tantivy::directory::error::OpenReadError> {
        self.0.atomic_read(path)
    }

    fn atomic_write(&self, _path: &Path, _data: &[u8]) -> std::io::Result<()> {
        Err(read_only_error())
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        Ok(())
    }

    fn acquire_lock(
        &self,
        _lock: &tantivy::directory::Lock,
    ) -> std::result::Result<tantivy::directory::DirectoryLock, tantivy::directory::error::LockError>
    {
        // Nothing writes a finished index, so there is nothing to exclude.
        Ok(tantivy::directory::DirectoryLock::from(Box::new(())))
    }

    fn watch(
        &self,
        _callback: tantivy::directory::WatchCallback,
    ) -> tantivy::Result<tantivy::directory::WatchHandle> {
        Ok(tantivy::directory::WatchHandle::empty())
    }
}
