//! Stands in for telemetry without the `otel` feature: every operation is empty and records
//! nothing, so the call sites need no feature gates of their own.

use super::{Kind, Outcome, Place};

/// An operation that records nothing.
#[derive(Debug)]
pub(crate) struct Operation;

/// No spans are made.
pub(crate) fn tracing() -> bool {
    false
}

/// Start nothing.
pub(crate) fn start(_kind: Kind<'_>, _place: Place<'_>) -> Operation {
    Operation
}

impl Operation {
    /// No span: the incoming context goes on unchanged.
    pub(crate) fn traceparent(&self) -> Option<String> {
        None
    }

    /// Run `work` as it is.
    pub(crate) async fn within<F: Future>(&self, work: F) -> F::Output {
        work.await
    }

    /// Nothing to record.
    pub(crate) fn opened(&mut self, _transport: &'static str, _protocol: &str) {}

    /// Nothing to end.
    pub(crate) fn finish(self, _outcome: Outcome) {}
}

/// Nothing to count.
pub(crate) fn reconnect_started(_server: &str) {}
