//! `fleet tasks --watch`: the view redrawn in place every second on the terminal's alternate
//! screen, scrolled with the keys, restored on exit.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;

use super::render::{Rendered, render};
use super::units::short_time;
use super::view::gather;
use crate::cli::context::Context;
use crate::cli::error::CliError;
use crate::cli::signals::Blocked as BlockedSignals;
use crate::cli::style::{Styled, Tone};

/// Redraws the view every second, and at once on a key or a resize, until q or Ctrl-C (or
/// SIGINT, SIGTERM, SIGHUP), restoring the terminal however it ends.
pub(super) fn watch(ctx: &Context, home: &Path, all: bool) -> Result<(), CliError> {
    let signals =
        BlockedSignals::block(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGWINCH])?;
    let screen = Screen::enter();
    let mut scroll = 0usize;
    loop {
        let (width, height) = terminal_size();
        let rendered = match gather(ctx, home, all) {
            Ok(view) => render(&view, Timestamp::now(), Some(width)),
            Err(error) => {
                let mut line = Styled::new();
                line.tone(Tone::Bad, &format!("error: {}", error.message));
                Rendered { head: vec![line], rows: Vec::new() }
            }
        };
        scroll = draw(&rendered, scroll, width, height, ctx.out.color);
        match next_input(&screen, &signals, Duration::from_secs(1)) {
            Input::Quit => return Ok(()),
            Input::Key(Key::Down) => scroll += 1,
            Input::Key(Key::Up) => scroll = scroll.saturating_sub(1),
            Input::Key(Key::PageDown) => scroll += page(&rendered, height),
            Input::Key(Key::PageUp) => scroll = scroll.saturating_sub(page(&rendered, height)),
            Input::Key(Key::Quit) => return Ok(()),
            Input::Key(Key::Other) | Input::Redraw => {}
        }
    }
}

/// The rows one screen holds below the head (at least one).
fn page(rendered: &Rendered, height: usize) -> usize {
    height.saturating_sub(rendered.head.len() + 1).max(1)
}

/// What ended a wait between redraws.
enum Input {
    Key(Key),
    /// A stop signal.
    Quit,
    /// The time is up, or the terminal was resized.
    Redraw,
}

/// Waits up to `timeout` for a key or a signal.
fn next_input(screen: &Screen, signals: &BlockedSignals, timeout: Duration) -> Input {
    const SLICE: Duration = Duration::from_millis(100);
    let start = std::time::Instant::now();
    while start.elapsed() < timeout {
        match signals.wait(Duration::ZERO) {
            Some(libc::SIGWINCH) => return Input::Redraw,
            Some(_) => return Input::Quit,
            None => {}
        }
        if let Some(key) = screen.key(SLICE) {
            return Input::Key(key);
        }
    }
    Input::Redraw
}

/// Draws the head, the rows from `scroll` on (as many as fit), and the footer line, each line
/// cut to `width`, over the previous screen; returns the scroll position it used.
fn draw(rendered: &Rendered, scroll: usize, width: usize, height: usize, color: bool) -> usize {
    let room = height.saturating_sub(rendered.head.len() + 1);
    let scroll = scroll.min(rendered.rows.len().saturating_sub(room));
    let visible = rendered.rows.iter().skip(scroll).take(room);
    // Home, then each line over the old one with the rest of the old line cleared, then the
    // rest of the screen cleared: no blank flash between two frames.
    let mut out = String::from("\x1b[H");
    for line in rendered.head.iter().take(height.saturating_sub(1)).chain(visible) {
        out.push_str(&line.truncated(width).render(color));
        out.push_str("\x1b[K\r\n");
    }
    let hidden = rendered.rows.len().saturating_sub(room);
    let position = if hidden > 0 {
        format!(
            " · rows {}-{} of {} · j/k PgUp/PgDn scroll",
            scroll + 1,
            (scroll + room).min(rendered.rows.len()),
            rendered.rows.len()
        )
    } else {
        String::new()
    };
    let mut footer = Styled::new();
    footer.tone(
        Tone::Faint,
        &format!("q quits{position} · {}", short_time(Timestamp::now(), Timestamp::now())),
    );
    out.push_str(&footer.truncated(width).render(color));
    out.push_str("\x1b[K\x1b[J");
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(out.as_bytes()).and_then(|()| stdout.flush());
    scroll
}

/// `(columns, rows)` of the terminal on stdout (80×24 when it cannot say).
pub(super) fn terminal_size() -> (usize, usize) {
    // SAFETY: TIOCGWINSZ fills a winsize struct we own.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 && size.ws_row > 0 {
        (usize::from(size.ws_col), usize::from(size.ws_row))
    } else {
        (80, 24)
    }
}

enum Key {
    Quit,
    Up,
    Down,
    PageUp,
    PageDown,
    Other,
}

/// The terminal while watching: the alternate screen, no cursor, and stdin — when it is the
/// terminal — read key by key (Ctrl-C arrives as a key); everything is restored on drop.
struct Screen {
    /// The terminal settings of stdin before, when stdin is a terminal put in raw mode.
    saved: Option<libc::termios>,
}

impl Screen {
    fn enter() -> Screen {
        let saved = std::io::stdin().is_terminal().then(raw_stdin).flatten();
        print_raw("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
        Screen { saved }
    }

    /// Waits up to `timeout` for a key; never reads stdin unless it is the terminal (a stdin
    /// at its end would read as a key at once, forever).
    fn key(&self, timeout: Duration) -> Option<Key> {
        if self.saved.is_none() {
            std::thread::sleep(timeout);
            return None;
        }
        let mut poll = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
        let millis = i32::try_from(timeout.as_millis()).unwrap_or(1000);
        // SAFETY: polls one descriptor we describe in `poll`.
        if unsafe { libc::poll(&mut poll, 1, millis) } <= 0 {
            return None;
        }
        let mut buf = [0u8; 16];
        // SAFETY: reads into a buffer we own, at most its length.
        let read = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast(), buf.len()) };
        let Ok(read) = usize::try_from(read) else { return Some(Key::Quit) };
        Some(match &buf[..read] {
            [] | [b'q' | b'Q' | 3 | 4, ..] => Key::Quit,
            [b'j', ..] | [0x1b, b'[', b'B', ..] => Key::Down,
            [b'k', ..] | [0x1b, b'[', b'A', ..] => Key::Up,
            [b' ', ..] | [0x1b, b'[', b'6', b'~', ..] => Key::PageDown,
            [0x1b, b'[', b'5', b'~', ..] => Key::PageUp,
            _ => Key::Other,
        })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        print_raw("\x1b[?25h\x1b[?1049l");
        if let Some(saved) = &self.saved {
            // SAFETY: restores the terminal settings read in `raw_stdin`.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved) };
        }
    }
}

/// Puts stdin in non-canonical mode without echo or signals; returns the settings before.
fn raw_stdin() -> Option<libc::termios> {
    // SAFETY: tcgetattr/tcsetattr on stdin with a termios struct we own.
    unsafe {
        let mut saved: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
            return None;
        }
        let mut raw = saved;
        raw.c_lflag &= !(libc::ICANON | libc::ECHO | libc::ISIG);
        raw.c_cc[libc::VMIN] = 1;
        raw.c_cc[libc::VTIME] = 0;
        (libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) == 0).then_some(saved)
    }
}

fn print_raw(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush());
}
