//! Logs on stderr, filtered by `RUST_LOG`, with known secret values scrubbed: third-party crates
//! may print a URL or a header at debug level, and secrets must never reach the terminal. Log
//! lines are coloured only on a terminal without `NO_COLOR` ([`crate::term::colour_on_stderr`]):
//! colour codes in a pipe or a log file are noise to whatever reads it. Only the long-running
//! gateway stamps its lines with the time; a command's messages are read as they come.

use std::io::Write;
use std::sync::RwLock;

use tracing_subscriber::fmt::MakeWriter;

/// Values to replace with `***` in every log line.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Scrub these values from logs from now on.
pub(crate) fn add_secrets(values: impl IntoIterator<Item = String>) {
    let mut secrets = SECRETS.write().unwrap_or_else(|e| e.into_inner());
    secrets.extend(values);
    // Longest first, so a secret containing another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets.dedup();
}

/// Install the subscriber with `default` as the filter when `RUST_LOG` is unset, with each
/// line stamped with the time when `timestamps`.
pub(crate) fn init(default: &str, timestamps: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default))
        // rmcp's OAuth code logs the authorization code (and more) at debug level, which our
        // scrubber cannot know about: never let `RUST_LOG` turn that on.
        .add_directive(AUTH_LOGS.parse().expect("a valid directive"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ScrubbedStderr)
        .with_ansi(crate::term::colour_on_stderr())
        .with_target(false);
    if timestamps {
        logs.init();
    } else {
        logs.without_time().init();
    }
}

/// The most rmcp's OAuth module may log.
const AUTH_LOGS: &str = "rmcp::transport::auth=warn";

/// Makes one [`LineWriter`] per log event.
struct ScrubbedStderr;

impl<'a> MakeWriter<'a> for ScrubbedStderr {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> Self::Writer {
        LineWriter(Vec::with_capacity(256))
    }
}

/// Collects one event, scrubs it, and writes it to stderr when dropped.
struct LineWriter(Vec<u8>);

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        let line = scrub(&String::from_utf8_lossy(&self.0));
        let _ = std::io::stderr().write_all(line.as_bytes());
    }
}

fn scrub(line: &str) -> String {
    let secrets = SECRETS.read().unwrap_or_else(|e| e.into_inner());
    let mut line = line.to_owned();
    for secret in secrets.iter() {
        if line.contains(secret.as_str()) {
            line = line.replace(secret.as_str(), "***");
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_scrubbed() {
        add_secrets(["tok-123456".to_owned(), "tok-123456-longer".to_owned()]);
        assert_eq!(
            scrub("url?key=tok-123456-longer&x=tok-123456"),
            "url?key=***&x=***"
        );
    }
}
