//! The step of an authorization-code login that needs a person (or, in the conformance
//! suite, stands in for one): open the authorization URL, wait for the redirect back.
//!
//! - [`LoopbackBrowser`]: listens on `127.0.0.1` (the configured `callbackPort` or an
//!   ephemeral port), opens the system browser (or only prints the URL), and takes the first
//!   request to `/callback` whose `state` matches.
//! - [`Headless`]: GETs the authorization URL without following redirects and reads the code
//!   from `Location`, for authorization servers that approve without a person (tests,
//!   conformance).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Path of the loopback redirect URI.
pub const CALLBACK_PATH: &str = "/callback";

/// How long a login waits for the browser to come back.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);

/// Which URLs a login opens in a browser or prints for a person to open, as error messages
/// state it.
pub const WEB_PAGE_RULE: &str = "a login opens or prints only https URLs, or http URLs to a loopback host (localhost, 127.0.0.1, [::1])";

/// Whether `url` is a web page a login may open or print: `https:`, or `http:` to a loopback
/// host. The URL comes from the authorization server's metadata, and an OS opener runs any
/// scheme it has a handler for (`file:` launches local files, `smb:` mounts shares), so
/// anything but a web page is refused. Returns the URL as parsed and re-serialised, which is
/// what should be opened: the raw text may hold characters the parser dropped.
pub fn web_page(url: &str) -> Option<String> {
    // The same rule as every other OAuth endpoint.
    super::endpoint::secure_url(url).map(String::from)
}

/// A boxed future, as the object-safe [`Authorizer`] returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Why the interactive step failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthorizeError {
    /// The loopback listener could not be opened.
    #[error("cannot listen for the login redirect on 127.0.0.1:{port}: {source}")]
    Listen {
        /// The port asked for (0 = any).
        port: u16,
        /// What failed.
        source: std::io::Error,
    },
    /// Nobody came back in time.
    #[error("no login redirect arrived within {} s", .0.as_secs())]
    Timeout(Duration),
    /// The authorization server said no.
    #[error("the authorization server refused: {0}")]
    Denied(String),
    /// The URL to send the person to is not a web page (see [`web_page`]); it is neither
    /// opened nor printed, nor repeated here.
    #[error("the authorization URL is not a web page: {WEB_PAGE_RULE}")]
    NotAWebPage,
    /// Anything else (the headless GET failed, no `Location`, ...).
    #[error("{0}")]
    Failed(String),
}

/// A redirect URI reserved for one login, and the means to wait for it.
#[derive(Debug)]
pub struct Redirect {
    /// `http://127.0.0.1:PORT/callback`.
    pub uri: String,
    listener: Option<TcpListener>,
}

impl Redirect {
    /// A redirect URI served by the caller (a host with its own way to receive the redirect,
    /// e.g. a web UI); [`Authorizer::authorize`] then returns what arrived there.
    pub fn new(uri: impl Into<String>) -> Self {
        Redirect {
            uri: uri.into(),
            listener: None,
        }
    }
}

/// Performs the person's part of a login. Hosts with a UI of their own implement it; mcpr
/// ships [`LoopbackBrowser`] and [`Headless`].
///
/// ```
/// use mcp_runtime::auth::{AuthorizeError, Authorizer, BoxFuture, Redirect};
///
/// /// Shows the URL in the host's UI and waits for the redirect its web view catches.
/// struct WebView;
///
/// impl Authorizer for WebView {
///     fn redirect(&self, _port: Option<u16>) -> BoxFuture<'_, Result<Redirect, AuthorizeError>> {
///         Box::pin(async { Ok(Redirect::new("http://127.0.0.1:7777/callback")) })
///     }
///     fn authorize<'a>(
///         &'a self,
///         _server: &'a str,
///         _url: &'a str,
///         _redirect: Redirect,
///     ) -> BoxFuture<'a, Result<String, AuthorizeError>> {
///         Box::pin(async { Err(AuthorizeError::Failed("closed by the user".into())) })
///     }
/// }
/// ```
pub trait Authorizer: Send + Sync {
    /// Reserve a redirect URI (bind the loopback port) before the client registers with it.
    fn redirect(
        &self,
        callback_port: Option<u16>,
    ) -> BoxFuture<'_, Result<Redirect, AuthorizeError>>;

    /// Send the person to `url` and return the full redirect URL the server sent back.
    fn authorize<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
        redirect: Redirect,
    ) -> BoxFuture<'a, Result<String, AuthorizeError>>;
}

/// The browser flow with a loopback callback.
#[derive(Debug, Clone)]
pub struct LoopbackBrowser {
    /// Try to open the system browser (otherwise only print the URL).
    pub open_browser: bool,
    /// How long to wait for the redirect.
    pub timeout: Duration,
}

impl Default for LoopbackBrowser {
    fn default() -> Self {
        LoopbackBrowser {
            open_browser: true,
            timeout: LOGIN_TIMEOUT,
        }
    }
}

impl Authorizer for LoopbackBrowser {
    fn redirect(
        &self,
        callback_port: Option<u16>,
    ) -> BoxFuture<'_, Result<Redirect, AuthorizeError>> {
        Box::pin(async move {
            let port = callback_port.unwrap_or(0);
            let listener = TcpListener::bind(("127.0.0.1", port))
                .await
                .map_err(|source| AuthorizeError::Listen { port, source })?;
            let bound = listener
                .local_addr()
                .map_err(|source| AuthorizeError::Listen { port, source })?;
            Ok(Redirect {
                uri: format!("http://127.0.0.1:{}{CALLBACK_PATH}", bound.port()),
                listener: Some(listener),
            })
        })
    }

    fn authorize<'a>(
        &'a self,
        server: &'a str,
        url: &'a str,
        redirect: Redirect,
    ) -> BoxFuture<'a, Result<String, AuthorizeError>> {
        Box::pin(async move {
            let Some(listener) = redirect.listener else {
                return Err(AuthorizeError::Failed("no loopback listener".into()));
            };
            let url = web_page(url).ok_or(AuthorizeError::NotAWebPage)?;
            let opened = self.open_browser && open_browser(&url);
            // The URL carries no secret (PKCE keeps the verifier here); people need it when no
            // browser could be opened, e.g. over SSH.
            if opened {
                eprintln!(
                    "Opened a browser to log in to `{server}`. If nothing appeared, open:\n  {url}"
                );
            } else {
                eprintln!("To log in to `{server}`, open this URL in a browser:\n  {url}");
            }
            let state = state_of(&url);
            tokio::time::timeout(self.timeout, wait_for_callback(&listener, state.as_deref()))
                .await
                .map_err(|_| AuthorizeError::Timeout(self.timeout))?
        })
    }
}

/// The headless flow: the authorization server approves without a person.
#[derive(Debug, Clone, Default)]
pub struct Headless;

impl Authorizer for Headless {
    fn redirect(
        &self,
        callback_port: Option<u16>,
    ) -> BoxFuture<'_, Result<Redirect, AuthorizeError>> {
        Box::pin(async move {
            // Nothing listens: the redirect is read from `Location`, never followed.
            let port = callback_port.unwrap_or(3000);
            Ok(Redirect {
                uri: format!("http://localhost:{port}{CALLBACK_PATH}"),
                listener: None,
            })
        })
    }

    fn authorize<'a>(
        &'a self,
        _server: &'a str,
        url: &'a str,
        _redirect: Redirect,
    ) -> BoxFuture<'a, Result<String, AuthorizeError>> {
        Box::pin(async move {
            // Installs the TLS provider reqwest needs.
            crate::net::install_tls_provider();
            let client = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| AuthorizeError::Failed(e.to_string()))?;
            let response = client.get(url).send().await.map_err(|e| {
                AuthorizeError::Failed(format!("authorization request failed: {e}"))
            })?;
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    AuthorizeError::Failed(format!(
                        "the authorization endpoint answered HTTP {} without a redirect",
                        response.status()
                    ))
                })?;
            check_denial(location)?;
            Ok(location.to_owned())
        })
    }
}

/// The `state` parameter of an authorization URL.
fn state_of(url: &str) -> Option<String> {
    let parsed = reqwest::Url::parse(url).ok()?;
    parsed
        .query_pairs()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.into_owned())
}

/// An `error=` redirect is the server's refusal.
fn check_denial(redirect: &str) -> Result<(), AuthorizeError> {
    let Ok(parsed) = reqwest::Url::parse(redirect) else {
        return Err(AuthorizeError::Failed(
            "the authorization server redirected to an invalid URL".into(),
        ));
    };
    if let Some((_, error)) = parsed.query_pairs().find(|(k, _)| k == "error") {
        let description = parsed
            .query_pairs()
            .find(|(k, _)| k == "error_description")
            .map(|(_, v)| format!(": {v}"))
            .unwrap_or_default();
        return Err(AuthorizeError::Denied(super::printable(&format!(
            "{error}{description}"
        ))));
    }
    Ok(())
}

/// Accept connections until one brings the callback with the expected `state` (other requests,
/// like a browser's favicon, get a 404). Returns the full redirect URL.
async fn wait_for_callback(
    listener: &TcpListener,
    state: Option<&str>,
) -> Result<String, AuthorizeError> {
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            continue;
        };
        let mut buffer = vec![0u8; 8192];
        let mut read = 0;
        // Read the request head (the callback is a GET; its body, if any, is ignored).
        while read < buffer.len() {
            match tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer[read..]))
                .await
            {
                Ok(Ok(0)) | Err(_) => break,
                Ok(Ok(n)) => {
                    read += n;
                    if buffer[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                Ok(Err(_)) => break,
            }
        }
        let head = String::from_utf8_lossy(&buffer[..read]);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.split_whitespace().nth(1))
            .unwrap_or("");
        let full = format!("http://127.0.0.1{target}");
        let parsed = reqwest::Url::parse(&full).ok();
        let is_callback = parsed.as_ref().is_some_and(|u| u.path() == CALLBACK_PATH);
        let state_matches = parsed.as_ref().is_some_and(|u| {
            state.is_none_or(|expected| u.query_pairs().any(|(k, v)| k == "state" && v == expected))
        });
        if !is_callback || !state_matches {
            let _ = stream
                .write_all(
                    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                )
                .await;
            continue;
        }
        let outcome = check_denial(&full);
        let page = match &outcome {
            Ok(()) => "Logged in. You can close this window and return to the terminal.",
            Err(_) => {
                "The login was refused. You can close this window; details are in the terminal."
            }
        };
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
        outcome?;
        return Ok(full);
    }
}

/// Open `url` in the system browser; false when no opener could be started.
fn open_browser(url: &str) -> bool {
    if std::env::var_os("MCPR_NO_BROWSER").is_some() {
        return false;
    }
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        // Headless Linux (SSH, CI) has no display: do not try.
        if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
            return false;
        }
        "xdg-open"
    };
    std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn loopback_takes_the_callback_with_the_right_state() {
        let browser = LoopbackBrowser {
            open_browser: false,
            timeout: Duration::from_secs(10),
        };
        let redirect = browser.redirect(None).await.unwrap();
        let uri = redirect.uri.clone();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with(CALLBACK_PATH));
        let auth_url = "https://as.example/authorize?state=abc&client_id=x";
        let waiting =
            tokio::spawn(async move { browser.authorize("svc", auth_url, redirect).await });
        // A stray request and a wrong state are ignored; the right one ends the wait.
        let client = crate::net::shared_client().unwrap();
        let base = uri.trim_end_matches(CALLBACK_PATH).to_owned();
        let _ = client.get(format!("{base}/favicon.ico")).send().await;
        let _ = client
            .get(format!("{uri}?code=no&state=wrong"))
            .send()
            .await;
        let answer = client
            .get(format!("{uri}?code=c0de&state=abc"))
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success());
        let full = waiting.await.unwrap().unwrap();
        assert!(full.contains("code=c0de"));
    }

    #[test]
    fn only_web_pages_are_opened() {
        for allowed in [
            "https://as.example/authorize?x=1",
            "http://127.0.0.1:8080/authorize",
            "http://127.9.9.9/a",
            "http://LOCALHOST:1/a",
            "http://[::1]:9/a",
        ] {
            assert!(web_page(allowed).is_some(), "{allowed}");
        }
        for refused in [
            "file:///tmp/x.desktop",
            "javascript:alert(1)",
            "smb://host/share",
            "http://as.example/authorize",
            "http://10.0.0.1/a",
            "http://localhost.evil.example/a",
            "ms-settings:",
            "HTTPS",
            "",
        ] {
            assert!(web_page(refused).is_none(), "{refused}");
        }
        // What is opened is the parsed URL, not the raw text around it.
        assert_eq!(
            web_page(" https://as.example/a\tb ").as_deref(),
            Some("https://as.example/ab")
        );
    }

    #[tokio::test]
    async fn a_refused_url_is_neither_opened_nor_waited_for() {
        let browser = LoopbackBrowser {
            open_browser: true,
            timeout: Duration::from_secs(600),
        };
        let redirect = browser.redirect(None).await.unwrap();
        let outcome = browser
            .authorize("svc", "file:///tmp/evil.desktop?state=s", redirect)
            .await;
        assert!(matches!(outcome, Err(AuthorizeError::NotAWebPage)));
    }

    #[tokio::test]
    async fn a_denied_login_is_an_error() {
        assert!(matches!(
            check_denial("http://127.0.0.1:1/callback?error=access_denied&state=s"),
            Err(AuthorizeError::Denied(reason)) if reason == "access_denied"
        ));
        assert!(check_denial("http://127.0.0.1:1/callback?code=x&state=s").is_ok());
        // The server's words reach a terminal: no escape sequence survives.
        let hostile = "http://127.0.0.1:1/callback?error=access%1B%5B2J_denied\
                       &error_description=bye%1B%5D0%3Bowned%07%0D%0Anow&state=s";
        assert!(matches!(
            check_denial(hostile),
            Err(AuthorizeError::Denied(reason)) if reason == "access[2J_denied: bye]0;ownednow"
        ));
    }
}
