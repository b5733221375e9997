//! `atlas status`: what the committed graph holds and how far it can be trusted —
//! coverage (R-INV-5), staleness, edges by kind × provenance × resolution, the frontier.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;

use crate::build::manifest::TruncationReport;
use crate::build::session::{Staleness, staleness};
use crate::build::store::{Location, Store};
use crate::error::Result;
use crate::graph::codes::FileClass;

use super::call::Call;
use super::output::{Format, pretty_json, print_json, print_stdout};
use crate::graph::codes::{EdgeKind, Provenance, Resolution};
use crate::syntax::facts::{ParseStatus, SymbolKind};
use crate::syntax::lang::Language;

#[derive(Debug, Serialize)]
pub struct StatusReport {
    pub graph_dir: PathBuf,
    pub graph_dir_rule: &'static str,
    /// How the repository was found: a flag, the environment, an ascending search, an
    /// editor's environment, the MCP client's roots, or the working directory.
    pub index_resolution: &'static str,
    pub code_root: PathBuf,
    pub fingerprint: String,
    /// The format of the committed generation as read (an older one reads until rebuilt).
    pub format_version: u32,
    /// Files the graph is read from: a format-4 root's segments (1 for formats 1–3).
    pub segments: usize,
    pub graph_bytes: usize,
    pub files_by_language: BTreeMap<String, usize>,
    pub files_by_class: BTreeMap<String, usize>,
    pub symbols_by_kind: BTreeMap<String, usize>,
    /// `kind` → `provenance` → `resolution` → count.
    pub edges: BTreeMap<String, BTreeMap<String, BTreeMap<String, usize>>>,
    pub frontier: FrontierStatus,
    pub partial_files: Vec<PartialStatus>,
    pub coverage: Coverage,
    /// SCIP coverage (documents ingested / stale / outside the inventory, precise edges)
    /// and indexer runs, when the generation ingested SCIP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scip: Option<serde_json::Value>,
    pub staleness: Staleness,
    /// Observability events on disk and in this process (R-OBS-3).
    pub observability: crate::cli::observe::Status,
    /// The watcher of this graph (`atlas watch`, `ATLAS_WATCH=1`), when one ran: its
    /// state, backend and the last build's outcome and latency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<crate::build::watch::WatchStatus>,
    /// The Jev judge: configuration, problems, and what it spent since the ledger started.
    pub relevance: crate::query::search::relevance::RelevanceStatus,
    /// Why the committed generation's manifest could not be read, when it could not: its
    /// reports (skipped files, extraction limits, SCIP runs) are then missing here.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifest_error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct FrontierStatus {
    pub entries: usize,
    /// Entries some definition in the graph could satisfy (ambiguous names).
    pub ambiguous: usize,
    /// Type-use and read references to names defined nowhere in the graph.
    pub external_references: u64,
}

#[derive(Debug, Serialize)]
pub struct PartialStatus {
    pub path: String,
    /// `partial` (syntax errors) or `truncated` (an extraction limit was hit).
    pub status: &'static str,
    pub errors: u32,
}

#[derive(Debug, Serialize)]
pub struct Coverage {
    pub files_inventoried: usize,
    pub files_extracted: usize,
    /// Files whose syntax errors the parser recovered from (`partial`).
    pub files_with_parse_errors: usize,
    /// Files whose extraction an extraction limit cut short (`truncated`), counted apart
    /// from syntax errors.
    pub files_truncated: usize,
    pub files_text_only: usize,
    pub files_skipped: usize,
    pub skipped_by_reason: BTreeMap<String, usize>,
    pub unsupported_by_extension: BTreeMap<String, u64>,
    pub truncated: Option<TruncationReport>,
}

/// What the committed graph holds; `observing`: whether this process records events.
pub fn status(
    location: &Location,
    index_resolution: &'static str,
    config: &crate::config::Config,
) -> Result<StatusReport> {
    let observing = config.observability;
    let store = Store::new(&location.graph_dir);
    let (fingerprint, graph) = store.open_current()?;
    // A damaged or missing manifest loses the build's reports (skipped files, limits, SCIP
    // runs), not the graph: said, and rewritten by the next build.
    let (manifest, manifest_error) = match store.read_manifest(&fingerprint) {
        Ok(manifest) => (Some(manifest), None),
        Err(error) => (None, Some(error.to_string())),
    };
    // Status reports a vanished root (every file then reads as changed) rather than
    // refusing: it is where a user looks to learn why reads refuse.
    let (code_root, root_gone) = match location.read_root(&store) {
        Err(crate::error::AtlasError::CodeRootGone(root)) => (root, true),
        root => (root?, false),
    };

    let mut files_by_language = BTreeMap::new();
    let mut files_by_class = BTreeMap::new();
    let mut extracted = 0;
    let mut partial_files = Vec::new();
    for file in graph.files().filter_map(|f| graph.file(f)) {
        let language = Language::from_code(file.language).map_or("text", Language::as_str);
        *files_by_language.entry(language.to_string()).or_insert(0) += 1;
        let class = FileClass::from_code(file.class).map_or("?", FileClass::as_str);
        *files_by_class.entry(class.to_string()).or_insert(0) += 1;
        if file.language != 255 {
            extracted += 1;
        }
        if file.parse_status != 0 {
            partial_files.push(PartialStatus {
                path: graph.str(file.path()).to_string(),
                status: ParseStatus::from_code(file.parse_status)
                    .map_or("partial", ParseStatus::as_str),
                errors: file.error_count.to_native(),
            });
        }
    }
    let mut symbols_by_kind = BTreeMap::new();
    for id in graph.nodes() {
        let kind = graph.kind(id);
        if !matches!(kind, SymbolKind::Module | SymbolKind::File) {
            *symbols_by_kind
                .entry(kind.as_str().to_string())
                .or_insert(0) += 1;
        }
    }
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeMap<String, usize>>> = BTreeMap::new();
    for edge in graph.nodes().flat_map(|n| graph.out_edges(n)) {
        let kind = EdgeKind::from_code(edge.kind).map_or("?", EdgeKind::as_str);
        let provenance = Provenance::from_code(edge.provenance).map_or("?", Provenance::as_str);
        let resolution = Resolution::from_code(edge.resolution).map_or("?", Resolution::as_str);
        *edges
            .entry(kind.into())
            .or_default()
            .entry(provenance.into())
            .or_default()
            .entry(resolution.into())
            .or_default() += 1;
    }
    let skipped = manifest
        .as_ref()
        .map(|m| m.skipped.clone())
        .unwrap_or_default();
    let mut skipped_by_reason = BTreeMap::new();
    for s in &skipped {
        *skipped_by_reason.entry(s.reason.clone()).or_insert(0) += 1;
    }
    let unsupported = manifest
        .as_ref()
        .map(|m| {
            m.unsupported
                .iter()
                .map(|(k, v)| (k.clone(), *v as u64))
                .collect()
        })
        .unwrap_or_default();
    let coverage = Coverage {
        files_inventoried: graph.file_count() + skipped.len(),
        files_extracted: extracted,
        files_with_parse_errors: partial_files
            .iter()
            .filter(|p| p.status == ParseStatus::Partial.as_str())
            .count(),
        files_truncated: partial_files
            .iter()
            .filter(|p| p.status == ParseStatus::Truncated.as_str())
            .count(),
        files_text_only: graph.file_count() - extracted,
        files_skipped: skipped.len(),
        skipped_by_reason,
        unsupported_by_extension: unsupported,
        truncated: manifest.as_ref().and_then(|m| m.truncated.clone()),
    };
    let frontier = FrontierStatus {
        entries: graph.frontier_count(),
        ambiguous: graph
            .frontier_entries()
            .filter(|(_, f)| f.candidates.to_native() > 0)
            .count(),
        external_references: graph.stats().external_references.to_native(),
    };
    let skipped_paths: std::collections::HashSet<String> =
        skipped.iter().map(|s| s.path.clone()).collect();
    // Status reads the stamp cache but never writes it.
    let cache = crate::build::session::StampCache {
        graph_dir: &location.graph_dir,
        record: false,
    };
    let staleness = if root_gone {
        crate::build::session::staleness_of_gone_root(&graph, manifest.as_ref())
    } else {
        staleness(
            &graph,
            manifest.as_ref(),
            &code_root,
            &skipped_paths,
            Some(cache),
        )?
    };
    Ok(StatusReport {
        graph_dir: location.graph_dir.clone(),
        graph_dir_rule: location.rule.as_str(),
        index_resolution,
        code_root,
        fingerprint,
        format_version: graph.format_version(),
        segments: graph.segment_count(),
        graph_bytes: graph.byte_len(),
        files_by_language,
        files_by_class,
        symbols_by_kind,
        edges,
        frontier,
        partial_files,
        coverage,
        scip: manifest.as_ref().and_then(|m| {
            m.scip
                .as_ref()
                .map(|scip| serde_json::json!({ "merge": scip, "runs": m.scip_runs }))
        }),
        staleness,
        observability: crate::cli::observe::status(&location.graph_dir, observing),
        watch: crate::build::watch::WatchStatus::read(&location.graph_dir),
        manifest_error,
        relevance: crate::query::search::relevance::status(
            &config.search.relevance,
            config.search.rerank,
            &location.graph_dir,
        ),
    })
}

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// The status of the graph `call` locates.
fn report(call: &Call) -> Result<StatusReport> {
    let location = call.location()?;
    status(&location, call.index_resolution(&location), &call.config)
}

/// The JSON document `--format json` prints (without its final newline).
pub fn json(call: &Call) -> Result<String> {
    Ok(pretty_json(&report(call)?)?.trim_end().to_string())
}

/// `atlas status`.
pub fn run(call: &Call, args: &StatusArgs) -> Result<()> {
    let report = report(call)?;
    match args.format {
        Format::Json => print_json(&report),
        Format::Text => print_stdout(&render(&report)),
    }
}

fn render(s: &StatusReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "graph dir   {} ({})\n",
        s.graph_dir.display(),
        s.graph_dir_rule
    ));
    out.push_str(&format!("code root   {}\n", s.code_root.display()));
    out.push_str(&format!(
        "fingerprint {} (format {}, {} segments, {} bytes)\n",
        s.fingerprint, s.format_version, s.segments, s.graph_bytes
    ));
    if let Some(error) = &s.manifest_error {
        out.push_str(&format!(
            "manifest    unreadable: {error}; skipped files, extraction limits and SCIP runs are not shown (the next `atlas build` rewrites it)\n"
        ));
    }
    let join = |m: &std::collections::BTreeMap<String, usize>| {
        m.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    out.push_str(&format!("languages   {}\n", join(&s.files_by_language)));
    out.push_str(&format!("classes     {}\n", join(&s.files_by_class)));
    out.push_str(&format!("symbols     {}\n", join(&s.symbols_by_kind)));
    out.push_str("edges\n");
    for (kind, by_provenance) in &s.edges {
        for (provenance, by_resolution) in by_provenance {
            out.push_str(&format!(
                "  {kind:<11} {provenance:<12} {}\n",
                join(by_resolution)
            ));
        }
    }
    out.push_str(&format!(
        "frontier    {} entries ({} ambiguous), {} external references\n",
        s.frontier.entries, s.frontier.ambiguous, s.frontier.external_references
    ));
    let c = &s.coverage;
    out.push_str(&format!(
        "coverage    {} inventoried: {} extracted ({} with parse errors, {} cut by an extraction limit), {} text only, {} skipped\n",
        c.files_inventoried,
        c.files_extracted,
        c.files_with_parse_errors,
        c.files_truncated,
        c.files_text_only,
        c.files_skipped
    ));
    if !c.unsupported_by_extension.is_empty() {
        let list: Vec<String> = c
            .unsupported_by_extension
            .iter()
            .map(|(k, v)| format!(".{k} {v}"))
            .collect();
        out.push_str(&format!("unsupported {}\n", list.join(", ")));
    }
    if let Some(t) = &c.truncated {
        let t = serde_json::to_value(t).unwrap_or_default();
        out.push_str(&format!("truncated   {t}\n"));
    }
    if let Some(scip) = &s.scip {
        let stats = &scip["merge"]["stats"];
        out.push_str(&format!(
            "scip        {} documents ingested, {} stale, {} outside the inventory; {} precise edges, {} heuristic edges replaced, {} symbols added\n",
            stats["documents_ingested"], stats["documents_stale"], stats["documents_outside_inventory"],
            scip["merge"]["precise_edges"], scip["merge"]["heuristic_edges_replaced"], scip["merge"]["symbols_added"]
        ));
    }
    for p in &s.partial_files {
        // As the JSON says it: syntax errors, or an extraction limit hit.
        let why = match p.status {
            "partial" => format!("{} syntax errors", p.errors),
            _ => "an extraction limit was hit".to_string(),
        };
        out.push_str(&format!("{:<11} {} ({why})\n", p.status, p.path));
    }
    let st = &s.staleness;
    if st.builder_changed {
        out.push_str("stale       built by another atlas version; the next read rebuilds it\n");
    }
    if st.changed + st.added + st.removed > 0 {
        out.push_str(&format!(
            "stale       {} changed, {} added, {} removed since this generation: {}\n",
            st.changed,
            st.added,
            st.removed,
            st.examples.join(", ")
        ));
    } else if !st.stale {
        out.push_str("fresh       the working tree matches this generation\n");
    }
    let o = &s.observability;
    if o.enabled || o.events > 0 {
        out.push_str(&format!(
            "observed    {} events in {} files ({} bytes), {} dropped{}\n",
            o.events,
            o.files,
            o.bytes,
            o.dropped_events,
            if o.enabled {
                ""
            } else {
                " (ATLAS_OBSERVABILITY is off)"
            }
        ));
    }
    if let Some(w) = &s.watch {
        out.push_str(&format!(
            "watch       {} ({}{}), {} builds: {} published, {} unchanged, {} failed",
            w.state,
            w.backend,
            w.poll_reason
                .as_ref()
                .map_or(String::new(), |r| format!(": {r}")),
            w.builds,
            w.published,
            w.unchanged,
            w.failed
        ));
        if let Some(last) = &w.last_build {
            out.push_str(&format!(
                "; last {} in {:.1} ms{}",
                last.outcome,
                last.latency_ms,
                last.code
                    .as_deref()
                    .map_or(String::new(), |c| format!(" error[{c}]"))
            ));
        }
        out.push('\n');
    }
    let r = &s.relevance;
    if r.requested || r.ledger.is_some() {
        out.push_str(&format!(
            "relevance   {} ({}, {}, cut {}, gate {}){}\n",
            if r.enabled { "on" } else { "off" },
            r.model.as_deref().unwrap_or("invalid model"),
            r.rubric.value,
            if r.cut.enabled { r.cut.policy } else { "off" },
            r.gate.value,
            if r.problems.is_empty() {
                String::new()
            } else {
                format!("; problems: {}", r.problems.join(", "))
            }
        ));
        if let Some(l) = &r.ledger {
            out.push_str(&format!(
                "            {} searches, {} calls, {} timeouts, {} invalid batches, {} HTTP errors, {} skipped, {} replayed; ${:.6}{}\n",
                l.searches,
                l.calls,
                l.timeouts,
                l.invalid_batches,
                l.http_errors,
                l.skipped,
                l.replayed,
                l.cost_usd,
                if l.calls_without_cost > 0 {
                    format!(" (+{} calls of unknown cost)", l.calls_without_cost)
                } else {
                    String::new()
                }
            ));
        }
    }
    out
}
