//! `manifest.json`: what a generation holds and which atlas built it, written beside its
//! graph file and read back typed (graph-schema/README.md, "Generation directory").

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::graph::format;
use crate::syntax::extract::EXTRACTOR_VERSION;
use crate::syntax::lang::Language;

/// Version of the manifest written by this build. 2: `manifest_version` and `builder`;
/// a manifest without `manifest_version` is version 1 (still read: its builder is judged
/// by its extractor version).
pub const MANIFEST_VERSION: u32 = 2;

fn first_version() -> u32 {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    #[serde(default = "first_version")]
    pub manifest_version: u32,
    pub format_version: u32,
    pub extractor_version: u32,
    /// `builder_id()` of the atlas that built the generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub builder: Option<String>,
    pub fingerprint: String,
    pub files: usize,
    pub symbols: usize,
    pub edges: usize,
    pub frontier: usize,
    #[serde(default)]
    pub skipped: Vec<SkippedFile>,
    #[serde(default)]
    pub truncated: Option<TruncationReport>,
    /// Files not compiled because their language is unsupported, by extension.
    #[serde(default)]
    pub unsupported: BTreeMap<String, usize>,
    /// What the SCIP merge contributed, as the build reported it.
    #[serde(default)]
    pub scip: Option<serde_json::Value>,
    /// The SCIP indexers run, as the build reported them.
    #[serde(default)]
    pub scip_runs: Vec<serde_json::Value>,
    /// Every file of the generation with its size and blake3.
    pub artifacts: BTreeMap<String, Artifact>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Artifact {
    pub bytes: u64,
    pub blake3: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkippedFile {
    pub path: String,
    pub reason: String,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TruncationReport {
    pub limit: String,
    pub files_seen: usize,
    pub files_kept: usize,
    pub bytes_seen: u64,
    pub bytes_kept: u64,
}

/// Which extractor, resolver, queries and format built a generation: a graph built by
/// another atlas is stale even when no source changed (recorded as `builder` in the manifest).
pub fn builder_id() -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&format::FORMAT_VERSION.to_le_bytes());
    hasher.update(&EXTRACTOR_VERSION.to_le_bytes());
    hasher.update(&super::resolve::RESOLVER_VERSION.to_le_bytes());
    for language in Language::ALL {
        hasher.update(language.query_hash().as_bytes());
    }
    hasher.finalize().to_hex()[..16].to_string()
}

/// Whether a generation's manifest says this atlas built it. Manifests written before
/// `builder` existed name only their extractor.
pub fn built_by_this(manifest: &Manifest) -> bool {
    match &manifest.builder {
        Some(builder) => *builder == builder_id(),
        None => manifest.extractor_version == EXTRACTOR_VERSION,
    }
}
