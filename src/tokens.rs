//! Exact token counts for response budgets (R-OBS-1): the bundled o200k BPE
//! (tiktoken-rs, embedded, no download), built lazily on first use. When no counter can
//! be had, budgets fall back to characters and say so.

use std::sync::OnceLock;

pub struct TokenCounter {
    bpe: Option<tiktoken_rs::CoreBPE>,
    /// `o200k_base`, or why counting fell back to characters.
    pub name: String,
    pub revision: &'static str,
}

impl TokenCounter {
    /// `tokens` when counting exactly, `chars` on fallback.
    pub fn mode(&self) -> &'static str {
        if self.bpe.is_some() {
            "tokens"
        } else {
            "chars"
        }
    }

    /// Tokens (or characters on fallback) of `text`.
    pub fn count(&self, text: &str) -> usize {
        match &self.bpe {
            Some(bpe) => bpe.encode_ordinary(text).len(),
            None => text.chars().count(),
        }
    }
}

/// The process-wide counter. `ATLAS_TOKENIZER_PATH` names a HuggingFace `tokenizer.json`;
/// this build cannot load one, so it falls back to characters and reports why.
pub fn counter() -> &'static TokenCounter {
    static COUNTER: OnceLock<TokenCounter> = OnceLock::new();
    COUNTER.get_or_init(|| {
        if let Some(path) = std::env::var_os("ATLAS_TOKENIZER_PATH").filter(|p| !p.is_empty()) {
            return TokenCounter {
                bpe: None,
                name: format!(
                    "unsupported tokenizer {}",
                    std::path::Path::new(&path).display()
                ),
                revision: "",
            };
        }
        match tiktoken_rs::o200k_base() {
            Ok(bpe) => TokenCounter {
                bpe: Some(bpe),
                name: "o200k_base".into(),
                revision: "tiktoken-rs 0.12.1",
            },
            Err(e) => TokenCounter {
                bpe: None,
                name: format!("o200k_base unavailable: {e}"),
                revision: "",
            },
        }
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_tokens_exactly() {
        let counter = super::counter();
        assert_eq!(counter.mode(), "tokens");
        assert_eq!(counter.count("hello world"), 2);
        assert_eq!(counter.count(""), 0);
    }
}
