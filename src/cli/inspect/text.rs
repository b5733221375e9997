//! Human renderings of the inspection answers: the same data as the JSON, one line per
//! item, with the next page's argv as copy-pasteable shell.

use std::fmt::Write;

use crate::query::context::text::shell_quote;
use crate::query::inspect::Truncated;
use crate::query::inspect::file_api::FileApiOutput;
use crate::query::inspect::find_all::FindAllOutput;
use crate::query::inspect::freshness::FreshnessOutput;
use crate::query::inspect::repo_map::{ModuleRelation, RepoMapOutput};
use crate::query::inspect::trace_calls::{FrontierOut, TraceCallsOutput};

/// `… N more: $ atlas …` when the page was cut.
fn more(out: &mut String, truncated: &Option<Truncated>) {
    if let Some(t) = truncated {
        let argv: Vec<String> = t.next.iter().map(|a| shell_quote(a)).collect();
        let _ = writeln!(
            out,
            "… {} more ({}): $ {}",
            t.omitted,
            t.reason,
            argv.join(" ")
        );
    }
}

pub fn find_all(o: &FindAllOutput) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "literal {}{}: {} hit(s) in {} of {} file(s) searched{}{}",
        shell_quote(&o.literal),
        if o.case_insensitive {
            " (any case)"
        } else {
            ""
        },
        o.hits_total,
        o.files_matched,
        o.files_searched,
        if o.files_unreadable > 0 {
            format!(", {} unreadable", o.files_unreadable)
        } else {
            String::new()
        },
        if o.files_stale > 0 {
            format!(", {} changed since the build", o.files_stale)
        } else {
            String::new()
        },
    );
    for hit in &o.hits {
        let place = match (&hit.enclosing, hit.stale) {
            (_, true) => " [stale]".to_string(),
            (Some(label), false) => format!(" [in {label}]"),
            (None, false) => String::new(),
        };
        let _ = writeln!(
            out,
            "{}:{}:{}{place}  {}{}",
            hit.path,
            hit.line,
            hit.column,
            hit.text.trim(),
            if hit.text_clipped { " …" } else { "" }
        );
    }
    more(&mut out, &o.truncated);
    out
}

pub fn file_api(o: &FileApiOutput) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}, {}, {} lines, {} bytes){}: {} definition(s)",
        o.path,
        o.language,
        o.class,
        o.lines,
        o.bytes,
        if o.stale {
            " — changed since the build; outline without text"
        } else {
            ""
        },
        o.definitions_total
    );
    for d in &o.definitions {
        let visibility = if d.visibility == "public" {
            String::new()
        } else {
            format!(", {}", d.visibility)
        };
        let _ = writeln!(
            out,
            "  L{}-{} {} ({}{visibility})  {}",
            d.lines[0],
            d.lines[1],
            d.symbol,
            d.kind,
            d.signature.as_deref().unwrap_or("")
        );
        if let Some(doc) = &d.doc {
            let _ = writeln!(out, "      {doc}");
        }
    }
    more(&mut out, &o.truncated);
    if let Some(content) = &o.content {
        let _ = writeln!(out, "── {}\n{content}", o.path);
    } else if let Some(omitted) = &o.content_omitted {
        let expand = omitted.expand.as_ref().map_or(String::new(), |argv| {
            let argv: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
            format!(": $ {}", argv.join(" "))
        });
        let _ = writeln!(
            out,
            "text not shown ({}, {} bytes){expand}",
            omitted.reason, omitted.bytes
        );
    }
    out
}

fn relations(list: &[ModuleRelation]) -> String {
    list.iter()
        .map(|r| format!("{} {} ×{}", r.module, r.kind, r.count))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn repo_map(o: &RepoMapOutput) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "repository map ({} profile): {} of {} module(s), {} file(s)",
        o.profile, o.modules_total, o.modules_in_graph, o.files
    );
    for m in &o.modules {
        let indent = "  ".repeat(m.depth.saturating_sub(1));
        let _ = writeln!(
            out,
            "{indent}{}  {} file(s), {} symbol(s)",
            m.module, m.files, m.symbols
        );
        if !m.depends_on.is_empty() {
            let _ = writeln!(out, "{indent}  → {}", relations(&m.depends_on));
        }
        if !m.used_by.is_empty() {
            let _ = writeln!(out, "{indent}  ← {}", relations(&m.used_by));
        }
        if m.relations_omitted > 0 {
            let _ = writeln!(out, "{indent}  (+{} relations)", m.relations_omitted);
        }
        for r in &m.representatives {
            let _ = writeln!(
                out,
                "{indent}  · {} ({}, L{})",
                r.symbol, r.kind, r.lines[0]
            );
        }
    }
    for o in &o.profile_omitted {
        let _ = writeln!(
            out,
            "profile left out {} {} ({})",
            o.count, o.class, o.reason
        );
    }
    more(&mut out, &o.truncated);
    out
}

fn frontier_line(out: &mut String, indent: &str, frontier: &FrontierOut) {
    if frontier.unresolved == 0 {
        return;
    }
    let sites: Vec<String> = frontier
        .sites
        .iter()
        .map(|s| format!("{} @{}", s.name, s.site))
        .collect();
    let _ = writeln!(
        out,
        "{indent}? {} unresolved call site(s): {}",
        frontier.unresolved,
        sites.join(", ")
    );
}

pub fn trace_calls(o: &TraceCallsOutput) -> String {
    let mut out = String::new();
    let r = &o.root;
    let _ = writeln!(
        out,
        "{} ({}, L{}-{}) · {} to depth {} · {} edge(s)",
        r.symbol, r.kind, r.lines[0], r.lines[1], o.direction, o.depth, o.edges_total
    );
    frontier_line(&mut out, "  ", &r.frontier);
    if r.fanout_omitted > 0 {
        let _ = writeln!(out, "  (+{} calls past the fan-out)", r.fanout_omitted);
    }
    for e in &o.edges {
        let indent = "  ".repeat(e.depth as usize);
        let _ = writeln!(
            out,
            "{indent}{} → {}  [{} {} {}] @{}{}{}",
            e.caller,
            e.callee,
            e.resolution,
            e.provenance,
            e.confidence,
            e.sites.join(" @"),
            if e.site_count > e.sites.len() {
                format!(" (+{})", e.site_count - e.sites.len())
            } else {
                String::new()
            },
            e.revisit
                .map_or(String::new(), |r| format!(" ({r}, not followed)")),
        );
        if let Some(frontier) = &e.frontier {
            frontier_line(&mut out, &format!("{indent}  "), frontier);
        }
        if e.beyond_depth + e.fanout_omitted > 0 {
            let _ = writeln!(
                out,
                "{indent}  (+{} beyond depth, +{} past the fan-out)",
                e.beyond_depth, e.fanout_omitted
            );
        }
    }
    if o.unexpanded > 0 {
        let _ = writeln!(
            out,
            "{} node(s) not expanded: the tree reached its bound",
            o.unexpanded
        );
    }
    more(&mut out, &o.truncated);
    out
}

pub fn check_freshness(o: &FreshnessOutput) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} modified, {} added, {} deleted since {}{}",
        if o.rebuild_needed {
            "rebuild needed"
        } else {
            "fresh"
        },
        o.modified,
        o.added,
        o.deleted,
        &o.graph_fingerprint[..12.min(o.graph_fingerprint.len())],
        if o.builder_changed {
            " (built by another atlas)"
        } else {
            ""
        }
    );
    for f in &o.files {
        let _ = writeln!(out, "  {:<8} {}", f.change, f.path);
    }
    more(&mut out, &o.truncated);
    out
}
