//! What resolving a file reads, recorded so that an edit re-resolves only the files whose
//! reads it touched (graph-schema/README.md, "The edit path").
//!
//! Three kinds of read are recorded. A *file read* is a use of another file's facts,
//! local bindings or top-level names: what its interface digest covers. A *bindings
//! read* is a use of its import bindings (wildcards and unresolved imports included),
//! which its bindings digest covers. A *key read* is
//! a lookup in a name-keyed table shared by all files (`by_name`, `by_qualified`,
//! `members`, `field_types`, `packages`), hits and misses alike: a definition added
//! elsewhere can change what a lookup finds without the reader having read the file that
//! adds it. Each file also *contributes* keys: the table keys its definitions are entered
//! under. An edit's key delta is what its reshaped files contribute, before and after.
//!
//! Reading a node's attributes is not recorded: every node id a resolution holds came
//! from a recorded read — a key (whose delta covers any change of its definitions), a
//! file's top level or facts, or a file's import bindings (a symbol they bind to counts
//! as a read of its file) — and the files an edge reaches are added to the reads at the
//! end.
//!
//! Tables derived from paths alone (files by path, directories, dotted module names,
//! Rust modules, workspace packages) are not recorded: an incremental resolution requires
//! the same files, in the same order, as the resolution it reuses.
//!
//! The recorder is thread-local: a file is resolved on one thread, start to end, and the
//! lookups are deep in the resolver's call tree.

use std::cell::RefCell;
use std::hash::Hasher;

use rustc_hash::{FxHashSet as HashSet, FxHasher};

use super::*;

/// A table shared by all files, as a key's first component.
#[derive(Clone, Copy)]
#[repr(u8)]
pub(super) enum Table {
    Name = 1,
    Qualified = 2,
    Member = 3,
    Field = 4,
    Package = 5,
}

/// A table key's stable hash. A collision only re-resolves a file that did not need it.
pub(super) fn key(table: Table, parts: &[&str]) -> u64 {
    let mut h = FxHasher::default();
    h.write_u8(table as u8);
    for part in parts {
        h.write(part.as_bytes());
        h.write_u8(0xff);
    }
    h.finish()
}

/// One file's recorded reads.
#[derive(Default)]
pub(super) struct Reads {
    pub(super) files: HashSet<u32>,
    pub(super) bindings: HashSet<u32>,
    pub(super) keys: HashSet<u64>,
}

thread_local! {
    static READS: RefCell<Option<Reads>> = const { RefCell::new(None) };
}

/// Records the reads made on this thread until `finish`.
pub(super) fn start() {
    READS.with(|r| *r.borrow_mut() = Some(Reads::default()));
}

pub(super) fn finish() -> Reads {
    READS.with(|r| r.borrow_mut().take()).unwrap_or_default()
}

fn file_read(file: u32) {
    READS.with(|r| {
        if let Some(reads) = r.borrow_mut().as_mut() {
            reads.files.insert(file);
        }
    });
}

fn bindings_read(file: u32) {
    READS.with(|r| {
        if let Some(reads) = r.borrow_mut().as_mut() {
            reads.bindings.insert(file);
        }
    });
}

fn key_read(key: u64) {
    READS.with(|r| {
        if let Some(reads) = r.borrow_mut().as_mut() {
            reads.keys.insert(key);
        }
    });
}

/// Whether a recorder is running on this thread (keys are hashed only then).
fn recording() -> bool {
    READS.with(|r| r.borrow().is_some())
}

/// The recording accessors: every read of shared resolver state during `resolve_file`
/// goes through one of these.
impl<'a> Resolver<'a> {
    pub(super) fn node(&self, id: u32) -> &ResolvedNode<'a> {
        &self.out.nodes[id as usize]
    }

    pub(super) fn facts(&self, file: u32) -> Option<&'a FileFacts> {
        file_read(file);
        self.units[file as usize].facts
    }

    /// Every reference of `file` (decoded now when its facts came from the cache).
    pub(super) fn references(&self, file: u32) -> &'a [Reference] {
        file_read(file);
        let unit = &self.units[file as usize];
        match (unit.lazy, unit.facts) {
            (Some(lazy), _) => lazy.references(),
            (None, Some(facts)) => &facts.refs,
            (None, None) => &[],
        }
    }

    /// Every type binding of `file` (decoded now when its facts came from the cache).
    pub(super) fn type_bindings(&self, file: u32) -> &'a [TypeBinding] {
        file_read(file);
        self.all_type_bindings(file)
    }

    /// `type_bindings` without recording a read: for digests of the file itself.
    pub(super) fn all_type_bindings(&self, file: u32) -> &'a [TypeBinding] {
        let unit = &self.units[file as usize];
        match (unit.lazy, unit.facts) {
            (Some(lazy), _) => lazy.bindings(),
            (None, Some(facts)) => &facts.bindings,
            (None, None) => &[],
        }
    }

    /// The definitions named `name` directly inside `parent` (an inline module's items).
    pub(super) fn children_named(&self, parent: u32, name: &str) -> Option<&Ids> {
        file_read(self.node(parent).file?);
        // The table's keys borrow the facts; every definition's name is a key of
        // `by_name`, which lends the same text for that lifetime.
        let (&name, _) = self.by_name.get_key_value(name)?;
        self.children.get(&(parent, name))
    }

    pub(super) fn top_level_of(&self, file: u32) -> &HashMap<&'a str, Vec<u32>> {
        file_read(file);
        &self.top_level[file as usize]
    }

    /// What `name` is bound to by `file`'s imports (`None` as well while the first pass
    /// of `bind_imports` runs). A symbol's file is read too: its reader goes on to read
    /// the symbol's attributes, which that file's interface covers.
    pub(super) fn bound(&self, file: u32, name: &str) -> Option<&Target> {
        bindings_read(file);
        let target = self.imports.get(file as usize)?.bindings.get(name)?;
        self.target_read(target);
        Some(target)
    }

    /// Every target of `file`'s import bindings.
    pub(super) fn bound_targets(&self, file: u32) -> impl Iterator<Item = &Target> {
        bindings_read(file);
        self.imports
            .get(file as usize)
            .into_iter()
            .flat_map(|imports| imports.bindings.values())
            .inspect(|target| self.target_read(target))
    }

    fn target_read(&self, target: &Target) {
        if let Target::Symbol(id) = target
            && let Some(file) = self.out.nodes.get(*id as usize).and_then(|n| n.file)
        {
            file_read(file);
        }
    }

    pub(super) fn wildcards_of(&self, file: u32) -> &[u32] {
        bindings_read(file);
        self.imports
            .get(file as usize)
            .map_or(&[], |imports| imports.wildcards.as_slice())
    }

    /// Whether `name` came from an import that did not resolve (a name, or any name of
    /// a wildcard import that did not).
    pub(super) fn opaquely_imported(&self, file: u32, name: &str) -> bool {
        bindings_read(file);
        self.imports.get(file as usize).is_some_and(|imports| {
            imports.unresolved.contains(name)
                || (imports.unresolved_wildcard && !imports.external.contains(name))
        })
    }

    /// Whether any `use` of `file` names `name`, followed or not (`use std::future::ready`,
    /// `use anyhow::bail`): a bare call of it is not a macro the crate itself defines.
    pub(super) fn imports_name(&self, file: u32, name: &str) -> bool {
        bindings_read(file);
        self.imports.get(file as usize).is_some_and(|imports| {
            imports.unresolved.contains(name)
                || imports.external.contains(name)
                || imports.bindings.get(name).is_some()
        })
    }

    /// Whether another definition shares the node's (file, qualified name, kind).
    pub(super) fn is_overloaded(&self, id: u32) -> bool {
        self.overloaded.get(id as usize).copied().unwrap_or(true)
    }

    pub(super) fn named(&self, name: &str) -> Option<&Ids> {
        if recording() {
            key_read(key(Table::Name, &[name]));
        }
        self.by_name.get(name)
    }

    pub(super) fn qualified_named(&self, qualified: &str) -> Option<&Ids> {
        if recording() {
            key_read(key(Table::Qualified, &[qualified]));
        }
        self.by_qualified.get(qualified)
    }

    pub(super) fn members_named<'s>(&'s self, scope: &'s str, name: &'s str) -> Option<&'s Ids> {
        if recording() {
            key_read(key(Table::Member, &[scope, name]));
        }
        self.members.get(&(scope, name))
    }

    pub(super) fn field_type(&self, scope: &str, name: &str) -> Option<FieldType<'a>> {
        if recording() {
            key_read(key(Table::Field, &[scope, name]));
        }
        self.field_types.get(&(scope, name)).copied()
    }

    pub(super) fn package_files(&self, package: &str) -> Option<&Vec<u32>> {
        if recording() {
            key_read(key(Table::Package, &[package]));
        }
        self.packages.get(package)
    }
}
