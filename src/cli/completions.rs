//! `fleet completions <shell>`: the shell completion script for fleet's commands and flags,
//! printed on stdout to be sourced or saved where the shell looks (see `fleet completions
//! --help` for where each shell expects it).

use clap::CommandFactory;

use super::error::CliError;
use super::{Cli, EagerCommand};

#[derive(Debug, clap::Args)]
#[command(after_help = "Install, for example:\n  \
    bash:  fleet completions bash > ~/.local/share/bash-completion/completions/fleet\n  \
    zsh:   fleet completions zsh > \"${fpath[1]}/_fleet\"\n  \
    fish:  fleet completions fish > ~/.config/fish/completions/fleet.fish\n  \
    PowerShell: fleet completions powershell | Out-String | Invoke-Expression")]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn cmd_completions(args: CompletionsArgs) -> Result<(), CliError> {
    let mut command = Cli::<EagerCommand>::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "fleet", &mut script);
    super::output::write_stdout(String::from_utf8_lossy(&script).trim_end());
    Ok(())
}
