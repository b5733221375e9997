//! Sections of an issue text that describe the reporter's environment, set aside before a
//! search. Bug-report templates ask for them (black's "Environment"; tokio's "Version" and
//! "Platform"; gin's "Go Version" and "Operating System"; hono's "What version of Hono
//! are you using?"), and agents paste issues whole. What such a section holds (`Sphinx
//! version: 5.0.2`, `OS: Linux`, a package's `show_versions()` dump) names the project
//! and its dependencies, not the code at fault: searched, its words brought the project's
//! central files (its application class, its version report) ahead of the files the rest
//! of the issue describes (docs/QUALITY.md).
//!
//! A section is a Markdown heading (`## …`, a line that is only `**…**`, a one-line
//! paragraph underlined by `===`/`---`, or `# …` after a blank line) and what follows it
//! up to the next heading; code, fenced or indented, holds no heading. Its title names
//! the environment when it ends with a word that does (`names_the_environment`), or asks
//! for one. What is set aside is reported (heading and line count) with the answer: never
//! dropped silently.

use serde::Serialize;

/// Titles longer than this are prose, not a template's heading.
const MAX_TITLE_WORDS: usize = 12;

/// A section set aside: its heading as written (without its Markdown marks) and how many
/// lines it held, the heading's included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetAside {
    pub heading: String,
    pub lines: usize,
}

/// The text searched once the environment sections are set aside, and what they were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WithoutEnvironment {
    pub text: String,
    pub set_aside: Vec<SetAside>,
}

/// `text` without its environment sections, or `None` when it has none — or when nothing
/// else would be left to search.
pub fn without_environment(text: &str) -> Option<WithoutEnvironment> {
    if !text.contains('\n') {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let headings = headings(&lines);
    let mut kept = String::with_capacity(text.len());
    let mut set_aside: Vec<SetAside> = Vec::new();
    let mut skipping = false;
    for (index, line) in lines.iter().enumerate() {
        match &headings[index] {
            Heading::Title(title) => {
                skipping = names_the_environment(title);
                if skipping {
                    set_aside.push(SetAside {
                        heading: title.clone(),
                        lines: 0,
                    });
                }
            }
            Heading::Underline | Heading::None => {}
        }
        match set_aside.last_mut() {
            Some(section) if skipping => section.lines += 1,
            _ => {
                kept.push_str(line);
                kept.push('\n');
            }
        }
    }
    // What is left must hold a word to search, or the text is searched whole.
    if set_aside.is_empty() || !kept.chars().any(char::is_alphanumeric) {
        return None;
    }
    Some(WithoutEnvironment {
        text: kept,
        set_aside,
    })
}

/// What a line is to the section structure.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Heading {
    None,
    /// A heading's first line, with its title.
    Title(String),
    /// A setext title's underline (it belongs to the title before it).
    Underline,
}

/// Each line's part in the structure: headings outside fenced code.
fn headings(lines: &[&str]) -> Vec<Heading> {
    let mut out = vec![Heading::None; lines.len()];
    let mut fence: Option<(char, usize)> = None;
    for (index, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        if let Some(marker) = fence_marker(trimmed).filter(|_| block_level(line)) {
            match fence {
                None => fence = Some(marker),
                Some((c, n)) if marker.0 == c && marker.1 >= n => fence = None,
                Some(_) => {}
            }
            continue;
        }
        if fence.is_some() {
            continue;
        }
        if !block_level(line) {
            continue;
        }
        // One mark after a line of text is an unfenced Python or shell comment far more
        // often than a heading; after a blank line it is read as one.
        let after_blank = index == 0 || lines[index - 1].trim().is_empty();
        let comment = line.trim_start().starts_with("# ") && !after_blank;
        if let Some(title) = atx_title(line)
            .filter(|_| !comment)
            .or_else(|| bold_title(line))
        {
            out[index] = Heading::Title(title);
        } else if index > 0 && is_setext_underline(line) && out[index - 1] == Heading::None {
            // A title is a one-line paragraph: what stands before it is a blank line, the
            // text's start or a tag (`<details>`); under a list item `---` is a rule.
            let before = lines[index - 1];
            let title = before.trim();
            let alone =
                index < 2 || lines[index - 2].trim().is_empty() || tag_line(lines[index - 2]);
            if !title.is_empty()
                && alone
                && block_level(before)
                && paragraph_line(before)
                && fence_marker(title).is_none()
            {
                out[index - 1] = Heading::Title(title.to_string());
                out[index] = Heading::Underline;
            }
        }
    }
    out
}

/// Whether a line is indented less than code is (four spaces), as a heading, an underline
/// or a fence must be.
fn block_level(line: &str) -> bool {
    line.len() - line.trim_start_matches(' ').len() <= 3
}

/// Whether a line could be a one-line paragraph's only line: not a list item, a quote or
/// a table row.
fn paragraph_line(line: &str) -> bool {
    let t = line.trim_start();
    let list = t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") || {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && (t[digits..].starts_with(". ") || t[digits..].starts_with(") "))
    };
    !(list || t.starts_with('>') || t.starts_with('|'))
}

/// A line that only holds an HTML tag (`<details>`), which may stand before a title.
fn tag_line(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('<') && t.ends_with('>')
}

/// A fence's character and length when the (left-trimmed) line opens or closes one. A
/// backtick fence's info string has no backtick: "```x = 1```" is inline code.
fn fence_marker(trimmed: &str) -> Option<(char, usize)> {
    let c = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let n = trimmed.chars().take_while(|x| *x == c).count();
    let info = &trimmed[n..];
    (n >= 3 && !(c == '`' && info.contains('`'))).then_some((c, n))
}

/// `# Title`, up to six marks, at most three spaces in (a closing run of marks dropped).
fn atx_title(line: &str) -> Option<String> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let marks = rest.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&marks) {
        return None;
    }
    let after = &rest[marks..];
    if !after.is_empty() && !after.starts_with([' ', '\t']) {
        return None;
    }
    let title = after.trim().trim_end_matches('#').trim();
    (!title.is_empty()).then(|| title.to_string())
}

/// A line that is only bold text (`**Environment info**`, `__Version__:`), as templates
/// write their headings.
fn bold_title(line: &str) -> Option<String> {
    let trimmed = line.trim();
    let trimmed = trimmed.strip_suffix(':').unwrap_or(trimmed).trim_end();
    for mark in ["**", "__"] {
        if let Some(inner) = trimmed
            .strip_prefix(mark)
            .and_then(|rest| rest.strip_suffix(mark))
        {
            let inner = inner.trim().trim_end_matches(':').trim();
            if !inner.is_empty() && !inner.contains(mark) {
                return Some(inner.to_string());
            }
        }
    }
    None
}

/// `===` or `---` (three or more) alone on a line.
fn is_setext_underline(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.len() >= 3 && (trimmed.bytes().all(|b| b == b'=') || trimmed.bytes().all(|b| b == b'-'))
}

/// Words that name the environment when a title ends with one.
const ENVIRONMENT_WORDS: &[&str] = &[
    "environment",
    "environments",
    "version",
    "versions",
    "platform",
    "platforms",
    "runtime",
    "os",
];

/// Words a template puts after the one that names the environment (`System details`,
/// `Python version used`, `pylint --version output`).
const TRAILING: &[&str] = &["info", "information", "details", "used", "output"];

/// Whether a heading's title asks for the environment: it ends with a word that names it
/// (`Environment`, `Python version`, `OS`, `Operating System`, `System details`), or it
/// asks for one (`What version of Hono are you using?`). A title about the bug that only
/// mentions one (`Runtime error`, `Regression in version 2`, `os.path.join drops the
/// drive`) does not: its words are the report.
fn names_the_environment(title: &str) -> bool {
    // Parenthesised asides (`(with version if possible)`) are not the title.
    let mut plain = String::with_capacity(title.len());
    let mut depth = 0usize;
    for c in title.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let question = plain.trim_end().ends_with('?');
    let words: Vec<String> = plain
        .split(|c: char| c.is_whitespace() || c == '/')
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() || words.len() > MAX_TITLE_WORDS {
        return false;
    }
    let names = |w: &str| ENVIRONMENT_WORDS.contains(&w);
    if question && matches!(words[0].as_str(), "what" | "which") {
        return words.iter().any(|w| names(w));
    }
    let mut end = words.len();
    let mut trailed = false;
    while end > 1 && TRAILING.contains(&words[end - 1].as_str()) {
        end -= 1;
        trailed = true;
    }
    let last = words[end - 1].as_str();
    names(last) || (last == "system" && (trailed || (end > 1 && words[end - 2] == "operating")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(text: &str) -> String {
        without_environment(text).map_or_else(|| text.to_string(), |w| w.text)
    }

    #[test]
    fn template_sections_on_the_environment_are_set_aside_with_their_lines() {
        let issue = "**Describe the bug**\n\
            autodoc drops the default of a positional-only argument\n\
            \n\
            **Environment info**\n\
            - OS: Mac\n\
            - Python version: 3.8.2\n\
            - Sphinx version: 3.1.0dev\n\
            \n\
            ### Expected behavior\n\
            `foo(a, b=0, /, c=1)` shows `b=0`\n\
            ### Python version\n\
            3.9\n";
        let out = without_environment(issue).expect("two sections");
        assert_eq!(
            out.text,
            "**Describe the bug**\n\
             autodoc drops the default of a positional-only argument\n\
             \n\
             ### Expected behavior\n\
             `foo(a, b=0, /, c=1)` shows `b=0`\n"
        );
        assert_eq!(
            out.set_aside,
            vec![
                SetAside {
                    heading: "Environment info".into(),
                    lines: 5
                },
                SetAside {
                    heading: "Python version".into(),
                    lines: 2
                },
            ]
        );
    }

    #[test]
    fn every_heading_form_of_templates_is_read() {
        // ATX with closing marks, bold with a colon, setext, a question as a title.
        assert_eq!(
            kept("bug\n## Versions ##\nnumpy 1.2\n## Steps\nrun\n"),
            "bug\n## Steps\nrun\n"
        );
        assert_eq!(
            kept("bug\n__Version__:\n1.2\n**Description**\nx\n"),
            "bug\n**Description**\nx\n"
        );
        assert_eq!(
            kept("bug in merge\n\nINSTALLED VERSIONS\n------------------\npython: 3.8\n"),
            "bug in merge\n\n"
        );
        assert_eq!(
            kept("bug\n<details>\nINSTALLED VERSIONS\n---\npython: 3.8\n"),
            "bug\n<details>\n"
        );
        assert_eq!(kept("x\n### pylint --version output\n2.1\n"), "x\n");
        assert_eq!(
            kept(
                "x\n### What runtime/platform is your app running on? (with version if possible)\nBun\n"
            ),
            "x\n"
        );
        assert_eq!(
            kept(
                "x\n### What version of Hono are you using?\n4.0\n### What steps can reproduce the bug?\ny\n"
            ),
            "x\n### What steps can reproduce the bug?\ny\n"
        );
        assert_eq!(kept("x\n**Operating System**\nLinux\n"), "x\n");
        assert_eq!(kept("x\n### System Details\nLinux\n"), "x\n");
    }

    #[test]
    fn headings_inside_fenced_code_are_code() {
        let issue = "steps\n```python\n# versions of numpy\nimport numpy\n```\nmore\n";
        assert_eq!(without_environment(issue), None);
        // A section set aside ends at the next heading outside code, not inside it.
        let issue = "a\n## Environment\n```\n# Steps\n```\nlinux\n## Steps\nb\n";
        assert_eq!(kept(issue), "a\n## Steps\nb\n");
        // Triple backticks opened and closed on one line are inline code, not a fence.
        let issue = "a\n```x = 1``` fails\n## Environment\nlinux\n## Steps\nb\n";
        assert_eq!(kept(issue), "a\n```x = 1``` fails\n## Steps\nb\n");
        // A dashed line under a fence's close is no setext title.
        let issue = "a\n~~~\nversion\n~~~\n---\nb\n";
        assert_eq!(without_environment(issue), None);
    }

    #[test]
    fn other_headings_and_plain_text_are_kept() {
        for text in [
            "how are rational numbers simplified",
            "Version 2 of the parser\nbreaks on tabs",
            "### Describe the bug\nx\n### Expected behavior\ny\n",
            "### Sphinx extensions\n[\"sphinx.ext.autodoc\"]\n",
            "#not a heading version\nx\n",
            "**bold** version in a sentence\nx\n",
        ] {
            assert_eq!(without_environment(text), None, "{text}");
        }
        // A long title is prose.
        let long = "## when the version of the parser that we ship with the package is older than twelve\nx\n";
        assert_eq!(without_environment(long), None);
    }

    proptest::proptest! {
        /// On any text of headings, fences and lines: no panic, and every line is either
        /// kept, in order, or counted in a section set aside.
        #[test]
        fn every_line_is_kept_or_counted(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just("## Environment".to_string()),
                    proptest::strategy::Just("**Python version**:".to_string()),
                    proptest::strategy::Just("### Steps".to_string()),
                    proptest::strategy::Just("```".to_string()),
                    proptest::strategy::Just("~~~~".to_string()),
                    proptest::strategy::Just("---".to_string()),
                    proptest::strategy::Just("OS".to_string()),
                    proptest::strategy::Just(String::new()),
                    "[ #*_`~=:a-zé\\-]{0,12}",
                ],
                0..30,
            ),
        ) {
            let text = lines.join("\n");
            if let Some(out) = without_environment(&text) {
                let kept: Vec<&str> = out.text.lines().collect();
                let counted: usize = out.set_aside.iter().map(|s| s.lines).sum();
                proptest::prop_assert_eq!(kept.len() + counted, text.lines().count());
                let mut rest = text.lines();
                for line in &kept {
                    proptest::prop_assert!(rest.any(|l| l == *line), "{line:?} out of order");
                }
                proptest::prop_assert!(!out.set_aside.is_empty());
            }
        }
    }

    #[test]
    fn a_text_that_is_only_environment_is_searched_as_it_is() {
        assert_eq!(
            without_environment("## Environment\nLinux\nPython 3.9\n"),
            None
        );
        // What is left must hold a word.
        assert_eq!(
            without_environment("---\n**Environment**\nOS: Linux\n"),
            None
        );
    }

    #[test]
    fn a_title_about_the_bug_that_mentions_the_environment_is_kept() {
        for text in [
            "intro\n## Runtime shutdown hangs\nthe runtime hangs\n",
            "intro\n### os.path.join drops the drive\nC: is lost\n",
            "intro\n### Environment variables are ignored\nFOO=1 is unset\n",
            "intro\n**Runtime error**\nTraceback (most recent call last):\n",
            "intro\n### Regression in version 2\nparse fails\n",
            "intro\n### Steps to reproduce (OS: Windows)\nrun it\n",
            "intro\n**Note: only fails since version 10**\nmore\n",
            "intro\n**Type system**\nmore\n",
        ] {
            assert_eq!(without_environment(text), None, "{text}");
        }
    }

    #[test]
    fn unfenced_code_and_rules_are_not_headings() {
        for text in [
            // An unfenced comment, even one that ends with a version.
            "import numpy as np\n# fails on numpy version\nnp.foo()\nTraceback\n",
            // `---` under a list item is a rule; under a paragraph's second line, the title
            // would be the whole paragraph.
            "- Python version: 3.8\n---\nTraceback\n",
            "it fails with a shape error\nsince the latest version\n---\nTraceback\n",
            // Indented four spaces: code.
            "text\n    ## Environment\n    x = 1\nmore\n",
            "text\n    **Version**\nmore\n",
        ] {
            assert_eq!(without_environment(text), None, "{text}");
        }
    }
}
