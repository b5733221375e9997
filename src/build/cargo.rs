//! What a `Cargo.toml` names: the crates of a package, as Rust paths write them
//! (`grep-searcher` is `grep_searcher`), and the repository's library crates by those
//! names, which resolution follows from one crate into another (`use
//! grep_searcher::Searcher` in `crates/core/`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

/// A Rust package's manifest file name.
pub const MANIFEST: &str = "Cargo.toml";

#[derive(Deserialize)]
struct Manifest {
    package: Option<Package>,
    lib: Option<Named>,
    #[serde(default)]
    bin: Vec<Named>,
}

#[derive(Deserialize)]
struct Package {
    name: Option<String>,
    /// A string, or a table (`edition.workspace = true`); absent means 2015.
    edition: Option<toml::Value>,
}

#[derive(Deserialize)]
struct Named {
    name: Option<String>,
}

/// Whether a package's manifest leaves it on the 2015 edition (no `edition`, or "2015"),
/// where a `use` path is relative to the crate's root.
fn is_2015(text: &str) -> bool {
    toml::from_str::<Manifest>(text)
        .ok()
        .and_then(|manifest| manifest.package)
        .is_some_and(|package| match package.edition {
            None => true,
            Some(toml::Value::String(edition)) => edition == "2015",
            Some(_) => false,
        })
}

/// Whether `name` could be a crate's name as a path writes it: a Rust identifier in lower
/// case (`Shape::new` and `os.path` are not).
pub fn is_crate_shaped(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The names a manifest's crates are written by in paths (`-` read as `_`): its library's
/// (`[lib] name`, else the package's name), then its binaries' (`[[bin]] name`, which a
/// binary's backtraces print: `rg::search::…`). A workspace's manifest without a package
/// names none; a manifest that is not TOML names none.
pub fn crate_names(text: &str) -> Vec<String> {
    let Ok(manifest) = toml::from_str::<Manifest>(text) else {
        return Vec::new();
    };
    let Some(package) = manifest.package.and_then(|package| package.name) else {
        return Vec::new();
    };
    let library = manifest.lib.and_then(|lib| lib.name).unwrap_or(package);
    let binaries = manifest.bin.into_iter().filter_map(|bin| bin.name);
    let mut names: Vec<String> = Vec::new();
    for name in std::iter::once(library).chain(binaries) {
        let name = name.replace('-', "_");
        if is_crate_shaped(&name) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The name paths give a package's library (`[lib] name`, else the package's name, `-`
/// read as `_`), when it is an identifier: `Inflector` stays itself, where `crate_names`
/// keeps only lower-case names.
fn library_name(text: &str) -> Option<String> {
    let manifest = toml::from_str::<Manifest>(text).ok()?;
    let package = manifest.package?.name?;
    let name = manifest
        .lib
        .and_then(|lib| lib.name)
        .unwrap_or(package)
        .replace('-', "_");
    let identifier = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    identifier.then_some(name)
}

/// The tables of a manifest that declare dependencies: `[dependencies]`, `[dev-…]`,
/// `[build-…]`, and the same under each `[target.<cfg>]`.
fn dependency_tables(manifest: &toml::Table) -> Vec<&toml::Table> {
    const KINDS: [&str; 3] = ["dependencies", "dev-dependencies", "build-dependencies"];
    let mut tables: Vec<&toml::Table> = KINDS
        .iter()
        .filter_map(|kind| manifest.get(*kind)?.as_table())
        .collect();
    if let Some(targets) = manifest.get("target").and_then(toml::Value::as_table) {
        for target in targets.values().filter_map(toml::Value::as_table) {
            tables.extend(
                KINDS
                    .iter()
                    .filter_map(|kind| target.get(*kind)?.as_table()),
            );
        }
    }
    tables
}

/// The dependencies a manifest declares, by the names paths give them (`-` read as `_`):
/// `(from a registry or git, from a path of the repository)`. A dependency inherited
/// from the workspace (`serde.workspace = true`) counts as from a registry; the
/// workspace's own table says which of those are paths.
fn dependencies(text: &str) -> (Vec<String>, Vec<String>) {
    let Ok(manifest) = toml::from_str::<toml::Table>(text) else {
        return (Vec::new(), Vec::new());
    };
    let mut tables = dependency_tables(&manifest);
    if let Some(workspace) = manifest
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(toml::Value::as_table)
    {
        tables.push(workspace);
    }
    let (mut external, mut local) = (Vec::new(), Vec::new());
    for (key, value) in tables.into_iter().flatten() {
        let name = key.replace('-', "_");
        match value.as_table() {
            Some(spec) if spec.contains_key("path") => local.push(name),
            _ => external.push(name),
        }
    }
    (external, local)
}

/// The repository's library crates by the name other crates' paths give them: each
/// package manifest's library name (`library_name`) and the directory that holds
/// its sources (`<package>/src`, where `src/lib.rs` is the crate root). Resolution reads
/// `use name::…` and `name::item` through it; a crate renamed in a dependency table
/// (`alias = { package = "…" }`) or a library at another path than `src/lib.rs` is not
/// followed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RustCrates {
    /// Crate name → source directories of the packages that name it (several packages
    /// may: a fixture crate beside the real one), in path order.
    roots: BTreeMap<String, Vec<String>>,
    /// Source directories of the packages on the 2015 edition.
    edition_2015: BTreeSet<String>,
    /// Crates the manifests declare as dependencies from a registry or git, and never as
    /// a path of the repository: what a `use` path starting with one names is not the
    /// repository's.
    dependencies: BTreeSet<String>,
}

impl RustCrates {
    /// The crates `manifests` name: `(path of a Cargo.toml, its text)`.
    pub fn from_manifests<'m>(manifests: impl IntoIterator<Item = (&'m str, &'m str)>) -> Self {
        let mut roots: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut edition_2015 = BTreeSet::new();
        let (mut external, mut local) = (BTreeSet::new(), BTreeSet::new());
        for (path, text) in manifests {
            let Some(dir) = manifest_dir(path) else {
                continue;
            };
            let (registry, paths) = dependencies(text);
            external.extend(registry);
            local.extend(paths);
            let Some(name) = library_name(text) else {
                continue;
            };
            let root = if dir.is_empty() {
                "src".to_string()
            } else {
                format!("{dir}/src")
            };
            if is_2015(text) {
                edition_2015.insert(root.clone());
            }
            roots.entry(name).or_default().push(root);
        }
        for dirs in roots.values_mut() {
            dirs.sort();
            dirs.dedup();
        }
        let dependencies = external
            .difference(&local)
            .filter(|name| !roots.contains_key(*name))
            .cloned()
            .collect();
        RustCrates {
            roots,
            edition_2015,
            dependencies,
        }
    }

    /// The crates the build's manifests name, each read from `code_root` at its
    /// inventoried path and size and taken only when its bytes are the inventory's
    /// (`blake3` equal to `hash`): a manifest changed since the inventory, gone or
    /// unreadable names no crate, so the table is a function of the build's inputs.
    pub fn read<'m>(
        code_root: &Path,
        manifests: impl IntoIterator<Item = (&'m str, u64, &'m [u8; 32])>,
    ) -> Self {
        let texts: Vec<(&str, String)> = manifests
            .into_iter()
            .filter(|(path, _, _)| manifest_dir(path).is_some())
            .filter_map(|(path, size, hash)| {
                let bytes = crate::source::read(code_root, path, size).ok()?;
                if blake3::hash(&bytes).as_bytes() != hash {
                    return None;
                }
                Some((path, String::from_utf8(bytes).ok()?))
            })
            .collect();
        Self::from_manifests(texts.iter().map(|(path, text)| (*path, text.as_str())))
    }

    /// The source directories of the library crate `name` (`crates/searcher/src`).
    pub fn roots(&self, name: &str) -> &[String] {
        self.roots.get(name).map_or(&[], Vec::as_slice)
    }

    /// Whether the package whose sources are at `root` is on the 2015 edition, where
    /// `use a::b` names the crate root's module `a`.
    pub fn is_2015(&self, root: &str) -> bool {
        self.edition_2015.contains(root)
    }

    /// Whether `name` is a crate the manifests take from a registry or git only.
    pub fn is_dependency(&self, name: &str) -> bool {
        self.dependencies.contains(name)
    }

    /// Feeds the table to `hasher`: resolution reuses a prior resolution only under the
    /// same table.
    pub fn digest_into(&self, hasher: &mut blake3::Hasher) {
        hasher.update(&(self.roots.len() as u64).to_le_bytes());
        for (name, roots) in &self.roots {
            hasher.update(&(name.len() as u64).to_le_bytes());
            hasher.update(name.as_bytes());
            hasher.update(&(roots.len() as u64).to_le_bytes());
            for root in roots {
                hasher.update(&(root.len() as u64).to_le_bytes());
                hasher.update(root.as_bytes());
            }
        }
        for set in [&self.edition_2015, &self.dependencies] {
            hasher.update(&(set.len() as u64).to_le_bytes());
            for item in set {
                hasher.update(&(item.len() as u64).to_le_bytes());
                hasher.update(item.as_bytes());
            }
        }
    }
}

/// The directory of a `Cargo.toml` path (`""` at the repository's root); `None` for any
/// other file.
pub fn manifest_dir(path: &str) -> Option<&str> {
    match path.strip_suffix(MANIFEST)? {
        "" => Some(""),
        dir => dir.strip_suffix('/'),
    }
}

#[cfg(test)]
mod tests {
    use super::{RustCrates, crate_names};

    #[test]
    fn a_manifest_names_its_library_and_binaries_as_paths_write_them() {
        let package = "[package]\nname = \"grep-searcher\"\nversion = \"0.1.0\"\n";
        assert_eq!(crate_names(package), ["grep_searcher"]);
        let renamed = "[package]\nname = \"serde-json\"\n[lib]\nname = \"json\"\n";
        assert_eq!(crate_names(renamed), ["json"]);
        // A `[lib]` table without a name keeps the package's.
        let lib = "[package]\nname = \"globset\"\n[lib]\nbench = false\n";
        assert_eq!(crate_names(lib), ["globset"]);
        let binaries =
            "[package]\nname = \"ripgrep\"\n[[bin]]\nname = \"rg\"\n[[bin]]\npath = \"x.rs\"\n";
        assert_eq!(crate_names(binaries), ["ripgrep", "rg"]);
    }

    #[test]
    fn a_workspace_or_a_damaged_manifest_names_no_crate() {
        for text in [
            "[workspace]\nmembers = [\"crates/*\"]\n",
            "[lib]\nname = \"orphan\"\n",
            "[package\nname = \"x\"",
            "[package]\nname = 3\n",
            "[package]\nname = \"Not A Crate\"\n",
            "",
        ] {
            assert!(crate_names(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn library_crates_are_found_by_name_at_their_packages_sources() {
        let crates = RustCrates::from_manifests([
            (
                "Cargo.toml",
                "[package]\nname = \"ripgrep\"\n[[bin]]\nname = \"rg\"\n",
            ),
            (
                "crates/searcher/Cargo.toml",
                "[package]\nname = \"grep-searcher\"\n",
            ),
            (
                "fuzz/searcher/Cargo.toml",
                "[package]\nname = \"grep-searcher\"\n",
            ),
            (
                "crates/json/Cargo.toml",
                "[package]\nname = \"x\"\n[lib]\nname = \"json\"\n",
            ),
            ("Cargo.toml.orig", "[package]\nname = \"stray\"\n"),
            ("crates/broken/Cargo.toml", "[package"),
        ]);
        assert_eq!(crates.roots("ripgrep"), ["src"]);
        // A binary's name is not a library's: no path reaches into it.
        assert!(crates.roots("rg").is_empty());
        assert_eq!(
            crates.roots("grep_searcher"),
            ["crates/searcher/src", "fuzz/searcher/src"]
        );
        assert_eq!(crates.roots("json"), ["crates/json/src"]);
        // No `edition` is 2015; a workspace-inherited one is not.
        assert!(crates.is_2015("crates/searcher/src"));
        let editions = RustCrates::from_manifests([
            (
                "a/Cargo.toml",
                "[package]\nname = \"a\"\nedition = \"2015\"\n",
            ),
            (
                "b/Cargo.toml",
                "[package]\nname = \"b\"\nedition = \"2021\"\n",
            ),
            (
                "c/Cargo.toml",
                "[package]\nname = \"c\"\nedition.workspace = true\n",
            ),
        ]);
        assert!(editions.is_2015("a/src"));
        assert!(!editions.is_2015("b/src") && !editions.is_2015("c/src"));
        assert!(crates.roots("x").is_empty());
        assert!(crates.roots("stray").is_empty());
    }

    #[test]
    fn a_library_keeps_a_name_in_upper_case_and_never_takes_a_binarys() {
        let crates = RustCrates::from_manifests([(
            "inflector/Cargo.toml",
            "[package]\nname = \"Inflector\"\n[[bin]]\nname = \"inflect\"\n",
        )]);
        assert_eq!(crates.roots("Inflector"), ["inflector/src"]);
        assert!(crates.roots("inflect").is_empty());
    }

    #[test]
    fn dependencies_from_a_registry_are_outside_and_paths_are_not() {
        let crates = RustCrates::from_manifests([
            (
                "Cargo.toml",
                "[workspace]\n[workspace.dependencies]\nlocal-dep = { path = \"crates/local\" }\nregex = \"1\"\n",
            ),
            (
                "crates/app/Cargo.toml",
                "[package]\nname = \"app\"\n\
                 [dependencies]\nserde = { version = \"1\", features = [\"derive\"] }\n\
                 local-dep = { workspace = true }\nregex = { workspace = true }\n\
                 sibling = { path = \"../sibling\" }\n\
                 [dev-dependencies]\ntempfile = \"3\"\n\
                 [target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n",
            ),
            (
                "crates/local/Cargo.toml",
                "[package]\nname = \"local-dep\"\n",
            ),
        ]);
        for name in ["serde", "regex", "tempfile", "libc"] {
            assert!(crates.is_dependency(name), "{name}");
        }
        // A path dependency, and a crate of the repository, are not outside it.
        for name in ["local_dep", "sibling", "app"] {
            assert!(!crates.is_dependency(name), "{name}");
        }
        // The table is what resolution reuses a memo under: a dependency more changes it.
        let digest = |crates: &RustCrates| {
            let mut hasher = blake3::Hasher::new();
            crates.digest_into(&mut hasher);
            hasher.finalize()
        };
        let one_more = RustCrates::from_manifests([(
            "crates/app/Cargo.toml",
            "[package]\nname = \"app\"\n[dependencies]\nserde = \"1\"\nlog = \"0.4\"\n",
        )]);
        let fewer = RustCrates::from_manifests([(
            "crates/app/Cargo.toml",
            "[package]\nname = \"app\"\n[dependencies]\nserde = \"1\"\n",
        )]);
        assert_ne!(digest(&one_more), digest(&fewer));
        assert_eq!(digest(&fewer), digest(&fewer.clone()));
    }
}
