//! The graph vocabulary shared by resolution, the compiled graph and its readers:
//! edge kinds, provenance and resolution classes (R-RES-2/3). Discriminants are on-disk
//! codes of the graph format and never change meaning.

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum EdgeKind {
    Contains = 0,
    Calls = 1,
    References = 2,
    UsesType = 3,
    Implements = 4,
    Imports = 5,
}

impl EdgeKind {
    pub const ALL: [EdgeKind; 6] = [
        EdgeKind::Contains,
        EdgeKind::Calls,
        EdgeKind::References,
        EdgeKind::UsesType,
        EdgeKind::Implements,
        EdgeKind::Imports,
    ];

    pub fn from_code(code: u8) -> Option<EdgeKind> {
        EdgeKind::ALL.get(code as usize).copied()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EdgeKind::Contains => "contains",
            EdgeKind::Calls => "calls",
            EdgeKind::References => "references",
            EdgeKind::UsesType => "uses-type",
            EdgeKind::Implements => "implements",
            EdgeKind::Imports => "imports",
        }
    }

    pub fn from_str_name(name: &str) -> Option<EdgeKind> {
        EdgeKind::ALL.into_iter().find(|k| k.as_str() == name)
    }
}

/// Edge subkinds: `implements` covers trait/interface impls and class inheritance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum EdgeSubkind {
    None = 0,
    Extends = 1,
}

impl EdgeSubkind {
    pub fn from_code(code: u8) -> EdgeSubkind {
        if code == 1 {
            EdgeSubkind::Extends
        } else {
            EdgeSubkind::None
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Provenance {
    TreeSitter = 0,
    Scip = 1,
}

impl Provenance {
    pub const ALL: [Provenance; 2] = [Provenance::TreeSitter, Provenance::Scip];

    pub fn from_code(code: u8) -> Option<Provenance> {
        Provenance::ALL.get(code as usize).copied()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::TreeSitter => "tree-sitter",
            Provenance::Scip => "scip",
        }
    }
}

/// How an edge's target was decided (R-RES-1/2), strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Resolution {
    Precise = 0,
    Import = 1,
    Scope = 2,
    Qualified = 3,
    UniqueName = 4,
}

impl Resolution {
    pub const ALL: [Resolution; 5] = [
        Resolution::Precise,
        Resolution::Import,
        Resolution::Scope,
        Resolution::Qualified,
        Resolution::UniqueName,
    ];

    pub fn from_code(code: u8) -> Option<Resolution> {
        Resolution::ALL.get(code as usize).copied()
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Resolution::Precise => "precise",
            Resolution::Import => "import",
            Resolution::Scope => "scope",
            Resolution::Qualified => "qualified",
            Resolution::UniqueName => "unique-name",
        }
    }
}

/// File classes (R-INV-4); they drive projection's source-admission rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileClass {
    Source = 0,
    Test = 1,
    Generated = 2,
    Vendored = 3,
    Doc = 4,
    Manifest = 5,
}

impl FileClass {
    pub const ALL: [FileClass; 6] = [
        FileClass::Source,
        FileClass::Test,
        FileClass::Generated,
        FileClass::Vendored,
        FileClass::Doc,
        FileClass::Manifest,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FileClass::Source => "source",
            FileClass::Test => "test",
            FileClass::Generated => "generated",
            FileClass::Vendored => "vendored",
            FileClass::Doc => "doc",
            FileClass::Manifest => "manifest",
        }
    }

    pub fn from_code(code: u8) -> Option<FileClass> {
        FileClass::ALL.get(code as usize).copied()
    }
}
