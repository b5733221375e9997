//! Human rendering of a context: the same data as the JSON, laid out for reading. The
//! spine is an indented call chain; omissions carry their argv as copy-pasteable shell.

use std::fmt::Write;

use super::project::EvidenceItem;
use super::{ContextOutput, Receipt};
use crate::query::profile::EvidenceClass;

/// Quotes one argument for a POSIX shell.
pub fn shell_quote(arg: &str) -> String {
    let safe = !arg.is_empty()
        && arg.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '@' | '+')
        });
    if safe {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// ` @path:line` of a relation's site, or nothing.
fn site_suffix(relation: &super::project::RelationOut) -> String {
    relation
        .site
        .as_ref()
        .map(|s| format!(" @{}:{}", s.path, s.line))
        .unwrap_or_default()
}

pub fn render(output: &ContextOutput) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "context {} · profile {} · graph {}{}",
        shell_quote(&output.query),
        output.profile,
        &output.graph.fingerprint[..12.min(output.graph.fingerprint.len())],
        if output.graph.refreshed {
            " (refreshed)"
        } else {
            ""
        }
    );
    for anchor in &output.intent.anchors {
        let how = match (anchor.tier, anchor.arms.is_empty()) {
            (Some(tier), _) if anchor.anchor_reason == "ranked" => format!("{tier}, best-ranked"),
            (Some(tier), _) => tier.to_string(),
            (None, false) => format!("search: {}", anchor.arms.join("+")),
            (None, true) => anchor.anchor_reason.to_string(),
        };
        let _ = writeln!(
            out,
            "anchor  {} → {} {} ({how})",
            anchor.term, anchor.kind, anchor.symbol
        );
    }
    if let Some(alternative) = &output.intent.alternative {
        let _ = writeln!(
            out,
            "alternative chain from {} {}",
            alternative.kind, alternative.symbol
        );
    }
    if !output.intent.relations.is_empty() {
        let _ = writeln!(out, "relations {}", output.intent.relations.join(", "));
    }
    render_spine(&mut out, output);
    let _ = writeln!(out, "\nevidence ({})", output.evidence.len());
    for item in &output.evidence {
        render_item(&mut out, item);
    }
    if !output.omissions.is_empty() {
        let _ = writeln!(out, "\nomitted");
        for o in &output.omissions {
            let _ = writeln!(
                out,
                "  {} × {} ({}); top {} score {}",
                o.count,
                o.class,
                o.reason,
                o.top.symbol.as_deref().unwrap_or(&o.top.id),
                o.top.score
            );
            let argv: Vec<String> = o.argv.iter().map(|a| shell_quote(a)).collect();
            let _ = writeln!(out, "    $ {}", argv.join(" "));
        }
    }
    for d in &output.diagnostics {
        let path = d
            .path
            .as_ref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        let _ = writeln!(out, "! {}{path}: {}", d.code, d.message);
        for choice in &d.candidates {
            let argv: Vec<String> = choice.argv.iter().map(|a| shell_quote(a)).collect();
            let _ = writeln!(out, "    {}: $ {}", choice.symbol, argv.join(" "));
        }
    }
    render_receipt(&mut out, &output.receipt);
    out
}

/// The spine, one step a line, indented by depth, each with its edge and why.
fn render_spine(out: &mut String, output: &ContextOutput) {
    if !output.spine.is_empty() {
        let _ = writeln!(out, "\nspine");
        for (depth, step) in output.spine.iter().enumerate() {
            let indent = "  ".repeat(depth + 1);
            match &step.via {
                Some(via) => {
                    let site = site_suffix(via);
                    let dispatch = if via.dispatch { " dispatch" } else { "" };
                    let _ = writeln!(
                        out,
                        "{indent}└─ {} [{} {}/{} {}{site}{dispatch}] — {}",
                        step.symbol,
                        via.kind,
                        via.provenance,
                        via.resolution,
                        via.confidence,
                        step.why
                    );
                }
                None => {
                    let _ = writeln!(out, "{indent}{} — {}", step.symbol, step.why);
                }
            }
        }
    }
}

/// One evidence item: its line, relation, sites, statement, diagnostics and source.
fn render_item(out: &mut String, item: &EvidenceItem) {
    let lines = item
        .lines
        .map(|[a, b]| format!(" L{a}-{b}"))
        .unwrap_or_default();
    let label = item
        .symbol
        .clone()
        .or_else(|| item.statement.as_ref().map(|s| s.text.clone()))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  [{}] {label}{lines} · score {}{} · {}",
        item.class,
        item.score,
        if item.required { " · required" } else { "" },
        item.projection
    );
    if let Some(why) = item
        .why
        .as_ref()
        .filter(|_| item.class == EvidenceClass::Alternative)
    {
        let _ = writeln!(out, "      why: {why}");
    }
    if let Some(relation) = &item.relation {
        let site = site_suffix(relation);
        let _ = writeln!(
            out,
            "      {} {} → {} ({}/{} {}){site}",
            relation.kind,
            relation.from,
            relation.to,
            relation.provenance,
            relation.resolution,
            relation.confidence
        );
    }
    if let Some(count) = item.site_count {
        let shown: Vec<String> = item
            .sites
            .iter()
            .map(|s| format!("{}:{}", s.path, s.line))
            .collect();
        let more = count.saturating_sub(shown.len());
        let _ = writeln!(
            out,
            "      {count} sites: {}{}",
            shown.join(", "),
            if more > 0 {
                format!(", … {more} more")
            } else {
                String::new()
            }
        );
    }
    if let Some(statement) = item.statement.as_ref().filter(|_| item.symbol.is_some()) {
        let _ = writeln!(out, "      {}: {}", statement.code, statement.text);
    }
    for diagnostic in &item.diagnostics {
        let _ = writeln!(out, "      ! {diagnostic}");
    }
    match (&item.source, &item.signature) {
        (Some(source), _) => {
            for (offset, line) in source.text.lines().enumerate() {
                let _ = writeln!(
                    out,
                    "      {:>5} │ {line}",
                    source.lines[0] as usize + offset
                );
            }
            if source.clipped {
                let _ = writeln!(
                    out,
                    "            │ … (clipped at {} lines)",
                    source.lines[1] - source.lines[0] + 1
                );
            }
        }
        (None, Some(signature)) => {
            let _ = writeln!(
                out,
                "      sig │ {}",
                signature.lines().next().unwrap_or("")
            );
        }
        _ => {}
    }
}

/// The receipt line: retrieval against projection, bytes against the ceiling.
fn render_receipt(out: &mut String, r: &Receipt) {
    let p = &r.projection;
    let _ = writeln!(
        out,
        "\nreceipt: {} retrieved of {} (cap {}), {} above relevance {}, {} retained, {} below threshold, {} byte-omitted, {} skeletonized, {} policy; {} bytes ≤ {}; load {}{}",
        r.retrieval.returned,
        r.retrieval.eligible,
        r.retrieval.hard_cap,
        p.above_relevance,
        r.limits.min_score,
        p.retained,
        p.below_threshold,
        p.byte_omitted,
        p.skeletonized,
        p.policy_skeletonized,
        r.serialized_bytes,
        r.limits.max_bytes,
        r.load_profile,
        if r.read_back_required {
            "; read-back required"
        } else {
            ""
        }
    );
}

#[cfg(test)]
mod tests {
    use super::shell_quote;

    #[test]
    fn shell_quoting() {
        assert_eq!(shell_quote("--profile"), "--profile");
        assert_eq!(shell_quote("compile calls"), "'compile calls'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
