//! Stage 1: source text to per-file facts — languages and their tree-sitter queries, the
//! facts vocabulary, and extraction.

pub mod extract;
pub mod facts;
pub mod lang;
