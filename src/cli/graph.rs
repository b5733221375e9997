//! `atlas graph`: inspect the committed graph.

use clap::Subcommand;

use crate::build::store::Store;
use crate::error::AtlasError;
use crate::graph::dump;

use super::call::Call;
use super::output::print_stdout;

#[derive(Subcommand, Debug)]
pub enum GraphCommand {
    /// Print a stable, sorted text rendering of the graph.
    #[command(after_help = "Example:\n  atlas graph dump --code fixtures/rust")]
    Dump,
}

pub fn run(call: &Call, command: &GraphCommand) -> Result<(), AtlasError> {
    match command {
        GraphCommand::Dump => {
            let location = call.location()?;
            let (_, graph) = Store::new(&location.graph_dir).open_current()?;
            print_stdout(&dump::dump(&graph))
        }
    }
}
