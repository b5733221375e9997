//! Name lookup inside the resolver: unique globals and members, package peers,
//! enclosing and member scopes, types by name, and qualified references (`a.b.c`).

use super::*;

impl<'a> Resolver<'a> {
    pub(super) fn candidate_count(&self, r: &Reference) -> u32 {
        self.named(r.name.as_str()).map_or(0, |ids| {
            ids.iter()
                .filter(|&&id| self.compatible(r.role, id))
                .count() as u32
        })
    }

    /// A unique definition of the name in the whole graph — only for names the file
    /// imports from somewhere we could not follow (an unresolved import or wildcard):
    /// in every supported language a bare name from another file must be imported, so
    /// anything else would be a guess. Test code (`#[cfg(test)]`) is a candidate only
    /// for a reference from test code: nothing else is compiled beside it; nor is a Rust
    /// integration test, bench or example a candidate outside its own crate.
    pub(super) fn unique_global(&self, file: u32, r: &Reference) -> Result<Outcome, u32> {
        let Some(ids) = self.named(r.name.as_str()) else {
            return Err(0);
        };
        if let Some(id) = (r.role == RefRole::Call && !self.imports_name(file, &r.name))
            .then(|| self.crate_macro_in_scope(file, ids))
            .flatten()
        {
            return Ok(Outcome {
                target: id,
                resolution: Resolution::UniqueName,
                confidence: 50,
            });
        }
        if !self.opaquely_imported(file, r.name.as_str()) {
            return Err(self.candidate_count(r));
        }
        let from_test = r
            .from
            .and_then(|from| self.facts(file)?.defs.get(from as usize))
            .is_some_and(|def| def.in_test_scope);
        // A bare name never means a member: methods and fields need a receiver.
        let compatible: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| self.compatible(r.role, id))
            .filter(|&id| !matches!(self.node(id).kind, SymbolKind::Method | SymbolKind::Field))
            .filter(|&id| from_test || !self.node(id).in_test_scope)
            .filter(|&id| self.importable_crate(file, id))
            .collect();
        let compatible = self.distinct_symbols(compatible);
        match compatible.as_slice() {
            [only] => Ok(Outcome {
                target: *only,
                resolution: Resolution::UniqueName,
                confidence: 50,
            }),
            other => Err(other.len() as u32),
        }
    }

    /// The one `macro_rules!` of `file`'s own Rust crate among `ids`: a crate's macros are
    /// in scope without a `use` below their definition or a `#[macro_use] mod` (neither
    /// is extracted), so a bare call of a name only one of them defines is theirs. A
    /// macro named as one of the standard library's (a module's own `writeln!`) is taken
    /// in its file only: elsewhere the name is the standard one.
    fn crate_macro_in_scope(&self, file: u32, ids: &[u32]) -> Option<u32> {
        if self.language(file) != Some(Language::Rust) {
            return None;
        }
        let (root, _) = rust_module_of(self.units[file as usize].path);
        let mut macros = ids.iter().copied().filter(|&id| {
            let node = self.node(id);
            let Some(at) = node.file else {
                return false;
            };
            node.kind == SymbolKind::Macro
                && if STANDARD_MACROS.contains(&&*node.name) {
                    at == file
                } else {
                    rust_module_of(self.units[at as usize].path).0 == root
                }
        });
        let first = macros.next()?;
        macros.next().is_none().then_some(first)
    }

    /// Whether Rust code in `file` could name `id`: not when `id` is in a crate that
    /// nothing imports (an integration test, bench or example: `tests/`, `benches/`,
    /// `examples/`, no `src/` on the path) and `file` is outside it. Always in other
    /// languages.
    fn importable_crate(&self, file: u32, id: u32) -> bool {
        let Some(target) = self.node(id).file else {
            return true;
        };
        if self.language(file) != Some(Language::Rust) || target == file {
            return true;
        }
        let target = self.units[target as usize].path;
        let segments: Vec<&str> = target.split('/').collect();
        let dirs = &segments[..segments.len() - 1];
        let own_crate = dirs
            .iter()
            .rposition(|s| matches!(*s, "tests" | "benches" | "examples"))
            .filter(|_| !dirs.contains(&"src"));
        match own_crate {
            Some(at) => {
                let dir = dirs[..=at].join("/");
                self.units[file as usize]
                    .path
                    .strip_prefix(dir.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            }
            None => true,
        }
    }

    /// A member call on a receiver of unknown type: only a method name unique in the graph
    /// whose file the caller can see (same file or imported) is accepted.
    pub(super) fn unique_member(&self, file: u32, r: &Reference) -> Result<Outcome, u32> {
        let Some(ids) = self.named(r.name.as_str()) else {
            return Err(0);
        };
        let methods: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| matches!(self.node(id).kind, SymbolKind::Method | SymbolKind::Field))
            .collect();
        let methods = self.distinct_symbols(methods);
        match methods.as_slice() {
            [only] => {
                let target_file = self.node(*only).file.unwrap_or(u32::MAX);
                let visible = target_file == file
                    || self.bound_targets(file).any(|t| match t {
                        Target::Symbol(id) => self.node(*id).file == Some(target_file),
                        Target::Files(fs) => fs.contains(&target_file),
                    });
                if visible {
                    Ok(Outcome {
                        target: *only,
                        resolution: Resolution::UniqueName,
                        confidence: 45,
                    })
                } else {
                    Err(1)
                }
            }
            other => Err(other.len() as u32),
        }
    }

    pub(super) fn package_peers(&self, file: u32) -> Vec<u32> {
        let unit = &self.units[file as usize];
        match unit.language {
            Some(Language::Go) => self.dir_files[dir_of(unit.path)]
                .iter()
                .copied()
                .filter(|&f| f != file && self.language(f) == Some(Language::Go))
                .collect(),
            Some(Language::Java) => self
                .facts(file)
                .and_then(|f| f.package.as_deref())
                .and_then(|p| self.package_files(p))
                .map(|files| files.iter().copied().filter(|&f| f != file).collect())
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }

    /// Member scope name of the type enclosing a definition (class name, impl self type).
    pub(super) fn enclosing_type(
        &self,
        facts: &'a FileFacts,
        from: Option<u32>,
    ) -> Option<&'a str> {
        let mut scope = from;
        while let Some(s) = scope {
            let def = &facts.defs[s as usize];
            if def.kind.is_type_container() {
                return Some(def.member_scope.as_str());
            }
            // Go methods: the receiver type qualifies the method.
            if def.kind == SymbolKind::Method
                && def
                    .parent
                    .is_some_and(|p| !facts.defs[p as usize].span.contains(&def.span))
            {
                return def
                    .parent
                    .map(|p| facts.defs[p as usize].member_scope.as_str());
            }
            scope = def.parent;
        }
        None
    }

    pub(super) fn member_scope_of(&self, id: u32) -> &str {
        let node = &self.node(id);
        let file = node.file.unwrap_or(0) as usize;
        let index = id - self.def_base[file];
        self.facts(file as u32)
            .and_then(|f| f.defs.get(index as usize))
            .map_or(&*node.name, |d| d.member_scope.as_str())
    }

    /// A member `name` of type `owner`, preferring the caller's file, then bases.
    pub(super) fn member_of(&self, file: u32, owner: &str, name: &str, depth: u32) -> Option<u32> {
        if let Some(ids) = self.members_named(owner, name) {
            let same_file = ids
                .iter()
                .copied()
                .find(|&id| self.node(id).file == Some(file));
            let only = &self.node(ids[0]);
            let one_symbol = ids.iter().all(|&id| {
                let node = &self.node(id);
                node.file == only.file && node.qualified == only.qualified
            });
            return same_file
                .or_else(|| one_symbol.then_some(ids[0]))
                .map(|id| self.implementation_of(id, ids));
        }
        if depth >= 4 {
            return None;
        }
        // Inherited: follow the bases declared by the owner type.
        let owner_id = self.type_named(file, owner)?;
        let owner_file = self.node(owner_id).file?;
        self.bases_of(owner_id)
            .iter()
            .find_map(|&(_, base)| self.member_of(owner_file, base, name, depth + 1))
    }

    /// The bases definition `id` declares, in source order.
    fn bases_of(&self, id: u32) -> &[(u32, &'a str)] {
        let start = self.bases.partition_point(|&(owner, _)| owner < id);
        let end = start + self.bases[start..].partition_point(|&(owner, _)| owner == id);
        &self.bases[start..end]
    }

    /// A type called `name` visible from `file`: same file, imported, or unique.
    pub(super) fn type_named(&self, file: u32, name: &str) -> Option<u32> {
        let is_type =
            |id: &u32| self.node(*id).kind.is_type() || self.node(*id).kind == SymbolKind::Impl;
        if let Some(ids) = self.top_level_of(file).get(name)
            && let Some(id) = ids.iter().copied().find(|id| self.node(*id).kind.is_type())
        {
            return Some(id);
        }
        if let Some(Target::Symbol(id)) = self.bound(file, name)
            && is_type(id)
        {
            return Some(*id);
        }
        for f in self.package_peers(file) {
            if let Some(ids) = self.top_level_of(f).get(name)
                && let Some(id) = ids.iter().copied().find(|id| self.node(*id).kind.is_type())
            {
                return Some(id);
            }
        }
        let ids = self.named(name)?;
        let types: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|id| self.node(*id).kind.is_type())
            .collect();
        (types.len() == 1).then(|| types[0])
    }

    pub(super) fn lookup_in_target(
        &self,
        target: &Target,
        name: &str,
        role: RefRole,
    ) -> Option<u32> {
        match target {
            Target::Symbol(id) => {
                let node = &self.node(*id);
                let file = node.file?;
                if node.kind.is_type() {
                    let scope = self.member_scope_of(*id);
                    self.member_of(file, scope, name, 0)
                } else if node.kind == SymbolKind::Module {
                    self.children_named(*id, name)
                        .and_then(|ids| self.pick(role, ids))
                } else {
                    None
                }
            }
            Target::Files(files) => files.iter().find_map(|&f| {
                self.top_level_of(f)
                    .get(name)
                    .and_then(|ids| self.pick(role, ids))
                    .or_else(|| {
                        self.exported(f, name)
                            .filter(|&id| self.compatible(role, id))
                    })
            }),
        }
    }

    pub(super) fn resolve_qualified(
        &self,
        file: u32,
        language: Language,
        facts: &'a FileFacts,
        r: &Reference,
        qualifier: &str,
    ) -> Option<Outcome> {
        let separator = if qualifier.contains("::") { "::" } else { "." };
        let segments: Vec<&str> = qualifier.split(separator).map(str::trim).collect();
        let first = *segments.first()?;
        let mut resolution = Resolution::Qualified;
        // The scope the first segment names.
        let mut scope: Option<Target> = if language == Language::Rust
            && matches!(first, "crate" | "self" | "super")
        {
            let module_segments: Vec<&str> = segments
                .iter()
                .copied()
                .take_while(|s| matches!(*s, "crate" | "self" | "super"))
                .collect();
            let path = module_segments.join("::");
            let path = super::modules::out_of_inline_modules(facts, &r.site, &path).unwrap_or(path);
            self.rust_module(self.units[file as usize].path, &path)
                .map(|f| Target::Files(vec![f]))
        } else if first == "Self" {
            self.enclosing_type(facts, r.from)
                .and_then(|t| self.type_named(file, t))
                .map(Target::Symbol)
        } else if let Some(t) = self.bound(file, first) {
            resolution = Resolution::Import;
            Some(t.clone())
        } else if let Some(id) = self.type_named(file, first) {
            Some(Target::Symbol(id))
        } else if language == Language::Rust {
            self.rust_module(self.units[file as usize].path, first)
                .map(|f| Target::Files(vec![f]))
        } else {
            None
        };
        let skip = segments
            .iter()
            .take_while(|s| matches!(**s, "crate" | "self" | "super"))
            .count()
            .max(1);
        for segment in &segments[skip..] {
            scope = match scope? {
                Target::Files(files) => {
                    let next_files: Vec<u32> = files
                        .iter()
                        .filter_map(|&f| {
                            let path = self.units[f as usize].path;
                            match language {
                                Language::Rust => {
                                    let (root, module) = rust_module_of(path);
                                    let sub = if module.is_empty() {
                                        segment.to_string()
                                    } else {
                                        format!("{module}::{segment}")
                                    };
                                    self.rust_modules
                                        .get(&(root, sub))
                                        .copied()
                                        .or_else(|| self.reexported_module(f, segment))
                                }
                                _ => None,
                            }
                        })
                        .collect();
                    if !next_files.is_empty() {
                        Some(Target::Files(next_files))
                    } else {
                        files
                            .iter()
                            .find_map(|&f| self.top_level_of(f).get(*segment).map(|ids| ids[0]))
                            .or_else(|| {
                                // What a Rust module re-exports (`pub use`): a crate's
                                // root names most of its items that way.
                                (language == Language::Rust)
                                    .then(|| files.iter().find_map(|&f| self.exported(f, segment)))
                                    .flatten()
                            })
                            .map(Target::Symbol)
                    }
                }
                Target::Symbol(id) if self.node(id).kind == SymbolKind::Module => self
                    .children_named(id, segment)
                    .map(|ids| Target::Symbol(ids[0])),
                Target::Symbol(id) => {
                    let owner = self.member_scope_of(id);
                    let file = self.node(id).file?;
                    self.member_of(file, owner, segment, 0).map(Target::Symbol)
                }
            };
        }
        if let Some(target) = scope {
            if let Some(id) = self.lookup_in_target(&target, &r.name, r.role) {
                return Some(Outcome {
                    target: id,
                    resolution,
                    confidence: 80,
                });
            }
            return None;
        }
        // Qualified-suffix lookup: `Type::method` anywhere in the graph, if unique.
        let last = segments.last()?;
        let key = format!("{last}{}{}", language.separator(), r.name);
        let ids = self.qualified_named(key.as_str())?;
        let compatible: Vec<u32> = ids
            .iter()
            .copied()
            .filter(|&id| self.compatible(r.role, id))
            .collect();
        (compatible.len() == 1).then(|| Outcome {
            target: compatible[0],
            resolution: Resolution::Qualified,
            confidence: 70,
        })
    }
}

/// Macros of Rust's standard library a bare call names wherever the crate defines none
/// in the same file (`crate_macro_in_scope`).
const STANDARD_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "cfg",
    "column",
    "compile_error",
    "concat",
    "dbg",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "env",
    "eprint",
    "eprintln",
    "file",
    "format",
    "format_args",
    "include",
    "include_bytes",
    "include_str",
    "line",
    "matches",
    "module_path",
    "option_env",
    "panic",
    "print",
    "println",
    "stringify",
    "thread_local",
    "todo",
    "unimplemented",
    "unreachable",
    "vec",
    "write",
    "writeln",
];
