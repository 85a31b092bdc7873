//! The long-text flags `bd create` and `bd update` share, as beads 1.0 has them: a description
//! from `--description`/`--body`/`-m` (where `-` reads stdin), `--body-file` /
//! `--description-file` (a path, `-` for stdin) or `--stdin`, and a design from `--design` or
//! `--design-file`.
//!
//! Agents pipe text with backticks and quotes through stdin (`--description=-`), so the value
//! `-` is never stored as it stands. Stdin is read once: it feeds one field at most.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::cli::CliError;

/// The flags, flattened into `CreateArgs` and `UpdateArgs`.
#[derive(Debug, Default, clap::Args)]
pub struct TextArgs {
    /// Description (markdown); "-" reads it from stdin.
    #[arg(
        short,
        long,
        alias = "body",
        alias = "message",
        short_alias = 'm',
        value_name = "TEXT",
        allow_hyphen_values = true
    )]
    pub description: Option<String>,
    /// Read the description from a file ("-" for stdin).
    #[arg(long, alias = "description-file", value_name = "FILE", conflicts_with = "description")]
    pub body_file: Option<PathBuf>,
    /// Read the description from stdin (as --body-file -).
    #[arg(long, conflicts_with_all = ["description", "body_file"])]
    pub stdin: bool,
    /// Design notes; "-" reads them from stdin.
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub design: Option<String>,
    /// Read the design notes from a file ("-" for stdin).
    #[arg(long, value_name = "FILE", conflicts_with = "design")]
    pub design_file: Option<PathBuf>,
}

/// The texts the flags give: `None` where no flag for that field was given.
#[derive(Debug, Default, Clone)]
pub struct Texts {
    pub description: Option<String>,
    pub design: Option<String>,
}

/// Where one field's text comes from.
enum Source<'a> {
    None,
    Given(&'a str),
    Stdin,
    File(&'a Path),
}

impl TextArgs {
    fn description_source(&self) -> Source<'_> {
        match (&self.description, &self.body_file, self.stdin) {
            (_, _, true) => Source::Stdin,
            (_, Some(path), _) => file_source(path),
            (Some(text), None, false) if text == "-" => Source::Stdin,
            (Some(text), None, false) => Source::Given(text),
            (None, None, false) => Source::None,
        }
    }

    fn design_source(&self) -> Source<'_> {
        match (&self.design, &self.design_file) {
            (_, Some(path)) => file_source(path),
            (Some(text), None) if text == "-" => Source::Stdin,
            (Some(text), None) => Source::Given(text),
            (None, None) => Source::None,
        }
    }

    /// Reads what the flags name (stdin and files) into the texts.
    pub fn read(&self) -> Result<Texts, CliError> {
        let (description, design) = (self.description_source(), self.design_source());
        if matches!(description, Source::Stdin) && matches!(design, Source::Stdin) {
            return Err(CliError::new(
                "stdin can give either the description or the design, not both: read one of \
                 them from a file (--body-file FILE or --design-file FILE)",
            ));
        }
        Ok(Texts {
            description: read_source(description, "description")?,
            design: read_source(design, "design")?,
        })
    }
}

fn file_source(path: &Path) -> Source<'_> {
    if path.as_os_str() == "-" { Source::Stdin } else { Source::File(path) }
}

fn read_source(source: Source<'_>, field: &str) -> Result<Option<String>, CliError> {
    match source {
        Source::None => Ok(None),
        Source::Given(text) => Ok(Some(text.to_string())),
        Source::Stdin => read_stdin()
            .map(Some)
            .map_err(|e| CliError::new(format!("reading the {field} from stdin: {e}"))),
        Source::File(path) => std::fs::read_to_string(path).map(Some).map_err(|e| {
            CliError::new(format!("reading the {field} from {}: {e}", path.display()))
        }),
    }
}

/// All of stdin, as text.
pub(super) fn read_stdin() -> std::io::Result<String> {
    let mut text = String::new();
    std::io::stdin().read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        text: TextArgs,
    }

    fn parse(args: &[&str]) -> Result<TextArgs, clap::Error> {
        Wrap::try_parse_from(std::iter::once("bd").chain(args.iter().copied())).map(|w| w.text)
    }

    #[test]
    fn a_dash_means_stdin_for_every_description_flag() {
        for args in [
            &["--description=-"][..],
            &["-d", "-"],
            &["--body", "-"],
            &["-m", "-"],
            &["--message=-"],
            &["--body-file", "-"],
            &["--description-file", "-"],
            &["--stdin"],
        ] {
            let text = parse(args).unwrap();
            assert!(matches!(text.description_source(), Source::Stdin), "{args:?}");
        }
        assert!(matches!(parse(&["--design=-"]).unwrap().design_source(), Source::Stdin));
        assert!(matches!(parse(&["--design-file", "-"]).unwrap().design_source(), Source::Stdin));
    }

    #[test]
    fn conflicting_sources_are_refused() {
        assert!(parse(&["--stdin", "-d", "x"]).is_err());
        assert!(parse(&["--body-file", "f", "-d", "x"]).is_err());
        assert!(parse(&["--design", "x", "--design-file", "f"]).is_err());
        let both = parse(&["--stdin", "--design=-"]).unwrap();
        assert!(both.read().unwrap_err().message.contains("not both"));
    }

    #[test]
    fn plain_values_are_kept_as_given() {
        let text = parse(&["-d", "--not a flag", "--design", "plan"]).unwrap().read().unwrap();
        assert_eq!(text.description.as_deref(), Some("--not a flag"));
        assert_eq!(text.design.as_deref(), Some("plan"));
    }
}
