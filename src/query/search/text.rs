//! Identifier-aware text for the BM25 arm: every identifier is kept whole and split into
//! its words (`compileContext` → `compilecontext compile context`), lower-cased, so that
//! both exact identifiers and their parts match.

use crate::graph::names::split_identifier;

/// Tokens of `text`, space-separated, for tantivy's whitespace tokenizer.
pub fn identifier_tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    for run in text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$')) {
        let run = run.trim_matches('_');
        if run.is_empty() {
            continue;
        }
        // Most runs of code and prose are lower-case words, which are their only part:
        // kept as they are, without a lower-cased copy or a split (a fifth of a cold
        // index build went to those).
        if run.bytes().all(|b| b.is_ascii_lowercase()) {
            push(&mut out, run);
            continue;
        }
        let whole = run.to_lowercase();
        let parts = split_identifier(run);
        push(&mut out, &whole);
        if parts.len() > 1 {
            for part in parts {
                if part != whole {
                    push(&mut out, &part);
                }
            }
        }
    }
    out
}

/// Words too common to be evidence in a query (English and Portuguese — queries may be
/// in either), and single letters.
pub fn is_stopword(token: &str) -> bool {
    const WORDS: &[&str] = &[
        "a", "an", "the", "of", "to", "in", "is", "are", "and", "or", "not", "for", "on", "with",
        "by", "be", "as", "at", "it", "this", "that", "from", "how", "what", "where", "which",
        "when", "does", "do", "de", "da", "do", "das", "dos", "que", "e", "o", "os", "as", "para",
        "em", "um", "uma", "com", "no", "na", "nos", "nas", "se", "por", "ao", "como", "onde",
        "qual",
    ];
    token.chars().count() < 2 || WORDS.contains(&token)
}

fn push(out: &mut String, token: &str) {
    if !out.is_empty() {
        out.push(' ');
    }
    out.push_str(token);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_kept_whole_and_split() {
        assert_eq!(
            identifier_tokens("compileContext(x)"),
            "compilecontext compile context x"
        );
        assert_eq!(
            identifier_tokens("parse_HTTP2 header"),
            "parse_http2 parse http 2 header"
        );
        assert_eq!(identifier_tokens("a.b::C"), "a b c");
        assert_eq!(identifier_tokens("  "), "");
    }

    #[test]
    fn lower_case_words_take_the_short_way_to_the_same_tokens() {
        // What the general path makes of a run (lower-cased whole, then its other parts).
        let general = |run: &str| -> Vec<String> {
            let whole = run.to_lowercase();
            let parts = split_identifier(run);
            let mut out = vec![whole.clone()];
            if parts.len() > 1 {
                out.extend(parts.into_iter().filter(|p| *p != whole));
            }
            out
        };
        for run in ["parse", "x", "header", "ab", "zz"] {
            assert_eq!(identifier_tokens(run), general(run).join(" "), "{run}");
        }
        let text = "def parse_header(value): return value.strip() # émoji café HTTP2 x";
        assert_eq!(
            identifier_tokens(text),
            "def parse_header parse header value return value strip émoji café http2 http 2 x"
        );
    }
}
