//! `mcpr login` / `mcpr logout` and OAuth in every other command, as a user runs them: real
//! `mcpr` processes against `mcpr mock --http --oauth` (its own authorization server), the
//! browser played by a plain HTTP client that reads the mock's redirect and delivers it to
//! mcpr's loopback listener. Each test has its own home (credential store), and every process
//! and wait is bounded.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ChildGuard, MCPR, Run, drain, http_get, wait_bounded};

/// Upper bound of any one `mcpr` run (and of a login's wait for its redirect).
const RUN_BOUND: Duration = Duration::from_secs(60);

/// A non-interactive command that needs a login must fail at least this fast.
const QUICK: Duration = Duration::from_secs(15);

/// `mcpr mock --http 127.0.0.1:0 --oauth ...` with `RUST_LOG=debug`, its stderr kept.
struct OAuthMock {
    _child: ChildGuard,
    /// `http://127.0.0.1:PORT/mcp`.
    url: String,
    /// Everything it printed on stderr so far.
    stderr: Arc<Mutex<String>>,
}

impl OAuthMock {
    fn start(flags: &[&str]) -> OAuthMock {
        let mut command = Command::new(MCPR);
        command
            .args(["mock", "--http", "127.0.0.1:0", "--oauth"])
            .args(flags)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = ChildGuard::spawn(&mut command);
        let stderr = child.0.stderr.take().expect("mock stderr");
        let kept = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        std::thread::spawn({
            let kept = kept.clone();
            move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(url) = line.strip_prefix("listening on ") {
                        let _ = tx.send(url.to_owned());
                    }
                    let mut kept = kept.lock().unwrap();
                    kept.push_str(&line);
                    kept.push('\n');
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("the mock printed no `listening on` line");
        OAuthMock {
            _child: child,
            url,
            stderr: kept,
        }
    }

    /// `GET /__oauth/stats`.
    fn stats(&self) -> Value {
        let origin = self.url.strip_suffix("/mcp").expect("a /mcp URL");
        let response = http_get(&format!("{origin}/__oauth/stats"));
        assert_eq!(response.status, 200, "stats: {}", response.body);
        serde_json::from_str(&response.body).expect("stats are JSON")
    }

    fn output(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// The value of query parameter `name` in `url`.
fn query_param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// A home of its own (credential store, configs, caches), a config file, and the transcript of
/// everything every `mcpr` run printed.
struct Cli {
    home: tempfile::TempDir,
    config: PathBuf,
    transcript: Mutex<String>,
}

impl Cli {
    /// `servers`: the `mcpServers` object of the config file.
    fn new(servers: Value) -> Cli {
        let home = support::temp_dir();
        std::fs::create_dir_all(home.path().join("project")).expect("create project dir");
        let config = home.path().join("mcp.json");
        std::fs::write(&config, json!({ "mcpServers": servers }).to_string())
            .expect("write config");
        Cli {
            home,
            config,
            transcript: Mutex::new(String::new()),
        }
    }

    /// `mcpr --strict-config --config FILE ARGS` in this home, with debug logs, never a browser.
    fn command(&self, args: &[&str]) -> Command {
        let home = self.home.path();
        let mut command = Command::new(MCPR);
        command
            .arg("--strict-config")
            .arg("--config")
            .arg(&self.config)
            .args(args)
            .current_dir(home.join("project"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        support::isolate_env(&mut command, home);
        command
            .env("RUST_LOG", "debug")
            .env("MCPR_NO_BROWSER", "1")
            .env("MCPR_LOGIN_TIMEOUT_MS", RUN_BOUND.as_millis().to_string())
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("BROWSER");
        command
    }

    fn record(&self, args: &[&str], stdout: &str, stderr: &str) {
        let mut transcript = self.transcript.lock().unwrap();
        transcript.push_str(&format!(
            "=== mcpr {}\n{stdout}\n{stderr}\n",
            args.join(" ")
        ));
    }

    /// Run `mcpr ARGS` to its end (bounded).
    fn run(&self, args: &[&str]) -> Run {
        let started = Instant::now();
        let mut child = ChildGuard::spawn(&mut self.command(args));
        let stdout = drain(child.0.stdout.take().expect("stdout"));
        let stderr = drain(child.0.stderr.take().expect("stderr"));
        let status = wait_bounded(&mut child, RUN_BOUND, &args.join(" "));
        let elapsed = started.elapsed();
        let run = Run {
            status,
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
            elapsed,
        };
        self.record(args, &run.stdout, &run.stderr);
        run
    }

    /// `mcpr login NAME --no-browser`, with the browser played by hand: read the URL mcpr
    /// prints, GET it from the mock (no redirect following), deliver the redirect to mcpr's
    /// loopback listener. Returns the run and the authorization code that went through it.
    fn login(&self, name: &str) -> (Run, String) {
        let args = ["login", name, "--no-browser"];
        let started = Instant::now();
        let mut child = ChildGuard::spawn(&mut self.command(&args));
        let stdout = drain(child.0.stdout.take().expect("stdout"));
        let stderr_pipe = child.0.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel::<String>();
        let stderr_reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let prompt = format!("To log in to `{name}`, open this URL in a browser:");
        let mut stderr = String::new();
        let mut prompted = false;
        let url = loop {
            let left = (started + RUN_BOUND).saturating_duration_since(Instant::now());
            let line = match rx.recv_timeout(left) {
                Ok(line) => line,
                Err(e) => {
                    panic!("no login URL from `mcpr login` ({e:?}); stderr so far:\n{stderr}")
                }
            };
            stderr.push_str(&line);
            stderr.push('\n');
            if prompted {
                break line.trim().to_owned();
            }
            prompted = line.trim_end() == prompt;
        };
        assert!(url.starts_with("http://127.0.0.1:"), "{url}");
        assert!(
            url.contains("/authorize?") && url.contains("code_challenge="),
            "{url}"
        );

        // The authorization server approves at once and sends the browser back to mcpr.
        let approved = http_get(&url);
        assert_eq!(approved.status, 302, "authorize: {}", approved.body);
        let back = approved.location.expect("a Location from /authorize");
        let parsed = url::Url::parse(&back).expect("an absolute Location");
        assert_eq!(parsed.scheme(), "http", "{back}");
        assert_eq!(parsed.host_str(), Some("127.0.0.1"), "{back}");
        assert_eq!(parsed.path(), "/callback", "{back}");
        let code = query_param(&back, "code").expect("a code in the redirect");
        assert!(code.starts_with("mock-code-"), "{code}");
        assert_eq!(
            query_param(&back, "state"),
            query_param(&url, "state"),
            "the state comes back"
        );

        // That request reaches mcpr's loopback listener.
        let page = http_get(&back);
        assert_eq!(page.status, 200, "callback page: {}", page.body);
        assert!(page.body.contains("Logged in"), "{}", page.body);

        let status = wait_bounded(&mut child, RUN_BOUND, "mcpr login");
        let elapsed = started.elapsed();
        // The reader ends at EOF, which follows the exit.
        stderr_reader.join().expect("stderr reader");
        for line in rx.try_iter() {
            stderr.push_str(&line);
            stderr.push('\n');
        }
        let run = Run {
            status,
            stdout: stdout.join().expect("stdout reader"),
            stderr,
            elapsed,
        };
        self.record(&args, &run.stdout, &run.stderr);
        (run, code)
    }

    /// `$XDG_DATA_HOME/mcpr/credentials.db` of this home.
    fn credentials_db(&self) -> PathBuf {
        self.home.path().join(".local/share/mcpr/credentials.db")
    }

    fn transcript(&self) -> String {
        self.transcript.lock().unwrap().clone()
    }
}

/// The `login` field of `mcpr servers --json` for `name`.
fn servers_json_login(cli: &Cli, name: &str) -> Value {
    let run = cli.run(&["servers", "--json"]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    let listing: Value = serde_json::from_str(&run.stdout).expect("servers --json is JSON");
    let entry = listing["servers"]
        .as_array()
        .expect("a servers array")
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("`{name}` is not listed: {listing}"))
        .clone();
    entry["login"].clone()
}

/// The report of `name` in `mcpr status --json`.
fn status_json(cli: &Cli, name: &str) -> (Run, Value) {
    let run = cli.run(&["status", "--json"]);
    let reports: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("status --json is not JSON ({e}):\n{}", run.both()));
    let report = reports
        .as_array()
        .expect("an array of reports")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no report for `{name}`: {reports}"))
        .clone();
    (run, report)
}

/// Every `PREFIX[A-Za-z0-9_-]+` in `bytes` (the mock's tokens are a prefix and base64url).
fn tokens_in(bytes: &[u8], prefix: &str) -> Vec<String> {
    let prefix = prefix.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i + prefix.len() <= bytes.len() {
        if &bytes[i..i + prefix.len()] == prefix {
            let start = i;
            let mut end = i + prefix.len();
            while end < bytes.len()
                && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'-' || bytes[end] == b'_')
            {
                end += 1;
            }
            // 32 random bytes are 43 base64url characters; shorter runs are fragments.
            if end - start - prefix.len() >= 43 {
                let token = String::from_utf8_lossy(&bytes[start..end]).into_owned();
                if !found.contains(&token) {
                    found.push(token);
                }
            }
            i = end;
        } else {
            i += 1;
        }
    }
    found
}

/// The raw bytes of the credential database and its journal/WAL files.
fn store_bytes(db: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(db).expect("read credentials.db");
    for suffix in ["-wal", "-journal"] {
        let mut path = db.as_os_str().to_owned();
        path.push(suffix);
        if let Ok(more) = std::fs::read(PathBuf::from(path)) {
            bytes.extend(more);
        }
    }
    bytes
}

fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

fn assert_needs_login(run: &Run, name: &str) {
    assert_ne!(run.code(), Some(0), "{}", run.both());
    assert!(
        run.stderr.contains(&format!("run: mcpr login {name}")),
        "no login hint:\n{}",
        run.both()
    );
    assert!(
        run.elapsed < QUICK,
        "took {:?} to say a login is needed",
        run.elapsed
    );
}

/// The whole life of a login: needed, done through the (hand-played) browser, used by `call`,
/// shown by `status` and `servers`, stored privately, forgotten by `logout`.
#[test]
fn login_call_status_logout_lifecycle() {
    let mock = OAuthMock::start(&[]);
    let cli = Cli::new(json!({ "svc": { "url": mock.url } }));

    // Before the login: non-interactive commands fail fast and say what to run.
    let run = cli.run(&["tools"]);
    assert_needs_login(&run, "svc");
    assert!(
        run.stderr.contains("not logged in") && run.stderr.contains("; run: mcpr login svc"),
        "{}",
        run.both()
    );
    let run = cli.run(&["call", "svc", "echo", r#"{"text": "hi"}"#]);
    assert_needs_login(&run, "svc");

    let run = cli.run(&["status"]);
    assert!(run.stdout.contains("LOGIN"), "{}", run.both());
    assert!(run.stdout.contains("needs login"), "{}", run.both());
    let (_, report) = status_json(&cli, "svc");
    assert_eq!(report["needs_login"], true, "{report}");
    assert_eq!(servers_json_login(&cli, "svc")["state"], "not_logged_in");
    let nothing = mock.stats();
    assert_eq!(
        nothing["token_requests"]["authorization_code"], 0,
        "{nothing}"
    );
    assert_eq!(
        nothing["authorizations"], 0,
        "no browser was opened: {nothing}"
    );

    // The login.
    let (run, _code) = cli.login("svc");
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(run.stdout.contains("Logged in to `svc`"), "{}", run.both());
    assert!(
        run.stdout.contains("(token expires in 59 min)"),
        "{}",
        run.both()
    );
    assert!(run.stdout.contains("it renews by itself"), "{}", run.both());

    let stats = mock.stats();
    assert_eq!(stats["registrations"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");
    assert_eq!(stats["token_requests"]["authorization_code"], 1, "{stats}");

    // The stored login is used.
    let run = cli.run(&["call", "svc", "echo", r#"{"text": "hi"}"#]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert_eq!(run.stdout.trim(), "hi", "{}", run.both());
    let run = cli.run(&["tools"]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(run.stdout.contains("echo"), "{}", run.both());

    let run = cli.run(&["status"]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(
        run.stdout.contains("logged in (expires in"),
        "{}",
        run.both()
    );
    assert!(!run.stdout.contains("needs login"), "{}", run.both());
    let (run, report) = status_json(&cli, "svc");
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert_eq!(report["needs_login"], false, "{report}");
    assert_eq!(report["login"]["state"], "logged_in", "{report}");
    assert_eq!(report["login"]["refreshable"], true, "{report}");
    assert!(report["login"]["expires_at"].is_u64(), "{report}");

    let run = cli.run(&["servers"]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(
        run.stdout.contains("logged in (expires in"),
        "{}",
        run.both()
    );
    let login = servers_json_login(&cli, "svc");
    assert_eq!(login["state"], "logged_in", "{login}");

    // Stored privately.
    let db = cli.credentials_db();
    assert!(db.is_file(), "no {}", db.display());
    assert_eq!(mode_of(&db), 0o600, "{}", db.display());

    // No other login or token request happened behind the scenes.
    let stats = mock.stats();
    assert_eq!(stats["registrations"], 1, "{stats}");
    assert_eq!(stats["authorizations"], 1, "{stats}");
    assert_eq!(stats["token_requests"]["authorization_code"], 1, "{stats}");

    // Logout forgets it; the next command needs a login again.
    let run = cli.run(&["logout", "svc"]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert_eq!(run.stdout.trim(), "Logged out of `svc`.", "{}", run.both());
    let run = cli.run(&["logout", "svc"]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert_eq!(
        run.stdout.trim(),
        "`svc` had no stored login.",
        "{}",
        run.both()
    );
    let run = cli.run(&["tools"]);
    assert_needs_login(&run, "svc");
    assert_eq!(servers_json_login(&cli, "svc")["state"], "not_logged_in");
}

/// Secrets never appear in output, even at `RUST_LOG=debug`: after a login and a round
/// of every command that uses it, no token or client secret in the credential store (nor the
/// authorization code that went through the loopback redirect) appears in anything mcpr or the
/// mock printed.
#[test]
fn no_output_holds_a_token_a_secret_or_the_code() {
    let mock = OAuthMock::start(&[]);
    let cli = Cli::new(json!({ "svc": { "url": mock.url } }));

    let run = cli.run(&["tools"]);
    assert_needs_login(&run, "svc");
    let (run, code) = cli.login("svc");
    assert_eq!(run.code(), Some(0), "{}", run.both());
    let runs: &[&[&str]] = &[
        &["tools"],
        &["tools", "--json"],
        &["call", "svc", "echo", r#"{"text": "hi"}"#],
        &["call", "svc", "echo", r#"{"text": "hi"}"#, "--json"],
        &["status"],
        &["status", "--json"],
        &["servers"],
        &["servers", "--json"],
    ];
    for args in runs {
        let run = cli.run(args);
        assert_eq!(
            run.code(),
            Some(0),
            "mcpr {}:\n{}",
            args.join(" "),
            run.both()
        );
    }

    let bytes = store_bytes(&cli.credentials_db());
    let access = tokens_in(&bytes, "mock-at-");
    let refresh = tokens_in(&bytes, "mock-rt-");
    // The DCR client secret, if the registration got one.
    let secrets = tokens_in(&bytes, "mock-cs-");
    assert!(!access.is_empty(), "no access token found in the store");
    assert!(!refresh.is_empty(), "no refresh token found in the store");
    let transcript = cli.transcript();
    assert!(
        transcript.contains("DEBUG"),
        "RUST_LOG=debug had no effect:\n{transcript}"
    );
    let mock_output = mock.output();
    for secret in access.iter().chain(&refresh).chain(&secrets) {
        assert!(
            !transcript.contains(secret.as_str()),
            "mcpr printed `{secret}`:\n{transcript}"
        );
        assert!(
            !mock_output.contains(secret.as_str()),
            "the mock printed `{secret}`:\n{mock_output}"
        );
    }
    assert!(
        !mock_output.contains(&code),
        "the mock printed the authorization code `{code}`:\n{mock_output}"
    );
    let leaks: Vec<&str> = transcript.lines().filter(|l| l.contains(&code)).collect();
    assert!(
        leaks.is_empty(),
        "mcpr printed the authorization code `{code}`:\n{}",
        leaks.join("\n")
    );
}

/// The client-credentials grant needs no person: `tools` fetches its own token.
#[test]
fn client_credentials_need_no_login() {
    let mock = OAuthMock::start(&["--oauth-client", "ci:cs-secret-123"]);
    let cli = Cli::new(json!({ "svc": {
        "url": mock.url,
        "oauth": {"clientId": "ci", "clientSecret": "cs-secret-123", "grantType": "client_credentials"}
    }}));

    let run = cli.run(&["tools"]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(run.stdout.contains("echo"), "{}", run.both());
    let run = cli.run(&["call", "svc", "echo", r#"{"text": "machine"}"#]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert_eq!(run.stdout.trim(), "machine", "{}", run.both());

    let stats = mock.stats();
    assert!(
        stats["token_requests"]["client_credentials"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "{stats}"
    );
    assert_eq!(stats["authorizations"], 0, "{stats}");
    assert_eq!(stats["registrations"], 0, "{stats}");
    assert_eq!(stats["token_requests"]["authorization_code"], 0, "{stats}");

    let transcript = cli.transcript();
    assert!(
        !transcript.contains("cs-secret-123"),
        "the client secret was printed:\n{transcript}"
    );
    if cli.credentials_db().exists() {
        for token in tokens_in(&store_bytes(&cli.credentials_db()), "mock-at-") {
            assert!(!transcript.contains(&token), "printed `{token}`");
        }
    }
}

/// A login whose access token expired and whose refresh token the server rejects: the next
/// command fails saying to log in again, and the dead credential is gone.
#[test]
fn an_expired_login_with_a_dead_refresh_token_asks_for_a_new_login() {
    let mock = OAuthMock::start(&["--oauth-token-ttl-ms", "1500", "--oauth-refresh-invalid"]);
    let cli = Cli::new(json!({ "svc": { "url": mock.url } }));

    let (run, _) = cli.login("svc");
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(run.stdout.contains("Logged in to `svc`"), "{}", run.both());
    assert_eq!(servers_json_login(&cli, "svc")["state"], "logged_in");

    std::thread::sleep(Duration::from_millis(2500));

    let expired = cli.run(&["tools"]);
    assert_needs_login(&expired, "svc");
    let stats = mock.stats();
    assert!(
        stats["token_requests"]["refresh_token"]
            .as_u64()
            .is_some_and(|n| n >= 1),
        "no refresh was tried: {stats}"
    );
    assert_eq!(stats["authorizations"], 1, "no second login: {stats}");

    // The rejected credential was removed.
    let login = servers_json_login(&cli, "svc");
    assert_eq!(login["state"], "not_logged_in", "{login}");
    let run = cli.run(&["tools"]);
    assert_needs_login(&run, "svc");

    // The first failure says why a login is needed again.
    assert!(
        expired.stderr.contains("login expired"),
        "the first failure after the rejected refresh does not say the login expired:\n{}",
        expired.both()
    );
}

/// `mcpr login` only makes sense for a configured remote server.
#[test]
fn login_refuses_stdio_and_unknown_servers() {
    let cli = Cli::new(json!({
        "local": {"command": MCPR, "args": ["mock"]},
        "remote": {"url": "http://127.0.0.1:9/mcp"}
    }));

    let run = cli.run(&["login", "local", "--no-browser"]);
    assert_eq!(run.code(), Some(2), "{}", run.both());
    assert!(
        run.stderr.contains("`local` is a stdio server"),
        "{}",
        run.both()
    );

    let run = cli.run(&["login", "nobody", "--no-browser"]);
    assert_eq!(run.code(), Some(2), "{}", run.both());
    assert!(
        run.stderr.contains("no server named `nobody`"),
        "{}",
        run.both()
    );
    assert!(run.stderr.contains("local") && run.stderr.contains("remote"));

    let run = cli.run(&["logout", "local"]);
    assert_eq!(run.code(), Some(2), "{}", run.both());
    let run = cli.run(&["logout", "nobody"]);
    assert_eq!(run.code(), Some(2), "{}", run.both());

    let run = cli.run(&["login"]);
    assert_eq!(run.code(), Some(2), "missing NAME: {}", run.both());
}

/// A pre-registered client with a fixed callback port (Claude Code's `oauth` block): no
/// registration, and the redirect URI is the configured port's.
#[test]
fn a_configured_client_and_callback_port_are_used() {
    let mock = OAuthMock::start(&["--oauth-client", "pre:pre-secret-77"]);
    let port = support::free_port();
    let cli = Cli::new(json!({ "svc": {
        "url": mock.url,
        "oauth": {"clientId": "pre", "clientSecret": "pre-secret-77", "callbackPort": port}
    }}));

    let (run, _) = cli.login("svc");
    assert_eq!(run.code(), Some(0), "{}", run.both());
    let transcript = cli.transcript();
    let redirect = format!("http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback");
    assert!(
        transcript.contains(&redirect),
        "the login URL must name the configured callback port {port}:\n{transcript}"
    );
    assert!(!transcript.contains("pre-secret-77"), "{transcript}");
    let stats = mock.stats();
    assert_eq!(stats["registrations"], 0, "{stats}");
    assert_eq!(stats["token_requests"]["authorization_code"], 1, "{stats}");

    let run = cli.run(&["call", "svc", "echo", r#"{"text": "pre"}"#]);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert_eq!(run.stdout.trim(), "pre", "{}", run.both());
}
