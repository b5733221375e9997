//! A fact cache entry (R-EXT-3), version 2: a head that every build reads, a body that
//! only the files a build resolves read (graph-schema/README.md, "Generation directory").
//!
//! ```text
//! magic(8) version(4) reserved(4) key(32)
//! blake3(head)(32) head-length(8) blake3(body)(32) body-length(8)     128 bytes
//! head: rkyv FileFacts holding only the references that are bases and the type
//!       bindings that are fields, zero-padded to a multiple of 16
//! body: rkyv Body, every reference and type binding in extraction order
//! ```
//!
//! The head is what the resolver's tables need of every file; the body is most of an
//! entry (84% on sympy) and is read, checked and decoded on first use (`LazyFacts`). A
//! body found damaged then is reported by `LazyFacts::damage`, and the build extracts that
//! file again (`pipeline::build`).
//!
//! Architecture invariant: an entry is trusted only whole — the head when it is read, the
//! body when it is decoded — checked against the key, both checksums, the archives, the
//! facts' own consistency and the head's agreement with the body; the whole read
//! (`read_whole`) and the lazy one trust the same entries
//! (`tests/fuzz.rs::fact_cache_entries_never_panic_the_resolver`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::syntax::facts::{FileFacts, RefRole, Reference, TypeBinding};

pub(super) const MAGIC: &[u8; 8] = b"ATLFACT\0";
pub(super) const VERSION: u32 = 2;
pub(super) const HEADER: usize = 128;
/// The alignment rkyv's archives need; the header and the padded head are multiples.
pub(super) const ALIGN: usize = 16;
const _: () = assert!(HEADER.is_multiple_of(ALIGN));

pub(super) type Aligned = rkyv::util::AlignedVec<ALIGN>;

/// What the fact cache holds for a key.
pub enum Cached<T> {
    Hit(T),
    Miss,
    /// An entry exists but cannot be trusted (the reason says why).
    Damaged(String),
}

/// A whole cache entry's facts.
pub type CachedFacts = Cached<FileFacts>;

/// An entry's body: every reference and type binding of the file.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize, Debug, Default, PartialEq)]
struct Body {
    refs: Vec<Reference>,
    bindings: Vec<TypeBinding>,
}

fn is_base(reference: &Reference) -> bool {
    matches!(reference.role, RefRole::Inherit | RefRole::Implement)
}

/// The head's share of `facts`: bases among the references, fields among the bindings.
fn head_of(facts: &FileFacts) -> FileFacts {
    FileFacts {
        parse_status: facts.parse_status,
        limit: facts.limit.clone(),
        error_count: facts.error_count,
        error_lines: facts.error_lines.clone(),
        line_count: facts.line_count,
        package: facts.package.clone(),
        defs: facts.defs.clone(),
        refs: facts.refs.iter().filter(|r| is_base(r)).cloned().collect(),
        imports: facts.imports.clone(),
        bindings: fields(&containers(&facts.defs), &facts.bindings)
            .cloned()
            .collect(),
    }
}

/// Which definitions are type containers: what tells a field binding from another.
fn containers(defs: &[crate::syntax::facts::Definition]) -> Vec<bool> {
    defs.iter().map(|d| d.kind.is_type_container()).collect()
}

/// The bindings that are fields, given which definitions are type containers (the
/// test of `is_field_binding`).
fn fields<'b>(
    containers: &'b [bool],
    bindings: &'b [TypeBinding],
) -> impl Iterator<Item = &'b TypeBinding> {
    bindings.iter().filter(move |b| {
        let described = b.type_name.is_some() || b.initializer.is_some() || b.value.is_some();
        described
            && b.scope
                .and_then(|s| containers.get(s as usize))
                .copied()
                .unwrap_or(false)
    })
}

/// The bytes of `facts`' entry under `key`.
pub(super) fn encode(key: &blake3::Hash, facts: &FileFacts) -> Result<Vec<u8>, String> {
    let head = rkyv::to_bytes::<rkyv::rancor::Error>(&head_of(facts)).map_err(|e| e.to_string())?;
    let body = Body {
        refs: facts.refs.clone(),
        bindings: facts.bindings.clone(),
    };
    let body = rkyv::to_bytes::<rkyv::rancor::Error>(&body).map_err(|e| e.to_string())?;
    Ok(assemble(key, &head, &body))
}

/// An entry from its parts' archives.
fn assemble(key: &blake3::Hash, head: &[u8], body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER + padded(head.len()) + body.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(key.as_bytes());
    bytes.extend_from_slice(blake3::hash(head).as_bytes());
    bytes.extend_from_slice(&(head.len() as u64).to_le_bytes());
    bytes.extend_from_slice(blake3::hash(body).as_bytes());
    bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
    bytes.extend_from_slice(head);
    bytes.resize(HEADER + padded(head.len()), 0);
    bytes.extend_from_slice(body);
    bytes
}

fn padded(len: usize) -> usize {
    len.next_multiple_of(ALIGN)
}

/// Where an entry's parts are, from its header.
struct Layout {
    head_hash: [u8; 32],
    head_len: usize,
    body_hash: [u8; 32],
    body_len: usize,
}

impl Layout {
    fn body_at(&self) -> u64 {
        (HEADER + padded(self.head_len)) as u64
    }
}

/// Why an entry cannot be read: it is not there, or it cannot be trusted.
enum Unread {
    Missing,
    Damaged(String),
}

impl<T> From<Unread> for Cached<T> {
    fn from(unread: Unread) -> Self {
        match unread {
            Unread::Missing => Cached::Miss,
            Unread::Damaged(reason) => Cached::Damaged(reason),
        }
    }
}

fn damaged(reason: impl Into<String>) -> Unread {
    Unread::Damaged(reason.into())
}

/// The entry at `path` opened, its header checked against `key` and the file's length.
fn open(path: &Path, key: &blake3::Hash) -> Result<(File, Layout), Unread> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unread::Missing),
        Err(e) => return Err(damaged(e.to_string())),
    };
    let mut header = [0u8; HEADER];
    file.read_exact(&mut header)
        .map_err(|_| damaged("not a fact cache entry"))?;
    if &header[..8] != MAGIC {
        return Err(damaged("not a fact cache entry"));
    }
    if header[8..12] != VERSION.to_le_bytes() {
        return Err(damaged("another fact cache version"));
    }
    if &header[16..48] != key.as_bytes() {
        return Err(damaged("entry of another file (its key differs)"));
    }
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&header[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    let hash = |at: usize| {
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(&header[at..at + 32]);
        bytes
    };
    let size = file.metadata().map_err(|e| damaged(e.to_string()))?.len();
    let (head_len, body_len) = (word(80), word(120));
    // Checked before any length is used: a header cannot make a read run away.
    let expected = (HEADER as u64)
        .checked_add(
            head_len
                .checked_next_multiple_of(ALIGN as u64)
                .unwrap_or(u64::MAX),
        )
        .and_then(|n| n.checked_add(body_len));
    if expected != Some(size) {
        return Err(damaged("truncated entry"));
    }
    let layout = Layout {
        head_hash: hash(48),
        head_len: head_len as usize,
        body_hash: hash(88),
        body_len: body_len as usize,
    };
    Ok((file, layout))
}

/// `len` bytes of `file` at its position, aligned for an archive, checked against `hash`.
fn read_part(file: &mut File, len: usize, hash: &[u8; 32]) -> Result<Aligned, Unread> {
    let mut bytes = Aligned::with_capacity(len);
    bytes.resize(len, 0);
    file.read_exact(&mut bytes)
        .map_err(|_| damaged("truncated entry"))?;
    if blake3::hash(&bytes).as_bytes() != hash {
        return Err(damaged("payload checksum mismatch"));
    }
    Ok(bytes)
}

fn read_head(file: &mut File, layout: &Layout) -> Result<FileFacts, Unread> {
    let bytes = read_part(file, layout.head_len, &layout.head_hash)?;
    decode_head(&bytes)
}

/// A head's facts from its archive, checked as facts (its checksum is the caller's).
fn decode_head(bytes: &[u8]) -> Result<FileFacts, Unread> {
    let head = rkyv::from_bytes::<FileFacts, rkyv::rancor::Error>(bytes)
        .map_err(|e| damaged(format!("archive: {e}")))?;
    head.validate().map_err(|e| damaged(e.to_string()))?;
    Ok(head)
}

/// A head kept apart from its entry (`heads_pack`, which checked its bytes' checksum):
/// its bytes (aligned as an archive needs) decoded and checked as the entry's head is,
/// with the body at `path` read on first use.
pub(super) fn head_from(
    bytes: &[u8],
    path: &Path,
    key: &blake3::Hash,
) -> Result<(Arc<FileFacts>, LazyFacts), String> {
    let head = decode_head(bytes).map_err(|unread| match unread {
        Unread::Missing => "missing".to_string(),
        Unread::Damaged(reason) => reason,
    })?;
    let head = Arc::new(head);
    let lazy = LazyFacts::of(path, key, head.clone());
    Ok((head, lazy))
}

/// The head of the entry at `path`, as the bytes it is stored as (checked against its
/// checksum); `None` when the entry is missing or cannot be trusted (a heads pack
/// leaves it out).
pub(super) fn head_bytes(path: &Path, key: &blake3::Hash) -> Option<Aligned> {
    let (mut file, layout) = open(path, key).ok()?;
    read_part(&mut file, layout.head_len, &layout.head_hash).ok()
}

/// The body at its place, checked against the head it belongs to: its references and
/// bindings hold together with the head's definitions as `FileFacts::validate` requires,
/// and its bases and fields are the head's.
fn read_body(file: &mut File, layout: &Layout, head: &FileFacts) -> Result<Body, Unread> {
    file.seek(SeekFrom::Start(layout.body_at()))
        .map_err(|e| damaged(e.to_string()))?;
    let bytes = read_part(file, layout.body_len, &layout.body_hash)?;
    let body = rkyv::from_bytes::<Body, rkyv::rancor::Error>(&bytes)
        .map_err(|e| damaged(format!("archive: {e}")))?;
    // Which definitions are type containers (their count bounds every index).
    let containers = containers(&head.defs);
    let in_range = |index: Option<u32>| index.is_none_or(|i| (i as usize) < containers.len());
    let ordered = |site: &crate::syntax::facts::Span| {
        site.start_byte <= site.end_byte && site.start_line <= site.end_line
    };
    for (at, r) in body.refs.iter().enumerate() {
        if !ordered(&r.site) || !in_range(r.from) {
            return Err(damaged(format!("reference {at} is out of range")));
        }
    }
    for (at, b) in body.bindings.iter().enumerate() {
        if !ordered(&b.site) || !in_range(b.scope) || !in_range(b.value_scope) {
            return Err(damaged(format!("binding {at} is out of range")));
        }
    }
    if !body.refs.iter().filter(|r| is_base(r)).eq(head.refs.iter()) {
        return Err(damaged("the head's bases are not the body's"));
    }
    if !fields(&containers, &body.bindings).eq(head.bindings.iter()) {
        return Err(damaged("the head's fields are not the body's"));
    }
    Ok(body)
}

/// The whole facts of the entry at `path`, head and body.
pub(super) fn read_whole(path: &Path, key: &blake3::Hash) -> CachedFacts {
    let read = || -> Result<FileFacts, Unread> {
        let (mut file, layout) = open(path, key)?;
        let mut facts = read_head(&mut file, &layout)?;
        let body = read_body(&mut file, &layout, &facts)?;
        facts.refs = body.refs;
        facts.bindings = body.bindings;
        facts.validate().map_err(|e| damaged(e.to_string()))?;
        Ok(facts)
    };
    match read() {
        Ok(facts) => Cached::Hit(facts),
        Err(unread) => unread.into(),
    }
}

/// The head of the entry at `path` (its facts with only their bases and fields) and the
/// body, read on first use.
pub(super) fn read_lazily(path: &Path, key: &blake3::Hash) -> Cached<(Arc<FileFacts>, LazyFacts)> {
    let read = || -> Result<(Arc<FileFacts>, LazyFacts), Unread> {
        let (mut file, layout) = open(path, key)?;
        let head = Arc::new(read_head(&mut file, &layout)?);
        let lazy = LazyFacts::of(path, key, head.clone());
        Ok((head, lazy))
    };
    match read() {
        Ok(read) => Cached::Hit(read),
        Err(unread) => unread.into(),
    }
}

/// Every reference and type binding of facts read by `read_lazily`, read from the entry's
/// body on first use. A body that cannot be read or trusted then decodes as nothing, and
/// says so (`damage`): the build that read it does not publish what it resolved, and
/// extracts the file again.
pub struct LazyFacts {
    path: PathBuf,
    key: blake3::Hash,
    /// The head the body must agree with (checked when it was read).
    head: Arc<FileFacts>,
    body: OnceLock<Decoded>,
}

struct Decoded {
    body: Body,
    damage: Option<String>,
}

impl LazyFacts {
    /// The body of the entry at `path`, to be read on first use and checked against `head`.
    fn of(path: &Path, key: &blake3::Hash, head: Arc<FileFacts>) -> LazyFacts {
        LazyFacts {
            path: path.to_path_buf(),
            key: *key,
            head,
            body: OnceLock::new(),
        }
    }

    fn decoded(&self) -> &Decoded {
        self.body.get_or_init(|| {
            let read = || -> Result<Body, Unread> {
                let (mut file, layout) = open(&self.path, &self.key)?;
                read_body(&mut file, &layout, &self.head)
            };
            match read() {
                Ok(body) => Decoded { body, damage: None },
                Err(Unread::Missing) => Decoded {
                    body: Body::default(),
                    damage: Some("the entry is gone".into()),
                },
                Err(Unread::Damaged(reason)) => Decoded {
                    body: Body::default(),
                    damage: Some(reason),
                },
            }
        })
    }

    /// Every reference of the file, in extraction order.
    pub fn references(&self) -> &[Reference] {
        &self.decoded().body.refs
    }

    /// Every type binding of the file, in extraction order.
    pub fn bindings(&self) -> &[TypeBinding] {
        &self.decoded().body.bindings
    }

    /// Why the body, once decoded, could not be trusted (`None` while it is not decoded,
    /// or when it could).
    pub fn damage(&self) -> Option<&str> {
        self.body.get()?.damage.as_deref()
    }
}

impl std::fmt::Debug for LazyFacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LazyFacts({}, body decoded: {})",
            self.path.display(),
            self.body.get().is_some()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::lang::Language;

    /// A Python file with a base, a field, other bindings and calls.
    fn facts() -> FileFacts {
        let text = "class A(Base):\n    def __init__(self):\n        self.x: int = 1\n\n    def f(self, y: str):\n        z = g(y)\n        return self.x\n";
        crate::syntax::extract::extract(Language::Python, text).unwrap()
    }

    fn stored(dir: &Path, facts: &FileFacts) -> (PathBuf, blake3::Hash) {
        let key = blake3::hash(b"a.py");
        let path = dir.join("entry.facts");
        std::fs::write(&path, encode(&key, facts).unwrap()).unwrap();
        (path, key)
    }

    #[test]
    fn an_entry_reads_back_whole_and_as_a_head_with_its_body_on_first_use() {
        let temp = tempfile::tempdir().unwrap();
        let facts = facts();
        assert!(facts.refs.iter().any(is_base) && facts.refs.iter().any(|r| !is_base(r)));
        let (path, key) = stored(temp.path(), &facts);
        match read_whole(&path, &key) {
            Cached::Hit(whole) => assert_eq!(whole, facts),
            _ => panic!("a stored entry reads back whole"),
        }
        let Cached::Hit((head, lazy)) = read_lazily(&path, &key) else {
            panic!("a stored entry reads back lazily");
        };
        assert_eq!(head.defs, facts.defs);
        assert!(head.refs.iter().all(is_base) && !head.refs.is_empty());
        assert!(head.bindings.len() < facts.bindings.len() && !head.bindings.is_empty());
        assert!(lazy.damage().is_none());
        assert_eq!(lazy.references(), facts.refs.as_slice());
        assert_eq!(lazy.bindings(), facts.bindings.as_slice());
        assert!(lazy.damage().is_none());
    }

    #[test]
    fn a_damaged_body_leaves_the_head_readable_and_says_so_when_it_is_decoded() {
        let temp = tempfile::tempdir().unwrap();
        let facts = facts();
        let (path, key) = stored(temp.path(), &facts);
        let Cached::Hit((_, lazy)) = read_lazily(&path, &key) else {
            panic!("a stored entry reads back lazily");
        };
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0x5a;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(read_whole(&path, &key), Cached::Damaged(_)));
        assert!(matches!(read_lazily(&path, &key), Cached::Hit(_)));
        // Damaged after the head was read: the body decodes as nothing, and says why.
        assert!(lazy.references().is_empty() && lazy.bindings().is_empty());
        assert_eq!(lazy.damage(), Some("payload checksum mismatch"));
        // Gone altogether.
        let Cached::Hit((_, lazy)) = read_lazily(&path, &key) else {
            panic!("the head is intact");
        };
        std::fs::remove_file(&path).unwrap();
        assert!(lazy.references().is_empty());
        assert_eq!(lazy.damage(), Some("the entry is gone"));
    }

    #[test]
    fn entries_of_another_version_key_or_length_are_damaged() {
        let temp = tempfile::tempdir().unwrap();
        let facts = facts();
        let (path, key) = stored(temp.path(), &facts);
        let bytes = std::fs::read(&path).unwrap();
        let reason = |bytes: &[u8], key: &blake3::Hash| {
            std::fs::write(&path, bytes).unwrap();
            match read_lazily(&path, key) {
                Cached::Damaged(reason) => reason,
                Cached::Hit(_) => "hit".into(),
                Cached::Miss => "miss".into(),
            }
        };
        let mut v1 = bytes.clone();
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(reason(&v1, &key), "another fact cache version");
        assert_eq!(
            reason(&bytes, &blake3::hash(b"b.py")),
            "entry of another file (its key differs)"
        );
        assert_eq!(reason(&bytes[..bytes.len() - 1], &key), "truncated entry");
        assert_eq!(reason(&bytes[..40], &key), "not a fact cache entry");
        let mut huge = bytes.clone();
        huge[80..88].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(reason(&huge, &key), "truncated entry");
        // Parts that are each whole but not of one file: the body is refused.
        let other = crate::syntax::extract::extract(
            Language::Python,
            "class A:\n    def __init__(self):\n        self.x: int = 1\n\n    def f(self, y: str):\n        z = g(y)\n        return self.x\n",
        )
        .unwrap();
        let head = rkyv::to_bytes::<rkyv::rancor::Error>(&head_of(&other)).unwrap();
        let body = Body {
            refs: facts.refs.clone(),
            bindings: facts.bindings.clone(),
        };
        let body = rkyv::to_bytes::<rkyv::rancor::Error>(&body).unwrap();
        std::fs::write(&path, assemble(&key, &head, &body)).unwrap();
        let Cached::Hit((_, lazy)) = read_lazily(&path, &key) else {
            panic!("the head is whole");
        };
        assert!(lazy.references().is_empty());
        assert_eq!(lazy.damage(), Some("the head's bases are not the body's"));
        assert!(matches!(read_whole(&path, &key), Cached::Damaged(_)));
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(read_lazily(&path, &key), Cached::Miss));
    }
}
