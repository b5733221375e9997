//! The repository's Rust crates by the names their users write (`grep_searcher::Searcher`,
//! as docs, backtraces and other crates print a path): each `Cargo.toml` of the committed
//! generation names the crate whose sources lie below its directory.
//!
//! Read when a query first needs a crate name, from the code root, through `source::read`
//! and only at the path and size the generation records; a manifest whose bytes no longer
//! match the generation's blake3 (edited since the build, gone, unreadable, not TOML) names
//! no crate, so an answer depends on the committed generation alone.

use std::cell::OnceCell;
use std::path::Path;

use crate::build::cargo::{crate_names, is_crate_shaped, manifest_dir};
use crate::graph::codes::FileClass;
use crate::graph::ids::FileId;
use crate::graph::reader::Graph;

/// One crate: its name as paths write it (`-` read as `_`) and its directory (`""` at
/// the repository's root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crate {
    pub name: String,
    pub dir: String,
}

/// The crates of one generation, read at most once, on first use.
pub struct Crates<'a> {
    graph: &'a Graph,
    root: Option<&'a Path>,
    read: OnceCell<Vec<Crate>>,
}

impl<'a> Crates<'a> {
    /// The crates of `graph`'s generation, whose code lies at `root`.
    pub fn of(graph: &'a Graph, root: &'a Path) -> Self {
        Crates {
            graph,
            root: Some(root),
            read: OnceCell::new(),
        }
    }

    /// No crate names: for a caller without the code (they would be read from it).
    pub fn unread(graph: &'a Graph) -> Self {
        Crates {
            graph,
            root: None,
            read: OnceCell::new(),
        }
    }

    fn all(&self) -> &[Crate] {
        self.read.get_or_init(|| match self.root {
            Some(root) => read_crates(self.graph, root),
            None => Vec::new(),
        })
    }

    /// The directories of the crates named `name` (several crates may share a name: a
    /// fixture crate beside the real one).
    pub fn dirs_of(&self, name: &str) -> Vec<&str> {
        if !is_crate_shaped(name) || self.graph.file_count() == 0 {
            return Vec::new();
        }
        self.all()
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.dir.as_str())
            .collect()
    }

    /// The directory of the crate whose library or binaries hold `path`: the nearest
    /// enclosing directory with a crate's manifest. A package's `build.rs`, `tests/`,
    /// `examples/` and `benches/` are crates of their own, which no crate name reaches.
    pub fn crate_dir_of(&self, path: &str) -> Option<&str> {
        let crates = self.all();
        let mut dir = path;
        loop {
            dir = match dir.rfind('/') {
                Some(slash) => &dir[..slash],
                None if dir.is_empty() => return None,
                None => "",
            };
            if let Some(found) = crates.iter().find(|c| c.dir == dir) {
                let within = if dir.is_empty() {
                    path
                } else {
                    &path[dir.len() + 1..]
                };
                let own_target = within == "build.rs"
                    || ["tests/", "examples/", "benches/"]
                        .iter()
                        .any(|target| within.starts_with(target));
                return (!own_target).then_some(found.dir.as_str());
            }
            if dir.is_empty() {
                return None;
            }
        }
    }
}

impl Crates<'_> {
    /// The crates that crate `name` re-exports at its root under `alias`, as a facade
    /// crate does (`pub extern crate grep_searcher as searcher;`, `pub use
    /// grep_searcher as searcher;`, or without `as`, under its own name): read from the
    /// root file (`src/lib.rs`) of each of its directories, when that file is still the
    /// generation's. Only names that are crates of the repository are returned.
    pub fn reexported(&self, name: &str, alias: &str) -> Vec<String> {
        let Some(root) = self.root else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for dir in self.dirs_of(name) {
            let Some(text) = self
                .graph
                .file_index(&library_root(dir))
                .and_then(|file| committed_text(self.graph, root, file))
            else {
                continue;
            };
            for (target, named) in crate_reexports(&text) {
                if named == alias
                    && !self.dirs_of(target).is_empty()
                    && !out.iter().any(|t| t == target)
                {
                    out.push(target.to_string());
                }
            }
        }
        out
    }
}

/// The root file of the library whose manifest is in `dir` (`""` at the repository's root).
pub fn library_root(dir: &str) -> String {
    if dir.is_empty() {
        "src/lib.rs".to_string()
    } else {
        format!("{dir}/src/lib.rs")
    }
}

/// The `(crate, name)` pairs a crate root re-exports whole, one item per line:
/// `pub extern crate a as b;`, `pub extern crate a;`, `pub use a as b;`, `pub use ::a;`.
fn crate_reexports(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some(item) = line.trim().strip_prefix("pub ") else {
            continue;
        };
        let Some(body) = item
            .strip_prefix("extern crate ")
            .or_else(|| item.strip_prefix("use "))
            .and_then(|body| body.trim().strip_suffix(';'))
        else {
            continue;
        };
        let body = body.trim().trim_start_matches("::");
        let (target, named) = match body.split_once(" as ") {
            Some((target, named)) => (target.trim(), named.trim()),
            None => (body, body),
        };
        if is_crate_shaped(target) && is_crate_shaped(named) {
            out.push((target, named));
        }
    }
    out
}

/// Every crate a manifest of the generation names, in path order.
fn read_crates(graph: &Graph, root: &Path) -> Vec<Crate> {
    graph
        .files()
        .filter(|&file| graph.file_class(file) == Some(FileClass::Manifest))
        .filter_map(|file| {
            let path = graph.file_path(file);
            let dir = manifest_dir(path)?;
            let names = crate_names(&committed_text(graph, root, file)?);
            Some(names.into_iter().map(move |name| Crate {
                name,
                dir: dir.to_string(),
            }))
        })
        .flatten()
        .collect()
}

/// The file's text when it is still the generation's: its recorded size and blake3.
fn committed_text(graph: &Graph, root: &Path, file: FileId) -> Option<String> {
    let record = graph.file(file)?;
    let size = record.size.to_native();
    let bytes = crate::source::read(root, graph.file_path(file), size).ok()?;
    (blake3::hash(&bytes).as_bytes() == &record.hash)
        .then(|| String::from_utf8(bytes).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::crate_reexports;

    #[test]
    fn a_facade_crate_root_re_exports_crates_whole() {
        let root = "//! A facade.\n\
                    pub extern crate grep_cli as cli;\n\
                    #[cfg(feature = \"pcre2\")]\n\
                    pub extern crate grep_pcre2 as pcre2;\n\
                    pub use grep_regex as regex;\n\
                    pub use ::globset;\n\
                    pub use crate::inner::Thing;\n\
                    pub use grep_matcher::{Match, Matcher};\n\
                    extern crate private_one as hidden;\n\
                    pub mod local;\n";
        assert_eq!(
            crate_reexports(root),
            [
                ("grep_cli", "cli"),
                ("grep_pcre2", "pcre2"),
                ("grep_regex", "regex"),
                ("globset", "globset"),
            ]
        );
    }
}
