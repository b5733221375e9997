//! `check-freshness`: which inventoried files changed since the committed generation —
//! modified, added, deleted, by content hash against the graph's file table — and whether
//! a rebuild is needed. The inventory scan and the comparison are the reading session's
//! (`build::session::changes`), so this answer and a refreshing read agree. Never writes.

use std::collections::HashSet;
use std::path::Path;

use serde::Serialize;

use super::{Invocation, Truncated, bounded, ceiling, fit, flag_if};
use crate::build::manifest::{Manifest, built_by_this};
use crate::build::session::changes;
use crate::error::Result;
use crate::graph::reader::Graph;

/// Paths per page when none is asked for, and the most a page may ask for.
pub const DEFAULT_MAX_PATHS: usize = 200;
pub const MAX_PATHS: usize = 5_000;

#[derive(Debug, Clone, Default)]
pub struct FreshnessRequest {
    /// Changed paths before this one (in path order) are skipped.
    pub offset: usize,
    pub max_paths: Option<usize>,
    pub max_bytes: Option<usize>,
    pub invocation: Invocation,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    /// `modified`, `added` or `deleted`.
    pub change: &'static str,
}

#[derive(Debug, Clone, Serialize)]
pub struct FreshnessOutput {
    pub graph_fingerprint: String,
    /// Sources changed, or another atlas built the generation: the next read that may
    /// write (any read without `--frozen`, or `atlas build`) rebuilds it.
    pub rebuild_needed: bool,
    /// The generation was built by another atlas (extractor, resolver or format).
    pub builder_changed: bool,
    pub modified: usize,
    pub added: usize,
    pub deleted: usize,
    pub offset: usize,
    /// Sorted by path.
    pub files: Vec<ChangedFile>,
    pub truncated: Option<Truncated>,
}

/// The files under `root` that differ from `graph`'s generation; `manifest` (the
/// generation's) says who built it and which files the build skipped.
pub fn check_freshness(
    graph: &Graph,
    root: &Path,
    manifest: Option<&Manifest>,
    request: &FreshnessRequest,
) -> Result<FreshnessOutput> {
    let max_bytes = ceiling(request.max_bytes)?;
    let max_paths = bounded(
        "max-paths",
        request.max_paths,
        DEFAULT_MAX_PATHS,
        1..=MAX_PATHS,
    )?;
    let skipped: HashSet<String> = manifest
        .map(|m| m.skipped.iter().map(|s| s.path.clone()).collect())
        .unwrap_or_default();
    // The explicit check hashes every file: it trusts no cache.
    let found = changes(graph, root, &skipped, None)?;
    // A missing or unreadable manifest reads as another builder's, as sessions read it.
    let builder_changed = !manifest.is_some_and(built_by_this);
    let mut files: Vec<ChangedFile> = [
        (&found.changed, "modified"),
        (&found.added, "added"),
        (&found.removed, "deleted"),
    ]
    .into_iter()
    .flat_map(|(paths, change)| {
        paths.iter().map(move |path| ChangedFile {
            path: path.clone(),
            change,
        })
    })
    .collect();
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let total = files.len();
    let start = request.offset.min(total);
    let page: Vec<ChangedFile> = files.into_iter().skip(start).take(max_paths).collect();
    let next = |offset: usize| {
        let mut flags = flag_if("--offset", Some(offset));
        flags.extend(flag_if("--max-paths", request.max_paths));
        flags.extend(flag_if("--max-bytes", request.max_bytes));
        request.invocation.argv("check-freshness", flags, &[])
    };
    let build = |n: usize| FreshnessOutput {
        graph_fingerprint: graph.fingerprint(),
        rebuild_needed: builder_changed || !found.is_empty(),
        builder_changed,
        modified: found.changed.len(),
        added: found.added.len(),
        deleted: found.removed.len(),
        offset: request.offset,
        files: page[..n].to_vec(),
        truncated: super::truncation(total, request.offset, n, max_paths, next),
    };
    fit(page.len(), max_bytes, build)
}
