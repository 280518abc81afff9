//! Connect-time values: env and header values that are `!command` (run by
//! the shell, bounded by [`COMMAND_TIMEOUT`], trimmed stdout, cached per process) or the exact
//! name of a set environment variable; Codex's `env_vars`,
//! `bearer_token_env_var` and `env_http_headers`.
//!
//! Commands are never run for an untrusted server. This is blocking code (it may wait for a
//! command): call it from `tokio::task::spawn_blocking` in async contexts, unless
//! `resolution_may_block` says the config has nothing that waits.

use std::collections::HashMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

use super::expand::EnvSource;
use super::{ConfigError, ServerConfig, Transport};

/// Bound on one `!command` (10 s).
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Resolve connect-time values of the server `name` against the process environment. See
/// [`resolve_connect_values_with`]; `name` is the one errors show and secrets are kept under.
pub fn resolve_connect_values(
    name: &str,
    config: &ServerConfig,
    trusted: bool,
) -> Result<ServerConfig, ConfigError> {
    resolve_connect_values_with(name, config, trusted, &EnvSource::Process)
}

/// Whether resolving `config` may wait: it has a `!command` to run or a stored secret to read.
/// Without either, resolution is a few environment lookups, fine on an async thread.
pub(crate) fn resolution_may_block(config: &ServerConfig) -> bool {
    let command = |value: &String| value.starts_with('!');
    let commands = match &config.transport {
        Transport::Stdio(stdio) => stdio.env.values().any(command),
        Transport::Http(http) => http.headers.values().any(command),
    };
    commands || super::secrets::has_markers(config)
}

/// Resolve connect-time values of the server `name`:
///
/// - an `env` or `headers` value `!cmd` becomes the trimmed stdout of `sh -c cmd` (10 s bound,
///   cached per process; a failure or timeout is an error naming the field, never the value);
///   refused with [`ConfigError::Untrusted`] when `trusted` is false;
/// - a value that is exactly the name of a set environment variable (`[A-Z_][A-Z0-9_]*`)
///   becomes that variable's value;
/// - `env_vars` names are copied from the environment (when set, unless `env` has them);
/// - `bearer_token_env_var` becomes `Authorization: Bearer <value>` (unset: an error);
/// - `env_http_headers` add headers from variables that are set;
/// - a value `mcpr-secret:FIELD` becomes the value kept for this server in mcpr's secret store
///   (see [`super::secrets`]).
///
/// ```
/// use mcp_runtime::config::{EnvSource, ServerConfig, Transport, resolve_connect_values_with};
/// let mut cfg = ServerConfig::stdio("srv", Vec::<String>::new());
/// if let Transport::Stdio(s) = &mut cfg.transport {
///     s.env.insert("TOKEN".into(), "!echo hello".into());
///     s.env.insert("KEY".into(), "MY_KEY".into());
/// }
/// cfg.env_vars = vec!["PATH".into()];
/// let env = EnvSource::map([("MY_KEY", "k"), ("PATH", "/bin")]);
/// let out = resolve_connect_values_with("s", &cfg, true, &env).unwrap();
/// let Transport::Stdio(s) = out.transport else { unreachable!() };
/// assert_eq!((s.env["TOKEN"].as_str(), s.env["KEY"].as_str(), s.env["PATH"].as_str()), ("hello", "k", "/bin"));
/// assert!(resolve_connect_values_with("s", &cfg, false, &env).is_err());
/// ```
pub fn resolve_connect_values_with(
    name: &str,
    config: &ServerConfig,
    trusted: bool,
    env: &EnvSource,
) -> Result<ServerConfig, ConfigError> {
    let mut out = config.clone();
    let resolve = |field: String, value: &str| -> Result<String, ConfigError> {
        if let Some(command) = value.strip_prefix('!') {
            if !trusted {
                return Err(ConfigError::Untrusted {
                    server: name.to_owned(),
                    field,
                });
            }
            return run_cached(command)
                .map_err(|message| ConfigError::invalid(name, &field, message));
        }
        if is_env_name(value)
            && let Some(resolved) = env.get(value)
        {
            return Ok(resolved);
        }
        Ok(value.to_owned())
    };
    match &mut out.transport {
        Transport::Stdio(stdio) => {
            for (key, value) in stdio.env.iter_mut() {
                *value = resolve(format!("env.{key}"), value)?;
            }
            for var in &config.env_vars {
                // mcpr's own variables are never passed by name (see `client::environment`).
                if !crate::client::environment::is_own(var)
                    && !stdio.env.contains_key(var)
                    && let Some(value) = env.get(var)
                {
                    stdio.env.insert(var.clone(), value);
                }
            }
        }
        Transport::Http(http) => {
            for (key, value) in http.headers.iter_mut() {
                *value = resolve(format!("headers.{key}"), value)?;
            }
            for (header, var) in &config.env_headers {
                if let Some(value) = env.get(var).filter(|v| !v.is_empty()) {
                    http.headers.insert(header.clone(), value);
                }
            }
            if let Some(var) = &config.bearer_token_env_var {
                let token = env.get(var).filter(|v| !v.is_empty()).ok_or_else(|| {
                    ConfigError::invalid(
                        name,
                        "bearer_token_env_var",
                        format!("environment variable `{var}` is not set"),
                    )
                })?;
                http.headers
                    .insert("Authorization".into(), format!("Bearer {token}"));
            }
        }
    }
    // After the rules above, so that a stored value is never run as a `!command` or read as a
    // variable name.
    super::secrets::inject(name, config, &mut out, env)?;
    Ok(out)
}

/// `[A-Z_][A-Z0-9_]*` with at least one letter: the shape of a variable name meant as a
/// reference, not an ordinary value like `1` or `debug`.
pub(crate) fn is_env_name(value: &str) -> bool {
    let mut chars = value.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && value
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        && value.chars().any(|c| c.is_ascii_uppercase())
}

fn cache() -> &'static Mutex<HashMap<String, String>> {
    static CACHE: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Run `command` once per process; later calls get the cached output. Failures are not cached.
fn run_cached(command: &str) -> Result<String, String> {
    if let Some(hit) = cache().lock().ok().and_then(|c| c.get(command).cloned()) {
        return Ok(hit);
    }
    let output = run_command(command, COMMAND_TIMEOUT)?;
    if let Ok(mut cache) = cache().lock() {
        cache.insert(command.to_owned(), output.clone());
    }
    Ok(output)
}

/// `sh -c command` with stdin closed, in its own process group (killed whole on timeout).
/// The error text never contains the command's output.
pub(crate) fn run_command(command: &str, timeout: Duration) -> Result<String, String> {
    let mut cmd = if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.arg("/C").arg(command);
        c
    } else {
        let mut c = Command::new("sh");
        c.arg("-c").arg(command);
        c
    };
    cmd.env(crate::nesting::NESTING_ENV, crate::nesting::child_value())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run the command: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let result = stdout.read_to_end(&mut buf).map(|_| buf);
        let _ = tx.send(result);
    });
    let deadline = Instant::now() + timeout;
    let kill = |child: &mut std::process::Child| {
        #[cfg(unix)]
        {
            if let Ok(pid) = i32::try_from(child.id()) {
                // SAFETY: killpg has no memory-safety preconditions; the group is our child's.
                unsafe {
                    libc::killpg(pid, libc::SIGKILL);
                }
            }
        }
        let _ = child.kill();
        let _ = child.wait();
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                kill(&mut child);
                return Err(format!("command timed out after {} s", timeout.as_secs()));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                kill(&mut child);
                return Err(format!("cannot wait for the command: {e}"));
            }
        }
    };
    // A background grandchild may hold stdout open: bound the read as well.
    let remaining = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(100));
    let bytes = match rx.recv_timeout(remaining) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => return Err(format!("cannot read the command's output: {e}")),
        Err(_) => {
            kill(&mut child);
            return Err(format!(
                "command output not closed after {} s",
                timeout.as_secs()
            ));
        }
    };
    if !status.success() {
        return Err(format!("command failed ({status})"));
    }
    Ok(String::from_utf8_lossy(&bytes).trim().to_owned())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::config::HttpConfig;

    #[test]
    fn errors_name_the_real_server() {
        let mut cfg = ServerConfig::stdio("srv", Vec::<String>::new());
        if let Transport::Stdio(stdio) = &mut cfg.transport {
            stdio.env.insert("TOKEN".into(), "!echo secret".into());
        }
        let err = resolve_connect_values("github", &cfg, false).unwrap_err();
        assert!(
            matches!(&err, ConfigError::Untrusted { server, .. } if server == "github"),
            "{err:?}"
        );
        assert!(!err.to_string().contains("<server>"), "{err}");
    }

    #[test]
    fn commands_are_trimmed_bounded_and_cached() {
        assert_eq!(
            run_command("printf '  hi \\n'", COMMAND_TIMEOUT).unwrap(),
            "hi"
        );
        let err = run_command("exit 3", COMMAND_TIMEOUT).unwrap_err();
        assert!(err.contains("failed"), "{err}");
        let started = Instant::now();
        let err = run_command("sleep 5", Duration::from_millis(200)).unwrap_err();
        assert!(
            err.contains("timed out") && started.elapsed() < Duration::from_secs(3),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let counter = dir.path().join("n");
        let cmd = format!("echo x >> {0}; wc -l < {0}", counter.display());
        assert_eq!(run_cached(&cmd).unwrap(), "1");
        assert_eq!(run_cached(&cmd).unwrap(), "1");
    }

    #[test]
    fn codex_http_values() {
        let mut cfg = ServerConfig {
            transport: Transport::Http(HttpConfig {
                url: "https://h/mcp".into(),
                headers: Default::default(),
                kind: crate::config::HttpKind::StreamableHttp,
                oauth: None,
            }),
            ..ServerConfig::stdio("x", Vec::<String>::new())
        };
        cfg.bearer_token_env_var = Some("TOK".into());
        cfg.env_headers.insert("X-Org".into(), "ORG".into());
        cfg.env_headers.insert("X-Missing".into(), "NOPE".into());
        let env = EnvSource::map([("TOK", "t"), ("ORG", "o")]);
        let out = resolve_connect_values_with("s", &cfg, false, &env).unwrap();
        let Transport::Http(http) = out.transport else {
            panic!()
        };
        assert_eq!(http.headers["Authorization"], "Bearer t");
        assert_eq!(http.headers["X-Org"], "o");
        assert!(!http.headers.contains_key("X-Missing"));
        let err = resolve_connect_values_with("s", &cfg, false, &EnvSource::map([("A", "b")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`TOK`") && err.contains("bearer_token_env_var"),
            "{err}"
        );
    }

    #[test]
    fn env_names_are_narrow() {
        assert!(is_env_name("GITHUB_TOKEN") && is_env_name("_X1"));
        assert!(
            !is_env_name("debug") && !is_env_name("1") && !is_env_name("__") && !is_env_name("")
        );
    }
}
