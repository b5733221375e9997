//! Modules and imports: exported names (with re-exports), module files for Python,
//! JS/TS (paths and workspace packages), Go and Rust, and what each file's imports bind.

use super::*;

impl<'a> Resolver<'a> {
    /// A name a file defines at top level or re-exports through an import, including
    /// wildcard re-exports (`export * from "./x"`, `from .x import *`) a few levels deep.
    pub(super) fn exported(&self, file: u32, name: &str) -> Option<u32> {
        self.exported_at_depth(file, name, 0)
    }

    pub(super) fn exported_at_depth(&self, file: u32, name: &str, depth: u32) -> Option<u32> {
        if let Some(ids) = self.top_level_of(file).get(name) {
            // A Rust module and what a `use` of the same file brings under its name
            // (`mod spawn; pub use spawn::spawn;`) live in different namespaces, so the
            // `use` brings a function, a value or a macro: what a path ending in the name
            // means, where the module's own paths go by file (`rust_modules`).
            if self.language(file) == Some(Language::Rust)
                && ids
                    .iter()
                    .all(|&id| self.node(id).kind == SymbolKind::Module)
                && let Some(Target::Symbol(id)) = self.bound(file, name)
                && self.node(*id).kind != SymbolKind::Module
            {
                return Some(*id);
            }
            return ids.first().map(|&id| self.implementation_of(id, ids));
        }
        if let Some(Target::Symbol(id)) = self.bound(file, name) {
            return Some(*id);
        }
        if depth >= 4 {
            return None;
        }
        self.wildcards_of(file)
            .iter()
            .filter(|&&f| f != file)
            .find_map(|&f| self.exported_at_depth(f, name, depth + 1))
            .or_else(|| self.crate_macro(file, name))
    }

    /// A macro a Rust crate's root exports (`#[macro_export] macro_rules!` in any file of
    /// the crate is named at its root: `use tokio_test::assert_ok`, `use tokio_test::*`).
    /// The attribute is not extracted: any `macro_rules!` of the crate counts.
    fn crate_macro(&self, file: u32, name: &str) -> Option<u32> {
        if self.language(file) != Some(Language::Rust) {
            return None;
        }
        let root = self.units[file as usize].path.strip_suffix("lib.rs")?;
        if !(root.is_empty() || root.ends_with('/')) {
            return None;
        }
        self.named(name)?.iter().copied().find(|&id| {
            let node = self.node(id);
            node.kind == SymbolKind::Macro
                && node
                    .file
                    .is_some_and(|f| self.units[f as usize].path.starts_with(root))
        })
    }

    /// Files a module text names, seen from `file`.
    pub(super) fn module_files(&self, file: u32, module: &str) -> Vec<u32> {
        let unit = &self.units[file as usize];
        let Some(language) = unit.language else {
            return Vec::new();
        };
        match language {
            Language::Python => self.python_module(unit.path, module),
            Language::Java => match self.package_files(module) {
                Some(files) => files.clone(),
                None => self.dotted(module),
            },
            Language::TypeScript | Language::Tsx | Language::JavaScript => {
                self.script_module(unit.path, module).into_iter().collect()
            }
            Language::Go => self.go_package(module),
            Language::Rust => self.rust_module(unit.path, module).into_iter().collect(),
        }
    }

    pub(super) fn dotted(&self, dotted: &str) -> Vec<u32> {
        if let Some(files) = self.dotted_full.get(dotted) {
            return files.clone();
        }
        match self.dotted_suffix.get(dotted) {
            Some(files) if files.len() == 1 => files.clone(),
            _ => Vec::new(),
        }
    }

    pub(super) fn python_module(&self, from_path: &str, module: &str) -> Vec<u32> {
        let dots = module.chars().take_while(|c| *c == '.').count();
        if dots == 0 {
            return self.dotted(module);
        }
        let mut package: Vec<&str> = dir_of(from_path)
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        for _ in 1..dots {
            package.pop();
        }
        let rest = &module[dots..];
        let mut parts: Vec<&str> = package;
        if !rest.is_empty() {
            parts.extend(rest.split('.'));
        }
        let dotted = parts.join(".");
        self.dotted_full.get(&dotted).cloned().unwrap_or_default()
    }

    pub(super) fn script_module(&self, from_path: &str, spec: &str) -> Option<u32> {
        if !spec.starts_with('.') {
            return self.workspace_package(spec);
        }
        let mut parts: Vec<&str> = dir_of(from_path)
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        for part in spec.split('/') {
            match part {
                "." | "" => {}
                ".." => {
                    parts.pop()?;
                }
                other => parts.push(other),
            }
        }
        self.script_path(&parts.join("/"))
    }

    /// A file for a module path without extension, or a directory's index.
    pub(super) fn script_path(&self, base: &str) -> Option<u32> {
        let stripped = ["js", "jsx", "mjs", "cjs"]
            .iter()
            .find_map(|e| base.strip_suffix(&format!(".{e}")));
        const EXTENSIONS: &[&str] = &["", ".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs"];
        for candidate in [Some(base), stripped].into_iter().flatten() {
            for ext in EXTENSIONS {
                if let Some(&f) = self.file_by_path.get(format!("{candidate}{ext}").as_str()) {
                    return Some(f);
                }
            }
            for ext in &EXTENSIONS[1..] {
                if let Some(&f) = self
                    .file_by_path
                    .get(format!("{candidate}/index{ext}").as_str())
                {
                    return Some(f);
                }
            }
        }
        None
    }

    /// A bare specifier (`zod`, `zod/v4`, `@scope/pkg/sub`) naming a package of this
    /// workspace: a directory with a `package.json` whose name is the package's last
    /// segment, resolved to its sources (`<dir>/src/<sub>`, `<dir>/<sub>`, index files).
    pub(super) fn workspace_package(&self, spec: &str) -> Option<u32> {
        let mut segments = spec.split('/');
        let first = segments.next()?;
        let name = if first.starts_with('@') {
            segments.next()?
        } else {
            first
        };
        let rest: Vec<&str> = segments.collect();
        let rest = rest.join("/");
        // Monorepo layouts whose package.json is ignored or absent.
        let conventional = [
            format!("packages/{name}"),
            format!("libs/{name}"),
            name.to_string(),
        ];
        let dirs: Vec<&str> = match self.package_dirs.get(name) {
            Some(dirs) => dirs.clone(),
            None => conventional.iter().map(String::as_str).collect(),
        };
        for dir in dirs {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            let candidates = if rest.is_empty() {
                vec![format!("{prefix}src/index"), format!("{prefix}index")]
            } else {
                vec![format!("{prefix}src/{rest}"), format!("{prefix}{rest}")]
            };
            if let Some(f) = candidates.iter().find_map(|c| self.script_path(c)) {
                return Some(f);
            }
        }
        None
    }

    pub(super) fn go_package(&self, import_path: &str) -> Vec<u32> {
        // The longest directory that is a suffix of the import path at a `/`: looked up
        // suffix by suffix, longest first (a scan of every directory per import was
        // quadratic: 32 s of a 13k-file tree's resolution).
        let suffixes = std::iter::once(import_path).chain(
            import_path
                .match_indices('/')
                .map(|(at, _)| &import_path[at + 1..]),
        );
        suffixes
            .filter(|dir| !dir.is_empty())
            .find_map(|dir| self.dir_files.get(dir))
            .map(|files| {
                files
                    .iter()
                    .copied()
                    .filter(|&f| self.language(f) == Some(Language::Go))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(super) fn rust_module(&self, from_path: &str, path: &str) -> Option<u32> {
        let (crate_root, current) = rust_module_of(from_path);
        let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let mut base: Vec<String> = Vec::new();
        match segments.first().copied() {
            Some("crate") => {
                segments.remove(0);
            }
            Some("self") => {
                segments.remove(0);
                base = current
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            Some("super") => {
                base = current
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                while segments.first() == Some(&"super") {
                    segments.remove(0);
                    base.pop();
                }
            }
            _ => {
                // A path relative to the current module (Rust 2018 allows `use sibling::x`
                // only for crates, but `mod` children resolve this way).
                base = current
                    .split("::")
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
                let mut relative = base.clone();
                relative.extend(segments.iter().map(|s| s.to_string()));
                if let Some(&f) = self
                    .rust_modules
                    .get(&(crate_root.clone(), relative.join("::")))
                {
                    return Some(f);
                }
                // On the 2015 edition a `use` path starts at the crate's root, and so
                // does a `mod` of a test, bench or example crate's root file (each
                // `tests/*.rs` is one, named by its stem in `rust_module_of`).
                if (self.rust_crates.is_2015(&crate_root) || !crate_root_is_src(&crate_root))
                    && let Some(&f) = self
                        .rust_modules
                        .get(&(crate_root.clone(), segments.join("::")))
                {
                    return Some(f);
                }
                // Another crate of the repository, by the name its manifest gives it.
                let (name, rest) = segments.split_first()?;
                let module = rest.join("::");
                return self.rust_crates.roots(name).iter().find_map(|root| {
                    // The library's root: a package's `main.rs` shares its module path.
                    let library = *self.file_by_path.get(format!("{root}/lib.rs").as_str())?;
                    if rest.is_empty() {
                        return Some(library);
                    }
                    if let Some(&f) = self.rust_modules.get(&(root.clone(), module.clone())) {
                        return Some(f);
                    }
                    self.rust_submodule(library, rest)
                });
            }
        }
        base.extend(segments.iter().map(|s| s.to_string()));
        self.rust_modules
            .get(&(crate_root, base.join("::")))
            .copied()
    }

    /// The file of the module `path` names below module file `file`: each segment a
    /// module file of the same crate, or a module the file re-exports whole (`pub extern
    /// crate grep_searcher as searcher;`, `pub use grep_searcher as searcher;`).
    fn rust_submodule(&self, mut file: u32, path: &[&str]) -> Option<u32> {
        for segment in path {
            let (root, module) = rust_module_of(self.units[file as usize].path);
            let sub = if module.is_empty() {
                segment.to_string()
            } else {
                format!("{module}::{segment}")
            };
            file = match self.rust_modules.get(&(root, sub)) {
                Some(&f) => f,
                None => self.reexported_module(file, segment)?,
            };
        }
        Some(file)
    }

    /// The module file `file` binds `name` to, when its imports bind a module whole.
    pub(super) fn reexported_module(&self, file: u32, name: &str) -> Option<u32> {
        match self.bound(file, name)? {
            Target::Files(files) => files.first().copied(),
            Target::Symbol(_) => None,
        }
    }

    pub(super) fn bind_imports(&self, file: u32) -> FileImports {
        let mut bindings = HashMap::default();
        let mut wildcards = Vec::new();
        let mut edges = Vec::new();
        let mut unresolved = HashSet::default();
        let mut unresolved_wildcard = false;
        let mut external = HashSet::default();
        let Some(facts) = self.facts(file) else {
            return FileImports {
                bindings: super::Bindings::from_map(bindings),
                wildcards,
                unresolved,
                unresolved_wildcard,
                external,
                edges,
            };
        };
        for import in &facts.imports {
            let inline = (self.language(file) == Some(Language::Rust))
                .then(|| out_of_inline_modules(facts, &import.site, &import.module))
                .flatten();
            let import = match inline {
                Some(module) => &Import {
                    module,
                    ..import.clone()
                },
                None => import,
            };
            let files = self.module_files(file, &import.module);
            let standard = self.language(file) == Some(Language::Rust)
                && files.is_empty()
                && self.outside_repository(file, &import.module);
            if import.wildcard {
                unresolved_wildcard |= files.is_empty() && !standard;
                for &f in &files {
                    edges.push((self.out.file_nodes[f as usize], import.site));
                }
                wildcards.extend(files);
                continue;
            }
            let target = self.import_target(file, import, &files);
            let Some(target) = target else {
                // A name from another crate than the repository's is known not to be
                // one of its definitions.
                if let Some(local) = import.local_name() {
                    if standard {
                        external.insert(local.to_string());
                    } else {
                        unresolved.insert(local.to_string());
                    }
                }
                continue;
            };
            match &target {
                Target::Symbol(id) => edges.push((*id, import.site)),
                Target::Files(fs) => {
                    for &f in fs {
                        edges.push((self.out.file_nodes[f as usize], import.site));
                    }
                }
            }
            if let Some(local) = import.local_name() {
                // A Rust `use a::b` names `b` in every namespace: bound here to a module
                // (`a/b.rs`, `mod b;`), it may also be a function `a` re-exports where extraction
                // does not see it (inside a macro whose body is not items: `cfg_if! { if
                // #[cfg(unix)] { pub use join::join; } }`), so a call of `b` may still fall
                // back to a unique name.
                let module = match &target {
                    Target::Files(_) => true,
                    Target::Symbol(id) => self.node(*id).kind == SymbolKind::Module,
                };
                if import.name.is_some() && module && self.language(file) == Some(Language::Rust) {
                    unresolved.insert(local.to_string());
                }
                bindings.insert(local.to_string(), target.clone());
            }
            if import.alias.is_none() && import.name.is_none() {
                bindings.insert(import.module.clone(), target);
            }
        }
        FileImports {
            bindings: super::Bindings::from_map(bindings),
            wildcards,
            unresolved,
            unresolved_wildcard,
            external,
            edges,
        }
    }

    pub(super) fn import_target(
        &self,
        file: u32,
        import: &Import,
        files: &[u32],
    ) -> Option<Target> {
        let Some(name) = &import.name else {
            return (!files.is_empty()).then(|| Target::Files(files.to_vec()));
        };
        let language = self.language(file)?;
        // The member as a definition (or re-export) of the module's files.
        for &f in files {
            if let Some(id) = self.exported(f, name) {
                // A Rust module declared `mod b;` is the file it names: paths through
                // the name go on in that file, where the declaration has no items.
                if language == Language::Rust && self.node(id).kind == SymbolKind::Module {
                    let sub_files =
                        self.module_files(file, &format!("{}::{}", import.module, name));
                    if !sub_files.is_empty() {
                        return Some(Target::Files(sub_files));
                    }
                }
                return Some(Target::Symbol(id));
            }
        }
        // A module the Rust module's files bring by a `use` of their own.
        if language == Language::Rust
            && let Some(module) = files.iter().find_map(|&f| self.reexported_module(f, name))
        {
            return Some(Target::Files(vec![module]));
        }
        // The member as a submodule (`from pkg import mod`, `use crate::a::b`).
        let sub = match language {
            Language::Rust => format!("{}::{}", import.module, name),
            Language::Python => {
                if import.module.ends_with('.') {
                    format!("{}{}", import.module, name)
                } else {
                    format!("{}.{}", import.module, name)
                }
            }
            _ => {
                return (!files.is_empty() && name == "default")
                    .then(|| Target::Files(files.to_vec()));
            }
        };
        let sub_files = self.module_files(file, &sub);
        (!sub_files.is_empty()).then_some(Target::Files(sub_files))
    }
}

impl Resolver<'_> {
    /// Whether a Rust `use` path that leads to no file of the repository names a crate
    /// outside it: the standard library's, or a crate the manifests take from a registry
    /// or git only (`use serde::Serialize`; `use regex::Regex` beside a crate
    /// `grep_regex`), unless the file itself gives the name another meaning (an item, or
    /// a name its imports bind: `use unix as imp; use imp::f;`).
    fn outside_repository(&self, file: u32, module: &str) -> bool {
        let first = rust_crate_of(module);
        if RUST_STANDARD_CRATES.contains(&first) {
            return true;
        }
        self.rust_crates.is_dependency(first)
            && !self.facts(file).is_some_and(|facts| {
                facts.defs.iter().any(|d| d.name == first)
                    || facts.imports.iter().any(|i| i.local_name() == Some(first))
            })
    }
}

/// The crates of Rust's standard library: what a `use` names under them is never a
/// definition of the repository.
const RUST_STANDARD_CRATES: [&str; 4] = ["std", "core", "alloc", "proc_macro"];

/// A Rust path's leading `super`s seen from `site`: those that only leave inline modules
/// of the file (`mod tests { use super::*; }`) stay in the file, so the path is
/// rewritten to start at the file's own module (`self::…`, or the `super`s left over);
/// `None` where no `super` leaves an inline module. A path into an inline module that
/// still encloses the site is read at the file's top level.
pub(super) fn out_of_inline_modules(facts: &FileFacts, site: &Span, path: &str) -> Option<String> {
    let supers = path.split("::").take_while(|s| *s == "super").count();
    if supers == 0 {
        return None;
    }
    let depth = facts
        .defs
        .iter()
        .filter(|d| d.kind == SymbolKind::Module && d.span.contains(site) && d.span != *site)
        .count();
    if depth == 0 {
        return None;
    }
    let rest: Vec<&str> = path.split("::").skip(supers).collect();
    let left = supers.saturating_sub(depth);
    let head = if left == 0 {
        vec!["self"; 1]
    } else {
        vec!["super"; left]
    };
    Some(head.into_iter().chain(rest).collect::<Vec<_>>().join("::"))
}

/// Whether a Rust crate root directory (`rust_module_of`) is a package's `src/`.
fn crate_root_is_src(root: &str) -> bool {
    root == "src" || root.ends_with("/src")
}

/// The crate a Rust `use` path starts at (`std` of `::std::time`).
fn rust_crate_of(module: &str) -> &str {
    let path = module.trim_start_matches("::");
    path.split("::").next().unwrap_or(path)
}
