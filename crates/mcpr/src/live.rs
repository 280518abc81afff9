//! A running call's progress as the user sees it: on a terminal, one live line on stderr with
//! the status of its task when it runs as one, the server's message, its progress and total,
//! and the time so far; for scripts, one JSON
//! object per line on stderr (`mcpr call --progress-json`). The line is cleared before the
//! result is printed, so it never mixes with the output, and nothing is drawn without a
//! terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use mcp_runtime::client::{EVENT_BUFFER, ProgressUpdate, TaskState};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::term;

/// How often the line is redrawn without news from the server (the spinner and the time).
const TICK: Duration = Duration::from_millis(250);

/// Without news from the server, the line appears only once the call has run this long, so
/// that quick calls do not flicker.
const SHOW_AFTER: Duration = Duration::from_millis(500);

/// Frames of the spinner at the start of the line.
const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Width assumed when the terminal does not say.
const DEFAULT_WIDTH: usize = 80;

/// How a call's progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Not at all.
    Off,
    /// A live line on the terminal.
    Line,
    /// One JSON object per progress notification, a line each, on stderr.
    Json,
}

impl Mode {
    /// JSON lines when asked for; else the live line when stderr is a terminal and the user
    /// did not ask for quiet; else nothing.
    pub(crate) fn choose(quiet: bool, json_lines: bool) -> Mode {
        if json_lines {
            Mode::Json
        } else if quiet || !std::io::stderr().is_terminal() {
            Mode::Off
        } else {
            Mode::Line
        }
    }
}

/// Shows one call's progress until [`finish`](Self::finish) is awaited.
pub(crate) struct Display {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    /// Where the call's task states go (the live line only).
    task_status: Option<mpsc::Sender<TaskState>>,
}

impl Display {
    /// Start showing the progress of a call of `what` (a tool name). Returns the display and
    /// the sender to hand to the call (`CallOptions::with_progress`); `None` when `mode` is
    /// [`Mode::Off`], so the call does not ask the server for progress nobody reads.
    pub(crate) fn start(mode: Mode, what: &str) -> (Display, Option<mpsc::Sender<ProgressUpdate>>) {
        if mode == Mode::Off {
            let display = Display {
                stop: None,
                task: None,
                task_status: None,
            };
            return (display, None);
        }
        let (sender, updates) = mpsc::channel(EVENT_BUFFER);
        let (stop, stopped) = oneshot::channel();
        let what = term::line(what).into_owned();
        let (task_status, states) = match mode {
            Mode::Line => {
                let (sender, states) = mpsc::channel(EVENT_BUFFER);
                (Some(sender), Some(states))
            }
            _ => (None, None),
        };
        let task = tokio::spawn(show(mode, what, updates, states, stopped));
        let display = Display {
            stop: Some(stop),
            task: Some(task),
            task_status,
        };
        (display, Some(sender))
    }

    /// The sender for the call's task states (`CallOptions::with_task_status`), shown on the
    /// live line; `None` when there is no line.
    pub(crate) fn task_status(&self) -> Option<mpsc::Sender<TaskState>> {
        self.task_status.clone()
    }

    /// Stop showing progress: the line is cleared (and every update already received is
    /// written, in JSON mode) before this returns.
    pub(crate) async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for Display {
    fn drop(&mut self) {
        // A display dropped without `finish` (an early return) must not keep drawing.
        if let Some(task) = self.task.take() {
            task.abort();
            clear_line();
        }
    }
}

/// The display's task: draw on news and on every tick until told to stop.
async fn show(
    mode: Mode,
    what: String,
    mut updates: mpsc::Receiver<ProgressUpdate>,
    mut states: Option<mpsc::Receiver<TaskState>>,
    mut stopped: oneshot::Receiver<()>,
) {
    let started = Instant::now();
    let mut tick = tokio::time::interval(TICK);
    let mut last: Option<ProgressUpdate> = None;
    let mut state: Option<TaskState> = None;
    let mut open = true;
    let mut drawn = false;
    let mut frame = 0usize;
    loop {
        tokio::select! {
            biased;
            _ = &mut stopped => break,
            update = updates.recv(), if open => match update {
                Some(update) if mode == Mode::Json => write_json(&update, started.elapsed()),
                Some(update) => last = Some(update),
                None => open = false,
            },
            newer = next_state(&mut states) => match newer {
                Some(newer) => state = Some(newer),
                None => states = None,
            },
            _ = tick.tick() => frame = frame.wrapping_add(1),
        }
        let elapsed = started.elapsed();
        if mode == Mode::Line && (last.is_some() || state.is_some() || elapsed >= SHOW_AFTER) {
            let spinner = SPINNER[frame % SPINNER.len()];
            let text = line_text(&what, state.as_ref(), last.as_ref(), elapsed);
            draw(&format!("{spinner} {text}"));
            drawn = true;
        }
    }
    if mode == Mode::Json {
        // Updates that arrived with the result: the caller waits for them.
        while let Ok(update) = updates.try_recv() {
            write_json(&update, started.elapsed());
        }
    }
    if drawn {
        clear_line();
    }
}

/// The next task state, or never when there is no channel.
async fn next_state(states: &mut Option<mpsc::Receiver<TaskState>>) -> Option<TaskState> {
    match states {
        Some(states) => states.recv().await,
        None => std::future::pending().await,
    }
}

/// `echo: step 2 of 5 [2/5, 40%] 3 s`, or `echo: running, 3 s` before any news; a call run
/// as a task says its status first: `echo: task working (copying) [2/5, 40%] 3 s`.
fn line_text(
    what: &str,
    state: Option<&TaskState>,
    update: Option<&ProgressUpdate>,
    elapsed: Duration,
) -> String {
    let seconds = elapsed.as_secs();
    let mut text = format!("{what}:");
    if let Some(state) = state {
        text.push_str(&format!(" task {}", state.status));
        if let Some(message) = state
            .status_message
            .as_deref()
            .filter(|m| !m.trim().is_empty())
        {
            text.push_str(&format!(" ({})", term::line(message)));
        }
    }
    let Some(update) = update else {
        if state.is_none() {
            text.push_str(" running,");
        }
        text.push_str(&format!(" {seconds} s"));
        return text;
    };
    if let Some(message) = update.message.as_deref().filter(|m| !m.trim().is_empty()) {
        text.push(' ');
        text.push_str(&term::line(message));
    }
    let progress = number(update.progress);
    match update.total.filter(|total| *total > 0.0) {
        Some(total) => {
            let percent = (update.progress / total * 100.0).clamp(0.0, 100.0);
            text.push_str(&format!(" [{progress}/{}, {percent:.0}%]", number(total)));
        }
        None => text.push_str(&format!(" [{progress}]")),
    }
    text.push_str(&format!(" {seconds} s"));
    text
}

/// A progress figure: whole numbers without a fraction.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// Replace the line on the terminal with `text`, cut to the terminal's width so that it
/// never wraps (a wrapped line could not be cleared).
fn draw(text: &str) {
    let width = terminal_width().saturating_sub(1).max(10);
    let cut: String = text.chars().take(width).collect();
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "\r\x1b[2K{cut}");
    let _ = stderr.flush();
}

/// Remove the line, leaving the cursor at the start of an empty line.
fn clear_line() {
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "\r\x1b[2K");
    let _ = stderr.flush();
}

/// `{"progress": 2, "total": 5, "message": "step 2 of 5", "elapsed_ms": 612}`.
fn write_json(update: &ProgressUpdate, elapsed: Duration) {
    let line = serde_json::json!({
        "progress": update.progress,
        "total": update.total,
        "message": update.message,
        "elapsed_ms": u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
    });
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
}

/// Columns of the terminal on stderr.
fn terminal_width() -> usize {
    // SAFETY: TIOCGWINSZ writes one `winsize` through the pointer, which points to one.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDERR_FILENO, libc::TIOCGWINSZ, &mut size) } == 0;
    if ok && size.ws_col > 0 {
        usize::from(size.ws_col)
    } else {
        DEFAULT_WIDTH
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcp_runtime::client::TaskStatus;

    fn update(progress: f64, total: Option<f64>, message: Option<&str>) -> ProgressUpdate {
        ProgressUpdate {
            progress,
            total,
            message: message.map(str::to_owned),
        }
    }

    #[test]
    fn the_line_says_message_progress_total_and_time() {
        let seconds = Duration::from_secs(3);
        assert_eq!(
            line_text(
                "slow",
                None,
                Some(&update(2.0, Some(5.0), Some("step 2"))),
                seconds
            ),
            "slow: step 2 [2/5, 40%] 3 s"
        );
        assert_eq!(
            line_text("slow", None, Some(&update(0.5, None, None)), seconds),
            "slow: [0.50] 3 s"
        );
        assert_eq!(line_text("slow", None, None, seconds), "slow: running, 3 s");
    }

    #[test]
    fn a_task_says_its_status_first() {
        let seconds = Duration::from_secs(3);
        let state = TaskState::new("t1", TaskStatus::Working).with_status_message("copying\x1b[2J");
        assert_eq!(
            line_text(
                "slow",
                Some(&state),
                Some(&update(2.0, Some(5.0), None)),
                seconds
            ),
            "slow: task working (copying\\u{1b}[2J) [2/5, 40%] 3 s"
        );
        let state = TaskState::new("t1", TaskStatus::InputRequired);
        assert_eq!(
            line_text("slow", Some(&state), None, seconds),
            "slow: task input_required 3 s"
        );
    }

    #[test]
    fn server_messages_cannot_move_the_cursor() {
        let hostile = update(1.0, Some(2.0), Some("a\x1b[2Jb\nc\rd"));
        let text = line_text("t", None, Some(&hostile), Duration::ZERO);
        assert!(!text.contains('\x1b') && !text.contains('\n') && !text.contains('\r'));
    }
}
