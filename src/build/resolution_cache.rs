//! `<graph>/resolution.bin`: the last resolution's per-file results and recorded reads
//! (`resolve::Memo`), so that the next build re-resolves only what an edit can change.
//!
//! A cache, never an authority: it is written whole and atomically after a build, and a
//! missing, damaged or foreign file (another atlas build, another version) only means
//! every file is resolved. Which files it may still serve is decided by the memo's own
//! digests (`resolve::incremental`), not by the generation it was written with.
//!
//! Layout (little-endian; "var" is LEB128, seven bits a byte, low first; a span is its
//! start line, line count, start byte and byte length as four vars, wrapping): magic
//! `ATLASRM1`, version `u32` (4), reserved `u32`, the builder id (`u16` length and bytes),
//! the files' digest (32 bytes), the fingerprint of the generation compiled from the
//! resolution (32 bytes, zero when unknown), the file count (`u32`), each file's node id
//! (`u32`), the frontier names (`u32` count; each a var length and bytes). Then each
//! file: facts, interface and bindings digests (32 bytes each), external references
//! (`u64`); read files (`u32` count, `u32`s); files whose bindings were read (the same);
//! read keys and contributed keys (each a `u32` count and `u64`s); edges (`u32` count;
//! from and to as vars; kind, subkind, provenance, resolution, confidence, flags as `u8`;
//! the site: `1` and its span when it is in the file itself, `2`, its file as a var and
//! its span otherwise, `0` for none); frontier entries (`u32` count; the name's index in
//! the names as a var; role `u8`; from, file as vars; the site's span; candidates as a
//! var); the passes of its import binding (`u8` count, then each: digest, read files,
//! files whose bindings were read and read keys as above; `1` when its result is the
//! pass before's, else `0` and the result: bindings (`u32` count; each a name as `u32`
//! length and bytes, then `1` and a node `u32`, or `2` and files as `u32` count and
//! `u32`s), wildcard files (`u32` count, `u32`s), unresolved names (`u32` count, each as
//! `u32` length and bytes), the unresolved-wildcard flag `u8`, edges (`u32` count; target
//! `u32` and site as four `u32`s: start byte, end byte, start line, end line)). Last, the
//! blake3 of everything before it (32 bytes).
//!
//! Version 2 added the import passes, version 3 the generation, version 4 the shared
//! names and vars (sympy's file 19.2 → 12.2 MB); an older file reads as `None`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::resolve::{
    FileImports, FileMemo, FrontierEntry, ImportsMemo, Memo, ResolvedEdge, Site, SpanKey, Target,
};
use super::stamps::Reader;
use crate::graph::codes::{EdgeKind, EdgeSubkind, Provenance, Resolution};
use crate::syntax::facts::{RefRole, Span};

pub const RESOLUTION_FILE: &str = "resolution.bin";
const MAGIC: &[u8; 8] = b"ATLASRM1";
/// Bumped when the layout, or what resolution records (`resolve::reads`), changes.
const VERSION: u32 = 4;

/// The memo `graph_dir` holds for this atlas build (`builder`), if any verifies; `None`
/// as well once `stop` is set (a build that turns out to have nothing to resolve stops
/// the read it started beside extraction).
pub fn read(graph_dir: &Path, builder: &str, stop: &AtomicBool) -> Option<Memo> {
    let file = std::fs::File::open(graph_dir.join(RESOLUTION_FILE)).ok()?;
    // Mapped, not read: 19 MB on sympy, whose copy into fresh pages cost more CPU than
    // its decoding spared. SAFETY: the file is only ever replaced whole, by a rename
    // (`write`), never written in place; the mapping keeps the inode it opened.
    let bytes = unsafe { memmap2::Mmap::map(&file) }.ok()?;
    decode(&bytes, builder, stop)
}

/// Writes the memo atomically. Best effort: a read-only or full disk only means the next
/// build resolves every file. `before_rename` is called once the temporary file is written (a seam for tests of a
/// build that ends while the memo is being written).
pub fn write(graph_dir: &Path, builder: &str, memo: &Memo, before_rename: impl FnOnce()) {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = graph_dir.join(format!("{RESOLUTION_FILE}.{}.{n}.tmp", std::process::id()));
    let written = std::fs::File::create(&tmp).and_then(|file| {
        let mut out = Sealed::new(file);
        encode(memo, builder, &mut out);
        out.finish()
    });
    before_rename();
    if written.is_err() || std::fs::rename(&tmp, graph_dir.join(RESOLUTION_FILE)).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// A file written through a buffer that is hashed as it is flushed, then sealed with the
/// blake3 of everything written: the encoding streams, never held whole (19 MB on sympy).
struct Sealed {
    file: std::fs::File,
    buffer: Vec<u8>,
    hasher: blake3::Hasher,
    error: Option<std::io::Error>,
}

impl Sealed {
    const FLUSH_AT: usize = 1 << 20;

    fn new(file: std::fs::File) -> Sealed {
        Sealed {
            file,
            buffer: Vec::with_capacity(Self::FLUSH_AT + 4096),
            hasher: blake3::Hasher::new(),
            error: None,
        }
    }

    fn flush(&mut self) {
        use std::io::Write;
        self.hasher.update(&self.buffer);
        if self.error.is_none()
            && let Err(e) = self.file.write_all(&self.buffer)
        {
            self.error = Some(e);
        }
        self.buffer.clear();
    }

    /// Writes the checksum after what was written.
    fn finish(mut self) -> std::io::Result<()> {
        use std::io::Write;
        self.flush();
        let checksum = self.hasher.finalize();
        match self.error {
            Some(e) => Err(e),
            None => self.file.write_all(checksum.as_bytes()),
        }
    }
}

impl Out for Sealed {
    fn put(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= Self::FLUSH_AT {
            self.flush();
        }
    }
}

/// Where `encode` writes.
trait Out {
    fn put(&mut self, bytes: &[u8]);
}

impl Out for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// `value` as LEB128: seven bits a byte, low first.
fn put_var<O: Out>(out: &mut O, mut value: u64) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    loop {
        let low = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            bytes[n] = low;
            n += 1;
            break;
        }
        bytes[n] = low | 0x80;
        n += 1;
    }
    out.put(&bytes[..n]);
}

/// A span as its start line, line count, start byte and byte length (wrapping, so that
/// any four values round-trip).
fn put_span<O: Out>(out: &mut O, s: SpanKey) {
    put_var(out, u64::from(s.start_line));
    put_var(out, u64::from(s.end_line.wrapping_sub(s.start_line)));
    put_var(out, u64::from(s.start_byte));
    put_var(out, u64::from(s.end_byte.wrapping_sub(s.start_byte)));
}

/// The distinct frontier names of a memo, in first-seen order, and each entry's index:
/// looked up by the shared text's address first, by the text when it is not shared.
struct NameTable<'m> {
    texts: Vec<&'m str>,
    by_address: rustc_hash::FxHashMap<*const u8, u32>,
    by_text: rustc_hash::FxHashMap<&'m str, u32>,
}

impl<'m> NameTable<'m> {
    fn of(memo: &'m Memo) -> NameTable<'m> {
        let mut table = NameTable {
            texts: Vec::new(),
            by_address: Default::default(),
            by_text: Default::default(),
        };
        for entry in memo.files.iter().flat_map(|f| &f.frontier) {
            let name: &'m str = &entry.name;
            if table.by_address.contains_key(&name.as_ptr()) {
                continue;
            }
            let next = table.texts.len() as u32;
            let index = *table.by_text.entry(name).or_insert(next);
            if index == next {
                table.texts.push(name);
            }
            table.by_address.insert(name.as_ptr(), index);
        }
        table
    }

    fn index(&self, name: &str) -> u32 {
        match self.by_address.get(&name.as_ptr()) {
            Some(&index) => index,
            None => self.by_text[name],
        }
    }
}

/// Removes the memo (a build that could not write a current one must not leave a stale
/// one claiming files it no longer describes — though the digests would refuse it).
pub fn remove(graph_dir: &Path) {
    let _ = std::fs::remove_file(graph_dir.join(RESOLUTION_FILE));
}

/// Writes `memo` to `out`, all but the checksum that seals it.
fn encode<O: Out>(memo: &Memo, builder: &str, out: &mut O) {
    out.put(MAGIC);
    out.put(&VERSION.to_le_bytes());
    out.put(&0u32.to_le_bytes());
    let builder = &builder.as_bytes()[..builder.len().min(usize::from(u16::MAX))];
    out.put(&(builder.len() as u16).to_le_bytes());
    out.put(builder);
    out.put(&memo.files_digest);
    out.put(&memo.generation);
    out.put(&(memo.files.len() as u32).to_le_bytes());
    for &node in &memo.file_nodes {
        out.put(&node.to_le_bytes());
    }
    // Frontier names, each once (resolution shares one text among many entries).
    let names = NameTable::of(memo);
    out.put(&(names.texts.len() as u32).to_le_bytes());
    for text in &names.texts {
        put_var(out, text.len() as u64);
        out.put(text.as_bytes());
    }
    let u32s = |out: &mut O, values: &[u32]| {
        out.put(&(values.len() as u32).to_le_bytes());
        values.iter().for_each(|v| out.put(&v.to_le_bytes()));
    };
    let u64s = |out: &mut O, values: &[u64]| {
        out.put(&(values.len() as u32).to_le_bytes());
        values.iter().for_each(|v| out.put(&v.to_le_bytes()));
    };
    let span = |out: &mut O, s: SpanKey| {
        for v in [s.start_byte, s.end_byte, s.start_line, s.end_line] {
            out.put(&v.to_le_bytes());
        }
    };
    for (index, file) in memo.files.iter().enumerate() {
        out.put(&file.digest);
        out.put(&file.interface);
        out.put(&file.bindings);
        out.put(&file.external_references.to_le_bytes());
        u32s(out, &file.reads_files);
        u32s(out, &file.reads_bindings);
        u64s(out, &file.reads_keys);
        u64s(out, &file.contributes);
        out.put(&(file.edges.len() as u32).to_le_bytes());
        for e in &file.edges {
            put_var(out, u64::from(e.from));
            put_var(out, u64::from(e.to));
            out.put(&[
                e.kind.code(),
                e.subkind.code(),
                e.provenance.code(),
                e.resolution.code(),
                e.confidence,
                e.flags,
            ]);
            match e.site {
                Some(site) if site.file as usize == index => {
                    out.put(&[1]);
                    put_span(out, site.span);
                }
                Some(site) => {
                    out.put(&[2]);
                    put_var(out, u64::from(site.file));
                    put_span(out, site.span);
                }
                None => out.put(&[0]),
            }
        }
        out.put(&(file.frontier.len() as u32).to_le_bytes());
        for f in &file.frontier {
            put_var(out, u64::from(names.index(&f.name)));
            out.put(&[f.role.code()]);
            put_var(out, u64::from(f.from));
            put_var(out, u64::from(f.file));
            put_span(out, f.site.into());
            put_var(out, u64::from(f.candidates));
        }
        out.put(&[file.imports.len() as u8]);
        for (pass, imports) in file.imports.iter().enumerate() {
            out.put(&imports.digest);
            u32s(out, &imports.reads_files);
            u32s(out, &imports.reads_bindings);
            u64s(out, &imports.reads_keys);
            if shares_result(imports, pass.checked_sub(1).map(|b| &file.imports[b])) {
                out.put(&[1]);
                continue;
            }
            out.put(&[0]);
            let result = &imports.result;
            let text = |out: &mut O, text: &str| {
                out.put(&(text.len() as u32).to_le_bytes());
                out.put(text.as_bytes());
            };
            out.put(&(result.bindings.len() as u32).to_le_bytes());
            for (name, target) in &result.bindings {
                text(out, name);
                match target {
                    Target::Symbol(id) => {
                        out.put(&[1]);
                        out.put(&id.to_le_bytes());
                    }
                    Target::Files(files) => {
                        out.put(&[2]);
                        u32s(out, files);
                    }
                }
            }
            u32s(out, &result.wildcards);
            out.put(&(result.unresolved.len() as u32).to_le_bytes());
            for name in &result.unresolved {
                text(out, name);
            }
            out.put(&[u8::from(result.unresolved_wildcard)]);
            out.put(&(result.edges.len() as u32).to_le_bytes());
            for &(target, site) in &result.edges {
                out.put(&target.to_le_bytes());
                span(out, site.into());
            }
        }
    }
}

/// Whether a pass's result is the pass before's (kept once).
fn shares_result(pass: &ImportsMemo, before: Option<&ImportsMemo>) -> bool {
    before.is_some_and(|b| std::sync::Arc::ptr_eq(&b.result, &pass.result))
}

/// A LEB128 value (at most ten bytes, none beyond `u64`).
fn var(r: &mut Reader) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = r.u8()?;
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 {
            return None;
        }
        value |= bits << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

fn var32(r: &mut Reader) -> Option<u32> {
    u32::try_from(var(r)?).ok()
}

/// The little-endian `u32` at `at` of a slice known to hold it.
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads `bytes` as a memo written by `builder`; `None` for anything that does not verify.
fn decode(bytes: &[u8], builder: &str, stop: &AtomicBool) -> Option<Memo> {
    let (body, checksum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if stop.load(Ordering::Relaxed) || blake3::hash(body).as_bytes() != checksum {
        return None;
    }
    let mut r = Reader(body);
    if r.take(8)? != MAGIC || r.u32()? != VERSION {
        return None;
    }
    r.u32()?;
    let len = usize::from(r.u16()?);
    if r.take(len)? != builder.as_bytes() {
        return None;
    }
    let files_digest: [u8; 32] = r.take(32)?.try_into().ok()?;
    let generation: [u8; 32] = r.take(32)?.try_into().ok()?;
    let count = r.len_of(4)?;
    let file_nodes = (0..count).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
    let span = |r: &mut Reader| -> Option<SpanKey> {
        let start_line = var32(r)?;
        let end_line = start_line.wrapping_add(var32(r)?);
        let start_byte = var32(r)?;
        let end_byte = start_byte.wrapping_add(var32(r)?);
        Some(SpanKey {
            start_byte,
            end_byte,
            start_line,
            end_line,
        })
    };
    // One shared name per distinct text, as resolution shares them.
    let n = r.len_of(1)?;
    let mut names: Vec<std::sync::Arc<str>> = Vec::with_capacity(n);
    for _ in 0..n {
        let len = usize::try_from(var(&mut r)?).ok()?;
        names.push(std::str::from_utf8(r.take(len)?).ok()?.into());
    }
    let mut files = Vec::with_capacity(count);
    for index in 0..count as u32 {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        let digest: [u8; 32] = r.take(32)?.try_into().ok()?;
        let interface: [u8; 32] = r.take(32)?.try_into().ok()?;
        let bindings: [u8; 32] = r.take(32)?.try_into().ok()?;
        let external_references = r.u64()?;
        let reads_files = r.u32s()?;
        let reads_bindings = r.u32s()?;
        let reads_keys = r.u64s()?;
        let contributes = r.u64s()?;
        let n = r.len_of(9)?;
        let mut edges = Vec::with_capacity(n);
        for _ in 0..n {
            let from = var32(&mut r)?;
            let to = var32(&mut r)?;
            let codes = r.take(7)?;
            let site = match codes[6] {
                0 => None,
                1 => Some(Site {
                    file: index,
                    span: span(&mut r)?,
                }),
                2 => Some(Site {
                    file: var32(&mut r)?,
                    span: span(&mut r)?,
                }),
                _ => return None,
            };
            edges.push(ResolvedEdge {
                from,
                to,
                kind: EdgeKind::from_code(codes[0])?,
                subkind: EdgeSubkind::from_code(codes[1])?,
                provenance: Provenance::from_code(codes[2])?,
                resolution: Resolution::from_code(codes[3])?,
                confidence: codes[4],
                flags: codes[5],
                site,
            });
        }
        let n = r.len_of(9)?;
        let mut frontier = Vec::with_capacity(n);
        for _ in 0..n {
            let name = names.get(usize::try_from(var(&mut r)?).ok()?)?.clone();
            let role = RefRole::from_code(r.u8()?)?;
            let from = var32(&mut r)?;
            let file = var32(&mut r)?;
            let site = span(&mut r)?;
            frontier.push(FrontierEntry {
                name,
                role,
                from,
                file,
                site: Span {
                    start_byte: site.start_byte,
                    end_byte: site.end_byte,
                    start_line: site.start_line,
                    end_line: site.end_line,
                },
                candidates: var32(&mut r)?,
            });
        }
        let passes = usize::from(r.u8()?);
        let mut imports: Vec<ImportsMemo> = Vec::with_capacity(passes);
        for _ in 0..passes {
            let digest: [u8; 32] = r.take(32)?.try_into().ok()?;
            let reads_files = r.u32s()?;
            let reads_bindings = r.u32s()?;
            let reads_keys = r.u64s()?;
            let result = match r.u8()? {
                1 => imports.last()?.result.clone(),
                0 => std::sync::Arc::new(decode_imports(&mut r)?),
                _ => return None,
            };
            imports.push(ImportsMemo {
                digest,
                reads_files,
                reads_bindings,
                reads_keys,
                result,
            });
        }
        files.push(FileMemo {
            digest,
            interface,
            bindings,
            reads_files,
            reads_bindings,
            reads_keys,
            contributes,
            edges,
            frontier,
            external_references,
            imports,
        });
    }
    r.0.is_empty().then_some(Memo {
        files_digest,
        generation,
        file_nodes,
        files,
    })
}

/// One pass's import binding result, as `encode` writes it.
fn decode_imports(r: &mut Reader) -> Option<FileImports> {
    let text = |r: &mut Reader| -> Option<String> {
        let len = r.len_of(1)?;
        Some(std::str::from_utf8(r.take(len)?).ok()?.to_string())
    };
    let n = r.len_of(6)?;
    let mut bindings = rustc_hash::FxHashMap::default();
    bindings.reserve(n);
    for _ in 0..n {
        let name = text(r)?;
        let target = match r.u8()? {
            1 => Target::Symbol(r.u32()?),
            2 => Target::Files(r.u32s()?),
            _ => return None,
        };
        bindings.insert(name, target);
    }
    let wildcards = r.u32s()?;
    let n = r.len_of(4)?;
    let unresolved = (0..n).map(|_| text(r)).collect::<Option<_>>()?;
    let unresolved_wildcard = match r.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let n = r.len_of(20)?;
    let mut edges = Vec::with_capacity(n);
    for _ in 0..n {
        let raw = r.take(20)?;
        edges.push((
            u32_at(raw, 0),
            Span {
                start_byte: u32_at(raw, 4),
                end_byte: u32_at(raw, 8),
                start_line: u32_at(raw, 12),
                end_line: u32_at(raw, 16),
            },
        ));
    }
    Some(FileImports {
        bindings,
        wildcards,
        unresolved,
        unresolved_wildcard,
        edges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `memo`'s file, sealed, as `write` writes it.
    fn encoded(memo: &Memo, builder: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode(memo, builder, &mut out);
        let checksum = blake3::hash(&out);
        out.extend_from_slice(checksum.as_bytes());
        out
    }

    fn memo() -> Memo {
        let edge = ResolvedEdge {
            from: 3,
            to: 9,
            kind: EdgeKind::Calls,
            subkind: EdgeSubkind::None,
            provenance: Provenance::TreeSitter,
            resolution: Resolution::Import,
            confidence: 95,
            site: Some(Site {
                file: 0,
                span: SpanKey {
                    start_byte: 10,
                    end_byte: 14,
                    start_line: 2,
                    end_line: 2,
                },
            }),
            flags: 4,
        };
        let frontier = FrontierEntry {
            name: "helper".into(),
            role: RefRole::Call,
            from: 3,
            file: 0,
            site: Span {
                start_byte: 20,
                end_byte: 26,
                start_line: 3,
                end_line: 3,
            },
            candidates: 2,
        };
        Memo {
            files_digest: [5; 32],
            generation: [6; 32],
            file_nodes: vec![2, 7],
            files: vec![
                FileMemo {
                    digest: [1; 32],
                    interface: [2; 32],
                    bindings: [3; 32],
                    reads_files: vec![0, 1],
                    reads_bindings: vec![1],
                    reads_keys: vec![11, 12],
                    contributes: vec![13],
                    edges: vec![
                        edge,
                        ResolvedEdge { site: None, ..edge },
                        ResolvedEdge {
                            site: edge.site.map(|s| Site { file: 1, ..s }),
                            ..edge
                        },
                    ],
                    frontier: vec![frontier],
                    external_references: 4,
                    imports: imports(),
                },
                FileMemo::default(),
            ],
        }
    }

    /// Three passes: the second's result is the first's (written once), the third's
    /// differs.
    fn imports() -> Vec<ImportsMemo> {
        let mut bindings = rustc_hash::FxHashMap::default();
        bindings.insert("Flask".to_string(), Target::Symbol(8));
        bindings.insert("views".to_string(), Target::Files(vec![1]));
        let site = Span {
            start_byte: 0,
            end_byte: 24,
            start_line: 0,
            end_line: 0,
        };
        let first = std::sync::Arc::new(FileImports {
            bindings,
            wildcards: vec![1],
            unresolved: ["missing".to_string()].into_iter().collect(),
            unresolved_wildcard: true,
            edges: vec![(8, site)],
        });
        let mut third = (*first).clone();
        third.bindings.insert("app".to_string(), Target::Symbol(9));
        let pass = |digest: u8, result: &std::sync::Arc<FileImports>| ImportsMemo {
            digest: [digest; 32],
            reads_files: vec![0, 1],
            reads_bindings: vec![1],
            reads_keys: vec![17],
            result: result.clone(),
        };
        vec![
            pass(1, &first),
            pass(1, &first),
            pass(2, &std::sync::Arc::new(third)),
        ]
    }

    #[test]
    fn import_passes_round_trip_with_a_repeated_result_shared() {
        let m = memo();
        let bytes = encoded(&m, "b1");
        let decoded = decode(&bytes, "b1", &AtomicBool::new(false)).expect("decodes");
        let passes = &decoded.files[0].imports;
        assert_eq!(passes, &m.files[0].imports);
        assert!(std::sync::Arc::ptr_eq(&passes[0].result, &passes[1].result));
        assert!(!std::sync::Arc::ptr_eq(
            &passes[1].result,
            &passes[2].result
        ));
    }

    #[test]
    fn an_older_version_reads_as_none() {
        for version in [1u32, 2, 3] {
            let mut bytes = encoded(&memo(), "b1");
            bytes[8..12].copy_from_slice(&version.to_le_bytes());
            let body = bytes.len() - 32;
            let checksum = *blake3::hash(&bytes[..body]).as_bytes();
            bytes[body..].copy_from_slice(&checksum);
            assert_eq!(decode(&bytes, "b1", &AtomicBool::new(false)), None);
        }
    }

    #[test]
    fn a_memo_written_through_the_sealed_stream_is_its_encoding_and_maps_back() {
        // A memo larger than the stream's buffer, so that it is flushed several times.
        let mut m = memo();
        let file = m.files[0].clone();
        m.files = vec![file; 20_000];
        m.file_nodes = vec![0; 20_000];
        let temp = tempfile::tempdir().unwrap();
        write(temp.path(), "b1", &m, || ());
        let bytes = std::fs::read(temp.path().join(RESOLUTION_FILE)).unwrap();
        assert!(bytes.len() > 2 * Sealed::FLUSH_AT);
        assert_eq!(bytes, encoded(&m, "b1"));
        assert_eq!(read(temp.path(), "b1", &AtomicBool::new(false)), Some(m));
        assert_eq!(read(temp.path(), "b2", &AtomicBool::new(false)), None);
    }

    #[test]
    fn vars_and_spans_round_trip_at_their_extremes_and_overlong_vars_are_refused() {
        let mut out = Vec::new();
        let values = [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ];
        for &v in &values {
            put_var(&mut out, v);
        }
        // An ordered span, and one whose end is before its start (wrapping).
        let spans = [
            SpanKey {
                start_byte: 5,
                end_byte: 9,
                start_line: 1,
                end_line: 2,
            },
            SpanKey {
                start_byte: u32::MAX,
                end_byte: 0,
                start_line: 7,
                end_line: 3,
            },
        ];
        for &span in &spans {
            put_span(&mut out, span);
        }
        let mut r = Reader(&out);
        for &v in &values {
            assert_eq!(var(&mut r), Some(v));
        }
        for &span in &spans {
            let mut four = || var32(&mut r).unwrap();
            let (start_line, lines, start_byte, bytes) = (four(), four(), four(), four());
            assert_eq!(start_line, span.start_line);
            assert_eq!(start_line.wrapping_add(lines), span.end_line);
            assert_eq!(start_byte, span.start_byte);
            assert_eq!(start_byte.wrapping_add(bytes), span.end_byte);
        }
        assert!(r.0.is_empty());
        // Eleven continuation bytes, or a tenth byte beyond 64 bits: refused.
        assert_eq!(var(&mut Reader(&[0xff; 11])), None);
        let mut over = vec![0xff; 9];
        over.push(0x02);
        assert_eq!(var(&mut Reader(&over)), None);
        assert_eq!(var32(&mut Reader(&[0x80, 0x80, 0x80, 0x80, 0x10])), None);
    }

    #[test]
    fn a_memo_round_trips_and_damage_or_another_builder_reads_as_none() {
        let m = memo();
        let bytes = encoded(&m, "b1");
        assert_eq!(decode(&bytes, "b1", &AtomicBool::new(false)), Some(m));
        assert_eq!(decode(&bytes, "b2", &AtomicBool::new(false)), None);
        assert_eq!(
            decode(&bytes, "b1", &AtomicBool::new(true)),
            None,
            "stopped"
        );
        for i in [0, 9, 20, bytes.len() / 2, bytes.len() - 1] {
            let mut damaged = bytes.clone();
            damaged[i] ^= 0x10;
            assert_eq!(
                decode(&damaged, "b1", &AtomicBool::new(false)),
                None,
                "byte {i}"
            );
        }
        assert_eq!(
            decode(&bytes[..bytes.len() - 5], "b1", &AtomicBool::new(false)),
            None
        );
        assert_eq!(decode(b"", "b1", &AtomicBool::new(false)), None);
    }

    #[test]
    fn counts_beyond_the_bytes_left_read_as_none_without_allocating_them() {
        let mut bytes = encoded(&memo(), "b1");
        // The file count, just after magic, version, reserved, builder and digest.
        let at = 8 + 4 + 4 + 2 + 2 + 32 + 32;
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let body = bytes.len() - 32;
        let checksum = *blake3::hash(&bytes[..body]).as_bytes();
        bytes[body..].copy_from_slice(&checksum);
        assert_eq!(decode(&bytes, "b1", &AtomicBool::new(false)), None);
    }
}
