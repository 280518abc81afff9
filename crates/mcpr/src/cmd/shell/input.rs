//! Where the shell's lines come from: a line editor on a terminal (rustyline: editing,
//! completion, history), or plain lines from stdin when it is not one.
//!
//! Reading blocks, so it runs on a thread of its own and the async runtime keeps serving the
//! manager's events meanwhile. The shell asks for each line explicitly: the prompt appears only
//! once the previous command has printed everything.

use std::io::BufRead;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{CompletionType, Config, Editor, ExternalPrinter};
use tokio::sync::{mpsc, oneshot};

use super::complete::{ShellHelper, Vocabulary};

/// What the prompt says.
const PROMPT: &str = "mcpr> ";

/// Most history entries kept.
const HISTORY_SIZE: usize = 1000;

/// One thing read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Input {
    /// A line, without its line ending.
    Line(String),
    /// Ctrl-C at the prompt: the editor dropped the line.
    Interrupted,
    /// Ctrl-D, or the end of stdin.
    Eof,
    /// Reading failed.
    Failed(String),
}

/// Prints a message above the prompt while the editor is active (and as is otherwise).
pub(super) type Printer = Box<dyn ExternalPrinter + Send>;

/// The shell's source of lines, read on a dedicated thread.
pub(super) struct LineSource {
    /// One message per line wanted.
    requests: std::sync::mpsc::Sender<()>,
    inputs: mpsc::UnboundedReceiver<Input>,
    /// A line was asked for and has not arrived yet.
    waiting: bool,
}

/// Something that reads one line at a time, blocking.
trait ReadLine {
    fn read_line(&mut self) -> Input;
}

impl LineSource {
    /// Lines typed at a terminal, with editing, completion from `vocabulary`, and history kept
    /// in `history` (when given). Also returns a printer for messages that arrive while the
    /// prompt is shown.
    pub(super) async fn editor(
        vocabulary: Arc<RwLock<Vocabulary>>,
        history: Option<PathBuf>,
    ) -> Result<(Self, Printer), String> {
        let (ready_tx, ready) = oneshot::channel();
        let source = Self::spawn(move |requests, inputs| {
            // The editor is built on its own thread: rustyline's editor is not `Send`.
            let mut editor = match LineEditor::new(vocabulary, history) {
                Ok(editor) => editor,
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    return;
                }
            };
            match editor.printer() {
                Ok(printer) => {
                    let _ = ready_tx.send(Ok(printer));
                    serve(editor, &requests, &inputs);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            }
        })?;
        match ready.await {
            Ok(Ok(printer)) => Ok((source, printer)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the line editor thread stopped".into()),
        }
    }

    /// Lines from stdin as they come, without a prompt (stdin is not a terminal).
    pub(super) fn piped() -> Result<Self, String> {
        Self::spawn(|requests, inputs| serve(PipedLines, &requests, &inputs))
    }

    /// The next line (or Ctrl-C, or the end). Cancel-safe: a line asked for by a call that was
    /// dropped is delivered to the next call.
    pub(super) async fn next(&mut self) -> Input {
        if !self.waiting {
            if self.requests.send(()).is_err() {
                return Input::Eof;
            }
            self.waiting = true;
        }
        let input = self.inputs.recv().await.unwrap_or(Input::Eof);
        self.waiting = false;
        input
    }

    /// Start the reading thread; `body` gets the requests to serve and where to send lines.
    fn spawn(
        body: impl FnOnce(std::sync::mpsc::Receiver<()>, mpsc::UnboundedSender<Input>) + Send + 'static,
    ) -> Result<Self, String> {
        let (requests, requested) = std::sync::mpsc::channel();
        let (sender, inputs) = mpsc::unbounded_channel();
        std::thread::Builder::new()
            .name("mcpr-shell-input".into())
            .spawn(move || body(requested, sender))
            .map_err(|e| format!("cannot start the input thread: {e}"))?;
        Ok(LineSource {
            requests,
            inputs,
            waiting: false,
        })
    }
}

/// Read one line per request until the input ends or nobody listens any more.
fn serve(
    mut reader: impl ReadLine,
    requests: &std::sync::mpsc::Receiver<()>,
    inputs: &mpsc::UnboundedSender<Input>,
) {
    while requests.recv().is_ok() {
        let input = reader.read_line();
        let last = matches!(input, Input::Eof | Input::Failed(_));
        if inputs.send(input).is_err() || last {
            return;
        }
    }
}

/// Plain lines from stdin.
struct PipedLines;

impl ReadLine for PipedLines {
    fn read_line(&mut self) -> Input {
        let mut bytes = Vec::new();
        match std::io::stdin().lock().read_until(b'\n', &mut bytes) {
            Ok(0) => Input::Eof,
            // Bytes that are not UTF-8 cannot name a tool anyway; keep the line readable.
            Ok(_) => Input::Line(
                String::from_utf8_lossy(&bytes)
                    .trim_end_matches(['\n', '\r'])
                    .to_owned(),
            ),
            Err(e) => Input::Failed(e.to_string()),
        }
    }
}

/// rustyline with our completion and a history file.
struct LineEditor {
    editor: Editor<ShellHelper, FileHistory>,
    history: Option<PathBuf>,
    /// A failure to save history is reported once, not after every line.
    history_warned: bool,
}

impl LineEditor {
    fn new(vocabulary: Arc<RwLock<Vocabulary>>, history: Option<PathBuf>) -> Result<Self, String> {
        let config = Config::builder()
            .completion_type(CompletionType::List)
            .max_history_size(HISTORY_SIZE)
            .map_err(|e| e.to_string())?
            .history_ignore_space(true)
            .auto_add_history(false)
            .build();
        let mut editor = Editor::with_config(config).map_err(|e| e.to_string())?;
        editor.set_helper(Some(ShellHelper::new(vocabulary)));
        if let Some(path) = &history {
            // A missing file is the first run; an unreadable one starts an empty history.
            if let Err(e) = editor.load_history(path) {
                tracing::debug!("no shell history loaded from {}: {e}", path.display());
            }
        }
        Ok(LineEditor {
            editor,
            history,
            history_warned: false,
        })
    }

    fn printer(&mut self) -> Result<Printer, String> {
        let printer = self
            .editor
            .create_external_printer()
            .map_err(|e| e.to_string())?;
        Ok(Box::new(printer))
    }

    /// Add `line` to the history and append it to the file at once, so that history survives
    /// however the shell ends.
    fn remember(&mut self, line: &str) {
        if line.trim().is_empty() || !self.editor.add_history_entry(line).unwrap_or(false) {
            return;
        }
        let Some(path) = &self.history else { return };
        // The directory is private: history may hold secrets typed as arguments.
        if let Err(e) = mcp_runtime::fsutil::create_private_parent(path).and_then(|()| {
            self.editor
                .append_history(path)
                .map_err(|e| std::io::Error::other(e.to_string()))
        }) && !self.history_warned
        {
            self.history_warned = true;
            eprintln!(
                "warning: cannot save shell history to {}: {e}",
                mcp_runtime::fsutil::display_path(path)
            );
        }
    }
}

impl ReadLine for LineEditor {
    fn read_line(&mut self) -> Input {
        match self.editor.readline(PROMPT) {
            Ok(line) => {
                self.remember(&line);
                Input::Line(line)
            }
            Err(ReadlineError::Interrupted) => Input::Interrupted,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(e) => Input::Failed(e.to_string()),
        }
    }
}

/// `$XDG_STATE_HOME/mcpr/shell_history`, else `~/.local/state/mcpr/shell_history`.
pub(super) fn history_path() -> Option<PathBuf> {
    history_path_from(
        std::env::var_os("XDG_STATE_HOME").map(PathBuf::from),
        std::env::home_dir(),
    )
}

fn history_path_from(state_home: Option<PathBuf>, home: Option<PathBuf>) -> Option<PathBuf> {
    // The XDG spec says a relative XDG_STATE_HOME is invalid and must be ignored.
    let state = state_home
        .filter(|dir| dir.is_absolute())
        .or_else(|| home.map(|home| home.join(".local/state")))?;
    Some(state.join("mcpr").join("shell_history"))
}

/// Puts the terminal back as it was when the shell started. rustyline restores it after each
/// line, but when the shell quits on SIGTERM the editor thread may still be inside a line, in
/// raw mode.
pub(super) struct TerminalGuard {
    saved: Option<libc::termios>,
}

impl TerminalGuard {
    /// Remember the settings of the terminal on stdin.
    pub(super) fn save() -> Self {
        // SAFETY: an all-zero termios is a valid value to be overwritten by tcgetattr, which
        // only writes into the struct we pass.
        let mut termios: libc::termios = unsafe { std::mem::zeroed() };
        let saved =
            (unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut termios) } == 0).then_some(termios);
        TerminalGuard { saved }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        if let Some(termios) = &self.saved {
            // SAFETY: restores settings tcgetattr gave us for the same descriptor.
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, termios) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_lives_in_the_xdg_state_dir() {
        let home = Some(PathBuf::from("/home/u"));
        assert_eq!(
            history_path_from(Some("/state".into()), home.clone()),
            Some(PathBuf::from("/state/mcpr/shell_history"))
        );
        assert_eq!(
            history_path_from(None, home.clone()),
            Some(PathBuf::from("/home/u/.local/state/mcpr/shell_history"))
        );
        assert_eq!(
            history_path_from(Some("relative".into()), home),
            Some(PathBuf::from("/home/u/.local/state/mcpr/shell_history"))
        );
        assert_eq!(history_path_from(None, None), None);
    }
}
