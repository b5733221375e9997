//! One invocation: the global flags, the configuration read from the environment once,
//! where the graph is, and the observability event a query records.

use std::path::PathBuf;
use std::time::Instant;

use crate::build::store::{self, Location};
use crate::config::Config;
use crate::error::AtlasError;

use super::observe;
use super::output::Format;

pub struct Call {
    /// `--code`.
    pub code: Option<PathBuf>,
    /// `--graph`.
    pub graph: Option<PathBuf>,
    pub config: Config,
    pub started: Instant,
    /// How a surface other than argv chose the repository (`mcp roots`), when it did.
    pub index_resolution: Option<&'static str>,
}

impl Call {
    /// Where the graph and the code are (R-GEN-1).
    pub fn location(&self) -> Result<Location, AtlasError> {
        let cwd = std::env::current_dir().map_err(|e| AtlasError::io(".", e))?;
        // A `--code` that names no directory is that, for every command alike (not a
        // missing graph below it, nor an I/O error from reading it).
        if let Some(code) = &self.code
            && !code.is_dir()
        {
            return Err(AtlasError::CodeDirMissing(code.clone()));
        }
        Ok(store::locate(
            self.graph.as_deref(),
            self.code.as_deref(),
            &cwd,
            &self.config.placement,
        ))
    }

    /// `location`, with the code root reads take (`Location::for_reads`): for the
    /// daemon, its clients and `watch`, which serve a graph named from elsewhere.
    pub fn read_location(&self) -> Result<Location, AtlasError> {
        let location = self.location()?;
        let store = store::Store::new(&location.graph_dir);
        location.for_reads(&store)
    }

    /// How the repository was found (R-GEN-1, and the MCP client's roots).
    pub fn index_resolution(&self, location: &Location) -> &'static str {
        if let Some(how) = self.index_resolution {
            return how;
        }
        match location.rule {
            store::GraphDirRule::Ascending | store::GraphDirRule::CodeRoot
                if location.code_given =>
            {
                "flag --code"
            }
            store::GraphDirRule::CodeRoot => "working directory",
            store::GraphDirRule::EditorRoot => {
                "editor env (CLAUDE_PROJECT_DIR or WORKSPACE_FOLDER_PATHS)"
            }
            rule => rule.as_str(),
        }
    }

    /// Records an observability event when `ATLAS_OBSERVABILITY=1`; best effort.
    pub fn observe(&self, answer: Answer<'_>) {
        if !self.config.observability {
            return;
        }
        let Ok(location) = self.location() else {
            return;
        };
        let event = observe::Event::builder(
            answer.tool,
            answer.format.as_str(),
            answer.profile,
            answer.outcome,
            self.config.tokenizer.as_deref(),
        )
        .output(answer.output, answer.items)
        .started(self.started)
        .build();
        observe::Recorder::new(&location.graph_dir).record(event);
    }
}

/// What a query command printed, for its observability event (sizes and codes only).
pub struct Answer<'a> {
    pub tool: &'a str,
    pub format: Format,
    pub profile: Option<&'a str>,
    pub outcome: &'a str,
    pub output: &'a str,
    pub items: usize,
}
