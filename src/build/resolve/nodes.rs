//! Building the resolver's tables: nodes (modules, files, definitions) with their
//! containment, and the name indexes every lookup uses.

use super::reads::{self, Table};
use super::*;
use crate::syntax::facts::{Definition, TypeBinding};

impl<'a> Resolver<'a> {
    pub(super) fn build_nodes(&mut self) {
        use rayon::prelude::*;
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
                name: crate::syntax::facts::last_segment(name).into(),
                qualified: name.into(),
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
        // Files and definitions are made side by side, each node from its id, written in
        // place into a table sized once (48k nodes on sympy; one after another, copying
        // their names was 13 ms of an edit's critical path).
        let first = self.out.nodes.len() as u32;
        let mut next = first;
        for unit in self.units {
            self.out.file_nodes.push(next);
            self.out.file_modules.push(dirs[dir_of(unit.path)]);
            self.def_base.push(next + 1);
            next += 1 + unit.facts.map_or(0, |f| f.defs.len() as u32);
        }
        let (units, file_nodes, file_modules) =
            (self.units, &self.out.file_nodes, &self.out.file_modules);
        self.out.nodes.reserve((next - first) as usize);
        self.out
            .nodes
            .par_extend((first..next).into_par_iter().map(|id| {
                let file = file_nodes.partition_point(|&node| node <= id) - 1;
                let (unit, module) = (&units[file], file_modules[file]);
                file_or_definition(unit, file as u32, file_nodes[file], module, id)
            }));
        self.edges.reserve(self.out.nodes.len());
        self.edges.par_extend(
            self.out.nodes[first as usize..]
                .par_iter()
                .zip(first..next)
                .map(|(node, id)| containment(node.parent.unwrap_or_default(), id)),
        );
        // Sorted now, so that the edge table is two sorted runs when it is settled
        // (containment, then every file's references in file order): pushed in node
        // order, each file's edge from its module and each nested definition's from its
        // class broke the containment into 16k runs on sympy, and `settle_edges` merged
        // them at 11 ms of an edit's critical path.
        self.edges.sort_unstable();
    }

    pub(super) fn contains(&mut self, from: u32, to: u32) {
        self.edges.push(containment(from, to));
    }

    /// Marks the nodes that share (file, qualified name, kind) with another: overloads.
    /// A group never spans files, so each file's nodes (its file node, then its
    /// definitions) are grouped on their own, files in parallel; module nodes are one per
    /// directory, never grouped.
    fn overload_groups(&self) -> Vec<bool> {
        use rayon::prelude::*;
        let nodes = &self.out.nodes;
        let per_file: Vec<Vec<bool>> = self
            .out
            .file_nodes
            .par_iter()
            .zip(&self.def_base)
            .zip(self.units)
            .map(|((&file_node, &base), unit)| {
                let end = base as usize + unit.facts.map_or(0, |f| f.defs.len());
                let range = &nodes[file_node as usize..end];
                let mut sizes: HashMap<(&str, SymbolKind), u32> = HashMap::default();
                for node in range {
                    *sizes.entry((&*node.qualified, node.kind)).or_default() += 1;
                }
                range
                    .iter()
                    .map(|node| sizes[&(&*node.qualified, node.kind)] > 1)
                    .collect()
            })
            .collect();
        let mut overloaded = vec![
            false;
            self.out
                .file_nodes
                .first()
                .map_or(nodes.len(), |&f| f as usize)
        ];
        overloaded.reserve(nodes.len() - overloaded.len());
        for group in per_file {
            overloaded.extend(group);
        }
        overloaded
    }

    pub(super) fn build_indexes(&mut self) {
        use rayon::prelude::*;
        self.overloaded = self.overload_groups();
        let units = self.units;
        for (file, unit) in units.iter().enumerate() {
            self.file_by_path.insert(unit.path, file as u32);
            if unit.path == "package.json" || unit.path.ends_with("/package.json") {
                let dir = dir_of(unit.path);
                let name = dir.rsplit('/').next().unwrap_or(dir);
                self.package_dirs.entry(name).or_default().push(dir);
            }
        }
        // The tables are independent of each other: each file's own (top-level names,
        // contributed keys, bases) in parallel, and the name-keyed ones in two passes
        // beside each other. Every pass visits files and definitions in order, so each
        // table's lists are in id order, as one sequential pass made them.
        let definitions = self.out.nodes.len();
        let this = &*self;
        let ((own, (by_name, by_qualified)), (scoped, paths)) = rayon::join(
            || {
                rayon::join(
                    || {
                        (0..units.len())
                            .into_par_iter()
                            .map(|file| this.file_tables(file))
                            .collect::<Vec<_>>()
                    },
                    || this.name_tables(definitions),
                )
            },
            || rayon::join(|| this.scoped_tables(), || this.path_tables()),
        );
        self.by_name = by_name;
        self.by_qualified = by_qualified;
        (self.members, self.children, self.field_types, self.packages) = scoped;
        (
            self.dir_files,
            self.dotted_full,
            self.dotted_suffix,
            self.rust_modules,
        ) = paths;
        let mut top_level = Vec::with_capacity(own.len());
        let mut contributes = Vec::with_capacity(own.len());
        for (names, keys, bases) in own {
            top_level.push(names);
            contributes.push(keys);
            self.bases.extend(bases);
        }
        self.top_level = top_level;
        self.contributes = contributes;
        // Stable: each type's bases keep their source order.
        self.bases.sort_by_key(|&(id, _)| id);
    }

    /// One file's own tables: its top-level definitions by name, the keys its
    /// definitions are entered under (`reads`), and the bases its definitions declare.
    #[allow(clippy::type_complexity)]
    fn file_tables(
        &self,
        file: usize,
    ) -> (HashMap<&'a str, Vec<u32>>, Vec<u64>, Vec<(u32, &'a str)>) {
        let mut top_level: HashMap<&'a str, Vec<u32>> = HashMap::default();
        let mut contributed = Vec::new();
        let mut bases = Vec::new();
        let unit = &self.units[file];
        let (Some(language), Some(facts)) = (unit.language, unit.facts) else {
            return (top_level, contributed, bases);
        };
        if let Some(package) = &facts.package {
            contributed.push(reads::key(Table::Package, &[package]));
        }
        for binding in &facts.bindings {
            if let Some((scope, name)) = field_of(facts, binding) {
                contributed.push(reads::key(Table::Field, &[scope, name]));
            }
        }
        let base = self.def_base[file];
        bases.extend(facts.refs.iter().filter_map(|r| {
            let from = r.from?;
            matches!(r.role, RefRole::Inherit | RefRole::Implement)
                .then(|| (base + from, r.name.as_str()))
        }));
        for (i, def) in facts.defs.iter().enumerate() {
            let id = base + i as u32;
            contributed.push(reads::key(Table::Name, &[&def.name]));
            contributed.push(reads::key(Table::Qualified, &[&def.qualified]));
            match def.parent {
                None => top_level.entry(def.name.as_str()).or_default().push(id),
                Some(p) => {
                    let parent = &facts.defs[p as usize];
                    if parent.kind.is_type_container() {
                        contributed.push(reads::key(
                            Table::Member,
                            &[&parent.member_scope, &def.name],
                        ));
                    }
                }
            }
            if let Some(scope) = go_method_scope(language, def) {
                contributed.push(reads::key(Table::Member, &[scope, &def.name]));
            }
        }
        (top_level, contributed, bases)
    }

    /// Every definition by name and by qualified name, the two built side by side: as one
    /// pass, they were the last of the tables to finish on a sympy edit by 10 ms.
    fn name_tables(&self, definitions: usize) -> (NameTable<'a>, NameTable<'a>) {
        rayon::join(
            || self.name_table(definitions / 2, |def| def.name.as_str()),
            || self.name_table(definitions, |def| def.qualified.as_str()),
        )
    }

    /// Every definition under the name `key` gives it.
    fn name_table(&self, capacity: usize, key: fn(&'a Definition) -> &'a str) -> NameTable<'a> {
        let mut table: NameTable<'a> =
            HashMap::with_capacity_and_hasher(capacity, Default::default());
        for (file, unit) in self.units.iter().enumerate() {
            let (Some(_), Some(facts)) = (unit.language, unit.facts) else {
                continue;
            };
            let base = self.def_base[file];
            for (i, def) in facts.defs.iter().enumerate() {
                table.entry(key(def)).or_default().push(base + i as u32);
            }
        }
        table
    }

    /// The tables keyed by scope: members of types (Go methods, declared outside their
    /// type, included), nested definitions, field types and packages.
    #[allow(clippy::type_complexity)]
    fn scoped_tables(
        &self,
    ) -> (
        HashMap<(&'a str, &'a str), Ids>,
        HashMap<(u32, &'a str), Ids>,
        HashMap<(&'a str, &'a str), FieldType<'a>>,
        HashMap<&'a str, Vec<u32>>,
    ) {
        let mut members: HashMap<(&'a str, &'a str), Ids> = HashMap::default();
        let mut children: HashMap<(u32, &'a str), Ids> = HashMap::default();
        let mut field_types: HashMap<(&'a str, &'a str), FieldType<'a>> = HashMap::default();
        let mut packages: HashMap<&'a str, Vec<u32>> = HashMap::default();
        for (file, unit) in self.units.iter().enumerate() {
            let (Some(language), Some(facts)) = (unit.language, unit.facts) else {
                continue;
            };
            let f = file as u32;
            if let Some(package) = &facts.package {
                packages.entry(package.as_str()).or_default().push(f);
            }
            for binding in &facts.bindings {
                if let Some(key) = field_of(facts, binding) {
                    field_types.entry(key).or_insert((binding, f));
                }
            }
            let base = self.def_base[file];
            for (i, def) in facts.defs.iter().enumerate() {
                let id = base + i as u32;
                if let Some(p) = def.parent {
                    if def.kind != SymbolKind::Impl {
                        children
                            .entry((base + p, def.name.as_str()))
                            .or_default()
                            .push(id);
                    }
                    let parent = &facts.defs[p as usize];
                    if parent.kind.is_type_container() {
                        members
                            .entry((parent.member_scope.as_str(), def.name.as_str()))
                            .or_default()
                            .push(id);
                    }
                }
                if let Some(scope) = go_method_scope(language, def) {
                    let list = members.entry((scope, def.name.as_str())).or_default();
                    if !list.contains(&id) {
                        list.push(id);
                    }
                }
            }
        }
        (members, children, field_types, packages)
    }

    /// The tables derived from paths: each directory's files, Python and Java module
    /// names, Rust module paths.
    #[allow(clippy::type_complexity)]
    fn path_tables(
        &self,
    ) -> (
        HashMap<&'a str, Vec<u32>>,
        HashMap<String, Vec<u32>>,
        HashMap<String, Vec<u32>>,
        HashMap<(String, String), u32>,
    ) {
        let mut dir_files: HashMap<&'a str, Vec<u32>> = HashMap::default();
        let mut dotted_full: HashMap<String, Vec<u32>> = HashMap::default();
        let mut dotted_suffix: HashMap<String, Vec<u32>> = HashMap::default();
        let mut rust_modules: HashMap<(String, String), u32> = HashMap::default();
        for (file, unit) in self.units.iter().enumerate() {
            let f = file as u32;
            dir_files.entry(dir_of(unit.path)).or_default().push(f);
            match unit.language {
                Some(Language::Python) => {
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
                    dotted_full
                        .entry(stem.replace('/', "."))
                        .or_default()
                        .push(f);
                    if relative != stem && !relative.is_empty() {
                        dotted_full
                            .entry(relative.replace('/', "."))
                            .or_default()
                            .push(f);
                    }
                }
                Some(Language::Java) => {
                    let stem = strip_ext(unit.path);
                    let dotted = stem.replace('/', ".");
                    dotted_full.entry(dotted.clone()).or_default().push(f);
                    let mut rest = dotted.as_str();
                    while let Some((_, tail)) = rest.split_once('.') {
                        dotted_suffix.entry(tail.to_string()).or_default().push(f);
                        rest = tail;
                    }
                }
                Some(Language::Rust) => {
                    rust_modules.insert(rust_module_of(unit.path), f);
                }
                _ => {}
            }
        }
        (dir_files, dotted_full, dotted_suffix, rust_modules)
    }
}

/// The containment edge `from` → `to`.
pub(super) fn containment(from: u32, to: u32) -> ResolvedEdge {
    ResolvedEdge {
        from,
        to,
        kind: EdgeKind::Contains,
        subkind: EdgeSubkind::None,
        provenance: Provenance::TreeSitter,
        resolution: Resolution::Scope,
        confidence: 100,
        site: None,
        flags: 0,
    }
}

/// Node `id` of `unit` (file `file`): its file node when `id` is `file_node`, else the
/// definition `id - file_node - 1`, its parent given in node ids.
fn file_or_definition<'a>(
    unit: &SourceUnit<'a>,
    file: u32,
    file_node: u32,
    module: u32,
    id: u32,
) -> ResolvedNode<'a> {
    let Some(index) = (id - file_node).checked_sub(1) else {
        let name = unit.path.rsplit_once('/').map_or(unit.path, |(_, n)| n);
        return ResolvedNode {
            kind: SymbolKind::File,
            name: name.into(),
            qualified: unit.path.into(),
            file: Some(file),
            span: Span::default(),
            signature: Span::default(),
            doc: None,
            parent: Some(module),
            visibility: Visibility::Public,
            in_test_scope: false,
            declares_only: false,
            scip_symbol: None,
        };
    };
    let base = file_node + 1;
    // Ids past the file node are its definitions: `build_nodes` counted them.
    let def = &unit.facts.map_or(&[][..], |f| &f.defs[..])[index as usize];
    ResolvedNode {
        kind: def.kind,
        name: def.name.as_str().into(),
        qualified: def.qualified.as_str().into(),
        file: Some(file),
        span: def.span,
        signature: def.signature,
        doc: def.doc,
        parent: Some(def.parent.map_or(file_node, |p| base + p)),
        visibility: def.visibility,
        in_test_scope: def.in_test_scope,
        declares_only: def.declares_only,
        scip_symbol: None,
    }
}

/// The (type member scope, field name) a binding types, when it types a field of a type:
/// `self.x` / `this.x` in a method's class, or a declared field.
fn field_of<'a>(facts: &'a FileFacts, binding: &'a TypeBinding) -> Option<(&'a str, &'a str)> {
    let described =
        binding.type_name.is_some() || binding.initializer.is_some() || binding.value.is_some();
    if !crate::syntax::facts::is_field_binding(&facts.defs, binding.scope, described) {
        return None;
    }
    let owner = &facts.defs[binding.scope? as usize];
    let name = binding
        .name
        .strip_prefix("self.")
        .or_else(|| binding.name.strip_prefix("this."))
        .unwrap_or(&binding.name);
    Some((owner.member_scope.as_str(), name))
}

/// The type a Go method belongs to: declared outside its type, it is still its member.
fn go_method_scope(language: Language, def: &Definition) -> Option<&str> {
    if def.parent.is_some() && language == Language::Go && def.kind == SymbolKind::Method {
        def.qualified.rsplit_once('.').map(|(scope, _)| scope)
    } else {
        None
    }
}

/// Definitions by a name of theirs.
type NameTable<'a> = HashMap<&'a str, Ids>;
