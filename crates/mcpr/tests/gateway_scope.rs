//! `mcpr serve` as a boundary, attacked over real stdio and HTTP with `mcpr mock --resources`
//! backends: a narrow view must not list, read or get what it was not given, whatever the case
//! of a name; a read must reach a server only for a URI that server listed or that one of its
//! templates produces; the HTTP endpoint refuses foreign `Origin`s, answers on any loopback
//! address it is bound to, and requires its token on loopback too when one is given.
//!
//! Each backend records every line it receives, so a test can tell that a refused request never
//! reached it. Every wait is bounded; every address is loopback.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use support::{ChildGuard, MCPR, isolate_env, line_channel, post_initialize, temp_dir};

/// Bound on one answer (a request that hangs fails the test instead of hanging it).
const ANSWER_BOUND: Duration = Duration::from_secs(60);

/// A temp dir with a config of `mcpr mock --resources` backends, each named as its server (so
/// its URIs are `mock://<server>/...`) and recording what it receives.
struct World {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl World {
    fn new(servers: &[&str]) -> World {
        World::with_tools(servers, None)
    }

    /// [`World::new`], each backend also serving `tools` (a `--tool-file` array) when given.
    fn with_tools(servers: &[&str], tools: Option<Value>) -> World {
        let dir = temp_dir();
        let tool_file = tools.map(|tools| {
            let path = dir.path().join("tools.json");
            std::fs::write(&path, tools.to_string()).unwrap();
            path
        });
        let mut entries = serde_json::Map::new();
        for name in servers {
            let record = dir.path().join(format!("{name}.record"));
            let mut args = vec![
                "mock".to_owned(),
                "--resources".to_owned(),
                "--name".to_owned(),
                name.to_string(),
                "--record".to_owned(),
                record.to_string_lossy().into_owned(),
            ];
            if let Some(path) = &tool_file {
                args.push("--tool-file".to_owned());
                args.push(path.to_string_lossy().into_owned());
            }
            entries.insert(name.to_string(), json!({ "command": MCPR, "args": args }));
        }
        let config = dir.path().join("mcp.json");
        let text = serde_json::to_string_pretty(&json!({ "mcpServers": entries })).unwrap();
        std::fs::write(&config, text).unwrap();
        std::fs::create_dir_all(dir.path().join("home/project")).unwrap();
        World { dir, config }
    }

    /// `mcpr serve` over exactly this config, with `flags`.
    fn serve(&self, flags: &[&str]) -> Command {
        let mut command = Command::new(MCPR);
        command
            .args(["--strict-config", "--config"])
            .arg(&self.config)
            .arg("serve")
            .args(flags);
        let home = self.dir.path().join("home");
        isolate_env(&mut command, &home);
        command.current_dir(home.join("project"));
        command.env_remove("MCPR_GATEWAY_TOKEN");
        command
    }

    /// What the backend `server` received so far.
    fn received(&self, server: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{server}.record")))
            .unwrap_or_default()
    }

    /// The `resources/read` requests `server` received.
    fn reads(&self, server: &str) -> Vec<String> {
        self.received(server)
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|message| message["method"] == "resources/read")
            .map(|message| message["params"]["uri"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

/// A raw JSON-RPC client of `mcpr serve` over its stdin and stdout.
struct StdioClient {
    _child: ChildGuard,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl StdioClient {
    /// Start the gateway and complete the handshake.
    fn start(world: &World, flags: &[&str]) -> StdioClient {
        let mut command = world.serve(flags);
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = ChildGuard::spawn(&mut command);
        let stdin = child.0.stdin.take().unwrap();
        let lines = line_channel(child.0.stdout.take().unwrap());
        let mut client = StdioClient {
            _child: child,
            stdin,
            lines,
            next_id: 0,
        };
        let init = client.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "scope-test", "version": "1"}}),
        );
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Send a request and wait for its answer (the whole response: `result` or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self
                .lines
                .recv_timeout(ANSWER_BOUND)
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    /// The `field` of every entry of a list result, e.g. the names of `tools/list`.
    fn list(&mut self, method: &str, entries: &str, field: &str) -> Vec<String> {
        let answer = self.request(method, json!({}));
        let items = answer["result"][entries]
            .as_array()
            .unwrap_or_else(|| panic!("{method}: {answer}"));
        let mut values: Vec<String> = items
            .iter()
            .map(|item| item[field].as_str().unwrap().to_owned())
            .collect();
        values.sort();
        values
    }

    fn read(&mut self, uri: &str) -> Value {
        self.request("resources/read", json!({"uri": uri}))
    }
}

/// The text of a successful `resources/read`, or a panic naming the answer.
fn read_text(answer: &Value) -> &str {
    answer["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a read result: {answer}"))
}

/// That `answer` is a "resource not found" error naming `uri`.
fn assert_not_found(answer: &Value, uri: &str) {
    assert!(answer["result"].is_null(), "{uri} was read: {answer}");
    assert_eq!(answer["error"]["code"], -32002, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(uri), "{message}");
}

#[test]
fn a_narrow_tool_view_offers_no_other_resource_or_prompt() {
    let world = World::new(&["a", "b"]);
    let mut gateway = StdioClient::start(&world, &["--tools", "a/echo", "--tools", "mcp_a_greet"]);

    assert_eq!(gateway.list("tools/list", "tools", "name"), ["mcp_a_echo"]);
    // Prompts share the tools' namespace and patterns.
    assert_eq!(
        gateway.list("prompts/list", "prompts", "name"),
        ["mcp_a_greet"]
    );
    // No resource pattern names anything: no resource, no template.
    assert!(
        gateway
            .list("resources/list", "resources", "uri")
            .is_empty()
    );
    assert!(
        gateway
            .list(
                "resources/templates/list",
                "resourceTemplates",
                "uriTemplate"
            )
            .is_empty()
    );

    // The attack: read and get what the view was not given, by URI and by name.
    for uri in [
        "mock://a/private",
        "mock://a/public",
        "mock://a/items/1",
        "mock://b/public",
    ] {
        assert_not_found(&gateway.read(uri), uri);
    }
    for name in ["mcp_a_secret", "mcp_b_greet", "mcp_b_secret"] {
        let answer = gateway.request("prompts/get", json!({"name": name}));
        assert!(answer["result"].is_null(), "{name} was got: {answer}");
        let message = answer["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(name), "{message}");
    }
    let greet = gateway.request(
        "prompts/get",
        json!({"name": "mcp_a_greet", "arguments": {"name": "scope"}}),
    );
    assert_eq!(
        greet["result"]["messages"][0]["content"]["text"], "Hello, scope!",
        "{greet}"
    );
    assert!(world.reads("a").is_empty(), "{:?}", world.reads("a"));
    assert!(world.reads("b").is_empty(), "{:?}", world.reads("b"));
    assert!(!world.received("a").contains("\"secret\""));
    assert!(!world.received("b").contains("prompts/get"));
}

#[test]
fn resource_patterns_scope_listing_and_reading() {
    let world = World::new(&["a", "b"]);
    let mut gateway = StdioClient::start(
        &world,
        &[
            "--resources",
            "a/mock://a/public",
            "--resources",
            "a/mock://a/items/*",
            "--deny-resources",
            "*/mock://a/items/secret*",
        ],
    );
    assert_eq!(
        gateway.list("resources/list", "resources", "uri"),
        ["mock://a/public"]
    );
    assert_eq!(
        gateway.list(
            "resources/templates/list",
            "resourceTemplates",
            "uriTemplate"
        ),
        ["mock://a/items/{id}"]
    );
    // Resource patterns alone make the view an allow-list: no tool, no prompt.
    assert!(gateway.list("tools/list", "tools", "name").is_empty());
    assert!(gateway.list("prompts/list", "prompts", "name").is_empty());

    assert_eq!(
        read_text(&gateway.read("mock://a/public")),
        "contents of mock://a/public"
    );
    assert_eq!(
        read_text(&gateway.read("mock://a/items/7")),
        "contents of mock://a/items/7"
    );
    for uri in [
        "mock://a/private",
        "mock://a/items/secret-1",
        "mock://b/public",
        "mock://b/items/7",
    ] {
        assert_not_found(&gateway.read(uri), uri);
    }
    assert_eq!(world.reads("a"), ["mock://a/public", "mock://a/items/7"]);
    assert!(world.reads("b").is_empty(), "{:?}", world.reads("b"));
}

#[test]
fn reads_reach_a_server_only_for_uris_it_listed_or_templates() {
    let world = World::new(&["a", "b"]);
    // The widest view: no pattern at all.
    let mut gateway = StdioClient::start(&world, &[]);
    let listed = gateway.list("resources/list", "resources", "uri");
    assert_eq!(
        listed,
        [
            "mock://a/private",
            "mock://a/public",
            "mock://b/private",
            "mock://b/public"
        ]
    );

    // Listed URIs and template matches reach the server that offers them, and only it.
    assert_eq!(
        read_text(&gateway.read("mock://b/public")),
        "contents of mock://b/public"
    );
    assert_eq!(
        read_text(&gateway.read("mock://b/items/42")),
        "contents of mock://b/items/42"
    );

    // The attack: URIs no server listed and no template produces, which the backends would
    // happily read if asked.
    for uri in [
        "file:///etc/passwd",
        "mock://a/secret",
        "mock://a/items/1/2",
        "mock://a/items/",
        "mock://a/items/..",
        "mock://a/items/%2e%2e",
        "mock://c/items/1",
    ] {
        assert_not_found(&gateway.read(uri), uri);
    }
    assert!(world.reads("a").is_empty(), "{:?}", world.reads("a"));
    assert_eq!(world.reads("b"), ["mock://b/public", "mock://b/items/42"]);
    // Other requests still work after the refusals.
    let echo = gateway.request(
        "tools/call",
        json!({"name": "mcp_a_echo", "arguments": {"text": "still here"}}),
    );
    assert_eq!(echo["result"]["content"][0]["text"], "still here", "{echo}");
}

#[test]
fn encoded_uris_neither_slip_past_deny_patterns_nor_climb_out_of_a_template() {
    let world = World::new(&["a"]);
    let mut gateway = StdioClient::start(
        &world,
        &[
            "--deny-resources",
            "a/mock://a/private",
            "--deny-resources",
            "a/mock://a/items/secret*",
        ],
    );
    assert_eq!(
        read_text(&gateway.read("mock://a/items/7")),
        "contents of mock://a/items/7"
    );
    // The attack: URIs the template `mock://a/items/{id}` produces, which a server that
    // decodes percent-encoding (or ignores case) reads as a denied resource, or as one outside
    // the template once `%2F` becomes a `/`.
    for uri in [
        "mock://a/items/%73ecret-1",
        "mock://a/items/%2573ecret-1",
        "mock://a/items/SECRET-1",
        "mock://a/items/..%2Fprivate",
        "mock://a/items/x%2F..%2F..%2Fprivate",
        "mock://a/items/%2e%2e%5Cprivate",
    ] {
        assert_not_found(&gateway.read(uri), uri);
    }
    assert_eq!(world.reads("a"), ["mock://a/items/7"]);
}

/// The requests of `method` that `server` received, as sent.
fn requests_of(world: &World, server: &str, method: &str) -> Vec<Value> {
    world
        .received(server)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["method"] == method)
        .collect()
}

/// A server names its tools, prompts and resources in any case it likes: patterns match them
/// without regard to case. Behind `--deny-tools '*delete*'`, neither `Delete_File` nor
/// `DELETE-ALL` is listed or callable while `read_file` is; `--deny-tools '*SECRET*'` hides the
/// prompt `secret`, `--deny-resources '*PRIVATE*'` the resource `mock://a/private`; and
/// `--tools 'A/READ_*'` offers `read_file` alone.
#[test]
fn patterns_match_without_regard_to_case() {
    let tools = json!([{"name": "Delete_File"}, {"name": "DELETE-ALL"}, {"name": "read_file"}]);
    let world = World::with_tools(&["a"], Some(tools));
    let mut gateway = StdioClient::start(
        &world,
        &[
            "--deny-tools",
            "*delete*",
            "--deny-tools",
            "*SECRET*",
            "--deny-resources",
            "*PRIVATE*",
        ],
    );
    let listed = gateway.list("tools/list", "tools", "name");
    assert!(listed.contains(&"mcp_a_read_file".to_owned()), "{listed:?}");
    assert!(
        listed
            .iter()
            .all(|name| !name.to_lowercase().contains("delete")),
        "a denied tool is listed: {listed:?}"
    );
    // The attack: call them by the names an unscoped gateway gives them.
    for name in ["mcp_a_Delete_File", "mcp_a_DELETE-ALL"] {
        let answer = gateway.request("tools/call", json!({"name": name, "arguments": {}}));
        let refused = answer["error"].is_object() || answer["result"]["isError"] == true;
        assert!(refused, "{name} was called: {answer}");
    }
    let read = gateway.request(
        "tools/call",
        json!({"name": "mcp_a_read_file", "arguments": {"path": "x"}}),
    );
    assert!(read["result"]["isError"] != true, "{read}");
    let calls: Vec<String> = requests_of(&world, "a", "tools/call")
        .iter()
        .map(|call| call["params"]["name"].as_str().unwrap_or("").to_owned())
        .collect();
    assert_eq!(calls, ["read_file"], "a denied tool reached the server");

    assert_eq!(
        gateway.list("prompts/list", "prompts", "name"),
        ["mcp_a_greet"]
    );
    let secret = gateway.request("prompts/get", json!({"name": "mcp_a_secret"}));
    assert!(secret["result"].is_null(), "the prompt was got: {secret}");
    assert!(requests_of(&world, "a", "prompts/get").is_empty());

    assert_eq!(
        gateway.list("resources/list", "resources", "uri"),
        ["mock://a/public"]
    );
    assert_not_found(&gateway.read("mock://a/private"), "mock://a/private");
    assert!(world.reads("a").is_empty(), "{:?}", world.reads("a"));

    // Allow patterns too, the server's part included.
    let mut gateway = StdioClient::start(&world, &["--tools", "A/READ_*"]);
    assert_eq!(
        gateway.list("tools/list", "tools", "name"),
        ["mcp_a_read_file"]
    );
}

/// `mcpr serve --http ADDR` with `flags`, running until dropped; its printed URL.
fn http_gateway(world: &World, addr: &str, flags: &[&str]) -> (ChildGuard, String) {
    let (child, url, _) = http_gateway_said(world, addr, flags);
    (child, url)
}

/// [`http_gateway`], and what the gateway printed on stderr before its URL.
fn http_gateway_said(
    world: &World,
    addr: &str,
    flags: &[&str],
) -> (ChildGuard, String, Vec<String>) {
    let mut args = vec!["--http", addr];
    args.extend_from_slice(flags);
    let mut command = world.serve(&args);
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = ChildGuard::spawn(&mut command);
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    // Keeps draining stderr, so the gateway never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("[gateway] {line}");
            let _ = tx.send(line);
        }
    });
    let mut said = Vec::new();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the gateway printed no `listening on` line");
        match line.strip_prefix("listening on ") {
            Some(url) => return (child, url.to_owned(), said),
            None => said.push(line),
        }
    }
}

#[test]
fn http_refuses_requests_from_foreign_origins() {
    let world = World::new(&["a"]);
    let (_gateway, url) = http_gateway(&world, "127.0.0.1:0", &[]);
    let own = url.strip_suffix("/mcp").unwrap().to_owned();
    let port: u16 = own.rsplit(':').next().unwrap().parse().unwrap();
    let other_port = format!("http://127.0.0.1:{}", port.wrapping_add(1).max(1));
    // The attack: a web page in the user's browser posting to the local gateway.
    for origin in [
        "http://evil.example",
        "https://evil.example:443",
        other_port.as_str(),
        "http://localhost",
        "null",
        "not an origin",
    ] {
        let (status, body) = post_initialize(&url, &[("Origin", origin)]);
        assert_eq!(status, 403, "Origin {origin}: {body}");
        assert!(!body.contains("mcpr-gateway"), "{body}");
    }
    // DNS rebinding: a foreign name for our address.
    let (status, _) = post_initialize(&url, &[("Host", &format!("evil.example:{port}"))]);
    assert_eq!(status, 403);
    // Clients that are not browsers send no Origin; our own origin is fine too.
    for headers in [vec![], vec![("Origin", own.as_str())]] {
        let (status, body) = post_initialize(&url, &headers);
        assert_eq!(status, 200, "{headers:?}: {body}");
        assert!(body.contains("mcpr-gateway"), "{body}");
    }
}

#[test]
fn http_answers_at_the_url_it_prints_on_any_loopback_address() {
    let world = World::new(&["a"]);
    let (_gateway, url) = http_gateway(&world, "127.0.0.2:0", &[]);
    assert!(url.starts_with("http://127.0.0.2:"), "{url}");
    let (status, body) = post_initialize(&url, &[]);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("mcpr-gateway"), "{body}");
    // Its own origin is accepted there as well, and foreign ones are not.
    let own = url.strip_suffix("/mcp").unwrap();
    assert_eq!(post_initialize(&url, &[("Origin", own)]).0, 200);
    assert_eq!(
        post_initialize(&url, &[("Origin", "http://evil.example")]).0,
        403
    );
}

#[test]
fn http_on_loopback_requires_the_token_when_one_is_given() {
    let world = World::new(&["a"]);
    let token = world.dir.path().join("token");
    std::fs::write(&token, "loopback-secret\n").unwrap();
    set_mode(&token, 0o600);
    let token_arg = token.to_string_lossy().into_owned();
    let (_gateway, url, said) =
        http_gateway_said(&world, "127.0.0.1:0", &["--token-file", &token_arg]);
    assert!(
        !said.iter().any(|line| line.contains("warning")),
        "{said:?}"
    );
    // The attack: another local user or process calling without (or with a guessed) token.
    for authorization in [
        None,
        Some("Bearer wrong"),
        Some("Bearer loopback-secret2"),
        Some("Basic loopback-secret"),
    ] {
        let headers: Vec<(&str, &str)> = authorization
            .map(|value| ("Authorization", value))
            .into_iter()
            .collect();
        let (status, body) = post_initialize(&url, &headers);
        assert_eq!(status, 401, "{authorization:?}: {body}");
        assert!(!body.contains("loopback-secret"), "{body}");
    }
    let (status, body) = post_initialize(&url, &[("Authorization", "Bearer loopback-secret")]);
    assert_eq!(status, 200, "{body}");
}

fn set_mode(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_token_file_other_users_can_read_is_warned_about() {
    let world = World::new(&["a"]);
    let token = world.dir.path().join("token");
    std::fs::write(&token, "shared-secret\n").unwrap();
    set_mode(&token, 0o644);
    let token_arg = token.to_string_lossy().into_owned();
    let (_gateway, url, said) =
        http_gateway_said(&world, "127.0.0.1:0", &["--token-file", &token_arg]);
    let warning = said
        .iter()
        .find(|line| line.contains("can be read by other users"))
        .unwrap_or_else(|| panic!("no warning in {said:?}"));
    assert!(warning.contains(&token_arg), "{warning}");
    assert!(
        !said.iter().any(|line| line.contains("shared-secret")),
        "{said:?}"
    );
    // Still served, with the token required.
    assert_eq!(post_initialize(&url, &[]).0, 401);
    assert_eq!(
        post_initialize(&url, &[("Authorization", "Bearer shared-secret")]).0,
        200
    );
}
