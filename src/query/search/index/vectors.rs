//! The vectors of an index: packs of rows, shared by hard link between generations, and
//! the generation's row table over them (vector format 3, graph-schema/README.md,
//! "Search index"). Writing carries unchanged rows over as references into the base's
//! packs and puts only new rows into a new pack; reading checks every header, length and
//! reference, with every defect typed.

use super::*;

/// Past this many packs, or when the packs a table refers to hold more dead rows than
/// live ones, an update writes one pack of every row again (compaction).
const MAX_PACKS: usize = 8;

/// `vectors-<model>-<id>.pack`: the pack whose payload's blake3 begins with `id`.
pub fn pack_name(model: &str, id: &str) -> String {
    format!("vectors-{model}-{id}.pack")
}

/// One row's place: `(pack, row in the pack)`.
pub type Location = (u32, u32);

/// A parsed row table: the pack ids it refers to, and per row its item and place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorTable {
    pub packs: Vec<String>,
    /// Row → item (a node id, or `node_count + i` for section `i`).
    pub items: Vec<u32>,
    pub locations: Vec<Location>,
}

/// What the vectors of an update wrote and shared.
pub(super) struct WrittenVectors {
    pub embedded: usize,
    /// Files written here, with their entries hashed from the bytes written.
    pub written: Vec<(String, Artifact)>,
}

/// Writes the row table `vectors-<model>.bin` for every searchable node, then every
/// section, and a pack for the rows it must embed. Rows of unchanged files stay in the
/// base's packs, which are linked into `dir` (their entries go to `linked`), unless
/// `kept_packs` folds them into the new pack, carried rows copied as bytes.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_vectors(
    dir: &Path,
    graph: &Graph,
    root: &Path,
    embedder: &Embedder,
    by_file: &[Vec<NodeId>],
    sections: &[Section],
    changed: &HashSet<FileId>,
    base: Option<&Base>,
    texts: &mut HashMap<FileId, Option<String>>,
    linked: &mut BTreeMap<String, (Artifact, Inode)>,
) -> Result<WrittenVectors> {
    let dim = embedder.dim;
    let row_bytes = dim * 4;
    let model = &embedder.identity;
    let old = base.and_then(|b| OldVectors::open(b, dim, model));
    let mut items: Vec<u32> = Vec::new();
    let mut keys: Vec<Key> = Vec::new();
    for nodes in by_file {
        for &node in nodes {
            if let Some((file, local)) = local_of(graph, node) {
                items.push(node.0);
                keys.push((KIND_SYMBOL, graph.file_path(file), local));
            }
        }
    }
    let node_count = graph.node_count() as u32;
    for (i, section) in sections.iter().enumerate() {
        items.push(node_count + i as u32);
        keys.push((KIND_SECTION, section.path.as_str(), section.ordinal));
    }
    let path_to_file = file_lookup(graph);
    // Each row's place in the base's packs, when it is carried over.
    let carried: Vec<Option<Location>> = keys
        .iter()
        .map(|key| {
            let unchanged = path_to_file
                .get(key.1)
                .is_some_and(|f| !changed.contains(f));
            unchanged
                .then(|| old.as_ref().and_then(|o| o.location(key)))
                .flatten()
        })
        .collect();
    let kept = kept_packs(&carried, old.as_ref());

    // Rows embedded now: every row without a carried place.
    let to_embed: Vec<usize> = (0..items.len()).filter(|&i| carried[i].is_none()).collect();
    let mut inputs = Vec::with_capacity(to_embed.len());
    for &i in &to_embed {
        let item = items[i];
        if item < node_count {
            let node = NodeId(item);
            let file = graph.node(node).file();
            let text = texts
                .entry(file)
                .or_insert_with(|| current_text(graph, root, file));
            let parts = symbol_text(graph, text.as_deref(), node);
            let qualified = graph.str(graph.node(node).qualified());
            let words = crate::graph::names::split_identifier(qualified).join(" ");
            inputs.push(format!(
                "{words} {} {} {}",
                parts.signature, parts.doc, parts.body
            ));
        } else {
            let section = &sections[(item - node_count) as usize];
            inputs.push(format!("{} {}", section.heading_path, section.body));
        }
    }
    let embedded = embedder.embed(&inputs)?;

    // The new pack: the embedded rows, and the carried ones whose pack is not kept.
    let in_pack: Vec<usize> = (0..items.len())
        .filter(|&i| carried[i].is_none_or(|(p, _)| !kept.contains(&p)))
        .collect();
    let mut pack = vec![0u8; VECTOR_HEADER + in_pack.len() * row_bytes];
    // Row → its place among the embedded rows.
    let mut fresh: Vec<Option<usize>> = vec![None; items.len()];
    for (n, &i) in to_embed.iter().enumerate() {
        fresh[i] = Some(n);
    }
    for (slot, &i) in in_pack.iter().enumerate() {
        let at = VECTOR_HEADER + slot * row_bytes;
        match (fresh[i], carried[i], &old) {
            (Some(n), _, _) => {
                for (d, value) in embedded[n * dim..(n + 1) * dim].iter().enumerate() {
                    pack[at + d * 4..at + d * 4 + 4].copy_from_slice(&value.to_le_bytes());
                }
            }
            (None, Some(location), Some(old)) => {
                let row = old.row(location).ok_or_else(|| {
                    internal(format!("base vector row {location:?} out of its pack"))
                })?;
                pack[at..at + row_bytes].copy_from_slice(row);
            }
            _ => return Err(internal("a vector row neither embedded nor carried")),
        }
    }
    let mut written = Vec::new();
    let mut pack_ids: Vec<String> = Vec::new();
    // Base pack index → index in this table.
    let mut renumber: HashMap<u32, u32> = HashMap::new();
    if let (Some(old), Some(base)) = (&old, base) {
        for &p in &kept {
            let id = &old.packs[p as usize].id;
            // Packs are written once and never modified: shared, not copied.
            base.share(&pack_name(model, id), dir, linked)?;
            renumber.insert(p, pack_ids.len() as u32);
            pack_ids.push(id.clone());
        }
    }
    let new_pack = if in_pack.is_empty() {
        None
    } else {
        write_header(&mut pack, PACK_MAGIC, dim, in_pack.len(), 0);
        let id = hash(&pack[VECTOR_HEADER..]).to_hex()[..16].to_string();
        let name = pack_name(model, &id);
        // The same id is the same rows: a linked pack already holds them.
        if !dir.join(&name).exists() {
            written.push(write_artifact(dir, name, &pack)?);
        }
        let index = match pack_ids.iter().position(|p| *p == id) {
            Some(index) => index as u32,
            None => {
                pack_ids.push(id);
                pack_ids.len() as u32 - 1
            }
        };
        Some(index)
    };
    drop(pack);

    // The table: pack ids, then per row its item and place.
    let mut slots: Vec<Option<u32>> = vec![None; items.len()];
    for (slot, &i) in in_pack.iter().enumerate() {
        slots[i] = Some(slot as u32);
    }
    let mut table = vec![0u8; VECTOR_HEADER + pack_ids.len() * PACK_ID + items.len() * TABLE_ROW];
    for (n, id) in pack_ids.iter().enumerate() {
        let at = VECTOR_HEADER + n * PACK_ID;
        table[at..at + PACK_ID].copy_from_slice(id.as_bytes());
    }
    let rows_at = VECTOR_HEADER + pack_ids.len() * PACK_ID;
    for (i, &item) in items.iter().enumerate() {
        let (pack, row) = match (slots[i], new_pack) {
            (Some(slot), Some(pack)) => (pack, slot),
            _ => carried[i]
                .and_then(|(p, r)| Some((*renumber.get(&p)?, r)))
                .ok_or_else(|| internal("a vector row outside the new pack and the kept ones"))?,
        };
        let at = rows_at + i * TABLE_ROW;
        table[at..at + 4].copy_from_slice(&item.to_le_bytes());
        table[at + 4..at + 8].copy_from_slice(&pack.to_le_bytes());
        table[at + 8..at + 12].copy_from_slice(&row.to_le_bytes());
    }
    write_header(&mut table, VECTOR_MAGIC, dim, items.len(), pack_ids.len());
    written.push(write_artifact(dir, format!("vectors-{model}.bin"), &table)?);
    Ok(WrittenVectors {
        embedded: to_embed.len(),
        written,
    })
}

/// The base's packs whose rows stay where they are, in pack order. All that rows refer
/// to, unless they hold more dead rows than live ones (then none: every row is written
/// again, and the table is one pack) or would be more than `MAX_PACKS` with the new one
/// (then the largest alone: the small packs of earlier updates fold into the new pack).
fn kept_packs(carried: &[Option<Location>], old: Option<&OldVectors>) -> Vec<u32> {
    let Some(old) = old else {
        return Vec::new();
    };
    let mut referenced: Vec<u32> = carried.iter().flatten().map(|&(p, _)| p).collect();
    referenced.sort_unstable();
    referenced.dedup();
    let live = carried.iter().flatten().count();
    let rows: usize = referenced.iter().map(|&p| old.packs[p as usize].rows).sum();
    if rows > 2 * live {
        Vec::new()
    } else if referenced.len() + 1 > MAX_PACKS {
        let largest = referenced
            .iter()
            .copied()
            .max_by_key(|&p| (old.packs[p as usize].rows, std::cmp::Reverse(p)));
        largest.into_iter().collect()
    } else {
        referenced
    }
}

/// Writes `bytes` as `dir/name`; its `index.json` entry, hashed from the bytes written.
fn write_artifact(dir: &Path, name: String, bytes: &[u8]) -> Result<(String, Artifact)> {
    let path = dir.join(&name);
    fs::write(&path, bytes).at(&path)?;
    let artifact = Artifact {
        bytes: bytes.len() as u64,
        blake3: checksum(bytes),
    };
    Ok((name, artifact))
}

/// Fills the 64-byte header of a table or a pack whose payload is already in `bytes`.
fn write_header(bytes: &mut [u8], magic: &[u8; 8], dim: usize, rows: usize, packs: usize) {
    let payload = (bytes.len() - VECTOR_HEADER) as u64;
    bytes[..8].copy_from_slice(magic);
    bytes[8..12].copy_from_slice(&VECTOR_FORMAT.to_le_bytes());
    bytes[12..16].copy_from_slice(&(dim as u32).to_le_bytes());
    bytes[16..20].copy_from_slice(&(rows as u32).to_le_bytes());
    bytes[20..24].copy_from_slice(&(packs as u32).to_le_bytes());
    bytes[24..32].copy_from_slice(&payload.to_le_bytes());
    let sum = hash(&bytes[VECTOR_HEADER..]);
    bytes[32..64].copy_from_slice(sum.as_bytes());
}

/// One of the base's packs, mmapped.
struct OldPack {
    id: String,
    rows: usize,
    mmap: memmap2::Mmap,
}

/// The base generation's vectors, addressable by document key.
pub(super) struct OldVectors<'g> {
    packs: Vec<OldPack>,
    row_bytes: usize,
    /// `(file, local)` of the base graph's symbols → place.
    symbols: HashMap<(&'g str, u32), Location>,
    /// `(file, ordinal)` of the base's sections → place.
    sections: HashMap<(String, u32), Location>,
}

impl<'g> OldVectors<'g> {
    /// `None` when anything of the base's vectors fails a check (the update then
    /// embeds every row again).
    fn open(base: &Base<'g>, dim: usize, model: &str) -> Option<OldVectors<'g>> {
        let bytes = fs::read(base.dir.join(format!("vectors-{model}.bin"))).ok()?;
        let table = parse_vector_table(&bytes, dim).ok()?;
        let mut packs = Vec::with_capacity(table.packs.len());
        for id in &table.packs {
            let file = fs::File::open(base.dir.join(pack_name(model, id))).ok()?;
            // SAFETY: packs are written once and renamed into place, never modified.
            let mmap = unsafe { memmap2::Mmap::map(&file) }.ok()?;
            let rows = parse_pack_header(&mmap, dim).ok()?;
            if !vector_checksum_ok(&mmap) {
                return None;
            }
            packs.push(OldPack {
                id: id.clone(),
                rows,
                mmap,
            });
        }
        let listed: Vec<Section> =
            serde_json::from_slice(&fs::read(base.dir.join("sections.json")).ok()?).ok()?;
        let graph = base.graph;
        let node_count = graph.node_count() as u32;
        let mut symbols = HashMap::with_capacity(table.items.len());
        let mut sections = HashMap::with_capacity(listed.len());
        for (&item, &(pack, row)) in table.items.iter().zip(&table.locations) {
            if row as usize >= packs[pack as usize].rows {
                return None;
            }
            if item < node_count {
                let (file, local) = local_of(graph, NodeId(item))?;
                symbols.insert((graph.file_path(file), local), (pack, row));
            } else {
                let section = listed.get((item - node_count) as usize)?;
                sections.insert((section.path.clone(), section.ordinal), (pack, row));
            }
        }
        Some(OldVectors {
            packs,
            row_bytes: dim * 4,
            symbols,
            sections,
        })
    }

    fn location(&self, &(kind, file, local): &Key) -> Option<Location> {
        if kind == KIND_SECTION {
            self.sections.get(&(file.to_string(), local)).copied()
        } else {
            self.symbols.get(&(file, local)).copied()
        }
    }

    /// The row's bytes (little-endian `f32`s), as the base wrote them.
    fn row(&self, (pack, row): Location) -> Option<&[u8]> {
        pack_row(&self.packs.get(pack as usize)?.mmap, row, self.row_bytes)
    }
}

/// Row `row` of a pack's bytes (`width` of them), `None` past its end.
pub fn pack_row(pack: &[u8], row: u32, width: usize) -> Option<&[u8]> {
    let start = VECTOR_HEADER + row as usize * width;
    pack.get(start..start + width)
}

/// The fields every header shares, after checking magic, format and dimension:
/// `(rows, packs, payload length)`, the payload's length checked against the file's.
fn parse_header(
    bytes: &[u8],
    magic: &[u8; 8],
    dim: usize,
) -> std::result::Result<(usize, usize, u64), VectorsDefect> {
    if bytes.len() < VECTOR_HEADER || &bytes[..8] != magic {
        let what = if magic == VECTOR_MAGIC {
            "a vector table"
        } else {
            "a vector pack"
        };
        return Err(VectorsDefect(format!("not {what}")));
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    if u32_at(8) != VECTOR_FORMAT {
        return Err(VectorsDefect(format!(
            "vector format {} (this build reads {VECTOR_FORMAT})",
            u32_at(8)
        )));
    }
    if u32_at(12) as usize != dim {
        return Err(VectorsDefect(format!(
            "{} dimensions, the model has {dim}",
            u32_at(12)
        )));
    }
    let mut length = [0u8; 8];
    length.copy_from_slice(&bytes[24..32]);
    let payload = u64::from_le_bytes(length);
    if (bytes.len() - VECTOR_HEADER) as u64 != payload {
        return Err(VectorsDefect(format!(
            "{} payload bytes, the header says {payload} (truncated or padded)",
            bytes.len() - VECTOR_HEADER
        )));
    }
    Ok((u32_at(16) as usize, u32_at(20) as usize, payload))
}

/// A pack's row count, after checking its header and exact length (its payload
/// checksum is `vector_checksum_ok`).
pub fn parse_pack_header(bytes: &[u8], dim: usize) -> std::result::Result<usize, VectorsDefect> {
    let (rows, _, payload) = parse_header(bytes, PACK_MAGIC, dim)?;
    if payload != (rows * dim * 4) as u64 {
        return Err(VectorsDefect(format!(
            "{payload} payload bytes for {rows} rows of {dim}"
        )));
    }
    Ok(rows)
}

/// A row table, after checking its header, exact length, checksum (it is small) and
/// that every place names one of its packs. Rows within a pack are checked by the
/// reader, which knows the packs' lengths.
pub fn parse_vector_table(
    bytes: &[u8],
    dim: usize,
) -> std::result::Result<VectorTable, VectorsDefect> {
    let (rows, packs, payload) = parse_header(bytes, VECTOR_MAGIC, dim)?;
    if payload != (packs * PACK_ID + rows * TABLE_ROW) as u64 {
        return Err(VectorsDefect(format!(
            "{payload} payload bytes for {rows} rows over {packs} packs"
        )));
    }
    if !vector_checksum_ok(bytes) {
        return Err(VectorsDefect(
            "the row table does not match its checksum".into(),
        ));
    }
    let mut ids = Vec::with_capacity(packs);
    for n in 0..packs {
        let raw = &bytes[VECTOR_HEADER + n * PACK_ID..VECTOR_HEADER + (n + 1) * PACK_ID];
        match std::str::from_utf8(raw) {
            Ok(id) if id.bytes().all(|b| b.is_ascii_hexdigit()) => ids.push(id.to_string()),
            _ => return Err(VectorsDefect(format!("pack {n} has no valid id"))),
        }
    }
    let u32_at =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let rows_at = VECTOR_HEADER + packs * PACK_ID;
    let mut items = Vec::with_capacity(rows);
    let mut locations = Vec::with_capacity(rows);
    for r in 0..rows {
        let at = rows_at + r * TABLE_ROW;
        let pack = u32_at(at + 4);
        if pack as usize >= packs {
            return Err(VectorsDefect(format!(
                "row {r} names pack {pack} of {packs}"
            )));
        }
        items.push(u32_at(at));
        locations.push((pack, u32_at(at + 8)));
    }
    Ok(VectorTable {
        packs: ids,
        items,
        locations,
    })
}

/// What is wrong with a vector file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VectorsDefect(pub String);

/// Whether a table's or a pack's payload matches the checksum in its header.
pub fn vector_checksum_ok(bytes: &[u8]) -> bool {
    bytes.len() >= VECTOR_HEADER && hash(&bytes[VECTOR_HEADER..]).as_bytes() == &bytes[32..64]
}
