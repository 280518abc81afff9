//! A backend's questions through `mcpr serve` to clients of the `initialize` era (2025-11-25),
//! and back:
//!
//! - the TypeScript SDK 1.32 client, over stdio and over HTTP, answers the elicitation and
//!   sampling of a 2025-11-25 backend (the mock's `elicit` and `sample` tools send
//!   `elicitation/create` and `sampling/createMessage`) and those of a 2026-07-28 one (the conformance mock answers
//!   `input_required`); without the capabilities it gets the gateway's fallback;
//! - two clients whose calls ask at the same time through one streamable HTTP backend each
//!   get only their own question, and each backend call gets its own client's answer;
//! - a prompt whose 2026-07-28 backend asks first (`input_required` on `prompts/get`) reaches
//!   a session client, which is asked over its session.

mod support;

use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};
use support::sdk::{ServeWorld, text};
use support::{MCPR, temp_dir};

/// Bound on one client program.
const BOUND: Duration = Duration::from_secs(90);

/// A TypeScript SDK client program. Its config (first argument) names how to reach the
/// gateway (`transport`: `stdio` with `command`/`args`, or `http` with `url`), what it
/// declares and answers (`answers`: elicitation, filling each asked field it has a value for;
/// `sample`: the text of its sampling answer), an optional `barrier` (files in `dir`: each
/// client waits, when asked, until every client of `all` was asked) and the `steps` to run
/// (`{"tool", "args"}` or `{"prompt", "args"}`). One JSON line per step: the result, and
/// what the client was asked meanwhile.
const TS_CLIENT: &str = r#"
const cfg = JSON.parse(process.argv[2]);
const sdk = (path) => import(cfg.sdk + "/dist/esm/" + path);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");
const { ElicitRequestSchema, CreateMessageRequestSchema } = await sdk("types.js");
const fs = await import("node:fs");
const path = await import("node:path");

const out = (value) => process.stdout.write(JSON.stringify(value) + "\n");
const capabilities = {};
if (cfg.answers) capabilities.elicitation = {};
if (cfg.sample) capabilities.sampling = {};
const client = new Client({ name: "gateway-ask-ts", version: "1.0.0" }, { capabilities });
const asked = [];

async function barrier() {
  if (!cfg.barrier) return;
  fs.writeFileSync(path.join(cfg.barrier.dir, cfg.barrier.me), "");
  const deadline = Date.now() + 30000;
  while (!cfg.barrier.all.every((name) => fs.existsSync(path.join(cfg.barrier.dir, name)))) {
    if (Date.now() > deadline) throw new Error("the other clients were never asked");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

if (cfg.answers) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push({ elicitation: request.params.message });
    await barrier();
    const content = {};
    for (const field of Object.keys(request.params.requestedSchema?.properties ?? {})) {
      if (field in cfg.answers) content[field] = cfg.answers[field];
    }
    return { action: "accept", content };
  });
}
if (cfg.sample) {
  client.setRequestHandler(CreateMessageRequestSchema, async (request) => {
    asked.push({ sampling: request.params.messages.map((m) => m.content?.text ?? "").join("\n") });
    return { role: "assistant", content: { type: "text", text: cfg.sample }, model: "test-model" };
  });
}

const transport = cfg.transport === "stdio"
  ? new StdioClientTransport({ command: cfg.command, args: cfg.args, env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(cfg.url));
await client.connect(transport);
for (const step of cfg.steps) {
  try {
    const result = step.prompt
      ? await client.getPrompt({ name: step.prompt, arguments: step.args ?? {} }, { timeout: 60000 })
      : await client.callTool({ name: step.tool, arguments: step.args ?? {} }, undefined, { timeout: 60000 });
    out({ step, result, asked: asked.splice(0) });
  } catch (e) {
    out({ step, error: String(e?.message ?? e), asked: asked.splice(0) });
  }
}
await client.close();
process.exit(0);
"#;

/// Two backends: `m`, the mock with the `elicit` and `sample` tools (2025-11-25 only), and
/// `c`, the conformance mock (2026-07-28: its tools and a prompt answer `input_required`).
fn world() -> ServeWorld {
    ServeWorld::with_servers(
        temp_dir(),
        json!({
            "m": {"command": MCPR, "args": ["mock", "--elicit-tool", "--sample-tool"]},
            "c": {"command": MCPR, "args": ["mock", "--conformance"]},
        }),
    )
}

/// Run the TypeScript client with `config` (the keys of [`TS_CLIENT`]) in `world`; one value
/// per step.
fn run_ts(world: &ServeWorld, mut config: Value) -> Vec<Value> {
    let script = world.path("ask.mjs");
    if !script.exists() {
        std::fs::write(&script, TS_CLIENT).expect("write the client");
    }
    config["sdk"] = json!(support::typescript_sdk());
    let mut command = Command::new("node");
    command.arg(&script).arg(config.to_string());
    world.isolate(&mut command);
    let (out, err) = support::run_client(&mut command, BOUND);
    let lines: Vec<Value> = out
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}\n{err}")))
        .collect();
    assert_eq!(
        lines.len(),
        config["steps"].as_array().map_or(0, Vec::len),
        "{out}\n{err}"
    );
    lines
}

/// How the client reaches `mcpr serve` over stdio.
fn stdio(world: &ServeWorld) -> Value {
    json!({"transport": "stdio", "command": MCPR, "args": world.serve_args(&[])})
}

/// Config `base` with `extra`'s keys added.
fn with(mut base: Value, extra: Value) -> Value {
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
    base
}

/// What a step's result says (tool text, or the prompt's first message), or its error.
fn said(line: &Value) -> String {
    if let Some(error) = line["error"].as_str() {
        return format!("error: {error}");
    }
    let result = &line["result"];
    match result["messages"][0]["content"]["text"].as_str() {
        Some(prompt) => prompt.to_owned(),
        None => text(result),
    }
}

/// The steps of [`a_client_answers`], and what each must say.
fn answered_steps() -> (Value, Vec<&'static str>) {
    let steps = json!([
        {"tool": "mcp_m_elicit", "args": {"message": "Who calls m?"}},
        {"tool": "mcp_m_sample", "args": {"prompt": "Say hi"}},
        {"tool": "mcp_c_test_input_required_result_elicitation"},
        {"tool": "mcp_c_test_sampling", "args": {"prompt": "Say hello"}},
        {"prompt": "mcp_c_test_input_required_result_prompt"},
    ]);
    let expected = vec![
        r#"accept {"name":"Ada"}"#,
        "sampled hello from the client",
        "Hello, Ada!",
        "LLM response: hello from the client",
        "Prompt with context: tea time",
    ];
    (steps, expected)
}

/// A client that declares elicitation and sampling answers every backend's questions; each
/// answer reaches the backend that asked (which sends back what it received).
fn a_client_answers(world: &ServeWorld, target: Value) {
    let (steps, expected) = answered_steps();
    let config = with(
        target,
        json!({
            "answers": {"name": "Ada", "context": "tea time"},
            "sample": "hello from the client",
            "steps": steps,
        }),
    );
    let lines = run_ts(world, config);
    for (line, expected) in lines.iter().zip(&expected) {
        assert_eq!(said(line), *expected, "{line}");
    }
    assert_eq!(
        lines[0]["asked"],
        json!([{"elicitation": "Who calls m?"}]),
        "{}",
        lines[0]
    );
    assert_eq!(
        lines[1]["asked"],
        json!([{"sampling": "Say hi"}]),
        "{}",
        lines[1]
    );
    assert_eq!(
        lines[3]["asked"],
        json!([{"sampling": "Say hello"}]),
        "{}",
        lines[3]
    );
    assert_eq!(
        lines[4]["asked"],
        json!([{"elicitation": "What context should the prompt use?"}]),
        "{}",
        lines[3]
    );
}

#[test]
fn a_typescript_client_over_stdio_answers_the_questions_of_both_eras_backends() {
    let world = world();
    a_client_answers(&world, stdio(&world));
}

#[test]
fn a_typescript_client_over_http_answers_the_questions_of_both_eras_backends() {
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    a_client_answers(&world, json!({"transport": "http", "url": url}));
}

#[test]
fn a_typescript_client_without_the_capabilities_gets_the_gateways_fallback() {
    let world = world();
    let steps = json!([
        {"tool": "mcp_m_elicit"},
        {"tool": "mcp_m_sample"},
        {"tool": "mcp_c_test_input_required_result_elicitation"},
        {"prompt": "mcp_c_test_input_required_result_prompt"},
    ]);
    let lines = run_ts(&world, with(stdio(&world), json!({"steps": steps})));
    // The 2025-11-25 backend's request is declined by the gateway.
    assert_eq!(said(&lines[0]), "decline", "{}", lines[0]);
    // Its sampling request is refused (nobody offers sampling): the backend sees the error.
    assert_eq!(lines[1]["result"]["isError"], true, "{}", lines[1]);
    assert!(
        said(&lines[1]).contains("sampling/createMessage failed"),
        "{}",
        lines[1]
    );
    // The 2026-07-28 backend is told the client cannot elicit; the gateway declines for it.
    assert_eq!(said(&lines[2]), "Hello, unknown!", "{}", lines[2]);
    assert_eq!(
        said(&lines[3]),
        "Prompt with context: unknown",
        "{}",
        lines[3]
    );
    for line in &lines {
        assert_eq!(line["asked"], json!([]), "{line}");
    }
}

/// Two clients call the elicit tool of one streamable HTTP backend at the same time: neither
/// answers until both were asked, so both backend calls wait for their answers at once. Each
/// client gets only its own question, and each backend call its own client's answer.
#[test]
fn two_clients_asking_at_once_through_one_http_backend_each_get_their_own_question() {
    let mut command = Command::new(MCPR);
    command.args(["mock", "--http", "127.0.0.1:0", "--elicit-tool"]);
    let (_backend, backend) = support::spawn_listening(&mut command);
    let world = ServeWorld::with_servers(temp_dir(), json!({"m": {"url": backend}}));
    let (_gateway, url) = world.http_gateway(&[], &[]);
    // Written before the clients start, which share it.
    std::fs::write(world.path("ask.mjs"), TS_CLIENT).expect("write the client");
    let barrier = world.path("barrier");
    std::fs::create_dir_all(&barrier).expect("barrier dir");
    let names = ["Ada", "Grace"];
    let clients: Vec<_> = names
        .iter()
        .map(|name| {
            let config = json!({
                "transport": "http",
                "url": url,
                "answers": {"name": name},
                "barrier": {"dir": barrier, "me": name, "all": names},
                "steps": [{"tool": "mcp_m_elicit", "args": {"message": format!("Are you {name}?")}}],
            });
            let world = &world;
            (name, config, world)
        })
        .collect();
    let lines: Vec<(String, Vec<Value>)> = std::thread::scope(|scope| {
        let running: Vec<_> = clients
            .into_iter()
            .map(|(name, config, world)| {
                scope.spawn(move || (name.to_string(), run_ts(world, config)))
            })
            .collect();
        running
            .into_iter()
            .map(|client| client.join().expect("a client thread"))
            .collect()
    });
    for (name, lines) in lines {
        let line = &lines[0];
        assert_eq!(
            said(line),
            format!(r#"accept {{"name":"{name}"}}"#),
            "{name}: {line}"
        );
        assert_eq!(
            line["asked"],
            json!([{"elicitation": format!("Are you {name}?")}]),
            "{name}: {line}"
        );
    }
}
