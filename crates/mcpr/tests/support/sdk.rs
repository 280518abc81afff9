//! MCP clients written by others, driven step by step: a small driver script per SDK (the
//! TypeScript SDK and the Python SDK) that connects, then runs one JSON step per stdin line
//! (`list`, `call`, `cancel`, `wait_list_changed`, `resources`, `read`, `prompts`,
//! `get_prompt`, `close`; the TypeScript one also `set_level`, `wait_logs`, `subscribe`,
//! `unsubscribe`, `wait_updated`, `capabilities`) and answers each with one JSON line; and [`ServeWorld`], the
//! directory a gateway test serves its backends from. Every wait is bounded.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{ChildGuard, MCPR, isolate_env, line_channel};

/// Bound on one driver step (a call that hangs fails the test instead of hanging it).
pub(crate) const STEP_BOUND: Duration = Duration::from_secs(60);

/// The TypeScript SDK client driver.
pub(crate) const TS_DRIVER: &str = r#"
const cfg = JSON.parse(process.argv[2]);
const sdk = (path) => import(cfg.sdk + "/dist/esm/" + path);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ToolListChangedNotificationSchema, LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema } = await sdk("types.js");
const readline = await import("node:readline");

const out = (value) => process.stdout.write(JSON.stringify(value) + "\n");
let listChanged = 0;
const client = new Client({ name: "gateway-test-ts", version: "1.0.0" });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
const logs = [];
client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
const updated = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); });
const waitFor = async (list, count, timeoutMs) => {
  const deadline = Date.now() + timeoutMs;
  while (list.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return list.splice(0, list.length);
};
const transport = cfg.transport === "stdio"
  ? new StdioClientTransport({ command: cfg.command, args: cfg.args, env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(cfg.url),
      cfg.token ? { requestInit: { headers: { Authorization: `Bearer ${cfg.token}` } } } : undefined);
await client.connect(transport);
// The progress a call's server sent before its answer, in the order it was read. Taken from
// the transport, not from `onprogress`: the SDK runs notification handlers on a later microtask
// but takes a response at once and forgets the call's progress handler then, so a progress
// notification read in the same chunk as the answer that follows it never reaches `onprogress`.
let callProgress = null;
const sdkOnMessage = transport.onmessage;
transport.onmessage = (message, extra) => {
  if (callProgress && !callProgress.answered) {
    if (message.method === "notifications/progress") {
      const { progressToken, ...update } = message.params;
      callProgress.updates.push(update);
    } else if (message.id !== undefined && ("result" in message || "error" in message)) {
      callProgress.answered = true;
    }
  }
  sdkOnMessage?.(message, extra);
};
out({ ok: true, connected: true, pid: transport.pid ?? null });

async function run(step) {
  switch (step.op) {
    case "list":
      return { ok: true, tools: (await client.listTools()).tools };
    case "call": {
      const options = { timeout: 60000 };
      // Asks the server for progress (the SDK sends a progress token only with a callback).
      if (step.progress) options.onprogress = () => {};
      callProgress = { updates: [], answered: false };
      const params = { name: step.name, arguments: step.args ?? {} };
      if (step.meta) params._meta = step.meta;
      const result = await client.callTool(params, undefined, options);
      const progress = callProgress.updates;
      callProgress = null;
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
    case "templates":
      return { ok: true, templates: (await client.listResourceTemplates()).resourceTemplates };
    case "complete":
      return { ok: true, result: await client.complete({ ref: step.ref, argument: step.argument }) };
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
    case "set_level":
      await client.setLoggingLevel(step.level);
      return { ok: true };
    case "wait_logs":
      return { ok: true, logs: await waitFor(logs, step.count, step.timeout_ms) };
    case "subscribe":
      await client.subscribeResource({ uri: step.uri });
      return { ok: true };
    case "unsubscribe":
      await client.unsubscribeResource({ uri: step.uri });
      return { ok: true };
    case "wait_updated":
      return { ok: true, uris: await waitFor(updated, step.count, step.timeout_ms) };
    case "capabilities":
      return { ok: true, capabilities: client.getServerCapabilities() };
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

/// The Python SDK client driver.
pub(crate) const PY_DRIVER: &str = r#"
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

/// Which SDK drives the client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Sdk {
    TypeScript,
    Python,
}

/// One SDK client, driven step by step.
pub(crate) struct SdkClient {
    pub child: ChildGuard,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    pub sdk: Sdk,
    /// The server's pid when the client started it (TypeScript over stdio).
    pub server_pid: Option<u32>,
}

impl SdkClient {
    /// Start `sdk`'s driver with `config` (`{"transport": "stdio", "command", "args"}` or
    /// `{"transport": "http", "url", "token"?}`), its script written into `dir`; `isolate`
    /// prepares the driver's environment. Returns once the client is connected.
    pub(crate) fn start(
        sdk: Sdk,
        dir: &Path,
        mut config: Value,
        isolate: impl FnOnce(&mut Command),
    ) -> SdkClient {
        let mut command = match sdk {
            Sdk::TypeScript => {
                let script = dir.join("driver.mjs");
                std::fs::write(&script, TS_DRIVER).unwrap();
                config["sdk"] = json!(super::typescript_sdk());
                let mut command = Command::new("node");
                command.arg(script).arg(config.to_string());
                command
            }
            Sdk::Python => {
                let script = dir.join("driver.py");
                std::fs::write(&script, PY_DRIVER).unwrap();
                let mut command = Command::new(super::python_mcp());
                command.arg(script).arg(config.to_string());
                command
            }
        };
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        isolate(&mut command);
        let mut child = ChildGuard::spawn(&mut command);
        let stdin = child.0.stdin.take();
        let lines = line_channel(child.0.stdout.take().expect("driver stdout"));
        let mut client = SdkClient {
            child,
            stdin,
            lines,
            sdk,
            server_pid: None,
        };
        let hello = client.read();
        assert_eq!(hello["connected"], true, "{sdk:?} did not connect: {hello}");
        client.server_pid = hello["pid"].as_u64().map(|pid| pid as u32);
        client
    }

    /// The driver's next answer.
    pub(crate) fn read(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(STEP_BOUND)
            .unwrap_or_else(|e| panic!("{:?} driver gave no answer: {e}", self.sdk));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad driver line {line}: {e}"))
    }

    /// Run one step; panics if the driver reports a failure.
    pub(crate) fn step(&mut self, step: Value) -> Value {
        let answer = self.try_step(step.clone());
        assert_eq!(
            answer["ok"], true,
            "{:?} step {step} failed: {answer}",
            self.sdk
        );
        answer
    }

    /// Run one step and return the answer, failed or not.
    pub(crate) fn try_step(&mut self, step: Value) -> Value {
        let stdin = self.stdin.as_mut().expect("driver stdin open");
        writeln!(stdin, "{step}").expect("write to driver");
        stdin.flush().expect("flush driver stdin");
        self.read()
    }

    /// `tools/list`: the tools as the client got them.
    pub(crate) fn tools(&mut self) -> Vec<Value> {
        self.step(json!({"op": "list"}))["tools"]
            .as_array()
            .expect("tools")
            .clone()
    }

    /// `tools/list`: the names only.
    pub(crate) fn tool_names(&mut self) -> Vec<String> {
        self.tools()
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// `tools/call`; panics if the client reports a protocol error.
    pub(crate) fn call(&mut self, name: &str, args: Value) -> Value {
        self.step(json!({"op": "call", "name": name, "args": args}))["result"].clone()
    }

    /// Wait (bounded) for `notifications/tools/list_changed`; returns how many came.
    pub(crate) fn wait_list_changed(&mut self) -> u64 {
        self.step(json!({"op": "wait_list_changed", "timeout_ms": 15000}))["count"]
            .as_u64()
            .unwrap_or(0)
    }

    /// Close the session and wait (bounded) for the driver to exit.
    pub(crate) fn close(mut self) {
        self.step(json!({"op": "close"}));
        self.close_input();
    }

    /// End the session from the client side by exiting the driver (which closes a stdio
    /// server's stdin), without a protocol goodbye; returns once the driver has exited.
    pub(crate) fn close_input(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.child.0.try_wait().ok().flatten().is_none() {
            assert!(
                Instant::now() < deadline,
                "{:?} driver did not exit",
                self.sdk
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The text blocks of a tool result, joined.
pub(crate) fn text(result: &Value) -> String {
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

/// A gateway test's world: a temp dir holding the backends' config (`mcp.json`), and an
/// isolated home with a project directory for every process the test starts.
pub(crate) struct ServeWorld {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

impl ServeWorld {
    /// Write `servers` (the `mcpServers` object) into `dir` and make the isolated home.
    pub(crate) fn with_servers(dir: tempfile::TempDir, servers: Value) -> ServeWorld {
        let config = dir.path().join("mcp.json");
        let text = serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap();
        std::fs::write(&config, text).unwrap();
        std::fs::create_dir_all(dir.path().join("home/project")).unwrap();
        ServeWorld { dir, config }
    }

    /// `name` inside the world's directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Isolate `command`'s environment (home, configs and tool cache of this test only).
    pub(crate) fn isolate(&self, command: &mut Command) {
        let home = self.path("home");
        isolate_env(command, &home);
        command.current_dir(home.join("project"));
    }

    /// `mcpr` arguments that serve exactly this world's config.
    pub(crate) fn serve_args(&self, extra: &[&str]) -> Vec<String> {
        let mut args = vec![
            "--strict-config".to_owned(),
            "--config".to_owned(),
            self.config.to_string_lossy().into_owned(),
            "serve".to_owned(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    }

    /// Start `mcpr serve --http 127.0.0.1:0` with `extra` flags and `env`; returns it and its
    /// URL.
    pub(crate) fn http_gateway(
        &self,
        extra: &[&str],
        env: &[(&str, &str)],
    ) -> (ChildGuard, String) {
        let mut args = vec!["--http", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut command = Command::new(MCPR);
        command
            .args(self.serve_args(&args))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        self.isolate(&mut command);
        for (key, value) in env {
            command.env(key, value);
        }
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

    /// Start `sdk`'s client against `mcpr serve` over stdio with `extra` flags, or against
    /// the running HTTP gateway at `url` (with a bearer `token`).
    pub(crate) fn connect(&self, sdk: Sdk, target: Target<'_>) -> SdkClient {
        let config = match target {
            Target::Stdio(extra) => {
                json!({ "transport": "stdio", "command": MCPR, "args": self.serve_args(extra) })
            }
            Target::Http(url, token) => json!({ "transport": "http", "url": url, "token": token }),
        };
        SdkClient::start(sdk, self.dir.path(), config, |command| {
            self.isolate(command)
        })
    }
}

/// Where a client connects.
pub(crate) enum Target<'a> {
    /// Start `mcpr serve` over stdio with these arguments.
    Stdio(&'a [&'a str]),
    /// A running HTTP gateway, with a bearer token or none.
    Http(&'a str, Option<&'a str>),
}
