//! `--scip-run` (R-SCIP-3): runs the SCIP indexer of each detected language when it is
//! on PATH, and reports `toolchain_missing` otherwise. Never downloads anything.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::syntax::lang::Language;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct IndexerRun {
    pub language: &'static str,
    pub indexer: &'static str,
    pub scip_status: ScipStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The outcome of one indexer run (`scip_status` in the build report).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScipStatus {
    /// The indexer ran and wrote its index.
    Ok,
    /// The indexer is not on PATH; nothing was run.
    ToolchainMissing,
    /// The indexer ran and failed, or wrote no index.
    Failed,
}

/// The indexer family of a language.
fn indexer_of(language: Language) -> (&'static str, &'static str) {
    match language {
        Language::Python => ("python", "scip-python"),
        Language::TypeScript | Language::Tsx | Language::JavaScript => {
            ("typescript", "scip-typescript")
        }
        Language::Go => ("go", "scip-go"),
        Language::Rust => ("rust", "rust-analyzer"),
        Language::Java => ("java", "scip-java"),
    }
}

/// An executable named `name` in the directories of `search_path` (a `PATH` value).
fn find_on_path(name: &str, search_path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(search_path?)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            use std::os::unix::fs::PermissionsExt;
            candidate
                .metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn command_for(family: &str, binary: &Path, root: &Path, output: &Path) -> Command {
    let mut command = Command::new(binary);
    command.current_dir(root);
    match family {
        "python" => {
            let name = root
                .file_name()
                .map_or("project".into(), |n| n.to_string_lossy().to_string());
            command
                .args([
                    "index",
                    ".",
                    "--project-name",
                    &name,
                    "--project-version",
                    "0",
                    "--output",
                ])
                .arg(output);
        }
        "typescript" => {
            command.arg("index");
            if !root.join("tsconfig.json").is_file() {
                command.arg("--infer-tsconfig");
            }
            command.arg("--output").arg(output);
        }
        "go" => {
            command.arg("--output").arg(output);
        }
        "rust" => {
            command.args(["scip", "."]).arg("--output").arg(output);
        }
        _ => {
            command.arg("index").arg("--output").arg(output);
        }
    }
    command
}

/// Runs one indexer per language family present; outputs land in `output_dir`.
pub fn run_indexers(
    root: &Path,
    languages: &BTreeSet<Language>,
    output_dir: &Path,
    search_path: Option<&std::ffi::OsStr>,
) -> Vec<IndexerRun> {
    let families: BTreeSet<(&'static str, &'static str)> =
        languages.iter().map(|l| indexer_of(*l)).collect();
    families
        .into_iter()
        .map(|(family, indexer)| {
            let Some(binary) = find_on_path(indexer, search_path) else {
                return IndexerRun {
                    language: family,
                    indexer,
                    scip_status: ScipStatus::ToolchainMissing,
                    output: None,
                    detail: Some(format!("`{indexer}` is not on PATH")),
                };
            };
            let output = output_dir.join(format!("{family}.scip"));
            let _ = std::fs::remove_file(&output);
            match command_for(family, &binary, root, &output).output() {
                Ok(result) if result.status.success() && output.is_file() => IndexerRun {
                    language: family,
                    indexer,
                    scip_status: ScipStatus::Ok,
                    output: Some(output),
                    detail: None,
                },
                Ok(result) => {
                    let stderr = String::from_utf8_lossy(&result.stderr);
                    let tail: String = stderr.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
                    IndexerRun {
                        language: family,
                        indexer,
                        scip_status: ScipStatus::Failed,
                        output: None,
                        detail: Some(format!("exit {:?}: {tail}", result.status.code())),
                    }
                }
                Err(e) => IndexerRun {
                    language: family,
                    indexer,
                    scip_status: ScipStatus::Failed,
                    output: None,
                    detail: Some(e.to_string()),
                },
            }
        })
        .collect()
}
