//! `atlas watch`: keep the graph fresh while the tree changes (R-D-2), in the foreground.

use std::time::Duration;

use crate::build::pipeline::BuildOptions;
use crate::build::watch::{LastBuild, Runner, Watch, WatchOptions};
use crate::error::AtlasError;

use super::build::search_companion;
use super::call::Call;
use super::output::{Format, print_stdout};

#[derive(clap::Args, Debug)]
pub struct WatchArgs {
    /// Quiet time after the last change before a build (default: ATLAS_WATCH_DEBOUNCE_MS, else 300).
    #[arg(long, value_name = "MS")]
    pub debounce_ms: Option<u64>,
    /// Poll (every second) instead of using inotify (also ATLAS_WATCH_POLL=1).
    #[arg(long)]
    pub poll: bool,
    /// Skip the hybrid-search index in the builds.
    #[arg(long)]
    pub no_search: bool,
    /// How each build is reported on stdout: a line of text or of JSON.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// The watcher `call` describes: its configuration, with `args` over it. `isolated` runs
/// each build in a child `atlas build` (serving processes).
pub fn start(
    call: &Call,
    debounce: Option<u64>,
    poll: bool,
    search: bool,
    isolated: bool,
) -> Result<Watch, AtlasError> {
    let location = call.read_location()?;
    let mut build =
        BuildOptions::configured(&location.code_root, &location.graph_dir, &call.config);
    // Indexers are for explicit builds: a save must not start scip-python.
    build.scip_run = false;
    if search {
        build.companion = Some(search_companion(call));
    }
    let debounce = debounce.map_or(call.config.watch.debounce, Duration::from_millis);
    let mut options = WatchOptions::new(build, debounce);
    options.force_poll = poll || call.config.watch.force_poll;
    if isolated {
        let exe = std::env::current_exe().map_err(|e| AtlasError::io("<current exe>", e))?;
        let mut argv: Vec<std::ffi::OsString> = vec![
            exe.into(),
            "--code".into(),
            location.code_root.clone().into(),
            "--graph".into(),
            location.graph_dir.clone().into(),
            "build".into(),
            "--wait".into(),
            "--no-progress".into(),
            "--format".into(),
            "json".into(),
        ];
        if !search {
            argv.push("--no-search".into());
        }
        options.runner = Runner::Command(argv);
    }
    Watch::start(options)
}

/// Runs until the process is stopped, printing one line per build.
pub fn run(call: &Call, args: &WatchArgs) -> Result<(), AtlasError> {
    let watch = start(call, args.debounce_ms, args.poll, !args.no_search, false)?;
    let status = watch.status();
    eprintln!(
        "atlas watch: {} directories by {}{}; debounce {} ms",
        status.watched_directories,
        status.backend,
        status
            .poll_reason
            .as_ref()
            .map_or(String::new(), |r| format!(" ({r})")),
        status.debounce_ms
    );
    let mut reported = 0;
    loop {
        std::thread::sleep(Duration::from_millis(25));
        let status = watch.status();
        if status.state == "superseded" {
            // The graph directory was deleted and another watcher started on it.
            return Err(AtlasError::WatchRunning(call.location()?.graph_dir));
        }
        if status.builds > reported {
            reported = status.builds;
            if let Some(last) = &status.last_build {
                print_stdout(&line(last, args.format))?;
            }
        }
    }
}

fn line(last: &LastBuild, format: Format) -> String {
    match format {
        Format::Json => serde_json::to_string(last).unwrap_or_default() + "\n",
        Format::Text => format!(
            "{} {}{} in {:.1} ms ({} change events)\n",
            last.outcome,
            last.fingerprint
                .as_deref()
                .map_or("", |f| &f[..f.len().min(12)]),
            last.code
                .as_deref()
                .map_or(String::new(), |c| format!("error[{c}]")),
            last.latency_ms,
            last.events
        ),
    }
}
