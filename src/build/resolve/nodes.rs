//! Building the resolver's tables: nodes (modules, files, definitions) with their
//! containment, and the name indexes every lookup uses.

use super::reads::{self, Table};
use super::*;

impl<'a> Resolver<'a> {
    pub(super) fn build_nodes(&mut self) {
        // Modules: every directory holding a file, plus the root.
        let mut dirs: BTreeMap<&str, u32> = BTreeMap::new();
        dirs.insert("", 0);
        for unit in self.units {
            let mut dir = dir_of(unit.path);
            loop {
                dirs.insert(dir, 0);
                if dir.is_empty() {
                    break;
                }
                dir = dir_of(dir);
            }
        }
        for (index, (dir, id)) in dirs.iter_mut().enumerate() {
            *id = index as u32;
            let name = if dir.is_empty() { "." } else { *dir };
            self.out.nodes.push(ResolvedNode {
                kind: SymbolKind::Module,
                name: crate::syntax::facts::last_segment(name).to_string(),
                qualified: name.to_string(),
                file: None,
                span: Span::default(),
                signature: Span::default(),
                doc: None,
                parent: None,
                visibility: Visibility::Public,
                in_test_scope: false,
                declares_only: false,
                scip_symbol: None,
            });
        }
        for (dir, &id) in &dirs {
            if !dir.is_empty() {
                let parent = dirs[dir_of(dir)];
                self.out.nodes[id as usize].parent = Some(parent);
                self.contains(parent, id);
            }
        }
        for (file, unit) in self.units.iter().enumerate() {
            let file = file as u32;
            let file_node = self.out.nodes.len() as u32;
            let module = dirs[dir_of(unit.path)];
            let name = unit.path.rsplit_once('/').map_or(unit.path, |(_, n)| n);
            self.out.nodes.push(ResolvedNode {
                kind: SymbolKind::File,
                name: name.to_string(),
                qualified: unit.path.to_string(),
                file: Some(file),
                span: Span::default(),
                signature: Span::default(),
                doc: None,
                parent: Some(module),
                visibility: Visibility::Public,
                in_test_scope: false,
                declares_only: false,
                scip_symbol: None,
            });
            self.out.file_nodes.push(file_node);
            self.out.file_modules.push(module);
            self.contains(module, file_node);
            let base = file_node + 1;
            self.def_base.push(base);
            if let Some(facts) = unit.facts {
                for (i, def) in facts.defs.iter().enumerate() {
                    let id = base + i as u32;
                    let parent = def.parent.map(|p| base + p).unwrap_or(file_node);
                    self.out.nodes.push(ResolvedNode {
                        kind: def.kind,
                        name: def.name.clone(),
                        qualified: def.qualified.clone(),
                        file: Some(file),
                        span: def.span,
                        signature: def.signature,
                        doc: def.doc,
                        parent: Some(parent),
                        visibility: def.visibility,
                        in_test_scope: def.in_test_scope,
                        declares_only: def.declares_only,
                        scip_symbol: None,
                    });
                    self.contains(parent, id);
                }
            }
        }
    }

    pub(super) fn contains(&mut self, from: u32, to: u32) {
        self.edges.push(ResolvedEdge {
            from,
            to,
            kind: EdgeKind::Contains,
            subkind: EdgeSubkind::None,
            provenance: Provenance::TreeSitter,
            resolution: Resolution::Scope,
            confidence: 100,
            site: None,
            flags: 0,
        });
    }

    /// Marks the nodes that share (file, qualified name, kind) with another: overloads.
    fn overload_groups(&self) -> Vec<bool> {
        let mut sizes: HashMap<(Option<u32>, &str, SymbolKind), u32> = HashMap::default();
        for node in &self.out.nodes {
            *sizes
                .entry((node.file, node.qualified.as_str(), node.kind))
                .or_default() += 1;
        }
        self.out
            .nodes
            .iter()
            .map(|node| sizes[&(node.file, node.qualified.as_str(), node.kind)] > 1)
            .collect()
    }

    pub(super) fn build_indexes(&mut self) {
        self.overloaded = self.overload_groups();
        let units = self.units;
        self.top_level = vec![HashMap::default(); units.len()];
        self.contributes = vec![Vec::new(); units.len()];
        for (file, unit) in units.iter().enumerate() {
            self.file_by_path.insert(unit.path, file as u32);
            if unit.path == "package.json" || unit.path.ends_with("/package.json") {
                let dir = dir_of(unit.path);
                let name = dir.rsplit('/').next().unwrap_or(dir);
                self.package_dirs.entry(name).or_default().push(dir);
            }
        }
        for (file, unit) in units.iter().enumerate() {
            let f = file as u32;
            self.dir_files.entry(dir_of(unit.path)).or_default().push(f);
            let Some(language) = unit.language else {
                continue;
            };
            match language {
                Language::Python => {
                    // A module's name is its path from its source root: the nearest
                    // ancestor directory that is not a package (`src/flask/app.py` →
                    // `flask.app`). Arbitrary path suffixes are not module names — a
                    // local `typing.py` must not capture `import typing`.
                    let stem = strip_ext(unit.path);
                    let stem = stem.strip_suffix("/__init__").unwrap_or(stem);
                    let mut root = dir_of(unit.path);
                    while !root.is_empty() && is_python_package(&self.file_by_path, root) {
                        root = dir_of(root);
                    }
                    let relative = if root.is_empty() {
                        stem
                    } else {
                        &stem[root.len() + 1..]
                    };
                    self.dotted_full
                        .entry(stem.replace('/', "."))
                        .or_default()
                        .push(f);
                    if relative != stem && !relative.is_empty() {
                        self.dotted_full
                            .entry(relative.replace('/', "."))
                            .or_default()
                            .push(f);
                    }
                }
                Language::Java => {
                    let stem = strip_ext(unit.path);
                    let dotted = stem.replace('/', ".");
                    self.dotted_full.entry(dotted.clone()).or_default().push(f);
                    let mut rest = dotted.as_str();
                    while let Some((_, tail)) = rest.split_once('.') {
                        self.dotted_suffix
                            .entry(tail.to_string())
                            .or_default()
                            .push(f);
                        rest = tail;
                    }
                }
                Language::Rust => {
                    self.rust_modules.insert(rust_module_of(unit.path), f);
                }
                _ => {}
            }
            let Some(facts) = unit.facts else { continue };
            // The keys this file's definitions are entered under (`reads`).
            let contributed = &mut self.contributes[file];
            if let Some(package) = &facts.package {
                self.packages.entry(package.as_str()).or_default().push(f);
                contributed.push(reads::key(Table::Package, &[package]));
            }
            for binding in &facts.bindings {
                let Some(scope) = binding.scope else { continue };
                let owner = &facts.defs[scope as usize];
                if !owner.kind.is_type_container()
                    || (binding.type_name.is_none()
                        && binding.initializer.is_none()
                        && binding.value.is_none())
                {
                    continue;
                }
                let name = binding
                    .name
                    .strip_prefix("self.")
                    .or_else(|| binding.name.strip_prefix("this."))
                    .unwrap_or(&binding.name);
                self.field_types
                    .entry((owner.member_scope.as_str(), name))
                    .or_insert((binding, f));
                contributed.push(reads::key(Table::Field, &[&owner.member_scope, name]));
            }
            let base = self.def_base[file];
            self.bases.extend(facts.refs.iter().filter_map(|r| {
                let from = r.from?;
                matches!(r.role, RefRole::Inherit | RefRole::Implement)
                    .then(|| (base + from, r.name.as_str()))
            }));
            for (i, def) in facts.defs.iter().enumerate() {
                let id = base + i as u32;
                self.by_name.entry(def.name.as_str()).or_default().push(id);
                self.by_qualified
                    .entry(def.qualified.as_str())
                    .or_default()
                    .push(id);
                contributed.push(reads::key(Table::Name, &[&def.name]));
                contributed.push(reads::key(Table::Qualified, &[&def.qualified]));
                match def.parent {
                    None => self.top_level[file]
                        .entry(def.name.as_str())
                        .or_default()
                        .push(id),
                    Some(p) => {
                        if def.kind != SymbolKind::Impl {
                            self.children
                                .entry((base + p, def.name.as_str()))
                                .or_default()
                                .push(id);
                        }
                        let parent = &facts.defs[p as usize];
                        if parent.kind.is_type_container() {
                            self.members
                                .entry((parent.member_scope.as_str(), def.name.as_str()))
                                .or_default()
                                .push(id);
                            contributed.push(reads::key(
                                Table::Member,
                                &[&parent.member_scope, &def.name],
                            ));
                        }
                    }
                }
                // Go methods are declared outside their type but belong to it.
                if def.parent.is_some()
                    && language == Language::Go
                    && def.kind == SymbolKind::Method
                    && let Some((scope, _)) = def.qualified.rsplit_once('.')
                {
                    let scope: &'a str = scope;
                    contributed.push(reads::key(Table::Member, &[scope, &def.name]));
                    let list = self.members.entry((scope, def.name.as_str())).or_default();
                    if !list.contains(&id) {
                        list.push(id);
                    }
                }
            }
        }
        // Stable: each type's bases keep their source order.
        self.bases.sort_by_key(|&(id, _)| id);
        // Imports are bound in passes so that re-exports (`from .app import Flask` in a
        // package `__init__`, `pub use`) resolve for their importers: each pass sees the
        // previous pass's bindings. Three passes follow re-export chains two deep.
        const PASSES: usize = 3;
        let files = units.len() as u32;
        for pass in 0..PASSES {
            let results: Vec<FileImports> = {
                use rayon::prelude::*;
                let this = &*self;
                (0..files)
                    .into_par_iter()
                    .map(|file| this.bind_imports(file))
                    .collect()
            };
            self.bindings.clear();
            self.wildcards.clear();
            self.opaque_imports.clear();
            for (file, imports) in results.into_iter().enumerate() {
                let file = file as u32;
                if pass + 1 == PASSES {
                    for (target, site) in &imports.edges {
                        let from = self.out.file_nodes[file as usize];
                        self.edges.push(ResolvedEdge {
                            from,
                            to: *target,
                            kind: EdgeKind::Imports,
                            subkind: EdgeSubkind::None,
                            provenance: Provenance::TreeSitter,
                            resolution: Resolution::Import,
                            confidence: 95,
                            site: Some(Site {
                                file,
                                span: (*site).into(),
                            }),
                            flags: 0,
                        });
                    }
                }
                self.opaque_imports
                    .push((imports.unresolved, imports.unresolved_wildcard));
                self.bindings.push(imports.bindings);
                self.wildcards.push(imports.wildcards);
            }
        }
    }
}
