//! The `fleet` command line: the subcommand enum, global flags, and dispatch.
//!
//! Each command group lives in its own file and follows one shape: parse its args, call the
//! library inside a store transaction, build a `Serialize` result, and render it as human text
//! or `--json` through [`output::Output`]. Data goes to stdout, narration and errors to
//! stderr. This is the only module that reads the environment or prints.

mod accounts;
mod agent_stats;
mod bd;
mod budget;
mod canaries;
mod claim;
mod comment;
mod completions;
mod config;
mod context;
mod control;
mod demo;
mod dep;
mod doctor;
mod error;
mod fake_agent;
mod gc;
mod init;
mod issue;
mod join;
mod journal;
mod label;
mod log;
mod logging;
mod mail;
mod mcp;
mod merge;
mod merges;
mod notify;
mod output;
mod overhead;
mod parse;
mod printable;
mod qa;
mod query;
mod rebuild;
mod receipt;
pub(crate) mod reserve;
mod run;
mod serve;
mod setup;
mod signals;
mod style;
mod sync;
mod task;
mod tasks;
mod terse;
mod transfer;
mod value_enums;

pub mod bench;

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use error::{CliError, exit_code};

use context::{ContextArgs, Personality};
use output::Mode;
use style::{ColorWhen, Stream};

/// fleet's version and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("FLEET_COMMIT"), ")");

/// fleet: a native beads-compatible task queue for fleets of coding agents.
#[derive(Debug, Parser)]
#[command(name = "fleet", version = VERSION, about, max_term_width = 100)]
pub struct Cli<Commands: Subcommand = Command> {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Commands,
}

/// Flags every command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// Print machine-readable JSON on stdout (errors as JSON on stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// Who is acting (default: $FLEET_ACTOR, $BEADS_ACTOR, $BD_ACTOR, then $USER).
    #[arg(long, global = true, value_name = "NAME")]
    pub actor: Option<String>,
    /// The workspace: a `.beads` directory or its `beads.db` (default: $BEADS_DIR, then
    /// $FLEET_HOME/.beads, with FLEET_HOME defaulting to ~/.fleet).
    #[arg(long, global = true, value_name = "PATH")]
    pub db: Option<PathBuf>,
    /// Print only what was asked for: no narration on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Colour the output: auto (on a terminal, unless NO_COLOR is set or TERM is dumb),
    /// always, or never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
    /// Indent --json output even when stdout is not a terminal (into a pipe it is compact,
    /// one line; also $FLEET_JSON_PRETTY=1).
    #[arg(long, global = true)]
    pub pretty: bool,
    /// Short text for ready, list and show: one line per issue, no decoration (also
    /// $FLEET_TERSE=1).
    #[arg(long, global = true)]
    pub terse: bool,
}

impl GlobalArgs {
    fn context_args(&self) -> ContextArgs {
        ContextArgs {
            json: self.json,
            quiet: self.quiet,
            actor: self.actor.clone(),
            db: self.db.clone(),
            color: self.color,
            pretty: self.pretty,
            terse: self.terse,
        }
    }
}

/// What `fleet config --help` says about the other config.
const CONFIG_AFTER_HELP: &str = "runtime.toml holds how this machine runs agents (the supervisor \
and its coders). The workspace settings (claim_mode, sync.export_jsonl, export.auto, \
validation.on-close, types.custom, …) are kept in the issue store: `fleet config` sets, gets and \
shows them too, checked by their type; `fleet bd config` sets any store key, as beads does.";

parse::deferred_and_eager! {
    /// fleet's commands: [`Command`] parses, [`EagerCommand`] shows help and usage errors and
    /// makes the completion scripts (see [`parse::deferred_and_eager`]).
    pub enum Command / EagerCommand {
    /// Create a workspace (the store and its metadata).
    Init(init::InitArgs),
    /// Join a team's queue: make this machine's store from the journal on a git remote (its
    /// id prefix and every issue), in one command.
    Join(join::JoinArgs),
    /// Create an issue.
    Create(issue::CreateArgs),
    /// Show issues in full: fields, dependencies, dependents, comments.
    Show(issue::ShowArgs),
    /// Change fields of issues.
    Update(issue::UpdateArgs),
    /// Close issues.
    Close(issue::CloseArgs),
    /// Reopen closed issues.
    Reopen(issue::ReopenArgs),
    /// Delete issues and every edge touching them (a preview unless --force).
    Delete(issue::DeleteArgs),
    /// List issues.
    List(query::ListArgs),
    /// Show ready work: open issues with no active blockers.
    Ready(query::ReadyArgs),
    /// Show issues blocked by their dependencies.
    Blocked(query::BlockedArgs),
    /// Find issues whose id, title or description contains text.
    Search(query::SearchArgs),
    /// Count issues by state.
    Stats(query::StatsArgs),
    /// Manage dependency edges.
    #[command(subcommand)]
    Dep(dep::DepCommand),
    /// Add a comment to an issue.
    Comment(comment::CommentArgs),
    /// List the comments of an issue, or add one (`comments add ID TEXT`).
    Comments(comment::CommentsArgs),
    /// Manage labels.
    #[command(subcommand)]
    Label(label::LabelCommand),
    /// Claim an issue (or the first ready one): in_progress, assigned to you.
    Claim(claim::ClaimArgs),
    /// Put a claimed issue back: open and unassigned.
    Release(claim::ReleaseArgs),
    /// Measure claim throughput and ready latency against a SQLite baseline.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Show or change the runtime configuration ($FLEET_HOME/runtime.toml).
    #[command(subcommand, after_help = CONFIG_AFTER_HELP)]
    Config(config::ConfigCommand),
    /// Run as the beads CLI: `fleet bd <bd command and flags>` (the workspace defaults to
    /// $BEADS_DIR, then $FLEET_HOME/.beads).
    #[command(disable_help_flag = true)]
    Bd {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<OsString>,
    },
    /// Link `bd` to this binary so agents' `bd` commands run fleet's bd (default DIR: the
    /// PATH directory `fleet` was run from).
    LinkBd(bd::LinkArgs),
    /// Import issues: beads JSONL (both eras), a .beads directory, a legacy SQLite beads.db,
    /// or a Python-fleet home. One transaction: everything or nothing.
    Import(transfer::ImportArgs),
    /// Export issues as beads JSONL that `bd import` accepts.
    Export(transfer::ExportArgs),
    /// Run the supervisor: claim ready tasks and run each through its coding agent, up to
    /// max_concurrent at once, until Ctrl-C (`--detach`: in the background, controlled with
    /// `fleet run status|stop|restart`).
    Run(run::RunArgs),
    /// Print the shell completion script for bash, zsh, fish, powershell or elvish.
    Completions(completions::CompletionsArgs),
    /// Serve the workspace's writes on its socket while no supervisor runs (`fleet run`
    /// serves its workspace itself): commands send their writes there and they are committed
    /// in groups. Until Ctrl-C or SIGTERM.
    Serve(serve::ServeArgs),
    /// Check the store for damage, runtime.toml, each coder's CLI (on the agents' PATH, its
    /// version, signed in) and the agents' bd — one line per check, each problem with its fix;
    /// `--salvage` copies everything readable of a damaged store into a new one.
    Doctor(doctor::DoctorArgs),
    /// The git journal of the queue's ops: log, verify, commit.
    #[command(subcommand)]
    Journal(journal::JournalCommand),
    /// Build a new store from the git journal alone and swap it in (the old one is kept).
    Rebuild(rebuild::RebuildArgs),
    /// Manage the git remotes the queue syncs through (remotes of the journal repository).
    #[command(subcommand)]
    Remote(sync::RemoteCommand),
    /// Sync the queue with a remote: commit, fetch every replica's journal, merge, push.
    Sync(sync::SyncArgs),
    /// What every agent is doing and what it costs: the running tasks with their coder,
    /// elapsed and idle time, context, tokens and cost, under the fleet's totals and pauses.
    Tasks(tasks::TasksArgs),
    /// One task's files, rendered: its log (messages and tool calls), plan, knowledge,
    /// events, stderr, prompt, Q&A. Without an id, the running tasks.
    Task(task::TaskArgs),
    /// The supervisor's log ($FLEET_HOME/logs/fleet-run.log).
    Log(log::LogArgs),
    /// The merge lanes: work waiting to land on each base branch, its age, and what failed.
    Merges(merges::MergesArgs),
    /// Move a task's work to the head of its merge lane (--now), or take it out of the queue
    /// (--drop: its tip kept under refs/fleet/archive/<id>).
    Merge(merge::MergeArgs),
    /// Approve a task's work for landing (merge.review = true holds each entry until then).
    Approve(merge::ApproveArgs),
    /// Send a task's work back from the merge queue: reopened with the reason as a comment.
    Reject(merge::RejectArgs),
    /// Remove the worktrees of tasks whose work landed (their tips kept under
    /// refs/fleet/archive/<id>); dirty ones are refused by name.
    Gc(gc::GcArgs),
    /// Stop a running task's agent: the task is blocked with a comment (or requeued).
    Kill(control::KillArgs),
    /// Start no new agents (every coder's, one coder's, or one account's); running agents go on.
    Pause(control::PauseArgs),
    /// Lift `fleet pause`.
    Resume(control::ResumeArgs),
    /// The questions blocked agents asked.
    Questions(qa::QuestionsArgs),
    /// Check where a person is told the fleet needs them (`[notify]` in runtime.toml).
    Notify(notify::NotifyArgs),
    /// What the `[budget]` caps allow: spent, left and reset per scope; `raise` one.
    Budget(budget::BudgetArgs),
    /// Each coder's accounts: their rate-limit windows, utilisation, resets, pauses.
    Accounts(accounts::AccountsArgs),
    /// Answer a blocked task's question: recorded in its artifacts/Q&A.md, the task reopened.
    Answer(qa::AnswerArgs),
    /// Messages between agents and people: send, inbox, ack, thread (agents: `bd mail`).
    #[command(subcommand)]
    Mail(mail::MailCommand),
    /// Serve the queue to coding agents as an MCP server on stdin/stdout (tools: ready, show,
    /// create, update, comment, close, dep_add, mail_*, reserve, release_files, ask_human).
    Mcp(mcp::McpArgs),
    /// Set up a coding-agent CLI for fleet: `--mcp` registers `fleet mcp` as its MCP server
    /// (claude, codex, gemini, opencode).
    Setup(setup::SetupArgs),
    /// Reserve files for a task's work (advisory; the pre-commit guard enforces --exclusive).
    Reserve(reserve::ReserveArgs),
    /// End a task's file reservations.
    ReleaseFiles(reserve::ReleaseFilesArgs),
    /// Run a demo fleet on a throwaway queue: a small task graph, no API key needed.
    Demo(demo::DemoArgs),
    /// A scriptable stand-in for an agent CLI, for tests and benchmarks.
    #[command(hide = true)]
    FakeAgent(fake_agent::FakeAgentArgs),
    /// The clean-up process `fleet run` starts for itself.
    #[command(hide = true)]
    Guard(run::GuardArgs),
    }
}

impl Command {
    /// Whether a successful run may have changed the queue (and so triggers auto-export).
    fn may_write(&self) -> bool {
        matches!(
            self,
            Command::Create(_)
                | Command::Update(_)
                | Command::Close(_)
                | Command::Reopen(_)
                | Command::Delete(_)
                | Command::Dep(_)
                | Command::Comment(_)
                | Command::Comments(_)
                | Command::Label(_)
                | Command::Claim(_)
                | Command::Release(_)
                | Command::Import(_)
                | Command::Kill(_)
                | Command::Answer(_)
                | Command::Merge(_)
                | Command::Approve(_)
                | Command::Reject(_)
                | Command::Reserve(_)
                | Command::ReleaseFiles(_)
        ) || matches!(self, Command::Mail(command) if mail::writes(command))
    }
}

/// Parses `args` and runs the command. Returns the process exit code.
///
/// Invoked under the name `bd` (a link made by `fleet link-bd`), or as `fleet bd …`, the
/// binary is the beads CLI instead (see [`bd`]).
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    let json = args.iter().any(|arg| arg == "--json");
    crate::store::guard_command(|| run_command(args))
        .unwrap_or_else(|damaged| CliError::from(damaged).report(Mode::Fleet, json))
}

/// [`run`] inside the net that turns a database-engine panic anywhere into a damaged store.
fn run_command(args: Vec<OsString>) -> i32 {
    let invoked_as_bd = args
        .first()
        .and_then(|arg0| std::path::Path::new(arg0).file_name())
        .is_some_and(|name| name == "bd");
    if invoked_as_bd {
        logging::init(logging::Flavor::Bd);
        return bd::run(args, Personality::Bd);
    }
    if args.get(1).is_some_and(|arg| arg == "bd") {
        logging::init(logging::Flavor::Bd);
        let bd_args = std::iter::once(OsString::from("bd")).chain(args[2..].iter().cloned());
        return bd::run(bd_args.collect(), Personality::FleetBd);
    }
    let color = ColorWhen::from_raw_args(&args);
    let parsed = parse::parse(&parse_parts(), &args).and_then(|mut matches| {
        <Cli>::from_arg_matches_mut(&mut matches)
            .map_err(|error| error.format(&mut Cli::<EagerCommand>::command()))
    });
    let cli = match parsed {
        Ok(cli) => cli,
        Err(error) => return report_parse_error(&error, color),
    };
    if let Command::Bd { args } = cli.command {
        logging::init(logging::Flavor::Bd);
        return bd::run(bd::args_after_fleet_globals(&cli.global, args), Personality::FleetBd);
    }
    logging::init(logging::Flavor::Fleet);
    let json = cli.global.json;
    match dispatch(cli) {
        Ok(()) => exit_code::SUCCESS,
        Err(error) => error.report(Mode::Fleet, json),
    }
}

/// fleet's command line for [`parse::parse`].
fn parse_parts() -> parse::Parts {
    parse::Parts {
        bare_root: Cli::<parse::NoSubcommands>::command,
        subcommands: Command::augment_subcommands,
        eager: Cli::<EagerCommand>::command,
    }
}

/// Prints clap's help, version or usage error — coloured as `--color` decides for the stream
/// it goes to — and returns the exit code.
fn report_parse_error(error: &clap::Error, color: ColorWhen) -> i32 {
    use std::io::Write;
    let (stream, code) = if error.use_stderr() {
        (Stream::Stderr, exit_code::USAGE)
    } else {
        (Stream::Stdout, exit_code::SUCCESS)
    };
    let rendered = error.render();
    let text =
        if color.enabled(stream) { rendered.ansi().to_string() } else { rendered.to_string() };
    // A closed stream (`fleet --help | head`) is fine.
    let _ = match stream {
        Stream::Stdout => std::io::stdout().lock().write_all(text.as_bytes()),
        Stream::Stderr => std::io::stderr().lock().write_all(text.as_bytes()),
    };
    code
}

fn dispatch(cli: Cli) -> Result<(), CliError> {
    let ctx = context::Context::new(cli.global.context_args(), Personality::Fleet)?;
    let may_write = cli.command.may_write();
    let result = match cli.command {
        Command::Init(args) => init::cmd_init(&ctx, args),
        Command::Join(args) => join::cmd_join(&ctx, args),
        Command::Create(args) => issue::cmd_create(&ctx, args),
        Command::Show(args) => issue::cmd_show(&ctx, args),
        Command::Update(args) => issue::cmd_update(&ctx, args),
        Command::Close(args) => issue::cmd_close(&ctx, args),
        Command::Reopen(args) => issue::cmd_reopen(&ctx, args),
        Command::Delete(args) => issue::cmd_delete(&ctx, args),
        Command::List(args) => query::cmd_list(&ctx, args),
        Command::Ready(args) => query::cmd_ready(&ctx, args),
        Command::Blocked(args) => query::cmd_blocked(&ctx, args),
        Command::Search(args) => query::cmd_search(&ctx, args),
        Command::Stats(args) => query::cmd_stats(&ctx, args),
        Command::Dep(command) => dep::cmd_dep(&ctx, command),
        Command::Comment(args) => comment::cmd_comment(&ctx, args),
        Command::Comments(args) => comment::cmd_comments(&ctx, args),
        Command::Label(command) => label::cmd_label(&ctx, command),
        Command::Claim(args) => claim::cmd_claim(&ctx, args),
        Command::Release(args) => claim::cmd_release(&ctx, args),
        Command::Bench(command) => bench::cmd_bench(&ctx, command),
        Command::Config(command) => config::cmd_config(&ctx, command),
        // Run before dispatch (see `run`).
        Command::Bd { .. } => Ok(()),
        Command::LinkBd(args) => bd::cmd_link_bd(&ctx.out, args),
        Command::Import(args) => transfer::cmd_import(&ctx, args),
        Command::Export(args) => transfer::cmd_export(&ctx, args),
        Command::Run(args) => run::cmd_run(&ctx, args),
        Command::Serve(args) => serve::cmd_serve(&ctx, args),
        Command::Completions(args) => completions::cmd_completions(args),
        Command::Journal(command) => journal::cmd_journal(&ctx, command),
        Command::Rebuild(args) => rebuild::cmd_rebuild(&ctx, args),
        Command::Remote(command) => sync::cmd_remote(&ctx, command),
        Command::Sync(args) => sync::cmd_sync(&ctx, args),
        Command::Demo(args) => demo::cmd_demo(&ctx, args),
        Command::Tasks(args) => tasks::cmd_tasks(&ctx, args),
        Command::Task(args) => task::cmd_task(&ctx, args),
        Command::Log(args) => log::cmd_log(&ctx, args),
        Command::Merges(args) => merges::cmd_merges(&ctx, args),
        Command::Merge(args) => merge::cmd_merge(&ctx, args),
        Command::Approve(args) => merge::cmd_approve(&ctx, args),
        Command::Reject(args) => merge::cmd_reject(&ctx, args),
        Command::Gc(args) => gc::cmd_gc(&ctx, args),
        Command::Kill(args) => control::cmd_kill(&ctx, args),
        Command::Pause(args) => control::cmd_pause(&ctx, args),
        Command::Resume(args) => control::cmd_resume(&ctx, args),
        Command::Questions(args) => qa::cmd_questions(&ctx, args),
        Command::Notify(args) => notify::cmd_notify(&ctx, args),
        Command::Budget(args) => budget::cmd_budget(&ctx, args),
        Command::Accounts(args) => accounts::cmd_accounts(&ctx, args),
        Command::Answer(args) => qa::cmd_answer(&ctx, args),
        Command::Mail(command) => mail::cmd_mail(&ctx, command),
        Command::Mcp(args) => mcp::cmd_mcp(args),
        Command::Setup(args) => setup::cmd_setup(&ctx, args),
        Command::Reserve(args) => reserve::cmd_reserve(&ctx, args),
        Command::ReleaseFiles(args) => reserve::cmd_release_files(&ctx, args),
        Command::Doctor(args) => doctor::cmd_doctor(&ctx, args),
        Command::FakeAgent(args) => fake_agent::cmd_fake_agent(args),
        Command::Guard(args) => run::cmd_guard(&ctx, args),
    };
    if result.is_ok() && may_write {
        transfer::auto_export(&ctx);
        journal::commit_soon(&ctx, false);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_trees_are_consistent() {
        Cli::<EagerCommand>::command().debug_assert();
        // The deferred tree too: there a subcommand's own flags come after the global ones.
        <Cli>::command().debug_assert();
    }

    /// Everyday lines parse on the pruned root (one subcommand), not only on the whole tree
    /// the fallback builds.
    #[test]
    fn everyday_lines_parse_on_the_pruned_root() {
        parse::assert_lines_parse_pruned(
            &parse_parts(),
            &[
                "fleet ready --json",
                "fleet --json claim",
                "fleet --db /tmp/x --actor a close x-1 --reason done",
                "fleet --color never list --status open",
                "fleet dep add x-1 x-2",
                "fleet -q run --until-idle --as night",
            ],
        );
    }
}
