//! Reading a repository file, and nothing else (issue 10, A).
//!
//! Every read of source — a build hashing its inventory, a context slice, an expanded ref,
//! a staleness check — goes through [`read`]: the path is repository-relative (no absolute
//! path, no `..`), resolves inside the code root without following a symlink out of it,
//! names a regular file (never a FIFO, a device or a directory), and is read up to a
//! bound. Callers that take a path from input first resolve it through the committed
//! generation's file table (`Graph::file_index`), so a path in input never names a file by
//! itself.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

/// Why a repository file was not read.
#[derive(Debug)]
pub enum Refusal {
    /// Absolute, empty, or climbing out with `..`.
    BadPath,
    /// It resolves outside the code root (a symlink pointing out).
    OutsideRoot,
    /// Not a regular file: a FIFO, a device, a directory, a socket.
    NotRegular,
    /// Larger than the bound.
    TooLarge {
        limit: u64,
    },
    Io(std::io::Error),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::BadPath => write!(f, "not a repository-relative path"),
            Refusal::OutsideRoot => write!(f, "resolves outside the code root"),
            Refusal::NotRegular => write!(f, "not a regular file"),
            Refusal::TooLarge { limit } => write!(f, "larger than {limit} bytes"),
            Refusal::Io(e) => write!(f, "{e}"),
        }
    }
}

impl Refusal {
    pub fn is_not_found(&self) -> bool {
        matches!(self, Refusal::Io(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Whether `relative` is a plain repository-relative path: no root, no `..`, not empty.
fn is_relative_path(relative: &str) -> bool {
    let path = Path::new(relative);
    !relative.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// Opens a file for reading without blocking on a FIFO, and, unless `follow`, without
/// following a symlink in its last component.
fn open_for_reading(path: &Path, follow: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let no_follow = if follow { 0 } else { libc::O_NOFOLLOW };
        options.custom_flags(no_follow | libc::O_NONBLOCK);
    }
    #[cfg(not(unix))]
    let _ = follow;
    options.open(path)
}

/// Reads a regular file named by configuration (a tokenizer, a model, an index given on
/// the command line), at most `limit` bytes: never a FIFO or a device, which would block
/// or never end.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, Refusal> {
    let file = open_for_reading(path, true).map_err(Refusal::Io)?;
    read_bounded(file, limit)
}

/// Opens a regular file named by configuration for streaming (a FIFO or a device is
/// refused).
pub fn open_regular(path: &Path) -> Result<File, Refusal> {
    let file = open_for_reading(path, true).map_err(Refusal::Io)?;
    match file.metadata() {
        Ok(m) if m.is_file() => Ok(file),
        Ok(_) => Err(Refusal::NotRegular),
        Err(e) => Err(Refusal::Io(e)),
    }
}

fn read_bounded(file: File, limit: u64) -> Result<Vec<u8>, Refusal> {
    let metadata = file.metadata().map_err(Refusal::Io)?;
    if !metadata.is_file() {
        return Err(Refusal::NotRegular);
    }
    if metadata.len() > limit {
        return Err(Refusal::TooLarge { limit });
    }
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Refusal::Io)?;
    if bytes.len() as u64 > limit {
        return Err(Refusal::TooLarge { limit });
    }
    Ok(bytes)
}

/// The canonical location of `relative` under `root`, refused when it leaves the root.
pub fn resolve(root: &Path, relative: &str) -> Result<PathBuf, Refusal> {
    if !is_relative_path(relative) {
        return Err(Refusal::BadPath);
    }
    let root = root.canonicalize().map_err(Refusal::Io)?;
    let path = root.join(relative).canonicalize().map_err(Refusal::Io)?;
    if !path.starts_with(&root) {
        return Err(Refusal::OutsideRoot);
    }
    Ok(path)
}

/// Reads the repository file `relative` under `root`, at most `limit` bytes.
pub fn read(root: &Path, relative: &str, limit: u64) -> Result<Vec<u8>, Refusal> {
    let path = resolve(root, relative)?;
    read_bounded(open_resolved(&path)?, limit)
}

/// What tells one version of a file's bytes from another without reading them: device,
/// inode, length, and modification and change times to the nanosecond (git's racy-clean
/// stat data). The change time moves on every write and on every `touch -d`, which
/// cannot set it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    device: u64,
    inode: u64,
    length: u64,
    modified: (i64, i64),
    changed: (i64, i64),
}

/// How long after its last change a file's identity is trusted to name its bytes: a
/// write within the same timestamp tick as a read leaves the times unchanged (two
/// seconds covers the coarsest file systems' ticks).
const SETTLE_SECONDS: i64 = 2;

impl Identity {
    fn of(metadata: &std::fs::Metadata) -> Identity {
        use std::os::unix::fs::MetadataExt;
        Identity {
            device: metadata.dev(),
            inode: metadata.ino(),
            length: metadata.len(),
            modified: (metadata.mtime(), metadata.mtime_nsec()),
            changed: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }

    /// Whether bytes read at `read_at` (seconds since the epoch, taken before the read)
    /// are the only bytes this identity can name: the file last changed well before the
    /// read, so any later write moves its change time (git's racy-clean rule).
    pub fn settled(&self, read_at: i64) -> bool {
        self.modified.0.max(self.changed.0) + SETTLE_SECONDS < read_at
    }
}

/// Seconds since the epoch now (0 before it).
fn now_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// A repository file found inside the code root, with its identity when it was found
/// (only [`locate`] makes one, so its path has passed [`read`]'s checks).
#[derive(Debug)]
pub struct Located {
    path: PathBuf,
    identity: Identity,
}

impl Located {
    /// The file's canonical path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its identity when it was located.
    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// Reads it, at most `limit` bytes: the bytes, their identity (taken from the open
    /// file before reading) and the time, in seconds since the epoch, just before that.
    pub fn read(&self, limit: u64) -> Result<(Vec<u8>, Identity, i64), Refusal> {
        let file = open_resolved(&self.path)?;
        let read_at = now_seconds();
        let identity = Identity::of(&file.metadata().map_err(Refusal::Io)?);
        Ok((read_bounded(file, limit)?, identity, read_at))
    }
}

/// The repository file `relative` under `root`, located without reading it, with the
/// same refusals as [`read`] (a symlink out, not a regular file).
pub fn locate(root: &Path, relative: &str) -> Result<Located, Refusal> {
    let path = resolve(root, relative)?;
    let metadata = std::fs::symlink_metadata(&path).map_err(Refusal::Io)?;
    if metadata.file_type().is_symlink() {
        return Err(Refusal::OutsideRoot);
    }
    if !metadata.is_file() {
        return Err(Refusal::NotRegular);
    }
    Ok(Located {
        identity: Identity::of(&metadata),
        path,
    })
}

/// Opens a resolved path without following a symlink swapped into its last component.
fn open_resolved(path: &Path) -> Result<File, Refusal> {
    open_for_reading(path, false).map_err(|e| {
        // ELOOP: the last component became a symlink since it was resolved.
        #[cfg(unix)]
        let swapped = e.raw_os_error() == Some(libc::ELOOP);
        #[cfg(not(unix))]
        let swapped = false;
        if swapped {
            Refusal::OutsideRoot
        } else {
            Refusal::Io(e)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_read() {
        assert!(is_relative_path("src/main.rs"));
        assert!(is_relative_path("./a.py"));
        for bad in ["", "/etc/passwd", "../x", "src/../../x", "a/../../b"] {
            assert!(!is_relative_path(bad), "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_fifos_and_oversized_files_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret").unwrap();
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("ok.py"), "x = 1\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.path().join("link.py"))
            .unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("dir")).unwrap();
        let fifo = root.path().join("fifo.py");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert_eq!(read(root.path(), "ok.py", 100).unwrap(), b"x = 1\n");
        assert!(matches!(
            read(root.path(), "link.py", 100),
            Err(Refusal::OutsideRoot)
        ));
        assert!(matches!(
            read(root.path(), "dir/secret", 100),
            Err(Refusal::OutsideRoot)
        ));
        assert!(matches!(
            read(root.path(), "ok.py", 3),
            Err(Refusal::TooLarge { .. })
        ));
        if status.is_ok_and(|s| s.success()) {
            assert!(matches!(
                read(root.path(), "fifo.py", 100),
                Err(Refusal::NotRegular)
            ));
        }
    }
}
