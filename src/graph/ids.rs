//! Typed ids over the archived graph's raw `u32` fields. The stored records keep plain
//! `u32` (zero-copy, format unchanged); every reader accessor hands out one of these, so
//! a node id cannot be passed where a string or file id is expected.

use super::data::{ArchivedModuleEdgeRecord, ArchivedNameEntry, NONE};

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident $(, $derive:ident)*) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy $(, $derive)*)]
        #[repr(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The stored "no value" (`data::NONE`).
            pub const NONE: $name = $name(NONE);

            pub fn is_none(self) -> bool {
                self.0 == NONE
            }

            /// `None` for the stored "no value".
            pub fn some(self) -> Option<$name> {
                (!self.is_none()).then_some(self)
            }

            /// The position in the record table this id indexes.
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

id_type!(
    /// A node of the graph (symbol, file, module): an index into `nodes`.
    NodeId, PartialEq, Eq, PartialOrd, Ord, Hash
);
id_type!(
    /// A file of the inventory: an index into `files` (sorted by path).
    FileId, PartialEq, Eq, PartialOrd, Ord, Hash
);
id_type!(
    /// An interned string: an index into a part's sorted string table, made global.
    /// Deliberately not comparable: in a format-4 graph every segment interns its own
    /// strings, so one text has one id per segment. Compare `Graph::str` instead.
    StrId
);

impl ArchivedModuleEdgeRecord {
    pub fn from(&self) -> NodeId {
        NodeId(self.from.to_native())
    }

    pub fn to(&self) -> NodeId {
        NodeId(self.to.to_native())
    }
}

impl ArchivedNameEntry {
    pub fn key(&self) -> StrId {
        StrId(self.key.to_native())
    }

    pub fn node(&self) -> NodeId {
        NodeId(self.node.to_native())
    }
}
