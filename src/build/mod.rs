//! Stage 3: from a repository to a committed generation — the inventory, SCIP input,
//! resolution, compilation, the store and its generations, the pipeline that runs them,
//! and the reading sessions that open (and refresh) a generation.

pub mod cargo;
pub mod compile;
mod fact_cache;
mod heads_pack;
pub mod inventory;
mod load;
pub use load::FactMemo;
pub mod manifest;
pub mod pipeline;
pub mod resolution_cache;
pub mod resolve;
pub mod scip;
pub mod session;
pub mod settled;
pub mod stamps;
pub mod store;
pub mod watch;
