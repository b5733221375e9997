//! Inventory: which files of a repository are compiled (R-INV-1..5).
//!
//! Git-aware through the `ignore` crate (`.gitignore`, `.ignore`, `.git/info/exclude`),
//! never through the `git` binary, so no repository hook or fsmonitor ever runs and no
//! global or system git configuration is read. Limits are reported, never silent.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{AtlasError, Result};
use crate::graph::codes::FileClass;
use crate::syntax::lang::Language;

/// Limits of one inventory (R-INV-3). Defaults follow the spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InventoryLimits {
    pub max_files: usize,
    pub max_total_bytes: u64,
    pub max_file_bytes: u64,
}

impl Default for InventoryLimits {
    fn default() -> Self {
        InventoryLimits {
            max_files: 20_000,
            max_total_bytes: 128 * 1024 * 1024,
            max_file_bytes: 1_000_000,
        }
    }
}

/// What a file is to Atlas, decided from its path alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRole {
    /// Source in a supported language: extracted with tree-sitter.
    Code(Language),
    /// Documentation or a manifest: inventoried and fingerprinted, not extracted.
    Text,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InventoryFile {
    /// Repository-relative, `/`-separated.
    pub path: String,
    pub size: u64,
    pub role: FileRole,
    /// What `stat` said during the walk (`build::stamps`).
    pub stamp: Option<super::stamps::Stamp>,
}

impl InventoryFile {
    pub fn language(&self) -> Option<Language> {
        match self.role {
            FileRole::Code(language) => Some(language),
            FileRole::Text => None,
        }
    }
}

/// Why a candidate file was not compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    TooLarge { size: u64, limit: u64 },
    MinifiedBundle,
    Binary,
    NotUtf8,
    Unreadable(String),
}

impl SkipReason {
    pub fn code(&self) -> &'static str {
        match self {
            SkipReason::TooLarge { .. } => "too-large",
            SkipReason::MinifiedBundle => "minified-bundle",
            SkipReason::Binary => "binary",
            SkipReason::NotUtf8 => "not-utf8",
            SkipReason::Unreadable(_) => "unreadable",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    pub reason: SkipReason,
}

/// `inventory.truncated`: a limit was hit and these counts say by how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub limit: &'static str,
    pub files_seen: usize,
    pub files_kept: usize,
    pub bytes_seen: u64,
    pub bytes_kept: u64,
}

#[derive(Debug, Clone, Default)]
pub struct Inventory {
    /// Sorted by path.
    pub files: Vec<InventoryFile>,
    pub skipped: Vec<Skipped>,
    pub truncated: Option<Truncation>,
    /// Files not compiled because their language is unsupported, by extension.
    pub unsupported: BTreeMap<String, usize>,
    /// The directories the walk entered (`root` among them), sorted.
    pub directories: Vec<PathBuf>,
}

/// Directory names never descended into (R-INV-2).
const EXCLUDED_DIRS: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "site-packages",
    "__pycache__",
    ".git",
];

/// Names of build output folders (R-INV-2) that are also names of source modules (this
/// crate's `src/build/`, Go's `go/build`): not descended into directly under the code
/// root or under a package root (a directory holding a manifest), where builds write
/// their output, and entered elsewhere. Excluded by name alone, Atlas's own graph lacked
/// its `build` module.
const OUTPUT_DIRS: &[&str] = &["build", "dist", "out"];

/// Whether `dir` holds a manifest (or `setup.py`): a package root, whose `build/`,
/// `dist/` or `out/` is its build's output.
fn is_package_root(dir: &Path) -> bool {
    MANIFEST_NAMES
        .iter()
        .chain(&["setup.py"])
        .any(|name| dir.join(name).is_file())
}

const DOC_EXTENSIONS: &[&str] = &["md", "markdown", "rst", "adoc", "txt"];
const MANIFEST_NAMES: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.cfg",
    "requirements.txt",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "tsconfig.json",
    "Pipfile",
];

/// The walk every inventory takes: ignore files honoured, hidden entries and the
/// excluded directories never entered, nested repositories kept separate, links not
/// followed. The watcher walks the same directories (`directories`).
fn walker(root: &Path) -> ignore::WalkBuilder {
    let root_owned: PathBuf = root.to_path_buf();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(true)
        .parents(false)
        .ignore(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if !is_dir || entry.depth() == 0 {
                return true;
            }
            let name = entry.file_name().to_string_lossy();
            if EXCLUDED_DIRS.contains(&name.as_ref()) {
                return false;
            }
            if OUTPUT_DIRS.contains(&name.as_ref())
                && (entry.depth() == 1 || entry.path().parent().is_some_and(is_package_root))
            {
                return false;
            }
            // A nested repository stays separate.
            !(entry.path() != root_owned && entry.path().join(".git").exists())
        });
    builder
}

/// The directories an inventory of `root` descends into (`root` first), for watching.
pub fn directories(root: &Path) -> Vec<PathBuf> {
    walker(root)
        .build()
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_dir()))
        .map(|entry| entry.into_path())
        .collect()
}

/// Whether an inventory may descend into a directory of this name (hidden ones aside):
/// build output names (`OUTPUT_DIRS`) are entered below the root's own level unless their
/// parent is a package root, which a name alone cannot tell, so they count as enterable.
pub fn may_enter(name: &str) -> bool {
    !EXCLUDED_DIRS.contains(&name)
}

/// Whether a change at `path` (relative, `/`-separated) can change an inventory: a file
/// Atlas compiles, or an ignore file, outside hidden and excluded directories. Editor
/// swap and backup files, `target/` and `.git/` never can.
pub fn may_change_inventory(path: &str) -> bool {
    let mut parts = path.split('/').peekable();
    let mut top = true;
    while let Some(part) = parts.next() {
        let last = parts.peek().is_none();
        if last && matches!(part, ".gitignore" | ".ignore") {
            return true;
        }
        if part.is_empty()
            || part.starts_with('.')
            || (!last && !may_enter(part))
            || (!last && top && OUTPUT_DIRS.contains(&part))
        {
            return false;
        }
        top = false;
    }
    // Editor backups (`file.py~`, `#file.py#`) end in something that is not an extension.
    role_of(path).is_some() && !file_name(path).starts_with('#')
}

/// What one walker thread found: candidate files with what `stat` said, unsupported
/// files' extensions, and entries that could not be read.
#[derive(Default)]
struct Found {
    candidates: Vec<(String, u64, super::stamps::Stamp)>,
    unsupported: Vec<String>,
    skipped: Vec<Skipped>,
    directories: Vec<PathBuf>,
}

impl Found {
    fn visit(&mut self, entry: std::result::Result<ignore::DirEntry, ignore::Error>, root: &Path) {
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                self.skipped.push(Skipped {
                    path: error_path(&err, root),
                    reason: SkipReason::Unreadable(err.to_string()),
                });
                return;
            }
        };
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            self.directories.push(entry.into_path());
            return;
        }
        // Symlinks are not followed, and other non-regular files are not source.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return;
        }
        let Some(path) = relative_path(entry.path(), root) else {
            // A name that is not UTF-8 cannot be a path of the graph: a source file so
            // named is said skipped (its name shown with U+FFFD), never dropped unsaid.
            let lossy = entry
                .path()
                .strip_prefix(root)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            if role_of(&lossy).is_some() {
                self.skipped.push(Skipped {
                    path: lossy,
                    reason: SkipReason::Unreadable("its name is not UTF-8".into()),
                });
            }
            return;
        };
        // A file no language or text role takes is counted, never stat'ed.
        if role_of(&path).is_none() {
            let ext = path
                .rsplit_once('/')
                .map_or(path.as_str(), |(_, n)| n)
                .rsplit_once('.')
                .map_or("(none)", |(_, e)| e);
            self.unsupported.push(ext.to_string());
            return;
        }
        match entry.metadata() {
            Ok(metadata) => {
                let stamp = super::stamps::Stamp::of(&metadata);
                self.candidates.push((path, metadata.len(), stamp));
            }
            Err(err) => self.skipped.push(Skipped {
                path,
                reason: SkipReason::Unreadable(err.to_string()),
            }),
        }
    }
}

/// Hands each walker thread a `Visitor`; each hands its findings over when it is done.
struct Visitors<'s> {
    all: &'s std::sync::Mutex<Vec<Found>>,
    root: &'s Path,
}

struct Visitor<'s> {
    found: Found,
    all: &'s std::sync::Mutex<Vec<Found>>,
    root: &'s Path,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for Visitors<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            found: Found::default(),
            all: self.all,
            root: self.root,
        })
    }
}

impl ignore::ParallelVisitor for Visitor<'_> {
    fn visit(
        &mut self,
        entry: std::result::Result<ignore::DirEntry, ignore::Error>,
    ) -> ignore::WalkState {
        self.found.visit(entry, self.root);
        ignore::WalkState::Continue
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let found = std::mem::take(&mut self.found);
        self.all
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(found);
    }
}

/// Walks `root` and returns the files to compile, sorted by path.
///
/// The walk is parallel (`ignore`'s walker, one thread per core): it is syscalls
/// (directory reads, ignore files, a `stat` per source file), and on a 13,890-file tree
/// a serial walk took a quarter of a second, in every build and freshness check.
pub fn scan(root: &Path, limits: &InventoryLimits) -> Result<Inventory> {
    if !root.is_dir() {
        return Err(AtlasError::CodeDirMissing(root.to_path_buf()));
    }
    let found = std::sync::Mutex::new(Vec::<Found>::new());
    walker(root)
        .build_parallel()
        .visit(&mut Visitors { all: &found, root });
    let mut inventory = Inventory::default();
    let mut candidates = Vec::new();
    for part in found.into_inner().unwrap_or_else(|p| p.into_inner()) {
        candidates.extend(part.candidates);
        inventory.skipped.extend(part.skipped);
        inventory.directories.extend(part.directories);
        for ext in part.unsupported {
            *inventory.unsupported.entry(ext).or_default() += 1;
        }
    }
    // The threads' order is the scheduler's: every list is sorted.
    inventory.skipped.sort_by(|a, b| {
        a.path
            .cmp(&b.path)
            .then_with(|| a.reason.code().cmp(b.reason.code()))
    });
    candidates.sort_by(|a, b| a.0.cmp(&b.0));
    inventory.directories.sort();

    let mut bytes_seen = 0u64;
    let mut bytes_kept = 0u64;
    let mut files_seen = 0usize;
    let mut hit_limit = None;
    for (path, size, stamp) in candidates {
        let Some(role) = role_of(&path) else {
            continue;
        };
        if size > limits.max_file_bytes {
            inventory.skipped.push(Skipped {
                path,
                reason: SkipReason::TooLarge {
                    size,
                    limit: limits.max_file_bytes,
                },
            });
            continue;
        }
        if is_minified_bundle(&path) {
            inventory.skipped.push(Skipped {
                path,
                reason: SkipReason::MinifiedBundle,
            });
            continue;
        }
        files_seen += 1;
        bytes_seen += size;
        if hit_limit.is_none() {
            if inventory.files.len() >= limits.max_files {
                hit_limit = Some("max-files");
            } else if bytes_kept + size > limits.max_total_bytes {
                hit_limit = Some("max-total-bytes");
            }
        }
        if hit_limit.is_some() {
            continue;
        }
        bytes_kept += size;
        inventory.files.push(InventoryFile {
            path,
            size,
            role,
            stamp: Some(stamp),
        });
    }
    if let Some(limit) = hit_limit {
        inventory.truncated = Some(Truncation {
            limit,
            files_seen,
            files_kept: inventory.files.len(),
            bytes_seen,
            bytes_kept,
        });
    }
    Ok(inventory)
}

fn error_path(err: &ignore::Error, root: &Path) -> String {
    match err {
        ignore::Error::WithPath { path, .. } => {
            relative_path(path, root).unwrap_or_else(|| path.display().to_string())
        }
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err, root)
        }
        _ => String::from("."),
    }
}

fn relative_path(path: &Path, root: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let mut out = String::new();
    for component in relative.components() {
        let part = component.as_os_str().to_str()?;
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part);
    }
    (!out.is_empty()).then_some(out)
}

/// A file's role from its path, or `None` when Atlas does not compile it.
pub fn role_of(path: &str) -> Option<FileRole> {
    if let Some(language) = Language::from_path(path) {
        return Some(FileRole::Code(language));
    }
    let name = file_name(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    if MANIFEST_NAMES.contains(&name) || ext.as_deref().is_some_and(|e| DOC_EXTENSIONS.contains(&e))
    {
        return Some(FileRole::Text);
    }
    None
}

fn file_name(path: &str) -> &str {
    path.rsplit_once('/').map_or(path, |(_, n)| n)
}

/// `app.min.js`, `main.3f9a2c1b.js`, `vendor-bundle.js`, `x.chunk.js`.
fn is_minified_bundle(path: &str) -> bool {
    let name = file_name(path);
    if !(name.ends_with(".js") || name.ends_with(".mjs") || name.ends_with(".cjs")) {
        return false;
    }
    let parts: Vec<&str> = name.split('.').collect();
    if parts.contains(&"min") || parts.contains(&"chunk") || name.contains("-bundle.") {
        return true;
    }
    parts[1..parts.len().saturating_sub(1)].iter().any(|p| {
        p.len() >= 8
            && p.chars().all(|c| c.is_ascii_hexdigit())
            && p.chars().any(|c| c.is_ascii_digit())
    })
}

/// Classifies a file by path and, for generated markers, by its first bytes (R-INV-4).
pub fn classify(path: &str, content: &str) -> FileClass {
    let name = file_name(path);
    let segments: Vec<&str> = path.split('/').collect();
    let dirs = &segments[..segments.len() - 1];
    let head = match content.char_indices().nth(2048) {
        Some((i, _)) => &content[..i],
        None => content,
    };
    if name.ends_with("_pb2.py")
        || name.ends_with("_pb2_grpc.py")
        || name.ends_with(".pb.go")
        || name.contains(".generated.")
        || head.contains("DO NOT EDIT")
        || head.contains("@generated")
        || head.contains("Code generated")
    {
        return FileClass::Generated;
    }
    if dirs
        .iter()
        .any(|d| matches!(*d, "vendor" | "third_party" | "third-party" | "vendored"))
    {
        return FileClass::Vendored;
    }
    let stem = name.split('.').next().unwrap_or(name);
    if dirs
        .iter()
        .any(|d| matches!(*d, "tests" | "test" | "__tests__" | "testing" | "spec"))
        || name.ends_with("_test.go")
        || name.ends_with("_test.py")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name == "conftest.py"
        || name.contains(".spec.")
        || name.contains(".test.")
        || (name.ends_with(".java") && (stem.ends_with("Test") || stem.ends_with("Tests")))
    {
        return FileClass::Test;
    }
    match role_of(path) {
        Some(FileRole::Text) if MANIFEST_NAMES.contains(&name) => FileClass::Manifest,
        Some(FileRole::Text) => FileClass::Doc,
        _ => FileClass::Source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_by_path_and_marker() {
        let cases = [
            ("src/app.py", "", FileClass::Source),
            ("tests/test_app.py", "", FileClass::Test),
            ("pkg/test_x.py", "", FileClass::Test),
            ("store/store_test.go", "", FileClass::Test),
            ("web/client.spec.ts", "", FileClass::Test),
            ("src/test/java/AppTest.java", "", FileClass::Test),
            ("api/x_pb2.py", "", FileClass::Generated),
            ("api/x.pb.go", "", FileClass::Generated),
            (
                "gen/x.go",
                "// Code generated by stringer. DO NOT EDIT.",
                FileClass::Generated,
            ),
            ("vendor/lib/index.js", "", FileClass::Vendored),
            ("third_party/a/b.rs", "", FileClass::Vendored),
            ("README.md", "", FileClass::Doc),
            ("Cargo.toml", "", FileClass::Manifest),
            ("web/package.json", "", FileClass::Manifest),
        ];
        for (path, content, expected) in cases {
            assert_eq!(classify(path, content), expected, "{path}");
        }
    }

    #[test]
    fn bundles_are_recognised() {
        assert!(is_minified_bundle("static/app.min.js"));
        assert!(is_minified_bundle("static/main.3f9a2c1b.js"));
        assert!(is_minified_bundle("dist2/vendor-bundle.js"));
        assert!(!is_minified_bundle("src/deadbeef.js"));
        assert!(!is_minified_bundle("src/app.js"));
    }

    #[test]
    fn roles_by_name() {
        assert_eq!(role_of("a/b.py"), Some(FileRole::Code(Language::Python)));
        assert_eq!(role_of("docs/guide.md"), Some(FileRole::Text));
        assert_eq!(role_of("go.mod"), Some(FileRole::Text));
        assert_eq!(role_of("image.png"), None);
        assert_eq!(role_of("main.c"), None);
    }

    #[test]
    fn only_changes_an_inventory_can_see_wake_the_watcher() {
        for path in [
            "src/app.py",
            "lib.rs",
            "docs/guide.md",
            "Cargo.toml",
            ".gitignore",
            "pkg/.ignore",
            // Below the root, a `build` directory may be a source module.
            "src/build/mod.rs",
        ] {
            assert!(may_change_inventory(path), "{path}");
        }
        for path in [
            "src/.app.py.swp",
            "src/app.py~",
            "src/#app.py#",
            "src/4913",
            "target/debug/build.rs",
            "build/lib/pkg/mod.py",
            "web/node_modules/x/index.js",
            ".git/index",
            ".agent-spec/graph/CURRENT",
            "image.png",
            "",
        ] {
            assert!(!may_change_inventory(path), "{path}");
        }
    }
}
