//! The archived graph (R-GEN-5). Plain data with `u32` ids and `u8` codes so that every
//! read is zero-copy; the meaning of each code is in `model`, `facts` and graph-schema/.

use rkyv::{Archive, Deserialize, Serialize};

/// "No value" for optional `u32` ids.
pub const NONE: u32 = u32::MAX;

#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SpanRecord {
    pub start_byte: u32,
    pub end_byte: u32,
    pub start_line: u32,
    pub end_line: u32,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    pub path: u32,
    /// `Language::code`, or 255 for files that are not extracted (docs, manifests).
    pub language: u8,
    pub class: u8,
    pub parse_status: u8,
    pub error_count: u32,
    pub hash: [u8; 32],
    pub size: u64,
    pub lines: u32,
    pub node: u32,
    pub module: u32,
}

pub const FLAG_TEST_SCOPE: u8 = 1;
pub const FLAG_HAS_DOC: u8 = 2;
/// A callable that only declares what overrides define (abstract, `raise
/// NotImplementedError`, a signature without body): calls to it dispatch.
pub const FLAG_DECLARES_ONLY: u8 = 4;

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    pub kind: u8,
    pub visibility: u8,
    pub flags: u8,
    pub name: u32,
    pub qualified: u32,
    pub file: u32,
    pub parent: u32,
    pub span: SpanRecord,
    pub signature: SpanRecord,
    pub doc: SpanRecord,
    /// PageRank scaled so that the mean over all nodes is 1000.
    pub centrality: u32,
    /// SCIP symbol string (string id), or `NONE`.
    pub scip_symbol: u32,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct EdgeRecord {
    /// The other end: target in `out_edges`, source in `in_edges`.
    pub node: u32,
    pub kind: u8,
    pub subkind: u8,
    pub provenance: u8,
    pub resolution: u8,
    pub confidence: u8,
    /// Where a call sits (`facts::site` bits: handler, guard, result carried on); 0 for
    /// other edges. Format 2.
    pub flags: u8,
    pub site_file: u32,
    pub site: SpanRecord,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FrontierRecord {
    pub name: u32,
    pub role: u8,
    pub from: u32,
    pub file: u32,
    pub site: SpanRecord,
    pub candidates: u32,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ModuleEdgeRecord {
    pub from: u32,
    pub to: u32,
    pub kind: u8,
    pub count: u32,
}

/// One entry of a sorted name table: `key` is a string id; tables are sorted by
/// (key, node), and string ids are in lexicographic order, so a table is sorted by text.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NameEntry {
    pub key: u32,
    pub node: u32,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct GraphStats {
    pub external_references: u64,
    /// SCIP documents ingested / rejected as stale / ignored (outside the inventory).
    pub scip_documents: u32,
    pub scip_stale: u32,
    pub scip_outside: u32,
}

#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct GraphData {
    pub fingerprint: [u8; 32],
    /// Interned strings, sorted and unique, as one UTF-8 blob: string `i` is
    /// `string_bytes[string_offsets[i]..string_offsets[i + 1]]`. A blob (rather than a
    /// vector of strings) keeps validation at open time proportional to the offsets, not
    /// to every string's UTF-8; readers check UTF-8 per string on access.
    pub string_bytes: Vec<u8>,
    pub string_offsets: Vec<u32>,
    /// Sorted by path.
    pub files: Vec<FileRecord>,
    pub nodes: Vec<NodeRecord>,
    /// CSR by source: edges of node `n` are `out_edges[out_offsets[n]..out_offsets[n+1]]`.
    pub out_offsets: Vec<u32>,
    pub out_edges: Vec<EdgeRecord>,
    /// CSR by target, `node` being the source.
    pub in_offsets: Vec<u32>,
    pub in_edges: Vec<EdgeRecord>,
    pub frontier: Vec<FrontierRecord>,
    /// Frontier indexes sorted by (name string id, index): entries by name.
    pub frontier_by_name: Vec<u32>,
    pub module_edges: Vec<ModuleEdgeRecord>,
    /// Symbol name → node.
    pub names_exact: Vec<NameEntry>,
    /// Lower-cased name → node.
    pub names_folded: Vec<NameEntry>,
    /// Dotted suffixes (≥ 2 segments) of `module.path.Qualified.name` → node.
    pub names_suffix: Vec<NameEntry>,
    /// Lower-cased identifier segments (`compile_context` → `compile`, `context`) → node.
    pub names_segments: Vec<NameEntry>,
    pub stats: GraphStats,
}

/// One segment of a format-4 generation, as its root lists it.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct SegmentEntry {
    /// blake3 of the segment file's payload; the file is `segments/<hex>.atlas`.
    pub hash: [u8; 32],
    /// blake3 of everything the segment was compiled from (its records in local ids):
    /// an edit whose resolved segment has the same digest reuses the file unbuilt.
    pub inputs: [u8; 32],
    /// Records the segment holds (its local ids run from 0 to these).
    pub nodes: u32,
    pub files: u32,
    pub strings: u32,
    pub frontier: u32,
}

/// The root of a format-5 generation: which segments make the graph, in id order, each
/// with the part that holds its edges to other segments, and what belongs to no one
/// segment (graph-schema/README.md, "Format 5: cross parts").
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct RootData {
    pub fingerprint: [u8; 32],
    pub segments: Vec<SegmentEntry>,
    /// One per segment, in the same order.
    pub cross: Vec<CrossEntry>,
    /// The module node (global id) of each file (global id): segments store `NONE` in a
    /// file's `module` and in its file node's `parent`, since modules live in segment 0.
    pub file_modules: Vec<u32>,
    /// Centrality of every node (global id): PageRank is global, so segments store 0.
    pub centrality: Vec<u32>,
    pub module_edges: Vec<ModuleEdgeRecord>,
    pub stats: GraphStats,
}

/// A segment's cross part, as its root lists it.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct CrossEntry {
    /// blake3 of the part file's payload; the file is `segments/<hex>.cross`.
    pub hash: [u8; 32],
    /// Edges it holds by source (`out`) and by target (`in`).
    pub out_edges: u32,
    pub in_edges: u32,
}

/// The edges with one end in a segment whose other end, or whose site, lies in another
/// segment (format 5): a CSR over the segment's nodes (local ids) in each direction,
/// whose records name the other end and the site file by global id. Only the parts of
/// the segments an edit's edges touch change, so an edit rewrites those, not the whole
/// set of edges between segments.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct CrossData {
    pub out_offsets: Vec<u32>,
    pub out_edges: Vec<EdgeRecord>,
    pub in_offsets: Vec<u32>,
    pub in_edges: Vec<EdgeRecord>,
}

/// The root of a format-4 generation: read, never written. Its edges between segments
/// are one CSR over every node in each direction.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Default)]
pub struct RootDataV4 {
    pub fingerprint: [u8; 32],
    pub segments: Vec<SegmentEntry>,
    pub file_modules: Vec<u32>,
    pub centrality: Vec<u32>,
    /// Edges between segments, in global ids, as a CSR over every node by source
    /// (`out`) and by target (`in`).
    pub cross_out_offsets: Vec<u32>,
    pub cross_out: Vec<EdgeRecord>,
    pub cross_in_offsets: Vec<u32>,
    pub cross_in: Vec<EdgeRecord>,
    pub module_edges: Vec<ModuleEdgeRecord>,
    pub stats: GraphStats,
}
