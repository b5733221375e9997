//! Exact token counts for response budgets (R-OBS-1): the bundled o200k BPE
//! (tiktoken-rs, embedded, no download), built lazily on first use, or a HuggingFace
//! `tokenizer.json` named by `ATLAS_TOKENIZER_PATH`. When no counter can be had, budgets
//! fall back to characters and say so.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// sha256 of tiktoken's `o200k_base.tiktoken` (the file tiktoken-rs embeds; the same
/// value tiktoken publishes as the file's expected hash).
/// The largest `tokenizer.json` read (real ones are a few MiB).
const MAX_TOKENIZER_BYTES: u64 = 64 << 20;

const O200K_SHA256: &str = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d";

enum Backend {
    Tiktoken(tiktoken_rs::CoreBPE),
    HuggingFace(Box<tokenizers::Tokenizer>),
    Chars,
}

/// Which tokenizer counted: recorded in budgets and observability events (R-OBS-3).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TokenizerIdentity {
    /// `o200k_base`, `huggingface:<file name>`, or `chars` on fallback.
    pub name: String,
    pub revision: String,
    /// sha256 of the vocabulary file; empty on fallback.
    pub sha256: String,
}

pub struct TokenCounter {
    backend: Backend,
    /// The tokenizer's name, or why counting fell back to characters.
    pub name: String,
    pub identity: TokenizerIdentity,
}

impl TokenCounter {
    /// `tokens` when counting exactly, `chars` on fallback.
    pub fn mode(&self) -> &'static str {
        match self.backend {
            Backend::Chars => "chars",
            _ => "tokens",
        }
    }

    /// What `max_tokens` allows in this counter's unit: characters stand in for tokens at
    /// ~4 per token when counting is unavailable.
    pub fn ceiling(&self, max_tokens: usize) -> usize {
        match self.backend {
            Backend::Chars => max_tokens * 4,
            _ => max_tokens,
        }
    }

    /// Tokens (or characters on fallback) of `text`.
    pub fn count(&self, text: &str) -> usize {
        match &self.backend {
            Backend::Tiktoken(bpe) => bpe.encode_ordinary(text).len(),
            Backend::HuggingFace(tokenizer) => match tokenizer.encode(text, false) {
                Ok(encoding) => encoding.len(),
                // A text the tokenizer rejects still gets a bound: one token per char.
                Err(_) => text.chars().count(),
            },
            Backend::Chars => text.chars().count(),
        }
    }

    /// The embedded o200k BPE.
    pub fn o200k() -> TokenCounter {
        match tiktoken_rs::o200k_base() {
            Ok(bpe) => TokenCounter {
                backend: Backend::Tiktoken(bpe),
                name: "o200k_base".into(),
                identity: TokenizerIdentity {
                    name: "o200k_base".into(),
                    revision: "tiktoken-rs 0.12.1".into(),
                    sha256: O200K_SHA256.into(),
                },
            },
            Err(e) => TokenCounter::chars(format!("o200k_base unavailable: {e}")),
        }
    }

    /// A HuggingFace `tokenizer.json`; characters (saying why) when it cannot be loaded.
    fn hugging_face(path: &Path) -> TokenCounter {
        // A regular file of sane size: never a FIFO (which blocks) or /dev/zero (endless).
        let bytes = match crate::source::read_regular(path, MAX_TOKENIZER_BYTES) {
            Ok(bytes) => bytes,
            Err(e) => {
                return TokenCounter::chars(format!(
                    "tokenizer {} unreadable: {e}",
                    path.display()
                ));
            }
        };
        match tokenizers::Tokenizer::from_bytes(&bytes) {
            Ok(tokenizer) => {
                let file = path
                    .file_name()
                    .map_or("tokenizer.json".into(), |n| n.to_string_lossy().to_string());
                let name = format!("huggingface:{file}");
                TokenCounter {
                    backend: Backend::HuggingFace(Box::new(tokenizer)),
                    name: name.clone(),
                    identity: TokenizerIdentity {
                        name,
                        revision: format!("tokenizers 0.21, {} bytes", bytes.len()),
                        sha256: crate::graph::format::hex(&Sha256::digest(&bytes)),
                    },
                }
            }
            Err(e) => TokenCounter::chars(format!("tokenizer {} invalid: {e}", path.display())),
        }
    }

    fn chars(reason: String) -> TokenCounter {
        TokenCounter {
            backend: Backend::Chars,
            name: reason,
            identity: TokenizerIdentity {
                name: "chars".into(),
                revision: String::new(),
                sha256: String::new(),
            },
        }
    }
}

/// The counter of a configured tokenizer (a HuggingFace `tokenizer.json`,
/// `ATLAS_TOKENIZER_PATH`) or of the embedded o200k: built on first use, then kept for
/// the process (a server's requests may name different ones).
pub fn counter(tokenizer: Option<&Path>) -> &'static TokenCounter {
    static O200K: OnceLock<TokenCounter> = OnceLock::new();
    static FILES: OnceLock<Mutex<HashMap<PathBuf, &'static TokenCounter>>> = OnceLock::new();
    let Some(path) = tokenizer else {
        return O200K.get_or_init(TokenCounter::o200k);
    };
    let mut files = FILES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    files
        .entry(path.to_path_buf())
        .or_insert_with(|| Box::leak(Box::new(TokenCounter::hugging_face(path))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_tokens_exactly() {
        let counter = TokenCounter::o200k();
        assert_eq!(counter.mode(), "tokens");
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count(""), 0);
        assert_eq!(counter.identity.sha256, O200K_SHA256);
    }

    #[test]
    fn hugging_face_tokenizer_counts_with_its_vocabulary() {
        // The embedded model's WordPiece tokenizer.json is a real HuggingFace file.
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("src/query/search/model/tokenizer.json");
        let counter = TokenCounter::hugging_face(&path);
        assert_eq!(counter.mode(), "tokens");
        assert!(counter.identity.name.starts_with("huggingface:"));
        assert_eq!(counter.identity.sha256.len(), 64);
        // WordPiece splits the unknown identifier into pieces; o200k counts differently.
        assert_eq!(counter.count("hello world"), 2);
        assert!(counter.count("compile_context_unrelatedword") > 3);
    }

    #[test]
    fn unreadable_or_invalid_tokenizers_fall_back_to_chars_and_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let missing = TokenCounter::hugging_face(&dir.path().join("nope.json"));
        assert_eq!(missing.mode(), "chars");
        assert!(missing.name.contains("unreadable"), "{}", missing.name);
        assert_eq!(missing.count("héllo"), 5);
        let bad = dir.path().join("tokenizer.json");
        std::fs::write(&bad, "{not json").unwrap();
        let invalid = TokenCounter::hugging_face(&bad);
        assert_eq!(invalid.mode(), "chars");
        assert!(invalid.name.contains("invalid"), "{}", invalid.name);
    }
}
