//! Stage 5: the command line, a thin shell over the library. `app` parses the arguments,
//! reads the environment once into the configuration and runs one command; each command
//! module holds its flags, its call into the library and its text rendering; `output`
//! prints and reports errors; `eval` scores corpora; `observe` records query events.
//!
//! Architecture invariant: only this stage prints, and only machine output goes to stdout;
//! progress and human diagnostics go to stderr.

pub mod app;
pub mod build;
pub mod call;
pub mod context;
pub mod daemon;
pub mod eval;
pub mod expand;
pub mod graph;
pub mod inspect;
pub mod mcp;
pub mod observe;
pub mod output;
pub mod search;
pub mod status;
pub mod watch;
