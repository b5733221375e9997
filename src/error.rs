//! Typed errors of the library, each with a stable machine code.
//!
//! Codes (`atlas-…`) are part of the contract: scripts and agents match on them, so they
//! never change meaning. Exit codes are derived from the category at the CLI edge.

use std::path::PathBuf;

/// Every failure the library reports. Rendering (text, JSON) and exit codes live in `cli`.
#[derive(Debug, thiserror::Error)]
pub enum AtlasError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("code directory {0} does not exist or is not a directory")]
    CodeDirMissing(PathBuf),
    #[error("no committed graph in {0}; run `atlas build` first")]
    GraphMissing(PathBuf),
    #[error("graph file {path} is corrupt: {reason}")]
    GraphCorrupt { path: PathBuf, reason: String },
    #[error(
        "graph file {path} has format version {found}; this atlas reads versions {oldest}..={current}"
    )]
    GraphIncompatible {
        path: PathBuf,
        found: u32,
        oldest: u32,
        current: u32,
    },
    #[error("another build holds the lock {0}; retry when it finishes or pass --wait")]
    BuildLocked(PathBuf),
    #[error("--strict: {count} file(s) parsed with errors, first: {first}")]
    StrictPartial { count: usize, first: String },
    #[error("build failed at injected failure point `{0}` (ATLAS_INJECT_FAILURE)")]
    InjectedFailure(String),
    #[error("query file for {language} is invalid: {reason}")]
    QueryInvalid {
        language: &'static str,
        reason: String,
    },
    #[error("fact cache entry {path} is unreadable: {reason}")]
    CacheCorrupt { path: PathBuf, reason: String },
    #[error("invalid value for {what}: {reason}")]
    InvalidInput { what: &'static str, reason: String },
}

impl AtlasError {
    /// The stable machine code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            AtlasError::Io { .. } => "atlas-io",
            AtlasError::CodeDirMissing(_) => "atlas-code-missing",
            AtlasError::GraphMissing(_) => "atlas-graph-missing",
            AtlasError::GraphCorrupt { .. } => "atlas-graph-corrupt",
            AtlasError::GraphIncompatible { .. } => "atlas-graph-incompatible",
            AtlasError::BuildLocked(_) => "atlas-build-locked",
            AtlasError::StrictPartial { .. } => "atlas-build-strict-partial",
            AtlasError::InjectedFailure(_) => "atlas-build-injected-failure",
            AtlasError::QueryInvalid { .. } => "atlas-query-invalid",
            AtlasError::CacheCorrupt { .. } => "atlas-cache-corrupt",
            AtlasError::InvalidInput { .. } => "atlas-invalid-input",
        }
    }

    /// Process exit code for this error (documented in docs/CLI.md).
    pub fn exit_code(&self) -> i32 {
        match self {
            AtlasError::Io { .. }
            | AtlasError::QueryInvalid { .. }
            | AtlasError::CacheCorrupt { .. }
            | AtlasError::InjectedFailure(_) => 1,
            AtlasError::InvalidInput { .. } => 2,
            AtlasError::CodeDirMissing(_) | AtlasError::GraphMissing(_) => 3,
            AtlasError::GraphCorrupt { .. } | AtlasError::GraphIncompatible { .. } => 4,
            AtlasError::BuildLocked(_) => 5,
            AtlasError::StrictPartial { .. } => 6,
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AtlasError::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = AtlasError> = std::result::Result<T, E>;

/// Attaches a path to an `io::Result`.
pub(crate) trait IoContext<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|e| AtlasError::io(path, e))
    }
}
