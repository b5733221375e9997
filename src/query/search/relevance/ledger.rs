//! The cost ledger (R-J-9): what every judged search spent, summed in
//! `<graph>/relevance/ledger.json` for `atlas status` — counts and dollars only, never a
//! query, code, path or key.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const LEDGER_VERSION: u32 = 1;

/// Sums since the ledger was started (`since`, Unix seconds).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Ledger {
    pub version: u32,
    pub since: u64,
    /// Searches with the judge enabled.
    pub searches: u64,
    /// Remote calls made.
    pub calls: u64,
    pub timeouts: u64,
    /// Batches whose answer failed validation (schema, ids, model, size).
    pub invalid_batches: u64,
    pub http_errors: u64,
    pub transport_errors: u64,
    /// Searches the gate or a small pool answered without a call.
    pub skipped: u64,
    /// Batches answered from a replay file.
    pub replayed: u64,
    /// Known cost in USD.
    pub cost_usd: f64,
    /// Calls whose answer carried no cost.
    pub calls_without_cost: u64,
}

/// One search's contribution.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Entry {
    pub calls: u64,
    pub timeouts: u64,
    pub invalid_batches: u64,
    pub http_errors: u64,
    pub transport_errors: u64,
    pub skipped: bool,
    pub replayed: u64,
    pub cost_usd: f64,
    pub calls_without_cost: u64,
}

pub fn path(graph_dir: &Path) -> PathBuf {
    graph_dir.join("relevance").join("ledger.json")
}

/// The ledger, if one was started and reads.
pub fn read(graph_dir: &Path) -> Option<Ledger> {
    match load(graph_dir) {
        Loaded::Read(ledger) => Some(ledger),
        Loaded::Missing | Loaded::Damaged => None,
    }
}

/// Whether a ledger file exists that does not read (damaged, or another version).
pub fn damaged(graph_dir: &Path) -> bool {
    matches!(load(graph_dir), Loaded::Damaged)
}

enum Loaded {
    Missing,
    Read(Ledger),
    Damaged,
}

fn load(graph_dir: &Path) -> Loaded {
    let Ok(bytes) = std::fs::read(path(graph_dir)) else {
        return Loaded::Missing;
    };
    match serde_json::from_slice::<Ledger>(&bytes) {
        Ok(ledger) if ledger.version == LEDGER_VERSION => Loaded::Read(ledger),
        _ => Loaded::Damaged,
    }
}

/// Adds `entry` under the ledger's lock (read, add, write a temporary file, rename).
/// Best effort: a read-only or full disk loses the entry, never the search; the caller
/// reports it. A ledger that does not read is started again, and that is reported too
/// (`Ok(Some("ledger_restarted"))`): its sums since `since` were lost.
pub fn add(graph_dir: &Path, entry: &Entry) -> Result<Option<&'static str>, &'static str> {
    let dir = graph_dir.join("relevance");
    std::fs::create_dir_all(&dir).map_err(|_| "ledger_unwritable")?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("ledger.lock"))
        .map_err(|_| "ledger_unwritable")?;
    lock.lock().map_err(|_| "ledger_unwritable")?;
    let (mut ledger, restarted) = match load(graph_dir) {
        Loaded::Read(ledger) => (ledger, None),
        loaded => (
            Ledger {
                version: LEDGER_VERSION,
                since: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                ..Ledger::default()
            },
            matches!(loaded, Loaded::Damaged).then_some("ledger_restarted"),
        ),
    };
    ledger.searches += 1;
    ledger.calls += entry.calls;
    ledger.timeouts += entry.timeouts;
    ledger.invalid_batches += entry.invalid_batches;
    ledger.http_errors += entry.http_errors;
    ledger.transport_errors += entry.transport_errors;
    ledger.skipped += u64::from(entry.skipped);
    ledger.replayed += entry.replayed;
    ledger.cost_usd += entry.cost_usd;
    ledger.calls_without_cost += entry.calls_without_cost;
    let text = serde_json::to_vec_pretty(&ledger).map_err(|_| "ledger_unwritable")?;
    let tmp = dir.join(format!("ledger.json.tmp{}", std::process::id()));
    std::fs::write(&tmp, text).map_err(|_| "ledger_unwritable")?;
    std::fs::rename(&tmp, path(graph_dir)).map_err(|_| {
        let _ = std::fs::remove_file(&tmp);
        "ledger_unwritable"
    })?;
    Ok(restarted)
}
