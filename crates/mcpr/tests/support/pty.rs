//! `mcpr` on a real pseudo-terminal of a chosen width, in a home of the test's own: what it
//! writes, and keys sent to it. For what mcpr does only on a terminal (cutting lines to the
//! width, the shell's start-up line).

use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use portable_pty::{CommandBuilder, PtySize, native_pty_system};

use super::MCPR;

/// Bound on every wait for output or exit.
const WAIT: Duration = Duration::from_secs(60);

/// A command started on a pty of its own.
pub(crate) struct Spawned {
    pub(crate) child: Box<dyn portable_pty::Child + Send + Sync>,
    /// Keys sent here reach the command as typed.
    pub(crate) writer: Box<dyn Write + Send>,
    /// What the command writes, in the chunks a reader thread got (it reads until the command
    /// and the terminal are gone).
    pub(crate) output: Receiver<Vec<u8>>,
}

/// Start `command` on a new pseudo-terminal of `rows` × `columns`.
pub(crate) fn spawn(command: CommandBuilder, rows: u16, columns: u16) -> Spawned {
    let pty = native_pty_system()
        .openpty(PtySize {
            rows,
            cols: columns,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("open a pty");
    let child = pty
        .slave
        .spawn_command(command)
        .expect("start a command on a pty");
    drop(pty.slave);
    let mut reader = pty.master.try_clone_reader().expect("pty reader");
    let writer = pty.master.take_writer().expect("pty writer");
    let (sender, output) = channel();
    std::thread::spawn(move || {
        // Keeps the master open for as long as the child may write.
        let _master = pty.master;
        let mut buffer = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buffer) {
            if n == 0 || sender.send(buffer[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    Spawned {
        child,
        writer,
        output,
    }
}

/// Wait (bounded) for `child` to exit, adding what it wrote to `seen`, the last of it too;
/// its exit code.
pub(crate) fn wait_exit(
    child: &mut (dyn portable_pty::Child + Send + Sync),
    output: &Receiver<Vec<u8>>,
    seen: &mut String,
) -> u32 {
    let deadline = Instant::now() + WAIT;
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait for mcpr") {
            break status.exit_code();
        }
        assert!(Instant::now() < deadline, "mcpr did not exit:\n{seen}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // What it wrote last may still be in the pty.
    while let Ok(bytes) = output.recv_timeout(Duration::from_millis(500)) {
        seen.push_str(&String::from_utf8_lossy(&bytes));
    }
    code
}

/// A running `mcpr` on a pty.
pub(crate) struct Pty {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    output: Receiver<Vec<u8>>,
    /// Everything read so far.
    seen: String,
}

impl Pty {
    /// Start `mcpr ARGS` in `home/project` on a terminal `columns` wide, with every config,
    /// cache and state location in `home`.
    pub(crate) fn start(home: &Path, columns: u16, args: &[&str]) -> Pty {
        let mut command = CommandBuilder::new(MCPR);
        command.args(args);
        command.cwd(home.join("project"));
        command.env("HOME", home);
        command.env("XDG_CONFIG_HOME", home.join(".config"));
        command.env("XDG_CACHE_HOME", home.join(".cache"));
        command.env("XDG_DATA_HOME", home.join(".local/share"));
        command.env("XDG_STATE_HOME", home.join(".local/state"));
        command.env("TERM", "xterm");
        for key in [
            "CODEX_HOME",
            "CLAUDE_CONFIG_DIR",
            "PI_CODING_AGENT_DIR",
            "MCPR_TIMEOUT_MS",
            "NO_COLOR",
            mcp_runtime::nesting::NESTING_ENV,
        ] {
            command.env_remove(key);
        }
        let Spawned {
            child,
            writer,
            output,
        } = spawn(command, 50, columns);
        Pty {
            child,
            writer,
            output,
            seen: String::new(),
        }
    }

    /// Send `keys` in one write.
    pub(crate) fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("write keys");
        self.writer.flush().expect("flush keys");
    }

    /// Wait until `needle` has appeared; returns everything written so far.
    pub(crate) fn wait_for(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + WAIT;
        while !self.seen.contains(needle) {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(remaining) {
                Ok(bytes) => self.seen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => panic!("no {needle:?} on the terminal; it shows:\n{}", self.seen),
            }
        }
        self.seen.clone()
    }

    /// Everything written until mcpr exits, and its exit code.
    pub(crate) fn finish(mut self) -> (String, u32) {
        let code = wait_exit(self.child.as_mut(), &self.output, &mut self.seen);
        (std::mem::take(&mut self.seen), code)
    }
}

impl Drop for Pty {
    /// A failed test must not leave mcpr running (its servers go with it).
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}

/// The lines `screen` leaves, roughly as a terminal shows them: escape sequences dropped, each
/// line from its last carriage return.
pub(crate) fn screen_lines(screen: &str) -> Vec<String> {
    let plain = strip_escapes(screen);
    plain
        .split('\n')
        .map(|line| {
            line.rsplit('\r')
                .find(|part| !part.is_empty())
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

/// `text` without its CSI escape sequences (`ESC [ ... letter`) and other `ESC x` pairs.
pub(crate) fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        // `ESC [ ... letter` is dropped whole; any other `ESC x` pair with its next char.
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() || c == '~' {
                    break;
                }
            }
        }
    }
    out
}
