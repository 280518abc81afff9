//! Test support shared by the workspace's integration tests and benchmarks (dev-only, never
//! published): the mock server as a fresh binary and as a config, process checks, HTTP by
//! hand, an [`Eavesdropper`] for requests that must never be sent, external peers
//! installed from the package registries into `target/peers` on first use, and the gateway
//! [`soak`] that a test asserts on and the benchmarks report.
//!
//! The mock is a binary of another package (`mcp-mock`), for which cargo sets no
//! `CARGO_BIN_EXE_*`; [`mock_bin`] builds it with cargo once per test process, so tests always
//! run the mock of the current source, whichever package and command started them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mcp_runtime::config::ServerConfig;

mod eavesdropper;
pub use eavesdropper::Eavesdropper;
mod peers;
pub use peers::{
    CONFORMANCE, CONFORMANCE_2026, NPM_PEERS, conformance_suite, conformance_suite_2026, haproxy,
    node22_bin, peers_dir, python_mcp, python_sdk_2, server_everything, typescript_sdk,
};
pub mod soak;

/// The `mcp-mock` binary of the current source: the one `cargo test` built when it is newer
/// than the mock's source, else built the first time a test process asks
/// (`cargo build -p mcp-mock`). The build goes
/// to the workspace's own target directory, in the profile of the running test, and runs
/// while the test runs, after `cargo test` has released its build lock.
pub fn mock_bin() -> &'static str {
    static BIN: OnceLock<String> = OnceLock::new();
    BIN.get_or_init(|| {
        // `cargo test --workspace` has already built the mock with the workspace's unified
        // features. Building it again with `-p mcp-mock` would resolve features for that package
        // alone and rebuild the shared dependencies (twice per run, and for minutes on a small
        // machine), so an up-to-date binary is used as it is.
        let built = prebuilt_mock();
        if is_newer_than_its_source(&built) {
            return built
                .to_str()
                .expect("the target directory has a UTF-8 path")
                .to_owned();
        }
        let run = escargot::CargoBuild::new()
            .manifest_path(workspace_root().join("Cargo.toml"))
            .package("mcp-mock")
            .bin("mcp-mock")
            .current_release()
            .run()
            .unwrap_or_else(|e| panic!("cannot build the mock (cargo build -p mcp-mock): {e}"));
        run.path()
            .to_str()
            .expect("the target directory has a UTF-8 path")
            .to_owned()
    })
}

/// Where `cargo test` puts the mock it builds (`target/<profile>/mcp-mock`).
fn prebuilt_mock() -> PathBuf {
    profile_dir().join(format!("mcp-mock{}", std::env::consts::EXE_SUFFIX))
}

/// Whether `binary` exists and is newer than every file of the mock's package and the lock
/// file (the mock has no path dependencies, so these are all its source).
fn is_newer_than_its_source(binary: &Path) -> bool {
    fn newest(path: &Path) -> Option<std::time::SystemTime> {
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_dir() {
            return meta.modified().ok();
        }
        std::fs::read_dir(path)
            .ok()?
            .flatten()
            .filter_map(|entry| newest(&entry.path()))
            .max()
    }
    let Some(built) = std::fs::metadata(binary).and_then(|m| m.modified()).ok() else {
        return false;
    };
    let root = workspace_root();
    let sources = [
        root.join("crates/mcp-mock/src"),
        root.join("crates/mcp-mock/Cargo.toml"),
        root.join("Cargo.lock"),
    ];
    sources
        .iter()
        .all(|source| newest(source).is_some_and(|changed| changed <= built))
}

/// The workspace's root directory (this crate lives in `crates/mcp-testkit`).
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace root")
        .to_path_buf()
}

/// The target directory the running test or benchmark was built in
/// (`target/<profile>/deps/<binary>`).
pub fn target_dir() -> PathBuf {
    profile_dir()
        .parent()
        .expect("a binary under target/<profile>/deps")
        .to_path_buf()
}

/// The profile directory of the running test or benchmark (`target/<profile>`), where cargo
/// puts the workspace's binaries.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .nth(2)
        .expect("a binary under target/<profile>/deps")
        .to_path_buf()
}

/// Tool-call arguments from a JSON object literal.
pub fn args(value: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
    value.as_object().cloned()
}

/// The mock's `echo` tool called with `text`: the text of its answer, or the call's error.
pub async fn echo(
    client: &mcp_runtime::client::McpClient,
    text: &str,
) -> Result<String, mcp_runtime::client::ClientError> {
    client
        .call_tool(
            "echo",
            args(serde_json::json!({ "text": text })),
            mcp_runtime::client::CallOptions::default(),
        )
        .await
        .map(|output| output.text())
}

/// A stdio config that runs the mock ([`mock_bin`]) with the given flags.
pub fn mock(flags: &[&str]) -> ServerConfig {
    ServerConfig::stdio(mock_bin(), flags.iter().map(|f| f.to_string()))
}

/// The messages of a mock's `--record` file (one JSON value a line) whose line mentions
/// `needle`; none while the file does not exist yet.
pub fn recorded(path: &Path, needle: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains(needle))
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

/// A fresh temporary directory for one test.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("mcpr-test-")
        .tempdir_in(tmp_dir())
        .expect("create temp dir")
}

/// An empty directory used as `$HOME` (and project) for CLI runs, created once per test
/// process, so the configs and caches of this machine's AI tools stay out of the tests.
pub fn isolated_home() -> PathBuf {
    static HOME: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    HOME.get_or_init(|| {
        let dir = temp_dir().keep();
        std::fs::create_dir_all(dir.join("project")).expect("create project dir");
        dir
    })
    .clone()
}

/// Point every config, cache and data location of `command` into `home`.
pub fn isolate_env(command: &mut Command, home: &Path) {
    command
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env_remove("CODEX_HOME")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("MCPR_TIMEOUT_MS")
        .env_remove("MCPR_MAX_OUTPUT")
        .env_remove("MCPR_STATE_KEY_FILE")
        // Telemetry only where a test asks for it.
        .env_remove("OTEL_SDK_DISABLED")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_PROTOCOL")
        .env_remove("OTEL_TRACES_SAMPLER")
        // A test run started under mcpr must not count as nested.
        .env_remove(mcp_runtime::nesting::NESTING_ENV);
}

/// Whether `pid` is a live process (zombies count as dead: they only wait to be reaped).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

/// Poll until `pid` is gone or `bound` passes; returns whether it is gone.
pub fn wait_dead(pid: u32, bound: Duration) -> bool {
    let deadline = Instant::now() + bound;
    while alive(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Read a pid written by the mock (`--pid-file`, `--grandchild`), waiting for it to appear.
pub fn read_pid(path: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Scratch space for tests (`target/tmp`, where cargo points `CARGO_TARGET_TMPDIR`).
pub fn tmp_dir() -> PathBuf {
    let dir = target_dir().join("tmp");
    std::fs::create_dir_all(&dir).expect("create target/tmp");
    dir
}

/// A child process (and its process group) killed when dropped, so a failing test leaves no
/// server behind.
#[derive(Debug)]
pub struct ChildGuard(pub std::process::Child);

impl ChildGuard {
    /// Spawn `command` in a new process group.
    pub fn spawn(command: &mut Command) -> ChildGuard {
        use std::os::unix::process::CommandExt;
        let child = command
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
        ChildGuard(child)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        // SAFETY: signalling the process group we created; it may be gone already.
        unsafe { libc::killpg(self.0.id() as i32, libc::SIGKILL) };
        let _ = self.0.wait();
    }
}
/// One HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub location: Option<String>,
    pub body: String,
}

/// GET `url` without following redirects (the browser's part, played by hand).
pub fn http_get(url: &str) -> Answer {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(20))
            .build()
            .expect("a reqwest client");
        let response = client
            .get(url)
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        let status = response.status().as_u16();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await.unwrap_or_default();
        Answer {
            status,
            location,
            body,
        }
    })
}

/// One HTTP exchange with `127.0.0.1:port`, written by hand (`request` is the whole text,
/// head and body, asking for `Connection: close`), read to its end: the status and the body.
pub fn http_exchange(port: u16, request: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port))
        .unwrap_or_else(|e| panic!("connect to port {port}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// POST an `initialize` to `url` with extra `headers` (a `Host` among them replaces the URL's);
/// returns the status code and the body.
pub fn post_initialize(url: &str, headers: &[(&str, &str)]) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}
    })
    .to_string();
    let host = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("host"))
        .map_or(authority, |(_, value)| value);
    let mut request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        if !name.eq_ignore_ascii_case("host") {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    // An accepted initialize answers on an SSE stream that stays open: read until the result
    // (or the end, or the bound).
    let mut response = Vec::new();
    let mut buffer = [0u8; 4096];
    while let Ok(n) = stream.read(&mut buffer) {
        if n == 0 {
            break;
        }
        response.extend_from_slice(&buffer[..n]);
        if String::from_utf8_lossy(&response).contains("\"result\"") {
            break;
        }
    }
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// What one bounded run of a process printed and how it ended.
#[derive(Debug)]
pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
    /// From spawn to exit.
    pub elapsed: Duration,
}

impl Run {
    /// The exit code (`None` when a signal ended it).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Both streams, labelled, for assertion messages.
    pub fn both(&self) -> String {
        format!("--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// Run a client program to its end, at most `bound`, reading its output meanwhile; panics
/// (and kills it) if it hangs or fails. Returns its stdout and stderr.
pub fn run_client(command: &mut Command, bound: Duration) -> (String, String) {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(command);
    let stdout = drain(child.0.stdout.take().expect("stdout"));
    let stderr = drain(child.0.stderr.take().expect("stderr"));
    let deadline = Instant::now() + bound;
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("wait for the client") {
            break status;
        }
        assert!(Instant::now() < deadline, "the client hangs: {command:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    assert!(status.success(), "{status}\n{out}\n{err}");
    (out, err)
}

/// Read a pipe to its end on a thread.
pub fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The lines of a pipe (a child's stdout, say), read on a thread and sent to the returned
/// receiver, so that a test can bound each read with `recv_timeout`. The thread ends at the
/// pipe's end, at the first read error, or once the receiver is dropped.
pub fn line_channel(
    pipe: impl std::io::Read + Send + 'static,
) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(pipe).lines() {
            let Ok(line) = line else { return };
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    receiver
}

/// Wait for `child` to exit within `bound`; panics (and the guard kills it) otherwise.
pub fn wait_bounded(
    child: &mut ChildGuard,
    bound: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.0.try_wait().expect("try_wait") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "`{what}` did not exit within {bound:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A free loopback port (there is a small window before the peer binds it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free port")
        .port()
}

/// Wait until something accepts connections on `127.0.0.1:port`.
pub fn wait_for_port(port: u16, bound: Duration) {
    let deadline = Instant::now() + bound;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Spawn `command` (a mock or gateway serving HTTP on port 0) with stderr piped, and wait for
/// its `listening on URL` line; stderr keeps being drained, so the process never blocks on a
/// full pipe. The child (killed when dropped) and the URL.
pub fn spawn_listening(command: &mut Command) -> (ChildGuard, String) {
    use std::io::BufRead;
    let mut child = ChildGuard::spawn(command.stderr(std::process::Stdio::piped()));
    let stderr = child.0.stderr.take().expect("piped stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(url) = line.strip_prefix("listening on ") {
                let _ = tx.send(url.to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("no `listening on` line on stderr");
    (child, url)
}

/// The mock with `--http 127.0.0.1:0` (or `--sse`) and `flags`, running until dropped.
#[derive(Debug)]
pub struct HttpMock {
    child: ChildGuard,
    /// The endpoint the mock printed (`http://127.0.0.1:PORT/mcp` or `.../sse`).
    pub url: String,
}

impl HttpMock {
    /// Streamable HTTP.
    pub fn http(flags: &[&str]) -> HttpMock {
        HttpMock::start("--http", flags)
    }

    /// Legacy HTTP+SSE.
    pub fn sse(flags: &[&str]) -> HttpMock {
        HttpMock::start("--sse", flags)
    }

    fn start(mode: &str, flags: &[&str]) -> HttpMock {
        let mut command = Command::new(mock_bin());
        command
            .args([mode, "127.0.0.1:0"])
            .args(flags)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let (child, url) = spawn_listening(&mut command);
        HttpMock { child, url }
    }

    /// Send SIGTERM and wait up to `bound` for the mock to exit; its exit status, or `None`
    /// if it is still running.
    pub fn terminate(&mut self, bound: Duration) -> Option<std::process::ExitStatus> {
        // SAFETY: signalling our own child process.
        unsafe { libc::kill(self.child.0.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + bound;
        loop {
            if let Ok(Some(status)) = self.child.0.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A config for this mock: `kind` is the config's `type` (`None`: absent).
    pub fn config(&self, kind: Option<&str>) -> ServerConfig {
        remote(&self.url, kind)
    }

    /// A config for the mock named `svc`, with an `oauth` block when given.
    pub fn oauth_config(&self, oauth: Option<serde_json::Value>) -> ServerConfig {
        let mut entry = serde_json::json!({ "url": self.url });
        if let Some(oauth) = oauth {
            entry["oauth"] = oauth;
        }
        mcp_runtime::config::server_from_json("svc", &entry).expect("valid config")
    }

    /// The counters of the mock's OAuth server (`--oauth`).
    pub async fn oauth_stats(&self) -> serde_json::Value {
        let base = self.url.trim_end_matches("/mcp");
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::get(format!("{base}/__oauth/stats"))
            .await
            .expect("stats request")
            .json()
            .await
            .expect("stats JSON")
    }
}

/// A remote server config for `url`, with `type` = `kind` when given.
pub fn remote(url: &str, kind: Option<&str>) -> ServerConfig {
    let mut entry = serde_json::json!({ "url": url });
    if let Some(kind) = kind {
        entry["type"] = kind.into();
    }
    mcp_runtime::config::server_from_json("remote", &entry).expect("valid remote config")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The freshness check looks where cargo puts the mock, so that a `cargo test --workspace`
    /// that has just built it does not build it again with other features (minutes on a small
    /// machine, inside some test's time bound).
    #[test]
    fn the_mock_is_looked_for_where_cargo_builds_it() {
        assert_eq!(PathBuf::from(mock_bin()), prebuilt_mock());
        assert!(is_newer_than_its_source(&prebuilt_mock()));
    }
}
