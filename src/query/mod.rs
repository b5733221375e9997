//! Stage 4: answers over a committed graph — query intent, profiles, the context
//! compiler, hybrid search, ref expansion, the inspection helpers and token counting.

pub mod context;
pub mod expand;
pub mod inspect;
pub mod intent;
pub mod profile;
pub mod search;
pub mod tokens;
