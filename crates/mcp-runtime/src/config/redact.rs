//! A display form of a server without its secrets: `servers`, logs and errors show the
//! unexpanded form or `***`.
//!
//! Built from the *unexpanded* config, so values that came from `${VAR}` expansion never appear:
//! a reference is shown as written (it names a variable, not a secret). Literal values are shown
//! unless they look like secrets: values of env variables and headers whose name suggests one
//! (`*TOKEN*`, `*KEY*`, `*SECRET*`, `Authorization`, ...), well-known token shapes (`sk-…`,
//! `ghp_…`, JWTs, long opaque strings), secret-named URL query parameters and flags, and
//! passwords in URLs.

use std::collections::BTreeMap;
use std::fmt;

use super::{ServerConfig, Transport};

/// What `mcpr servers` shows of a server; every field is safe to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactedServer {
    /// `stdio`, `http` or `sse`.
    pub transport: &'static str,
    /// The program (stdio).
    pub command: Option<String>,
    /// Its arguments (stdio).
    pub args: Vec<String>,
    /// Working directory (stdio).
    pub cwd: Option<String>,
    /// Endpoint (http/sse).
    pub url: Option<String>,
    /// Environment additions.
    pub env: BTreeMap<String, String>,
    /// Request headers.
    pub headers: BTreeMap<String, String>,
    /// Names of variables forwarded from the parent environment.
    pub env_vars: Vec<String>,
    /// Variable holding a bearer token (a name, not a value).
    pub bearer_token_env_var: Option<String>,
    /// Header → variable name.
    pub env_headers: BTreeMap<String, String>,
}

impl RedactedServer {
    /// The redacted form of `config` (pass the unexpanded config).
    ///
    /// ```
    /// use mcp_runtime::config::ServerConfig;
    /// let mut cfg = ServerConfig::stdio("npx", ["-y", "server", "--api-key", "sk-live-123"]);
    /// if let mcp_runtime::config::Transport::Stdio(s) = &mut cfg.transport {
    ///     s.env.insert("GITHUB_TOKEN".into(), "ghp_abcdef".into());
    ///     s.env.insert("OTHER".into(), "${FROM_ENV}".into());
    /// }
    /// let shown = cfg.redacted();
    /// assert_eq!(shown.target(), "npx -y server --api-key ***");
    /// assert_eq!(shown.env["GITHUB_TOKEN"], "***");
    /// assert_eq!(shown.env["OTHER"], "${FROM_ENV}");
    /// ```
    pub fn new(config: &ServerConfig) -> Self {
        let mut shown = RedactedServer {
            transport: config.transport.kind_name(),
            command: None,
            args: Vec::new(),
            cwd: None,
            url: None,
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
            env_vars: config.env_vars.clone(),
            bearer_token_env_var: config.bearer_token_env_var.clone(),
            env_headers: config.env_headers.clone(),
        };
        match &config.transport {
            Transport::Stdio(stdio) => {
                shown.command = Some(redact_free(&stdio.command));
                shown.args = redact_args(&stdio.args);
                shown.cwd = stdio.cwd.as_ref().map(|p| p.display().to_string());
                shown.env = redact_map(&stdio.env);
            }
            Transport::Http(http) => {
                shown.url = Some(redact_url(&http.url));
                shown.headers = redact_map(&http.headers);
            }
        }
        shown
    }

    /// The command line (stdio) or the URL (http/sse), redacted.
    pub fn target(&self) -> String {
        match (&self.command, &self.url) {
            (Some(command), _) => std::iter::once(command)
                .chain(&self.args)
                .map(|part| quote(part))
                .collect::<Vec<_>>()
                .join(" "),
            (None, Some(url)) => url.clone(),
            (None, None) => String::new(),
        }
    }
}

impl fmt::Display for RedactedServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.target())
    }
}

fn quote(part: &str) -> String {
    if !part.is_empty() && !part.contains([' ', '\t', '"', '\'']) {
        part.to_owned()
    } else {
        format!("'{}'", part.replace('\'', "'\\''"))
    }
}

const MASK: &str = "***";

/// Whether a variable, header, flag or query-parameter name suggests a secret.
pub(crate) fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const CONTAINS: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSW",
        "KEY",
        "AUTH",
        "CREDENTIAL",
        "COOKIE",
        "SESSION",
        "PRIVATE",
        "SIGNATURE",
    ];
    const PARTS: &[&str] = &["PAT", "PASS", "PWD", "SIG", "JWT"];
    CONTAINS.iter().any(|needle| upper.contains(needle))
        || upper
            .split(|c: char| !c.is_ascii_alphanumeric())
            .any(|part| PARTS.contains(&part))
}

/// Whether a literal looks like a credential whatever its name.
pub(crate) fn secret_value(value: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk-",
        "sk_",
        "pk_live_",
        "rk_live_",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "xoxa-",
        "xapp-",
        "AKIA",
        "AIza",
        "ya29.",
        "npm_",
        "pypi-",
        "hf_",
        "lin_api_",
        "ntn_",
        "secret_",
        "shpat_",
        "sq0atp-",
        "dop_v1_",
    ];
    let v = value.trim();
    if v.len() >= 8 && PREFIXES.iter().any(|p| v.starts_with(p)) {
        return true;
    }
    // JWT: three base64url parts starting with `eyJ`.
    if v.starts_with("eyJ") && v.matches('.').count() == 2 {
        return true;
    }
    // Long opaque tokens (UUID-shaped API keys included): letters and digits, no path or host.
    v.len() >= 24
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
}

/// A value with no secret-suggesting name: URLs get [`redact_url`], token-shaped words `***`.
pub(crate) fn redact_free(value: &str) -> String {
    if value.starts_with('!') || super::expand::has_reference(value) {
        return redact_defaults(value, false);
    }
    if value.contains("://") && !value.contains(char::is_whitespace) {
        return redact_url(value);
    }
    value
        .split(' ')
        .map(|word| {
            if secret_value(word) {
                MASK.to_owned()
            } else {
                word.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A value whose name suggests a secret: references stay (with their defaults masked), a
/// leading auth scheme stays, everything else is `***`.
pub(crate) fn redact_secret(value: &str) -> String {
    if value.is_empty() {
        return String::new();
    }
    if value.starts_with('!') {
        return redact_free(value);
    }
    if super::expand::has_reference(value) {
        return redact_defaults(value, true);
    }
    match value.split_once(' ') {
        Some((scheme, _))
            if ["bearer", "basic", "token", "bot"]
                .contains(&scheme.to_ascii_lowercase().as_str()) =>
        {
            format!("{scheme} {MASK}")
        }
        _ => MASK.to_owned(),
    }
}

/// `${VAR:-default}`: mask the default when `always` or when it looks like a secret; mask
/// token-shaped literal words outside references.
fn redact_defaults(value: &str, always: bool) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&mask_words(&rest[..start]));
        let Some(len) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let reference = &rest[start..start + len + 1];
        match reference.find(":-") {
            Some(idx) => {
                let default = &reference[idx + 2..reference.len() - 1];
                if always || secret_value(default) {
                    out.push_str(&reference[..idx + 2]);
                    out.push_str(MASK);
                    out.push('}');
                } else {
                    out.push_str(reference);
                }
            }
            None => out.push_str(reference),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(&mask_words(rest));
    out
}

fn mask_words(text: &str) -> String {
    text.split(' ')
        .map(|w| if secret_value(w) { MASK } else { w })
        .collect::<Vec<_>>()
        .join(" ")
}

fn redact_map(map: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    map.iter()
        .map(|(k, v)| {
            let shown = if secret_name(k) {
                redact_secret(v)
            } else {
                redact_free(v)
            };
            (k.clone(), shown)
        })
        .collect()
}

fn redact_args(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut secret_flag = false;
    for arg in args {
        let shown = if secret_flag && !arg.starts_with('-') {
            redact_secret(arg)
        } else if let Some((flag, value)) = arg.split_once('=').filter(|(f, _)| !f.contains("://"))
        {
            if secret_name(flag.trim_start_matches('-')) {
                format!("{flag}={}", redact_secret(value))
            } else {
                format!("{flag}={}", redact_free(value))
            }
        } else {
            redact_free(arg)
        };
        secret_flag =
            arg.starts_with('-') && !arg.contains('=') && secret_name(arg.trim_start_matches('-'));
        out.push(shown);
    }
    out
}

/// Mask a URL's password, secret-named or token-shaped query values and token-shaped path
/// segments.
pub(crate) fn redact_url(url: &str) -> String {
    if super::expand::has_reference(url) {
        return redact_defaults(url, false);
    }
    let (before_fragment, fragment) = match url.split_once('#') {
        Some((a, b)) => (a, Some(b)),
        None => (url, None),
    };
    let (base, query) = match before_fragment.split_once('?') {
        Some((a, b)) => (a, Some(b)),
        None => (before_fragment, None),
    };
    let (scheme, rest) = match base.split_once("://") {
        Some((s, r)) => (Some(s), r),
        None => (None, base),
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:{MASK}@{host}"),
            None if secret_value(userinfo) => format!("{MASK}@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    let path: String = path
        .split('/')
        .map(|seg| if secret_value(seg) { MASK } else { seg })
        .collect::<Vec<_>>()
        .join("/");
    let mut out = String::new();
    if let Some(scheme) = scheme {
        out.push_str(scheme);
        out.push_str("://");
    }
    out.push_str(&authority);
    out.push_str(&path);
    if let Some(query) = query {
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if secret_name(k) || secret_value(v) => format!("{k}={MASK}"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HttpConfig, HttpKind};

    #[test]
    fn urls() {
        assert_eq!(
            redact_url("https://mcp.exa.ai/mcp?exaApiKey=abc&tools=web"),
            "https://mcp.exa.ai/mcp?exaApiKey=***&tools=web"
        );
        assert_eq!(
            redact_url("https://u:pw@h.example/x"),
            "https://u:***@h.example/x"
        );
        assert_eq!(
            redact_url("https://server.smithery.ai/3f9a8c7e2b1d4f6a9c8e7d6b5a4f3e2d/mcp"),
            "https://server.smithery.ai/***/mcp"
        );
        assert_eq!(
            redact_url("http://localhost:3000/mcp"),
            "http://localhost:3000/mcp"
        );
        assert_eq!(redact_url("https://h/${PATH_KEY}"), "https://h/${PATH_KEY}");
    }

    #[test]
    fn args_and_maps() {
        let args: Vec<String> = [
            "-e",
            "GITHUB_TOKEN=ghp_xxxxxxxx",
            "--token",
            "abc",
            "--port",
            "80",
            "--key=v",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(
            redact_args(&args),
            vec![
                "-e",
                "GITHUB_TOKEN=***",
                "--token",
                "***",
                "--port",
                "80",
                "--key=***"
            ]
        );
        let map: BTreeMap<String, String> = [
            ("Authorization", "Bearer abc.def"),
            ("X-Api-Key", "${KEY:-fallback}"),
            ("API_TOKEN", "${API_TOKEN}"),
            ("LOG", "debug"),
            ("DSN", "sk-abcdefghijkl"),
            ("CMD_SECRET", "!op read op://v/i"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let shown = redact_map(&map);
        assert_eq!(shown["Authorization"], "Bearer ***");
        assert_eq!(shown["X-Api-Key"], "${KEY:-***}");
        assert_eq!(shown["API_TOKEN"], "${API_TOKEN}");
        assert_eq!(shown["LOG"], "debug");
        assert_eq!(shown["DSN"], "***");
        assert_eq!(shown["CMD_SECRET"], "!op read op://v/i");
    }

    #[test]
    fn http_servers_show_their_url() {
        let cfg = ServerConfig {
            transport: Transport::Http(HttpConfig {
                url: "https://h/mcp?token=t0ken".into(),
                headers: BTreeMap::new(),
                kind: HttpKind::Sse,
                oauth: None,
            }),
            ..ServerConfig::stdio("x", Vec::<String>::new())
        };
        let shown = cfg.redacted();
        assert_eq!(
            (shown.transport, shown.target().as_str()),
            ("sse", "https://h/mcp?token=***")
        );
    }
}
