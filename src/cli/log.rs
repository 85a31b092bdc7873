//! `fleet log [-n N] [--follow] [--json]`: the supervisor's run log,
//! `$FLEET_HOME/logs/fleet-run.log` (see `cli::logging`), one timestamped line per event.
//!
//! Also home of [`follow`], the `tail -f` loop `fleet task … --follow` shares.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use super::context::{Context, fleet_home};
use super::error::CliError;
use super::logging::{LOG_DIR, RUN_LOG_FILE};
use super::output::write_stdout;

/// How often a followed file is checked for more.
const FOLLOW_POLL: Duration = Duration::from_millis(200);

#[derive(Debug, clap::Args)]
pub struct LogArgs {
    /// Only the last N lines (0: all).
    #[arg(short = 'n', long, default_value_t = 50)]
    pub lines: usize,
    /// Keep printing lines as they are written, until Ctrl-C.
    #[arg(short, long)]
    pub follow: bool,
}

/// One line of the run log, as `--json` prints it (JSON Lines).
#[derive(Debug, Serialize)]
pub struct LogLine {
    pub ts: String,
    pub level: String,
    /// The event's type (`claimed`, `finished`, …) when the line is a supervisor event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    pub message: String,
}

impl LogLine {
    /// Splits `2026-…Z  INFO message event="claimed"`; `None` for a line of another shape.
    pub fn parse(line: &str) -> Option<LogLine> {
        let (ts, rest) = line.split_once(' ')?;
        ts.parse::<jiff::Timestamp>().ok()?;
        let (level, message) = rest.trim_start().split_once(' ').unwrap_or((rest.trim(), ""));
        let message = message.trim();
        let (message, event) = match message.rsplit_once(" event=\"") {
            Some((text, event))
                if event.ends_with('"') && !event[..event.len() - 1].contains('"') =>
            {
                (text.to_owned(), Some(event[..event.len() - 1].to_owned()))
            }
            _ => (message.to_owned(), None),
        };
        Some(LogLine { ts: ts.to_owned(), level: level.to_owned(), event, message })
    }
}

pub fn cmd_log(ctx: &Context, args: LogArgs) -> Result<(), CliError> {
    let path = fleet_home()?.join(LOG_DIR).join(RUN_LOG_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound && args.follow => String::new(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::new(format!("no supervisor log at {}", path.display()))
                .with_hint("`fleet run` writes it; start one, or check FLEET_HOME"));
        }
        Err(error) => {
            return Err(CliError::new(format!("reading {}: {error}", path.display())));
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    let from = if args.lines == 0 { 0 } else { lines.len().saturating_sub(args.lines) };
    let json = ctx.out.json;
    for line in &lines[from..] {
        print_log_line(line, json);
    }
    if args.follow {
        follow(&path, text.len() as u64, || false, |line| print_log_line(line, json));
    }
    Ok(())
}

fn print_log_line(line: &str, json: bool) {
    if !json {
        write_stdout(line);
    } else if let Some(parsed) = LogLine::parse(line)
        && let Ok(text) = serde_json::to_string(&parsed)
    {
        write_stdout(&text);
    }
}

/// Prints the lines appended to `path` after byte `offset` as they come, until `done` says so
/// (checked when nothing new arrived; once it is true, what is left is read and printed).
/// A file replaced by a rotation is read from its start.
pub fn follow(path: &Path, mut offset: u64, done: impl Fn() -> bool, mut print: impl FnMut(&str)) {
    let mut partial = String::new();
    loop {
        let (bytes, rotated) = read_from(path, offset);
        if rotated {
            offset = 0;
            continue;
        }
        offset += bytes.len() as u64;
        partial.push_str(&String::from_utf8_lossy(&bytes));
        while let Some(end) = partial.find('\n') {
            let line: String = partial.drain(..=end).collect();
            print(line.trim_end_matches('\n'));
        }
        if bytes.is_empty() {
            if done() {
                let (rest, _) = read_from(path, offset);
                partial.push_str(&String::from_utf8_lossy(&rest));
                partial.lines().for_each(&mut print);
                return;
            }
            std::thread::sleep(FOLLOW_POLL);
        }
    }
}

/// The bytes of `path` after `offset`, and whether the file is now shorter than that (rotated
/// or truncated).
fn read_from(path: &Path, offset: u64) -> (Vec<u8>, bool) {
    let Ok(mut file) = std::fs::File::open(path) else { return (Vec::new(), false) };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len < offset {
        return (Vec::new(), true);
    }
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(offset)).is_ok() {
        let _ = file.read_to_end(&mut bytes);
    }
    (bytes, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_splits_into_time_level_event_and_message() {
        let line = r#"2026-03-01T12:00:00.123Z  INFO ▶ t-1 attempt 1 (fake): Tidy event="claimed""#;
        let parsed = LogLine::parse(line).unwrap();
        assert_eq!(parsed.ts, "2026-03-01T12:00:00.123Z");
        assert_eq!(parsed.level, "INFO");
        assert_eq!(parsed.event.as_deref(), Some("claimed"));
        assert_eq!(parsed.message, "▶ t-1 attempt 1 (fake): Tidy");
        assert!(LogLine::parse("not a log line").is_none());
    }
}
