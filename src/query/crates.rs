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

use serde::Deserialize;

use crate::graph::codes::FileClass;
use crate::graph::ids::FileId;
use crate::graph::reader::Graph;

const MANIFEST: &str = "Cargo.toml";

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

    /// Whether `name` could be a crate's name at all: a Rust identifier in lower case (what
    /// no manifest is read for: `Shape::new`, `os.path`).
    fn is_crate_shaped(name: &str) -> bool {
        name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }

    /// The directories of the crates named `name` (several crates may share a name: a
    /// fixture crate beside the real one).
    pub fn dirs_of(&self, name: &str) -> Vec<&str> {
        if !Self::is_crate_shaped(name) || self.graph.file_count() == 0 {
            return Vec::new();
        }
        self.all()
            .iter()
            .filter(|c| c.name == name)
            .map(|c| c.dir.as_str())
            .collect()
    }

    /// The directory of the crate whose sources hold `path`: the nearest enclosing
    /// directory with a crate's manifest.
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
                return Some(found.dir.as_str());
            }
            if dir.is_empty() {
                return None;
            }
        }
    }
}

/// Every crate a manifest of the generation names, in path order.
fn read_crates(graph: &Graph, root: &Path) -> Vec<Crate> {
    graph
        .files()
        .filter(|&file| graph.file_class(file) == Some(FileClass::Manifest))
        .filter_map(|file| {
            let path = graph.file_path(file);
            let dir = match path.strip_suffix(MANIFEST)? {
                "" => "",
                dir => dir.strip_suffix('/')?,
            };
            let name = crate_name(&committed_text(graph, root, file)?)?;
            Some(Crate {
                name,
                dir: dir.to_string(),
            })
        })
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

#[derive(Deserialize)]
struct Manifest {
    package: Option<Named>,
    lib: Option<Named>,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

/// The name a manifest's library is written by in paths: `[lib] name`, else the package's
/// name with `-` read as `_`. A workspace's manifest without a package names none.
fn crate_name(text: &str) -> Option<String> {
    let manifest: Manifest = toml::from_str(text).ok()?;
    let name = manifest
        .lib
        .and_then(|lib| lib.name)
        .or(manifest.package.and_then(|package| package.name))?;
    let name = name.replace('-', "_");
    Crates::is_crate_shaped(&name).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::crate_name;

    #[test]
    fn a_manifest_names_its_library_as_paths_write_it() {
        let package = "[package]\nname = \"grep-searcher\"\nversion = \"0.1.0\"\n";
        assert_eq!(crate_name(package).as_deref(), Some("grep_searcher"));
        let renamed =
            "[package]\nname = \"serde-json\"\n\n[lib]\nname = \"json\"\npath = \"src/lib.rs\"\n";
        assert_eq!(crate_name(renamed).as_deref(), Some("json"));
        // A `[lib]` table without a name keeps the package's.
        let lib = "[package]\nname = \"globset\"\n[lib]\nbench = false\n";
        assert_eq!(crate_name(lib).as_deref(), Some("globset"));
    }

    #[test]
    fn a_workspace_or_a_damaged_manifest_names_no_crate() {
        assert_eq!(crate_name("[workspace]\nmembers = [\"crates/*\"]\n"), None);
        assert_eq!(crate_name("[package\nname = \"x\""), None);
        assert_eq!(crate_name("[package]\nname = 3\n"), None);
        assert_eq!(crate_name("[package]\nname = \"Not A Crate\"\n"), None);
        assert_eq!(crate_name(""), None);
    }
}
