//! Colour on the terminal: the one decision of whether to paint (`--color auto|always|never`,
//! `NO_COLOR`, `TERM=dumb`), and [`Styled`] text that is painted only when it is written.
//!
//! Every place that colours output asks [`ColorWhen::enabled`] — fleet's human renderers
//! through [`Output::color`](super::output::Output), `fleet tasks --watch` for its footer, and
//! clap's help and usage errors (see `cli::run`). `auto` paints only a terminal, and only when
//! `NO_COLOR` is unset or empty and `TERM` is not `dumb`; `always` paints even into a pipe
//! (an explicit flag wins over `NO_COLOR`); `never` never does.
//!
//! Stored text reaches a terminal escaped ([`printable_block`]), and colour must not open a way
//! around that: a [`Styled`] escapes each piece as it is added and adds the colour codes itself
//! when rendered, so no escape sequence in the output ever comes from the data.

use std::ffi::OsString;
use std::io::IsTerminal;

use super::printable::printable_block;

/// When to colour output: `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorWhen {
    /// Only on a terminal, unless NO_COLOR is set or TERM is dumb.
    #[default]
    Auto,
    /// Always, even into a pipe or a file.
    Always,
    /// Never.
    Never,
}

/// Which of the process's output streams a decision is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl ColorWhen {
    /// Whether output written to `stream` is coloured.
    pub fn enabled(self, stream: Stream) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => auto_allows_color() && is_terminal(stream),
        }
    }

    /// The `--color` value among raw arguments (the last one given), for what is printed before
    /// they are parsed: clap's help and its usage errors. A value clap would refuse counts as
    /// `auto`; nothing after `--` counts.
    pub fn from_raw_args(args: &[OsString]) -> ColorWhen {
        let mut when = ColorWhen::Auto;
        let mut words = args.iter().skip(1).map(|arg| arg.to_string_lossy());
        while let Some(word) = words.next() {
            let value = match word.as_ref() {
                "--" => break,
                "--color" => words.next().map(|v| v.into_owned()),
                other => other.strip_prefix("--color=").map(str::to_owned),
            };
            if let Some(value) = value {
                when = <ColorWhen as clap::ValueEnum>::from_str(&value, false).unwrap_or_default();
            }
        }
        when
    }
}

/// `auto`'s conditions besides the terminal: `NO_COLOR` unset or empty, `TERM` not `dumb`.
fn auto_allows_color() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    !no_color && !dumb
}

fn is_terminal(stream: Stream) -> bool {
    match stream {
        Stream::Stdout => std::io::stdout().is_terminal(),
        Stream::Stderr => std::io::stderr().is_terminal(),
    }
}

/// What a coloured piece of text says, and so its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Healthy, done: green.
    Good,
    /// Needs a look, not broken: yellow.
    Warn,
    /// Broken, failed: red.
    Bad,
    /// Something starting or running: cyan.
    Active,
    /// Headers: bold.
    Strong,
    /// Secondary text: dim.
    Faint,
}

impl Tone {
    /// The SGR sequence that starts this tone.
    fn start(self) -> &'static str {
        match self {
            Tone::Good => "\x1b[32m",
            Tone::Warn => "\x1b[33m",
            Tone::Bad => "\x1b[31m",
            Tone::Active => "\x1b[36m",
            Tone::Strong => "\x1b[1m",
            Tone::Faint => "\x1b[2m",
        }
    }
}

/// The SGR sequence that ends any tone.
const RESET: &str = "\x1b[0m";

/// Text in pieces, each plain or with a [`Tone`]. Pieces are escaped as they are added (see
/// [`printable_block`]: newlines and tabs stay), so the text is safe to write as it renders.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Styled {
    pieces: Vec<(Option<Tone>, String)>,
}

impl Styled {
    pub fn new() -> Styled {
        Styled::default()
    }

    /// Appends plain text.
    pub fn plain(&mut self, text: &str) -> &mut Styled {
        self.push(None, text)
    }

    /// Appends text in `tone`.
    pub fn tone(&mut self, tone: Tone, text: &str) -> &mut Styled {
        self.push(Some(tone), text)
    }

    /// Appends a newline.
    pub fn newline(&mut self) -> &mut Styled {
        self.push(None, "\n")
    }

    /// Appends another styled text.
    pub fn append(&mut self, other: Styled) -> &mut Styled {
        self.pieces.extend(other.pieces);
        self
    }

    fn push(&mut self, tone: Option<Tone>, text: &str) -> &mut Styled {
        if !text.is_empty() {
            self.pieces.push((tone, printable_block(text).into_owned()));
        }
        self
    }

    /// The text with colour codes (when `color`) or without.
    pub fn render(&self, color: bool) -> String {
        let mut out = String::new();
        for (tone, text) in &self.pieces {
            match tone {
                Some(tone) if color => {
                    // Each line is painted on its own, so a line cut off by a pager or a
                    // terminal never leaves the colour on.
                    let painted: Vec<String> = text
                        .split('\n')
                        .map(|line| {
                            if line.is_empty() {
                                String::new()
                            } else {
                                format!("{}{line}{RESET}", tone.start())
                            }
                        })
                        .collect();
                    out.push_str(&painted.join("\n"));
                }
                _ => out.push_str(text),
            }
        }
        out
    }

    /// The first `width` characters of the text (by characters as escaped).
    pub fn truncated(&self, width: usize) -> Styled {
        let mut left = width;
        let mut out = Styled::new();
        for (tone, text) in &self.pieces {
            if left == 0 {
                break;
            }
            let part: String = text.chars().take(left).collect();
            left -= part.chars().count();
            out.pieces.push((*tone, part));
        }
        out
    }
}

impl From<&str> for Styled {
    fn from(text: &str) -> Styled {
        let mut styled = Styled::new();
        styled.plain(text);
        styled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_escaped_and_painted_only_when_asked() {
        let mut text = Styled::new();
        text.tone(Tone::Good, "✓").plain(" title \x1b[31mred\n").tone(Tone::Bad, "a\nb");
        assert_eq!(text.render(false), "✓ title \\e[31mred\na\nb");
        assert_eq!(
            text.render(true),
            "\x1b[32m✓\x1b[0m title \\e[31mred\n\x1b[31ma\x1b[0m\n\x1b[31mb\x1b[0m"
        );
        assert_eq!(text.truncated(4).render(true), "\x1b[32m✓\x1b[0m ti");
        assert_eq!(text.truncated(4).render(false), "✓ ti");
    }

    #[test]
    fn the_flag_is_found_among_raw_arguments() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(ColorWhen::from_raw_args(&args(&["fleet", "--help"])), ColorWhen::Auto);
        assert_eq!(
            ColorWhen::from_raw_args(&args(&["fleet", "--color", "always", "--help"])),
            ColorWhen::Always
        );
        assert_eq!(
            ColorWhen::from_raw_args(&args(&["fleet", "tasks", "--color=never"])),
            ColorWhen::Never
        );
        assert_eq!(
            ColorWhen::from_raw_args(&args(&["fleet", "--", "--color=never"])),
            ColorWhen::Auto
        );
        assert_eq!(ColorWhen::from_raw_args(&args(&["fleet", "--color=pink"])), ColorWhen::Auto);
        assert!(ColorWhen::Always.enabled(Stream::Stdout));
        assert!(!ColorWhen::Never.enabled(Stream::Stdout));
    }
}
