//! Multi-file fixtures for in-process tests: one string, each file introduced by a
//! `//- /path` header line, indented like the test code around it.

/// Removes the indentation common to all non-blank lines (so fixtures can be indented with
/// the test code), the newline after `r#"` and trailing blank space on every line.
pub fn trim_indent(text: &str) -> String {
    let text = text.strip_prefix('\n').unwrap_or(text);
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::with_capacity(text.len());
    for line in text.trim_end().lines() {
        out.push_str(line.get(indent..).unwrap_or("").trim_end());
        out.push('\n');
    }
    out
}

/// The files of a fixture, `(path, lines)` in order of appearance.
pub fn split_files(fixture: &str) -> Vec<(String, Vec<String>)> {
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    for line in trim_indent(fixture).lines() {
        if let Some(path) = line.strip_prefix("//- /") {
            files.push((path.trim().to_string(), Vec::new()));
        } else if let Some((_, lines)) = files.last_mut() {
            lines.push(line.to_string());
        } else {
            assert!(
                line.trim().is_empty(),
                "fixture text before the first `//- /path` header: {line:?}"
            );
        }
    }
    assert!(
        !files.is_empty(),
        "a fixture needs at least one `//- /path` header"
    );
    files
}
