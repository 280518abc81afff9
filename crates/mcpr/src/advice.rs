//! What a person at the terminal can type to fix an error.
//!
//! The library's errors say what went wrong and carry the facts a fix needs (the server, the
//! scopes a login must ask for); only the CLI knows its own commands, so the advice is added
//! here, where errors are printed.

use std::fmt::Display;

use mcp_runtime::auth::AuthFailure;
use mcp_runtime::client::ClientError;
use mcp_runtime::config::ConfigError;
use mcp_runtime::fsutil::display_path;
use mcp_runtime::gateway::StateKeyError;
use mcp_runtime::manager::{ManagerError, ServerError};
use mcp_runtime::registry::RegistryError;

/// An error that may come with advice for a person at the terminal.
pub(crate) trait Advise: Display {
    /// The command (or step) that fixes it, when there is one.
    fn advice(&self) -> Option<String>;

    /// The error, followed by the advice when there is some.
    fn explained(&self) -> String {
        match self.advice() {
            Some(advice) => format!("{self}; {advice}"),
            None => self.to_string(),
        }
    }
}

impl Advise for AuthFailure {
    fn advice(&self) -> Option<String> {
        if !self.needs_login() {
            return None;
        }
        let server = self.server()?;
        // A server given on the command line has no stored login to renew.
        if server == crate::inline::INLINE_NAME {
            if crate::inline::authorization_given() {
                return Some(
                    "the server refused the Authorization header given with -H: check the token \
                     (a `${VAR}` in it is read from the environment)"
                        .into(),
                );
            }
            return Some("give its token with -H 'Authorization: Bearer TOKEN'".into());
        }
        Some(match self.needed_scope() {
            Some(scope) => format!("run: mcpr login {server} --scope '{scope}'"),
            None => format!("run: mcpr login {server}"),
        })
    }
}

impl Advise for ClientError {
    fn advice(&self) -> Option<String> {
        self.auth_failure().and_then(Advise::advice)
    }
}

impl Advise for ServerError {
    fn advice(&self) -> Option<String> {
        self.auth_failure().and_then(Advise::advice)
    }
}

impl Advise for ManagerError {
    fn advice(&self) -> Option<String> {
        self.auth_failure().and_then(Advise::advice)
    }
}

impl Advise for ConfigError {
    fn advice(&self) -> Option<String> {
        match self {
            ConfigError::Untrusted { .. } => Some("run `mcpr trust` to approve it".into()),
            ConfigError::AmbiguousScope { .. } => {
                Some("say which with --scope user or --scope project".into())
            }
            ConfigError::NotConfigured { .. } => Some("see `mcpr servers --all`".into()),
            ConfigError::AlreadyDefined { .. } => Some(
                "add --force to replace it, or `mcpr remove` it first (`mcpr get NAME` shows it)"
                    .into(),
            ),
            ConfigError::ForeignDefinition { server, .. } => {
                Some(format!("use `mcpr disable {server}` to turn it off"))
            }
            _ => None,
        }
    }
}

impl Advise for mcp_runtime::config::writer::StillOff {
    fn advice(&self) -> Option<String> {
        match self {
            Self::PendingApproval => Some("run `mcpr trust`".into()),
            _ => None,
        }
    }
}

impl Advise for RegistryError {
    fn advice(&self) -> Option<String> {
        match self {
            RegistryError::Refused { .. } => Some(
                "nothing was written, and --force does not change this; to run it anyway, write \
                 the entry yourself: mcpr add NAME -- COMMAND ARGS..."
                    .into(),
            ),
            _ => None,
        }
    }
}

impl Advise for StateKeyError {
    fn advice(&self) -> Option<String> {
        let path = display_path(self.path());
        match self {
            StateKeyError::Missing { .. } => Some(format!(
                "make one with: mcpr serve --generate-state-key {path}"
            )),
            StateKeyError::Shared { .. } => Some(format!("run: chmod 600 {path}")),
            StateKeyError::Exists { .. } => Some(format!(
                "to replace its key, run: mcpr serve --rotate-state-key {path}"
            )),
            StateKeyError::Malformed { .. } => Some(
                "copy it again from where it was made (every replica needs the same file), or \
                 make a new one: mcpr serve --generate-state-key FILE"
                    .into(),
            ),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_names_the_server_and_the_scopes_to_ask_for() {
        let missing = AuthFailure::LoginRequired {
            server: "svc".into(),
        };
        assert_eq!(missing.explained(), "not logged in; run: mcpr login svc");
        let scope = AuthFailure::InsufficientScope {
            server: "svc".into(),
            scope: "mcp:admin".into(),
        };
        assert_eq!(
            scope.advice().as_deref(),
            Some("run: mcpr login svc --scope 'mcp:admin'")
        );
        assert_eq!(AuthFailure::Store("corrupt".into()).advice(), None);
    }

    #[test]
    fn an_untrusted_project_points_at_trust() {
        let error = ConfigError::Untrusted {
            server: "x".into(),
            field: "env.TOKEN".into(),
        };
        assert!(
            error
                .explained()
                .ends_with("run `mcpr trust` to approve it")
        );
    }

    #[test]
    fn another_tools_server_points_at_disable() {
        let error = ConfigError::ForeignDefinition {
            server: "gh".into(),
            provider: "Cursor".into(),
            path: "/home/u/.cursor/mcp.json".into(),
        };
        let text = error.explained();
        assert!(text.contains("defined by Cursor"), "{text}");
        assert!(
            text.ends_with("use `mcpr disable gh` to turn it off"),
            "{text}"
        );
    }
}
