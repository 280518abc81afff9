//! Which era of MCP a server speaks, and what a host can see of how a connection was opened.
//!
//! Protocol 2026-07-28 has no handshake: a client asks `server/discover` and then sends
//! self-contained requests (their `_meta` names the version, our capabilities and our
//! identity). Servers of 2024-11-05 … 2025-11-25 know only `initialize`. [`Era`] tells them
//! apart; the tool cache stores it per server, so later start-ups go straight to the right
//! opening. The bounded probe that finds it out on a first contact is the client's `probe`.

use std::time::Duration;

/// Protocol versions we accept from a server, oldest first. We ask for the newest.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] = &[
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

/// How long a server that has taken the `server/discover` probe may take to answer it before
/// it is treated as an old server that ignores unknown methods. Far below the manager's
/// start-up gate, far above what any live server needs to answer a request it has read.
pub const PROBE_BOUND: Duration = Duration::from_millis(100);

/// The protocol revision without a handshake, which we prefer.
pub const MODERN_PROTOCOL: &str = "2026-07-28";

/// The newest revision with the `initialize` handshake, which we ask for on fallback.
pub const LEGACY_PROTOCOL: &str = "2025-11-25";

/// The two eras of MCP, as far as opening a connection goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Era {
    /// 2026-07-28 and later: `server/discover`, then self-contained requests.
    Modern,
    /// 2024-11-05 … 2025-11-25: the `initialize` handshake.
    Legacy,
}

impl Era {
    /// The era of a negotiated protocol version.
    pub fn of(version: &str) -> Era {
        if version >= MODERN_PROTOCOL {
            Era::Modern
        } else {
            Era::Legacy
        }
    }

    /// `modern` or `legacy`, as the cache stores it.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }

    /// The inverse of [`as_str`](Self::as_str).
    pub fn parse(text: &str) -> Option<Era> {
        match text {
            "modern" => Some(Era::Modern),
            "legacy" => Some(Era::Legacy),
            _ => None,
        }
    }
}

/// How one connection was opened: what a host (or a test) can check without a clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opening {
    /// The era the connection speaks.
    pub era: Era,
    /// The era came from the cache, so no probe was needed to choose the opening.
    pub cached: bool,
    /// `server/discover` requests sent to find the era (0 when the cache said `legacy`).
    pub probes: u32,
    /// The server took a probe and did not answer within [`PROBE_BOUND`].
    pub probe_timed_out: bool,
    /// Connections made (more than one when the first opening failed and another was tried).
    pub attempts: u32,
    /// The `server/discover` result came from the cache (within the `ttlMs` the server gave
    /// it), so the opening sent nothing.
    pub discovery_cached: bool,
}

/// for events, until the host sets another (`McpClient::set_log_level`). That revision has no
/// `logging/setLevel`: each request says which logs it wants, and a request that says nothing
/// gets none.
pub const LOG_LEVEL: &str = "info";

/// Extra `_meta` of every request on a connection of `era` (rmcp adds the version, our
/// identity and capabilities itself): logs of `log_level` and above when the host listens.
pub(crate) fn request_meta(
    era: Era,
    host_listens: bool,
    log_level: &str,
) -> Option<rmcp::model::RequestMetaObject> {
    if era != Era::Modern || !host_listens {
        return None;
    }
    let mut meta = rmcp::model::RequestMetaObject::default();
    meta.0.insert(
        "io.modelcontextprotocol/logLevel".to_owned(),
        serde_json::Value::from(log_level),
    );
    Some(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras_of_versions() {
        assert_eq!(Era::of("2025-11-25"), Era::Legacy);
        assert_eq!(Era::of("2024-11-05"), Era::Legacy);
        assert_eq!(Era::of("2026-07-28"), Era::Modern);
        for era in [Era::Modern, Era::Legacy] {
            assert_eq!(Era::parse(era.as_str()), Some(era));
        }
        assert_eq!(Era::parse("2026"), None);
    }
}
