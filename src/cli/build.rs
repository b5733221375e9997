//! `atlas build`: compile the repository into a new generation.

use std::path::PathBuf;
use std::sync::Arc;

use crate::build::inventory::InventoryLimits;
use crate::build::pipeline::{self, BuildOptions, BuildReport, LockWait, Progress};
use crate::build::store::GraphDirRule;
use crate::error::AtlasError;
use crate::query::search::IndexCompanion;

use super::call::Call;
use super::output::{Format, absolute, print_json, print_stdout};

/// A one-shot build allocates and frees its working state stage by stage (an edit of
/// sympy peaks at 150 MiB). By default glibc gives memory back to the kernel as soon
/// as the top of the heap is free, and serves every block over 128 KiB (a table, an
/// encoded root) from a fresh mapping, so the next stage faults the same pages in
/// again. A process that exits within a second keeps them instead: the heap grows in
/// 64 MiB steps, is trimmed only past 256 MiB free, and blocks up to 32 MiB come from
/// it: a sympy edit 6–15% faster for 8% more peak memory, cold builds alike
/// (docs/PERFORMANCE.md, "A one-shot build keeps the memory it frees"). Long-lived
/// processes (watch, daemon, MCP) keep glibc's defaults.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; the values are within glibc's
    // documented ranges (M_MMAP_THRESHOLD at most 32 MiB on 64-bit), and a refused
    // value leaves the default in place.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
    }
}

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Fail when any file parses with errors (partial extraction).
    #[arg(long)]
    pub strict: bool,
    /// Wait for a concurrent build to finish instead of failing with atlas-build-locked.
    #[arg(long)]
    pub wait: bool,
    /// Maximum number of files compiled (R-INV-3); at least 1 (a graph of nothing is
    /// not a build).
    #[arg(long, default_value_t = InventoryLimits::default().max_files,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_files: usize,
    /// Maximum total bytes of source compiled.
    #[arg(long, default_value_t = InventoryLimits::default().max_total_bytes)]
    pub max_total_bytes: u64,
    /// Files larger than this are skipped with a diagnostic.
    #[arg(long, default_value_t = InventoryLimits::default().max_file_bytes)]
    pub max_file_bytes: u64,
    /// SCIP index to ingest (repeatable); `index.scip` at the code root is picked up too.
    #[arg(long, value_name = "FILE")]
    pub scip: Vec<PathBuf>,
    /// Run the SCIP indexers found on PATH for the languages present (also ATLAS_SCIP=1).
    #[arg(long)]
    pub scip_run: bool,
    /// Skip the hybrid-search index (built by default; `search` and free words in
    /// `context` build it on first use otherwise).
    #[arg(long)]
    pub no_search: bool,
    /// Hide the progress bar (it is only shown when stderr is a terminal).
    #[arg(long)]
    pub no_progress: bool,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

pub fn run(call: &Call, args: &BuildArgs) -> Result<(), AtlasError> {
    // A graph named from elsewhere is built from its own repository, as reads take it.
    let location = call.read_location()?;
    let mut options =
        BuildOptions::configured(&location.code_root, &location.graph_dir, &call.config);
    options.strict = args.strict;
    options.lock_wait = if args.wait {
        LockWait::Forever
    } else {
        LockWait::Fail
    };
    if !args.no_progress {
        options.progress = Bar::on_terminal();
    }
    if !args.no_search {
        options.companion = Some(search_companion(call));
    }
    options.scip = args.scip.iter().map(|p| absolute(p)).collect();
    options.scip_run |= args.scip_run;
    options.limits = InventoryLimits {
        max_files: args.max_files,
        max_total_bytes: args.max_total_bytes,
        max_file_bytes: args.max_file_bytes,
    };
    keep_freed_memory();
    // `atlas build` prints its report and exits.
    options.exits_after = true;
    let report = pipeline::build(&options)?;
    match args.format {
        Format::Json => print_json(&report),
        Format::Text => {
            let mut text = render(&report);
            let cwd = std::env::current_dir().ok();
            let named_elsewhere = matches!(
                location.rule,
                GraphDirRule::Flag | GraphDirRule::EnvGraphDir | GraphDirRule::EnvIndexDir
            );
            if call.code.is_none()
                && named_elsewhere
                && cwd.as_deref() != Some(location.code_root.as_path())
            {
                // Said where it is not the obvious place: the graph's recorded repository.
                text.push_str(&format!(
                    "  code root {} (the graph's; --code builds another tree)\n",
                    location.code_root.display()
                ));
            }
            print_stdout(&text)
        }
    }
}

/// The hybrid-search index, published with each generation a build makes.
pub fn search_companion(call: &Call) -> Arc<dyn crate::build::pipeline::Companion> {
    Arc::new(IndexCompanion {
        embed: call.config.embed.clone(),
    })
}

/// The extraction progress bar, drawn on stderr when it is a terminal.
#[derive(Debug)]
struct Bar(indicatif::ProgressBar);

impl Bar {
    fn on_terminal() -> Option<Arc<dyn Progress>> {
        use std::io::IsTerminal;
        std::io::stderr()
            .is_terminal()
            .then(|| Arc::new(Bar(indicatif::ProgressBar::hidden())) as Arc<dyn Progress>)
    }
}

impl Progress for Bar {
    fn start(&self, stage: &str, total: usize) {
        self.0
            .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        self.0.set_length(total as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {stage} {{pos}}/{{len}} files {{wide_bar}} {{elapsed}}"
        )) {
            self.0.set_style(style);
        }
    }

    fn advance(&self, done: usize) {
        self.0.inc(done as u64);
    }

    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

fn render(r: &BuildReport) -> String {
    let mut out = String::new();
    let verb = if r.unchanged {
        "unchanged"
    } else {
        "published"
    };
    out.push_str(&format!(
        "{verb} generation {}\n  files {} (parsed {}, cached {}), symbols {}, edges {}, frontier {}, graph {} bytes\n  {:.1} ms (inventory {:.1}, extract {:.1}, resolve {:.1}, compile {:.1}, publish {:.1})\n",
        r.fingerprint,
        r.files,
        r.parsed,
        r.cached,
        r.symbols,
        r.edges,
        r.frontier,
        r.graph_bytes,
        r.timings_ms.total,
        r.timings_ms.inventory,
        r.timings_ms.extract,
        r.timings_ms.resolve,
        r.timings_ms.compile,
        r.timings_ms.publish,
    ));
    for p in &r.partial {
        // A truncated file has no syntax error to count: the limit it hit is its reason.
        match &p.limit {
            Some(limit) => out.push_str(&format!("  {} {}: {limit}\n", p.status, p.path)),
            None => out.push_str(&format!(
                "  {} {} ({} errors, lines {:?})\n",
                p.status, p.path, p.errors, p.lines
            )),
        }
    }
    for s in &r.skipped {
        out.push_str(&format!(
            "  skipped {} [{}] {}\n",
            s.path, s.reason, s.detail
        ));
    }
    if let Some(t) = &r.truncated {
        out.push_str(&format!(
            "  inventory.truncated: {} hit, kept {}/{} files ({}/{} bytes)\n",
            t.limit, t.files_kept, t.files_seen, t.bytes_kept, t.bytes_seen
        ));
    }
    out
}
