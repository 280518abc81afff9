//! What a stdio server finds in its environment: a short allowlist of the host's variables
//! (what programs need to run and to find their tools, caches, locale, proxy and certificates),
//! the server's configured `env` (with `envFile` and `env_vars` already resolved into it), and
//! nothing of mcpr's own (`MCPR_*`, a gateway token), whatever the policy.
//!
//! Servers are other people's code (`npx -y`, `uvx`, a cloned repository); the host's
//! environment holds cloud keys, API tokens and mcpr's own gateway token. The list follows the
//! official SDKs' six names and adds what `npx`, `uvx`, `node` and `python` need to find their
//! installation and cache. Loader variables (`NODE_OPTIONS`, `LD_PRELOAD`, `PYTHONPATH`,
//! `BASH_ENV`, ...) are deliberately absent: they make a program run other code.
//! `docs/security.md` lists the same names for users.

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::sync::{Mutex, OnceLock};

use crate::config::StdioConfig;

/// Host variables every stdio server receives when set, by exact name.
pub const PASSED_NAMES: &[&str] = &[
    // The official SDKs' list.
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    // Locale, time zone, temporary files.
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "TEMPDIR",
    // XDG base directories (where tools keep config, data and caches).
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_DIRS",
    "XDG_DATA_DIRS",
    // Proxies (curl, Node, Python and uv read both spellings).
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    // Certificate bundles of a corporate proxy.
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "PIP_CERT",
    // Node installations and npm's cache and registry (`npx`).
    "NVM_DIR",
    "NVM_BIN",
    "VOLTA_HOME",
    "PNPM_HOME",
    "FNM_DIR",
    "COREPACK_HOME",
    "BUN_INSTALL",
    "NPM_CONFIG_CACHE",
    "NPM_CONFIG_PREFIX",
    "NPM_CONFIG_REGISTRY",
    "NPM_CONFIG_USERCONFIG",
    "NPM_CONFIG_GLOBALCONFIG",
    "npm_config_cache",
    "npm_config_prefix",
    "npm_config_registry",
    "npm_config_userconfig",
    "npm_config_globalconfig",
    // uv's cache, tool and Python directories and package index (`uvx`).
    "UV_CACHE_DIR",
    "UV_TOOL_DIR",
    "UV_TOOL_BIN_DIR",
    "UV_PYTHON_INSTALL_DIR",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_INDEX",
    "UV_NATIVE_TLS",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIPX_HOME",
    "PIPX_BIN_DIR",
    // Which Python: a virtual environment, pyenv, conda.
    "VIRTUAL_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "CONDA_PREFIX",
    // macOS text encoding of the login session.
    "__CF_USER_TEXT_ENCODING",
    // Windows: what programs need to find the user's folders and the system.
    "APPDATA",
    "LOCALAPPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "USERPROFILE",
    "USERNAME",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "PROGRAMFILES",
    "PROCESSOR_ARCHITECTURE",
    "PATHEXT",
    "COMSPEC",
];

/// Host variables every stdio server receives when set, by prefix (locale categories).
pub const PASSED_PREFIXES: &[&str] = &["LC_"];

/// The prefix of mcpr's own variables: never passed to a server, whatever the policy, except
/// the nesting count mcpr sets itself (see `nesting`).
pub const OWN_PREFIX: &str = "MCPR_";

/// The global switch a host may honour (the CLI does): `MCPR_INHERIT_ENV=1` gives every
/// stdio server the host's whole environment but `MCPR_*`, as `inheritEnv: true` does for one.
pub const INHERIT_ENV: &str = "MCPR_INHERIT_ENV";

/// Whether [`INHERIT_ENV`] is set to `1` or `true` in this process's environment.
pub fn inherit_requested() -> bool {
    std::env::var(INHERIT_ENV).is_ok_and(|v| matches!(v.trim(), "1" | "true"))
}

/// At most this many held-back names are named in a start-up error.
pub const HELD_BACK_SHOWN: usize = 12;

/// Whether `name` is on the allowlist.
pub fn is_passed(name: &str) -> bool {
    PASSED_NAMES.contains(&name) || PASSED_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Whether `name` is one of mcpr's own variables (`MCPR_*`).
pub fn is_own(name: &str) -> bool {
    name.starts_with(OWN_PREFIX)
}

/// Values that never reach a server under any name (a gateway token read from a file, say).
fn withheld() -> &'static Mutex<BTreeSet<String>> {
    static WITHHELD: OnceLock<Mutex<BTreeSet<String>>> = OnceLock::new();
    WITHHELD.get_or_init(Default::default)
}

/// Keep `value` from every server started from now on by this process: a variable (inherited or
/// configured) holding exactly this value is dropped. A gateway registers its bearer token
/// here, however it was given, so that no backend can call the gateway as its client.
pub fn withhold_from_servers(value: &str) {
    if value.is_empty() {
        return;
    }
    if let Ok(mut set) = withheld().lock() {
        set.insert(value.to_owned());
    }
}

fn is_withheld(value: &OsStr) -> bool {
    let Some(value) = value.to_str() else {
        return false;
    };
    withheld().lock().is_ok_and(|set| set.contains(value))
}

/// The environment a stdio server starts with, and what was held back from it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerEnvironment {
    /// Every variable the server receives (without the nesting count, added at spawn).
    pub vars: Vec<(OsString, OsString)>,
    /// Names of host variables that inheriting everything would have passed and the allowlist
    /// did not, sorted. Never values.
    pub held_back: Vec<String>,
}

impl ServerEnvironment {
    /// The environment of `cfg` from this process's environment; `inherit` passes every host
    /// variable (but mcpr's own).
    pub fn of(cfg: &StdioConfig, inherit: bool) -> ServerEnvironment {
        ServerEnvironment::from_host(cfg, inherit, std::env::vars_os())
    }

    /// The environment of `cfg` from the host variables `host`.
    pub fn from_host(
        cfg: &StdioConfig,
        inherit: bool,
        host: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> ServerEnvironment {
        let inherit = inherit || cfg.inherit_env;
        let mut vars = Vec::new();
        let mut held_back = Vec::new();
        for (name, value) in host {
            let text = name.to_string_lossy();
            if cfg.env.contains_key(text.as_ref()) || is_own(&text) || is_withheld(&value) {
                continue;
            }
            if inherit || is_passed(&text) {
                vars.push((name, value));
            } else {
                held_back.push(text.into_owned());
            }
        }
        for (name, value) in &cfg.env {
            // A configured value goes as configured, whatever its name (the nesting count is
            // set at spawn, over it); one that is a gateway's token still stays out.
            if is_withheld(OsStr::new(value)) {
                continue;
            }
            vars.push((name.into(), value.into()));
        }
        held_back.sort();
        ServerEnvironment { vars, held_back }
    }

    /// The names the server receives, sorted (for `mcpr get`: names, never values).
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .vars
            .iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The held-back names a start-up error shows: at most [`HELD_BACK_SHOWN`], then how
    /// many more there are.
    pub fn held_back_shown(&self) -> Vec<String> {
        shown(&self.held_back)
    }
}

/// `stdio` as the connection of `config` starts it: with `inherit_env` set when the host
/// passes everything (`inherit`), and the variables that `env_vars` names copied from the
/// host's environment (when set, and not configured already: a manager has resolved them
/// before, a bare [`McpClient`](crate::client::McpClient) has not).
pub(crate) fn for_connection(
    config: &crate::config::ServerConfig,
    stdio: &StdioConfig,
    inherit: bool,
) -> StdioConfig {
    let mut stdio = stdio.clone();
    stdio.inherit_env |= inherit;
    for name in &config.env_vars {
        // mcpr's own are never passed by name, as they are never inherited.
        if !is_own(name)
            && !stdio.env.contains_key(name)
            && let Ok(value) = std::env::var(name)
        {
            stdio.env.insert(name.clone(), value);
        }
    }
    stdio
}

/// The names of the variables the stdio server of `config` would receive if started now by a
/// host passing everything or not (`inherit`), with mcpr's nesting count; `None` for a remote
/// server. Names only: this is what `mcpr get` shows.
pub fn names_for(config: &crate::config::ServerConfig, inherit: bool) -> Option<Vec<String>> {
    let crate::config::Transport::Stdio(stdio) = &config.transport else {
        return None;
    };
    let stdio = for_connection(config, stdio, inherit);
    let mut names = ServerEnvironment::of(&stdio, false).names();
    names.push(crate::nesting::NESTING_ENV.to_owned());
    names.sort();
    names.dedup();
    Some(names)
}

/// Parts of a name that mark what a server is most likely to have needed: its credentials and
/// where its service is. They are named first in a start-up error.
const LIKELY_NEEDED: &[&str] = &[
    "TOKEN", "KEY", "SECRET", "PASSWORD", "AUTH", "API", "URL", "HOST", "ENDPOINT", "PROFILE",
    "REGION", "ACCOUNT", "PROJECT",
];

/// At most [`HELD_BACK_SHOWN`] of `names` (the likely needed first, the shell's bookkeeping
/// left out), then how many more there are.
pub(crate) fn shown(names: &[String]) -> Vec<String> {
    let mut ranked: Vec<&String> = names
        .iter()
        .filter(|name| !matches!(name.as_str(), "_" | "PWD" | "OLDPWD" | "SHLVL"))
        .collect();
    // Stable: alphabetical within each group.
    ranked.sort_by_key(|name| !LIKELY_NEEDED.iter().any(|part| name.contains(part)));
    let mut shown: Vec<String> = ranked
        .iter()
        .take(HELD_BACK_SHOWN)
        .map(|n| (*n).clone())
        .collect();
    if ranked.len() > HELD_BACK_SHOWN {
        shown.push(format!("and {} more", ranked.len() - HELD_BACK_SHOWN));
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(name, value)| ((*name).into(), (*value).into()))
            .collect()
    }

    fn value<'a>(env: &'a ServerEnvironment, name: &str) -> Option<&'a OsString> {
        env.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    #[test]
    fn only_the_allowlist_and_the_configured_values_pass() {
        let mut cfg = StdioConfig::default();
        cfg.env.insert("API_KEY".into(), "configured".into());
        cfg.env.insert("PATH".into(), "/configured".into());
        let env = ServerEnvironment::from_host(
            &cfg,
            false,
            host(&[
                ("PATH", "/usr/bin"),
                ("HOME", "/home/u"),
                ("LC_TIME", "C"),
                ("AWS_SECRET_ACCESS_KEY", "secret"),
                ("NODE_OPTIONS", "--require /tmp/x.js"),
                ("LD_PRELOAD", "/tmp/x.so"),
                ("MCPR_GATEWAY_TOKEN", "token"),
            ]),
        );
        assert_eq!(value(&env, "PATH").unwrap(), "/configured");
        assert_eq!(value(&env, "HOME").unwrap(), "/home/u");
        assert_eq!(value(&env, "LC_TIME").unwrap(), "C");
        assert_eq!(value(&env, "API_KEY").unwrap(), "configured");
        for absent in [
            "AWS_SECRET_ACCESS_KEY",
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "MCPR_GATEWAY_TOKEN",
        ] {
            assert!(value(&env, absent).is_none(), "{absent} passed");
        }
        // mcpr's own are not "held back": no policy would pass them.
        assert_eq!(
            env.held_back,
            vec!["AWS_SECRET_ACCESS_KEY", "LD_PRELOAD", "NODE_OPTIONS"]
        );
        assert_eq!(env.names(), vec!["API_KEY", "HOME", "LC_TIME", "PATH"]);
    }

    #[test]
    fn inheriting_passes_everything_but_mcprs_own() {
        let cfg = StdioConfig {
            inherit_env: true,
            ..StdioConfig::default()
        };
        let env = ServerEnvironment::from_host(
            &cfg,
            false,
            host(&[("AWS_SECRET_ACCESS_KEY", "secret"), ("MCPR_X", "own")]),
        );
        assert!(value(&env, "AWS_SECRET_ACCESS_KEY").is_some());
        assert!(value(&env, "MCPR_X").is_none());
        assert!(env.held_back.is_empty());
    }

    #[test]
    fn an_error_names_credentials_first_and_caps_the_rest() {
        let mut names: Vec<String> = (0..30).map(|i| format!("A_NOISE_{i:02}")).collect();
        names.push("SHLVL".into());
        names.push("Z_SERVICE_TOKEN".into());
        names.sort();
        let shown = shown(&names);
        assert_eq!(shown[0], "Z_SERVICE_TOKEN");
        assert_eq!(shown.len(), HELD_BACK_SHOWN + 1);
        assert_eq!(shown[HELD_BACK_SHOWN], "and 19 more");
        assert!(!shown.contains(&"SHLVL".to_owned()));
    }

    #[test]
    fn a_withheld_value_stays_out_under_any_name() {
        withhold_from_servers("the-gateway-token-value");
        let mut cfg = StdioConfig::default();
        cfg.env
            .insert("CONFIGURED".into(), "the-gateway-token-value".into());
        let env = ServerEnvironment::from_host(
            &cfg,
            true,
            host(&[("SOME_TOKEN", "the-gateway-token-value"), ("OTHER", "x")]),
        );
        assert!(value(&env, "SOME_TOKEN").is_none());
        assert!(value(&env, "CONFIGURED").is_none());
        assert!(value(&env, "OTHER").is_some());
    }
}
