//! A pseudo-terminal for tests that need fleet to see a terminal (`fleet tasks --watch`,
//! `--color auto`): the child gets the terminal as stdin, stdout and stderr (and as its
//! controlling terminal, in a session of its own); the test reads everything it draws, types
//! keys, and looks at the last screen it drew.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A child process on a pseudo-terminal of a given size.
pub struct Pty {
    child: Child,
    master: File,
    output: Arc<Mutex<Vec<u8>>>,
    reader: Option<JoinHandle<()>>,
}

/// Opens a pseudo-terminal of `cols` × `rows`: the master side, and the path of its slave.
fn open(cols: u16, rows: u16) -> (File, String) {
    // SAFETY: posix_openpt/grantpt/unlockpt/ptsname_r on a descriptor we own, with a buffer we
    // own; every result is checked.
    unsafe {
        let fd = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(fd >= 0, "posix_openpt: {}", std::io::Error::last_os_error());
        let master = File::from(OwnedFd::from_raw_fd(fd));
        assert_eq!(libc::grantpt(fd), 0, "grantpt");
        assert_eq!(libc::unlockpt(fd), 0, "unlockpt");
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(fd, name.as_mut_ptr(), name.len()), 0, "ptsname_r");
        let size = libc::winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
        assert_eq!(libc::ioctl(fd, libc::TIOCSWINSZ, &size), 0, "TIOCSWINSZ");
        let path = std::ffi::CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned();
        (master, path)
    }
}

impl Pty {
    /// Starts `command` on a new terminal of `cols` × `rows`.
    pub fn spawn(mut command: Command, cols: u16, rows: u16) -> Pty {
        let (master, slave_path) = open(cols, rows);
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&slave_path)
            .expect("open the terminal's slave side");
        let stdio = |file: &File| Stdio::from(file.try_clone().expect("dup the terminal"));
        command.stdin(stdio(&slave)).stdout(stdio(&slave)).stderr(stdio(&slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new session, whose
        // controlling terminal is the one on stdin.
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().expect("start the command on the terminal");
        drop(slave);
        let output = Arc::new(Mutex::new(Vec::new()));
        let mut reading = master.try_clone().expect("dup the master side");
        let sink = Arc::clone(&output);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            // Ends with EIO once no process has the terminal open any more.
            while let Ok(n) = reading.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Pty { child, master, output, reader: Some(reader) }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the child wrote so far, as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output.lock().unwrap()).into_owned()
    }

    /// Types `bytes` on the terminal's keyboard.
    pub fn send(&mut self, bytes: &[u8]) {
        self.master.write_all(bytes).expect("type on the terminal");
    }

    /// The last screen drawn in place, whole: the text between the last frame end (`ESC [ J`,
    /// clear to the end of the screen) and the cursor-home (`ESC [ H`) before it, as lines,
    /// without colour codes and line clearing. A frame still arriving (the terminal passes a
    /// large write on in pieces) is not read half-way.
    pub fn screen(&self) -> Vec<String> {
        let text = self.text();
        let drawn = text.rfind("\x1b[J").map_or("", |end| &text[..end]);
        let frame = drawn.rsplit("\x1b[H").next().unwrap_or_default();
        // Lines end in "\r\n" as written, and the terminal turns "\n" into "\r\n" again.
        strip_escapes(frame)
            .split('\n')
            .map(|line| line.trim_end_matches('\r').to_owned())
            .collect()
    }

    /// Waits until the last screen satisfies `check`, returning it; panics after `within`.
    #[track_caller]
    pub fn wait_screen(
        &self,
        what: &str,
        within: Duration,
        check: impl Fn(&[String]) -> bool,
    ) -> Vec<String> {
        super::poll_until_showing(
            what,
            within,
            || Some(self.screen()).filter(|screen| check(screen)),
            || format!("last screen:\n{}", self.screen().join("\n")),
        )
    }

    /// Waits up to `within` for the child to exit; then waits for the rest of its output.
    pub fn wait(&mut self, within: Duration) -> Option<ExitStatus> {
        let status = super::poll_within(within, || self.child.try_wait().expect("try_wait"))?;
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        Some(status)
    }

    /// The terminal's settings now (as the child left them).
    pub fn termios(&self) -> libc::termios {
        // SAFETY: tcgetattr fills a termios struct we own, on a descriptor we own.
        unsafe {
            let mut termios: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(self.master.as_raw_fd(), &mut termios), 0, "tcgetattr");
            termios
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `text` without CSI escape sequences (colours, clearing, cursor movement).
pub fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}
