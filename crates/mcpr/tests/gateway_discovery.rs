//! `mcpr serve --discovery` driven by MCP clients written by others: the TypeScript SDK and the
//! Python SDK, over stdio and streamable HTTP, in front of `mcpr mock` backends serving
//! realistic tool sets (`--tool-file`) and many generated tools (`--tools N`).
//!
//! The flow of discovery mode: the list shows the search and invoke tools and the `alwaysLoad`
//! server's tools; a search answers compact matches and activates them, the client is told
//! with `notifications/tools/list_changed` and lists them; they can be called, or invoked by
//! name without refreshing; a scoped view can neither find nor call outside itself.
//!
//! The client drivers are the ones of `tests/gateway.rs`: one JSON step per stdin line, one
//! JSON answer per line. Every wait is bounded; every address is loopback.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use support::{ChildGuard, MCPR, isolate_env, temp_dir};

/// Bound on one driver step (a call that hangs fails the test instead of hanging it).
const STEP_BOUND: Duration = Duration::from_secs(60);

/// The search and invoke tools of discovery mode.
const SEARCH: &str = "mcpr_search_tools";
const INVOKE: &str = "mcpr_invoke_tool";

const TS_DRIVER: &str = r#"
const cfg = JSON.parse(process.argv[2]);
const sdk = (path) => import(cfg.sdk + "/dist/esm/" + path);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ToolListChangedNotificationSchema } = await sdk("types.js");
const readline = await import("node:readline");

const out = (value) => process.stdout.write(JSON.stringify(value) + "\n");
let listChanged = 0;
const client = new Client({ name: "gateway-test-ts", version: "1.0.0" });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
const transport = cfg.transport === "stdio"
  ? new StdioClientTransport({ command: cfg.command, args: cfg.args, env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(cfg.url),
      cfg.token ? { requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } } } : undefined);
await client.connect(transport);
out({ ok: true, connected: true, pid: transport.pid ?? null });

async function run(step) {
  switch (step.op) {
    case "list":
      return { ok: true, tools: (await client.listTools()).tools };
    case "call": {
      const progress = [];
      const options = { timeout: 60000 };
      if (step.progress) options.onprogress = (p) => progress.push(p);
      const result = await client.callTool({ name: step.name, arguments: step.args ?? {} }, undefined, options);
      return { ok: true, result, progress };
    }
    case "cancel": {
      const abort = new AbortController();
      setTimeout(() => abort.abort("cancelled by the test"), step.after_ms);
      const started = Date.now();
      try {
        const result = await client.callTool({ name: step.name, arguments: step.args ?? {} }, undefined, { signal: abort.signal });
        return { ok: true, cancelled: false, result };
      } catch (e) {
        return { ok: true, cancelled: true, elapsed_ms: Date.now() - started, error: String(e?.message ?? e) };
      }
    }
    case "resources":
      return { ok: true, resources: (await client.listResources()).resources };
    case "read":
      return { ok: true, result: await client.readResource({ uri: step.uri }) };
    case "prompts":
      return { ok: true, prompts: (await client.listPrompts()).prompts };
    case "get_prompt":
      return { ok: true, result: await client.getPrompt({ name: step.name, arguments: step.args ?? {} }) };
    case "wait_list_changed": {
      const deadline = Date.now() + step.timeout_ms;
      while (listChanged === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const count = listChanged;
      listChanged = 0;
      return { ok: true, count };
    }
    case "close":
      await client.close();
      return { ok: true };
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

for await (const line of readline.createInterface({ input: process.stdin })) {
  const step = JSON.parse(line);
  try { out(await run(step)); } catch (e) { out({ ok: false, error: String(e?.message ?? e) }); }
  if (step.op === "close") break;
}
process.exit(0);
"#;

const PY_DRIVER: &str = r#"
import asyncio, json, os, sys, time
import mcp.types as types
from pydantic import AnyUrl
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

cfg = json.loads(sys.argv[1])
list_changed = 0

def out(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()

async def on_message(message):
    global list_changed
    if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ToolListChangedNotification):
        list_changed += 1

def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")

async def run(session, step):
    global list_changed
    op = step["op"]
    if op == "list":
        return {"ok": True, "tools": [dump(t) for t in (await session.list_tools()).tools]}
    if op == "call":
        progress = []
        async def on_progress(value, total, message):
            progress.append({"progress": value, "total": total, "message": message})
        result = await session.call_tool(step["name"], step.get("args", {}),
                                         progress_callback=on_progress if step.get("progress") else None)
        return {"ok": True, "result": dump(result), "progress": progress}
    if op == "cancel":
        # The SDK does not send notifications/cancelled by itself: send it for the request id
        # the call is about to get, as its own cancel() does for requests it receives.
        request_id = session._request_id
        started = time.monotonic()
        call = asyncio.create_task(session.call_tool(step["name"], step.get("args", {})))
        await asyncio.sleep(step["after_ms"] / 1000)
        await session.send_notification(types.ClientNotification(types.CancelledNotification(
            params=types.CancelledNotificationParams(requestId=request_id, reason="cancelled by the test"))))
        try:
            await asyncio.wait_for(call, 2)
            return {"ok": True, "cancelled": False}
        except Exception as e:
            return {"ok": True, "cancelled": True, "elapsed_ms": int((time.monotonic() - started) * 1000), "error": str(e)}
    if op == "resources":
        return {"ok": True, "resources": [dump(r) for r in (await session.list_resources()).resources]}
    if op == "read":
        return {"ok": True, "result": dump(await session.read_resource(AnyUrl(step["uri"])))}
    if op == "prompts":
        return {"ok": True, "prompts": [dump(p) for p in (await session.list_prompts()).prompts]}
    if op == "get_prompt":
        return {"ok": True, "result": dump(await session.get_prompt(step["name"], step.get("args")))}
    if op == "wait_list_changed":
        deadline = time.monotonic() + step["timeout_ms"] / 1000
        while list_changed == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        count, list_changed = list_changed, 0
        return {"ok": True, "count": count}
    if op == "close":
        return {"ok": True}
    raise ValueError(f"unknown step {op}")

async def drive(read, write):
    async with ClientSession(read, write, message_handler=on_message) as session:
        await session.initialize()
        out({"ok": True, "connected": True, "pid": None})
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            step = json.loads(line)
            try:
                out(await run(session, step))
            except Exception as e:
                out({"ok": False, "error": str(e)})
            if step["op"] == "close":
                break

async def main():
    if cfg["transport"] == "stdio":
        params = StdioServerParameters(command=cfg["command"], args=cfg["args"], env=dict(os.environ))
        async with stdio_client(params, errlog=sys.stderr) as (read, write):
            await drive(read, write)
    else:
        headers = {"Authorization": f"Bearer {cfg['token']}"} if cfg.get("token") else None
        async with streamablehttp_client(cfg["url"], headers=headers) as (read, write, _):
            await drive(read, write)

asyncio.run(main())
os._exit(0)
"#;

/// Which SDK drives the gateway.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sdk {
    TypeScript,
    Python,
}

/// A code-hosting server's tools, as a realistic set with near misses.
const FORGE_TOOLS: &str = r#"[
  {"name": "create_issue", "description": "Create a new issue in a repository.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string", "description": "Issue title"}, "body": {"type": "string"}}, "required": ["owner", "repo", "title"]}},
  {"name": "list_issues", "description": "List the issues of a repository, filtered by state and labels.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "state": {"type": "string"}}, "required": ["owner", "repo"]}},
  {"name": "create_pull_request", "description": "Open a pull request from one branch into another.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "head": {"type": "string"}, "base": {"type": "string"}}, "required": ["owner", "repo", "head", "base"]}},
  {"name": "merge_pull_request", "description": "Merge a pull request.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "number": {"type": "integer"}}, "required": ["owner", "repo", "number"]}},
  {"name": "search_code", "description": "Search source code across repositories.",
   "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
  {"name": "delete_repository", "description": "Delete a repository for good.",
   "inputSchema": {"type": "object", "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}}, "required": ["owner", "repo"]}}
]"#;

/// A file server's tools.
const FILES_TOOLS: &str = r#"[
  {"name": "read_file", "description": "Read the complete contents of one file.",
   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
  {"name": "read_multiple_files", "description": "Read the contents of several files at once.",
   "inputSchema": {"type": "object", "properties": {"paths": {"type": "array"}}, "required": ["paths"]}},
  {"name": "write_file", "description": "Create a file or overwrite it with new content.",
   "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}},
  {"name": "move_file", "description": "Move or rename a file.",
   "inputSchema": {"type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}}, "required": ["source", "destination"]}}
]"#;

/// One test's world: the backends' config and an isolated home for every process.
struct World {
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl World {
    /// Backends `forge` and `files` (tool files), `bulk` (`bulk` generated tools) and `pinned`
    /// (the mock's built-ins, marked `alwaysLoad`).
    fn new(bulk: usize) -> World {
        let dir = temp_dir();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        std::fs::write(path("forge.json"), FORGE_TOOLS).unwrap();
        std::fs::write(path("files.json"), FILES_TOOLS).unwrap();
        let mock = |flags: Vec<String>| {
            let mut args = vec!["mock".to_owned()];
            args.extend(flags);
            json!({ "command": MCPR, "args": args })
        };
        let mut pinned = mock(Vec::new());
        pinned["alwaysLoad"] = json!(true);
        let servers = json!({
            "forge": mock(vec!["--tool-file".into(), path("forge.json")]),
            "files": mock(vec!["--tool-file".into(), path("files.json")]),
            "bulk": mock(vec!["--tools".into(), bulk.to_string()]),
            "pinned": pinned,
        });
        let config = dir.path().join("mcp.json");
        let text = serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap();
        std::fs::write(&config, text).unwrap();
        std::fs::create_dir_all(dir.path().join("home/project")).unwrap();
        World { dir, config }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn isolate(&self, command: &mut Command) {
        let home = self.path("home");
        isolate_env(command, &home);
        command.current_dir(home.join("project"));
    }

    fn serve_args(&self, extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            "--strict-config".to_owned(),
            "--config".to_owned(),
            self.config.to_string_lossy().into_owned(),
            "serve".to_owned(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    }

    /// Start `mcpr serve --http 127.0.0.1:0` with `extra` flags; returns it and its URL.
    fn http_gateway(&self, extra: &[&str]) -> (ChildGuard, String) {
        let mut args = vec!["--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut command = Command::new(MCPR);
        command
            .args(self.serve_args(&args))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        self.isolate(&mut command);
        let mut child = ChildGuard::spawn(&mut command);
        let stderr = child.0.stderr.take().expect("gateway stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(url.to_owned());
                } else {
                    eprintln!("[gateway] {line}");
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the gateway printed no `listening on` line");
        (child, url)
    }
}

/// Where a driver connects.
enum Target<'a> {
    /// Start `mcpr serve` over stdio with these arguments.
    Stdio(&'a World, &'a [&'a str]),
    /// A running HTTP gateway.
    Http(&'a World, &'a str),
}

/// One SDK client, driven step by step.
struct Client {
    _child: ChildGuard,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    sdk: Sdk,
}

impl Client {
    fn start(sdk: Sdk, target: Target<'_>) -> Client {
        let (world, config) = match &target {
            Target::Stdio(world, extra) => (
                *world,
                json!({ "transport": "stdio", "command": MCPR, "args": world.serve_args(extra) }),
            ),
            Target::Http(world, url) => (*world, json!({ "transport": "http", "url": url })),
        };
        let mut command = match sdk {
            Sdk::TypeScript => {
                let script = world.path("driver.mjs");
                std::fs::write(&script, TS_DRIVER).unwrap();
                let mut config = config;
                config["sdk"] = json!(support::typescript_sdk());
                let mut command = Command::new("node");
                command.arg(script).arg(config.to_string());
                command
            }
            Sdk::Python => {
                let script = world.path("driver.py");
                std::fs::write(&script, PY_DRIVER).unwrap();
                let mut command = Command::new(support::python_mcp());
                command.arg(script).arg(config.to_string());
                command
            }
        };
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        world.isolate(&mut command);
        let mut child = ChildGuard::spawn(&mut command);
        let stdin = child.0.stdin.take();
        let stdout = child.0.stdout.take().expect("driver stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = Client {
            _child: child,
            stdin,
            lines,
            sdk,
        };
        let hello = client.read();
        assert_eq!(hello["connected"], true, "{sdk:?} did not connect: {hello}");
        client
    }

    fn read(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(STEP_BOUND)
            .unwrap_or_else(|e| panic!("{:?} driver gave no answer: {e}", self.sdk));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad driver line {line}: {e}"))
    }

    /// Run one step; panics if the driver reports a failure.
    fn step(&mut self, step: Value) -> Value {
        let answer = self.try_step(step.clone());
        assert_eq!(
            answer["ok"], true,
            "{:?} step {step} failed: {answer}",
            self.sdk
        );
        answer
    }

    fn try_step(&mut self, step: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("driver stdin open");
        writeln!(stdin, "{step}").expect("write to driver");
        stdin.flush().expect("flush driver stdin");
        self.read()
    }

    /// A call the gateway must refuse as an unknown tool (a protocol error).
    fn refused_call(&mut self, name: &str, args: Value) {
        let answer = self.try_step(json!({"op": "call", "name": name, "args": args}));
        assert_eq!(
            answer["ok"], false,
            "{:?}: {name} was called: {answer}",
            self.sdk
        );
        let error = answer["error"].as_str().unwrap_or_default();
        assert!(error.contains("unknown tool"), "{error}");
    }

    fn tools(&mut self) -> Vec<Value> {
        self.step(json!({"op": "list"}))["tools"]
            .as_array()
            .expect("tools")
            .clone()
    }

    fn tool_names(&mut self) -> Vec<String> {
        self.tools()
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        self.step(json!({"op": "call", "name": name, "args": args}))["result"].clone()
    }

    /// Search; returns the whole result and the names matched, best first.
    fn search(&mut self, query: &str) -> (Value, Vec<String>) {
        let result = self.call(SEARCH, json!({"query": query}));
        assert_ne!(result["isError"], true, "{result}");
        let found = serde_json::from_str::<Value>(&text(&result)).expect("matches as JSON");
        let names = found["matches"]
            .as_array()
            .expect("matches")
            .iter()
            .map(|m| m["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        (result, names)
    }

    /// Wait (bounded) for `notifications/tools/list_changed`; returns how many came.
    fn wait_list_changed(&mut self) -> u64 {
        self.step(json!({"op": "wait_list_changed", "timeout_ms": 15000}))["count"]
            .as_u64()
            .unwrap_or(0)
    }

    fn close(mut self) {
        self.step(json!({"op": "close"}));
        drop(self.stdin.take());
    }
}

/// The text blocks of a tool result, joined.
fn text(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The whole flow for one SDK and transport.
fn discovery_flow(sdk: Sdk, http: bool) {
    let world = World::new(300);
    let gateway = http.then(|| world.http_gateway(&["--discovery"]));
    let mut client = match &gateway {
        Some((_, url)) => Client::start(sdk, Target::Http(&world, url)),
        None => Client::start(sdk, Target::Stdio(&world, &["--discovery"])),
    };

    // The list: the two discovery tools and the alwaysLoad server's tools, nothing else.
    let names = client.tool_names();
    assert_eq!(&names[..2], [SEARCH, INVOKE], "{names:?}");
    assert!(names.contains(&"mcp_pinned_echo".to_owned()), "{names:?}");
    assert!(
        names[2..].iter().all(|n| n.starts_with("mcp_pinned_")),
        "only alwaysLoad tools besides the discovery tools: {names:?}"
    );
    // Forget whatever start-up announced.
    client.step(json!({"op": "wait_list_changed", "timeout_ms": 200}));

    // A search answers compact matches, best first, and activates them.
    let (result, found) = client.search("create issue");
    assert_eq!(
        found.first().map(String::as_str),
        Some("mcp_forge_create_issue"),
        "{result}"
    );
    let best = &serde_json::from_str::<Value>(&text(&result)).unwrap()["matches"][0];
    assert_eq!(best["description"], "Create a new issue in a repository.");
    let parameters: Vec<&str> = best["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(parameters.contains(&"title: string"), "{best}");
    assert!(parameters.contains(&"body?: string"), "{best}");
    assert!(
        best.get("inputSchema").is_none(),
        "compact, not the definition"
    );
    assert!(
        client.wait_list_changed() >= 1,
        "{sdk:?}: no list_changed after a search"
    );

    // The next list carries the full definitions of what was found.
    let tools = client.tools();
    let issue = tools
        .iter()
        .find(|t| t["name"] == "mcp_forge_create_issue")
        .unwrap_or_else(|| panic!("not activated: {tools:?}"));
    assert_eq!(
        issue["inputSchema"]["required"],
        json!(["owner", "repo", "title"])
    );
    for name in &found {
        assert!(tools.iter().any(|t| t["name"] == name.as_str()), "{name}");
    }
    assert!(
        !tools.iter().any(|t| t["name"] == "mcp_files_read_file"),
        "not found, not listed"
    );

    // An activated tool is called like any other.
    let created = client.call(
        "mcp_forge_create_issue",
        json!({"owner": "o", "repo": "r", "title": "found by search"}),
    );
    assert!(text(&created).contains("found by search"), "{created}");

    // The invoke tool calls by name a tool that was never listed.
    let invoked = client.call(
        INVOKE,
        json!({"name": "mcp_files_read_file", "arguments": {"path": "/srv/notes.txt"}}),
    );
    assert_ne!(invoked["isError"], true, "{invoked}");
    assert!(text(&invoked).contains("/srv/notes.txt"), "{invoked}");

    // Bad arguments and unknown names are errors the model can read, naming the field.
    let unknown = client.call(INVOKE, json!({"name": "mcp_nowhere_nothing"}));
    assert_eq!(unknown["isError"], true, "{unknown}");
    assert!(text(&unknown).contains("unknown tool `mcp_nowhere_nothing`"));
    let bad = client.call(SEARCH, json!({"query": ""}));
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(text(&bad).contains("`query`"), "{bad}");
    let bad = client.call(
        INVOKE,
        json!({"name": "mcp_forge_create_issue", "arguments": 7}),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(text(&bad).contains("`arguments`"), "{bad}");

    client.close();
    if let Some((gateway, _)) = gateway {
        drop(gateway);
    }
}

#[test]
fn typescript_client_over_stdio_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::TypeScript, false);
}

#[test]
fn python_client_over_stdio_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::Python, false);
}

#[test]
fn typescript_client_over_http_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::TypeScript, true);
}

#[test]
fn python_client_over_http_searches_activates_calls_and_invokes() {
    discovery_flow(Sdk::Python, true);
}

#[test]
fn each_http_client_has_its_own_activated_tools() {
    let world = World::new(0);
    let (gateway, url) = world.http_gateway(&["--discovery"]);
    let mut finder = Client::start(Sdk::TypeScript, Target::Http(&world, &url));
    let mut other = Client::start(Sdk::Python, Target::Http(&world, &url));
    let (_, found) = finder.search("merge pull request");
    assert!(
        found.contains(&"mcp_forge_merge_pull_request".to_owned()),
        "{found:?}"
    );
    assert!(finder.wait_list_changed() >= 1);
    assert!(
        finder
            .tool_names()
            .contains(&"mcp_forge_merge_pull_request".to_owned())
    );
    let names = other.tool_names();
    assert!(
        !names.contains(&"mcp_forge_merge_pull_request".to_owned()),
        "another client's search changed this client's list: {names:?}"
    );
    finder.close();
    other.close();
    drop(gateway);
}

#[test]
fn scoped_view_cannot_find_or_call_outside_itself() {
    let world = World::new(0);
    let scope = [
        "--discovery",
        "--servers",
        "forge,pinned",
        "--tools",
        "forge/*",
        "--deny-tools",
        "*delete*",
    ];
    for sdk in [Sdk::Python, Sdk::TypeScript] {
        let mut client = Client::start(sdk, Target::Stdio(&world, &scope));
        // Out of scope: a server not in --servers, a tool not in --tools, a denied tool.
        for (query, outside) in [
            ("read file contents", "mcp_files_read_file"),
            ("echo text", "mcp_pinned_echo"),
            ("delete repository", "mcp_forge_delete_repository"),
        ] {
            let (result, found) = client.search(query);
            assert!(
                !found.contains(&outside.to_owned()),
                "{sdk:?}: `{query}` found {outside} outside the view: {result}"
            );
            assert!(
                found.iter().all(|n| n.starts_with("mcp_forge_")),
                "{sdk:?}: {found:?}"
            );
            let invoked = client.call(INVOKE, json!({"name": outside, "arguments": {"text": "x"}}));
            assert_eq!(
                invoked["isError"], true,
                "{sdk:?}: invoked {outside}: {invoked}"
            );
            assert!(text(&invoked).contains("unknown tool"), "{invoked}");
        }
        // Nothing outside was activated either, and a direct call is refused too.
        let names = client.tool_names();
        assert!(
            names[2..]
                .iter()
                .all(|n| n.starts_with("mcp_forge_") && !n.contains("delete")),
            "{sdk:?}: {names:?}"
        );
        client.refused_call("mcp_forge_delete_repository", json!({}));
        client.refused_call("mcp_files_read_file", json!({"path": "/etc/passwd"}));
        // Inside the view, all works.
        let (_, found) = client.search("open pull request");
        assert!(
            found.contains(&"mcp_forge_create_pull_request".to_owned()),
            "{found:?}"
        );
        client.close();
    }
}

#[test]
fn auto_mode_switches_on_only_past_the_threshold() {
    // A small list (the mock's built-ins and two tool files) stays whole ...
    let small = World::new(0);
    let mut client = Client::start(
        Sdk::Python,
        Target::Stdio(&small, &["--discovery=auto:20000"]),
    );
    let names = client.tool_names();
    assert!(!names.contains(&SEARCH.to_owned()), "{names:?}");
    assert!(
        names.contains(&"mcp_files_read_file".to_owned()),
        "{names:?}"
    );
    client.refused_call(SEARCH, json!({"query": "x"}));
    client.close();

    // ... 400 more tools pass it: discovery switches on by itself.
    let large = World::new(400);
    let mut client = Client::start(
        Sdk::TypeScript,
        Target::Stdio(&large, &["--discovery=auto:20000"]),
    );
    let names = client.tool_names();
    assert_eq!(&names[..2], [SEARCH, INVOKE], "{names:?}");
    assert!(
        !names.contains(&"mcp_files_read_file".to_owned()),
        "{names:?}"
    );
    let (_, found) = client.search("read several files at once");
    assert!(
        found.contains(&"mcp_files_read_multiple_files".to_owned()),
        "{found:?}"
    );
    client.close();
}

#[test]
fn bad_discovery_modes_are_refused_with_what_is_expected() {
    let world = World::new(0);
    for bad in [
        "--discovery=auto:",
        "--discovery=auto:0",
        "--discovery=sometimes",
    ] {
        let mut command = Command::new(MCPR);
        command.args(world.serve_args(&[bad])).stdin(Stdio::null());
        world.isolate(&mut command);
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("auto:N"), "{bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "{bad}: {stderr}");
    }
}

#[tokio::test]
async fn sub_agent_handle_finds_only_inside_its_scope() {
    use indexmap::IndexMap;
    use mcp_runtime::gateway::{SubAgentHandle, SubAgentOptions, ToolFilter};
    use mcp_runtime::manager::{ManagerOptions, McpManager};

    let world = World::new(0);
    let manager = McpManager::new(ManagerOptions {
        cache: None,
        project: world.path(""),
        ..ManagerOptions::default()
    });
    let file = |name: &str| world.path(name).to_string_lossy().into_owned();
    let mut configs = IndexMap::new();
    configs.insert(
        "forge".to_owned(),
        support::mock(&["--tool-file", &file("forge.json")]),
    );
    configs.insert(
        "files".to_owned(),
        support::mock(&["--tool-file", &file("files.json")]),
    );
    manager.connect_servers(configs, IndexMap::new()).await;

    let whole = SubAgentHandle::new(manager.clone(), SubAgentOptions::default());
    let found: Vec<String> = whole
        .search_tools("read several files at once", 3)
        .into_iter()
        .map(|hit| hit.tool.name)
        .collect();
    assert_eq!(
        found.first().map(String::as_str),
        Some("mcp_files_read_multiple_files"),
        "{found:?}"
    );

    let scoped = SubAgentHandle::new(
        manager.clone(),
        SubAgentOptions {
            filter: ToolFilter::default().with_servers(["forge"]),
            ..SubAgentOptions::default()
        },
    );
    let hits = scoped.search_tools("read several files at once", 10);
    assert!(
        hits.iter().all(|hit| hit.tool.server == "forge"),
        "found outside the scope: {hits:?}"
    );
    let hits = scoped.search_tools("merge pull request", 1);
    assert_eq!(hits[0].tool.name, "mcp_forge_merge_pull_request");
    manager.disconnect_all().await;
}

#[test]
fn discovery_list_is_a_small_fraction_of_the_full_list() {
    // 1,000 generated tools and the realistic sets; the alwaysLoad server stays listed.
    let world = World::new(1000);
    let size = |extra: &[&str]| {
        let mut client = Client::start(Sdk::Python, Target::Stdio(&world, extra));
        let tools = client.tools();
        client.close();
        (
            tools.len(),
            serde_json::to_string(&tools).unwrap().chars().count(),
        )
    };
    let (full_tools, full_chars) = size(&[]);
    let (listed_tools, listed_chars) = size(&["--discovery"]);
    eprintln!(
        "full list: {full_tools} tools, ~{} tokens; discovery list: {listed_tools} tools, ~{} \
         tokens (characters / 4)",
        full_chars / 4,
        listed_chars / 4
    );
    assert!(full_tools > 1000, "{full_tools}");
    assert!(
        listed_chars * 20 <= full_chars,
        "discovery list is {listed_chars} characters, over 5% of {full_chars}"
    );
}
