//! mcpr's own colour goes to a terminal only, and never with `NO_COLOR` set: its log lines (a
//! warning about an unreadable tool cache, here) reach a pipe or a log file as plain text, and
//! a real pseudo-terminal with `NO_COLOR=1` as text without colour codes. On a terminal without
//! `NO_COLOR` they are coloured, which shows that the test can see colour at all.

#![cfg(unix)]

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use portable_pty::CommandBuilder;
use support::{MCPR, config_file, temp_dir};

/// Bound on every run.
const WAIT: Duration = Duration::from_secs(60);

/// What the warning says.
const WARNING: &str = "tool cache unreadable";

/// A home whose tool cache is not a database (every run warns about it), and a config with one
/// mock server.
struct Home {
    dir: tempfile::TempDir,
    config: String,
}

impl Home {
    fn new() -> Home {
        let dir = temp_dir();
        let cache = dir.path().join(".cache/mcpr");
        std::fs::create_dir_all(&cache).expect("create the cache dir");
        std::fs::write(cache.join("tools.sqlite"), "not a database\n".repeat(64))
            .expect("write a broken cache");
        std::fs::create_dir_all(dir.path().join("project")).expect("create the project dir");
        let config = config_file(dir.path(), &[("m", &[])])
            .to_string_lossy()
            .into_owned();
        Home { dir, config }
    }

    /// The environment of a run: this home's directories and a colour terminal type.
    fn environment(&self) -> Vec<(&'static str, String)> {
        let home = self.dir.path();
        let at = |sub: &str| home.join(sub).to_string_lossy().into_owned();
        vec![
            ("HOME", home.to_string_lossy().into_owned()),
            ("XDG_CONFIG_HOME", at(".config")),
            ("XDG_CACHE_HOME", at(".cache")),
            ("XDG_DATA_HOME", at(".local/share")),
            ("XDG_STATE_HOME", at(".local/state")),
            ("TERM", "xterm-256color".to_owned()),
        ]
    }

    fn args(&self) -> [&str; 4] {
        ["--strict-config", "--config", &self.config, "tools"]
    }

    fn project(&self) -> std::path::PathBuf {
        self.dir.path().join("project")
    }
}

/// The variables a run must not inherit: they would decide about colour for it.
const COLOUR_VARIABLES: [&str; 6] = [
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "RUST_LOG",
    "COLORTERM",
];

/// `mcpr tools` with stderr to a pipe; its stderr.
fn on_a_pipe(home: &Home) -> String {
    let mut command = Command::new(MCPR);
    command
        .args(home.args())
        .current_dir(home.project())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for key in COLOUR_VARIABLES {
        command.env_remove(key);
    }
    for (key, value) in home.environment() {
        command.env(key, value);
    }
    let mut child = support::ChildGuard::spawn(&mut command);
    let stderr = support::drain(child.0.stderr.take().expect("stderr"));
    let status = support::wait_bounded(&mut child, WAIT, "mcpr tools");
    let stderr = stderr.join().expect("stderr reader");
    assert!(status.success(), "{stderr}");
    stderr
}

/// `mcpr tools` on a real pseudo-terminal, `NO_COLOR` set to `no_color` (`None`: unset) and
/// `extra` set; everything it wrote there.
fn on_a_terminal(home: &Home, no_color: Option<&str>, extra: &[(&str, &str)]) -> String {
    let mut command = CommandBuilder::new(MCPR);
    command.args(home.args());
    command.cwd(home.project());
    for key in COLOUR_VARIABLES {
        command.env_remove(key);
    }
    for (key, value) in home.environment() {
        command.env(key, value);
    }
    if let Some(value) = no_color {
        command.env("NO_COLOR", value);
    }
    for (key, value) in extra {
        command.env(key, value);
    }
    let support::pty::Spawned {
        mut child, output, ..
    } = support::pty::spawn(command, 40, 200);
    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            assert!(status.success(), "{}", String::from_utf8_lossy(&seen));
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("mcpr did not exit:\n{}", String::from_utf8_lossy(&seen));
        }
        if let Ok(bytes) = output.recv_timeout(Duration::from_millis(20)) {
            seen.extend(bytes);
        }
    }
    // What it wrote last may still be in the pty.
    while let Ok(bytes) = output.recv_timeout(Duration::from_millis(500)) {
        seen.extend(bytes);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// The colour sequences (SGR, `ESC [ ... m`) in `text`. Other sequences, such as those that
/// redraw the connection spinner, are no colour.
fn colour_codes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("\x1b[") {
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_digit() || c == ';'))
            .unwrap_or(after.len());
        if after[end..].starts_with('m') {
            found.push(format!("ESC[{}m", &after[..end]));
        }
        rest = after;
    }
    found
}

#[test]
fn log_lines_in_a_pipe_carry_no_escape_codes() {
    let home = Home::new();
    let stderr = on_a_pipe(&home);
    assert!(
        stderr.contains(WARNING),
        "no warning was logged: {stderr:?}"
    );
    assert!(
        !stderr.contains('\x1b'),
        "an escape code in a pipe: {stderr:?}"
    );
}

#[test]
fn no_color_keeps_a_terminal_free_of_colour() {
    let home = Home::new();
    // Also when another variable asks for colour by force: `NO_COLOR` wins.
    for extra in [&[][..], &[("CLICOLOR_FORCE", "1")]] {
        let seen = on_a_terminal(&home, Some("1"), extra);
        assert!(seen.contains(WARNING), "no warning was logged: {seen:?}");
        assert_eq!(
            colour_codes(&seen),
            Vec::<String>::new(),
            "{extra:?}: {seen:?}"
        );
    }
}

#[test]
fn a_terminal_without_no_color_gets_colour() {
    let home = Home::new();
    for no_color in [None, Some("")] {
        let seen = on_a_terminal(&home, no_color, &[]);
        assert!(seen.contains(WARNING), "no warning was logged: {seen:?}");
        assert!(
            !colour_codes(&seen).is_empty(),
            "NO_COLOR={no_color:?}: no colour on a terminal: {seen:?}"
        );
    }
}
