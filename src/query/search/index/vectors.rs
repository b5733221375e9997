//! The vector file: writing rows (carrying unchanged rows over from the base
//! generation), its header and checksum, and reading it back with every defect typed.

use super::*;

/// Writes `vectors-<model>.bin`: rows for every searchable node, then every section.
/// Rows of unchanged files are copied from the base's vectors as bytes; the rest are
/// embedded. Returns how many were embedded and the file's name and artifact entry, hashed from
/// the bytes written (the file is not read back: 48 MB on sympy).
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
) -> Result<(usize, (String, Artifact))> {
    let dim = embedder.dim;
    let row_bytes = dim * 4;
    let old = base.and_then(|b| OldVectors::open(b, dim, &embedder.identity));
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
    // The whole file in one buffer: header, row → item table, rows.
    let data = vector_data_offset(items.len());
    let mut bytes = vec![0u8; data + items.len() * row_bytes];
    for (row, item) in items.iter().enumerate() {
        let at = VECTOR_HEADER + row * 4;
        bytes[at..at + 4].copy_from_slice(&item.to_le_bytes());
    }
    let path_to_file = file_lookup(graph);
    let mut to_embed: Vec<usize> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let unchanged = path_to_file
            .get(key.1)
            .is_some_and(|f| !changed.contains(f));
        let carried = unchanged
            .then(|| old.as_ref().and_then(|o| o.row(key)))
            .flatten();
        match carried {
            Some(row) => {
                let at = data + i * row_bytes;
                bytes[at..at + row_bytes].copy_from_slice(row);
            }
            None => to_embed.push(i),
        }
    }
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
    for (n, &i) in to_embed.iter().enumerate() {
        let at = data + i * row_bytes;
        for (d, value) in embedded[n * dim..(n + 1) * dim].iter().enumerate() {
            bytes[at + d * 4..at + d * 4 + 4].copy_from_slice(&value.to_le_bytes());
        }
    }
    let payload = (bytes.len() - VECTOR_HEADER) as u64;
    bytes[..8].copy_from_slice(VECTOR_MAGIC);
    bytes[8..12].copy_from_slice(&VECTOR_FORMAT.to_le_bytes());
    bytes[12..16].copy_from_slice(&(dim as u32).to_le_bytes());
    bytes[16..20].copy_from_slice(&(items.len() as u32).to_le_bytes());
    bytes[24..32].copy_from_slice(&payload.to_le_bytes());
    let sum = hash(&bytes[VECTOR_HEADER..]);
    bytes[32..64].copy_from_slice(sum.as_bytes());
    let name = format!("vectors-{}.bin", embedder.identity);
    let path = dir.join(&name);
    fs::write(&path, &bytes).at(&path)?;
    let artifact = Artifact {
        bytes: bytes.len() as u64,
        blake3: hash(&bytes).to_hex().to_string(),
    };
    Ok((to_embed.len(), (name, artifact)))
}

/// The base generation's vectors, addressable by document key.
pub(super) struct OldVectors<'g> {
    mmap: memmap2::Mmap,
    row_bytes: usize,
    offset: usize,
    /// `(file, local)` of the base graph's symbols → row.
    symbols: HashMap<(&'g str, u32), usize>,
    /// `(file, ordinal)` of the base's sections → row.
    sections: HashMap<(String, u32), usize>,
}

impl<'g> OldVectors<'g> {
    fn open(base: &Base<'g>, dim: usize, model: &str) -> Option<OldVectors<'g>> {
        let path = base.dir.join(format!("vectors-{model}.bin"));
        let file = fs::File::open(path).ok()?;
        // SAFETY: vector files are written once and renamed into place, never modified.
        let mmap = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        let items = parse_vector_header(&mmap, dim).ok()?;
        if !vector_checksum_ok(&mmap) {
            return None;
        }
        let table: Vec<Section> =
            serde_json::from_slice(&fs::read(base.dir.join("sections.json")).ok()?).ok()?;
        let graph = base.graph;
        let node_count = graph.node_count() as u32;
        let mut symbols = HashMap::with_capacity(items.len());
        let mut sections = HashMap::with_capacity(table.len());
        for (row, &item) in items.iter().enumerate() {
            if item < node_count {
                let (file, local) = local_of(graph, NodeId(item))?;
                symbols.insert((graph.file_path(file), local), row);
            } else {
                let section = table.get((item - node_count) as usize)?;
                sections.insert((section.path.clone(), section.ordinal), row);
            }
        }
        Some(OldVectors {
            offset: vector_data_offset(items.len()),
            mmap,
            row_bytes: dim * 4,
            symbols,
            sections,
        })
    }

    /// The row's bytes (little-endian `f32`s), as the base wrote them.
    fn row(&self, &(kind, file, local): &Key) -> Option<&[u8]> {
        let row = if kind == KIND_SECTION {
            *self.sections.get(&(file.to_string(), local))?
        } else {
            *self.symbols.get(&(file, local))?
        };
        let start = self.offset + row * self.row_bytes;
        self.mmap.get(start..start + self.row_bytes)
    }
}

/// Where the rows start: after the header and the row → item table (padded to 8 bytes).
pub fn vector_data_offset(rows: usize) -> usize {
    VECTOR_HEADER + (rows * 4).div_ceil(8) * 8
}

/// The row → item table of a vector file, after checking its header: magic, format, the
/// model's dimension, and an exact length. The payload checksum is `vector_checksum_ok`.
pub fn parse_vector_header(
    bytes: &[u8],
    dim: usize,
) -> std::result::Result<Vec<u32>, VectorsDefect> {
    if bytes.len() < VECTOR_HEADER || &bytes[..8] != VECTOR_MAGIC {
        return Err(VectorsDefect("not a vector file".into()));
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
    let rows = u32_at(16) as usize;
    let mut length = [0u8; 8];
    length.copy_from_slice(&bytes[24..32]);
    let payload = u64::from_le_bytes(length);
    let expected = (vector_data_offset(rows) - VECTOR_HEADER) as u64 + (rows * dim * 4) as u64;
    if payload != expected || (bytes.len() - VECTOR_HEADER) as u64 != payload {
        return Err(VectorsDefect(format!(
            "{} payload bytes for {rows} rows of {dim} (truncated or padded)",
            bytes.len() - VECTOR_HEADER
        )));
    }
    Ok((0..rows).map(|r| u32_at(VECTOR_HEADER + r * 4)).collect())
}

/// What is wrong with a vector file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct VectorsDefect(pub String);

/// Whether a vector file's payload matches the checksum in its header.
pub fn vector_checksum_ok(bytes: &[u8]) -> bool {
    bytes.len() >= VECTOR_HEADER && hash(&bytes[VECTOR_HEADER..]).as_bytes() == &bytes[32..64]
}
