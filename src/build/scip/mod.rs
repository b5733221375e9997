//! SCIP ingestion (R-SCIP-1..3): precise symbols and occurrences from real indexers.
//!
//! An index is decoded document by document from a buffered stream, so memory is bounded
//! by the largest document, not the index. Each document is checked against the current
//! file bytes: ranges must fit, and every definition's range must spell the symbol's
//! name. A document that fails is stale — reported, never turned into edges. Positions
//! are converted to byte spans using the document's position encoding.

pub mod run;

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use protobuf::{CodedInputStream, Message};

use crate::error::{AtlasError, IoContext, Result};
use crate::syntax::facts::{Span, SymbolKind};

/// SCIP symbol roles (scip.proto `SymbolRole`).
const ROLE_DEFINITION: i32 = 0x1;
pub const ROLE_IMPORT: i32 = 0x2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    pub span: Span,
    /// Index into `ScipFacts::symbols`.
    pub symbol: u32,
    pub roles: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Repository-relative path.
    pub path: String,
    pub definitions: Vec<Occurrence>,
    pub references: Vec<Occurrence>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationshipKind {
    Implementation,
    TypeDefinition,
    Reference,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Relationship {
    pub from: u32,
    pub to: u32,
    pub kind: RelationshipKind,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ScipStats {
    pub indexes: usize,
    pub documents: usize,
    pub documents_ingested: usize,
    pub documents_stale: usize,
    pub documents_outside_inventory: usize,
    pub occurrences: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ScipDiagnostic {
    pub code: &'static str,
    pub path: String,
    pub message: String,
}

/// Everything ingested from the SCIP indexes of one build.
#[derive(Debug, Clone, Default)]
pub struct ScipFacts {
    pub symbols: Vec<String>,
    /// Kind per symbol, from SymbolInformation or the descriptor suffix.
    pub kinds: Vec<Option<SymbolKind>>,
    pub documents: Vec<Document>,
    pub relationships: Vec<Relationship>,
    pub stats: ScipStats,
    pub diagnostics: Vec<ScipDiagnostic>,
}

impl ScipFacts {
    fn intern(&mut self, ids: &mut HashMap<String, u32>, symbol: &str) -> u32 {
        if let Some(&id) = ids.get(symbol) {
            return id;
        }
        let id = self.symbols.len() as u32;
        self.symbols.push(symbol.to_string());
        self.kinds.push(kind_from_descriptor(symbol));
        ids.insert(symbol.to_string(), id);
        id
    }
}

/// `local` symbols are file-private and carry no global identity; parameters
/// (`…().(name)`) and type parameters (`…[T]`) are locals in all but name.
fn is_local(symbol: &str) -> bool {
    symbol.starts_with("local ")
        || (symbol.ends_with(')') && !symbol.ends_with(")."))
        || symbol.ends_with(']')
}

/// The descriptor part of a global symbol (after scheme, manager, package and version):
/// `scip-python python flask 3.1.0 flask.cli/find_best_app().` → `flask.cli/find_best_app().`.
pub fn descriptors(symbol: &str) -> Option<&str> {
    if is_local(symbol) {
        return None;
    }
    let mut rest = symbol;
    for _ in 0..4 {
        // Fields are separated by one space; a double space escapes a space in a field.
        let mut index = 0;
        let bytes = rest.as_bytes();
        loop {
            let at = rest[index..].find(' ')? + index;
            if bytes.get(at + 1) == Some(&b' ') {
                index = at + 2;
                continue;
            }
            rest = &rest[at + 1..];
            break;
        }
    }
    Some(rest)
}

/// Module-level symbols (`…/`, meta `…:`) stand for a file, not a definition in it.
pub fn is_module_symbol(symbol: &str) -> bool {
    symbol.ends_with('/') || symbol.ends_with(':')
}

/// The symbol that owns `symbol`: `…/Cart#total().` → `…/Cart#`.
pub fn owner_of(symbol: &str) -> Option<&str> {
    let trimmed = symbol
        .strip_suffix("().")
        .or_else(|| symbol.strip_suffix(['.', '#', '/', ':', '!']))?;
    let trimmed = trimmed
        .strip_suffix('`')
        .map_or(trimmed, |t| t.rfind('`').map_or(t, |i| &t[..i]));
    let cut = trimmed.rfind(['#', '.', '/', ':'])?;
    Some(&symbol[..=cut])
}

/// The last descriptor's name: `… shop/models.py/Cart#total().` → `total`.
pub fn descriptor_name(symbol: &str) -> &str {
    let trimmed = symbol.trim_end_matches(['.', '#', '/', ':', '!']);
    let trimmed = trimmed
        .strip_suffix(')')
        .map_or(trimmed, |t| match t.rfind('(') {
            Some(i) => &t[..i],
            None => t,
        });
    let start = trimmed
        .rfind(['#', '.', '/', ' ', ':', '`', '(', ')', '[', ']'])
        .map_or(0, |i| i + 1);
    trimmed[start..].trim_matches('`')
}

fn kind_from_descriptor(symbol: &str) -> Option<SymbolKind> {
    if is_local(symbol) {
        return None;
    }
    if symbol.ends_with(").") {
        Some(SymbolKind::Function)
    } else if symbol.ends_with('#') {
        Some(SymbolKind::Class)
    } else if symbol.ends_with('.') {
        Some(SymbolKind::Variable)
    } else {
        None
    }
}

fn kind_from_information(kind: scip::types::symbol_information::Kind) -> Option<SymbolKind> {
    use scip::types::symbol_information::Kind as K;
    Some(match kind {
        K::Function => SymbolKind::Function,
        K::Method | K::AbstractMethod | K::StaticMethod | K::Constructor => SymbolKind::Method,
        K::Class => SymbolKind::Class,
        K::Struct => SymbolKind::Struct,
        K::Enum => SymbolKind::Enum,
        K::Interface | K::Trait | K::Protocol => SymbolKind::Interface,
        K::Field | K::Property | K::StaticField => SymbolKind::Field,
        K::Constant | K::EnumMember => SymbolKind::Constant,
        K::TypeAlias => SymbolKind::TypeAlias,
        K::Macro => SymbolKind::Macro,
        K::Variable | K::StaticVariable => SymbolKind::Variable,
        K::Module | K::Package | K::Namespace => SymbolKind::Module,
        _ => return None,
    })
}

/// Byte offsets of line starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

#[derive(Clone, Copy)]
enum Encoding {
    Utf8,
    Utf16,
    Utf32,
}

/// Byte offset of character offset `column` in `line`, or `None` if it does not fit.
fn column_to_byte(line: &str, column: usize, encoding: Encoding) -> Option<usize> {
    match encoding {
        Encoding::Utf8 => (column <= line.len() && line.is_char_boundary(column)).then_some(column),
        Encoding::Utf16 => {
            let mut units = 0;
            for (i, c) in line.char_indices() {
                if units == column {
                    return Some(i);
                }
                units += c.len_utf16();
            }
            (units == column).then_some(line.len())
        }
        Encoding::Utf32 => match line.char_indices().nth(column) {
            Some((i, _)) => Some(i),
            None => (line.chars().count() == column).then_some(line.len()),
        },
    }
}

/// Converts a SCIP range to a byte span of `text`; `None` when it does not fit.
fn range_to_span(range: &[i32], text: &str, starts: &[usize], encoding: Encoding) -> Option<Span> {
    let (start_line, start_col, end_line, end_col) = match *range {
        [a, b, c] => (a, b, a, c),
        [a, b, c, d] => (a, b, c, d),
        _ => return None,
    };
    if start_line < 0 || start_col < 0 || end_line < start_line || end_col < 0 {
        return None;
    }
    let line_text = |line: usize| -> Option<&str> {
        let start = *starts.get(line)?;
        let end = starts.get(line + 1).map_or(text.len(), |e| e - 1);
        text.get(start..end.max(start))
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
    };
    let (sl, el) = (start_line as usize, end_line as usize);
    let start = starts[sl.min(starts.len() - 1)]
        + column_to_byte(line_text(sl)?, start_col as usize, encoding)?;
    let end = starts[el.min(starts.len() - 1)]
        + column_to_byte(line_text(el)?, end_col as usize, encoding)?;
    (start <= end).then_some(Span {
        start_byte: start as u32,
        end_byte: end as u32,
        start_line: sl as u32,
        end_line: el as u32,
    })
}

/// Reads the current text of an inventoried file.
pub type SourceReader<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// Ingests SCIP index files. `in_inventory(path)` says whether a document's file is
/// compiled; `read` returns its current text.
pub fn ingest(
    paths: &[PathBuf],
    in_inventory: &dyn Fn(&str) -> bool,
    read: &SourceReader,
) -> Result<ScipFacts> {
    let mut facts = ScipFacts::default();
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut seen_paths: HashMap<String, ()> = HashMap::new();
    for path in paths {
        facts.stats.indexes += 1;
        let file = open_index(path)?;
        let mut reader = BufReader::new(file);
        let mut stream = CodedInputStream::from_buf_read(&mut reader);
        let corrupt = |e: protobuf::Error| AtlasError::ScipCorrupt {
            path: path.clone(),
            reason: e.to_string(),
        };
        while let Some(tag) = stream.read_raw_tag_or_eof().map_err(corrupt)? {
            let field = tag >> 3;
            let wire =
                protobuf::rt::WireType::new(tag & 7).ok_or_else(|| AtlasError::ScipCorrupt {
                    path: path.clone(),
                    reason: format!("invalid wire type in tag {tag}"),
                })?;
            match (field, wire) {
                (2, protobuf::rt::WireType::LengthDelimited) => {
                    let bytes = stream.read_bytes().map_err(corrupt)?;
                    let document =
                        scip::types::Document::parse_from_bytes(&bytes).map_err(corrupt)?;
                    facts.stats.documents += 1;
                    if seen_paths
                        .insert(document.relative_path.clone(), ())
                        .is_some()
                    {
                        continue;
                    }
                    ingest_document(&mut facts, &mut ids, document, in_inventory, read);
                }
                (3, protobuf::rt::WireType::LengthDelimited) => {
                    // External symbols: relationships of symbols defined elsewhere.
                    let bytes = stream.read_bytes().map_err(corrupt)?;
                    let info = scip::types::SymbolInformation::parse_from_bytes(&bytes)
                        .map_err(corrupt)?;
                    add_information(&mut facts, &mut ids, &info);
                }
                (_, wire) => stream.skip_field(wire).map_err(corrupt)?,
            }
        }
    }
    facts.documents.sort_by(|a, b| a.path.cmp(&b.path));
    facts.diagnostics.sort_by(|a, b| a.path.cmp(&b.path));
    facts
        .relationships
        .sort_by_key(|r| (r.from, r.to, r.kind as u8));
    facts.relationships.dedup();
    Ok(facts)
}

fn add_information(
    facts: &mut ScipFacts,
    ids: &mut HashMap<String, u32>,
    info: &scip::types::SymbolInformation,
) {
    if info.symbol.is_empty() || is_local(&info.symbol) {
        return;
    }
    let from = facts.intern(ids, &info.symbol);
    if let Some(kind) = info.kind.enum_value().ok().and_then(kind_from_information) {
        facts.kinds[from as usize] = Some(kind);
    }
    for relationship in &info.relationships {
        if relationship.symbol.is_empty() || is_local(&relationship.symbol) {
            continue;
        }
        let to = facts.intern(ids, &relationship.symbol);
        let mut push = |kind| facts.relationships.push(Relationship { from, to, kind });
        if relationship.is_implementation {
            push(RelationshipKind::Implementation);
        }
        if relationship.is_type_definition {
            push(RelationshipKind::TypeDefinition);
        }
        if relationship.is_reference && !relationship.is_implementation {
            push(RelationshipKind::Reference);
        }
    }
}

fn ingest_document(
    facts: &mut ScipFacts,
    ids: &mut HashMap<String, u32>,
    document: scip::types::Document,
    in_inventory: &dyn Fn(&str) -> bool,
    read: &SourceReader,
) {
    let path = document.relative_path.trim_start_matches("./").to_string();
    if !in_inventory(&path) {
        facts.stats.documents_outside_inventory += 1;
        return;
    }
    let stale = |facts: &mut ScipFacts, message: String| {
        facts.stats.documents_stale += 1;
        facts.diagnostics.push(ScipDiagnostic {
            code: "atlas-scip-stale-document",
            path: path.clone(),
            message,
        });
    };
    let Some(text) = read(&path) else {
        stale(facts, "file is not readable".into());
        return;
    };
    use scip::types::PositionEncoding as P;
    let encoding = match document.position_encoding.enum_value() {
        Ok(P::UTF8CodeUnitOffsetFromLineStart) => Encoding::Utf8,
        Ok(P::UTF16CodeUnitOffsetFromLineStart) => Encoding::Utf16,
        Ok(P::UTF32CodeUnitOffsetFromLineStart) => Encoding::Utf32,
        // Unspecified: the language's indexer convention (scip-python: code points;
        // scip-typescript, scip-java: UTF-16; Go, Rust, C++: bytes).
        _ => match document.language.to_ascii_lowercase().as_str() {
            "python" => Encoding::Utf32,
            "typescript" | "javascript" | "typescriptreact" | "javascriptreact" | "java"
            | "kotlin" | "scala" => Encoding::Utf16,
            _ if path.ends_with(".py") => Encoding::Utf32,
            _ if [".ts", ".tsx", ".js", ".jsx", ".java"]
                .iter()
                .any(|e| path.ends_with(e)) =>
            {
                Encoding::Utf16
            }
            _ => Encoding::Utf8,
        },
    };
    let starts = line_starts(&text);
    let mut converted = Vec::with_capacity(document.occurrences.len());
    for occurrence in &document.occurrences {
        let Some(span) = range_to_span(&occurrence.range, &text, &starts, encoding) else {
            stale(
                facts,
                format!("range {:?} does not fit the current file", occurrence.range),
            );
            return;
        };
        if occurrence.symbol_roles & ROLE_DEFINITION != 0 && !is_local(&occurrence.symbol) {
            let spelled = text
                .get(span.start_byte as usize..span.end_byte as usize)
                .unwrap_or("");
            let name = descriptor_name(&occurrence.symbol);
            // Module definitions span the file head and constructors are spelled by
            // their class; only a real name must match.
            let checkable = !name.is_empty()
                && !spelled.is_empty()
                && name != "__init__"
                && !is_module_symbol(&occurrence.symbol);
            if checkable && spelled != name {
                stale(
                    facts,
                    format!("definition of `{name}` reads `{spelled}` in the current file"),
                );
                return;
            }
        }
        converted.push((span, occurrence));
    }
    let mut out = Document {
        path: path.clone(),
        definitions: Vec::new(),
        references: Vec::new(),
    };
    for (span, occurrence) in converted {
        if occurrence.symbol.is_empty() || is_local(&occurrence.symbol) {
            continue;
        }
        facts.stats.occurrences += 1;
        let symbol = facts.intern(ids, &occurrence.symbol);
        let item = Occurrence {
            span,
            symbol,
            roles: occurrence.symbol_roles,
        };
        if occurrence.symbol_roles & ROLE_DEFINITION != 0 {
            out.definitions.push(item);
        } else {
            out.references.push(item);
        }
    }
    for info in &document.symbols {
        add_information(facts, ids, info);
    }
    facts.stats.documents_ingested += 1;
    facts.documents.push(out);
}

/// A SCIP index file: a regular file (a FIFO or a device would block or never end).
fn open_index(path: &Path) -> Result<std::fs::File> {
    crate::source::open_regular(path).map_err(|refusal| match refusal {
        crate::source::Refusal::Io(e) => AtlasError::io(path, e),
        other => AtlasError::ScipCorrupt {
            path: path.to_path_buf(),
            reason: other.to_string(),
        },
    })
}

/// blake3 of each SCIP input, for the fingerprint (R-GEN-3).
pub fn input_hashes(paths: &[PathBuf]) -> Result<Vec<[u8; 32]>> {
    paths
        .iter()
        .map(|p| {
            let mut hasher = blake3::Hasher::new();
            let mut file = open_index(p)?;
            std::io::copy(&mut file, &mut hasher).at(p)?;
            Ok(*hasher.finalize().as_bytes())
        })
        .collect()
}

/// `index.scip` at the code root, if present (picked up automatically).
pub fn default_index(root: &Path) -> Option<PathBuf> {
    let path = root.join("index.scip");
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_names() {
        assert_eq!(
            descriptor_name("scip-python python shop 0 `shop.models`/Cart#total()."),
            "total"
        );
        assert_eq!(
            descriptor_name("scip-python python shop 0 `shop.models`/Cart#"),
            "Cart"
        );
        assert_eq!(
            descriptor_name("scip-typescript npm pkg 1.0 src/`model.ts`/User#validate()."),
            "validate"
        );
        assert_eq!(
            descriptor_name("rust-analyzer cargo shapes 0.1.0 geometry/Circle#new()."),
            "new"
        );
        assert_eq!(
            descriptor_name("scip-python python shop 0 `shop.models`/MAX_ITEMS."),
            "MAX_ITEMS"
        );
    }

    #[test]
    fn descriptor_parts() {
        assert_eq!(
            descriptors("scip-python python flask 3.1.0 `flask.cli`/find_best_app()."),
            Some("`flask.cli`/find_best_app().")
        );
        assert_eq!(
            descriptors("scip-typescript npm zod 4.0.0 src/`index.ts`/z."),
            Some("src/`index.ts`/z.")
        );
        assert_eq!(descriptors("local 4"), None);
        assert_eq!(
            descriptors("a  b c d e f/"),
            Some("f/"),
            "double space escapes a space"
        );
    }

    #[test]
    fn owners_locals_and_modules() {
        let total = "scip-python python shop 0 `shop.models`/Cart#total().";
        assert_eq!(
            owner_of(total),
            Some("scip-python python shop 0 `shop.models`/Cart#")
        );
        assert_eq!(
            owner_of("scip-python python shop 0 `shop.models`/Cart#"),
            Some("scip-python python shop 0 `shop.models`/")
        );
        assert!(is_local(
            "scip-python python shop 0 `shop.models`/Cart#add().(item)"
        ));
        assert!(is_local("local 3"));
        assert!(!is_local(total));
        assert!(is_module_symbol(
            "scip-python python shop 0 `shop.models`/__init__:"
        ));
    }

    #[test]
    fn columns_in_every_encoding() {
        let line = "é = f(x)";
        assert_eq!(column_to_byte(line, 1, Encoding::Utf8), None, "inside é");
        assert_eq!(column_to_byte(line, 3, Encoding::Utf8), Some(3));
        assert_eq!(column_to_byte(line, 1, Encoding::Utf16), Some(2));
        assert_eq!(column_to_byte(line, 1, Encoding::Utf32), Some(2));
        assert_eq!(column_to_byte(line, 9, Encoding::Utf32), None);
        assert_eq!(column_to_byte(line, 8, Encoding::Utf32), Some(9));
    }

    #[test]
    fn ranges_must_fit() {
        let text = "def f():\n    return 1\n";
        let starts = line_starts(text);
        let span = range_to_span(&[0, 4, 5], text, &starts, Encoding::Utf8).unwrap();
        assert_eq!(&text[span.start_byte as usize..span.end_byte as usize], "f");
        assert!(range_to_span(&[0, 4, 50], text, &starts, Encoding::Utf8).is_none());
        assert!(range_to_span(&[9, 0, 1], text, &starts, Encoding::Utf8).is_none());
        assert!(range_to_span(&[0, 4], text, &starts, Encoding::Utf8).is_none());
    }
}
