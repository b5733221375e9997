//! Stage 4: answers over a committed graph — query intent, profiles, the context
//! compiler, hybrid search, ref expansion, the inspection helpers and token counting.

pub mod context;
pub mod expand;
pub mod glossary;
pub mod inspect;
pub mod intent;
pub mod profile;
pub mod search;
pub mod tokens;

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

/// The byte offset of each line's start in `text` (0, then one past every `\n`): a slice
/// of lines starts at its line without scanning the lines before it.
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1))
        .collect()
}
