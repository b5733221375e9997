//! Cargo build script (`build` in Cargo.toml): how the `atlas` binaries are linked.
//!
//! Agents start one `atlas` process per question, so process start-up is part of every
//! answer's latency. On x86_64 Linux the binaries are linked without PIE: a PIE `atlas`
//! carries ~44,000 relative relocations (mostly the tree-sitter grammars' pointer
//! tables), and applying them at every start copies ~190 pages of read-only data
//! (`atlas --version`: 402 page faults and 3.3 ms against 214 and 2.45 ms without; see
//! docs/PERFORMANCE.md). The price is that the executable itself loads at a fixed
//! address (shared libraries are still randomised), as with Go's default builds.
//! `ATLAS_LINK_PIE=1` at build time keeps the default PIE link.

fn main() {
    println!("cargo:rerun-if-changed=src/link.rs");
    println!("cargo:rerun-if-env-changed=ATLAS_LINK_PIE");
    let cfg = |name: &str| std::env::var(name).unwrap_or_default();
    let linux_x86_64 = cfg("CARGO_CFG_TARGET_OS") == "linux"
        && cfg("CARGO_CFG_TARGET_ARCH") == "x86_64"
        && cfg("CARGO_CFG_TARGET_ENV") == "gnu";
    if linux_x86_64 && std::env::var_os("ATLAS_LINK_PIE").is_none() {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
