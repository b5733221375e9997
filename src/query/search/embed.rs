//! The vector arm's embedding model: the static model embedded in the binary
//! (`src/query/search/model/`, see its NOTICE), or a local model directory named by
//! `ATLAS_EMBED_MODEL`. Offline; nothing is downloaded.
//!
//! The embedded model is loaded on first use (its tokenizer takes ~20 ms to parse): its
//! identity and dimension come from `SHA256SUMS` and the safetensors header, so opening
//! an index costs nothing, and a search can load the model while its other arms run.

use std::path::Path;
use std::sync::OnceLock;

use model2vec_rs::model::StaticModel;
use serde::Deserialize;

use crate::config::EmbedSource;
use crate::error::{AtlasError, Result};

const MODEL: &[u8] = include_bytes!("model/model.safetensors");
const TOKENIZER: &[u8] = include_bytes!("model/tokenizer.json");
const CONFIG: &[u8] = include_bytes!("model/config.json");
/// sha256 of each embedded file (checked against the files by a test).
const SHA256SUMS: &[u8] = include_bytes!("model/SHA256SUMS");

/// The embedded model, loaded once per process on first use (or why it could not be).
static EMBEDDED: OnceLock<std::result::Result<StaticModel, String>> = OnceLock::new();

fn embedded_model() -> &'static std::result::Result<StaticModel, String> {
    EMBEDDED.get_or_init(|| {
        StaticModel::from_bytes(TOKENIZER, MODEL, CONFIG, Some(true)).map_err(|e| e.to_string())
    })
}

/// Starts loading the embedded model on a background thread, so that a search can open
/// its graph and index (and run its lexical arms) meanwhile.
pub fn warm_up(source: &EmbedSource) {
    // Nothing to start when a model directory is configured or the model is loaded (a
    // warm server searches many times).
    if *source != EmbedSource::Embedded || EMBEDDED.get().is_some() {
        return;
    }
    // Detached: a process that never needs the model exits without waiting for it.
    let _ = std::thread::Builder::new()
        .name("atlas-embed-warm-up".into())
        .spawn(|| {
            let _ = embedded_model();
        });
}

pub struct Embedder {
    /// A configured model, loaded (and validated) up front; `None` for the embedded one.
    loaded: Option<StaticModel>,
    /// Identity of the model (16 hex of blake3 over its files' digests or bytes):
    /// vectors are kept per model.
    pub identity: String,
    pub dim: usize,
}

fn invalid(reason: String) -> AtlasError {
    AtlasError::InvalidInput {
        what: "embedding model",
        reason,
    }
}

impl Embedder {
    /// The configured model: a model directory (`ATLAS_EMBED_MODEL`) or the embedded
    /// default.
    pub fn load(source: &EmbedSource) -> Result<Embedder> {
        match source {
            EmbedSource::Dir(dir) => Embedder::from_dir(dir),
            EmbedSource::Embedded => Embedder::embedded(),
        }
    }

    /// The embedded default, without loading it.
    pub fn embedded() -> Result<Embedder> {
        let dim = safetensors_dim(MODEL).ok_or_else(|| {
            invalid("the embedded model's safetensors header has no 2-D embeddings".into())
        })?;
        Ok(Embedder {
            loaded: None,
            identity: blake3::hash(SHA256SUMS).to_hex()[..16].to_string(),
            dim,
        })
    }

    fn from_dir(dir: &Path) -> Result<Embedder> {
        // Regular files of bounded size (a configured directory may hold anything).
        let read = |name: &str| {
            let path = dir.join(name);
            crate::source::read_regular(&path, 4 << 30).map_err(|refusal| match refusal {
                crate::source::Refusal::Io(e) => AtlasError::io(path, e),
                other => invalid(format!("{}: {other}", path.display())),
            })
        };
        let (tokenizer, model, config) = (
            read("tokenizer.json")?,
            read("model.safetensors")?,
            read("config.json")?,
        );
        let mut hasher = blake3::Hasher::new();
        for part in [&tokenizer, &model, &config] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let identity = hasher.finalize().to_hex()[..16].to_string();
        let model = StaticModel::from_bytes(&tokenizer, &model, &config, Some(true))
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Embedder {
            dim: model.dim(),
            loaded: Some(model),
            identity,
        })
    }

    fn model(&self) -> Result<&StaticModel> {
        if let Some(model) = &self.loaded {
            return Ok(model);
        }
        embedded_model()
            .as_ref()
            .map_err(|e| invalid(format!("the embedded model does not load: {e}")))
    }

    /// Unit vectors, one per text, flattened row-major.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<f32>> {
        let mut flat = self.model()?.encode_flat_with_args(texts, Some(256));
        for row in flat.chunks_mut(self.dim) {
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                row.iter_mut().for_each(|x| *x /= norm);
            }
        }
        Ok(flat)
    }
}

/// The column count of the `embeddings` tensor, read from the safetensors header (an
/// 8-byte little-endian length, then that many bytes of JSON).
fn safetensors_dim(bytes: &[u8]) -> Option<usize> {
    #[derive(Deserialize)]
    struct Tensor {
        shape: Vec<usize>,
    }
    let len = u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?) as usize;
    let header: std::collections::HashMap<String, serde_json::Value> =
        serde_json::from_slice(bytes.get(8..8usize.checked_add(len)?)?).ok()?;
    let tensor: Tensor = ["embeddings", "0", "embedding.weight"]
        .iter()
        .find_map(|name| serde_json::from_value(header.get(*name)?.clone()).ok())?;
    match tensor.shape[..] {
        [_, cols] if cols > 0 => Some(cols),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn the_embedded_files_match_their_sums_and_load() {
        let sums = std::str::from_utf8(SHA256SUMS).unwrap();
        for (name, bytes) in [
            ("model.safetensors", MODEL),
            ("tokenizer.json", TOKENIZER),
            ("config.json", CONFIG),
        ] {
            let digest = crate::graph::format::hex(&Sha256::digest(bytes));
            assert!(
                sums.lines()
                    .any(|l| l.split_whitespace().collect::<Vec<_>>() == [digest.as_str(), name]),
                "{name}: {digest} not in SHA256SUMS"
            );
        }
        let embedder = Embedder::embedded().unwrap();
        assert_eq!(embedder.dim, 256);
        let vectors = embedder
            .embed(&["parse config file".to_string(), "x".to_string()])
            .unwrap();
        assert_eq!(vectors.len(), 2 * 256);
        let norm: f32 = vectors[..256].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{norm}");
    }

    #[test]
    fn a_model_directory_is_validated_up_front() {
        let dir = tempfile::tempdir().unwrap();
        assert!(Embedder::from_dir(dir.path()).is_err());
        std::fs::write(dir.path().join("tokenizer.json"), TOKENIZER).unwrap();
        std::fs::write(dir.path().join("config.json"), CONFIG).unwrap();
        std::fs::write(dir.path().join("model.safetensors"), b"not a model").unwrap();
        match Embedder::from_dir(dir.path()) {
            Err(AtlasError::InvalidInput { what, .. }) => assert_eq!(what, "embedding model"),
            other => panic!(
                "expected a typed error, got {:?}",
                other.map(|e| e.identity)
            ),
        }
    }

    #[test]
    fn safetensors_headers_are_parsed_not_trusted() {
        assert_eq!(safetensors_dim(b""), None);
        assert_eq!(safetensors_dim(&u64::MAX.to_le_bytes()), None);
        let header = br#"{"embeddings":{"dtype":"I8","shape":[10,4],"data_offsets":[0,40]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        assert_eq!(safetensors_dim(&bytes), Some(4));
    }
}
