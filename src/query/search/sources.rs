//! Documents beyond symbols that hybrid search indexes: Markdown sections (one per
//! heading) and git history (R-S-5: commit messages of the files in the index, at most
//! 100 commits per file, 24 months back).

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// Commits kept per file, newest first (R-S-5).
const COMMITS_PER_FILE: usize = 100;
/// How far back history is read (R-S-5).
const HISTORY_MONTHS: u32 = 24;
/// A bound on what one `git log` may return, whatever the repository.
const HISTORY_BYTES: usize = 64 * 1024 * 1024;
const SECTION_EXCERPT_LINES: usize = 12;

/// One Markdown section: a heading and the lines up to the next heading.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub path: String,
    /// Position among the file's sections, from 0.
    pub ordinal: u32,
    /// The heading text.
    pub title: String,
    /// Enclosing headings and this one: `Install > From source`.
    pub heading_path: String,
    /// 1-based, inclusive.
    pub lines: [u32; 2],
    /// The section's first lines (not stored in the sections table).
    #[serde(skip)]
    pub body: String,
}

pub fn is_markdown(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".markdown")
}

/// Sections of a Markdown text: ATX headings (`# Title`) and setext headings
/// (`Title` over `===` or `---`), ignoring anything inside fenced code blocks.
pub fn markdown_sections(path: &str, text: &str) -> Vec<Section> {
    let lines: Vec<&str> = text.lines().collect();
    // (line index, level, title)
    let mut headings: Vec<(usize, usize, String)> = Vec::new();
    let mut fence: Option<&str> = None;
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if indent <= 3 {
            for marker in ["```", "~~~"] {
                if trimmed.starts_with(marker) {
                    fence = match fence {
                        Some(open) if open == marker => None,
                        Some(open) => Some(open),
                        None => Some(marker),
                    };
                }
            }
        }
        if fence.is_some() || trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            continue;
        }
        if indent <= 3 && trimmed.starts_with('#') {
            let level = trimmed.chars().take_while(|&c| c == '#').count();
            let rest = &trimmed[level..];
            if level <= 6 && (rest.is_empty() || rest.starts_with([' ', '\t'])) {
                let title = rest.trim().trim_end_matches('#').trim().to_string();
                if !title.is_empty() {
                    headings.push((i, level, title));
                }
                continue;
            }
        }
        // Setext: a non-blank paragraph line underlined by `===` (1) or `---` (2).
        if i > 0 && indent <= 3 && !trimmed.is_empty() {
            let underline = trimmed.trim_end();
            let level = if underline.chars().all(|c| c == '=') {
                1
            } else if underline.chars().all(|c| c == '-') && underline.len() >= 2 {
                2
            } else {
                0
            };
            let above = lines[i - 1].trim();
            let above_is_text = !above.is_empty()
                && !above.starts_with('#')
                && headings.last().is_none_or(|h| h.0 != i - 1);
            if level > 0 && above_is_text {
                headings.push((i - 1, level, above.to_string()));
            }
        }
    }
    let mut out = Vec::with_capacity(headings.len());
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (n, (start, level, title)) in headings.iter().enumerate() {
        let end = headings.get(n + 1).map_or(lines.len(), |h| h.0);
        while stack.last().is_some_and(|(l, _)| l >= level) {
            stack.pop();
        }
        stack.push((*level, title.clone()));
        let heading_path = stack
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join(" > ");
        let body = lines[*start..end.max(*start + 1).min(lines.len())]
            .iter()
            .take(SECTION_EXCERPT_LINES)
            .copied()
            .collect::<Vec<_>>()
            .join("\n");
        out.push(Section {
            path: path.to_string(),
            ordinal: n as u32,
            title: title.clone(),
            heading_path,
            lines: [*start as u32 + 1, end.max(*start + 1) as u32],
            body,
        });
    }
    out
}

/// One commit as history search sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub hash: String,
    /// Seconds since the Unix epoch (author time).
    pub time: i64,
    /// Subject and body.
    pub message: String,
    /// Indexed files it touched, in git's order.
    pub files: Vec<String>,
}

/// The repository's HEAD and its recent commits touching `indexed` files, each file
/// contributing at most `COMMITS_PER_FILE` of its newest commits. `Ok(None)` when `root`
/// is not in a git work tree or git is not installed: history is an optional source.
pub fn git_history(
    root: &Path,
    indexed: &HashSet<&str>,
) -> std::result::Result<Option<(String, Vec<Commit>)>, String> {
    let command = |args: &[&str]| {
        let mut command = Command::new("git");
        command
            .arg("-C")
            .arg(root)
            // No pager, no fsmonitor, no textconv: plain history only.
            .args(["-c", "core.fsmonitor=false", "--no-pager"])
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0");
        command
    };
    let git = |args: &[&str]| command(args).output();
    let Ok(head) = git(&["rev-parse", "HEAD"]) else {
        return Ok(None);
    };
    if !head.status.success() {
        return Ok(None);
    }
    let head = String::from_utf8_lossy(&head.stdout).trim().to_string();
    let since = format!("--since={HISTORY_MONTHS}.months.ago");
    let mut child = command(&[
        "log",
        "--no-merges",
        "--no-renames",
        "--no-textconv",
        &since,
        "--format=%x1e%H%x1f%at%x1f%B%x1f",
        "--name-only",
        "-z",
        // Paths relative to `root` (`-C`), as the index has them; others are dropped.
        "--relative",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .map_err(|e| format!("git log: {e}"))?;
    // Read at most `HISTORY_BYTES`; a longer history is cut (its oldest commits).
    let mut out = Vec::new();
    if let Some(stdout) = child.stdout.take() {
        stdout
            .take(HISTORY_BYTES as u64)
            .read_to_end(&mut out)
            .map_err(|e| format!("git log: {e}"))?;
    }
    let truncated = out.len() >= HISTORY_BYTES;
    if truncated {
        let _ = child.kill();
    }
    let status = child.wait().map_err(|e| format!("git log: {e}"))?;
    if !status.success() && !truncated {
        return Err(format!("git log exited with {status}"));
    }
    // A cut may split the last record: it is dropped.
    if truncated && let Some(last) = out.iter().rposition(|&b| b == 0x1e) {
        out.truncate(last);
    }
    let text = String::from_utf8_lossy(&out);
    let mut per_file: HashMap<&str, usize> = HashMap::new();
    let mut commits = Vec::new();
    for record in text.split('\x1e').filter(|r| !r.trim().is_empty()) {
        let mut parts = record.splitn(4, '\x1f');
        let (Some(hash), Some(time), Some(message), Some(names)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let mut files = Vec::new();
        for name in names.split(['\0', '\n']).map(str::trim) {
            let Some(&path) = indexed.get(name) else {
                continue;
            };
            let seen = per_file.entry(path).or_default();
            if *seen < COMMITS_PER_FILE {
                *seen += 1;
                files.push(path.to_string());
            }
        }
        if files.is_empty() {
            continue;
        }
        commits.push(Commit {
            hash: hash.trim().to_string(),
            time: time.trim().parse().unwrap_or(0),
            message: message.trim().to_string(),
            files,
        });
    }
    Ok(Some((head, commits)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_headings_become_sections_and_fences_hide_hashes() {
        let text = "# Shop\nIntro.\n\n## Install\n```sh\n# not a heading\npip install shop\n```\n\nUsage\n-----\nCall checkout.\n### Details ###\nMore.\n#hashtag\n";
        let sections = markdown_sections("README.md", text);
        let titles: Vec<(&str, &str, [u32; 2])> = sections
            .iter()
            .map(|s| (s.title.as_str(), s.heading_path.as_str(), s.lines))
            .collect();
        assert_eq!(
            titles,
            [
                ("Shop", "Shop", [1, 3]),
                ("Install", "Shop > Install", [4, 9]),
                ("Usage", "Shop > Usage", [10, 12]),
                ("Details", "Shop > Usage > Details", [13, 15]),
            ]
        );
        assert!(sections[1].body.contains("pip install shop"));
        assert!(markdown_sections("a.md", "no headings\nat all").is_empty());
    }

    #[test]
    fn a_directory_outside_git_has_no_history() {
        let dir = tempfile::tempdir().unwrap();
        let indexed = HashSet::new();
        assert_eq!(git_history(dir.path(), &indexed), Ok(None));
    }
}
