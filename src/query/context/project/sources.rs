//! The source text projection slices, verified against the generation's hash of each
//! file (R-PROJ-2). A long-lived process (the daemon, the MCP server) keeps the texts it
//! verified, with their line starts, for the next answers: a kept text is used again only
//! while its file's identity (device, inode, length, modification and change times) is
//! the one it was read under, and only when that identity was settled at the read
//! (git's racy-clean rule, `source::Identity::settled`), so an edit is never missed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::graph::codes::FileClass;
use crate::graph::ids::FileId;
use crate::graph::reader::Graph;
use crate::source::Identity;

/// A file's text with what slicing needs.
pub(super) struct Text {
    pub text: String,
    /// Byte offset of each line's start: a slice starts at its line without scanning the
    /// lines before it (a hub's slices fall all over large files).
    pub starts: Vec<usize>,
    /// 0-based index of the file's last line (slices are clamped to it, R-PROJ-2).
    pub last_line: u32,
}

impl Text {
    /// The text of `bytes`, `None` when they are not UTF-8.
    fn of(bytes: Vec<u8>) -> Option<Text> {
        let text = String::from_utf8(bytes).ok()?;
        let starts = crate::query::line_starts(&text);
        // As many lines as `str::lines` yields: a final newline ends the last line
        // rather than starting one.
        let lines = if text.is_empty() {
            0
        } else {
            starts.len() - usize::from(text.ends_with('\n'))
        };
        Some(Text {
            last_line: lines.saturating_sub(1) as u32,
            starts,
            text,
        })
    }

    fn byte_len(&self) -> usize {
        self.text.len() + self.starts.len() * std::mem::size_of::<usize>()
    }
}

pub(super) struct SourceFile {
    /// The verified text; `None` when stale or not UTF-8.
    pub text: Option<Arc<Text>>,
    /// The file's bytes are not the generation's (or cannot be read).
    pub stale: bool,
    pub class: Option<FileClass>,
}

/// One answer's source files, each read (or taken from the kept texts) once.
pub(super) struct Sources<'a> {
    graph: &'a Graph,
    root: &'a Path,
    files: HashMap<FileId, SourceFile>,
}

impl<'a> Sources<'a> {
    pub fn new(graph: &'a Graph, root: &'a Path) -> Sources<'a> {
        Sources {
            graph,
            root,
            files: HashMap::new(),
        }
    }

    /// The file's current text if its bytes hash to the generation's hash (R-PROJ-2).
    pub fn get(&mut self, file: FileId) -> &SourceFile {
        let graph = self.graph;
        let root = self.root;
        self.files.entry(file).or_insert_with(|| {
            let Some(record) = graph.file(file) else {
                return SourceFile {
                    text: None,
                    stale: true,
                    class: None,
                };
            };
            let class = FileClass::from_code(record.class);
            match read(root, graph.str(record.path()), record.size.to_native()) {
                Some((hash, text)) if hash == record.hash => SourceFile {
                    text,
                    stale: false,
                    class,
                },
                _ => SourceFile {
                    text: None,
                    stale: true,
                    class,
                },
            }
        })
    }
}

/// A read file: the blake3 of its bytes and their text.
type Read = ([u8; 32], Option<Arc<Text>>);

/// Texts a long-lived process keeps, by canonical path, with the identity each was read
/// under (`keep_verified_sources`).
struct Kept {
    by_path: HashMap<PathBuf, (Identity, Read)>,
    bytes: usize,
    /// Bytes of text and line starts kept at most; past it the process starts again
    /// from none.
    budget: usize,
}

impl Kept {
    fn new(budget: usize) -> Kept {
        Kept {
            by_path: HashMap::new(),
            bytes: 0,
            budget,
        }
    }
}

/// The kept texts' budget when the process sets none smaller.
pub const KEPT_BYTES: usize = 64 << 20;

static KEPT: OnceLock<Mutex<Kept>> = OnceLock::new();

/// From now on this process keeps the source texts it verified for later answers, up to
/// `budget` bytes (the daemon, the MCP server). One-shot commands never turn it on.
pub fn keep_verified_sources(budget: usize) {
    KEPT.get_or_init(|| Mutex::new(Kept::new(budget)));
}

/// Reads the repository file `path` (at most `limit` bytes), or takes it from the kept
/// texts while its identity is unchanged. `None` when it cannot be read.
fn read(root: &Path, path: &str, limit: u64) -> Option<Read> {
    match KEPT.get() {
        Some(kept) => read_kept(kept, root, path, limit, 0),
        None => {
            let bytes = crate::source::read(root, path, limit).ok()?;
            Some((
                *blake3::hash(&bytes).as_bytes(),
                Text::of(bytes).map(Arc::new),
            ))
        }
    }
}

/// `read` through `kept`, as if the read happened `later` seconds after it does (tests
/// stand in for the time a file takes to settle).
fn read_kept(kept: &Mutex<Kept>, root: &Path, path: &str, limit: u64, later: i64) -> Option<Read> {
    let located = crate::source::locate(root, path).ok()?;
    if let Ok(kept) = kept.lock()
        && let Some((identity, read)) = kept.by_path.get(located.path())
        && *identity == located.identity()
    {
        return Some(read.clone());
    }
    let (bytes, identity, read_at) = located.read(limit).ok()?;
    let read = (
        *blake3::hash(&bytes).as_bytes(),
        Text::of(bytes).map(Arc::new),
    );
    if identity.settled(read_at + later)
        && let Ok(mut kept) = kept.lock()
    {
        let size = read.1.as_ref().map_or(0, |t| t.byte_len());
        if size <= kept.budget {
            if kept.bytes + size > kept.budget {
                *kept = Kept::new(kept.budget);
            }
            kept.bytes += size;
            if let Some((_, (_, old))) = kept
                .by_path
                .insert(located.path().to_path_buf(), (identity, read.clone()))
            {
                kept.bytes -= old.map_or(0, |t| t.byte_len());
            }
        }
    }
    Some(read)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(read: &Read) -> &str {
        read.1.as_ref().map_or("", |t| t.text.as_str())
    }

    #[test]
    fn a_kept_text_serves_until_its_file_changes_and_a_fresh_file_is_never_kept() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a.py");
        std::fs::write(&file, "x = 1\n").unwrap();
        let kept = Mutex::new(Kept::new(KEPT_BYTES));

        // Just written: not settled, so read again each time, never kept.
        let first = read_kept(&kept, root.path(), "a.py", 100, 0).unwrap();
        assert_eq!(text_of(&first), "x = 1\n");
        assert!(kept.lock().unwrap().by_path.is_empty());

        // Settled (read as if ten seconds later): kept, and the next read is the kept one.
        let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(an_hour_ago)
            .unwrap();
        let settled = read_kept(&kept, root.path(), "a.py", 100, 10).unwrap();
        assert_eq!(kept.lock().unwrap().by_path.len(), 1);
        let again = read_kept(&kept, root.path(), "a.py", 100, 10).unwrap();
        assert!(Arc::ptr_eq(
            settled.1.as_ref().unwrap(),
            again.1.as_ref().unwrap()
        ));
        assert_eq!(settled.0, *blake3::hash(b"x = 1\n").as_bytes());

        // The same length rewritten: its times move, so the new bytes are read. (Its
        // first version was dated an hour back before it was kept, so the rewrite cannot
        // fall in the same timestamp tick: that race is what `settled` rules out.)
        std::fs::write(&file, "x = 2\n").unwrap();
        let edited = read_kept(&kept, root.path(), "a.py", 100, 10).unwrap();
        assert_eq!(text_of(&edited), "x = 2\n");
        assert_eq!(edited.0, *blake3::hash(b"x = 2\n").as_bytes());

        // Refusals stay refusals: a path out of the root, a missing file.
        assert!(read_kept(&kept, root.path(), "../a.py", 100, 10).is_none());
        assert!(read_kept(&kept, root.path(), "b.py", 100, 10).is_none());
    }

    #[test]
    fn the_kept_texts_start_again_past_their_budget() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.py"), "x = 1\n").unwrap();
        let kept = Mutex::new(Kept {
            by_path: HashMap::new(),
            bytes: KEPT_BYTES,
            budget: KEPT_BYTES,
        });
        read_kept(&kept, root.path(), "a.py", 100, 10).unwrap();
        {
            let kept = kept.lock().unwrap();
            assert_eq!(kept.by_path.len(), 1);
            assert!(kept.bytes < 100, "{}", kept.bytes);
        }
        // A budget of nothing keeps nothing, and still reads.
        let none = Mutex::new(Kept::new(0));
        let read = read_kept(&none, root.path(), "a.py", 100, 10).unwrap();
        assert_eq!(text_of(&read), "x = 1\n");
        assert!(none.lock().unwrap().by_path.is_empty());
    }
}
