//! Query intent (R-Q-1) and name matching (R-Q-2).
//!
//! A query is a sentence as often as a name. Which words are names (docs/CLI.md, "Which
//! words are names"): a word is a name when it is written as code — `snake_case`,
//! `CamelCase`/`mixedCase`, dotted or `::`-qualified, backticked, a call `f()` — or is a
//! repository path or file name. A plain word (no separators, no inner capitals) is a
//! name only when it is the whole query, or when it matches exactly one symbol at a
//! strong tier (exact or case-insensitive exact) that is not data (a variable, field or
//! constant) nor a module. Stop words (English and Portuguese) never are. Everything else
//! is free text for hybrid search — reported, never interpreted by a model.

use std::collections::HashMap;

use crate::graph::codes::EdgeKind;
use crate::graph::ids::NodeId;
use crate::graph::names::{each_segment, normalize_qualified, split_identifier};
use crate::graph::reader::{Graph, NameTable};
use crate::query::crates::Crates;
use crate::syntax::facts::SymbolKind;

/// Matching tiers, strongest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MatchTier {
    ExactId,
    ExactSymbol,
    ExactPath,
    CaseInsensitive,
    QualifiedSuffix,
    Segmented,
    Substring,
}

impl MatchTier {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchTier::ExactId => "exact-id",
            MatchTier::ExactSymbol => "exact-symbol",
            MatchTier::ExactPath => "exact-path",
            MatchTier::CaseInsensitive => "case-insensitive",
            MatchTier::QualifiedSuffix => "qualified-suffix",
            MatchTier::Segmented => "segmented",
            MatchTier::Substring => "substring",
        }
    }

    /// Candidates of a strong tier match equally well; those of a weak tier (segmented,
    /// substring) differ in how much of their name the query spells.
    pub fn is_strong(self) -> bool {
        self <= MatchTier::QualifiedSuffix
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relation {
    Calls,
    Callers,
    Callees,
    References,
    UsesType,
    Implements,
    Contains,
}

impl Relation {
    fn parse(word: &str) -> Option<Relation> {
        Some(match word {
            "calls" => Relation::Calls,
            "callers" => Relation::Callers,
            "callees" => Relation::Callees,
            "references" => Relation::References,
            "uses-type" => Relation::UsesType,
            "implements" => Relation::Implements,
            "contains" => Relation::Contains,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Calls => "calls",
            Relation::Callers => "callers",
            Relation::Callees => "callees",
            Relation::References => "references",
            Relation::UsesType => "uses-type",
            Relation::Implements => "implements",
            Relation::Contains => "contains",
        }
    }
}

/// Why a node anchors the query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnchorReason {
    /// The query names it.
    Named,
    /// The best-ranked candidate of an ambiguous name in a question (search score,
    /// non-test before test, centrality); the others are listed in a diagnostic.
    Ranked,
    /// A question without a name: the best search hit, found by these arms.
    Search { arms: Vec<&'static str> },
}

impl AnchorReason {
    pub fn as_str(&self) -> &'static str {
        match self {
            AnchorReason::Named => "name",
            AnchorReason::Ranked => "ranked",
            AnchorReason::Search { .. } => "search",
        }
    }
}

/// A query term resolved to a graph node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub term: String,
    pub node: NodeId,
    /// How the name matched (`None` for a search anchor).
    pub tier: Option<MatchTier>,
    pub reason: AnchorReason,
}

impl Anchor {
    /// Why it anchors, as a reason line.
    pub fn describe(&self) -> String {
        match (&self.reason, self.tier) {
            (AnchorReason::Search { arms }, _) => format!(
                "anchored by search: the best hit for the question ({})",
                arms.join("+")
            ),
            (AnchorReason::Ranked, Some(tier)) => format!(
                "named by `{}` ({}), the best-ranked of its candidates",
                self.term,
                tier.as_str()
            ),
            (_, tier) => format!(
                "named by `{}` ({})",
                self.term,
                tier.map_or("name", MatchTier::as_str)
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ambiguity {
    pub term: String,
    pub tier: MatchTier,
    /// Every candidate after the tie rules, by centrality (highest first).
    pub nodes: Vec<NodeId>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Intent {
    pub anchors: Vec<Anchor>,
    pub relations: Vec<Relation>,
    /// Words that named nothing in the graph: hybrid-search input.
    pub free_terms: Vec<String>,
    pub ambiguities: Vec<Ambiguity>,
    /// The query is one name (relation words aside): an ambiguity at a strong tier is a
    /// typed error, not a choice.
    pub single_name: bool,
    /// The query without its relation words: what hybrid search is asked.
    pub search_text: String,
    /// Flow only: the start of an alternative chain (a second strong search hit).
    pub alternative: Option<Anchor>,
    /// The query has plain or free words: a question, which search may anchor when it
    /// names nothing (a lone code-shaped name or path that matches nothing does not).
    pub question: bool,
    /// Anchors that a plain word among other words found (`parse`, `command`): prose
    /// first, so they stand only when search ranks them among its first hits.
    pub plain_word_anchors: Vec<NodeId>,
}

impl Intent {
    pub fn has_relation(&self, relation: Relation) -> bool {
        self.relations.contains(&relation)
    }
}

/// How one word of a query reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    Relation(Relation),
    /// A repository path or file name (`src/main.rs`, `app.py`).
    Path(String),
    /// A stack frame (`File "/x/a.py", line 42, in f`; `at f (/x/a.js:42:7)`): its ref
    /// `/x/a.py:42` and the function it names (`None` for `<module>` and the like).
    Frame {
        at: String,
        function: Option<String>,
    },
    /// Written as code: `snake_case`, `CamelCase`/`mixedCase`, dotted or `::`-qualified,
    /// backticked, or a call `f()`.
    Code(String),
    /// A name written as code on a traceback's source line (`util.apply_discount(…)`
    /// under its frame): it names the callee at the frame's line, when the graph has that
    /// call there, and nothing else.
    SourceName(String),
    /// A plain word: a name only alone, or as a unique strong match.
    Plain(String),
    /// Never a name: stop words, numbers, punctuation.
    Free(String),
}

/// Words that never anchor, English and Portuguese (queries come in both). A superset of
/// the search arm's stop words: question words and auxiliaries carry no name.
const NEVER_NAMES: &[&str] = &[
    // English
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "between", "but", "by", "can", "could", "did", "do", "does", "doing",
    "done", "during", "each", "for", "from", "get", "gets", "got", "happen", "happens", "has",
    "have", "having", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on",
    "once", "only", "or", "other", "our", "should", "so", "some", "such", "than", "that", "the",
    "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "under",
    "until", "up", "via", "was", "we", "were", "what", "when", "where", "whether", "which",
    "while", "who", "whom", "why", "will", "with", "within", "without", "would", "you", "your",
    // Portuguese
    "à", "ao", "aos", "as", "às", "até", "com", "como", "da", "das", "de", "depois", "do", "dos",
    "e", "é", "ela", "ele", "em", "entre", "essa", "esse", "esta", "está", "este", "eu", "foi",
    "há", "isso", "já", "mais", "mas", "na", "nas", "no", "nos", "não", "o", "onde", "os", "ou",
    "para", "pela", "pelo", "por", "porque", "quais", "qual", "quando", "que", "quem", "se", "sem",
    "ser", "seu", "sua", "são", "sobre", "um", "uma",
];

/// A word no name is made of. Single letters other than articles may be names (`f`).
fn is_stop_word(word: &str) -> bool {
    let lower = word.to_lowercase();
    NEVER_NAMES.contains(&lower.as_str())
        || (lower.chars().count() > 1 && crate::query::search::text::is_stopword(&lower))
}

fn is_identifier_shaped(token: &str) -> bool {
    let normalized = token.replace("::", ".");
    !normalized.is_empty()
        && normalized.split('.').all(|part| {
            // `#name`: a JavaScript private member.
            let mut chars = part.strip_prefix('#').unwrap_or(part).chars();
            chars
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
                && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
        })
}

fn is_path_shaped(token: &str) -> bool {
    // A file named with a line or a name after it (`a.py:42`, `a.py#L42`) is a path too.
    let file = token.split([':', '#']).next().unwrap_or(token);
    token.contains('/') || token.contains('\\') || crate::build::inventory::role_of(file).is_some()
}

/// Written as code without any marker: separators or inner capitals after a lowercase
/// letter (`HTTPAdapter`, `wsgiApp`; not `Flask` nor `HTTP`).
fn is_code_shaped(token: &str) -> bool {
    token.contains('_')
        || token.contains('.')
        || token.contains("::")
        || (token.chars().any(char::is_lowercase) && token.chars().skip(1).any(char::is_uppercase))
}

/// Reads a query into words (R-Q-1 as refined in docs/CLI.md).
pub fn words(query: &str) -> Vec<Word> {
    let diff = diff_as_refs(query);
    let query = diff.as_deref().unwrap_or(query);
    // A backtrace's `<A as T>::f::{{closure}}` is the path `A::f` (`demangle`).
    let plain = crate::query::demangle::plain_rust_paths(query);
    let query: &str = &plain;
    let mut out = Vec::new();
    let mut previous = "";
    let source_lines = traceback_source_lines(query);
    let tokens = query
        .lines()
        .zip(source_lines)
        .flat_map(|(line, source)| line.split_whitespace().map(move |raw| (raw, source)));
    for (raw, source) in tokens {
        // A traceback's source line is the code at its frame, not what the user asks
        // about: its names (`print(simplify(expr))`, `rv = F(rv)`) name only the calls the
        // graph has at that line (`SourceName`); the rest is searched.
        if source {
            let at = out.len();
            word_of(raw, &mut previous, &mut out);
            for word in &mut out[at..] {
                *word = match std::mem::replace(word, Word::Free(String::new())) {
                    Word::Code(text) => Word::SourceName(text),
                    Word::Plain(text) | Word::Path(text) => Word::Free(text),
                    other => other,
                };
            }
            continue;
        }
        word_of(raw, &mut previous, &mut out);
    }
    frames_as_refs(&mut out);
    out
}

/// For each line of `query`, whether it is a Python traceback's source line: the line
/// after a frame's `File "…", line N` that is indented deeper, or, in a paste that lost
/// its indentation, any line there but another frame or the exception (`TypeError: …`).
fn traceback_source_lines(query: &str) -> Vec<bool> {
    let lines: Vec<&str> = query.lines().collect();
    let indent = |line: &str| line.len() - line.trim_start().len();
    let is_frame = |line: &str| {
        let line = line.trim_start();
        line.starts_with("File \"") && line.contains("\", line ")
    };
    let is_exception = |line: &str| {
        let head = line.trim().split(':').next().unwrap_or("");
        line.trim().contains(':')
            && !head.is_empty()
            && head
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    };
    let mut source = vec![false; lines.len()];
    for at in 1..lines.len() {
        let (frame, line) = (lines[at - 1], lines[at]);
        if !is_frame(frame) || line.trim().is_empty() || is_frame(line) {
            continue;
        }
        source[at] = indent(line) > indent(frame)
            || (indent(line) == indent(frame)
                && !is_exception(line)
                && !line.trim_start().starts_with("Traceback"));
    }
    source
}

/// Reads one whitespace-separated word of a query into `out` (a call whose parentheses
/// hold a JVM frame's ref adds that ref too); `previous` is the word before it.
fn word_of<'q>(raw: &'q str, previous: &mut &'q str, out: &mut Vec<Word>) {
    // A Rust panic's `thread 'main' panicked at …`: the quotes name a thread.
    let thread_name = *previous == "thread" && raw.starts_with('\'');
    *previous = raw;
    if thread_name {
        out.push(Word::Free(raw.trim_matches('\'').to_string()));
        return;
    }
    // A traceback's `<module>`, `<lambda>`, `<listcomp>`: no function's name (a JSX
    // tag, `<UserBadge>`, is one).
    if raw.len() > 2
        && raw.starts_with('<')
        && raw.ends_with('>')
        && raw[1..raw.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_lowercase())
    {
        out.push(Word::Free(raw.to_string()));
        return;
    }
    // Backticks, and the single quotes of an error message (`'Rational' and 'str'`),
    // mark code.
    let bare = raw.trim_end_matches([',', ';', ':', '.', '?', '!', ')']);
    let quoted = raw.starts_with('`')
        || raw.ends_with('`')
        || (bare.len() > 2 && bare.starts_with('\'') && bare.ends_with('\''));
    // Sentence punctuation around a word is not part of it (`registered?`, `(see`).
    let mut token = raw.trim_matches(|c: char| {
        matches!(
            c,
            '"' | '\'' | '`' | ',' | ';' | ':' | '?' | '!' | '[' | ']' | '{' | '}' | '<' | '>'
        )
    });
    token = token.trim_start_matches('(');
    // A call: `f()`, `Session.send(…)`.
    let called = token.find('(').filter(|&at| at > 0);
    // A JVM stack frame names its file and line in the call's parentheses
    // (`com.x.Foo.bar(Foo.java:42)`): that ref is a word of its own.
    let mut frame = None;
    if let Some(at) = called {
        let inside = token[at + 1..].trim_end_matches(')');
        // tsc's and MSBuild's `src/a.ts(11,8)`: the file at that line.
        let (line, column) = inside.split_once(',').unwrap_or((inside, "0"));
        let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        if digits(line) && digits(column) && is_path_shaped(&token[..at]) {
            out.push(Word::Path(format!("{}:{line}", &token[..at])));
            return;
        }
        if inside.contains(':') && !inside.contains(['(', ' ']) && is_path_shaped(inside) {
            frame = Some(Word::Path(inside.to_string()));
        }
        token = &token[..at];
    }
    // A quoted name at a sentence's end (`'User'.`): its closing quote after the stop.
    let token = token
        .trim_end_matches(')')
        .trim_end_matches('.')
        .trim_end_matches(['\'', '"', '`']);
    if token.is_empty() {
        out.extend(frame);
        return;
    }
    if let Some(relation) = Relation::parse(&token.to_lowercase()) {
        out.push(Word::Relation(relation));
    } else if is_path_shaped(token) {
        out.push(Word::Path(token.to_string()));
    } else if !is_identifier_shaped(token) {
        out.push(Word::Free(token.to_string()));
    } else if quoted || called.is_some() || is_code_shaped(token) {
        out.push(Word::Code(token.to_string()));
    } else if is_stop_word(token) {
        out.push(Word::Free(token.to_string()));
    } else {
        out.push(Word::Plain(token.to_string()));
    }
    out.extend(frame);
}

/// A stack frame is one word, its ref and the function it names (`Word::Frame`): a Python
/// traceback's `File "/x/a.py", line 42, in f` (the ref `/x/a.py:42`), the
/// `at f (/x/a.js:42:7)` of Node.js, `at x.Foo.f(Foo.java:42)` of the JVM and a Rust
/// backtrace's `x::Foo::f` then `at ./src/a.rs:42:5`.
fn frames_as_refs(words: &mut Vec<Word>) {
    let mut at = 0;
    while at + 2 < words.len() {
        // A Rust backtrace's `shapes::geometry::Circle::area` then `at ./src/a.rs:42:5`.
        if let [Word::Code(function), Word::Free(word), Word::Path(path)] = &words[at..at + 3]
            && function.contains("::")
            && word.eq_ignore_ascii_case("at")
            && split_line_ref(path).is_some()
        {
            words[at] = Word::Frame {
                at: path.clone(),
                function: Some(function.clone()),
            };
            words.drain(at + 1..at + 3);
            at += 1;
            continue;
        }
        if let [
            Word::Free(word),
            Word::Code(function) | Word::Plain(function),
            Word::Path(path),
        ] = &words[at..at + 3]
            && word.eq_ignore_ascii_case("at")
            && split_line_ref(path).is_some()
        {
            words[at + 1] = Word::Frame {
                at: path.clone(),
                function: Some(function.clone()),
            };
            words.remove(at + 2);
            at += 1;
            continue;
        }
        let frame = match &words[at..at + 3] {
            [
                Word::Path(path),
                Word::Plain(line) | Word::Free(line),
                Word::Free(number),
            ] if line.eq_ignore_ascii_case("line")
                && number.bytes().all(|b| b.is_ascii_digit())
                && !path[path.rfind('/').map_or(0, |s| s + 1)..].contains([':', '#']) =>
            {
                Some(format!("{path}:{number}"))
            }
            _ => None,
        };
        if let Some(frame) = frame {
            // `, in f`: the frame's function, unless it is a pseudo name (`<module>`).
            let (function, taken) = match words.get(at + 3..at + 5) {
                Some([Word::Free(word), name]) if word == "in" => match name {
                    Word::Code(name) | Word::Plain(name) => (Some(name.clone()), 5),
                    _ => (None, 5),
                },
                _ => (None, 3),
            };
            words[at] = Word::Frame {
                at: frame,
                function,
            };
            words.drain(at + 1..at + taken);
        }
        at += 1;
    }
}

/// A unified diff pasted into a query (`git diff`, a patch) names what it changes: the
/// query with each diff replaced by a ref `path:line` per changed line, on the new side
/// (what `git diff` of a working tree shows; a deletion is the line before it), whose
/// definitions the refs then name. `None` when the query holds no hunk. A hunk's extent
/// is read from its header's counts, so lines whose leading space was lost still count.
fn diff_as_refs(query: &str) -> Option<String> {
    let mut out: Vec<String> = Vec::new();
    let mut path: Option<&str> = None;
    let mut hunks = 0;
    let mut lines = query.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.strip_prefix("+++ ") {
            // `+++ b/src/a.py` (a tab and a timestamp may follow); `/dev/null` for a
            // deleted file, whose lines are no longer anywhere.
            let named = rest.split('\t').next().unwrap_or(rest).trim();
            path = (named != "/dev/null").then_some(named);
            continue;
        }
        let Some((mut old, mut new, start)) = hunk_header(line) else {
            out.push(line.to_string());
            continue;
        };
        hunks += 1;
        let mut at = start;
        let mut changed = Vec::new();
        while old > 0 || new > 0 {
            let Some(body) = lines.next() else { break };
            match body.as_bytes().first() {
                Some(b'+') if new > 0 => {
                    changed.push(at);
                    at = at.saturating_add(1);
                    new -= 1;
                }
                Some(b'-') if old > 0 => {
                    changed.push(at.saturating_sub(1).max(1));
                    old -= 1;
                }
                // "\ No newline at end of file"
                Some(b'\\') => {}
                _ => {
                    at = at.saturating_add(1);
                    old = old.saturating_sub(1);
                    new = new.saturating_sub(1);
                }
            }
        }
        changed.dedup();
        if let Some(path) = path {
            out.extend(changed.iter().map(|line| format!("{path}:{line}")));
        }
    }
    if hunks == 0 {
        return None;
    }
    // The headers around the hunks say nothing the refs do not.
    let index_line = |line: &str| {
        line.strip_prefix("index ").is_some_and(|rest| {
            rest.split_whitespace()
                .next()
                .is_some_and(|r| r.contains(".."))
        })
    };
    const HEADERS: &[&str] = &[
        "diff --git ",
        "--- ",
        "new file mode",
        "deleted file mode",
        "old mode",
        "new mode",
        "similarity index",
        "rename from",
        "rename to",
    ];
    out.retain(|line| !index_line(line) && !HEADERS.iter().any(|h| line.starts_with(h)));
    Some(out.join("\n"))
}

/// A hunk header, `@@ -a,b +c,d @@ context`: its old and new line counts (1 when left
/// out) and its first new line.
fn hunk_header(line: &str) -> Option<(u32, u32, u32)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let count = |range: &str| -> Option<(u32, u32)> {
        match range.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((range.parse().ok()?, 1)),
        }
    };
    let ((_, old_count), (new_start, new_count)) = (count(old)?, count(new)?);
    Some((old_count, new_count, new_start))
}

/// Whether a query may need hybrid search (it has free words or several names): known
/// before the graph is open, so that the embedding model can load meanwhile.
pub fn may_search(query: &str) -> bool {
    let words = words(query);
    let names = words
        .iter()
        .filter(|w| {
            matches!(
                w,
                Word::Path(_)
                    | Word::Frame { .. }
                    | Word::Code(_)
                    | Word::Plain(_)
                    | Word::SourceName(_)
            )
        })
        .count();
    // A lone name (`simplify`, `simplify calls`) anchors by name; the model is not worth
    // loading for the rare lone word that names nothing.
    names > 1 || words.iter().any(|w| matches!(w, Word::Free(_)))
}

/// What hybrid search is asked for `query` (`Intent::search_text`): the query without
/// its relation words.
fn search_text_of(query: &str) -> String {
    let plain = crate::query::demangle::plain_rust_paths(query);
    let mut search_words: Vec<&str> = plain
        .split_whitespace()
        .filter(|w| Relation::parse(&w.to_lowercase()).is_none())
        .collect();
    // A Portuguese question is searched with its English words as well (`glossary`).
    let english = crate::query::glossary::english_for(&search_words);
    search_words.extend(english);
    search_words.join(" ")
}

/// The text `parse`'s intent will search, when it is sure to be searched whatever the
/// query's names turn out to be: a word that can never be a name (`how`, `onde`) is a
/// free term, and a free term is searched. Known before the graph is read.
pub fn certain_search(query: &str) -> Option<String> {
    let text = search_text_of(query);
    (words(query).iter().any(|w| matches!(w, Word::Free(_))) && !text.trim().is_empty())
        .then_some(text)
}

/// Parses `query` and matches its names against `graph`.
pub fn parse(graph: &Graph, crates: &Crates, query: &str) -> Intent {
    let words = words(query);
    let mut intent = Intent {
        search_text: search_text_of(query),
        ..Intent::default()
    };
    intent.question = words
        .iter()
        .any(|w| matches!(w, Word::Plain(_) | Word::Free(_)));
    let mut names: Vec<&Word> = Vec::new();
    for word in &words {
        match word {
            Word::Relation(relation) => intent.relations.push(*relation),
            Word::Free(text) => intent.free_terms.push(text.clone()),
            _ => names.push(word),
        }
    }
    // Relation words about calls make callables the meaning of a shared name.
    let callables_only = intent
        .relations
        .iter()
        .any(|r| matches!(r, Relation::Calls | Relation::Callers | Relation::Callees));
    let mut matcher = Matcher {
        graph,
        intent: &mut intent,
        callables_only,
    };

    let mut prefix_scans = Scans::default();
    // Two or three plain words may spell one name (`compile ctx` ~ `compile_context`).
    let plain: Vec<&str> = names
        .iter()
        .filter_map(|w| match w {
            Word::Plain(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if plain.len() == names.len() && (2..=3).contains(&plain.len()) {
        let phrase = plain.join(" ");
        let nodes = segmented(graph, &phrase, &mut prefix_scans);
        if !nodes.is_empty() {
            matcher.intent.single_name = true;
            matcher.push(&phrase, MatchTier::Segmented, nodes);
            dedup_in_order(&mut intent.free_terms);
            return intent;
        }
    }

    matcher.intent.single_name = names.len() == 1;
    let single = matcher.intent.single_name;
    // Names written as code first: in a question they carry the intent, and plain words
    // then stay free text (a sentence's `Argument` or `String` is English first).
    let mut plain_words = Vec::new();
    // Each frame's target, read once (`None` for other words).
    let frames: Vec<_> = names
        .iter()
        .map(|word| match word {
            Word::Frame { at, function } => Some(frame_target(graph, at, function.as_deref())),
            _ => None,
        })
        .collect();
    // The functions of a traceback's frames outside the repository are the user's own
    // code: the query's other mentions of those names (`main()` on a frame's source
    // line) name nothing here.
    let outside: std::collections::HashSet<&str> = names
        .iter()
        .zip(&frames)
        .filter_map(|(word, target)| match (word, target) {
            (
                Word::Frame {
                    function: Some(function),
                    ..
                },
                Some(None),
            ) => Some(function.as_str()),
            _ => None,
        })
        .collect();
    // The definitions the last frame points into, and its line: what its source line's
    // names are calls from.
    let mut last_frame: Option<(Vec<NodeId>, u32)> = None;
    for (word, frame) in names.into_iter().zip(frames) {
        if let Word::Code(text) | Word::Plain(text) | Word::SourceName(text) = word
            && outside.contains(text.as_str())
        {
            matcher.intent.free_terms.push(text.clone());
            continue;
        }
        match word {
            Word::Frame { at, function } => match frame.flatten() {
                Some((tier, nodes)) => {
                    last_frame = split_line_ref(at).map(|(_, line)| (nodes.clone(), line));
                    matcher.push(at, tier, nodes);
                }
                None => {
                    last_frame = None;
                    matcher.intent.free_terms.push(at.clone());
                    matcher.intent.free_terms.extend(function.clone());
                }
            },
            Word::SourceName(text) => match last_frame
                .as_ref()
                .and_then(|(nodes, line)| callee_at(graph, nodes, *line, text))
            {
                Some(callee) => matcher.push(text, MatchTier::ExactId, vec![callee]),
                None => matcher.intent.free_terms.push(text.clone()),
            },
            Word::Path(text) => {
                let path = text.trim_start_matches("./").trim_end_matches('/');
                // A label as Atlas prints it (`src/a.py::Class.method`), pasted back.
                if let Some(nodes) = label_nodes(graph, path) {
                    matcher.push(text, MatchTier::ExactId, nodes);
                    continue;
                }
                // A ref from another tool: `a.py:42`, `a.py:42:7`, `a.py#L42-L50`
                // (Atlas's own search refs add `@hash`), `a.py:Class.method`.
                if let Some(nodes) = pasted_ref_nodes(graph, path) {
                    matcher.push(text, MatchTier::ExactId, nodes);
                    continue;
                }
                let nodes = path_nodes(graph, path);
                if !nodes.is_empty() {
                    matcher.push(text, MatchTier::ExactPath, nodes);
                    continue;
                }
                // Pasted from elsewhere: an absolute path, another checkout's, a URL, a
                // module path without its extension (`./lib/router`).
                match path_elsewhere(graph, text) {
                    Some(Elsewhere::Ref(inventoried)) => {
                        let nodes = label_nodes(graph, &inventoried)
                            .or_else(|| pasted_ref_nodes(graph, &inventoried))
                            .unwrap_or_else(|| path_nodes(graph, &inventoried));
                        if nodes.is_empty() {
                            matcher.intent.free_terms.push(text.clone());
                        } else {
                            matcher.push(text, MatchTier::ExactPath, nodes);
                        }
                    }
                    Some(Elsewhere::Modules(nodes)) => {
                        matcher.push(text, MatchTier::QualifiedSuffix, nodes)
                    }
                    None => matcher.intent.free_terms.push(text.clone()),
                }
            }
            // A lone name goes down every tier; in a question, a name spelled only in
            // part (`NotImplemented` ~ `test_not_implemented`) is noise, not intent.
            Word::Code(text) => {
                // Code only by its backticks or its call (`type(s)` in an error message):
                // written in its exact case, so a match in another case is not it.
                let exact_case = !is_code_shaped(text);
                let matched = ladder(graph, crates, text).filter(|(tier, _)| {
                    single
                        || (tier.is_strong()
                            && !(exact_case && *tier == MatchTier::CaseInsensitive))
                });
                match matched {
                    Some((tier, nodes)) => matcher.push(text, tier, nodes),
                    None => matcher.intent.free_terms.push(text.clone()),
                }
            }
            Word::Plain(text) if single => match ladder(graph, crates, text) {
                Some((tier, nodes)) => matcher.push(text, tier, nodes),
                None => matcher.intent.free_terms.push(text.clone()),
            },
            Word::Plain(text) => plain_words.push(text),
            Word::Relation(_) | Word::Free(_) => {}
        }
    }
    let named = !matcher.intent.anchors.is_empty() || !matcher.intent.ambiguities.is_empty();
    // In a question, two neighbouring plain words that are a name's two segments, in
    // either order and as prose inflects them (`applies discounts`, `money rounded` ~
    // `apply_discount`, `round_money`), name it. A report's symptoms (`reverses order`,
    // `printing dict`) describe behaviour more often than they spell its function.
    let mut spelled = vec![false; plain_words.len()];
    if !named && asks(query) {
        // `which function parses latex` asks for a function: `parse_Function` is not it.
        let about_code = |w: &str| KIND_WORDS.contains(&w.to_lowercase().as_str());
        // A Portuguese question's words are read in English as well (`desconto aplicado`
        // ~ `apply_discount`).
        let forms_of = |word: &str| {
            let mut forms = word_forms(word);
            if let Some(english) = crate::query::glossary::english_of_word(query, word) {
                forms.extend(word_forms(english));
            }
            forms
        };
        // Each word's forms and scan of the segments table, made once for both its pairs.
        let forms: Vec<Vec<String>> = plain_words.iter().map(|w| forms_of(w)).collect();
        let mut scans: Vec<Option<Vec<NodeId>>> = vec![None; plain_words.len()];
        let mut i = 0;
        while i + 1 < plain_words.len() {
            if about_code(plain_words[i]) || about_code(plain_words[i + 1]) {
                i += 1;
                continue;
            }
            let (before, after) = scans.split_at_mut(i + 1);
            let nodes = two_segment_names(
                graph,
                &mut prefix_scans,
                (&forms[i], &mut before[i]),
                (&forms[i + 1], &mut after[0]),
            );
            if nodes.is_empty() {
                i += 1;
                continue;
            }
            let phrase = format!("{} {}", plain_words[i], plain_words[i + 1]);
            matcher.push(&phrase, MatchTier::Segmented, nodes);
            (spelled[i], spelled[i + 1]) = (true, true);
            i += 2;
        }
    }
    for (text, spelled) in plain_words.into_iter().zip(spelled) {
        if spelled {
            continue;
        }
        if named {
            matcher.intent.free_terms.push(text.clone());
        } else {
            matcher.plain_in_question(text);
        }
    }
    dedup_in_order(&mut intent.free_terms);
    intent
}

/// Words that open a question or a request to find code, English and Portuguese. Not
/// `when`, `show` or `list`, with which reports open too (`When printing a matrix, …`).
const ASKING_WORDS: &[&str] = &[
    "are", "can", "does", "do", "explain", "find", "how", "is", "locate", "what", "where", "which",
    "who", "why", // English
    "como", "cadê", "encontre", "onde", "qual", "quais", "que", "quem",
    "porque", // Portuguese
];

/// The query asks where or how something is done: it opens with a question or request
/// word, or ends with a question mark.
fn asks(query: &str) -> bool {
    let query = query.trim();
    let first = query.split_whitespace().next().map(|w| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    });
    query.ends_with('?') || first.is_some_and(|w| ASKING_WORDS.contains(&w.as_str()))
}

/// Words a question uses for what kind of code it asks about, not for what it is named.
const KIND_WORDS: &[&str] = &[
    "class",
    "classes",
    "code",
    "file",
    "files",
    "function",
    "functions",
    "method",
    "methods",
    "module",
    "modules",
    "object",
    "objects",
    "symbol",
    "symbols",
    "variable",
    "variables",
];

/// The forms of a prose word a name may spell: the word, and the bases of an English
/// inflection (`applies` → `apply`, `parsed` → `parse`, `strings` → `string`, `rounded` →
/// `round`). Over-generation is harmless: a form is only ever compared with whole
/// segments of names.
fn word_forms(word: &str) -> Vec<String> {
    let word = word.to_lowercase();
    let mut forms = vec![word.clone()];
    if word.len() < 4 || !word.is_ascii() {
        return forms;
    }
    let cut = |suffix: &str| word.strip_suffix(suffix).filter(|stem| stem.len() >= 3);
    for (suffix, ends) in [
        ("ies", &["y"][..]),
        ("ied", &["y"]),
        ("es", &["", "e"]),
        ("s", &[""]),
        ("ed", &["", "e"]),
        ("ing", &["", "e"]),
    ] {
        if suffix == "s" && word.ends_with("ss") {
            continue;
        }
        if let Some(stem) = cut(suffix) {
            forms.extend(ends.iter().map(|end| format!("{stem}{end}")));
        }
    }
    // A doubled consonant before `-ed`/`-ing` (`mapped`, `running`).
    for suffix in ["ed", "ing"] {
        if let Some(stem) = cut(suffix)
            && let [.., a, b] = stem.as_bytes()
            && a == b
            && !b"aeiou".contains(b)
        {
            forms.push(stem[..stem.len() - 1].to_string());
        }
    }
    forms.sort_unstable();
    forms.dedup();
    forms
}

/// Most segments one prefix scan of the table reads; a scan cut there is done again by
/// exact lookups of the inflections (`with_segment`).
const SEGMENT_SCAN: usize = 4096;

/// The prefix scans of the segments table made while one query is read: each reads every
/// part of the graph, and a question's words are scanned by the phrase test and again by
/// the two-word test.
#[derive(Default)]
struct Scans(Vec<(String, Vec<NodeId>)>);

impl Scans {
    /// The nodes of the segments that start with `prefix`, at most `SEGMENT_SCAN`.
    fn of(&mut self, graph: &Graph, prefix: &str) -> Vec<NodeId> {
        if let Some((_, found)) = self.0.iter().find(|(scanned, _)| scanned == prefix) {
            return found.clone();
        }
        let found = graph.lookup_prefix(NameTable::Segments, prefix, SEGMENT_SCAN);
        self.0.push((prefix.to_string(), found.clone()));
        found
    }
}

/// The inflections a name's segment may carry of `base` (`factor` → `factors`,
/// `factored`, `factoring`).
fn inflections(base: &str) -> Vec<String> {
    let mut all: Vec<String> = ["", "s", "es", "d", "ed", "ing"]
        .iter()
        .map(|end| format!("{base}{end}"))
        .collect();
    if let Some(stem) = base.strip_suffix('y') {
        all.extend(["ies", "ied"].map(|end| format!("{stem}{end}")));
    }
    all
}

/// The symbols with a segment that may spell a word of `forms`, sorted: one prefix scan
/// of the segments table per form (`apply` scans `appl…`, which holds `applies`), which
/// `two_segment_names` then checks segment by segment; exact lookups of the form's
/// inflections where a scan would be cut.
fn with_segment(graph: &Graph, scans: &mut Scans, forms: &[String]) -> Vec<NodeId> {
    // Each scan reads every part of the graph: a prefix that holds another is not read
    // again (`simplif` holds `simplified` and `simplify`).
    let mut prefixes: Vec<&str> = forms
        .iter()
        .map(|form| form.strip_suffix('y').unwrap_or(form))
        .collect();
    prefixes.sort_unstable_by_key(|p| p.len());
    let mut scanned: Vec<&str> = Vec::new();
    let mut nodes = Vec::new();
    for prefix in prefixes {
        if scanned.iter().any(|s| prefix.starts_with(s)) {
            continue;
        }
        scanned.push(prefix);
        let found = scans.of(graph, prefix);
        if found.len() >= SEGMENT_SCAN {
            // Cut: the inflections one by one instead.
            nodes = forms
                .iter()
                .flat_map(|form| inflections(form))
                .flat_map(|segment| graph.lookup(NameTable::Segments, &segment))
                .collect();
            break;
        }
        nodes.extend(found);
    }
    nodes.sort_unstable();
    nodes.dedup();
    nodes
}

/// A word and a segment spell each other when their forms meet (`factored` and
/// `factors` in `factor`).
fn spells(forms: &[String], segment: &str) -> bool {
    word_forms(segment).iter().any(|f| forms.contains(f))
}

/// Symbols whose name is exactly two segments, one spelling a word of forms `a_forms`
/// and the other one of `b_forms` (`word_forms`, `spells`), in the words' order when any
/// is, else in the other. Each word comes with its scan (`with_segment`), made here once
/// and kept for the word's other pair.
fn two_segment_names(
    graph: &Graph,
    scans: &mut Scans,
    (a_forms, of_a): (&[String], &mut Option<Vec<NodeId>>),
    (b_forms, of_b): (&[String], &mut Option<Vec<NodeId>>),
) -> Vec<NodeId> {
    if a_forms.iter().any(|f| b_forms.contains(f)) {
        return Vec::new();
    }
    let b = of_b.get_or_insert_with(|| with_segment(graph, scans, b_forms));
    if b.is_empty() {
        return Vec::new();
    }
    let a = of_a.get_or_insert_with(|| with_segment(graph, scans, a_forms));
    let nodes: Vec<NodeId> = a
        .iter()
        .copied()
        .filter(|n| b.binary_search(n).is_ok())
        .collect();
    // Each name is read and split once (many symbols share one): Some(in the words'
    // order) when it is spelled.
    let mut spelled: rustc_hash::FxHashMap<u32, Option<bool>> = rustc_hash::FxHashMap::default();
    let mut order = |n: NodeId| {
        let name = graph.node(n).name();
        *spelled.entry(name.0).or_insert_with(|| {
            match split_identifier(graph.str(name)).as_slice() {
                [x, y] if spells(a_forms, x) && spells(b_forms, y) => Some(true),
                [x, y] if spells(b_forms, x) && spells(a_forms, y) => Some(false),
                _ => None,
            }
        })
    };
    let found: Vec<(NodeId, bool)> = nodes
        .into_iter()
        .filter_map(|n| order(n).map(|in_order| (n, in_order)))
        .collect();
    // `factors terms` is `factor_terms` before `_term_factors`.
    let in_order = found.iter().any(|&(_, in_order)| in_order);
    found
        .into_iter()
        .filter(|&(_, o)| o == in_order)
        .map(|(n, _)| n)
        .collect()
}

/// Keeps the first of each repeated term: a word written twice is one term.
fn dedup_in_order(terms: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    terms.retain(|t| seen.insert(t.clone()));
}

/// Every tier, strongest first: strong tiers, then segmented, then substring. A dotted
/// or `::`-qualified name matches qualified names or a module's file, never by words.
fn ladder(graph: &Graph, crates: &Crates, token: &str) -> Option<(MatchTier, Vec<NodeId>)> {
    let token = below_rust_root(token);
    if let Some(found) = strong_match(graph, token) {
        return Some(found);
    }
    if token.contains('.') || token.contains("::") {
        let nodes = qualified_module(graph, token);
        if !nodes.is_empty() {
            return Some((MatchTier::QualifiedSuffix, nodes));
        }
        return in_named_crate(graph, crates, token);
    }
    let nodes = segmented(graph, token, &mut Scans::default());
    if !nodes.is_empty() {
        return Some((MatchTier::Segmented, nodes));
    }
    let nodes = substring(graph, token);
    (!nodes.is_empty()).then_some((MatchTier::Substring, nodes))
}

struct Matcher<'a> {
    graph: &'a Graph,
    intent: &'a mut Intent,
    callables_only: bool,
}

impl Matcher<'_> {
    /// A name's candidates: one anchors, several are an ambiguity.
    fn push(&mut self, term: &str, tier: MatchTier, nodes: Vec<NodeId>) {
        // A name that may be an anchor already named (a traceback's `in f` after its
        // frame's ref) is that anchor, not an ambiguity or a second anchor.
        if nodes.len() > 1
            && nodes
                .iter()
                .any(|n| self.intent.anchors.iter().any(|a| a.node == *n))
        {
            return;
        }
        let mut nodes = narrow(self.graph, term, tier, nodes, self.callables_only);
        if let [node] = nodes[..] {
            self.anchor(term, tier, node);
            return;
        }
        let graph = self.graph;
        nodes.sort_by_cached_key(|&n| (std::cmp::Reverse(graph.centrality(n)), n));
        if self.intent.ambiguities.iter().any(|a| a.nodes == nodes) {
            return;
        }
        self.intent.ambiguities.push(Ambiguity {
            term: term.to_string(),
            tier,
            nodes,
        });
    }

    /// Anchors `node`, named by `term` at `tier`, unless it is an anchor already: a name
    /// written twice (a traceback names each function in its frame line and again in its
    /// source line) is one anchor, under its strongest spelling. True when added.
    fn anchor(&mut self, term: &str, tier: MatchTier, node: NodeId) -> bool {
        if let Some(anchor) = self.intent.anchors.iter_mut().find(|a| a.node == node) {
            if anchor.tier.is_some_and(|known| tier < known) {
                anchor.term = term.to_string();
                anchor.tier = Some(tier);
            }
            return false;
        }
        self.intent.anchors.push(Anchor {
            term: term.to_string(),
            node,
            tier: Some(tier),
            reason: AnchorReason::Named,
        });
        true
    }

    /// A plain word among other words anchors only as a unique strong match that is
    /// neither data nor a module (prose names those all the time); else it is free text.
    fn plain_in_question(&mut self, text: &str) {
        let graph = self.graph;
        if let Some((tier, nodes)) = strong_match(graph, text) {
            let nodes: Vec<NodeId> = narrow(graph, text, tier, nodes, self.callables_only)
                .into_iter()
                .filter(|&n| {
                    !matches!(
                        graph.kind(n),
                        SymbolKind::Variable
                            | SymbolKind::Field
                            | SymbolKind::Constant
                            | SymbolKind::Module
                            | SymbolKind::File
                    )
                })
                .collect();
            if let [node] = nodes[..] {
                if self.anchor(text, tier, node) {
                    self.intent.plain_word_anchors.push(node);
                }
                return;
            }
        }
        self.intent.free_terms.push(text.to_string());
    }
}

/// Exact id, exact symbol, case-insensitive and qualified-suffix tiers.
fn strong_match(graph: &Graph, token: &str) -> Option<(MatchTier, Vec<NodeId>)> {
    let qualified = token.contains("::") || token.contains('.');
    if qualified {
        let normalized = normalize_qualified(token);
        let nodes = graph.lookup(NameTable::Suffix, &normalized);
        if !nodes.is_empty() {
            let exact: Vec<NodeId> = nodes
                .iter()
                .copied()
                .filter(|&n| full_id(graph, n) == normalized)
                .collect();
            return Some(if exact.is_empty() {
                (MatchTier::QualifiedSuffix, nodes)
            } else {
                (MatchTier::ExactId, exact)
            });
        }
        return None;
    }
    let nodes = graph.lookup(NameTable::Exact, token);
    if !nodes.is_empty() {
        return Some((MatchTier::ExactSymbol, nodes));
    }
    let nodes = graph.lookup(NameTable::Folded, &token.to_lowercase());
    if !nodes.is_empty() {
        return Some((MatchTier::CaseInsensitive, nodes));
    }
    None
}

/// The module files a dotted or `::` name is (or reaches through imports).
fn qualified_module(graph: &Graph, token: &str) -> Vec<NodeId> {
    let dotted = normalize_qualified(token);
    let nodes = module_files(graph, &dotted);
    if nodes.is_empty() {
        through_imports(graph, &dotted)
    } else {
        nodes
    }
}

/// A Rust path as the crate's users write it, which docs, backtraces and other crates
/// print (`grep_searcher::Searcher::search_path`, `ignore::gitignore::Gitignore`), starts
/// with a crate's name, which no module path in the graph holds. When that first segment
/// names a crate of the repository (its `Cargo.toml`'s), the rest is read as a path from
/// the crate's root, among that crate's files only, by the case-sensitive strong tiers and
/// module paths; through a facade crate's re-export (`grep::searcher::Searcher`), in the
/// crate re-exported. Any other first segment (`fs::write`, `std::…`) leaves the path
/// unmatched.
fn in_named_crate(graph: &Graph, crates: &Crates, token: &str) -> Option<(MatchTier, Vec<NodeId>)> {
    in_named_crate_within(graph, crates, token, FACADE_HOPS)
}

/// Facade re-exports followed for one path at most (`grep::searcher::…` is one): crates
/// that re-export each other (a dev-dependency cycle) end there.
const FACADE_HOPS: usize = 4;

fn in_named_crate_within(
    graph: &Graph,
    crates: &Crates,
    token: &str,
    hops: usize,
) -> Option<(MatchTier, Vec<NodeId>)> {
    let (krate, rest) = token.split_once("::")?;
    let rest = rest.trim_start_matches(':');
    if rest.is_empty() {
        return None;
    }
    let dirs = crates.dirs_of(krate);
    if dirs.is_empty() {
        return None;
    }
    let in_crate = |node: &NodeId| {
        let path = graph.file_path(graph.node(*node).file());
        crates
            .crate_dir_of(path)
            .is_some_and(|dir| dirs.contains(&dir))
    };
    // `krate::name` is an item at the crate's root, or one re-exported there: a top-level
    // definition of the crate (`grep_searcher::search_path` is no method's path).
    let top_level = |node: &NodeId| {
        rest.contains("::") || {
            let parent = graph.node(*node).parent();
            parent.is_none() || graph.kind(parent) == SymbolKind::File || graph.is_directory(parent)
        }
    };
    if let Some((tier, nodes)) =
        strong_match(graph, rest).filter(|(tier, _)| *tier != MatchTier::CaseInsensitive)
    {
        let mut nodes: Vec<NodeId> = nodes
            .into_iter()
            .filter(in_crate)
            .filter(top_level)
            .collect();
        if nodes.len() > 1 && !rest.contains("::") {
            // `krate::Name` is what the crate's root holds: of several `Name`s, the one
            // its `src/lib.rs` defines or imports (re-exports), as the compiler reads it.
            let roots: Vec<NodeId> = dirs
                .iter()
                .filter_map(|dir| {
                    graph
                        .file_index(&crate::query::crates::library_root(dir))
                        .and_then(|f| graph.file(f))
                })
                .map(|file| file.node())
                .collect();
            let at_root: Vec<NodeId> = nodes
                .iter()
                .copied()
                .filter(|&node| {
                    roots.contains(&graph.node(node).parent())
                        || roots.iter().any(|&root| {
                            graph.out_edges(root).any(|edge| {
                                edge.kind == EdgeKind::Imports as u8 && edge.node() == node
                            })
                        })
                })
                .collect();
            if !at_root.is_empty() {
                nodes = at_root;
            }
        }
        if !nodes.is_empty() {
            return Some((tier, nodes));
        }
    }
    let nodes: Vec<NodeId> = qualified_module(graph, rest)
        .into_iter()
        .filter(in_crate)
        .collect();
    if !nodes.is_empty() {
        return Some((MatchTier::QualifiedSuffix, nodes));
    }
    // A facade crate's path (`grep::searcher::Searcher`): the crate it re-exports under
    // the next segment, and the rest of the path in that one (each step is shorter).
    let (alias, deeper) = rest.split_once("::")?;
    let hops = hops.checked_sub(1)?;
    crates.reexported(krate, alias).iter().find_map(|target| {
        in_named_crate_within(graph, crates, &format!("{target}::{deeper}"), hops)
    })
}

/// A Rust path without its `crate::`, `self::` and `super::` roots (`crate::render::Shape`
/// → `render::Shape`): the graph's qualified names start below the crate.
fn below_rust_root(mut token: &str) -> &str {
    while let Some(rest) = ["crate::", "self::", "super::"]
        .iter()
        .find_map(|root| token.strip_prefix(root))
    {
        token = rest;
    }
    token
}

/// The names closest to `term` by edit distance (a transposition counts one), for a name
/// that matched nothing: at most `limit`, nearest first, then the most central. A dotted
/// or `::` term is compared with qualified names, any other with simple names. Only
/// names within 1 edit (terms of up to five characters) or 2 are offered.
pub fn near_names(graph: &Graph, written: &str, limit: usize) -> Vec<String> {
    let term = below_rust_root(written);
    // A name is offered as the term was written: its Rust root and `::` kept.
    let root = &written[..written.len() - term.len()];
    let spelt = |key: &str| {
        if term.contains("::") {
            format!("{root}{}", key.replace('.', "::"))
        } else {
            format!("{root}{key}")
        }
    };
    let qualified = term.contains('.') || term.contains("::");
    let wanted = if qualified {
        normalize_qualified(term)
    } else {
        term.to_string()
    };
    let within = if wanted.chars().count() <= 5 { 1 } else { 2 };
    let table = if qualified {
        NameTable::Suffix
    } else {
        NameTable::Exact
    };
    let length = wanted.len();
    // (distance, centrality) of each near key; a key's entries are adjacent in its part.
    let mut near: HashMap<&str, (usize, u32)> = HashMap::new();
    let mut last: Option<(&str, Option<usize>)> = None;
    for (key, node) in graph.name_entries(table) {
        if key.len().abs_diff(length) > within {
            continue;
        }
        let distance = match last {
            Some((known, distance)) if known == key => distance,
            _ => {
                let distance = strsim::osa_distance(key, &wanted);
                let distance = (distance > 0 && distance <= within).then_some(distance);
                last = Some((key, distance));
                distance
            }
        };
        if let Some(distance) = distance {
            let centrality = graph.centrality(node);
            let entry = near.entry(key).or_insert((distance, centrality));
            entry.1 = entry.1.max(centrality);
        }
    }
    let mut near: Vec<(&str, (usize, u32))> = near.into_iter().collect();
    near.sort_by(|a, b| a.1.0.cmp(&b.1.0).then(b.1.1.cmp(&a.1.1)).then(a.0.cmp(b.0)));
    near.into_iter()
        .take(limit)
        .map(|(key, _)| spelt(key))
        .collect()
}

/// `module.path.Qualified.name` of a symbol node: a name that matches it alone at the
/// exact-id tier (what a re-asked query names a chosen candidate by).
fn full_id(graph: &Graph, node: NodeId) -> String {
    let record = graph.node(node);
    let qualified = normalize_qualified(graph.str(record.qualified()));
    match graph.file_of(node) {
        Some(file) => format!(
            "{}.{qualified}",
            crate::graph::names::module_path_of(graph.str(file.path()))
        ),
        None => qualified,
    }
}

/// The words that name `node` alone when a query is asked again: its exact id (dotted)
/// when that reads back as one name, else its label (`path::Qualified`), as for a file
/// whose name is no identifier (`search-stdin.rs`); files and directories by their paths.
pub fn unique_name(graph: &Graph, node: NodeId) -> String {
    match graph.kind(node) {
        SymbolKind::File => graph.str(graph.node(node).qualified()).to_string(),
        SymbolKind::Module if graph.is_directory(node) => {
            graph.str(graph.node(node).qualified()).to_string()
        }
        SymbolKind::Module => graph.label(node),
        _ => {
            let id = full_id(graph, node);
            if is_identifier_shaped(&id) {
                id
            } else {
                graph.label(node)
            }
        }
    }
}

/// What a dotted name reaches through the modules that re-export it, as a package's
/// users write it (`sympy.Rational`, `sympy.core.numbers.igcd`): the longest prefix that
/// is a module (`module_files`) whose files import the next segment by that name, then
/// the members the remaining segments name (`sympy.Rational.limit_denominator`).
fn through_imports(graph: &Graph, dotted: &str) -> Vec<NodeId> {
    let segments: Vec<&str> = dotted.split('.').collect();
    let named = |node: NodeId, name: &str| match graph.kind(node) {
        SymbolKind::File | SymbolKind::Module => {
            let path = graph.str(graph.node(node).qualified());
            crate::graph::names::module_path_of(path.trim_end_matches('/'))
                .rsplit('.')
                .next()
                == Some(name)
        }
        _ => graph.str(graph.node(node).name()) == name,
    };
    let along = |from: &[NodeId], kind: EdgeKind, name: &str| -> Vec<NodeId> {
        let mut nodes: Vec<NodeId> = from
            .iter()
            .flat_map(|&node| graph.out_edges(node))
            .filter(|edge| edge.kind == kind as u8)
            .map(|edge| edge.node())
            .filter(|&node| named(node, name))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    };
    for split in (1..segments.len()).rev() {
        let modules = module_files(graph, &segments[..split].join("."));
        if modules.is_empty() {
            continue;
        }
        let mut found = along(&modules, EdgeKind::Imports, segments[split]);
        for member in &segments[split + 1..] {
            found = along(&found, EdgeKind::Contains, member);
        }
        if !found.is_empty() {
            return found;
        }
    }
    Vec::new()
}

/// File nodes whose dotted module path ends with `dotted` at a dot (`codegen.ast` →
/// `sympy/codegen/ast.py`).
fn module_files(graph: &Graph, dotted: &str) -> Vec<NodeId> {
    let names = |module: &str| {
        module == dotted
            || (module.ends_with(dotted)
                && module.as_bytes()[module.len() - dotted.len() - 1] == b'.')
    };
    graph
        .files()
        .filter_map(|f| graph.file(f))
        .filter(|f| f.language != u8::MAX)
        .filter(|f| {
            let path = graph.str(f.path());
            // A package marker drops (`pkg/__init__.py` is `pkg`), but a Python `main.py` or
            // `lib.py` is a module of that name too: its path, dotted, also names it.
            names(&crate::graph::names::module_path_of(path))
                || path
                    .rsplit_once('.')
                    .is_some_and(|(stem, _)| names(&stem.replace('/', ".")))
        })
        .map(|f| f.node())
        .collect()
}

/// The symbols a label names (`path::Qualified`, as Atlas prints them): the file's
/// definitions whose in-file qualified name is the rest. `None` when it is no label.
fn label_nodes(graph: &Graph, label: &str) -> Option<Vec<NodeId>> {
    let (path, qualified) = label.split_once("::")?;
    let file = graph.file_index(path)?;
    let first = graph.file(file)?.node();
    let nodes: Vec<NodeId> = (first.0 + 1..graph.node_count() as u32)
        .map(NodeId)
        .take_while(|&n| graph.node(n).file() == file)
        .filter(|&n| graph.str(graph.node(n).qualified()) == qualified)
        .collect();
    (!nodes.is_empty()).then_some(nodes)
}

/// The definitions a pasted ref names: `path:line[:column]` and `path#Lline[-Lend][@hash]`
/// name the innermost definition whose span holds the line (the file itself when none
/// does), `path:Qualified` the definition of that qualified name. Only the committed
/// generation's tables are read; the path must be an inventoried file.
fn pasted_ref_nodes(graph: &Graph, text: &str) -> Option<Vec<NodeId>> {
    let (path, rest, link) = match text.split_once("#L") {
        Some((path, lines)) => (path, link_line(lines), true),
        None => text
            .split_once(':')
            .map(|(path, rest)| (path, rest, false))?,
    };
    let file = graph.file_index(path)?;
    let first = graph.file(file)?.node();
    let line = rest.split(':').next().unwrap_or("");
    if !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit()) {
        // Line 0, or one past every definition, names the file.
        let node =
            (line.parse::<u32>()).map_or(first, |line| frame_definition(graph, first, line, None));
        return Some(vec![node]);
    }
    if link {
        // A link to the file whose line is not a number.
        return Some(vec![first]);
    }
    label_nodes(graph, &format!("{path}::{rest}"))
}

/// The definition that `name` (its last segment) calls at the 1-based `line` of one of
/// `callers`: a source line's call, as the graph resolved it at that site.
fn callee_at(graph: &Graph, callers: &[NodeId], line: u32, name: &str) -> Option<NodeId> {
    let last = name.rsplit(['.', ':']).next().unwrap_or(name);
    callers
        .iter()
        .flat_map(|&caller| graph.out_edges(caller))
        .filter(|edge| {
            edge.kind == EdgeKind::Calls as u8 && edge.site.start_line.to_native() + 1 == line
        })
        .map(|edge| edge.node())
        .find(|&callee| graph.str(graph.node(callee).name()) == last)
}

/// The definitions a stack frame (`at` is its `path:line`, `function` the name it gives)
/// points into, with the tier its path matched at: one, or one per file when its path
/// ends several. `None` when its file is not inventoried: the frame is the user's own
/// code.
fn frame_target(
    graph: &Graph,
    at: &str,
    function: Option<&str>,
) -> Option<(MatchTier, Vec<NodeId>)> {
    let in_file = |text: &str| {
        let (path, line) = split_line_ref(text)?;
        let file = graph.file(graph.file_index(path)?)?;
        Some(frame_definition(graph, file.node(), line, function))
    };
    if let Some(node) = in_file(at) {
        return Some((MatchTier::ExactId, vec![node]));
    }
    match path_elsewhere(graph, at)? {
        Elsewhere::Ref(here) => Some((MatchTier::ExactPath, vec![in_file(&here)?])),
        Elsewhere::Modules(files) => {
            let (_, line) = split_line_ref(at)?;
            let nodes = files
                .into_iter()
                .map(|file| frame_definition(graph, file, line, function))
                .collect();
            Some((MatchTier::ExactPath, nodes))
        }
    }
}

/// The definition of the file whose node is `file_node` that a frame at the 1-based
/// `line` naming `function` is in. The function outweighs the line, which drifts between
/// versions: a qualified function's definition (its owner and name) is taken first, the
/// nearest to the line; else, when the definition at the line has another name, the
/// file's definition of that name, in the line's class first, else the nearest to the
/// line (the line's own when the file has none). Line 0, or a line no definition holds,
/// is the file.
fn frame_definition(graph: &Graph, file_node: NodeId, line: u32, function: Option<&str>) -> NodeId {
    let Some(line) = line.checked_sub(1) else {
        return file_node;
    };
    let at_line = innermost_definition(graph, file_node, line);
    let distance = |n: NodeId| {
        let span = &graph.node(n).span;
        let (start, end) = (span.start_line.to_native(), span.end_line.to_native());
        start.saturating_sub(line).max(line.saturating_sub(end))
    };
    // A qualified frame name (`Repo.find`, `com.x.Foo.save`, `app::geo::Square::area`)
    // ends with its definition's name, and usually with its owner's: a definition whose
    // qualified name ends with both is the one the frame names, wherever the line fell.
    let owned = function.map(name_segments).filter(|s| s.len() >= 2);
    if let Some(owned) = &owned {
        let tail = &owned[owned.len() - 2..];
        let ends_with_tail = |n: NodeId| {
            let qualified = name_segments(graph.str(graph.node(n).qualified()));
            qualified.len() >= 2 && qualified[qualified.len() - 2..] == *tail
        };
        if at_line.is_some_and(ends_with_tail) {
            return at_line.unwrap_or(file_node);
        }
        if let Some(found) = definitions_of(graph, file_node)
            .filter(|&n| ends_with_tail(n))
            .min_by_key(|&n| (distance(n), n))
        {
            return found;
        }
    }
    let function = function.map(|f| f.rsplit(['.', ':']).next().unwrap_or(f));
    let named = |n: NodeId| function.is_some_and(|f| graph.str(graph.node(n).name()) == f);
    if function.is_none() || at_line.is_some_and(named) {
        return at_line.unwrap_or(file_node);
    }
    let parent = |n: NodeId| {
        let qualified = graph.str(graph.node(n).qualified());
        (qualified
            .rsplit_once("::")
            .or_else(|| qualified.rsplit_once('.')))
        .map(|(parent, _)| parent)
    };
    let line_parent = at_line.and_then(parent);
    let nearest = definitions_of(graph, file_node)
        .filter(|&n| named(n))
        .min_by_key(|&n| {
            (
                line_parent.is_none() || parent(n) != line_parent,
                distance(n),
                n,
            )
        });
    nearest.or(at_line).unwrap_or(file_node)
}

/// A qualified name's segments, whatever its separators (`a.B.c`, `a::B::c`).
fn name_segments(text: &str) -> Vec<&str> {
    text.split(['.', ':']).filter(|s| !s.is_empty()).collect()
}

/// The first line of a link's `#L…` fragment (what follows `#L`): `10`, `10-L20`,
/// `10@hash`, and GitHub's columns `10C5-L20C6`.
fn link_line(lines: &str) -> &str {
    let first = lines.split(['-', '@']).next().unwrap_or("");
    match first.split_once('C') {
        Some((line, column))
            if !column.is_empty() && column.bytes().all(|b| b.is_ascii_digit()) =>
        {
            line
        }
        _ => first,
    }
}

/// A ref's path and line: `path:line`, or `path:line:column`.
fn split_line_ref(text: &str) -> Option<(&str, u32)> {
    let (rest, last) = text.rsplit_once(':')?;
    let last = last.parse::<u32>().ok()?;
    match rest.rsplit_once(':') {
        Some((path, line)) if !path.is_empty() => match line.parse::<u32>() {
            Ok(line) => Some((path, line)),
            Err(_) => Some((rest, last)),
        },
        _ => Some((rest, last)),
    }
}

/// The line of a ref anchored on its file that lies past the file's end (`a.py:99999`,
/// `a.py#L900`, a frame of another version of the file), with the file's line count: the
/// ref names the file, and the answer says why.
pub fn line_past_end(graph: &Graph, anchor: &Anchor) -> Option<(u32, u32)> {
    if graph.kind(anchor.node) != SymbolKind::File {
        return None;
    }
    let term = anchor.term.trim_end_matches('/');
    let line = match term.split_once("#L") {
        Some((_, lines)) => {
            // Digits beyond any line count (`#L99999999999999999999`) are past the end.
            let digits = link_line(lines);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse::<u32>().unwrap_or(u32::MAX)
        }
        None => split_line_ref(term)?.1,
    };
    let lines = graph.file_of(anchor.node)?.lines.to_native();
    (line > lines).then_some((line, lines))
}

/// The definitions of the file whose node is `file_node`: a file's definitions follow
/// its node (graph-schema/README.md, "Node order").
fn definitions_of(graph: &Graph, file_node: NodeId) -> impl Iterator<Item = NodeId> + '_ {
    let file = graph.node(file_node).file();
    (file_node.0 + 1..graph.node_count() as u32)
        .map(NodeId)
        .take_while(move |&n| graph.node(n).file() == file)
}

/// The innermost definition of the file whose node is `file_node` at the 0-based `line`.
fn innermost_definition(graph: &Graph, file_node: NodeId, line: u32) -> Option<NodeId> {
    graph.innermost_at_line(definitions_of(graph, file_node), line)
}

/// What a path that names no inventoried file or directory as written stands for.
#[derive(Debug, PartialEq)]
enum Elsewhere {
    /// The same ref with its path made an inventoried one (its `:line`, `#L…` or
    /// `::Name` kept).
    Ref(String),
    /// The files of a module path written without an extension, or the several files a
    /// relative path may be.
    Modules(Vec<NodeId>),
}

/// Reads a pasted path the way it names a file of this repository, or `None`:
/// - a URL (`https://github.com/o/r/blob/<ref>/src/a.py#L10`, `file:///…`) or an
///   absolute path, or a path from another checkout or machine (`/home/u/proj/src/a.py:42`,
///   `C:\proj\src\a.py`): the longest tail of its segments that is an inventoried file or
///   a module directory;
/// - a module path without its extension (`src/lib/router`, `./router`, an import's
///   spelling): the files whose module path it is, or ends with at a dot.
///
/// Only the graph's tables are consulted: a path that names no inventoried file is never
/// opened.
fn path_elsewhere(graph: &Graph, text: &str) -> Option<Elsewhere> {
    let text = text.replace('\\', "/");
    let mut text = text.as_str();
    let without_query: String;
    if let Some((scheme, rest)) = text.split_once("://")
        && !scheme.is_empty()
        && scheme.bytes().all(|b| b.is_ascii_alphabetic())
    {
        // The host is never a repository directory; a query string is no part of a path,
        // but the fragment after it is the line (`a.py?plain=1#L10-L20`).
        let rest = rest.split_once('/').map_or("", |(_, path)| path);
        without_query = match rest.split_once('?') {
            Some((path, query)) => match query.split_once('#') {
                Some((_, fragment)) => format!("{path}#{fragment}"),
                None => path.to_string(),
            },
            None => rest.to_string(),
        };
        text = &without_query;
    }
    // The path ends at the first `:` or `#` after its last `/` (`C:/proj/a.py:42`).
    let last_slash = text.rfind('/').map_or(0, |at| at + 1);
    let end = text[last_slash..]
        .find([':', '#'])
        .map_or(text.len(), |at| last_slash + at);
    let (path, tail) = text.split_at(end);
    let segments: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != "." && *s != "..")
        .collect();
    for start in 0..segments.len() {
        let candidate = segments[start..].join("/");
        if graph.file_index(&candidate).is_some() || !path_nodes(graph, &candidate).is_empty() {
            return Some(Elsewhere::Ref(format!("{candidate}{tail}")));
        }
    }
    // A path relative to somewhere inside the repository (`core/numbers.py` from
    // `sympy/`, a bare `models.py`, a JVM frame's `Foo.java`): the inventoried files it
    // ends.
    let joined = segments.join("/");
    if !joined.is_empty() && segments.last().is_some_and(|last| last.contains('.')) {
        let ending = format!("/{joined}");
        let files: Vec<&str> = graph
            .files()
            .filter_map(|f| graph.file(f))
            .map(|f| graph.str(f.path()))
            .filter(|path| path.ends_with(&ending))
            .collect();
        match files[..] {
            [] => {}
            [path] => return Some(Elsewhere::Ref(format!("{path}{tail}"))),
            _ => {
                let nodes = files
                    .iter()
                    .filter_map(|path| path_nodes(graph, path).first().copied());
                return Some(Elsewhere::Modules(nodes.collect()));
            }
        }
    }
    // An import's spelling: no extension on its last segment, nothing after it.
    let last = segments.last()?;
    if !tail.is_empty() || last.contains('.') {
        return None;
    }
    let files = module_files(graph, &segments.join("."));
    (!files.is_empty()).then_some(Elsewhere::Modules(files))
}

fn path_nodes(graph: &Graph, path: &str) -> Vec<NodeId> {
    if let Some(file) = graph.file_index(path).and_then(|f| graph.file(f)) {
        return vec![file.node()];
    }
    // A directory: its module node. Module nodes come first (graph-schema/README.md, "Node
    // order"): the scan stops at the first file instead of visiting every symbol.
    graph
        .nodes()
        .take_while(|&n| graph.kind(n) == SymbolKind::Module)
        .filter(|&n| graph.str(graph.node(n).qualified()) == path)
        .collect()
}

/// Nodes whose name segments start with every word of `text`, in order.
fn segmented(graph: &Graph, text: &str, scans: &mut Scans) -> Vec<NodeId> {
    let words = split_identifier(text);
    let Some(first) = words.first() else {
        return Vec::new();
    };
    let mut nodes = scans.of(graph, first);
    nodes.dedup();
    // The table's keys are the names' segments: a node it gives for one word has a
    // segment that starts with it, so only a phrase needs its names split again.
    if words.len() < 2 {
        return nodes;
    }
    // Many nodes share a name (`_eval_is_rational` in every number class): each name is
    // read and split once per string id: an id is one text (a text with one id per
    // segment is split once per id, with the same outcome).
    let mut matched: rustc_hash::FxHashMap<u32, bool> = rustc_hash::FxHashMap::default();
    let mut segment = String::new();
    nodes.retain(|&n| {
        let name = graph.node(n).name();
        *matched
            .entry(name.0)
            .or_insert_with(|| words_match(&words, graph.str(name), &mut segment))
    });
    nodes
}

/// Each query word is a prefix (or an in-order subsequence starting at the first
/// letter, `ctx` ~ `context`) of a distinct segment of `name`, in order: each word takes
/// the first segment after the last word's that it abbreviates. `segment` is scratch.
fn words_match(words: &[String], name: &str, segment: &mut String) -> bool {
    if words.is_empty() {
        return true;
    }
    // Each word is a subsequence of its segment, so all of them, joined, are one of the
    // lower-cased name: one pass over the bytes rules out most names before any split
    // (ASCII only, where lower-casing keeps a name's bytes in place).
    if name.is_ascii() && words.iter().all(|w| w.is_ascii()) {
        let mut name = name.bytes().map(|b| b.to_ascii_lowercase());
        if !words
            .iter()
            .flat_map(|w| w.bytes())
            .all(|w| name.any(|b| b == w))
        {
            return false;
        }
    }
    let mut next = 0;
    each_segment(name, segment, |segment| {
        if abbreviates(&words[next], segment) {
            next += 1;
        }
        next < words.len()
    });
    next == words.len()
}

fn abbreviates(word: &str, segment: &str) -> bool {
    if segment.starts_with(word) {
        return true;
    }
    let mut chars = segment.chars();
    word.chars().next() == segment.chars().next() && word.chars().all(|w| chars.any(|s| s == w))
}

/// Normalised substring of symbol names (separators and case ignored).
fn substring(graph: &Graph, token: &str) -> Vec<NodeId> {
    let needle: String = token
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric())
        .collect();
    if needle.len() < 3 {
        return Vec::new();
    }
    let mut found: Vec<(&str, NodeId)> = graph
        .name_entries(NameTable::Folded)
        .filter(|(key, _)| {
            let key: String = key.chars().filter(|c| c.is_alphanumeric()).collect();
            key.contains(&needle)
        })
        .collect();
    // In key order over the whole graph, whatever its parts.
    found.sort_unstable();
    found.into_iter().map(|(_, node)| node).take(4096).collect()
}

/// The tie rules that make a shared name mean one thing: callables when the query
/// talks about calls; real definitions over Rust `mod x;` and impl blocks; a whole
/// in-file qualified name over members named like it; the implementation of overloads.
fn narrow(
    graph: &Graph,
    term: &str,
    tier: MatchTier,
    mut nodes: Vec<NodeId>,
    callables_only: bool,
) -> Vec<NodeId> {
    nodes.sort_unstable();
    nodes.dedup();
    let keep = |nodes: &mut Vec<NodeId>, rule: &dyn Fn(NodeId) -> bool| {
        let kept: Vec<NodeId> = nodes.iter().copied().filter(|&n| rule(n)).collect();
        if !kept.is_empty() && kept.len() < nodes.len() {
            *nodes = kept;
        }
    };
    if callables_only && nodes.len() > 1 {
        keep(&mut nodes, &|n| graph.kind(n).is_callable());
    }
    if nodes.len() > 1 {
        keep(&mut nodes, &|n| {
            !matches!(graph.kind(n), SymbolKind::Module | SymbolKind::Impl)
        });
    }
    // A top-level `simplify` against methods `Basic.simplify`.
    if nodes.len() > 1 && tier == MatchTier::ExactSymbol {
        keep(&mut nodes, &|n| {
            graph.str(graph.node(n).qualified()) == term
        });
    }
    // Overloads (`@overload`, TypeScript signatures) share one label: each label is one
    // implementation, so a name defined with overloads in two files is two choices, not
    // one per signature.
    if nodes.len() > 1 {
        let mut labels: std::collections::HashSet<String> =
            std::collections::HashSet::with_capacity(nodes.len());
        let collapsed: Vec<NodeId> = nodes
            .iter()
            .copied()
            .filter(|&node| labels.insert(graph.label(node)))
            .collect();
        if collapsed.len() < nodes.len() {
            nodes = collapsed
                .into_iter()
                .map(|n| graph.implementation(n))
                .collect();
            nodes.sort_unstable();
            nodes.dedup();
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_shapes() {
        assert!(is_identifier_shaped("compile_context"));
        assert!(is_identifier_shaped("a::b::c"));
        assert!(is_identifier_shaped("pkg.Class.method"));
        assert!(!is_identifier_shaped("how?"));
        assert!(is_path_shaped("src/main.rs"));
        assert!(is_path_shaped("main.py"));
        assert!(!is_path_shaped("Cart.total"));
    }

    #[test]
    fn a_query_with_a_word_that_is_never_a_name_is_certain_to_be_searched() {
        // What `parse` will search, known before the graph is read.
        for (query, text) in [
            (
                "how are rational numbers simplified",
                "how are rational numbers simplified",
            ),
            // Relation words are not searched.
            ("what calls apply_discount", "what apply_discount"),
            // A Portuguese question brings its English words.
            (
                "onde o desconto é aplicado?",
                "onde o desconto é aplicado? discount apply",
            ),
        ] {
            assert_eq!(certain_search(query).as_deref(), Some(text), "{query}");
            assert_eq!(search_text_of(query), text, "{query}");
        }
        // Names alone (and relation words) may not be searched at all.
        for query in [
            "Basic.subs",
            "Basic.subs calls",
            "shop/util.py",
            "compile ctx",
        ] {
            assert_eq!(certain_search(query), None, "{query}");
        }
    }

    #[test]
    fn a_prose_word_spells_the_bases_of_its_inflection() {
        for (word, base) in [
            ("applies", "apply"),
            ("simplified", "simplify"),
            ("parses", "parse"),
            ("parsed", "parse"),
            ("strings", "string"),
            ("rounded", "round"),
            ("matches", "match"),
            ("mapped", "map"),
            ("running", "run"),
            ("caching", "cache"),
            ("Discounts", "discount"),
        ] {
            assert!(
                word_forms(word).contains(&base.to_string()),
                "{word}: {:?}",
                word_forms(word)
            );
        }
        // The word itself is a form; short words, `-ss` and non-ASCII words are not cut.
        assert_eq!(word_forms("cart"), ["cart"]);
        assert_eq!(word_forms("class"), ["class"]);
        assert_eq!(word_forms("ações"), ["ações"]);
    }

    #[test]
    fn questions_and_requests_ask_and_reports_do_not() {
        for query in [
            "which function applies discounts?",
            "Where is money rounded",
            "find where totals are computed",
            "onde o desconto é aplicado",
            "the cart total is wrong?",
        ] {
            assert!(asks(query), "{query}");
        }
        for query in [
            "srepr not printing dict and set properly",
            "When printing a matrix, the brackets are lost",
            "vector add 0 error",
            "",
        ] {
            assert!(!asks(query), "{query}");
        }
    }

    fn shapes(query: &str) -> Vec<Word> {
        words(query)
    }

    #[test]
    fn a_traceback_frame_reads_as_its_ref_and_quoted_names_as_code() {
        use Word::*;
        assert_eq!(
            shapes(r#"File "/srv/app/shop/models.py", line 24, in total"#),
            vec![
                Plain("File".into()),
                Frame {
                    at: "/srv/app/shop/models.py:24".into(),
                    function: Some("total".into()),
                },
            ]
        );
        assert!(shapes("why does <UserBadge> render twice").contains(&Code("UserBadge".into())));
        // A quoted name at a sentence's end; tsc's `file(line,col)` is the file's line.
        assert!(shapes("not assignable to type 'User'.").contains(&Code("User".into())));
        assert_eq!(
            shapes("src/api/handler.ts(11,8): error")[0],
            Path("src/api/handler.ts:11".into())
        );
        // A pseudo function name is none; a frame without `in` has no function.
        assert_eq!(
            shapes(r#"File "run.py", line 3, in <module> main()"#),
            vec![
                Plain("File".into()),
                Frame {
                    at: "run.py:3".into(),
                    function: None,
                },
                Code("main".into()),
            ]
        );
        // Node.js and JVM frames: `at f (path:line:column)`, `at x.Foo.f(Foo.java:42)`.
        assert_eq!(
            shapes("at Repo.find (/srv/app/src/repo.ts:12:15) at com.x.Foo.save(Foo.java:42)"),
            vec![
                Free("at".into()),
                Frame {
                    at: "/srv/app/src/repo.ts:12:15".into(),
                    function: Some("Repo.find".into()),
                },
                Free("at".into()),
                Frame {
                    at: "Foo.java:42".into(),
                    function: Some("com.x.Foo.save".into()),
                },
            ]
        );
        // A Rust backtrace's frame; a Rust panic's thread name is no name.
        assert_eq!(
            shapes("thread 'main' panicked 1: app::geo::area at ./src/geo.rs:3:5"),
            vec![
                Plain("thread".into()),
                Free("main".into()),
                Plain("panicked".into()),
                Free("1".into()),
                Frame {
                    at: "./src/geo.rs:3:5".into(),
                    function: Some("app::geo::area".into()),
                },
            ]
        );
        // Without a line it is no frame.
        assert!(shapes("look at Foo.bar (src/a.py)").contains(&Code("Foo.bar".into())));
        assert_eq!(split_line_ref("a.ts:12:15"), Some(("a.ts", 12)));
        assert_eq!(split_line_ref(r"C:\p\a.py:7"), Some((r"C:\p\a.py", 7)));
        assert_eq!(split_line_ref("a.py"), None);
        assert_eq!(
            shapes(r#"File "a.py", line 3"#),
            vec![
                Plain("File".into()),
                Frame {
                    at: "a.py:3".into(),
                    function: None,
                },
            ]
        );
        // Not a frame: no number after `line`, or a path that has its line already.
        assert!(shapes("a.py line two").contains(&Path("a.py".into())));
        assert!(shapes("a.py:3 line 4").contains(&Path("a.py:3".into())));
        assert_eq!(
            shapes("'Rational' object, 'it's' and a 'quote"),
            vec![
                Code("Rational".into()),
                Plain("object".into()),
                Free("it's".into()),
                Free("and".into()),
                Free("a".into()),
                Plain("quote".into()),
            ]
        );
    }

    #[test]
    fn a_diffs_changed_lines_read_as_refs_on_its_new_side() {
        let diff = "Why does this break?\n\
diff --git a/shop/models.py b/shop/models.py\n\
index 1111111..2222222 100644\n\
--- a/shop/models.py\n\
+++ b/shop/models.py\t2026-01-01\n\
@@ -22,6 +22,7 @@ class Item(Base):\n\
     def total(self, quantity):\n\
         \"\"\"Price for a quantity.\"\"\"\n\
-        return self.price * quantity\n\
+        value = self.price * quantity\n\
+        return value\n\
\n\
\n\
 class Cart(Base):\n\
--- a/gone.py\n\
+++ /dev/null\n\
@@ -1 +0,0 @@\n\
-x = 1\n\
index 3 is out of range";
        // The blank lines lost their leading space: the header's counts still hold.
        assert_eq!(
            diff_as_refs(diff).as_deref(),
            Some(
                "Why does this break?\nb/shop/models.py:23\nb/shop/models.py:24\nb/shop/models.py:25\nindex 3 is out of range"
            )
        );
        assert_eq!(diff_as_refs("a - b\n+ c @@ -1 +1 @@"), None);
        // Numbers at the edge of u32 do not overflow.
        assert!(diff_as_refs("+++ a.py\n@@ -1 +4294967295,3 @@\n+x\n+y\n+z").is_some());
        assert_eq!(hunk_header("@@ -3 +4,2 @@"), Some((1, 2, 4)));
        assert_eq!(hunk_header("@@ -x +4 @@"), None);
    }

    #[test]
    fn sentences_read_as_names_and_free_words() {
        use Word::*;
        assert_eq!(
            shapes("how does a request get dispatched to the view function?"),
            vec![
                Free("how".into()),
                Free("does".into()),
                Free("a".into()),
                Plain("request".into()),
                Free("get".into()),
                Plain("dispatched".into()),
                Free("to".into()),
                Free("the".into()),
                Plain("view".into()),
                Plain("function".into()),
            ]
        );
        assert_eq!(
            shapes(
                "Why does `dispatch` call Flask.full_dispatch_request() in app.py, not wsgiApp?"
            ),
            vec![
                Free("Why".into()),
                Free("does".into()),
                Code("dispatch".into()),
                Plain("call".into()),
                Code("Flask.full_dispatch_request".into()),
                Free("in".into()),
                Path("app.py".into()),
                Free("not".into()),
                Code("wsgiApp".into()),
            ]
        );
        assert_eq!(
            shapes("checkout callers"),
            vec![Plain("checkout".into()), Relation(super::Relation::Callers)]
        );
        assert_eq!(
            shapes("onde a sessão é assinada"),
            vec![
                Free("onde".into()),
                Free("a".into()),
                Plain("sessão".into()),
                Free("é".into()),
                Plain("assinada".into()),
            ]
        );
        assert_eq!(
            shapes("HTTPAdapter HTTP Flask a::b"),
            vec![
                Code("HTTPAdapter".into()),
                Plain("HTTP".into()),
                Plain("Flask".into()),
                Code("a::b".into()),
            ]
        );
    }

    #[test]
    fn abbreviations_and_prefixes() {
        let matches = |words: &str| {
            words_match(
                &split_identifier(words),
                "compile_context",
                &mut String::new(),
            )
        };
        assert!(matches("compile ctx"));
        assert!(matches("comp cont"));
        assert!(!matches("context compile"));
        assert!(!matches("xyz"));
        // Each word takes a segment of its own.
        assert!(!matches("comp co ctx"));
        assert!(words_match(&[], "compile_context", &mut String::new()));
        // Past ASCII, names are split before they are read.
        let words = split_identifier("über nam");
        assert!(words_match(&words, "ÜberName", &mut String::new()));
        assert!(!words_match(&words, "NameÜber", &mut String::new()));
    }
}
