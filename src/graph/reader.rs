//! The read-only, zero-copy view of a validated graph file that every query uses.

use std::path::Path;

use super::data;
use super::data::{
    ArchivedEdgeRecord, ArchivedFileRecord, ArchivedGraphData, ArchivedNameEntry,
    ArchivedNodeRecord,
};
use super::format::{GraphFile, hex};
use super::ids::{FileId, NodeId, StrId};

use crate::error::Result;
use crate::syntax::facts::SymbolKind;

/// Which way an edge is followed from a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the node to the edge's target (callees, members, what it implements).
    Outgoing,
    /// From the edge's source to the node (callers, implementors, dependents).
    Incoming,
}

/// A validated, memory-mapped graph. Cheap to query; every accessor is zero-copy; a clone
/// shares the mapping.
#[derive(Clone)]
pub struct Graph {
    file: GraphFile,
}

/// Which name table a lookup searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameTable {
    Exact,
    Folded,
    Suffix,
    Segments,
}

impl Graph {
    pub fn open(path: &Path) -> Result<Graph> {
        Ok(Graph {
            file: GraphFile::open(path)?,
        })
    }

    pub fn data(&self) -> &ArchivedGraphData {
        self.file.data()
    }

    pub fn byte_len(&self) -> usize {
        self.file.len()
    }

    /// The format version of the file this graph was read from.
    pub fn format_version(&self) -> u32 {
        self.file.version()
    }

    pub fn fingerprint(&self) -> String {
        hex(&self.data().fingerprint)
    }

    /// Bytes of string `id` (empty when out of range).
    fn str_bytes(&self, id: StrId) -> &[u8] {
        let d = self.data();
        let offsets = &d.string_offsets;
        let (Some(start), Some(end)) = (offsets.get(id.index()), offsets.get(id.index() + 1))
        else {
            return &[];
        };
        d.string_bytes
            .get(start.to_native() as usize..end.to_native() as usize)
            .unwrap_or(&[])
    }

    /// String `id`; an id out of range or invalid UTF-8 (a corrupt file) reads as "".
    pub fn str(&self, id: StrId) -> &str {
        std::str::from_utf8(self.str_bytes(id)).unwrap_or("")
    }

    fn string_count(&self) -> usize {
        self.data().string_offsets.len().saturating_sub(1)
    }

    pub fn node_count(&self) -> usize {
        self.data().nodes.len()
    }

    /// Every node id, in order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + use<> {
        (0..self.node_count() as u32).map(NodeId)
    }

    pub fn node(&self, id: NodeId) -> &ArchivedNodeRecord {
        &self.data().nodes[id.index()]
    }

    pub fn kind(&self, id: NodeId) -> SymbolKind {
        SymbolKind::from_code(self.node(id).kind).unwrap_or(SymbolKind::Variable)
    }

    pub fn file_of(&self, id: NodeId) -> Option<&ArchivedFileRecord> {
        self.file(self.node(id).file())
    }

    /// The record of file `id` (`None` for `FileId::NONE` or out of range).
    pub fn file(&self, id: FileId) -> Option<&ArchivedFileRecord> {
        self.data().files.get(id.index())
    }

    /// A symbol of a test file, or inside a test scope (`#[cfg(test)]`, …).
    pub fn is_test(&self, id: NodeId) -> bool {
        self.file_of(id).is_some_and(|f| {
            crate::graph::codes::FileClass::from_code(f.class)
                == Some(crate::graph::codes::FileClass::Test)
        }) || self.node(id).flags & data::FLAG_TEST_SCOPE != 0
    }

    /// The implementation among a callable's overloads (`@overload` stubs, TypeScript
    /// signatures share its qualified name in one file): not a stub, else the one with
    /// the largest body. Any other node is its own implementation.
    pub fn implementation(&self, id: NodeId) -> NodeId {
        let record = self.node(id);
        let parent = record.parent();
        if parent.is_none() || !self.kind(id).is_callable() {
            return id;
        }
        let qualified = record.qualified();
        let body = |n: NodeId| {
            let r = self.node(n);
            let end = r.span.end_byte.to_native();
            (
                r.flags & data::FLAG_DECLARES_ONLY == 0,
                end.saturating_sub(r.signature.end_byte.to_native()),
                end.saturating_sub(r.span.start_byte.to_native()),
                std::cmp::Reverse(n),
            )
        };
        self.out_edges(parent)
            .iter()
            .filter(|e| e.kind == crate::graph::codes::EdgeKind::Contains as u8)
            .map(|e| e.node())
            .filter(|&n| self.node(n).qualified() == qualified && self.kind(n).is_callable())
            .max_by_key(|&n| body(n))
            .unwrap_or(id)
    }

    /// The file whose repository path is `path` (files are sorted by path).
    pub fn file_index(&self, path: &str) -> Option<FileId> {
        let files = &self.data().files;
        let at = files.partition_point(|f| self.str(f.path()) < path);
        (files.get(at).is_some_and(|f| self.str(f.path()) == path)).then_some(FileId(at as u32))
    }

    /// Label of a node: `path::Qualified` for symbols, the path for files, `path/` for
    /// modules.
    pub fn label(&self, id: NodeId) -> String {
        let node = self.node(id);
        let qualified = self.str(node.qualified());
        match self.kind(id) {
            SymbolKind::Module => format!("{qualified}/"),
            SymbolKind::File => qualified.to_string(),
            _ => format!("{}::{qualified}", self.file_path(node.file())),
        }
    }

    pub fn file_path(&self, file: FileId) -> &str {
        self.file(file).map_or("", |f| self.str(f.path()))
    }

    /// The edges of `id` in `direction` (`edge.node` is the other end).
    pub fn edges(&self, id: NodeId, direction: Direction) -> &[ArchivedEdgeRecord] {
        match direction {
            Direction::Outgoing => self.out_edges(id),
            Direction::Incoming => self.in_edges(id),
        }
    }

    pub fn out_edges(&self, id: NodeId) -> &[ArchivedEdgeRecord] {
        let d = self.data();
        let (a, b) = (
            d.out_offsets[id.index()].to_native(),
            d.out_offsets[id.index() + 1].to_native(),
        );
        &d.out_edges[a as usize..b as usize]
    }

    pub fn in_edges(&self, id: NodeId) -> &[ArchivedEdgeRecord] {
        let d = self.data();
        let (a, b) = (
            d.in_offsets[id.index()].to_native(),
            d.in_offsets[id.index() + 1].to_native(),
        );
        &d.in_edges[a as usize..b as usize]
    }

    /// Id of an interned string, if present.
    fn string_id(&self, text: &str) -> Option<StrId> {
        let mut lo = 0usize;
        let mut hi = self.string_count();
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.str_bytes(StrId(mid as u32)).cmp(text.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(StrId(mid as u32)),
            }
        }
        None
    }

    fn table(&self, table: NameTable) -> &[ArchivedNameEntry] {
        let d = self.data();
        match table {
            NameTable::Exact => &d.names_exact,
            NameTable::Folded => &d.names_folded,
            NameTable::Suffix => &d.names_suffix,
            NameTable::Segments => &d.names_segments,
        }
    }

    /// Nodes whose key in `table` equals `key`, by binary search.
    pub fn lookup(&self, table: NameTable, key: &str) -> Vec<NodeId> {
        let Some(StrId(id)) = self.string_id(key) else {
            return Vec::new();
        };
        let entries = self.table(table);
        let start = entries.partition_point(|e| e.key.to_native() < id);
        entries[start..]
            .iter()
            .take_while(|e| e.key.to_native() == id)
            .map(|e| e.node())
            .collect()
    }

    /// Frontier entries (indexes) whose name is the string `name_id`, by binary search.
    pub fn frontier_named(&self, name: StrId) -> Vec<u32> {
        let name_id = name.0;
        let d = self.data();
        let index = &d.frontier_by_name;
        let name_of = |i: &rkyv::rend::u32_le| {
            d.frontier
                .get(i.to_native() as usize)
                .map_or(u32::MAX, |f| f.name.to_native())
        };
        let start = index.partition_point(|i| name_of(i) < name_id);
        index[start..]
            .iter()
            .take_while(|i| name_of(i) == name_id)
            .map(|i| i.to_native())
            .collect()
    }

    /// Nodes whose key in `table` starts with `prefix` (keys are sorted by text).
    pub fn lookup_prefix(&self, table: NameTable, prefix: &str, limit: usize) -> Vec<NodeId> {
        let (mut lo, mut hi) = (0usize, self.string_count());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.str_bytes(StrId(mid as u32)) < prefix.as_bytes() {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let first = lo as u32;
        let entries = self.table(table);
        let start = entries.partition_point(|e| e.key.to_native() < first);
        entries[start..]
            .iter()
            .take_while(|e| self.str(e.key()).starts_with(prefix))
            .take(limit)
            .map(|e| e.node())
            .collect()
    }
}
