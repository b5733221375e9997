//! Atlas compiles a repository into a memory-mapped, fingerprinted graph of symbols and
//! edges, and answers bounded, honest context queries over it. See docs/ARCHITECTURE.md.

pub mod build;
pub mod cli;
pub mod context;
pub mod dump;
pub mod error;
pub mod eval;
pub mod expand;
pub mod extract;
pub mod facts;
pub mod graph;
pub mod inventory;
pub mod isolate;
pub mod lang;
pub mod model;
pub mod observe;
pub mod profile;
pub mod query;
pub mod resolve;
pub mod scip_ingest;
pub mod scip_run;
pub mod search;
pub mod source;
pub mod status;
pub mod store;
pub mod tokens;
