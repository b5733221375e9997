//! Per-file facts: what extraction learns from one file's bytes, independent of its path.
//!
//! Facts are cached by content (R-EXT-3), so nothing here may depend on where the file
//! lives; path-dependent work (module names, imports to files) belongs to `resolve`.

use crate::code_enum::code_enum;

use rkyv::{Archive, Deserialize, Serialize};

/// A byte range with its 0-based line range (end line inclusive).
#[derive(Archive, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Span {
    pub start_byte: u32,
    pub end_byte: u32,
    pub start_line: u32,
    pub end_line: u32,
}

impl Span {
    pub fn contains(&self, other: &Span) -> bool {
        self.start_byte <= other.start_byte && other.end_byte <= self.end_byte
    }
}

code_enum! {
    /// Symbol kinds (R-RES-3). The discriminants are the on-disk codes of the graph format.
    #[derive(Archive, Serialize, Deserialize)]
    pub enum SymbolKind {
        Module = 0 => "module",
        File = 1 => "file",
        Function = 2 => "function",
        Method = 3 => "method",
        Class = 4 => "class",
        Struct = 5 => "struct",
        Enum = 6 => "enum",
        Interface = 7 => "interface",
        Impl = 8 => "impl",
        Field = 9 => "field",
        Constant = 10 => "constant",
        TypeAlias = 11 => "type-alias",
        Macro = 12 => "macro",
        Variable = 13 => "variable",
    }
}

impl SymbolKind {
    /// Kinds that own members: a function directly inside one is a method.
    pub fn is_type_container(self) -> bool {
        matches!(
            self,
            SymbolKind::Class
                | SymbolKind::Struct
                | SymbolKind::Enum
                | SymbolKind::Interface
                | SymbolKind::Impl
        )
    }

    pub fn is_callable(self) -> bool {
        matches!(
            self,
            SymbolKind::Function | SymbolKind::Method | SymbolKind::Macro
        )
    }

    pub fn is_type(self) -> bool {
        matches!(
            self,
            SymbolKind::Class
                | SymbolKind::Struct
                | SymbolKind::Enum
                | SymbolKind::Interface
                | SymbolKind::TypeAlias
        )
    }
}

code_enum! {
    #[derive(Archive, Serialize, Deserialize)]
    pub enum Visibility {
        Public = 0 => "public",
        Private = 1 => "private",
        /// Language default (package-private, crate-private, module-level without marker).
        Internal = 2 => "internal",
    }
}

/// A definition found in a file.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub kind: SymbolKind,
    pub name: String,
    /// In-file qualified name: `Class.method` (Python, JS/TS, Go, Java), `Type::method` (Rust).
    pub qualified: String,
    /// Name used to qualify members (an impl's self type; otherwise `name`).
    pub member_scope: String,
    pub span: Span,
    pub name_span: Span,
    pub signature: Span,
    pub doc: Option<Span>,
    /// Index of the enclosing definition in `FileFacts::defs`.
    pub parent: Option<u32>,
    pub visibility: Visibility,
    /// Inside a test-only scope (`#[cfg(test)] mod`).
    pub in_test_scope: bool,
    /// The declared return type of a function or method, as written (clipped):
    /// `Context`, `-> Self`, `list[Parameter]`, `(*Server, error)`.
    pub returns: Option<String>,
    /// A callable that only declares: `pass`, `...`, `raise NotImplementedError`, a
    /// docstring, `@abstractmethod`, `abstract`, or no body at all.
    pub declares_only: bool,
}

code_enum! {
    /// How a reference uses its target (R-EXT-2).
    #[derive(Archive, Serialize, Deserialize)]
    pub enum RefRole {
        Call = 0 => "call",
        TypeUse = 1 => "type-use",
        Import = 2 => "import",
        Read = 3 => "read",
        Write = 4 => "write",
        Inherit = 5 => "inherit",
        Implement = 6 => "implement",
    }
}

impl RefRole {
    /// When two patterns tag the same site, the more specific role wins (lower is stronger).
    pub fn specificity(self) -> u8 {
        match self {
            RefRole::Implement | RefRole::Inherit => 0,
            RefRole::Call => 1,
            RefRole::Import => 2,
            RefRole::TypeUse => 3,
            RefRole::Write => 4,
            RefRole::Read => 5,
        }
    }
}

/// A use of a name at a site.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub role: RefRole,
    pub name: String,
    /// Receiver expression text of a member call (`self`, `obj`, `pkg`).
    pub receiver: Option<String>,
    /// Path qualifier text (`a::b` in `a::b::c`, `pkg` in `pkg.Type`).
    pub qualifier: Option<String>,
    /// Span of the name token.
    pub site: Span,
    /// Innermost enclosing definition (index into `FileFacts::defs`); `None` at file level.
    pub from: Option<u32>,
    /// Where a call sits in its function (`site::*` bits); 0 for other roles.
    pub site_flags: u8,
}

/// Bits of `Reference::site_flags` and of graph call edges (graph-schema/README.md): where
/// a call sits, for `flow`'s choice of the main path (R-Q-5, issue 11).
pub mod site {
    /// In an exception or error handler (`except`, `catch`, `finally`, Go's
    /// `if err != nil`, Rust's `Err(…)` arm).
    pub const HANDLER: u8 = 1;
    /// In the body of an early-return guard (`if …: return/raise`).
    pub const GUARD: u8 = 2;
    /// Its value is returned, assigned, passed on or called on: the flow carries it.
    pub const RESULT: u8 = 4;
    /// The function's own value comes from it: returned, or assigned to a name the
    /// function returns.
    pub const RETURNED: u8 = 8;
    /// It builds the error the function leaves with (`raise X(…)`, `throw new X(…)`, Go's
    /// `panic(…)`): the error path.
    pub const RAISED: u8 = 16;
}

/// One imported binding (`from m import a as b` yields module `m`, name `a`, alias `b`).
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// Module text as written (`..pkg.mod`, `./util`, `crate::a::b`, `github.com/x/y`).
    pub module: String,
    /// Imported member, `None` when the module itself is bound.
    pub name: Option<String>,
    /// Local name when renamed.
    pub alias: Option<String>,
    pub wildcard: bool,
    pub site: Span,
}

impl Import {
    /// The name this import binds in the importing file, if any.
    pub fn local_name(&self) -> Option<&str> {
        if self.wildcard {
            return None;
        }
        if let Some(alias) = &self.alias {
            return Some(alias);
        }
        match &self.name {
            Some(name) => Some(last_segment(name)),
            None => Some(last_segment(&self.module)),
        }
    }
}

/// Last segment of a `.`, `::` or `/` separated path.
pub fn last_segment(path: &str) -> &str {
    let path = path.trim_end_matches(['/', '.', ':']);
    let cut = path
        .rfind("::")
        .map(|i| i + 2)
        .into_iter()
        .chain(path.rfind(['.', '/']).map(|i| i + 1))
        .max()
        .unwrap_or(0);
    &path[cut..]
}

/// A local name whose type is known or knowable: a parameter, a variable, a field
/// (`self.x`/`this.x` for attributes). Resolution uses it to type member-call receivers.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct TypeBinding {
    /// Innermost enclosing definition (index into `FileFacts::defs`); for `self.x` /
    /// `this.x` and fields, the enclosing type.
    pub scope: Option<u32>,
    pub name: String,
    /// Declared type text, normalised to the bare type name (`Optional[Flask]` → `Flask`).
    pub type_name: Option<String>,
    /// The element type when the declared type is a collection (`Sequence[Route]` →
    /// `Route`): what a loop over the binding yields.
    pub items: Option<String>,
    /// The callee of the initialiser (`x = Foo()` → `Foo`), a constructor if it is a type.
    pub initializer: Option<String>,
    pub site: Span,
    /// The initialising expression as written (clipped): `self.get_adapter(url)`,
    /// `Foo::builder().port(1)`, `param` — typed by resolution through return types.
    pub value: Option<String>,
    /// The definition the value is evaluated in (for `self.x = param`, the method).
    pub value_scope: Option<u32>,
    /// The binding is an element of the value (`for x in items()`, `with f() as x`
    /// takes the value itself).
    pub element: bool,
}

code_enum! {
    #[derive(Archive, Serialize, Deserialize)]
    pub enum ParseStatus {
        Complete = 0 => "complete",
        /// Syntax errors: what the parser recovered was extracted.
        Partial = 1 => "partial",
        /// An extraction limit was hit (`FileFacts::limit` says which): facts are cut short.
        Truncated = 2 => "truncated",
    }
}

/// Everything extraction learned from one file.
#[derive(Archive, Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct FileFacts {
    pub parse_status: ParseStatus,
    /// The extraction limit that truncated these facts, when one did.
    pub limit: Option<String>,
    pub error_count: u32,
    /// 0-based lines of the first few syntax errors (diagnostics).
    pub error_lines: Vec<u32>,
    pub line_count: u32,
    /// Package declared in the file (Go `package x`, Java `package a.b`).
    pub package: Option<String>,
    pub defs: Vec<Definition>,
    pub refs: Vec<Reference>,
    pub imports: Vec<Import>,
    pub bindings: Vec<TypeBinding>,
}

/// Whether a binding scoped at `scope` describes a field (`self.x`, `this.x`, a declared
/// field): its scope is a type, and it says something of the value (`described`: a type,
/// an initializer or a value). Other files read fields through the resolver's field table,
/// which every build fills; the other bindings are read only when a file's values are
/// typed, and a build decodes them from the cache on first use.
pub fn is_field_binding(defs: &[Definition], scope: Option<u32>, described: bool) -> bool {
    described
        && scope
            .and_then(|s| defs.get(s as usize))
            .is_some_and(|owner| owner.kind.is_type_container())
}

impl FileFacts {
    /// Whether the facts hold together: every index names an earlier definition (so that
    /// walking parents terminates), every span is ordered. Extraction always produces
    /// such facts; a cache entry that does not is damaged.
    pub fn validate(&self) -> Result<(), InconsistentFacts> {
        let ordered =
            |span: &Span| span.start_byte <= span.end_byte && span.start_line <= span.end_line;
        for (index, def) in self.defs.iter().enumerate() {
            if def.parent.is_some_and(|p| p as usize >= index) {
                return Err(InconsistentFacts(format!(
                    "definition {index} has a parent that does not precede it"
                )));
            }
            if ![def.span, def.name_span, def.signature].iter().all(ordered)
                || def.doc.as_ref().is_some_and(|d| !ordered(d))
            {
                return Err(InconsistentFacts(format!(
                    "definition {index} has a reversed span"
                )));
            }
        }
        let in_range = |index: Option<u32>| index.is_none_or(|i| (i as usize) < self.defs.len());
        if let Some(at) = self
            .refs
            .iter()
            .position(|r| !in_range(r.from) || !ordered(&r.site))
        {
            return Err(InconsistentFacts(format!("reference {at} is out of range")));
        }
        if let Some(at) = self
            .bindings
            .iter()
            .position(|b| !in_range(b.scope) || !in_range(b.value_scope) || !ordered(&b.site))
        {
            return Err(InconsistentFacts(format!("binding {at} is out of range")));
        }
        if self.imports.iter().any(|i| !ordered(&i.site)) {
            return Err(InconsistentFacts("an import has a reversed span".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_segment_handles_every_separator() {
        assert_eq!(last_segment("a::b::c"), "c");
        assert_eq!(last_segment("pkg.mod.Class"), "Class");
        assert_eq!(last_segment("./util/helpers"), "helpers");
        assert_eq!(last_segment("plain"), "plain");
        assert_eq!(last_segment("github.com/x/y"), "y");
    }

    #[test]
    fn import_local_name_prefers_alias_then_member() {
        let mut import = Import {
            module: "a.b".into(),
            name: Some("C".into()),
            alias: None,
            wildcard: false,
            site: Span::default(),
        };
        assert_eq!(import.local_name(), Some("C"));
        import.alias = Some("D".into());
        assert_eq!(import.local_name(), Some("D"));
        import.wildcard = true;
        assert_eq!(import.local_name(), None);
    }
}

/// Facts that do not hold together (a damaged cache entry): which part, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InconsistentFacts(pub String);
