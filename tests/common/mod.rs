//! Test harness: each test gets a temp dir and a clean environment; every command's argv,
//! cwd, stdout and stderr are printed when an assertion about it fails.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Run {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn describe(&self) -> String {
        format!(
            "$ {}\n(cwd {})\nexit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.argv.join(" "),
            self.cwd.display(),
            self.code,
            self.stdout,
            self.stderr
        )
    }

    #[track_caller]
    pub fn success(self) -> Run {
        assert_eq!(self.code, 0, "command failed:\n{}", self.describe());
        self
    }

    #[track_caller]
    pub fn failure(self, code: i32, error_code: &str) -> Run {
        assert_eq!(self.code, code, "unexpected exit:\n{}", self.describe());
        assert!(
            self.stderr.contains(&format!("error[{error_code}]")),
            "expected {error_code}:\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.describe()))
    }
}

pub struct Sandbox {
    pub temp: tempfile::TempDir,
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            temp: tempfile::tempdir().unwrap(),
        }
    }

    /// A sandbox whose `repo/` is a copy of a fixture repository.
    pub fn with_fixture(name: &str) -> Sandbox {
        let sandbox = Sandbox::new();
        copy_dir(&fixture(name), &sandbox.repo());
        sandbox
    }

    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    pub fn repo(&self) -> PathBuf {
        self.temp.path().join("repo")
    }

    pub fn graph(&self) -> PathBuf {
        self.repo().join(".agent-spec/graph")
    }

    pub fn write(&self, relative: &str, content: impl AsRef<[u8]>) {
        let path = self.repo().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    pub fn run_bin(&self, bin: &str, args: &[&str]) -> Run {
        self.run_bin_env(bin, args, &[])
    }

    pub fn run_bin_env(&self, bin: &str, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(bin);
        command.args(args).current_dir(self.path());
        for (key, _) in std::env::vars() {
            if key.starts_with("ATLAS_")
                || key == "CLAUDE_PROJECT_DIR"
                || key == "WORKSPACE_FOLDER_PATHS"
            {
                command.env_remove(key);
            }
        }
        command.envs(env.iter().copied());
        let output: Output = command.output().expect("binary runs");
        Run {
            argv: std::iter::once(bin.to_string())
                .chain(args.iter().map(|a| a.to_string()))
                .collect(),
            cwd: self.path().to_path_buf(),
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs `atlas <args>` with `--code repo` prepended.
    pub fn atlas(&self, args: &[&str]) -> Run {
        let repo = self.repo();
        let mut full = vec!["--code", repo.to_str().unwrap()];
        full.extend_from_slice(args);
        self.run_bin(env!("CARGO_BIN_EXE_atlas"), &full)
    }

    /// Runs `atlas <args>` with `--code repo` prepended and extra environment.
    pub fn atlas_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let repo = self.repo();
        let mut full = vec!["--code", repo.to_str().unwrap()];
        full.extend_from_slice(args);
        self.run_bin_env(env!("CARGO_BIN_EXE_atlas"), &full, env)
    }

    pub fn build_json(&self) -> serde_json::Value {
        self.atlas(&["build", "--format", "json"]).success().json()
    }

    pub fn current(&self) -> String {
        std::fs::read_to_string(self.graph().join("CURRENT"))
            .unwrap()
            .trim()
            .to_string()
    }

    pub fn graph_file(&self) -> PathBuf {
        self.graph()
            .join("generations")
            .join(self.current())
            .join("graph.atlas")
    }
}
