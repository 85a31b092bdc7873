//! How both personalities parse their command line cheaply. An agent's `bd` command lives about
//! two milliseconds, and building clap's whole command tree (~50 subcommands, each given a copy
//! of every global flag) was a fifth of that. So a command line is parsed by a root that holds
//! only the subcommand it names, whose arguments are built only then (clap's `defer`); where
//! that parse stops — help, a usage error, a word it cannot place — the same line is parsed
//! again by the whole tree built at once, which is what every message is shown from (all but
//! the version, which is the root's whatever the tree).
//!
//! The pruned parse can only succeed where the whole tree's parse succeeds the same way: its
//! root has the same flags and settings, and the one subcommand it holds is the one clap itself
//! finds in the line. A line whose subcommand is another fails and is parsed again whole; a
//! line with no subcommand at all (`bd --version`) parses on the bare root as on the whole.

use std::ffi::OsString;

use clap::{ArgMatches, Command};

/// Declares a personality's subcommands once and derives them twice: the first enum named
/// has clap's `defer` (a subcommand's arguments are built only when it is parsed), and is what
/// [`parse`] runs and the personality dispatches on; the second is built whole, the way clap
/// builds an ordinary tree, for help, usage errors and completion scripts. A deferred tree
/// shows help differently: a subcommand's own flags come after the propagated global ones, and
/// the doc of its arguments' struct replaces its summary.
macro_rules! deferred_and_eager {
    ($(#[$attribute:meta])* pub enum $deferred:ident / $eager:ident { $($variants:tt)* }) => {
        $(#[$attribute])*
        #[derive(Debug, clap::Subcommand)]
        #[command(defer = true)]
        pub enum $deferred { $($variants)* }

        #[doc = concat!("[`", stringify!($deferred), "`] built whole, for help and usage errors.")]
        #[derive(Debug, clap::Subcommand)]
        pub enum $eager { $($variants)* }
    };
}
pub(crate) use deferred_and_eager;

/// The subcommands of a root built without any (the bare root of [`Parts`]).
#[derive(Debug, clap::Subcommand)]
pub(crate) enum NoSubcommands {}

/// The parts of a personality's command line, as its parse needs them.
pub(crate) struct Parts {
    /// The root's flags and settings, without subcommands.
    pub bare_root: fn() -> Command,
    /// Adds every subcommand, deferred (each built only when parsed), to a command.
    pub subcommands: fn(Command) -> Command,
    /// The whole tree built at once, for help and usage errors.
    pub eager: fn() -> Command,
}

/// Parses `args` (`args[0]` is the program) as described in the module documentation.
pub(crate) fn parse(parts: &Parts, args: &[OsString]) -> Result<ArgMatches, clap::Error> {
    match pruned_root(parts, args).try_get_matches_from(args) {
        Ok(matches) => Ok(matches),
        // The version is the root's, whatever the tree (`fleet --version`, which the claim
        // benchmark times as the cost of starting the binary at all).
        Err(stop) if stop.kind() == clap::error::ErrorKind::DisplayVersion => Err(stop),
        Err(_) => (parts.eager)().try_get_matches_from(args),
    }
}

/// The bare root with the subcommand `args` names, or alone when the line names none that
/// exists (a line without a subcommand, such as `--version`, parses there; any other fails).
fn pruned_root(parts: &Parts, args: &[OsString]) -> Command {
    let root = (parts.bare_root)();
    let Some(word) = subcommand_word(&root, args) else { return root };
    match (parts.subcommands)(Command::new("all")).find_subcommand(word) {
        Some(subcommand) => root.subcommand(subcommand.clone()),
        None => root,
    }
}

/// The first word of `args` that is neither one of `root`'s flags nor the value of one: the
/// subcommand, as clap would find it. `None` at `--`, a word that is not UTF-8, or a flag
/// `root` does not have (the whole tree's parse then decides).
fn subcommand_word<'a>(root: &Command, args: &'a [OsString]) -> Option<&'a str> {
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let word = word.to_str()?;
        if word == "--" {
            return None;
        }
        if let Some(long) = word.strip_prefix("--") {
            if long.contains('=') {
                continue;
            }
            let flag = root.get_arguments().find(|arg| {
                arg.get_long() == Some(long)
                    || arg.get_all_aliases().is_some_and(|aliases| aliases.contains(&long))
            })?;
            if takes_the_next_word(flag) {
                words.next();
            }
            continue;
        }
        if let Some(shorts) = word.strip_prefix('-').filter(|shorts| !shorts.is_empty()) {
            for (at, short) in shorts.char_indices() {
                let flag = root.get_arguments().find(|arg| arg.get_short() == Some(short))?;
                if flag.get_action().takes_values() {
                    // `-aVALUE` holds its value; `-a VALUE` takes the next word.
                    if at + short.len_utf8() == shorts.len() && takes_the_next_word(flag) {
                        words.next();
                    }
                    break;
                }
            }
            continue;
        }
        return Some(word);
    }
    None
}

/// Whether `flag`, given alone, takes the next word as its value (`--db PATH`), rather than
/// nothing or only a value joined with `=` (`--json=false`).
fn takes_the_next_word(flag: &clap::Arg) -> bool {
    flag.get_action().takes_values() && !flag.is_require_equals_set()
}

/// Asserts that each of `lines` parses on its pruned root, which holds one subcommand: the
/// cheap path is taken, not only the fallback to the whole tree (which would hide a line the
/// scan of [`subcommand_word`] gets wrong).
#[cfg(test)]
pub(crate) fn assert_lines_parse_pruned(parts: &Parts, lines: &[&str]) {
    for line in lines {
        let args: Vec<OsString> = line.split(' ').map(OsString::from).collect();
        let root = pruned_root(parts, &args);
        assert_eq!(root.get_subcommands().count(), 1, "{line}");
        let parsed = root.try_get_matches_from(&args);
        assert!(parsed.is_ok(), "{line}: {:?}", parsed.err());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    fn root() -> Command {
        Command::new("tool")
            .arg(Arg::new("db").long("db").global(true).action(ArgAction::Set))
            .arg(Arg::new("actor").short('a').long("actor").global(true).action(ArgAction::Set))
            .arg(Arg::new("quiet").short('q').global(true).action(ArgAction::SetTrue))
            .arg(
                Arg::new("json")
                    .long("json")
                    .global(true)
                    .num_args(0..=1)
                    .require_equals(true)
                    .default_missing_value("true"),
            )
    }

    fn subcommands(command: Command) -> Command {
        command
            .subcommand(Command::new("list").visible_alias("ls").arg(Arg::new("all").long("all")))
            .subcommand(Command::new("show").arg(Arg::new("id")))
    }

    fn parts() -> Parts {
        Parts { bare_root: root, subcommands, eager: || subcommands(root()) }
    }

    fn words(line: &str) -> Vec<OsString> {
        std::iter::once("tool").chain(line.split_whitespace()).map(OsString::from).collect()
    }

    /// What `matches` holds, without the list of the subcommands it could have held (the
    /// only part of clap's record that differs between the two parses).
    fn matched(matches: &ArgMatches) -> String {
        let mut text = format!("{matches:?}");
        while let Some(start) = text.find("valid_subcommands: [") {
            let end = start + text[start..].find(']').expect("a closed list") + 1;
            text.replace_range(start..end, "");
        }
        text
    }

    #[test]
    fn the_subcommand_is_found_past_the_root_flags_and_their_values() {
        let cases = [
            ("list", Some("list")),
            ("--db list show", Some("show")),
            ("--db=x list", Some("list")),
            ("-a show list", Some("list")),
            ("-ashow list", Some("list")),
            ("-q -a show ls", Some("ls")),
            ("-qa show list", Some("list")),
            ("--json list", Some("list")),
            ("--json=false show", Some("show")),
            ("--unknown list", None),
            ("-- list", None),
            ("--db list", None),
            ("", None),
        ];
        for (line, expected) in cases {
            assert_eq!(subcommand_word(&root(), &words(line)), expected, "{line:?}");
        }
    }

    /// Whatever the line, the pruned parse gives what the whole tree's parse gives.
    #[test]
    fn the_pruned_parse_matches_the_whole_trees() {
        let lines = [
            "list --all x",
            "ls --all x --db d",
            "--db list show 7",
            "show 7 --json",
            "-a list show 7 -q",
            "show",
            "--json=false list",
            "nothing",
            "--db d",
            "list show",
            "show 7 8",
            "--bogus list",
        ];
        for line in lines {
            let pruned = parse(&parts(), &words(line));
            let whole = subcommands(root()).try_get_matches_from(words(line));
            match (pruned, whole) {
                (Ok(pruned), Ok(whole)) => {
                    assert_eq!(matched(&pruned), matched(&whole), "{line:?}")
                }
                (Err(pruned), Err(whole)) => {
                    assert_eq!(pruned.to_string(), whole.to_string(), "{line:?}")
                }
                (pruned, whole) => panic!("{line:?}: pruned {pruned:?}, whole {whole:?}"),
            }
        }
    }

    #[test]
    fn the_pruned_root_holds_only_the_named_subcommand() {
        let names = |line: &str| -> Vec<String> {
            pruned_root(&parts(), &words(line))
                .get_subcommands()
                .map(|command| command.get_name().to_string())
                .collect()
        };
        assert_eq!(names("--db x show 1"), ["show"]);
        assert_eq!(names("ls"), ["list"]);
        assert!(names("frobnicate").is_empty());
        assert!(names("--unknown show").is_empty());
        assert!(names("--db x").is_empty());
    }
}
