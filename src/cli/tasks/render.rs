//! `fleet tasks` for people: the header, the table (fitted to the terminal's width, the least
//! needed columns first to go), and the short forms of times, durations, tokens and costs the
//! other views share.

use jiff::Timestamp;

use super::units::{cost, duration, short_time, tokens};
use super::view::{TaskRow, TasksView};
use crate::cli::output::printable;
use crate::cli::style::{Styled, Tone};

/// The human view in parts: `--watch` keeps the head in place and scrolls the rows.
pub struct Rendered {
    /// The totals, the pauses and the table's column header.
    pub head: Vec<Styled>,
    /// Two lines per task (its numbers, then its title and directory), or a line saying there
    /// is none, and the footnote.
    pub rows: Vec<Styled>,
}

impl Rendered {
    /// Every line, head first.
    pub fn into_styled(self) -> Styled {
        let mut text = Styled::new();
        for (n, line) in self.head.into_iter().chain(self.rows).enumerate() {
            if n > 0 {
                text.newline();
            }
            text.append(line);
        }
        text
    }
}

/// The human view, fitted to `width` columns when it is known (a terminal): the header wraps
/// and the least needed columns are left out rather than cut off.
pub fn render(view: &TasksView, now: Timestamp, width: Option<usize>) -> Rendered {
    let mut head = header(view, width);
    for warning in &view.warnings {
        let mut line = Styled::new();
        line.tone(Tone::Bad, &format!("warning: {}", printable(warning)));
        head.push(line);
    }
    for pause in &view.pauses {
        let coder = match (pause.coder.as_str(), &pause.account, &pause.model) {
            ("*", _, _) => "every coder".to_owned(),
            (coder, None, Some(model)) => crate::supervisor::hold::model_scope(coder, model),
            (coder, account, _) => crate::coders::account::qualified(coder, account.as_deref()),
        };
        let until =
            pause.until.map(|u| format!(" until {}", short_time(u, now))).unwrap_or_default();
        let mut line = Styled::new();
        line.tone(Tone::Warn, &format!("⏸ {coder} paused{until} ({})", pause.cause))
            .plain(&format!(": {}", printable(&pause.detail)));
        head.push(line);
    }
    let mut rows = Vec::new();
    if view.tasks.is_empty() {
        let mut none = Styled::new();
        none.tone(Tone::Faint, "No running tasks.");
        rows.push(none);
    } else {
        let (column_header, table_rows) = table(&view.tasks, now, width);
        head.push(column_header);
        rows.extend(table_rows);
        if view.tasks.iter().any(|t| !t.runs_with.default_coder || !t.runs_with.default_model) {
            let mut note = Styled::new();
            note.tone(Tone::Faint, "* set on the task (not the configured default)");
            rows.push(note);
        }
        if view.tasks.iter().any(|t| t.list_priced) {
            let mut note = Styled::new();
            note.tone(
                Tone::Faint,
                &format!(
                    "$ list prices of {}; [prices.\"MODEL\"] in runtime.toml overrides them",
                    view.prices_as_of
                ),
            );
            rows.push(note);
        }
    }
    for task in &view.not_here {
        let mut line = Styled::new();
        line.tone(Tone::Warn, &format!("○ {} not runnable here", task.id)).plain(&format!(
            ": {} — {}",
            printable(&task.title),
            printable(&task.reason)
        ));
        rows.push(line);
    }
    for task in &view.waiting {
        let mut line = Styled::new();
        line.tone(Tone::Warn, &format!("○ {} waiting", task.id)).plain(&format!(
            ": {} — {}",
            printable(&task.title),
            printable(&task.reason)
        ));
        rows.push(line);
    }
    for task in &view.unheld {
        let mut line = Styled::new();
        line.tone(Tone::Bad, &format!("✗ {} in progress, held by no one", task.id)).plain(
            &format!(
                ": {} — {} (put it back with `fleet release {}`)",
                printable(&task.title),
                printable(&task.why),
                task.id
            ),
        );
        rows.push(line);
    }
    for reservation in &view.reservations {
        let mut line = Styled::new();
        line.plain(&format!(
            "⚑ {} {}",
            reservation.id,
            printable(&crate::cli::reserve::describe(reservation))
        ));
        rows.push(line);
    }
    Rendered { head, rows }
}

/// `fleet: 1/2 running · 0 ready · 0 blocked · $0.013 today · supervisor …`, on two lines when
/// it does not fit `width`.
fn header(view: &TasksView, width: Option<usize>) -> Vec<Styled> {
    let who = match view.supervisors.as_slice() {
        [] => "no supervisor running".to_owned(),
        [one] => format!("supervisor {} (pid {} on {})", one.name, one.pid, one.host),
        many => format!("{} supervisors", many.len()),
    };
    let counts = format!(
        "fleet: {}/{} running · {} ready · {} blocked · {} today",
        view.running,
        view.max_concurrent,
        view.ready,
        view.blocked,
        cost(Some(view.cost_today_usd))
    );
    let mut first = Styled::new();
    first.tone(Tone::Strong, &counts);
    let one_line = counts.chars().count() + 3 + who.chars().count();
    if width.is_some_and(|width| one_line > width) {
        let mut second = Styled::new();
        second.plain(&format!("       {who}"));
        return vec![first, second];
    }
    first.plain(&format!(" · {who}"));
    vec![first]
}

/// The columns of the table, and which to leave out first when the terminal is narrow (the
/// start time, then the attempt, then the tokens; the rest always shows).
const COLUMNS: [&str; 9] =
    ["ID", "CODER·MODEL", "STARTED", "ELAPSED", "IDLE", "CTX", "IN/OUT", "COST", "TRY"];
const DROPPABLE: [&str; 3] = ["STARTED", "TRY", "IN/OUT"];

/// The table: its column header, then a line of numbers per task followed by its title and
/// working directory.
fn table(tasks: &[TaskRow], now: Timestamp, width: Option<usize>) -> (Styled, Vec<Styled>) {
    let mut cells: Vec<Vec<String>> = vec![COLUMNS.iter().map(|h| (*h).to_owned()).collect()];
    for task in tasks {
        cells.push(vec![
            task.id.clone(),
            coder_model(task),
            task.started_at.map_or_else(|| "-".into(), |t| short_time(t, now)),
            task.elapsed_secs.map_or_else(|| "-".into(), duration),
            match (task.running, task.idle_secs) {
                (true, _) if task.retrying.is_some() => {
                    let what = task.retrying.as_deref().unwrap_or_default();
                    format!("retry {}", what.trim_start_matches("HTTP "))
                }
                (true, Some(idle)) => duration(idle),
                (false, _) => task.status.clone(),
                _ => "-".into(),
            },
            task.context_pct.map_or_else(|| "-".into(), |p| format!("{p:.0}%")),
            format!("{}/{}", tokens(task.tokens_in), tokens(task.tokens_out)),
            cost(task.cost_usd),
            task.attempt.to_string(),
        ]);
    }
    let cells: Vec<Vec<String>> = cells
        .into_iter()
        .map(|row| row.iter().map(|c| printable(c).into_owned()).collect())
        .collect();
    let widths: Vec<usize> = (0..COLUMNS.len())
        .map(|col| cells.iter().map(|row| row[col].chars().count()).max().unwrap_or(0))
        .collect();
    let shown = shown_columns(&widths, width);
    let line = |row: &[String]| {
        let parts: Vec<String> = shown.iter().map(|&col| pad(&row[col], widths[col])).collect();
        parts.join("  ").trim_end().to_owned()
    };
    let mut column_header = Styled::new();
    column_header.tone(Tone::Faint, &line(&cells[0]));
    let mut rows = Vec::new();
    for (task, row) in tasks.iter().zip(&cells[1..]) {
        let text = line(row);
        let (id, rest) = text.split_at(row[0].len().min(text.len()));
        let mut numbers = Styled::new();
        numbers.tone(if task.running { Tone::Active } else { Tone::Faint }, id).plain(rest);
        rows.push(numbers);
        let mut title = Styled::new();
        title.plain(&format!(
            "{}  {} — {}",
            " ".repeat(widths[0]),
            printable(&task.title),
            printable(&tilde(&task.cwd))
        ));
        rows.push(title);
    }
    (column_header, rows)
}

/// The indexes of the columns that fit `width`, leaving out [`DROPPABLE`] ones in order.
fn shown_columns(widths: &[usize], width: Option<usize>) -> Vec<usize> {
    let mut shown: Vec<usize> = (0..COLUMNS.len()).collect();
    let total = |shown: &[usize]| {
        shown.iter().map(|&col| widths[col]).sum::<usize>() + 2 * shown.len().saturating_sub(1)
    };
    let Some(width) = width else { return shown };
    for name in DROPPABLE {
        if total(&shown) <= width {
            break;
        }
        shown.retain(|&col| COLUMNS[col] != name);
    }
    shown
}

fn pad(text: &str, width: usize) -> String {
    let count = text.chars().count();
    format!("{text}{}", " ".repeat(width.saturating_sub(count)))
}

/// `claude·sonnet`, with `*` after a part set on the task; `claude@work·sonnet` when the task
/// runs on the coder's account `work`.
pub fn coder_model(task: &TaskRow) -> String {
    let mark = |default: bool| if default { "" } else { "*" };
    let runs = &task.runs_with;
    let model = if runs.model.is_empty() { "-" } else { runs.model.as_str() };
    let account = task.account.as_deref().map(|a| format!("@{a}")).unwrap_or_default();
    format!(
        "{}{}{account}·{model}{}",
        runs.coder,
        mark(runs.default_coder),
        mark(runs.default_model)
    )
}

/// A path with the home directory shown as `~`.
fn tilde(path: &str) -> String {
    match std::env::var("HOME") {
        Ok(home) if !home.is_empty() && path.starts_with(&home) => {
            format!("~{}", &path[home.len()..])
        }
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::tasks::view::Effective;

    #[test]
    fn a_row_on_an_account_fits_80_columns() {
        let now = Timestamp::now();
        let row = TaskRow {
            id: "fleet-a3f".into(),
            title: "Fix the login".into(),
            status: "in_progress".into(),
            running: true,
            runs_with: Effective {
                coder: "claude".into(),
                model: "sonnet".into(),
                default_coder: true,
                default_model: true,
            },
            account: Some("work".into()),
            supervisor: "fleet@host".into(),
            attempt: 1,
            started_at: Some(now),
            elapsed_secs: Some(725),
            idle_secs: Some(65),
            retrying: None,
            context_peak: 90_000,
            context_limit: Some(200_000),
            context_pct: Some(45.0),
            tokens_in: 123_400,
            tokens_out: 5_600,
            cost_usd: Some(0.123),
            cost_source: None,
            list_priced: false,
            total_cost_usd: Some(0.123),
            cwd: "/src".into(),
        };
        let text = |(header, rows): (Styled, Vec<Styled>)| -> Vec<String> {
            std::iter::once(header).chain(rows).map(|line| line.render(false)).collect()
        };
        let lines = text(table(std::slice::from_ref(&row), now, Some(80)));
        assert!(lines[1].starts_with("fleet-a3f  claude@work·sonnet  12m05s"), "{lines:#?}");
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{lines:#?}");
        let plain = TaskRow { account: None, tokens_in: 950, tokens_out: 20, ..row };
        let lines = text(table(&[plain], now, Some(80)));
        assert!(lines[0].contains("STARTED"), "room for every column: {lines:#?}");
    }

    fn wide_view() -> TasksView {
        let now = Timestamp::now();
        let row = TaskRow {
            id: "fleet-3k2x".into(),
            title: "A title long enough to be cut at the edge of an eighty-column terminal".into(),
            status: "in_progress".into(),
            running: true,
            runs_with: Effective {
                coder: "claude".into(),
                model: "claude-sonnet-4-5-20250929".into(),
                default_coder: true,
                default_model: false,
            },
            account: None,
            supervisor: "fleet@a-long-host-name".into(),
            attempt: 12,
            started_at: Some(now),
            elapsed_secs: Some(7620),
            idle_secs: Some(75),
            retrying: None,
            context_peak: 150_000,
            context_limit: Some(200_000),
            context_pct: Some(75.0),
            tokens_in: 1_234_567,
            tokens_out: 98_765,
            cost_usd: Some(12.5),
            cost_source: Some(crate::supervisor::ledger::CostSource::Priced),
            list_priced: true,
            total_cost_usd: Some(30.0),
            cwd: "/srv/projects/one".into(),
        };
        TasksView {
            supervisors: Vec::new(),
            running: 1,
            max_concurrent: 8,
            ready: 120,
            blocked: 4,
            cost_today_usd: 123.45,
            prices_as_of: "2025-11",
            pauses: Vec::new(),
            tasks: vec![row],
            not_here: Vec::new(),
            waiting: Vec::new(),
            unheld: Vec::new(),
            reservations: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// The watched screen shows what the view could not read at its head (the one-shot view
    /// prints it on stderr instead, before the view).
    #[test]
    fn a_warning_heads_the_rendered_view() {
        let view = TasksView { warnings: vec!["holds.json is broken".into()], ..wide_view() };
        let rendered = render(&view, Timestamp::now(), Some(200));
        let lines: Vec<String> = rendered.head.iter().map(|l| l.render(false)).collect();
        assert!(lines[1].contains("warning: holds.json is broken"), "{lines:?}");
    }

    #[test]
    fn a_narrow_terminal_loses_the_least_needed_columns_not_the_cost() {
        let view = wide_view();
        let full = render(&view, Timestamp::now(), None).into_styled().render(false);
        assert!(full.lines().any(|l| l.contains("STARTED") && l.chars().count() > 80), "{full}");
        // A cost fleet priced from its built-in table says the table's date.
        assert!(full.contains("$ list prices of 2025-11; [prices.\"MODEL\"]"), "{full}");
        let narrow = render(&view, Timestamp::now(), Some(80));
        let numbers = narrow.rows[0].render(false);
        assert!(numbers.chars().count() <= 80, "{numbers}");
        let header = narrow.head.last().unwrap().render(false);
        assert!(!header.contains("STARTED") && header.contains("COST"), "{header}");
        assert!(numbers.contains("$12.50") && numbers.contains("2h07m"), "{numbers}");
        assert_eq!(render(&view, Timestamp::now(), Some(200)).head.len(), 2, "one header line");
        assert_eq!(narrow.head.len(), 3, "the header wraps at 80 columns");
    }
}
