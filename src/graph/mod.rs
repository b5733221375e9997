//! Stage 2: the compiled graph — its on-disk codes (`codes`), archived data model (`data`),
//! file format (`format`), name normalisation (`names`), the read-only zero-copy view
//! every query uses (`reader::Graph`), the cut of a graph into format-4 segments
//! (`segments`), its stable text rendering (`dump`), and the filter of a part's strings a
//! long-lived reader keeps (`string_filter`).
//!
//! Architecture invariant: `graph` knows nothing of JSON, the CLI or the store layout.

pub mod codes;
pub mod data;
pub mod dump;
pub mod format;
pub mod ids;
pub mod names;
pub mod reader;
pub mod segments;
pub mod string_filter;
