//! What the command line prints and how it fails: the output format, machine output on
//! stdout (write errors typed, a reader that went away quiet), and the one JSON error
//! envelope every command and the eval receipt use.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use crate::error::AtlasError;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Default)]
pub enum Format {
    #[default]
    Text,
    Json,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Text => "text",
        }
    }
}

/// Writes machine output. A failed write is an I/O error (`> /dev/full`, a closed
/// stdout); a reader that went away (`| head`) is `BrokenPipe`, reported quietly.
pub fn print_stdout(text: &str) -> Result<(), AtlasError> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                AtlasError::BrokenPipe
            } else {
                AtlasError::io("<stdout>", e)
            }
        })
}

pub fn pretty_json<T: serde::Serialize>(value: &T) -> Result<String, AtlasError> {
    serde_json::to_string_pretty(value)
        .map(|text| text + "\n")
        .map_err(|e| AtlasError::Internal {
            what: "JSON output",
            reason: e.to_string(),
        })
}

pub fn print_json<T: serde::Serialize>(value: &T) -> Result<(), AtlasError> {
    print_stdout(&pretty_json(value)?)
}

/// The JSON error envelope: `{"error": {code, message, exit_code, details}}`.
pub fn error_body(err: &AtlasError) -> serde_json::Value {
    serde_json::json!({
        "error": {
            "code": err.code(),
            "message": err.to_string(),
            "exit_code": exit_code(err),
            "details": err.details(),
        }
    })
}

/// An error on stderr, and under `--format json` its envelope on stdout.
pub fn report_error(err: &AtlasError, format: Format) {
    if matches!(err, AtlasError::BrokenPipe) {
        // Whoever read stdout stopped reading: nothing to tell them.
        return;
    }
    eprintln!("error[{}]: {err}", err.code());
    if format == Format::Json {
        // Best effort: stdout may be the very thing that failed.
        let _ = print_json(&error_body(err));
    }
}

/// A flag or value clap rejected: the same typed error as any other bad input —
/// `error[atlas-invalid-input]` on stderr and, under `--format json`, the JSON error body
/// on stdout.
pub fn report_usage_error(err: &clap::Error, args: &[OsString]) -> i32 {
    let rendered = err.render().to_string();
    let error = AtlasError::InvalidInput {
        what: "command line",
        reason: usage_message(&rendered),
    };
    let json = args
        .windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json");
    eprintln!(
        "error[{}]: {}",
        error.code(),
        rendered.trim_start_matches("error: ").trim_end()
    );
    if json {
        let _ = print_json(&error_body(&error));
    }
    exit_code(&error)
}

/// The first paragraph of clap's rendered error, on one line: what was wrong, with the
/// indented lines that name it (`the following required arguments were not provided:
/// --profile <PROFILE>`), without the usage and help lines after it.
fn usage_message(rendered: &str) -> String {
    rendered
        .trim_start_matches("error: ")
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `path` against the working directory.
pub fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path))
    }
}

/// The process exit code of an error (docs/CLI.md, "Errors and exit codes").
pub fn exit_code(err: &AtlasError) -> i32 {
    match err {
        AtlasError::Io { .. }
        | AtlasError::Internal { .. }
        | AtlasError::QueryInvalid { .. }
        | AtlasError::CacheCorrupt { .. }
        | AtlasError::InjectedFailure(_) => 1,
        AtlasError::InvalidInput { .. } => 2,
        AtlasError::CodeDirMissing(_)
        | AtlasError::CodeRootGone(_)
        | AtlasError::GraphMissing(_) => 3,
        AtlasError::GraphCorrupt { .. } | AtlasError::GraphIncompatible { .. } => 4,
        AtlasError::BuildLocked(_) | AtlasError::WatchRunning(_) => 5,
        AtlasError::StrictPartial { .. } => 6,
        AtlasError::ContextNoMatch { .. } | AtlasError::ContextAmbiguous { .. } => 7,
        AtlasError::ContextRequiredBudget { .. }
        | AtlasError::ContextRequiredCandidateCap { .. }
        | AtlasError::ContextRequiredSourceCap { .. } => 8,
        AtlasError::ContextGraphMismatch { .. } | AtlasError::ContextCursor { .. } => 9,
        AtlasError::EvalFailed { .. } => 10,
        AtlasError::ScipCorrupt { .. } | AtlasError::SearchCorrupt { .. } => 4,
        AtlasError::SearchUnavailable(_) => 3,
        AtlasError::ExpandStale { .. } | AtlasError::RefUnknown { .. } => 9,
        AtlasError::DaemonBusy(_) => 11,
        AtlasError::DaemonTimeout(_) => 12,
        AtlasError::DaemonCancelled(_) => 13,
        AtlasError::DaemonFailed(_) => 14,
        AtlasError::DaemonUnavailable(_) => 15,
        // As a process killed by SIGPIPE reports itself to a shell.
        AtlasError::BrokenPipe => 141,
    }
}
