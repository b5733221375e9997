//! The vector file: writing rows (carrying unchanged rows over from the base
//! generation), its header and checksum, and reading it back with every defect typed.

use super::*;

/// Writes `vectors-<model>.bin`: rows for every searchable node, then every section.
/// Rows of unchanged files are copied from the base's vectors; the rest are embedded.
/// Returns how many were embedded.
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
) -> Result<usize> {
    let dim = embedder.dim;
    let old = base.and_then(|b| OldVectors::open(b, dim, &embedder.identity));
    let mut items: Vec<u32> = Vec::new();
    let mut keys: Vec<Key> = Vec::new();
    for nodes in by_file {
        for &node in nodes {
            if let Some((file, local)) = local_of(graph, node) {
                items.push(node.0);
                keys.push((KIND_SYMBOL, graph.file_path(file).to_string(), local));
            }
        }
    }
    let node_count = graph.node_count() as u32;
    for (i, section) in sections.iter().enumerate() {
        items.push(node_count + i as u32);
        keys.push((KIND_SECTION, section.path.clone(), section.ordinal));
    }
    let path_to_file = file_lookup(graph);
    let mut rows: Vec<Option<Vec<f32>>> = vec![None; items.len()];
    let mut to_embed: Vec<usize> = Vec::new();
    for (i, key) in keys.iter().enumerate() {
        let unchanged = path_to_file
            .get(key.1.as_str())
            .is_some_and(|f| !changed.contains(f));
        let carried = unchanged
            .then(|| old.as_ref().and_then(|o| o.row(key)))
            .flatten();
        match carried {
            Some(vector) => rows[i] = Some(vector),
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
        rows[i] = Some(embedded[n * dim..(n + 1) * dim].to_vec());
    }

    let mut payload = Vec::with_capacity(vector_data_offset(items.len()) + items.len() * dim * 4);
    for &item in &items {
        payload.extend_from_slice(&item.to_le_bytes());
    }
    payload.resize(vector_data_offset(items.len()) - VECTOR_HEADER, 0);
    for row in rows {
        for value in row.unwrap_or_else(|| vec![0.0; dim]) {
            payload.extend_from_slice(&value.to_le_bytes());
        }
    }
    let mut bytes = Vec::with_capacity(VECTOR_HEADER + payload.len());
    bytes.extend_from_slice(VECTOR_MAGIC);
    bytes.extend_from_slice(&VECTOR_FORMAT.to_le_bytes());
    bytes.extend_from_slice(&(dim as u32).to_le_bytes());
    bytes.extend_from_slice(&(items.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(blake3::hash(&payload).as_bytes());
    bytes.extend_from_slice(&payload);
    let path = dir.join(format!("vectors-{}.bin", embedder.identity));
    fs::write(&path, bytes).at(&path)?;
    Ok(to_embed.len())
}

/// The base generation's vectors, addressable by document key.
pub(super) struct OldVectors {
    mmap: memmap2::Mmap,
    dim: usize,
    offset: usize,
    rows: HashMap<Key, usize>,
}

impl OldVectors {
    fn open(base: &Base, dim: usize, model: &str) -> Option<OldVectors> {
        let path = base.dir.join(format!("vectors-{model}.bin"));
        let file = fs::File::open(path).ok()?;
        // SAFETY: vector files are written once and renamed into place, never modified.
        let mmap = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        let items = parse_vector_header(&mmap, dim).ok()?;
        if !vector_checksum_ok(&mmap) {
            return None;
        }
        let sections: Vec<Section> =
            serde_json::from_slice(&fs::read(base.dir.join("sections.json")).ok()?).ok()?;
        let graph = base.graph;
        let node_count = graph.node_count() as u32;
        let mut rows = HashMap::with_capacity(items.len());
        for (row, &item) in items.iter().enumerate() {
            let key = if item < node_count {
                let (file, local) = local_of(graph, NodeId(item))?;
                (KIND_SYMBOL, graph.file_path(file).to_string(), local)
            } else {
                let section = sections.get((item - node_count) as usize)?;
                (KIND_SECTION, section.path.clone(), section.ordinal)
            };
            rows.insert(key, row);
        }
        Some(OldVectors {
            offset: vector_data_offset(items.len()),
            mmap,
            dim,
            rows,
        })
    }

    fn row(&self, key: &Key) -> Option<Vec<f32>> {
        let row = *self.rows.get(key)?;
        let start = self.offset + row * self.dim * 4;
        let bytes = self.mmap.get(start..start + self.dim * 4)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
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
    bytes.len() >= VECTOR_HEADER
        && blake3::hash(&bytes[VECTOR_HEADER..]).as_bytes() == &bytes[32..64]
}
