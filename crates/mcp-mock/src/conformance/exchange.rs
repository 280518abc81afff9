//! The context one request runs in ([`Exchange`]), in either era: what the client declared,
//! the request's own stream for its log lines and progress, and the connection it came on.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::notification;
use super::session::{Session, level_rank};

/// Which era a request belongs to, and what that era knows about the client.
pub(super) enum Era {
    /// The `initialize` era: a session, which can also carry requests to the client.
    Session(Arc<Session>),
    /// 2026-07-28: everything is in the request's own `_meta`.
    Stateless(Meta),
}

/// The client context a 2026-07-28 request carries in `_meta`.
#[derive(Debug, Clone, Default)]
pub(super) struct Meta {
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub capabilities: Value,
    /// `io.modelcontextprotocol/logLevel`, as a rank: without it the server sends no logs.
    pub log_level: Option<usize>,
}

/// The context one request runs in.
pub(super) struct Exchange {
    /// The request's own response stream: notifications, and in a session requests to the
    /// client.
    pub out: mpsc::UnboundedSender<Value>,
    pub era: Era,
    /// `_meta.progressToken` of the request.
    pub progress_token: Option<Value>,
    /// Closes the connection carrying `out` (a session's request over HTTP; the client
    /// resumes the stream, see `resume`); `None` elsewhere.
    pub closer: Option<mpsc::UnboundedSender<()>>,
}

impl Exchange {
    /// Whether the client declared capability `name`.
    pub(super) fn client_has(&self, name: &str) -> bool {
        match &self.era {
            Era::Session(session) => session.has_capability(name),
            Era::Stateless(meta) => meta.capabilities.get(name).is_some_and(|v| !v.is_null()),
        }
    }

    /// Sends a log message, if the client asked for messages at `level`.
    pub(super) fn log(&self, level: &str, data: Value) {
        let wanted = match &self.era {
            Era::Session(session) => session.logs(level),
            Era::Stateless(meta) => meta
                .log_level
                .zip(level_rank(level))
                .is_some_and(|(floor, rank)| rank >= floor),
        };
        if wanted {
            let params = json!({"level": level, "logger": "conformance", "data": data});
            let _ = self.out.send(notification("notifications/message", params));
        }
    }

    /// Sends a progress notification, if the request carried a progress token.
    pub(super) fn progress(&self, progress: u64, total: u64, message: &str) {
        if let Some(token) = &self.progress_token {
            let params = json!({
                "progressToken": token,
                "progress": progress,
                "total": total,
                "message": message,
            });
            let _ = self
                .out
                .send(notification("notifications/progress", params));
        }
    }

    /// Closes the connection that carries the request's stream before the answer, where
    /// there is one to close: the client resumes the stream with `Last-Event-ID` to get the
    /// rest (SSE polling).
    pub(super) fn close_stream(&self) {
        if let Some(closer) = &self.closer {
            let _ = closer.send(());
        }
    }

    /// Whether the request is of 2026-07-28 (no session).
    pub(super) fn modern(&self) -> bool {
        matches!(self.era, Era::Stateless(_))
    }
}
