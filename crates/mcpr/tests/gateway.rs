//! `mcpr serve` driven by MCP clients written by others: the TypeScript SDK
//! (`@modelcontextprotocol/sdk@1.32.2`) and the Python SDK (`mcp==1.30.0`), over stdio and
//! streamable HTTP, in front of two real backends (`mcpr mock` and server-everything).
//!
//! Each client runs a small driver script (written into a temp dir at test time) that connects,
//! then executes one JSON step per stdin line (`list`, `call`, `cancel`, `wait_list_changed`,
//! `resources`, `read`, `prompts`, `get_prompt`, `close`) and answers with one JSON line. The backends are started through `sh` wrappers that
//! append their pid to a file, which counts spawns and finds the processes to check or kill.
//! Every wait is bounded; every address is loopback.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::sdk::{Sdk, SdkClient, ServeWorld, Target, text};
use support::{ChildGuard, MCPR, alive, post_initialize, temp_dir, wait_dead};

type World = ServeWorld;

/// A backend of the test config.
enum Backend<'a> {
    /// `mcpr mock` with extra flags (`--record` is always added).
    Mock(&'a str, &'a [&'a str]),
    /// server-everything over stdio.
    Everything(&'a str),
    /// A mock that hangs in `initialize` once the file `<name>.hang` exists (before, it also
    /// offers a generated tool `tool_0`).
    HangsWhenFlagged(&'a str, u64),
    /// A mock offering the generated tool `tool_0`, and `tool_1` too once the file
    /// `<name>.grow` exists.
    GrowsWhenFlagged(&'a str),
}

impl ServeWorld {
    fn new(backends: &[Backend<'_>]) -> World {
        let dir = temp_dir();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        let mut servers = serde_json::Map::new();
        for backend in backends {
            let (name, script, extra) = match backend {
                Backend::Mock(name, flags) => (
                    *name,
                    format!(
                        "exec '{MCPR}' mock --record '{}' {}",
                        path(&format!("{name}.record")),
                        // `{dir}` in a flag stands for this world's directory.
                        flags.join(" ").replace("{dir}", &path(""))
                    ),
                    json!({}),
                ),
                Backend::Everything(name) => (
                    *name,
                    format!(
                        "exec node '{}' stdio",
                        support::server_everything().display()
                    ),
                    json!({}),
                ),
                Backend::HangsWhenFlagged(name, startup_ms) => (
                    *name,
                    format!(
                        // `--tools 1` adds `tool_0`, which only this server has.
                        "if [ -e '{flag}' ]; then exec '{MCPR}' mock --hang-init; else exec '{MCPR}' mock --tools 1; fi",
                        flag = path(&format!("{name}.hang"))
                    ),
                    json!({ "startup_timeout_ms": startup_ms }),
                ),
                Backend::GrowsWhenFlagged(name) => (
                    *name,
                    format!(
                        "if [ -e '{flag}' ]; then exec '{MCPR}' mock --tools 2; else exec '{MCPR}' mock --tools 1; fi",
                        flag = path(&format!("{name}.grow"))
                    ),
                    json!({}),
                ),
            };
            // `$$` is the pid of the shell, which `exec` turns into the server.
            let wrapper = format!("echo $$ >> '{}'; {script}", path(&format!("{name}.spawns")));
            let mut entry = json!({ "command": "sh", "args": ["-c", wrapper] });
            if let (Value::Object(entry), Value::Object(extra)) = (&mut entry, extra) {
                entry.extend(extra);
            }
            servers.insert(name.to_owned(), entry);
        }
        ServeWorld::with_servers(dir, Value::from(servers))
    }

    /// Pids the backend `name` was started with, oldest first.
    fn spawns(&self, name: &str) -> Vec<u32> {
        std::fs::read_to_string(self.path(&format!("{name}.spawns")))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect()
    }

    /// Wait (bounded) until backend `name` has been spawned `count` times; returns the pids.
    fn wait_spawns(&self, name: &str, count: usize) -> Vec<u32> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let pids = self.spawns(name);
            if pids.len() >= count {
                return pids;
            }
            assert!(
                Instant::now() < deadline,
                "{name} spawned {} times, expected {count}",
                pids.len()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait (bounded) until the tool cache of this world's home holds `text` (the cache is
    /// SQLite, which stores text as is, in its main file or its write-ahead log).
    fn wait_cached(&self, text: &str) {
        let dir = self.path("home/.cache/mcpr");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found = ["tools.sqlite", "tools.sqlite-wal"].iter().any(|file| {
                std::fs::read(dir.join(file))
                    .is_ok_and(|bytes| bytes.windows(text.len()).any(|w| w == text.as_bytes()))
            });
            if found {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "`{text}` never reached the tool cache"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// What the mock `name` received, one JSON value per line.
    fn record(&self, name: &str) -> Vec<Value> {
        std::fs::read_to_string(self.path(&format!("{name}.record")))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect()
    }
}

fn send_signal(pid: u32, signal: i32) {
    // SAFETY: signalling a process this test started (through its client).
    assert_eq!(unsafe { libc::kill(pid as i32, signal) }, 0, "kill {pid}");
}

/// The parent of `pid`, from /proc.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// Wait (bounded) for a child process to exit; returns its exit code.
fn wait_exit(child: &mut ChildGuard, bound: Duration) -> Option<i32> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(status) = child.0.try_wait().expect("wait") {
            return status.code();
        }
        assert!(
            Instant::now() < deadline,
            "process {} did not exit",
            child.0.id()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn assert_all_dead(pids: &[u32]) {
    for &pid in pids {
        assert!(
            wait_dead(pid, Duration::from_secs(10)),
            "backend {pid} outlived the gateway"
        );
    }
}

/// List from two backends, call through both, receive progress, cancel: the same scenario for
/// every SDK and transport.
fn two_backends_scenario(sdk: Sdk, http: bool) {
    let world = World::new(&[
        Backend::Mock("mock", &[]),
        Backend::Everything("everything"),
    ]);
    let gateway = http.then(|| world.http_gateway(&[], &[]));
    let mut client = match &gateway {
        Some((_, url)) => world.connect(sdk, Target::Http(url, None)),
        None => world.connect(sdk, Target::Stdio(&[])),
    };

    let listed = client.step(json!({"op": "list"}));
    let tools = listed["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    for expected in [
        "mcp_mock_echo",
        "mcp_mock_progress",
        "mcp_everything_echo",
        "mcp_everything_get-sum",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "tools are sorted by name");
    let echo = tools
        .iter()
        .find(|t| t["name"] == "mcp_everything_echo")
        .unwrap();
    let description = echo["description"].as_str().unwrap_or_default();
    assert!(description.starts_with("[mcp:everything"), "{description}");

    assert_eq!(
        text(&client.call("mcp_mock_echo", json!({"text": "hi"}))),
        "hi"
    );
    assert_eq!(
        text(&client.call("mcp_everything_echo", json!({"message": "yo"}))),
        "Echo: yo"
    );
    let sum = client.call("mcp_mock_add", json!({"a": 2, "b": 3}));
    assert_eq!(sum["structuredContent"]["sum"], 5, "{sum}");
    let failed = client.call("mcp_mock_fail", json!({}));
    assert_eq!(failed["isError"], true, "{failed}");

    // Progress reaches the client under its own token.
    let answer = client.step(json!({
        "op": "call", "name": "mcp_mock_progress", "args": {"steps": 3, "interval_ms": 30}, "progress": true
    }));
    assert_eq!(text(&answer["result"]), "done");
    let progress: Vec<f64> = answer["progress"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["progress"].as_f64())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0], "{answer}");
    assert_eq!(answer["progress"][2]["total"], 3.0);

    // Cancelling reaches the backend as notifications/cancelled, and the gateway goes on.
    let cancelled = client.step(json!({
        "op": "cancel", "name": "mcp_mock_sleep", "args": {"ms": 20000}, "after_ms": 300
    }));
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    assert!(
        cancelled["elapsed_ms"].as_u64().unwrap() < 5000,
        "{cancelled}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !world
        .record("mock")
        .iter()
        .any(|m| m["method"] == "notifications/cancelled")
    {
        assert!(
            Instant::now() < deadline,
            "the backend never heard of the cancellation"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        text(&client.call("mcp_mock_echo", json!({"text": "still here"}))),
        "still here"
    );

    // Resources and prompts, namespaced by server.
    let resources = client.step(json!({"op": "resources"}));
    let resource = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "everything/architecture.md")
        .unwrap_or_else(|| panic!("no everything/architecture.md in {resources}"))
        .clone();
    let read = client.step(json!({"op": "read", "uri": resource["uri"]}));
    let contents = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(contents.contains("Architecture"), "{read}");
    let prompts = client.step(json!({"op": "prompts"}));
    let names: Vec<&str> = prompts["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp_everything_args-prompt"), "{prompts}");
    let prompt = client.step(json!({
        "op": "get_prompt", "name": "mcp_everything_args-prompt", "args": {"city": "Paris"}
    }));
    let message = prompt["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(message.contains("Paris"), "{prompt}");

    let backends = [world.spawns("mock"), world.spawns("everything")].concat();
    assert_eq!(backends.len(), 2, "one process per backend: {backends:?}");
    client.close();
    match gateway {
        // Over stdio the client closing stdin ends the gateway and its backends.
        None => assert_all_dead(&backends),
        Some((mut gateway, _)) => {
            assert!(
                backends.iter().all(|&pid| alive(pid)),
                "backends stay for other clients"
            );
            send_signal(gateway.0.id(), libc::SIGTERM);
            assert_eq!(wait_exit(&mut gateway, Duration::from_secs(15)), Some(0));
            assert_all_dead(&backends);
        }
    }
}

#[test]
fn typescript_client_over_stdio_lists_calls_gets_progress_and_cancels() {
    two_backends_scenario(Sdk::TypeScript, false);
}

#[test]
fn python_client_over_stdio_lists_calls_gets_progress_and_cancels() {
    two_backends_scenario(Sdk::Python, false);
}

#[test]
fn typescript_client_over_http_lists_calls_gets_progress_and_cancels() {
    two_backends_scenario(Sdk::TypeScript, true);
}

#[test]
fn python_client_over_http_lists_calls_gets_progress_and_cancels() {
    two_backends_scenario(Sdk::Python, true);
}

#[test]
fn five_concurrent_http_clients_share_one_process_per_backend() {
    let world = World::new(&[
        Backend::Mock("mock", &[]),
        Backend::Everything("everything"),
    ]);
    let (mut gateway, url) = world.http_gateway(&[], &[]);
    let sdks = [
        Sdk::TypeScript,
        Sdk::Python,
        Sdk::TypeScript,
        Sdk::Python,
        Sdk::TypeScript,
    ];
    // Connect all five at once, each from its own thread, and keep them all connected.
    let clients: Vec<SdkClient> = std::thread::scope(|scope| {
        let starting: Vec<_> = sdks
            .iter()
            .map(|&sdk| {
                let (world, url) = (&world, url.as_str());
                scope.spawn(move || {
                    let mut client = world.connect(sdk, Target::Http(url, None));
                    let names = client.tool_names();
                    assert!(names.contains(&"mcp_mock_echo".to_owned()), "{names:?}");
                    assert!(
                        names.contains(&"mcp_everything_echo".to_owned()),
                        "{names:?}"
                    );
                    let echoed = client.call("mcp_everything_echo", json!({"message": "x"}));
                    assert_eq!(text(&echoed), "Echo: x");
                    client
                })
            })
            .collect();
        starting
            .into_iter()
            .map(|t| t.join().expect("client thread"))
            .collect()
    });
    for (i, mut client) in clients.into_iter().enumerate() {
        let said = format!("client {i}");
        assert_eq!(
            text(&client.call("mcp_mock_echo", json!({"text": said}))),
            said
        );
        client.close();
    }
    assert_eq!(world.spawns("mock").len(), 1, "mock spawned once");
    assert_eq!(
        world.spawns("everything").len(),
        1,
        "server-everything spawned once"
    );

    let backends = [world.spawns("mock"), world.spawns("everything")].concat();
    send_signal(gateway.0.id(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut gateway, Duration::from_secs(15)), Some(0));
    assert_all_dead(&backends);
}

#[test]
fn killed_backend_is_reconnected_and_clients_are_told_only_when_its_tools_changed() {
    let world = World::new(&[Backend::GrowsWhenFlagged("mock")]);
    let (mut gateway, url) = world.http_gateway(&[], &[]);
    let mut clients = [
        world.connect(Sdk::TypeScript, Target::Http(&url, None)),
        world.connect(Sdk::Python, Target::Http(&url, None)),
    ];
    for client in &mut clients {
        assert!(client.tool_names().contains(&"mcp_mock_tool_0".to_owned()));
    }
    // A crash, and a reconnect to the same tools: the clients' lists did not change.
    let first = world.wait_spawns("mock", 1)[0];
    send_signal(first, libc::SIGKILL);
    world.wait_spawns("mock", 2);
    for client in &mut clients {
        assert_eq!(
            text(&client.call("mcp_mock_tool_0", json!({"text": "back"}))),
            "back"
        );
        let changed = client.step(json!({"op": "wait_list_changed", "timeout_ms": 1000}));
        assert_eq!(changed["count"], 0, "{:?}: {changed}", client.sdk);
    }

    // A crash, and a reconnect to one tool more: one notification, then the new list.
    std::fs::write(world.path("mock.grow"), "").unwrap();
    let second = world.wait_spawns("mock", 2)[1];
    send_signal(second, libc::SIGKILL);
    let pids = world.wait_spawns("mock", 3);
    for client in &mut clients {
        let changed = client.step(json!({"op": "wait_list_changed", "timeout_ms": 15000}));
        assert!(
            changed["count"].as_u64() >= Some(1),
            "{:?}: {changed}",
            client.sdk
        );
        let more = client.step(json!({"op": "wait_list_changed", "timeout_ms": 300}));
        assert_eq!(
            changed["count"].as_u64().unwrap() + more["count"].as_u64().unwrap(),
            1
        );
        assert!(client.tool_names().contains(&"mcp_mock_tool_1".to_owned()));
    }
    for client in clients {
        client.close();
    }
    send_signal(gateway.0.id(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut gateway, Duration::from_secs(15)), Some(0));
    assert_all_dead(&pids);
}

#[test]
fn backend_hanging_at_startup_does_not_delay_its_cached_tools() {
    let world = World::new(&[
        Backend::Mock("fast", &[]),
        Backend::HangsWhenFlagged("slow", 4000),
    ]);
    // A first run fills the tool cache (written in the background: wait for it).
    let mut client = world.connect(Sdk::Python, Target::Stdio(&[]));
    assert!(client.tool_names().contains(&"mcp_slow_tool_0".to_owned()));
    world.wait_cached("tool_0");
    client.close();

    // Now `slow` hangs in `initialize`: its cached tools are listed at once all the same.
    std::fs::write(world.path("slow.hang"), "").unwrap();
    let mut client = world.connect(Sdk::TypeScript, Target::Stdio(&[]));
    let started = Instant::now();
    let names = client.tool_names();
    let listed_in = started.elapsed();
    assert!(names.contains(&"mcp_slow_tool_0".to_owned()), "{names:?}");
    assert!(names.contains(&"mcp_fast_echo".to_owned()), "{names:?}");
    assert!(
        listed_in < Duration::from_secs(3),
        "tools/list took {listed_in:?}"
    );
    assert_eq!(
        text(&client.call("mcp_fast_echo", json!({"text": "quick"}))),
        "quick"
    );

    // Calling the hanging server's tool waits for it, then fails clearly (its start-up
    // timeout is 4 s), without hanging the client.
    let started = Instant::now();
    let result = client.call("mcp_slow_echo", json!({"text": "late"}));
    assert_eq!(result["isError"], true, "{result}");
    assert!(text(&result).starts_with("MCP error:"), "{result}");
    assert!(started.elapsed() < Duration::from_secs(15));
    let backends = [world.spawns("fast"), world.spawns("slow")].concat();
    client.close();
    assert_all_dead(&backends);
}

/// POST a raw `initialize` to the gateway, with an `Authorization` header or none; returns the
/// status code and the body.
fn raw_post(url: &str, authorization: Option<&str>) -> (u16, String) {
    let headers: Vec<(&str, &str)> = authorization
        .map(|v| ("Authorization", v))
        .into_iter()
        .collect();
    post_initialize(url, &headers)
}

#[test]
fn http_requests_without_the_right_token_are_refused() {
    let world = World::new(&[Backend::Mock("mock", &[])]);
    let token_file = world.path("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let token_arg = token_file.to_string_lossy().into_owned();
    let (mut gateway, url) = world.http_gateway(&["--token-file", &token_arg], &[]);

    for authorization in [
        None,
        Some("Bearer wrong"),
        Some("Bearer s3cret-token-and-more"),
        Some("Basic s3cret-token"),
    ] {
        let (status, body) = raw_post(&url, authorization);
        assert_eq!(status, 401, "{authorization:?}");
        assert!(body.trim().is_empty(), "{authorization:?}: {body:?}");
    }
    let (status, body) = raw_post(&url, Some("Bearer s3cret-token"));
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("mcpr-gateway"), "{body}");

    for sdk in [Sdk::TypeScript, Sdk::Python] {
        let mut client = world.connect(sdk, Target::Http(&url, Some("s3cret-token")));
        assert!(client.tool_names().contains(&"mcp_mock_echo".to_owned()));
        client.close();
    }
    send_signal(gateway.0.id(), libc::SIGTERM);
    assert_eq!(wait_exit(&mut gateway, Duration::from_secs(15)), Some(0));

    // The token may also come from the environment.
    let (mut gateway, url) = world.http_gateway(&[], &[("MCPR_GATEWAY_TOKEN", "from-env")]);
    assert_eq!(raw_post(&url, None).0, 401);
    assert_eq!(raw_post(&url, Some("Bearer from-env")).0, 200);
    send_signal(gateway.0.id(), libc::SIGINT);
    assert_eq!(wait_exit(&mut gateway, Duration::from_secs(15)), Some(0));
}

#[test]
fn non_loopback_address_without_token_is_refused_before_binding() {
    let world = World::new(&[Backend::Mock("mock", &[])]);
    let mut command = Command::new(MCPR);
    command
        .args(world.serve_args(&["--http", "0.0.0.0:0"]))
        .stdin(Stdio::null());
    world.isolate(&mut command);
    command.env_remove("MCPR_GATEWAY_TOKEN");
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("requires a bearer token"), "{stderr}");
    // Refused before any backend started.
    assert!(world.spawns("mock").is_empty());
}

/// The gateway of a stdio client: the parent of the watchdog that started its first backend
/// (on Linux a backend is the child of the gateway's watchdog).
fn gateway_of(world: &World, backend: &str) -> u32 {
    let pid = world.wait_spawns(backend, 1)[0];
    let watchdog = parent_of(pid).expect("backend's parent");
    parent_of(watchdog).expect("the watchdog's parent")
}

#[test]
fn no_backend_outlives_the_gateway_on_sigterm_sigint_or_client_exit() {
    for (sdk, signal) in [
        (Sdk::TypeScript, Some(libc::SIGTERM)),
        (Sdk::Python, Some(libc::SIGINT)),
        (Sdk::Python, None),
    ] {
        // The mock also leaves a grandchild in its process group, which must die too.
        let world = World::new(&[
            Backend::Mock("mock", &["--grandchild", "'{dir}/grandchild.pid'"]),
            Backend::Everything("everything"),
        ]);
        let grandchild = world.path("grandchild.pid");
        let mut client = world.connect(sdk, Target::Stdio(&[]));
        assert!(
            client
                .tool_names()
                .contains(&"mcp_everything_echo".to_owned())
        );
        let gateway = gateway_of(&world, "mock");
        if let Some(pid) = client.server_pid {
            assert_eq!(pid, gateway);
        }
        let mut processes = [world.spawns("mock"), world.spawns("everything")].concat();
        processes.push(support::read_pid(&grandchild));
        match signal {
            Some(signal) => {
                send_signal(gateway, signal);
                assert!(
                    wait_dead(gateway, Duration::from_secs(15)),
                    "gateway survived {signal}"
                );
            }
            None => client.close_input(),
        }
        assert_all_dead(&processes);
        assert!(
            wait_dead(gateway, Duration::from_secs(15)),
            "gateway survived its client"
        );
        drop(client);
    }
}

#[test]
fn scoped_view_flags_filter_servers_and_tools() {
    let world = World::new(&[Backend::Mock("a", &[]), Backend::Mock("b", &[])]);
    let flags = [
        "--servers",
        "a",
        "--tools",
        "mcp_a_*",
        "--tools",
        "!a/fail",
        "--deny-tools",
        "*sleep*",
    ];
    let mut client = world.connect(Sdk::Python, Target::Stdio(&flags));
    let names = client.tool_names();
    assert!(names.contains(&"mcp_a_echo".to_owned()), "{names:?}");
    assert!(names.iter().all(|n| n.starts_with("mcp_a_")), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| n.contains("sleep") || n.contains("fail")),
        "{names:?}"
    );
    // Hidden tools cannot be called either, and servers out of scope are not even started.
    let hidden = client.try_step(json!({"op": "call", "name": "mcp_a_sleep", "args": {"ms": 1}}));
    assert_eq!(hidden["ok"], false, "{hidden}");
    assert!(world.spawns("b").is_empty());
    assert_eq!(
        text(&client.call("mcp_a_echo", json!({"text": "in scope"}))),
        "in scope"
    );
    let backends = world.spawns("a");
    client.close();
    assert_all_dead(&backends);
}

#[test]
fn a_large_tool_list_is_answered_whole_and_the_gateway_goes_on() {
    // 300 generated tools: a list large enough that the gateway gives its memory back once
    // the answer is sent, which must not disturb the session.
    let world = World::new(&[Backend::Mock("a", &["--tools", "300"])]);
    let mut client = world.connect(Sdk::TypeScript, Target::Stdio(&[]));
    for _ in 0..3 {
        let names = client.tool_names();
        assert!(names.contains(&"mcp_a_tool_299".to_owned()), "{names:?}");
        assert!(names.len() > 300, "{}", names.len());
    }
    assert_eq!(
        text(&client.call("mcp_a_tool_7", json!({"text": "after the lists"}))),
        "after the lists"
    );
    client.close();
}

#[test]
fn twelve_servers_starting_one_after_another_send_no_list_changed_burst() {
    // Twelve servers whose handshakes end 100 ms apart, as real servers' start-ups spread.
    let delays: Vec<String> = (0..12)
        .map(|i| format!("--init-delay {}", i * 100))
        .collect();
    let flags: Vec<[&str; 1]> = delays.iter().map(|d| [d.as_str()]).collect();
    let names: Vec<String> = (0..12).map(|i| format!("s{i}")).collect();
    let backends: Vec<Backend<'_>> = names
        .iter()
        .zip(&flags)
        .map(|(name, flags)| Backend::Mock(name, &flags[..]))
        .collect();
    let world = World::new(&backends);
    // A cold start (nothing cached: listing waits for every server), then a warm one (cached
    // tools at once, the servers replacing them as they connect), each with the full list and
    // with discovery mode.
    for run in ["cold", "warm"] {
        for extra in [&[][..], &["--discovery"][..]] {
            let mut client = world.connect(Sdk::TypeScript, Target::Stdio(extra));
            let names = client.tool_names();
            if extra.is_empty() {
                assert!(
                    names.contains(&"mcp_s11_echo".to_owned()),
                    "{run}: {names:?}"
                );
            }
            // Every change since the client connected is counted here.
            let changed = client.step(json!({"op": "wait_list_changed", "timeout_ms": 2500}));
            assert_eq!(changed["count"], 0, "{run} {extra:?}: {changed}");
            assert_eq!(client.tool_names(), names, "{run} {extra:?}");
            client.close();
        }
        world.wait_cached("s11");
    }
}
