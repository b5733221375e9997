//! The vector arm's embedding model: the static model embedded in the binary
//! (`src/search/model/`, see its NOTICE), or a local model directory named by
//! `ATLAS_EMBED_MODEL`. Offline; nothing is downloaded.

use std::path::Path;

use model2vec_rs::model::StaticModel;

use crate::error::{AtlasError, Result};

const MODEL: &[u8] = include_bytes!("model/model.safetensors");
const TOKENIZER: &[u8] = include_bytes!("model/tokenizer.json");
const CONFIG: &[u8] = include_bytes!("model/config.json");

pub struct Embedder {
    model: StaticModel,
    /// Identity of the model (16 hex of blake3 over its files): vectors are per model.
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
    /// The configured model: `ATLAS_EMBED_MODEL=<dir>` or the embedded default.
    pub fn load() -> Result<Embedder> {
        match std::env::var_os("ATLAS_EMBED_MODEL") {
            Some(dir) if !dir.is_empty() => Embedder::from_dir(Path::new(&dir)),
            _ => Embedder::from_bytes(TOKENIZER, MODEL, CONFIG),
        }
    }

    pub fn from_dir(dir: &Path) -> Result<Embedder> {
        let read = |name: &str| {
            let path = dir.join(name);
            std::fs::read(&path).map_err(|e| AtlasError::io(path, e))
        };
        Embedder::from_bytes(
            &read("tokenizer.json")?,
            &read("model.safetensors")?,
            &read("config.json")?,
        )
    }

    fn from_bytes(tokenizer: &[u8], model: &[u8], config: &[u8]) -> Result<Embedder> {
        let mut hasher = blake3::Hasher::new();
        for part in [tokenizer, model, config] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
        let identity = hasher.finalize().to_hex()[..16].to_string();
        let model = StaticModel::from_bytes(tokenizer, model, config, Some(true))
            .map_err(|e| invalid(e.to_string()))?;
        let dim = model.dim();
        Ok(Embedder {
            model,
            identity,
            dim,
        })
    }

    /// Unit vectors, one per text, flattened row-major.
    pub fn embed(&self, texts: &[String]) -> Vec<f32> {
        let mut flat = self.model.encode_flat_with_args(texts, Some(256));
        for row in flat.chunks_mut(self.dim) {
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            if norm > 0.0 {
                row.iter_mut().for_each(|x| *x /= norm);
            }
        }
        flat
    }
}
