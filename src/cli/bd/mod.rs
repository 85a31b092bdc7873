//! The `bd` personality: fleet answering as the beads CLI (spec/beads.md §7–8).
//!
//! It runs when the binary is invoked under the name `bd` (a link made by `fleet link-bd`) and
//! as `fleet bd …`. The command tree, flags, aliases, legacy human output, `--json` shapes and
//! exit codes follow beads, so agents' habits (`bd ready`, `bd update X --claim`,
//! `bd close X --reason …`) keep working. Every command reuses the store transactions of the
//! fleet commands (`cli::issue`, `cli::dep`, …) and only renders differently; one file per
//! command group, as in `cli/`.
//!
//! Differences from beads are deliberate and few: the store is fleet's redb file
//! (`.beads/beads.db`), there is no daemon and no Dolt (`bd sync` and `bd dolt push|pull`
//! run `fleet sync` once a git remote is configured, and otherwise say there is nothing to
//! sync).

mod comment;
mod compat;
mod config;
mod context;
mod create;
mod dep;
mod filter;
mod guide;
mod hooks;
mod init;
mod issue;
mod label;
mod link;
mod lint;
mod memory;
mod query;
mod query_lang;
mod rename;
mod setup;
mod shorthand;
mod shown;
mod sql;
mod sync;
mod text;
mod transfer;
mod workflow;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use link::{LinkArgs, cmd_link_bd};

use context::BdContext;

use super::CliError;
use super::context::Personality;
use super::output::{Mode, write_stderr};
use super::parse;

/// The beads release whose CLI contract this personality follows.
pub const BD_COMPAT_VERSION: &str = "1.0.5";

const ROOT_HELP: &str = "\
{about-with-newline}
Usage:
  bd [flags]
  bd [command]

Available Commands:
{subcommands}

Flags:
{options}

Use \"bd [command] --help\" for more information about a command.
";

const COMMAND_HELP: &str = "\
{about-with-newline}
Usage:
  {usage}

{all-args}{after-help}
";

/// Issues chained together with dependencies, tracked by an agent-friendly command line
/// (fleet's native beads).
#[derive(Debug, Parser)]
#[command(
    name = "bd",
    bin_name = "bd",
    disable_version_flag = true,
    max_term_width = 100,
    help_template = ROOT_HELP,
    subcommand_help_heading = "Available Commands"
)]
pub struct BdCli<Commands: Subcommand = BdCommand> {
    #[command(flatten)]
    pub global: BdGlobal,
    #[command(subcommand)]
    pub command: Option<Commands>,
}

/// Flags every bd command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct BdGlobal {
    /// Output in JSON format (`--json=false` turns it off again).
    #[arg(
        long,
        global = true,
        help_heading = "Global Flags",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        default_value = "false",
        action = clap::ArgAction::Set,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub json: bool,
    /// Actor name for the audit trail (default: $BEADS_ACTOR, $BD_ACTOR, git user.name, $USER).
    #[arg(long, global = true, value_name = "NAME", help_heading = "Global Flags")]
    pub actor: Option<String>,
    /// Database path: a .beads directory or its beads.db (default: $BEADS_DIR, then the
    /// nearest .beads/ upwards).
    #[arg(long, global = true, value_name = "PATH", help_heading = "Global Flags")]
    pub db: Option<PathBuf>,
    /// Read-only mode: refuse every write.
    #[arg(long, global = true, help_heading = "Global Flags")]
    pub readonly: bool,
    /// Sandbox mode (accepted; fleet has no daemon or auto-sync to turn off).
    #[arg(long, global = true, help_heading = "Global Flags")]
    pub sandbox: bool,
    /// Suppress non-essential output.
    #[arg(short, long, global = true, help_heading = "Global Flags")]
    pub quiet: bool,
    /// Verbose output (accepted).
    #[arg(short, long, global = true, help_heading = "Global Flags")]
    pub verbose: bool,
    /// Indent --json output even when stdout is not a terminal (into a pipe it is compact,
    /// one line; also FLEET_JSON_PRETTY=1).
    #[arg(long, global = true, help_heading = "Global Flags")]
    pub pretty: bool,
    /// Short text for ready, list and show: one line per issue, no decoration (also
    /// FLEET_TERSE=1).
    #[arg(long, global = true, help_heading = "Global Flags")]
    pub terse: bool,
    /// Print the version.
    #[arg(long, help_heading = "Global Flags")]
    pub version: bool,
    /// Legacy daemon and sync switches, accepted and ignored (fleet has neither).
    #[arg(long, global = true, hide = true)]
    pub no_daemon: bool,
    #[arg(long, global = true, hide = true)]
    pub no_auto_flush: bool,
    #[arg(long, global = true, hide = true)]
    pub no_auto_import: bool,
    #[arg(long, global = true, hide = true)]
    pub allow_stale: bool,
}

/// What `bd config --help` says about the other config.
const CONFIG_AFTER_HELP: &str = "Settings live in the workspace's store (the config table of \
.beads/beads.db). fleet's runtime settings (the supervisor and its coders, in \
$FLEET_HOME/runtime.toml) are `fleet config`'s.";

parse::deferred_and_eager! {
    /// bd's commands: [`BdCommand`] parses, [`EagerBdCommand`] shows help and usage errors in
    /// bd's layout (see [`parse::deferred_and_eager`]).
    pub enum BdCommand / EagerBdCommand {
    /// Initialize bd in the current directory.
    Init(init::InitArgs),
    /// Create a new issue.
    #[command(visible_alias = "new")]
    Create(create::CreateArgs),
    /// List issues.
    #[command(visible_alias = "ls")]
    List(query::ListArgs),
    /// Show ready work (open, no active blockers).
    Ready(query::ReadyArgs),
    /// Show issue details.
    #[command(visible_alias = "view")]
    Show(issue::ShowArgs),
    /// Update one or more issues.
    Update(issue::UpdateArgs),
    /// Claim an issue: in_progress and assigned to you.
    Claim(issue::ClaimArgs),
    /// Close one or more issues.
    #[command(visible_alias = "done")]
    Close(issue::CloseArgs),
    /// Reopen one or more closed issues.
    Reopen(issue::ReopenArgs),
    /// Assign an issue to someone ("" unassigns).
    Assign(shorthand::AssignArgs),
    /// Append a note to an issue.
    Note(shorthand::NoteArgs),
    /// Set the priority of an issue.
    Priority(shorthand::PriorityArgs),
    /// Add a label to an issue.
    Tag(shorthand::TagArgs),
    /// Link two issues with a dependency (`dep add`; --type, default blocks).
    Link(shorthand::LinkArgs),
    /// List the valid issue types.
    Types,
    /// Delete issues (a preview unless --force).
    Delete(issue::DeleteArgs),
    /// Defer issues: hide them from ready work.
    Defer(issue::DeferArgs),
    /// Undefer issues: back to open.
    Undefer(issue::UndeferArgs),
    /// Manage dependencies.
    Dep(dep::DepArgs),
    /// List the comments of an issue, or add one.
    Comments(comment::CommentsArgs),
    /// Add a comment to an issue.
    Comment(comment::CommentArgs),
    /// Manage labels.
    #[command(subcommand)]
    Label(label::LabelCommand),
    /// Show blocked issues.
    Blocked(query::BlockedArgs),
    /// Show statistics.
    #[command(visible_alias = "status")]
    Stats(query::StatsArgs),
    /// Search issues by text in id, title and description.
    Search(query::SearchArgs),
    /// Count issues.
    Count(query::CountArgs),
    /// Query issues with a small language: "status=open AND priority<2".
    Query(query::QueryArgs),
    /// Run a SELECT over a read-only copy of the queue in beads' tables (issues, labels,
    /// dependencies, comments, wisps…).
    Sql(sql::SqlArgs),
    /// List the children of an issue.
    Children(query::ChildrenArgs),
    /// Show issues not updated for a while.
    Stale(query::StaleArgs),
    /// Epic progress: `bd epic status`.
    #[command(subcommand)]
    Epic(query::EpicCommand),
    /// Check issues for missing template sections.
    Lint(lint::LintArgs),
    /// Manage configuration settings.
    #[command(subcommand, after_help = CONFIG_AFTER_HELP)]
    Config(config::ConfigCommand),
    /// Export issues to JSONL.
    Export(transfer::ExportArgs),
    /// Import issues from JSONL.
    Import(transfer::ImportArgs),
    /// Sync issues with the git remote (`fleet sync`), once one is configured.
    Sync(sync::SyncArgs),
    /// Dolt remote commands, mapped onto `fleet sync`.
    #[command(subcommand)]
    Dolt(sync::DoltCommand),
    /// Git hooks: run the work of one (what installed hooks call), install them, list them.
    #[command(subcommand)]
    Hooks(hooks::HooksCommand),
    /// Run a git hook's work (the form older beads hooks call).
    #[command(hide = true)]
    Hook(hooks::HookArgs),
    /// Messages between agents and people: send, inbox, ack, thread.
    #[command(subcommand)]
    Mail(crate::cli::mail::MailCommand),
    /// Reserve files for your task's work (advisory; --exclusive is enforced by the
    /// pre-commit guard of `bd hooks install`).
    Reserve(crate::cli::reserve::ReserveArgs),
    /// End your task's file reservations (all, or the ids given).
    ReleaseFiles(crate::cli::reserve::ReleaseFilesArgs),
    /// Output the workflow primer for an agent's context.
    Prime(guide::PrimeArgs),
    /// Run a Codex lifecycle hook (what `bd setup codex` installs).
    #[command(hide = true)]
    CodexHook(guide::CodexHookArgs),
    /// Store a persistent memory (shown by `bd prime`).
    Remember(memory::RememberArgs),
    /// List or search persistent memories.
    Memories(memory::MemoriesArgs),
    /// Print one memory in full.
    Recall(memory::KeyArgs),
    /// Remove a persistent memory.
    Forget(memory::KeyArgs),
    /// Quick start guide.
    Quickstart,
    /// Flag an issue for a human decision (`list`, `respond`, `dismiss`); alone, the
    /// essential commands for people.
    Human(workflow::HumanArgs),
    /// Quick capture: create an issue and print only its id.
    Q(workflow::QuickArgs),
    /// Mark an issue as superseded by a newer one (and close it).
    Supersede(workflow::SupersedeArgs),
    /// Open issues that commits already mention (done but never closed).
    Orphans(workflow::OrphansArgs),
    /// The pre-PR checklist (`--check` runs the tracker's part of it).
    Preflight(workflow::PreflightArgs),
    /// Edit an issue field in $EDITOR (for people; agents use `bd update`).
    Edit(workflow::EditArgs),
    /// The AGENTS.md snippet that points agents at bd.
    Onboard,
    /// Set an agent up: session hooks (claude, gemini) or the AGENTS.md snippet.
    Setup(setup::SetupArgs),
    /// Show the active .beads directory.
    Where,
    /// Show database information.
    Info(setup::InfoArgs),
    /// Check the store for damage (`--check=conventions`: lint, stale work, orphans).
    Doctor(setup::DoctorArgs),
    /// Repair a damaged store: fleet's `doctor --salvage` (copies every readable record into a
    /// new store and keeps the damaged file beside it; a healthy store is left as it is).
    Repair,
    /// The same as `repair`.
    Recover,
    /// Bring a workspace's parts up to the current layout (`hooks`: the git hooks).
    #[command(subcommand)]
    Migrate(hooks::MigrateCommand),
    /// Rename the issue prefix of every issue (and every reference to their ids).
    RenamePrefix(rename::RenamePrefixArgs),
    /// Print version information.
    Version,
    }
}

impl BdCommand {
    /// Whether this is one of the short commands agents run, as opposed to one that reads or
    /// writes a whole queue (import, export, sync, git hooks, doctor, renaming the prefix).
    fn is_short_and_light(&self) -> bool {
        !matches!(
            self,
            BdCommand::Import(_)
                | BdCommand::Export(_)
                | BdCommand::Sync(_)
                | BdCommand::Dolt(_)
                | BdCommand::Hooks(_)
                | BdCommand::Hook(_)
                | BdCommand::Doctor(_)
                | BdCommand::Repair
                | BdCommand::Recover
                | BdCommand::Migrate(_)
                | BdCommand::RenamePrefix(_)
        )
    }
}

/// Runs the bd personality on `args` (`args[0]` is the program name). Returns the exit code.
pub fn run(args: Vec<OsString>, personality: Personality) -> i32 {
    let mut matches = match parse::parse(&parse_parts(), &args) {
        Ok(matches) => matches,
        Err(error) => return report_usage_error(&error),
    };
    let cli = match <BdCli>::from_arg_matches_mut(&mut matches) {
        Ok(cli) => cli,
        Err(error) => return report_usage_error(&error),
    };
    if cli.command.as_ref().is_none_or(BdCommand::is_short_and_light) {
        crate::allocator::short_lived();
    }
    let json = cli.global.json;
    match dispatch(cli, personality) {
        Ok(()) => 0,
        Err(error) => error.report(Mode::Bd, json),
    }
}

/// bd's command line for [`parse::parse`]: help and usage errors come from the styled tree,
/// built whole.
fn parse_parts() -> parse::Parts {
    parse::Parts {
        bare_root: BdCli::<parse::NoSubcommands>::command,
        subcommands: BdCommand::augment_subcommands,
        eager: styled_command,
    }
}

/// The clap command with bd's cobra-like help layout on every subcommand: a `Flags:`
/// section (with `-h, --help` in it) and `Global Flags:` below it.
fn styled_command() -> clap::Command {
    fn help_flag(command: clap::Command) -> clap::Command {
        let about = format!("help for {}", command.get_name());
        command.disable_help_flag(true).arg(
            clap::Arg::new("help")
                .short('h')
                .long("help")
                .action(clap::ArgAction::Help)
                .help(about)
                .help_heading("Flags"),
        )
    }
    fn style(command: clap::Command) -> clap::Command {
        let command = command.help_template(COMMAND_HELP).mut_args(|arg| {
            if arg.get_help_heading().is_none() && !arg.is_positional() {
                arg.help_heading("Flags")
            } else {
                arg
            }
        });
        help_flag(command).mut_subcommands(style)
    }
    let root = BdCli::<EagerBdCommand>::command().mut_args(|arg| {
        if arg.get_help_heading().is_none() { arg.help_heading("Flags") } else { arg }
    });
    help_flag(root).mut_subcommands(style)
}

fn report_usage_error(error: &clap::Error) -> i32 {
    use clap::error::ErrorKind;
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            0
        }
        _ => {
            let rendered = error.render().to_string();
            let mut lines = rendered.lines();
            let first = lines.next().unwrap_or_default();
            write_stderr(&format!("Error: {}", first.strip_prefix("error: ").unwrap_or(first)));
            for line in lines.filter(|l| l.trim_start().starts_with("tip:")) {
                write_stderr(line.trim_start());
            }
            write_stderr("Run 'bd --help' for usage.");
            1
        }
    }
}

/// The argv of `fleet [global flags] bd ARGS…` for the bd personality: fleet's global flags
/// carried over in front of ARGS.
pub fn args_after_fleet_globals(
    global: &crate::cli::GlobalArgs,
    args: Vec<OsString>,
) -> Vec<OsString> {
    let mut out = vec![OsString::from("bd")];
    if global.json {
        out.push("--json".into());
    }
    if global.quiet {
        out.push("--quiet".into());
    }
    if global.pretty {
        out.push("--pretty".into());
    }
    if global.terse {
        out.push("--terse".into());
    }
    if let Some(actor) = &global.actor {
        out.extend(["--actor".into(), actor.into()]);
    }
    if let Some(db) = &global.db {
        out.extend([OsString::from("--db"), db.clone().into_os_string()]);
    }
    out.extend(args);
    out
}

fn version_line() -> String {
    format!("bd version {BD_COMPAT_VERSION} (fleet {})", env!("CARGO_PKG_VERSION"))
}

fn dispatch(cli: BdCli, personality: Personality) -> Result<(), CliError> {
    let global = cli.global;
    let Some(command) = cli.command else {
        if global.version {
            super::output::write_stdout(&version_line());
            return Ok(());
        }
        let _ = styled_command().print_help();
        return Ok(());
    };
    let ctx = BdContext::new(&global, personality)?;
    let writes = match &command {
        BdCommand::Create(args) => !args.dry_run,
        BdCommand::Update(_)
        | BdCommand::Claim(_)
        | BdCommand::Close(_)
        | BdCommand::Reopen(_)
        | BdCommand::Defer(_)
        | BdCommand::Undefer(_)
        | BdCommand::Comment(_)
        | BdCommand::Remember(_)
        | BdCommand::Q(_)
        | BdCommand::Supersede(_)
        | BdCommand::Edit(_)
        | BdCommand::Forget(_)
        | BdCommand::Assign(_)
        | BdCommand::Note(_)
        | BdCommand::Priority(_)
        | BdCommand::Tag(_)
        | BdCommand::Link(_)
        | BdCommand::Import(_) => true,
        BdCommand::Delete(args) => args.force,
        BdCommand::Ready(args) => args.claim,
        BdCommand::Reserve(_) | BdCommand::ReleaseFiles(_) => true,
        BdCommand::Mail(command) => crate::cli::mail::writes(command),
        BdCommand::Human(args) => args.writes(),
        BdCommand::Orphans(args) => args.fix,
        BdCommand::Dep(args) => args.writes(),
        BdCommand::Comments(args) => args.adds(),
        BdCommand::Label(command) => command.writes(),
        _ => false,
    };
    if writes {
        ctx.check_writable(command_name(&command))?;
    }
    match command {
        BdCommand::Init(args) => init::cmd_init(&ctx, &global, args)?,
        BdCommand::Create(args) => create::cmd_create(&ctx, args)?,
        BdCommand::List(args) => query::cmd_list(&ctx, args)?,
        BdCommand::Ready(args) => query::cmd_ready(&ctx, args)?,
        BdCommand::Show(args) => issue::cmd_show(&ctx, args)?,
        BdCommand::Update(args) => issue::cmd_update(&ctx, args)?,
        BdCommand::Claim(args) => issue::cmd_claim(&ctx, args)?,
        BdCommand::Close(args) => issue::cmd_close(&ctx, args)?,
        BdCommand::Reopen(args) => issue::cmd_reopen(&ctx, args)?,
        BdCommand::Assign(args) => shorthand::cmd_assign(&ctx, args)?,
        BdCommand::Note(args) => shorthand::cmd_note(&ctx, args)?,
        BdCommand::Priority(args) => shorthand::cmd_priority(&ctx, args)?,
        BdCommand::Tag(args) => shorthand::cmd_tag(&ctx, args)?,
        BdCommand::Link(args) => shorthand::cmd_link(&ctx, args)?,
        BdCommand::Types => shorthand::cmd_types(&ctx)?,
        BdCommand::CodexHook(args) => guide::cmd_codex_hook(&ctx, args)?,
        BdCommand::Delete(args) => issue::cmd_delete(&ctx, args)?,
        BdCommand::Defer(args) => issue::cmd_defer(&ctx, args)?,
        BdCommand::Undefer(args) => issue::cmd_undefer(&ctx, args)?,
        BdCommand::Dep(args) => dep::cmd_dep(&ctx, args)?,
        BdCommand::Comments(args) => comment::cmd_comments(&ctx, args)?,
        BdCommand::Comment(args) => comment::cmd_comment(&ctx, args)?,
        BdCommand::Label(command) => label::cmd_label(&ctx, command)?,
        BdCommand::Blocked(args) => query::cmd_blocked(&ctx, args)?,
        BdCommand::Stats(args) => query::cmd_stats(&ctx, args)?,
        BdCommand::Search(args) => query::cmd_search(&ctx, args)?,
        BdCommand::Count(args) => query::cmd_count(&ctx, args)?,
        BdCommand::Query(args) => query::cmd_query(&ctx, args)?,
        BdCommand::Sql(args) => sql::cmd_sql(&ctx, args)?,
        BdCommand::Children(args) => query::cmd_children(&ctx, args)?,
        BdCommand::Stale(args) => query::cmd_stale(&ctx, args)?,
        BdCommand::Epic(command) => query::cmd_epic(&ctx, command)?,
        BdCommand::Lint(args) => lint::cmd_lint(&ctx, args)?,
        BdCommand::Config(command) => config::cmd_config(&ctx, command)?,
        BdCommand::Export(args) => transfer::cmd_export(&ctx, args)?,
        BdCommand::Import(args) => transfer::cmd_import(&ctx, args)?,
        BdCommand::Sync(args) => sync::cmd_sync(&ctx, args)?,
        BdCommand::Dolt(command) => sync::cmd_dolt(&ctx, command)?,
        BdCommand::Hooks(command) => hooks::cmd_hooks(&ctx, command)?,
        BdCommand::Hook(args) => hooks::cmd_hook(&ctx, args)?,
        BdCommand::Prime(args) => guide::cmd_prime(&ctx, args),
        BdCommand::Mail(command) => crate::cli::mail::cmd_mail(ctx.require_store()?, command)?,
        BdCommand::Reserve(args) => crate::cli::reserve::cmd_reserve(ctx.require_store()?, args)?,
        BdCommand::ReleaseFiles(args) => {
            crate::cli::reserve::cmd_release_files(ctx.require_store()?, args)?;
        }
        BdCommand::Remember(args) => memory::cmd_remember(&ctx, args)?,
        BdCommand::Memories(args) => memory::cmd_memories(&ctx, args)?,
        BdCommand::Recall(args) => memory::cmd_recall(&ctx, args)?,
        BdCommand::Forget(args) => memory::cmd_forget(&ctx, args)?,
        BdCommand::Quickstart => guide::cmd_quickstart(&ctx),
        BdCommand::Human(args) => workflow::cmd_human(&ctx, args)?,
        BdCommand::Q(args) => workflow::cmd_quick(&ctx, args)?,
        BdCommand::Onboard => setup::cmd_onboard(&ctx),
        BdCommand::RenamePrefix(args) => rename::cmd_rename_prefix(&ctx, args)?,
        BdCommand::Setup(args) => setup::cmd_setup(&ctx, args)?,
        BdCommand::Where => setup::cmd_where(&ctx)?,
        BdCommand::Info(args) => setup::cmd_info(&ctx, args)?,
        BdCommand::Doctor(args) => setup::cmd_doctor(&ctx, args)?,
        BdCommand::Repair | BdCommand::Recover => setup::cmd_repair(&ctx)?,
        BdCommand::Migrate(command) => hooks::cmd_migrate(&ctx, command)?,
        BdCommand::Supersede(args) => workflow::cmd_supersede(&ctx, args)?,
        BdCommand::Orphans(args) => workflow::cmd_orphans(&ctx, args)?,
        BdCommand::Preflight(args) => workflow::cmd_preflight(&ctx, args)?,
        BdCommand::Edit(args) => workflow::cmd_edit(&ctx, args)?,
        BdCommand::Version => {
            let version = serde_json::json!({
                "version": BD_COMPAT_VERSION,
                "fleet_version": env!("CARGO_PKG_VERSION"),
            });
            ctx.out.emit(&version, version_line);
        }
    }
    if writes {
        ctx.after_write();
    }
    Ok(())
}

fn command_name(command: &BdCommand) -> &'static str {
    match command {
        BdCommand::Create(_) => "create",
        BdCommand::Update(_) => "update",
        BdCommand::Claim(_) => "claim",
        BdCommand::Close(_) => "close",
        BdCommand::Reopen(_) => "reopen",
        BdCommand::Delete(_) => "delete",
        BdCommand::Defer(_) => "defer",
        BdCommand::Undefer(_) => "undefer",
        BdCommand::Dep(_) => "dep",
        BdCommand::Comments(_) | BdCommand::Comment(_) => "comment",
        BdCommand::Label(_) => "label",
        BdCommand::Ready(_) => "ready --claim",
        BdCommand::Import(_) => "import",
        BdCommand::Remember(_) => "remember",
        BdCommand::Q(_) => "q",
        BdCommand::Supersede(_) => "supersede",
        BdCommand::Edit(_) => "edit",
        BdCommand::Human(_) => "human",
        BdCommand::Orphans(_) => "orphans --fix",
        BdCommand::Forget(_) => "forget",
        BdCommand::Assign(_) => "assign",
        BdCommand::Note(_) => "note",
        BdCommand::Priority(_) => "priority",
        BdCommand::Tag(_) => "tag",
        BdCommand::Link(_) => "link",
        BdCommand::Mail(_) => "mail",
        BdCommand::Reserve(_) => "reserve",
        BdCommand::ReleaseFiles(_) => "release-files",
        _ => "this command",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_tree_is_consistent() {
        styled_command().debug_assert();
        // The deferred tree too: there a subcommand's own flags come after the global ones.
        <BdCli>::command().debug_assert();
    }

    /// The lines agents run parse on the pruned root (one subcommand), not only on the whole
    /// tree the fallback builds.
    #[test]
    fn agents_lines_parse_on_the_pruned_root() {
        parse::assert_lines_parse_pruned(
            &parse_parts(),
            &[
                "bd ready --json --limit 100",
                "bd --json ready",
                "bd show bd-1 --json",
                "bd update bd-1 --claim --json",
                "bd --db /tmp/x --actor a close bd-1 --reason done",
                "bd dep add bd-1 bd-2",
                "bd ls --status open",
                "bd --json=false list",
                "bd -q create Title -p 1",
            ],
        );
    }

    #[test]
    fn dep_takes_subcommands_and_the_blocks_shorthand() {
        let cli = <BdCli>::try_parse_from(["bd", "dep", "a-1", "--blocks", "a-2"]).unwrap();
        let Some(BdCommand::Dep(args)) = cli.command else { panic!("not dep") };
        assert_eq!(args.blocker.as_deref(), Some("a-1"));
        assert_eq!(args.blocks.as_deref(), Some("a-2"));
        let cli = <BdCli>::try_parse_from(["bd", "dep", "add", "a-1", "a-2"]).unwrap();
        let Some(BdCommand::Dep(args)) = cli.command else { panic!("not dep") };
        assert!(matches!(args.command, Some(dep::DepCommand::Add { .. })));
    }

    #[test]
    fn json_takes_an_optional_value() {
        for (args, json) in [
            (&["bd", "ready", "--json"][..], true),
            (&["bd", "ready", "--json=true"][..], true),
            (&["bd", "--json=false", "ready"][..], false),
            (&["bd", "ready"][..], false),
        ] {
            assert_eq!(<BdCli>::try_parse_from(args).unwrap().global.json, json, "{args:?}");
        }
    }

    #[test]
    fn fleet_globals_carry_over() {
        let global = crate::cli::GlobalArgs {
            json: true,
            actor: Some("me".into()),
            db: None,
            quiet: false,
            color: Default::default(),
            pretty: false,
            terse: false,
        };
        let args = args_after_fleet_globals(&global, vec!["ready".into()]);
        assert_eq!(args, ["bd", "--json", "--actor", "me", "ready"].map(OsString::from));
    }
}
