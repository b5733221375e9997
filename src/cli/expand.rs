//! `atlas expand`: the source behind search hits' refs.

use crate::build::store::Store;
use crate::error::AtlasError;
use crate::query::expand::{self, ExpandOutput};

use super::call::{Answer, Call};
use super::output::{Format, pretty_json, print_stdout};

#[derive(clap::Args, Debug)]
pub struct ExpandArgs {
    /// Refs as returned by `atlas search` (`path#Lstart-Lend@hash`).
    #[arg(required = true)]
    pub refs: Vec<String>,
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

fn expanded(call: &Call, args: &ExpandArgs) -> Result<ExpandOutput, AtlasError> {
    let location = call.location()?;
    let store = Store::new(&location.graph_dir);
    let (_, graph) = store.open_current()?;
    let root = location.read_root(&store)?;
    expand::expand(&graph, &root, &args.refs, call.config.expand_outline)
}

/// The JSON document `--format json` prints (without its final newline).
pub fn json(call: &Call, args: &ExpandArgs) -> Result<String, AtlasError> {
    let text = pretty_json(&expanded(call, args)?)?;
    Ok(text.trim_end().to_string())
}

pub fn run(call: &Call, args: &ExpandArgs) -> Result<(), AtlasError> {
    let output = expanded(call, args)?;
    let text = match args.format {
        Format::Json => pretty_json(&output)?,
        Format::Text => render(&output),
    };
    print_stdout(&text)?;
    call.observe(Answer {
        tool: "expand",
        format: args.format,
        profile: None,
        outcome: "ok",
        output: &text,
        items: output.items.len(),
    });
    Ok(())
}

fn render(output: &ExpandOutput) -> String {
    let mut text = String::new();
    for item in &output.items {
        text.push_str(&format!(
            "── {} (chars {}..{}){}\n{}\n",
            item.reference,
            item.content_range[0],
            item.content_range[1],
            if item.content_complete { "" } else { " …" },
            item.content
        ));
        if let Some(next) = &item.next_ref {
            text.push_str(&format!("   next: atlas expand '{next}'\n"));
        }
        for entry in item.outline.iter().flatten() {
            text.push_str(&format!(
                "   {} {} L{}-{}  {}\n",
                entry.kind, entry.symbol, entry.lines[0], entry.lines[1], entry.reference
            ));
        }
    }
    text
}
