//! Stage 4: answers over a committed graph — query intent, profiles, the context
//! compiler, hybrid search, ref expansion, the inspection helpers and token counting.

pub mod context;
pub mod crates;
pub mod demangle;
pub mod environment;
pub mod expand;
pub mod glossary;
pub mod inspect;
pub mod intent;
pub mod profile;
pub mod search;
pub mod tokens;

/// Longest query any surface accepts (CLI, daemon, MCP): beyond it the text is not a
/// question but a document, and the lexical arm's scorers grow with its distinct words.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

/// `atlas-invalid-input` for a query longer than `MAX_QUERY_BYTES`.
pub fn check_query_length(query: &str) -> Result<(), crate::error::AtlasError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(crate::error::AtlasError::InvalidInput {
            what: "query",
            reason: format!(
                "{} bytes; a query is at most {MAX_QUERY_BYTES} bytes",
                query.len()
            ),
        });
    }
    Ok(())
}

/// From now on this process keeps what later answers can reuse: each generation's graph
/// mapping validated once, its loaded search index, and the source texts projection
/// verified (up to `source_bytes`, `context::project::KEPT_BYTES` unless a memory budget
/// asks for less). For long-lived processes (the daemon, the MCP server); one-shot
/// commands never turn it on.
pub fn keep_warm(source_bytes: usize) {
    crate::graph::reader::reuse_validated_mappings();
    search::reuse_loaded_indexes();
    context::project::keep_verified_sources(source_bytes);
}

/// Loads what a warm process's first question needs, for a server that starts before its
/// first request: the embedding model, the committed graph (validated, kept, its parts'
/// string filters built), and that generation's search index with what its first query
/// builds (the int8 vector copy, the documents' items), by one frozen query that nobody
/// sees. It only reads: a missing graph or index is left to the first request,
/// which builds or reports it, and a newer generation published meanwhile is loaded by
/// the request that reads it. Call after `keep_warm`, which keeps these for later answers.
pub fn warm_start(location: &crate::build::store::Location, config: &crate::config::Config) {
    let store = crate::build::store::Store::new(&location.graph_dir);
    let Ok((fingerprint, graph)) = store.open_current() else {
        return;
    };
    graph.build_string_filters();
    let Ok(embedder) = search::embed::Embedder::load(&config.embed) else {
        return;
    };
    // Nobody asked this query: no remote judge (a paid call), no training record.
    let mut quiet = config.clone();
    quiet.search.relevance.requested = false;
    quiet.search.features_out = None;
    let Ok(root) = location.read_root(&store) else {
        return;
    };
    let _ = search::SearchIndex::query(
        &store,
        &fingerprint,
        &graph,
        &root,
        &embedder,
        true,
        "warm start",
        1,
        false,
        &quiet,
    );
}

/// The byte offset of each line's start in `text` (0, then one past every `\n`): a slice
/// of lines starts at its line without scanning the lines before it.
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
        .collect()
}
