//! `<graph>/resolution.bin`: the last resolution's per-file results and recorded reads
//! (`resolve::Memo`), so that the next build re-resolves only what an edit can change.
//!
//! A cache, never an authority: it is written atomically after a build, and a missing,
//! damaged or foreign file (another atlas build, another version) only means every file
//! is resolved. Which files it may still serve is decided by the memo's own digests
//! (`resolve::incremental`), not by the generation it was written with.
//!
//! An edit changes few entries, so a build whose memo extends the file on disk (read
//! from it, no node id moved) writes only the entries that differ from it, in
//! `<graph>/resolution.delta`, while they are at most one entry in eight and an eighth of
//! the memo file's bytes (`DELTA_SHARE`); else
//! the whole memo again, and no delta. On sympy a body edit wrote 12.2 MB; its delta is
//! 14 kB. A delta names the memo file it extends by that file's checksum: one that does
//! not verify or extends another file is passed over, and the memo file alone is read,
//! an older but whole resolution (its own digests decide what it still serves).
//!
//! Layout (little-endian; "var" is LEB128, seven bits a byte, low first; a span is its
//! start line, line count, start byte and byte length as four vars, wrapping): magic
//! `ATLASRM1`, version `u32` (6), reserved `u32`, the builder id (`u16` length and bytes),
//! the files' digest (32 bytes), the fingerprint of the generation compiled from the
//! resolution (32 bytes, zero when unknown), the digest of that generation's centrality
//! inputs (`compile::centrality_inputs`, 32 bytes), the file count (`u32`), each file's node id
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
//! `u32` length and bytes), the unresolved-wildcard flag `u8`, the names imported from Rust's
//! standard library (as the unresolved names; version 6), edges (`u32` count; target
//! `u32` and site as four `u32`s: start byte, end byte, start line, end line)). Last, the
//! blake3 of everything before it (32 bytes).
//!
//! The delta (`ATLASRD1`, the same version): magic, version, reserved and builder as
//! above, the checksum of the memo file it extends (32 bytes), the files' digest, the
//! generation and the centrality inputs (32 bytes each), the file count (`u32`), its own frontier names, the count
//! of entries (`u32`), then each: the file's index (`u32`, ascending) and its entry as
//! above. Last, the blake3 of everything before it.
//!
//! Version 2 added the import passes, version 3 the generation, version 4 the shared
//! names and vars (sympy's file 19.2 → 12.2 MB), version 5 the centrality inputs; an
//! older file (or delta) reads as `None`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use super::resolve::{
    FileImports, FileMemo, FrontierEntry, ImportsMemo, Memo, OnDisk, ResolvedEdge, Site, SpanKey,
};
use super::stamps::Reader;
use crate::graph::codes::{EdgeKind, EdgeSubkind, Provenance, Resolution};
use crate::syntax::facts::{RefRole, Span};

pub const RESOLUTION_FILE: &str = "resolution.bin";
/// The entries of the last memo that differ from the memo file, beside it.
pub const DELTA_FILE: &str = "resolution.delta";
const MAGIC: &[u8; 8] = b"ATLASRM1";
const DELTA_MAGIC: &[u8; 8] = b"ATLASRD1";
/// A delta is written while at most one entry in this many differs from the memo file,
/// and it is at most this share of the file's bytes; beyond, the whole memo is written
/// again (and the next read decodes one file).
const DELTA_SHARE: usize = 8;
/// Bumped when the layout, or what resolution records (`resolve::reads`), changes.
const VERSION: u32 = 6;

/// The memo `graph_dir` holds for this atlas build (`builder`), if any verifies, with
/// the entries of a delta that extends it; `None` as well once `stop` is set (a build
/// that turns out to have nothing to resolve stops the read it started beside
/// extraction).
pub fn read(graph_dir: &Path, builder: &str, stop: &AtomicBool) -> Option<Memo> {
    let bytes = map(&graph_dir.join(RESOLUTION_FILE))?;
    let mut memo = decode(&bytes, builder, stop)?;
    let checksum: [u8; 32] = bytes[bytes.len() - 32..].try_into().ok()?;
    let mut differs = vec![false; memo.files.len()];
    // A delta that does not verify, or extends another memo file, is passed over: the
    // memo file alone is a whole resolution, only an older one.
    let delta = map(&graph_dir.join(DELTA_FILE))
        .and_then(|delta| decode_delta(&delta, builder, &checksum, memo.files.len(), stop));
    if stop.load(Ordering::Relaxed) {
        return None;
    }
    if let Some(delta) = delta {
        memo.files_digest = delta.files_digest;
        memo.generation = delta.generation;
        memo.centrality_inputs = delta.centrality_inputs;
        for (index, file) in delta.files {
            memo.files[index as usize] = file;
            differs[index as usize] = true;
        }
    }
    memo.on_disk = Some(OnDisk { checksum, differs });
    Some(memo)
}

/// `path` mapped. Mapped, not read: the memo file is 12 MB on sympy, whose copy into
/// fresh pages cost more CPU than its decoding spared. SAFETY: both files are only
/// ever replaced whole, by a rename (`write`), never written in place; the mapping keeps
/// the inode it opened.
fn map(path: &Path) -> Option<memmap2::Mmap> {
    let file = std::fs::File::open(path).ok()?;
    unsafe { memmap2::Mmap::map(&file) }.ok()
}

/// Writes the memo atomically: only the entries that differ from the memo file it
/// extends, in `resolution.delta`, while they are few (at most one entry in
/// `DELTA_SHARE`, and a delta at most that share of the file's bytes) and that file is
/// still the one on disk; else the whole memo, with no delta. Best effort: a read-only
/// or full disk only means the next build resolves every file. `before_rename` is
/// called once the temporary file is written (a seam for tests of a build that ends
/// while the memo is being written). Returns the checksum of the memo file when the
/// whole memo was written.
pub fn write(
    graph_dir: &Path,
    builder: &str,
    memo: &Memo,
    before_rename: impl FnOnce(),
) -> Option<[u8; 32]> {
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = |name: &str| graph_dir.join(format!("{name}.{}.{n}.tmp", std::process::id()));
    let sealed = |tmp: &Path, limit: u64, encode: &dyn Fn(&mut Sealed)| {
        std::fs::File::create(tmp).and_then(|file| {
            let mut out = Sealed::new(file, limit);
            encode(&mut out);
            out.finish()
        })
    };
    let base = memo.on_disk.as_ref().and_then(|d| {
        let differing = d.differs.iter().filter(|&&x| x).count();
        let (checksum, len) = on_disk(graph_dir)?;
        (d.differs.len() == memo.files.len()
            && differing * DELTA_SHARE <= memo.files.len()
            && checksum == d.checksum)
            .then_some((d, len / DELTA_SHARE as u64))
    });
    if let Some((base, limit)) = base {
        let delta = tmp(DELTA_FILE);
        match sealed(&delta, limit, &|out| encode_delta(memo, builder, base, out)) {
            // Beyond its share of bytes, the delta gives way to the whole memo: every
            // later build would write it again, and every read decode it.
            Ok(None) => {
                let _ = std::fs::remove_file(&delta);
            }
            written => {
                before_rename();
                if !matches!(written, Ok(Some(_)))
                    || std::fs::rename(&delta, graph_dir.join(DELTA_FILE)).is_err()
                {
                    let _ = std::fs::remove_file(&delta);
                }
                return None;
            }
        }
    }
    let whole = tmp(RESOLUTION_FILE);
    let written = sealed(&whole, u64::MAX, &|out| encode(memo, builder, out));
    before_rename();
    let checksum = match written {
        Ok(Some(checksum)) if std::fs::rename(&whole, graph_dir.join(RESOLUTION_FILE)).is_ok() => {
            checksum
        }
        _ => {
            let _ = std::fs::remove_file(&whole);
            return None;
        }
    };
    // A delta left beside a new memo file extends the old one (its checksum says so),
    // and would only be read and passed over.
    let _ = std::fs::remove_file(graph_dir.join(DELTA_FILE));
    Some(checksum)
}

/// The checksum that seals the memo file on disk (its last 32 bytes, unverified: a
/// delta is written only beside the file its base was read from), and its length.
fn on_disk(graph_dir: &Path) -> Option<([u8; 32], u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(graph_dir.join(RESOLUTION_FILE)).ok()?;
    let len = file.seek(SeekFrom::End(-32)).ok()? + 32;
    let mut checksum = [0u8; 32];
    file.read_exact(&mut checksum).ok()?;
    Some((checksum, len))
}

/// A file written through a buffer that is hashed as it is flushed, then sealed with the
/// blake3 of everything written: the encoding streams, never held whole (19 MB on sympy).
struct Sealed {
    file: std::fs::File,
    buffer: Vec<u8>,
    hasher: blake3::Hasher,
    error: Option<std::io::Error>,
    /// Bytes flushed so far, and how many may be: beyond, nothing more is written.
    written: u64,
    limit: u64,
}

impl Sealed {
    const FLUSH_AT: usize = 1 << 20;

    fn new(file: std::fs::File, limit: u64) -> Sealed {
        Sealed {
            file,
            buffer: Vec::with_capacity(Self::FLUSH_AT + 4096),
            hasher: blake3::Hasher::new(),
            error: None,
            written: 0,
            limit,
        }
    }

    fn flush(&mut self) {
        use std::io::Write;
        self.written = self.written.saturating_add(self.buffer.len() as u64);
        if self.written > self.limit {
            self.buffer.clear();
            return;
        }
        self.hasher.update(&self.buffer);
        if self.error.is_none()
            && let Err(e) = self.file.write_all(&self.buffer)
        {
            self.error = Some(e);
        }
        self.buffer.clear();
    }

    /// Writes the checksum after what was written, and returns it; `None` when what was
    /// to be written went beyond the limit (the file is then incomplete).
    fn finish(mut self) -> std::io::Result<Option<[u8; 32]>> {
        use std::io::Write;
        self.flush();
        if self.written > self.limit {
            return Ok(None);
        }
        let checksum = self.hasher.finalize();
        match self.error {
            Some(e) => Err(e),
            None => self.file.write_all(checksum.as_bytes()),
        }?;
        Ok(Some(*checksum.as_bytes()))
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
    fn of(files: impl Iterator<Item = &'m FileMemo>) -> NameTable<'m> {
        let mut table = NameTable {
            texts: Vec::new(),
            by_address: Default::default(),
            by_text: Default::default(),
        };
        for entry in files.flat_map(|f| f.frontier.iter()) {
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
    let _ = std::fs::remove_file(graph_dir.join(DELTA_FILE));
    let _ = std::fs::remove_file(graph_dir.join(RESOLUTION_FILE));
}

/// Writes `memo` to `out`, all but the checksum that seals it.
fn encode<O: Out>(memo: &Memo, builder: &str, out: &mut O) {
    put_header(out, MAGIC, builder);
    out.put(&memo.files_digest);
    out.put(&memo.generation);
    out.put(&memo.centrality_inputs);
    out.put(&(memo.files.len() as u32).to_le_bytes());
    for &node in &memo.file_nodes {
        out.put(&node.to_le_bytes());
    }
    // Frontier names, each once (resolution shares one text among many entries).
    let names = NameTable::of(memo.files.iter());
    put_names(out, &names);
    for (index, file) in memo.files.iter().enumerate() {
        put_file(out, index, file, &names);
    }
}

/// Writes the entries of `memo` that differ from the memo file it extends (`base`, the
/// file's checksum), all but the checksum that seals them.
fn encode_delta<O: Out>(memo: &Memo, builder: &str, base: &OnDisk, out: &mut O) {
    put_header(out, DELTA_MAGIC, builder);
    out.put(&base.checksum);
    out.put(&memo.files_digest);
    out.put(&memo.generation);
    out.put(&memo.centrality_inputs);
    out.put(&(memo.files.len() as u32).to_le_bytes());
    let differing = || {
        memo.files
            .iter()
            .zip(&base.differs)
            .enumerate()
            .filter(|(_, (_, differs))| **differs)
            .map(|(index, (file, _))| (index, file))
    };
    let names = NameTable::of(differing().map(|(_, file)| file));
    put_names(out, &names);
    out.put(&(differing().count() as u32).to_le_bytes());
    for (index, file) in differing() {
        out.put(&(index as u32).to_le_bytes());
        put_file(out, index, file, &names);
    }
}

/// Magic, version, the reserved word and the builder id.
fn put_header<O: Out>(out: &mut O, magic: &[u8; 8], builder: &str) {
    out.put(magic);
    out.put(&VERSION.to_le_bytes());
    out.put(&0u32.to_le_bytes());
    let builder = &builder.as_bytes()[..builder.len().min(usize::from(u16::MAX))];
    out.put(&(builder.len() as u16).to_le_bytes());
    out.put(builder);
}

fn put_names<O: Out>(out: &mut O, names: &NameTable) {
    out.put(&(names.texts.len() as u32).to_le_bytes());
    for text in &names.texts {
        put_var(out, text.len() as u64);
        out.put(text.as_bytes());
    }
}

/// One file's entry; `index` is the file's own (a site in the file is written short).
fn put_file<O: Out>(out: &mut O, index: usize, file: &FileMemo, names: &NameTable) {
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
    for f in file.frontier.iter() {
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
        result.bindings.write(&mut |bytes: &[u8]| out.put(bytes));
        u32s(out, &result.wildcards);
        out.put(&(result.unresolved.len() as u32).to_le_bytes());
        for name in &result.unresolved {
            text(out, name);
        }
        out.put(&[u8::from(result.unresolved_wildcard)]);
        out.put(&(result.external.len() as u32).to_le_bytes());
        for name in &result.external {
            text(out, name);
        }
        out.put(&(result.edges.len() as u32).to_le_bytes());
        for &(target, site) in &result.edges {
            out.put(&target.to_le_bytes());
            span(out, site.into());
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

/// A LEB128 value that fits a `u32` (at most five bytes, as `put_var` writes it): most of
/// a memo's bytes are such ids and spans, and read one checked byte at a time they were
/// the larger part of its decoding.
fn var32(r: &mut Reader) -> Option<u32> {
    let bytes = r.0;
    let mut value = 0u32;
    for (i, &byte) in bytes.iter().take(5).enumerate() {
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            // The fifth byte holds the top four bits only.
            if i == 4 && byte > 0x0f {
                return None;
            }
            r.0 = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

/// The little-endian `u32` at `at` of a slice known to hold it.
fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads `bytes` as a memo written by `builder`; `None` for anything that does not verify.
fn decode(bytes: &[u8], builder: &str, stop: &AtomicBool) -> Option<Memo> {
    let mut r = header(bytes, MAGIC, builder, stop)?;
    let files_digest: [u8; 32] = r.take(32)?.try_into().ok()?;
    let generation: [u8; 32] = r.take(32)?.try_into().ok()?;
    let centrality_inputs: [u8; 32] = r.take(32)?.try_into().ok()?;
    let count = r.len_of(4)?;
    let file_nodes = (0..count).map(|_| r.u32()).collect::<Option<Vec<u32>>>()?;
    let names = names(&mut r)?;
    let mut files = Vec::with_capacity(count);
    for index in 0..count as u32 {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        files.push(decode_file(&mut r, index, &names)?);
    }
    r.0.is_empty().then_some(Memo {
        files_digest,
        generation,
        centrality_inputs,
        file_nodes,
        files,
        on_disk: None,
    })
}

/// The entries a delta replaces in the memo file it extends: (index, entry) in file
/// order. `None` when the delta is damaged, foreign, or extends another memo file than
/// `base` (its checksum) describing `count` files.
fn decode_delta(
    bytes: &[u8],
    builder: &str,
    base: &[u8; 32],
    count: usize,
    stop: &AtomicBool,
) -> Option<Delta> {
    let mut r = header(bytes, DELTA_MAGIC, builder, stop)?;
    if r.take(32)? != base {
        return None;
    }
    let files_digest: [u8; 32] = r.take(32)?.try_into().ok()?;
    let generation: [u8; 32] = r.take(32)?.try_into().ok()?;
    let centrality_inputs: [u8; 32] = r.take(32)?.try_into().ok()?;
    if r.u32()? as usize != count {
        return None;
    }
    let names = names(&mut r)?;
    let n = r.len_of(4)?;
    let mut files = Vec::with_capacity(n);
    for _ in 0..n {
        let index = r.u32()?;
        if (index as usize) >= count || files.last().is_some_and(|&(last, _)| last >= index) {
            return None;
        }
        files.push((index, decode_file(&mut r, index, &names)?));
    }
    r.0.is_empty().then_some(Delta {
        files_digest,
        generation,
        centrality_inputs,
        files,
    })
}

/// What a delta holds: the memo's digests and the entries that differ from its base.
struct Delta {
    files_digest: [u8; 32],
    generation: [u8; 32],
    centrality_inputs: [u8; 32],
    files: Vec<(u32, FileMemo)>,
}

/// The bytes after a sealed file's header, once its checksum, magic, version and
/// builder are checked.
fn header<'b>(
    bytes: &'b [u8],
    magic: &[u8; 8],
    builder: &str,
    stop: &AtomicBool,
) -> Option<Reader<'b>> {
    let (body, checksum) = bytes.split_at_checked(bytes.len().checked_sub(32)?)?;
    if stop.load(Ordering::Relaxed) || blake3::hash(body).as_bytes() != checksum {
        return None;
    }
    let mut r = Reader(body);
    if r.take(8)? != magic || r.u32()? != VERSION {
        return None;
    }
    r.u32()?;
    let len = usize::from(r.u16()?);
    if r.take(len)? != builder.as_bytes() {
        return None;
    }
    Some(r)
}

/// The frontier names: one shared text per distinct name, as resolution shares them.
fn names(r: &mut Reader) -> Option<Vec<std::sync::Arc<str>>> {
    let n = r.len_of(1)?;
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        let len = usize::try_from(var(r)?).ok()?;
        names.push(std::str::from_utf8(r.take(len)?).ok()?.into());
    }
    Some(names)
}

/// A span as `put_span` writes it.
fn span(r: &mut Reader) -> Option<SpanKey> {
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
}

/// File `index`'s entry, as `put_file` writes it.
fn decode_file(r: &mut Reader, index: u32, names: &[std::sync::Arc<str>]) -> Option<FileMemo> {
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
        let from = var32(r)?;
        let to = var32(r)?;
        let codes = r.take(7)?;
        let site = match codes[6] {
            0 => None,
            1 => Some(Site {
                file: index,
                span: span(r)?,
            }),
            2 => Some(Site {
                file: var32(r)?,
                span: span(r)?,
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
        let name = names.get(usize::try_from(var(r)?).ok()?)?.clone();
        let role = RefRole::from_code(r.u8()?)?;
        let from = var32(r)?;
        let file = var32(r)?;
        let site = span(r)?;
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
            candidates: var32(r)?,
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
            0 => std::sync::Arc::new(decode_imports(r)?),
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
    Some(FileMemo {
        digest,
        interface,
        bindings,
        reads_files,
        reads_bindings,
        reads_keys,
        contributes,
        edges,
        frontier: std::sync::Arc::new(frontier),
        external_references,
        imports,
    })
}

/// One pass's import binding result, as `encode` writes it.
fn decode_imports(r: &mut Reader) -> Option<FileImports> {
    let text = |r: &mut Reader| -> Option<String> {
        let len = r.len_of(1)?;
        Some(std::str::from_utf8(r.take(len)?).ok()?.to_string())
    };
    // Kept as stored until a lookup needs them (`resolve::Bindings`).
    let bindings = crate::build::resolve::Bindings::read(r)?;
    let wildcards = r.u32s()?;
    let n = r.len_of(4)?;
    let unresolved = (0..n).map(|_| text(r)).collect::<Option<_>>()?;
    let unresolved_wildcard = match r.u8()? {
        0 => false,
        1 => true,
        _ => return None,
    };
    let n = r.len_of(4)?;
    let external = (0..n).map(|_| text(r)).collect::<Option<_>>()?;
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
        external,
        edges,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::resolve::{Bindings, Target};

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
            centrality_inputs: [7; 32],
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
                    frontier: vec![frontier].into(),
                    external_references: 4,
                    imports: imports(),
                },
                FileMemo::default(),
            ],
            on_disk: None,
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
            bindings: Bindings::from_map(bindings),
            wildcards: vec![1],
            unresolved: ["missing".to_string()].into_iter().collect(),
            unresolved_wildcard: true,
            external: ["HashMap".to_string()].into_iter().collect(),
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
    fn var32_reads_what_put_var_writes_and_refuses_what_does_not_fit() {
        let values = [
            0u32,
            1,
            0x7f,
            0x80,
            0x3fff,
            0x4000,
            1 << 21,
            1 << 28,
            u32::MAX,
        ];
        for value in values {
            let mut bytes = Vec::new();
            put_var(&mut bytes, u64::from(value));
            bytes.push(0xaa);
            let mut r = Reader(&bytes);
            assert_eq!(var32(&mut r), Some(value));
            assert_eq!(r.0, [0xaa], "{value}: the reader stops after the value");
            let mut general = Reader(&bytes);
            assert_eq!(var(&mut general).map(|v| v as u32), Some(value));
        }
        // Beyond a u32, cut short, or longer than five bytes: refused.
        let mut above = Vec::new();
        put_var(&mut above, u64::from(u32::MAX) + 1);
        assert_eq!(var32(&mut Reader(&above)), None);
        assert_eq!(var32(&mut Reader(&[0x80, 0x80])), None);
        assert_eq!(var32(&mut Reader(&[])), None);
        assert_eq!(
            var32(&mut Reader(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00])),
            None
        );
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
        for version in [1u32, 2, 3, 4] {
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
        let mut read_back = read(temp.path(), "b1", &AtomicBool::new(false)).expect("reads");
        let on_disk = read_back.on_disk.take().expect("read from a memo file");
        assert_eq!(read_back, m);
        assert_eq!(on_disk.checksum, bytes[bytes.len() - 32..]);
        assert_eq!(on_disk.differs, vec![false; 20_000]);
        assert_eq!(read(temp.path(), "b2", &AtomicBool::new(false)), None);
    }

    /// `memo` read back, with what it says of the memo file apart.
    fn read_split(dir: &Path) -> (Memo, OnDisk) {
        let mut memo = read(dir, "b1", &AtomicBool::new(false)).expect("reads");
        let on_disk = memo.on_disk.take().expect("read from a memo file");
        (memo, on_disk)
    }

    #[test]
    fn a_delta_holds_the_entries_that_differ_and_extends_only_its_own_memo_file() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let mut m = memo();
        m.files = (0..64)
            .map(|i| FileMemo {
                digest: [i as u8; 32],
                ..m.files[i % 2].clone()
            })
            .collect();
        m.file_nodes = (0..64).collect();
        write(dir, "b1", &m, || ());
        let base = std::fs::read(dir.join(RESOLUTION_FILE)).unwrap();
        assert!(
            !dir.join(DELTA_FILE).exists(),
            "a memo not read from disk is written whole"
        );

        // Two entries of 64 change (within one in eight): only they are written.
        let (mut edited, on_disk) = read_split(dir);
        edited.on_disk = Some(on_disk);
        edited.generation = [9; 32];
        edited.centrality_inputs = [8; 32];
        edited.files[4].digest = [0xaa; 32];
        std::sync::Arc::make_mut(&mut edited.files[4].frontier)[0].name = "renamed".into();
        edited.files[13].external_references = 99;
        for index in [4, 13] {
            edited.on_disk.as_mut().unwrap().differs[index] = true;
        }
        write(dir, "b1", &edited, || ());
        assert!(
            std::fs::read(dir.join(RESOLUTION_FILE)).unwrap() == base,
            "memo file kept"
        );
        let delta = std::fs::read(dir.join(DELTA_FILE)).unwrap();
        assert!(
            delta.len() * 4 < base.len(),
            "{} of {}",
            delta.len(),
            base.len()
        );
        let (read_back, on_disk) = read_split(dir);
        let expected = Memo {
            on_disk: None,
            ..edited.clone()
        };
        assert_eq!(read_back, expected);
        let differs: Vec<usize> = (0..64).filter(|&i| on_disk.differs[i]).collect();
        assert_eq!(differs, [4, 13]);

        // A damaged delta, or one whose memo file was replaced, is passed over: the memo
        // file alone is read, an older whole resolution.
        let original = Memo {
            on_disk: None,
            ..m.clone()
        };
        let mut damaged = delta.clone();
        let middle = damaged.len() / 2;
        damaged[middle] ^= 0x20;
        std::fs::write(dir.join(DELTA_FILE), &damaged).unwrap();
        assert_eq!(
            read_split(dir),
            (
                original.clone(),
                OnDisk {
                    checksum: base[base.len() - 32..].try_into().unwrap(),
                    differs: vec![false; 64],
                }
            )
        );
        std::fs::write(dir.join(DELTA_FILE), &delta).unwrap();
        assert_eq!(read_split(dir).0, expected);
        assert_eq!(
            read(dir, "b2", &AtomicBool::new(false)),
            None,
            "another builder's"
        );
        assert_eq!(read(dir, "b1", &AtomicBool::new(true)), None, "stopped");

        // A memo whose base is no longer the file on disk is written whole, and the delta
        // of the old file goes.
        let mut other = m.clone();
        other.files[0].digest = [0x77; 32];
        write(dir, "b1", &other, || ());
        assert!(!dir.join(DELTA_FILE).exists());
        std::fs::write(dir.join(DELTA_FILE), &delta).unwrap();
        assert_eq!(
            read_split(dir).0,
            other,
            "a stale delta extends another file"
        );
        write(dir, "b1", &edited, || ());
        assert!(
            !dir.join(DELTA_FILE).exists(),
            "its base is gone: written whole"
        );
        assert_eq!(read_split(dir).0, expected);

        // Beyond one entry in eight, the memo is written whole again.
        let (mut many, on_disk) = read_split(dir);
        many.on_disk = Some(OnDisk {
            differs: (0..64).map(|i| i < 9).collect(),
            ..on_disk
        });
        write(dir, "b1", &many, || ());
        assert!(!dir.join(DELTA_FILE).exists());
        assert_eq!(
            read_split(dir).0,
            Memo {
                on_disk: None,
                ..many
            }
        );

        // One entry of 64, but as large as the rest together: beyond an eighth of the
        // memo file's bytes, the memo is written whole again too.
        let (mut large, on_disk) = read_split(dir);
        let edge = large.files[0].edges[0];
        large.files[2].edges = vec![edge; 20_000];
        large.on_disk = Some(OnDisk {
            differs: (0..64).map(|i| i == 2).collect(),
            ..on_disk
        });
        write(dir, "b1", &large, || ());
        assert!(!dir.join(DELTA_FILE).exists(), "a large delta gives way");
        assert!(
            read_split(dir).0
                == Memo {
                    on_disk: None,
                    ..large
                }
        );
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
        // The file count, just after magic, version, reserved, builder and digests.
        let at = 8 + 4 + 4 + 2 + 2 + 32 + 32 + 32;
        bytes[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let body = bytes.len() - 32;
        let checksum = *blake3::hash(&bytes[..body]).as_bytes();
        bytes[body..].copy_from_slice(&checksum);
        assert_eq!(decode(&bytes, "b1", &AtomicBool::new(false)), None);
    }
}
