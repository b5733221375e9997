//! Atlas compiles a repository into a memory-mapped, fingerprinted graph of symbols and
//! edges, and answers bounded, honest context queries over it. See docs/ARCHITECTURE.md.

// Foundations, usable from every stage.
pub mod code_enum;
pub mod config;
pub mod error;
pub mod isolate;
pub mod source;
// The pipeline's stages, in order: a stage imports only from the stages before it
// (tests/architecture.rs).
pub mod build;
pub mod cli;
pub mod graph;
pub mod query;
pub mod syntax;
