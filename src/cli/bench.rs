//! `fleet bench`: prints benchmark tables (see `crate::bench`).

use super::context::Context;
use super::error::CliError;

#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Durable claims per second against a SQLite baseline.
    Claim,
}

pub fn cmd_bench(_ctx: &Context, _command: BenchCommand) -> Result<(), CliError> {
    Err(CliError::new("not built yet"))
}
