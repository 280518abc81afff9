//! OAuth against a hostile or broken environment, as a user meets it: real `mcpr` processes
//! against `mcpr mock --http --oauth`.
//!
//! - An authorization server whose metadata names an `authorization_endpoint` that is not a web
//!   page (`file:`, `javascript:`, `smb:`): `mcpr login` neither opens nor prints it. The OS
//!   opener is a recorder script named `xdg-open` (and `open`) first on `PATH`, with a display
//!   set, so an opened URL would be seen.
//! - A credential store that is garbage, a directory, or unreadable: servers that need no
//!   login still work, and an OAuth server's error is the store's own.
//! - Metadata naming a plain-http token or registration endpoint, or authorization server, on
//!   another host: nothing is sent there.
//! - A token whose `expires_in` is near `u64::MAX`.
//!
//! Each test has its own home (credential store, configs) and every process and wait is bounded.

#![cfg(unix)]

mod support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ChildGuard, MCPR, Run, drain, http_get, wait_bounded};

/// Upper bound of any one `mcpr` run (and of a login's wait for its redirect).
const RUN_BOUND: Duration = Duration::from_secs(60);

/// What error messages say about the URLs a login opens.
const RULE: &str = "a login opens or prints only https URLs, or http URLs to a loopback host (localhost, 127.0.0.1, [::1])";

/// `mcpr mock --http 127.0.0.1:0 FLAGS` (add `--oauth` to the flags for an OAuth server).
struct Mock {
    _child: ChildGuard,
    /// `http://127.0.0.1:PORT/mcp`.
    url: String,
}

impl Mock {
    fn start(flags: &[&str]) -> Mock {
        let mut command = Command::new(MCPR);
        command
            .args(["mock", "--http", "127.0.0.1:0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let (child, url) = support::spawn_listening(&mut command);
        Mock { _child: child, url }
    }

    /// `http://127.0.0.1:PORT`.
    fn origin(&self) -> &str {
        self.url.strip_suffix("/mcp").expect("a /mcp URL")
    }

    /// `GET /__oauth/stats` of an `--oauth` mock.
    fn stats(&self) -> Value {
        let response = http_get(&format!("{}/__oauth/stats", self.origin()));
        assert_eq!(response.status, 200, "stats: {}", response.body);
        serde_json::from_str(&response.body).expect("stats are JSON")
    }
}

/// A home of its own with a config file, and a `bin` directory first on `PATH` whose `xdg-open`
/// and `open` record their arguments, one per line, in `opened.log`.
struct Home {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Home {
    /// `servers`: the `mcpServers` object of the config file.
    fn new(servers: Value) -> Home {
        let dir = support::temp_dir();
        std::fs::create_dir_all(dir.path().join("project")).expect("create project dir");
        let config = dir.path().join("mcp.json");
        std::fs::write(&config, json!({ "mcpServers": servers }).to_string())
            .expect("write config");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).expect("create bin dir");
        let log = dir.path().join("opened.log");
        let script = format!("#!/bin/sh\nprintf '%s\\n' \"$@\" >> '{}'\n", log.display());
        for name in ["xdg-open", "open"] {
            let path = bin.join(name);
            std::fs::write(&path, &script).expect("write the recorder");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .expect("chmod the recorder");
        }
        Home { dir, config }
    }

    /// What the recorder opener was asked to open (`None`: it never ran).
    fn opened(&self) -> Option<String> {
        std::fs::read_to_string(self.dir.path().join("opened.log")).ok()
    }

    /// `$XDG_DATA_HOME/mcpr/credentials.db` of this home.
    fn credentials_db(&self) -> PathBuf {
        self.dir.path().join(".local/share/mcpr/credentials.db")
    }

    /// `mcpr --strict-config --config FILE ARGS` in this home, with a display and the recorder
    /// as the browser.
    fn command(&self, args: &[&str]) -> Command {
        let home = self.dir.path();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![home.join("bin")];
        paths.extend(std::env::split_paths(&path));
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
            .env("PATH", std::env::join_paths(paths).expect("a PATH"))
            .env("DISPLAY", ":0")
            .env("MCPR_LOGIN_TIMEOUT_MS", RUN_BOUND.as_millis().to_string())
            .env_remove("MCPR_NO_BROWSER")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("BROWSER")
            .env_remove("RUST_LOG");
        command
    }

    /// Run `mcpr ARGS` to its end (bounded).
    fn run(&self, args: &[&str]) -> Run {
        self.run_command(self.command(args), &args.join(" "))
    }

    /// Run `command` to its end (bounded).
    fn run_command(&self, mut command: Command, what: &str) -> Run {
        let started = Instant::now();
        let mut child = ChildGuard::spawn(&mut command);
        let stdout = drain(child.0.stdout.take().expect("stdout"));
        let stderr = drain(child.0.stderr.take().expect("stderr"));
        let status = wait_bounded(&mut child, RUN_BOUND, what);
        Run {
            status,
            stdout: stdout.join().expect("stdout reader"),
            stderr: stderr.join().expect("stderr reader"),
            elapsed: started.elapsed(),
        }
    }
}

/// An authorization server that names a `file:`, `javascript:` or `smb:` authorization
/// endpoint gets nothing opened and nothing printed, with or without `--no-browser`: the login
/// fails saying which endpoint broke which rule, without repeating the URL, and before mcpr
/// registers with that server.
#[test]
fn login_opens_and_prints_nothing_but_a_web_page() {
    let hostile = [
        ("file:///tmp/mcpr-hostile/launch.desktop", "mcpr-hostile"),
        ("javascript:alert(document.cookie)", "document.cookie"),
        ("smb://attacker.invalid/share/payload", "attacker.invalid"),
    ];
    for (endpoint, marker) in hostile {
        let mock = Mock::start(&["--oauth", "--oauth-authorize-endpoint", endpoint]);
        let home = Home::new(json!({ "svc": { "url": mock.url } }));
        for args in [&["login", "svc"][..], &["login", "svc", "--no-browser"]] {
            // A login that did open the URL would wait for the redirect: not for long.
            let mut command = home.command(args);
            command.env("MCPR_LOGIN_TIMEOUT_MS", "2000");
            let run = home.run_command(command, &args.join(" "));
            let what = format!("{endpoint} / mcpr {}:\n{}", args.join(" "), run.both());
            assert_eq!(home.opened(), None, "the opener ran: {what}");
            let output = format!("{}{}", run.stdout, run.stderr);
            assert!(
                !output.contains(endpoint) && !output.contains(marker),
                "the hostile URL was echoed: {what}"
            );
            assert_ne!(run.code(), Some(0), "{what}");
            assert!(!run.stderr.contains("panicked"), "{what}");
            assert!(
                run.stderr.contains("login to `svc` failed")
                    && run.stderr.contains("`authorization_endpoint`"),
                "the error does not name the endpoint: {what}"
            );
            assert!(run.stderr.contains(RULE), "the rule is not stated: {what}");
        }
        let stats = mock.stats();
        assert_eq!(stats["registrations"], 0, "{endpoint}: {stats}");
        assert_eq!(stats["authorizations"], 0, "{endpoint}: {stats}");
    }
}

/// An authorization server whose metadata names a plain-http `token_endpoint` or
/// `registration_endpoint` on another host, or a resource that names a plain-http
/// authorization server: `mcpr login` fails naming the field, the URL and the rule, before it
/// registers or opens anything, and the host named (an eavesdropper on this machine's
/// non-loopback address) hears nothing.
#[test]
fn login_sends_nothing_to_a_plain_http_endpoint() {
    const ENDPOINT_RULE: &str = "an OAuth endpoint must be https, or http on loopback";
    for (field, path) in [
        ("token_endpoint", "/token"),
        ("registration_endpoint", "/register"),
        ("authorization_servers", "/"),
    ] {
        let eve = support::Eavesdropper::start();
        let hostile = eve.url(path);
        let knob = match field {
            "authorization_servers" => ["--oauth-authorization-server".to_owned(), hostile.clone()],
            _ => ["--oauth-endpoint".to_owned(), format!("{field}={hostile}")],
        };
        let mock = Mock::start(&["--oauth", &knob[0], &knob[1]]);
        let home = Home::new(json!({ "svc": { "url": mock.url } }));
        let mut command = home.command(&["login", "svc"]);
        // A login that did open the browser would wait for the redirect: not for long.
        command.env("MCPR_LOGIN_TIMEOUT_MS", "2000");
        let run = home.run_command(command, "mcpr login svc");
        let what = format!("{field}:\n{}", run.both());
        assert_eq!(
            eve.heard(),
            Vec::<String>::new(),
            "sent in the clear: {what}"
        );
        assert_eq!(home.opened(), None, "the opener ran: {what}");
        assert_ne!(run.code(), Some(0), "{what}");
        assert!(!run.stderr.contains("panicked"), "{what}");
        assert!(
            run.stderr
                .contains(&format!("{field} {hostile}: {ENDPOINT_RULE}")),
            "the error does not name the field, the URL and the rule: {what}"
        );
        let stats = mock.stats();
        assert_eq!(stats["registrations"], 0, "{field}: {stats}");
        assert_eq!(stats["authorizations"], 0, "{field}: {stats}");
    }
}

/// `mcpr login svc` with the recorder as the browser: wait for it to be handed the URL, which
/// must be at `endpoint` (the advertised authorization endpoint), then play the browser against
/// the mock's real `/authorize` and deliver its redirect to mcpr. Returns the finished run.
fn login_through_the_opener(home: &Home, mock: &Mock, endpoint: &str) -> Run {
    let started = Instant::now();
    let mut child = ChildGuard::spawn(&mut home.command(&["login", "svc"]));
    let stdout = drain(child.0.stdout.take().expect("stdout"));
    let stderr = drain(child.0.stderr.take().expect("stderr"));

    let deadline = Instant::now() + RUN_BOUND;
    let opened = loop {
        if let Some(text) = home.opened().filter(|t| t.ends_with('\n')) {
            break text;
        }
        if let Some(status) = child.0.try_wait().expect("try_wait") {
            let stderr = stderr.join().expect("stderr reader");
            panic!("mcpr login exited ({status}) without opening a browser:\n{stderr}");
        }
        assert!(Instant::now() < deadline, "the opener was never run");
        std::thread::sleep(Duration::from_millis(20));
    };
    let lines: Vec<&str> = opened.lines().collect();
    assert_eq!(lines.len(), 1, "one argument, the URL: {opened:?}");
    let url = lines[0];
    let query = url
        .strip_prefix(&format!("{endpoint}?"))
        .unwrap_or_else(|| panic!("not the advertised endpoint: {url}"));
    assert!(query.contains("code_challenge="), "{url}");

    let approved = http_get(&format!("{}/authorize?{query}", mock.origin()));
    assert_eq!(approved.status, 302, "authorize: {}", approved.body);
    let back = approved.location.expect("a Location from /authorize");
    let page = http_get(&back);
    assert_eq!(page.status, 200, "callback page: {}", page.body);

    let status = wait_bounded(&mut child, RUN_BOUND, "mcpr login");
    Run {
        status,
        stdout: stdout.join().expect("stdout reader"),
        stderr: stderr.join().expect("stderr reader"),
        elapsed: started.elapsed(),
    }
}

/// The positive control for the test above: an `http://127.0.0.1` authorization endpoint is
/// handed to the (recording) opener, and the login completes through it.
#[test]
fn a_loopback_http_endpoint_reaches_the_opener() {
    // A decoy: the mock approves at its real endpoint, where the test's browser goes.
    let endpoint = "http://127.0.0.1:1/authorize";
    let mock = Mock::start(&["--oauth", "--oauth-authorize-endpoint", endpoint]);
    let home = Home::new(json!({ "svc": { "url": mock.url } }));
    let run = login_through_the_opener(&home, &mock, endpoint);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(run.stdout.contains("Logged in to `svc`"), "{}", run.both());
    assert!(
        run.stderr.contains("Opened a browser to log in to `svc`"),
        "{}",
        run.both()
    );
}

/// A token response whose `expires_in` is `u64::MAX`, or `i64::MAX` (which fits a `u64` once
/// added to now, but not the clock): login, calls, `status` and `servers` work, take the token
/// for one without an expiry, and never refresh it.
#[test]
fn a_huge_expires_in_is_a_token_without_expiry() {
    for ttl in [u64::MAX, i64::MAX as u64] {
        let ttl = ttl.to_string();
        let mock = Mock::start(&["--oauth", "--oauth-token-ttl", &ttl]);
        let home = Home::new(json!({ "svc": { "url": mock.url } }));
        let endpoint = format!("{}/authorize", mock.origin());
        let run = login_through_the_opener(&home, &mock, &endpoint);
        assert_eq!(run.code(), Some(0), "expires_in {ttl}:\n{}", run.both());
        assert!(
            run.stdout
                .contains("Logged in to `svc`; it renews by itself."),
            "expires_in {ttl}:\n{}",
            run.both()
        );

        let run = home.run(&["call", "svc", "echo", r#"{"text": "far"}"#]);
        assert_eq!(run.code(), Some(0), "expires_in {ttl}:\n{}", run.both());
        assert_eq!(
            run.stdout.trim(),
            "far",
            "expires_in {ttl}:\n{}",
            run.both()
        );
        for args in [
            &["status"][..],
            &["status", "--json"],
            &["servers"],
            &["servers", "--json"],
        ] {
            let run = home.run(args);
            let what = format!("expires_in {ttl}, mcpr {}:\n{}", args.join(" "), run.both());
            assert_eq!(run.code(), Some(0), "{what}");
            assert!(!run.stderr.contains("panicked"), "{what}");
            if args.len() == 1 {
                assert!(run.stdout.contains("logged in"), "{what}");
                assert!(!run.stdout.contains("expire"), "{what}");
            } else {
                let compact: String = run.stdout.split_whitespace().collect();
                assert!(compact.contains(r#""state":"logged_in""#), "{what}");
            }
        }
        let stats = mock.stats();
        assert_eq!(
            stats["token_requests"]["refresh_token"], 0,
            "{ttl}: {stats}"
        );
    }
}

/// Ways to break the credential store.
#[derive(Debug, Clone, Copy)]
enum Breakage {
    /// Not an SQLite file.
    Garbage,
    /// A directory where the file should be.
    Directory,
    /// A file nobody may read (moot as root, who reads it anyway: then skipped).
    Unreadable,
}

/// Break `db` the way `breakage` says; false when this process cannot (root reads anything).
fn break_store(db: &std::path::Path, breakage: Breakage) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(db.parent().expect("a parent")).expect("create the data dir");
    match breakage {
        Breakage::Garbage => {
            std::fs::write(db, "this is not a database\n".repeat(64)).expect("write garbage");
        }
        Breakage::Directory => std::fs::create_dir(db).expect("create a directory"),
        Breakage::Unreadable => {
            std::fs::write(db, b"").expect("create the file");
            std::fs::set_permissions(db, std::fs::Permissions::from_mode(0o000))
                .expect("chmod 000");
            if std::fs::read(db).is_ok() {
                return false;
            }
        }
    }
    true
}

/// A credential store that cannot be used breaks only the servers that need it: a server
/// without OAuth lists and calls its tools; an OAuth server fails with the store's error,
/// naming the file once, not an `HTTP 401` it never got a chance to answer with a token;
/// `mcpr login` says the same before sending anyone to a browser; the broken file is left as
/// it is.
#[test]
fn a_broken_credential_store_breaks_only_the_servers_that_need_it() {
    let plain = Mock::start(&[]);
    let oauth = Mock::start(&["--oauth"]);
    for breakage in [Breakage::Garbage, Breakage::Directory, Breakage::Unreadable] {
        let home = Home::new(json!({
            "plain": { "url": plain.url },
            "svc": { "url": oauth.url },
        }));
        let db = home.credentials_db();
        if !break_store(&db, breakage) {
            continue;
        }
        let before = std::fs::read(&db).ok();
        let path = db.display().to_string();

        let run = home.run(&["call", "plain", "echo", r#"{"text": "still here"}"#]);
        assert_eq!(run.code(), Some(0), "{breakage:?}:\n{}", run.both());
        assert_eq!(
            run.stdout.trim(),
            "still here",
            "{breakage:?}:\n{}",
            run.both()
        );

        let run = home.run(&["tools"]);
        let what = format!("{breakage:?}, mcpr tools:\n{}", run.both());
        assert!(run.stdout.contains("plain_echo"), "{what}");
        let svc_lines: Vec<&str> = run.stderr.lines().filter(|l| l.contains("svc")).collect();
        // Off a terminal the start line says only `failed`; the error line says why, once.
        assert!(
            svc_lines.iter().any(|l| l.contains("credential store")),
            "{what}"
        );
        assert_eq!(run.stderr.matches(&path).count(), 1, "{what}");
        assert!(svc_lines.iter().all(|l| !l.contains("401")), "{what}");
        assert!(
            run.stderr
                .lines()
                .all(|l| !l.contains("plain") || !l.contains("failed")),
            "{what}"
        );

        let run = home.run(&["call", "svc", "echo", r#"{"text": "x"}"#]);
        let what = format!("{breakage:?}, mcpr call svc:\n{}", run.both());
        assert_ne!(run.code(), Some(0), "{what}");
        assert!(run.stderr.contains("server `svc`"), "{what}");
        assert!(run.stderr.contains("credential store"), "{what}");
        assert_eq!(run.stderr.matches(&path).count(), 1, "{what}");
        assert!(!run.stderr.contains("401"), "{what}");
        assert!(!run.stderr.contains("panicked"), "{what}");

        let run = home.run(&["login", "svc"]);
        let what = format!("{breakage:?}, mcpr login svc:\n{}", run.both());
        assert_ne!(run.code(), Some(0), "{what}");
        assert!(run.stderr.contains("credential store"), "{what}");
        assert_eq!(run.stderr.matches(&path).count(), 1, "{what}");
        assert!(!run.stderr.contains("401"), "{what}");
        assert_eq!(home.opened(), None, "a browser was opened: {what}");

        // The broken store is reported, not repaired behind the user's back.
        assert_eq!(std::fs::read(&db).ok(), before, "{breakage:?}");
        assert_eq!(db.is_dir(), matches!(breakage, Breakage::Directory));
    }
    let stats = oauth.stats();
    assert_eq!(stats["registrations"], 0, "{stats}");
    assert_eq!(stats["authorizations"], 0, "{stats}");
}

/// An authorization server that grants "scopes" holding escape sequences: the login's summary
/// and the status views show them escaped.
#[test]
fn granted_scopes_reach_the_terminal_escaped() {
    const EVIL: &str = "mcp:tools \u{1b}]0;pwned\u{7}\u{1b}[2J";
    let mock = Mock::start(&["--oauth", "--oauth-token-scope", EVIL]);
    let home = Home::new(json!({ "svc": { "url": mock.url } }));
    let endpoint = format!("{}/authorize", mock.origin());
    let run = login_through_the_opener(&home, &mock, &endpoint);
    assert_eq!(run.code(), Some(0), "{}", run.both());
    assert!(run.stdout.contains("Scopes: mcp:tools"), "{}", run.both());
    for run in [run, home.run(&["status"]), home.run(&["servers"])] {
        assert!(
            !run.stdout.contains('\u{1b}') && !run.stderr.contains('\u{1b}'),
            "raw escape: {:?}",
            run.both()
        );
    }
}
