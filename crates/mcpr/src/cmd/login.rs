//! `mcpr login NAME [--no-browser] [--scope S]` and `mcpr logout NAME`: OAuth for remote
//! servers. Login finds out how the server is protected, registers mcpr with its
//! authorization server when needed, sends the person to the browser (or prints the URL),
//! waits for the loopback redirect and stores the tokens; every later command uses and renews
//! them without asking. Logout forgets them.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_runtime::auth::{
    self, AuthContext, AuthStatus, CredentialStore, LOGIN_TIMEOUT, LoopbackBrowser,
};
use mcp_runtime::config::{EnvSource, ServerConfig, resolve_connect_values_with};

use crate::discovery::{discover, why_not_started};
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;

/// Arguments of `mcpr login`.
#[derive(Debug, clap::Args)]
pub(crate) struct LoginArgs {
    /// The server to log in to (as `mcpr servers` names it).
    pub server: String,
    /// Do not open a browser; print the URL to open instead (e.g. over SSH). Either way, only
    /// an https URL, or an http URL to a loopback host, is opened or printed: an authorization
    /// server that names anything else (`file:`, `smb:`, ...) fails the login.
    #[arg(long)]
    pub no_browser: bool,
    /// Also ask for this scope (repeatable), e.g. after a server asked for more access.
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
}

/// Arguments of `mcpr logout`.
#[derive(Debug, clap::Args)]
pub(crate) struct LogoutArgs {
    /// The server whose stored login to forget.
    pub server: String,
}

/// `mcpr login`.
pub(crate) async fn login(global: &GlobalArgs, args: LoginArgs) -> Outcome {
    let config = remote_config(global, &args.server)?;
    let config = tokio::task::spawn_blocking({
        let name = args.server.clone();
        move || resolve_connect_values_with(&name, &config, true, &EnvSource::Process)
    })
    .await
    .map_err(Failure::internal)?
    .map_err(Failure::usage)?;
    let store = user_store()?;
    let browser = LoopbackBrowser {
        open_browser: !args.no_browser,
        timeout: login_timeout(),
    };
    let context = AuthContext::interactive(store, Arc::new(browser));
    let scopes: Vec<String> = args
        .scopes
        .iter()
        .flat_map(|s| s.split_whitespace().map(str::to_owned))
        .collect();
    let outcome =
        crate::shutdown::until_signal(auth::login(&args.server, &config, &context, &scopes))
            .await?
            .map_err(|e| Failure::connection(e.to_string()))?;
    let mut line = format!("Logged in to `{}`", args.server);
    if let Some(expires) = outcome.expires_at {
        line.push_str(&format!(" (token {})", expiry(expires)));
    }
    if outcome.refreshable {
        line.push_str("; it renews by itself");
    }
    println!("{line}.");
    if !outcome.scopes.is_empty() {
        // The authorization server names them.
        println!("Scopes: {}", crate::term::line(&outcome.scopes.join(" ")));
    }
    Ok(exit::OK)
}

/// `mcpr logout`.
pub(crate) async fn logout(global: &GlobalArgs, args: LogoutArgs) -> Outcome {
    let config = remote_config(global, &args.server)?;
    let store = user_store()?;
    match auth::logout(&args.server, &config, &store) {
        Ok(true) => println!("Logged out of `{}`.", args.server),
        Ok(false) => println!("`{}` had no stored login.", args.server),
        Err(e) => return Err(Failure::internal(e)),
    }
    Ok(exit::OK)
}

/// The config of `name` if it is a usable remote server; otherwise an error that says why.
fn remote_config(global: &GlobalArgs, name: &str) -> Result<ServerConfig, Failure> {
    let discovery = discover(global)?;
    if let Some(config) = discovery.configs.get(name) {
        if matches!(config.transport, mcp_runtime::config::Transport::Stdio(_)) {
            return Err(Failure::usage(format!(
                "`{name}` is a stdio server; only http and sse servers log in"
            )));
        }
        return Ok(config.clone());
    }
    if discovery.winner(name).is_none() && !discovery.errors.contains_key(name) {
        let known: Vec<&str> = discovery.configs.keys().map(String::as_str).collect();
        return Err(Failure::usage(format!(
            "no server named `{name}` (configured: {})",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )));
    }
    Err(Failure::usage(format!(
        "`{name}` cannot be used: {}",
        why_not_started(&discovery, name)
    )))
}

fn user_store() -> Result<CredentialStore, Failure> {
    CredentialStore::user_default().ok_or_else(|| {
        Failure::usage("no home directory: set HOME or XDG_DATA_HOME to store logins")
    })
}

/// `MCPR_LOGIN_TIMEOUT_MS` bounds the wait for the browser (default 5 minutes).
fn login_timeout() -> Duration {
    std::env::var("MCPR_LOGIN_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(LOGIN_TIMEOUT)
}

/// A stored login as people read it: `logged in (expires in 59 min)`, `-` without one.
pub(crate) fn label(status: &AuthStatus) -> String {
    match status {
        AuthStatus::NotLoggedIn => "-".into(),
        AuthStatus::LoggedIn { refreshable, .. } => match status.expires_at() {
            Some(at) if at < SystemTime::now() && !refreshable => {
                format!("login {}", expiry(at))
            }
            Some(at) => format!("logged in ({})", expiry(at)),
            None => "logged in".into(),
        },
    }
}

/// `expires in 59 min` / `expired 3 min ago`.
pub(crate) fn expiry(at: SystemTime) -> String {
    match at.duration_since(SystemTime::now()) {
        Ok(left) => format!("expires in {}", human(left)),
        Err(e) => format!("expired {} ago", human(e.duration())),
    }
}

fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 120 {
        format!("{secs} s")
    } else if secs < 2 * 3600 {
        format!("{} min", secs / 60)
    } else if secs < 2 * 86_400 {
        format!("{} h", secs / 3600)
    } else {
        format!("{} days", secs / 86_400)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_readable() {
        let soon = SystemTime::now() + Duration::from_secs(3600);
        assert!(
            expiry(soon).starts_with("expires in 59 min") || expiry(soon) == "expires in 60 min"
        );
        let past = SystemTime::now() - Duration::from_secs(300);
        assert!(
            expiry(past).starts_with("expired 5 min ago")
                || expiry(past).starts_with("expired 4 min")
        );
        assert_eq!(human(Duration::from_secs(5 * 86_400)), "5 days");
    }
}
