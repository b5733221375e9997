//! Typed JSON outputs of the inspection helpers (`find-all`, `file-api`, `repo-map`,
//! `trace-calls`, `check-freshness`): only the fields tests read; unknown fields are
//! allowed.

#![allow(dead_code)]

use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
pub struct Truncated {
    pub reason: String,
    pub omitted: usize,
    pub next: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FindAll {
    pub files_searched: usize,
    pub files_matched: usize,
    pub files_stale: usize,
    pub hits_total: usize,
    pub offset: usize,
    pub hits: Vec<Hit>,
    pub truncated: Option<Truncated>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Hit {
    pub kind: String,
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub text: String,
    pub enclosing: Option<String>,
    #[serde(default)]
    pub stale: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct FileApi {
    pub path: String,
    pub stale: bool,
    pub definitions_total: usize,
    pub definitions: Vec<Definition>,
    pub content: Option<String>,
    pub content_omitted: Option<ContentOmitted>,
    pub truncated: Option<Truncated>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Definition {
    pub kind: String,
    pub symbol: String,
    pub lines: [u32; 2],
    pub signature: Option<String>,
    pub doc: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ContentOmitted {
    pub reason: String,
    pub expand: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct RepoMap {
    pub modules_total: usize,
    pub modules: Vec<Module>,
    pub truncated: Option<Truncated>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Module {
    pub module: String,
    pub files: usize,
    pub symbols: usize,
    pub depends_on: Vec<ModuleRelation>,
    pub used_by: Vec<ModuleRelation>,
    pub representatives: Vec<Representative>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ModuleRelation {
    pub module: String,
    pub kind: String,
    pub count: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Representative {
    pub symbol: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Trace {
    pub root: Root,
    pub edges_total: usize,
    pub edges: Vec<Edge>,
    pub truncated: Option<Truncated>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Root {
    pub symbol: String,
    pub fanout_omitted: usize,
    pub frontier: Frontier,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Frontier {
    pub unresolved: usize,
    pub sites: Vec<UnresolvedSite>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct UnresolvedSite {
    pub name: String,
    pub site: String,
    pub candidates: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Edge {
    pub depth: u32,
    pub caller: String,
    pub callee: String,
    pub provenance: String,
    pub resolution: String,
    pub confidence: u8,
    pub sites: Vec<String>,
    pub revisit: Option<String>,
    #[serde(default)]
    pub beyond_depth: usize,
    pub frontier: Option<Frontier>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Freshness {
    pub rebuild_needed: bool,
    pub modified: usize,
    pub added: usize,
    pub deleted: usize,
    pub files: Vec<ChangedFile>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ChangedFile {
    pub path: String,
    pub change: String,
}
