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
    let file = open_for_reading(&path, false).map_err(|e| {
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
    })?;
    read_bounded(file, limit)
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
