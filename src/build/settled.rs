//! Freshness by `stat` alone, for a process that stays up without a watcher (the daemon
//! and the MCP server; R-GEN-8).
//!
//! A read that is not frozen checks the tree against the committed generation: it walks
//! the inventory again (ignore rules, a `stat` per file, the stamps or a hash per file).
//! On sympy that is 12 ms of every answer of a daemon started without `--watch`. Once a
//! check found the tree clean, what it depends on is a list of paths: the directories
//! the walk entered (a file added, removed or renamed changes its directory), the ignore
//! files in them and `.git/info/exclude` (they decide what the walk takes), and the
//! inventoried files and those too large to compile (an edit changes the file). The
//! check's own walk gives the directories and the files' stamps. While every one of
//! them `stat`s as it did, the tree is the one that was found clean, and the walk is not
//! taken again.
//!
//! The list is recorded only when every entry was last changed before the racy window
//! that precedes the clean check (`stamps::RACY_NS`, as git's index): an entry changed
//! since the check began, or within a clock tick of it, would be dated after that, so a
//! list that passes could not have been read in a state the check did not see. Any
//! later change dates an entry now, so it differs. The list is kept in memory only, per
//! graph directory and generation.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::inventory::{Inventory, SkipReason};
use super::stamps::{RACY_NS, Stamp};

/// What a clean check's verdict depends on: paths, each with what `lstat` said of it
/// (`None`: absent).
#[derive(Debug)]
pub struct Settled {
    fingerprint: String,
    root: PathBuf,
    entries: Vec<(PathBuf, Option<Stamp>)>,
}

fn stamp_of(path: &Path) -> Option<Stamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|metadata| Stamp::of(&metadata))
}

impl Settled {
    /// The list a clean check of `root` against generation `fingerprint` depends on: the
    /// check's `inventory` (scanned after `as_of`, the time taken before the check
    /// began). `None` when an entry changed within the racy window before `as_of`, when
    /// the walk could not read an entry, when a limit cut the inventory (the file at the
    /// cut, unlisted, decides where it falls), or when the repository's git directory
    /// lies elsewhere (a `.git` file).
    pub fn record(
        root: &Path,
        fingerprint: &str,
        inventory: &Inventory,
        as_of: i64,
    ) -> Option<Settled> {
        let git = root.join(".git");
        if std::fs::symlink_metadata(&git).is_ok_and(|m| !m.is_dir())
            || inventory.truncated.is_some()
            || inventory
                .skipped
                .iter()
                .any(|s| matches!(s.reason, SkipReason::Unreadable(_)))
        {
            return None;
        }
        let before = as_of.saturating_sub(RACY_NS);
        let settled = |stamp: Option<Stamp>| {
            stamp
                .is_none_or(|s| s.mtime_ns < before && s.ctime_ns < before)
                .then_some(stamp)
        };
        // The files as the walk found them: a read soon after an edit stops at the edited
        // file, before any `stat`.
        let mut entries = Vec::with_capacity(inventory.files.len() + inventory.directories.len());
        for file in &inventory.files {
            entries.push((root.join(&file.path), settled(Some(file.stamp?))?));
        }
        // A file too large now may be small enough later (its directory does not change).
        for skipped in &inventory.skipped {
            if matches!(skipped.reason, SkipReason::TooLarge { .. }) {
                let path = root.join(&skipped.path);
                let stamp = settled(stamp_of(&path))?;
                entries.push((path, stamp));
            }
        }
        let exclude = git.join("info").join("exclude");
        let stamp = settled(stamp_of(&exclude))?;
        entries.push((exclude, stamp));
        for dir in &inventory.directories {
            entries.push((dir.clone(), settled(Some(stamp_of(dir)?))?));
            for name in [".gitignore", ".ignore"] {
                let path = dir.join(name);
                // An ignore file added later changes the directory.
                if let Some(stamp) = stamp_of(&path) {
                    entries.push((path, settled(Some(stamp))?));
                }
            }
        }
        Some(Settled {
            fingerprint: fingerprint.to_string(),
            root: root.to_path_buf(),
            entries,
        })
    }

    /// Whether the tree is still the one found clean against `fingerprint`: every entry
    /// `stat`s as recorded.
    pub fn holds(&self, fingerprint: &str, root: &Path) -> bool {
        use rayon::prelude::*;
        // In slices on rayon's threads: a `stat` is a path's walk through the kernel's
        // caches, and sympy's 2,400 took 5 ms on one thread.
        self.fingerprint == fingerprint
            && self.root == root
            && self
                .entries
                .par_chunks(512)
                .all(|slice| slice.iter().all(|(path, stamp)| stamp_of(path) == *stamp))
    }

    /// How many paths a check `stat`s.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The lists this process keeps, by graph directory.
fn kept() -> &'static Mutex<HashMap<PathBuf, Arc<Settled>>> {
    static KEPT: std::sync::OnceLock<Mutex<HashMap<PathBuf, Arc<Settled>>>> =
        std::sync::OnceLock::new();
    KEPT.get_or_init(Default::default)
}

/// The list kept for `graph_dir`, if any.
pub fn remembered(graph_dir: &Path) -> Option<Arc<Settled>> {
    kept()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(graph_dir)
        .cloned()
}

/// Keeps `settled` for `graph_dir`, or forgets what was kept (`None`).
pub fn remember(graph_dir: &Path, settled: Option<Settled>) {
    let mut kept = kept().lock().unwrap_or_else(|p| p.into_inner());
    match settled {
        Some(settled) => kept.insert(graph_dir.to_path_buf(), Arc::new(settled)),
        None => kept.remove(graph_dir),
    };
}

#[cfg(test)]
mod tests {
    use super::super::inventory::InventoryLimits;
    use super::*;
    use std::fs;
    use std::time::{Duration, SystemTime};

    /// A small tree whose files and directories were last modified an hour ago.
    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir_all(root.join("pkg/sub")).unwrap();
        fs::create_dir_all(root.join("target/debug")).unwrap();
        fs::create_dir_all(root.join(".git/info")).unwrap();
        fs::write(root.join("pkg/a.py"), "def a():\n    pass\n").unwrap();
        fs::write(root.join("pkg/sub/b.py"), "def b():\n    pass\n").unwrap();
        fs::write(root.join("pkg/.gitignore"), "*.log\n").unwrap();
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        for path in [
            "pkg/a.py",
            "pkg/sub/b.py",
            "pkg/.gitignore",
            "pkg/sub",
            "pkg",
            ".",
        ] {
            let file = fs::File::open(root.join(path)).unwrap();
            file.set_modified(hour_ago).unwrap();
        }
        dir
    }

    fn scanned(root: &Path) -> Inventory {
        super::super::inventory::scan(root, &InventoryLimits::default()).unwrap()
    }

    /// Recorded as if the check had begun a minute from now: the tree's change times
    /// (which a test cannot set back) are then outside the racy window.
    fn record(root: &Path) -> Settled {
        let later = super::super::stamps::now_ns() + 60_000_000_000;
        Settled::record(root, "f1", &scanned(root), later).expect("a settled tree")
    }

    #[test]
    fn an_untouched_tree_holds_and_another_generation_does_not() {
        let dir = tree();
        let settled = record(dir.path());
        assert!(settled.holds("f1", dir.path()));
        assert!(!settled.holds("f2", dir.path()));
        // Three directories, one ignore file, `.git/info/exclude` (absent), two files.
        assert_eq!(settled.len(), 7);
    }

    #[test]
    fn every_change_an_inventory_could_see_breaks_it() {
        type Change = (&'static str, fn(&Path));
        let changes: [Change; 7] = [
            ("an edit", |r| {
                fs::write(r.join("pkg/a.py"), "def a2():\n    pass\n").unwrap()
            }),
            ("a new file", |r| {
                fs::write(r.join("pkg/sub/c.py"), "x = 1\n").unwrap()
            }),
            ("a removed file", |r| {
                fs::remove_file(r.join("pkg/sub/b.py")).unwrap()
            }),
            ("a rename", |r| {
                fs::rename(r.join("pkg/a.py"), r.join("pkg/z.py")).unwrap()
            }),
            ("a new directory", |r| {
                fs::create_dir(r.join("lib")).unwrap()
            }),
            ("an ignore rule", |r| {
                fs::write(r.join("pkg/.gitignore"), "*.py\n").unwrap()
            }),
            ("an exclude file", |r| {
                fs::write(r.join(".git/info/exclude"), "pkg/\n").unwrap()
            }),
        ];
        for (what, change) in changes {
            let dir = tree();
            let settled = record(dir.path());
            change(dir.path());
            assert!(!settled.holds("f1", dir.path()), "{what} was not seen");
        }
    }

    #[test]
    fn a_file_too_large_to_compile_that_shrinks_breaks_it() {
        let dir = tree();
        let big = dir.path().join("pkg/big.py");
        fs::write(&big, "x = 1\n".repeat(200_000)).unwrap();
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        for path in [&big, &dir.path().join("pkg")] {
            fs::File::open(path)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
        }
        let settled = record(dir.path());
        assert!(settled.holds("f1", dir.path()));
        fs::write(&big, "x = 1\n").unwrap();
        assert!(!settled.holds("f1", dir.path()));
    }

    #[test]
    fn changes_outside_the_inventory_keep_it() {
        let dir = tree();
        let settled = record(dir.path());
        fs::write(dir.path().join("target/debug/out.bin"), "x").unwrap();
        fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(settled.holds("f1", dir.path()));
    }

    #[test]
    fn a_tree_changed_within_the_racy_window_is_not_recorded() {
        let dir = tree();
        fs::write(dir.path().join("pkg/a.py"), "def a3():\n    pass\n").unwrap();
        let now = super::super::stamps::now_ns();
        assert!(Settled::record(dir.path(), "f1", &scanned(dir.path()), now).is_none());
    }

    #[test]
    fn an_inventory_cut_by_a_limit_is_not_recorded() {
        let dir = tree();
        let limits = InventoryLimits {
            max_files: 1,
            ..InventoryLimits::default()
        };
        let inventory = super::super::inventory::scan(dir.path(), &limits).unwrap();
        assert!(inventory.truncated.is_some());
        let later = super::super::stamps::now_ns() + 60_000_000_000;
        assert!(Settled::record(dir.path(), "f1", &inventory, later).is_none());
    }

    #[test]
    fn a_git_file_pointing_elsewhere_is_not_recorded() {
        let dir = tree();
        fs::remove_dir_all(dir.path().join(".git")).unwrap();
        fs::write(dir.path().join(".git"), "gitdir: /elsewhere\n").unwrap();
        let later = super::super::stamps::now_ns() + 60_000_000_000;
        assert!(Settled::record(dir.path(), "f1", &scanned(dir.path()), later).is_none());
    }

    #[test]
    fn what_is_remembered_is_per_graph_directory() {
        let dir = tree();
        let graph = dir.path().join("graph-a");
        remember(&graph, Some(record(dir.path())));
        assert!(remembered(&graph).is_some());
        assert!(remembered(&dir.path().join("graph-b")).is_none());
        remember(&graph, None);
        assert!(remembered(&graph).is_none());
    }
}
