//! A backend's questions during a call (elicitation, sampling, roots) reach the gateway client
//! that made the call, in both eras, and come back to the backend:
//!
//! - real SDK clients: the Python SDK 2.3 (`auto`, so 2026-07-28: `input_required` results)
//!   and the Python SDK 1.x (a 2025-11-25 session: requests over the session), each against a
//!   2026-07-28 backend (the conformance mock, whose tools answer `input_required`) and a
//!   2025-11-25 one (the plain mock's `elicit` tool, which sends `elicitation/create`);
//! - a raw 2026-07-28 client over stdio for what no SDK sends: a forged, replayed or expired
//!   `requestState`, answers for a key nobody asked, no declared capability;
//! - clients that never answer (raw, since an SDK answers): the call ends within its timeout
//!   and the backend's call is cancelled;
//! - a prompt whose 2025-11-25 backend asks during `prompts/get` (the mock's `ask` prompt):
//!   a 2026-07-28 client gets `input_required` and a state bound to the prompt, which its
//!   retry spends; a session client that cancels while asked has the backend's request
//!   cancelled.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::stateless::{Stateless, accept, asked, assert_invalid_params, text};

/// Bound on a client's whole run.
const BOUND: Duration = Duration::from_secs(60);

/// Two backends: `c`, the conformance mock (2026-07-28, `input_required`), and `m`, the plain
/// mock (2025-11-25 only) with the `elicit` tool, recording what it receives into `m.jsonl`.
fn world() -> ServeWorld {
    let dir = support::temp_dir();
    let record = dir.path().join("m.jsonl");
    ServeWorld::with_servers(
        dir,
        json!({
            "c": {"command": support::MCPR, "args": ["mock", "--conformance"]},
            "m": {"command": support::MCPR, "args": [
                "mock", "--elicit-tool", "--elicit-prompt", "--record", record.to_string_lossy(),
            ]},
        }),
    )
}

/// Whether the plain mock received `notifications/cancelled`, waiting for it a while.
fn backend_cancelled(world: &ServeWorld) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let record = std::fs::read_to_string(world.path("m.jsonl")).unwrap_or_default();
        if record.contains("notifications/cancelled") {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_2026_client_answers_a_2026_backend_and_its_state_is_spent_by_the_answer() {
    let world = world();
    let mut client = Stateless::start(&world, &[], json!({"elicitation": {}}));
    let tool = "mcp_c_test_input_required_result_elicitation";
    let (state, keys) = asked(&client.call(tool, json!({})));
    assert_eq!(keys, ["user_name"]);
    let retry = json!({"requestState": state, "inputResponses": {"user_name": accept("Ada")}});
    let done = client.call(tool, retry.clone());
    assert_eq!(text(&done), "Hello, Ada!", "{done}");
    // A 2026-07-28 result says what it is.
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    // The same answer again: the state was spent.
    let replayed = client.call(tool, retry);
    assert_invalid_params(&replayed, "no call waiting");
}

#[test]
fn a_2026_client_answers_a_2025_backends_request() {
    let world = world();
    let mut client = Stateless::start(&world, &[], json!({"elicitation": {}}));
    let (state, keys) = asked(&client.call("mcp_m_elicit", json!({})));
    assert_eq!(keys.len(), 1, "{keys:?}");
    let retry = json!({"requestState": state, "inputResponses": {keys[0].clone(): accept("Ada")}});
    let done = client.call("mcp_m_elicit", retry);
    assert_eq!(text(&done), r#"accept {"name":"Ada"}"#, "{done}");
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
}

#[test]
fn a_2026_clients_capabilities_are_read_from_each_of_its_requests() {
    let world = world();
    let mut client = Stateless::start(&world, &[], json!({"elicitation": {}}));
    // Declared with this call, and with its retry: the client is asked, and answers.
    let elicited = |client: &mut Stateless| {
        let (state, keys) = asked(&client.call("mcp_m_elicit", json!({})));
        let retry =
            json!({"requestState": state, "inputResponses": {keys[0].clone(): accept("Ada")}});
        let done = client.call("mcp_m_elicit", retry);
        assert_eq!(text(&done), r#"accept {"name":"Ada"}"#, "{done}");
    };
    elicited(&mut client);
    // Not with this one (the same session, the same metadata otherwise): the gateway declines
    // for it.
    client.capabilities = Some(json!({}));
    let done = client.call("mcp_m_elicit", json!({}));
    assert_eq!(text(&done), "decline", "{done}");
    // With this one again.
    client.capabilities = Some(json!({"elicitation": {}}));
    elicited(&mut client);
}

#[test]
fn a_forged_request_state_is_refused_and_the_real_one_still_works() {
    let world = world();
    let mut client = Stateless::start(&world, &[], json!({"elicitation": {}}));
    let tool = "mcp_c_test_input_required_result_elicitation";
    let (state, _) = asked(&client.call(tool, json!({})));
    let (data, mac) = state.split_once('.').expect("data.mac");
    let flipped = if mac.starts_with('0') { "1" } else { "0" };
    for forged in [
        format!("{data}.{flipped}{}", &mac[1..]),
        format!("x{state}"),
        "not a state".to_owned(),
    ] {
        let retry = json!({"requestState": forged, "inputResponses": {"user_name": accept("Eve")}});
        let refused = client.call(tool, retry);
        assert_invalid_params(&refused, "integrity");
    }
    let retry = json!({"requestState": state, "inputResponses": {"user_name": accept("Ada")}});
    assert_eq!(text(&client.call(tool, retry)), "Hello, Ada!");
}

#[test]
fn answers_for_a_key_nobody_asked_are_refused_and_a_missing_one_is_asked_again() {
    let world = world();
    let mut client = Stateless::start(&world, &[], json!({"elicitation": {}}));
    let tool = "mcp_c_test_input_required_result_elicitation";
    let (state, _) = asked(&client.call(tool, json!({})));
    let retry = json!({"requestState": state, "inputResponses": {"bogus": accept("Eve")}});
    let refused = client.call(tool, retry);
    assert_invalid_params(&refused, "inputResponses.bogus");
    let again = client.call(tool, json!({"requestState": state}));
    assert_eq!(asked(&again).1, ["user_name"], "{again}");
    let retry = json!({"requestState": state, "inputResponses": {"user_name": accept("Ada")}});
    assert_eq!(text(&client.call(tool, retry)), "Hello, Ada!");
}

#[test]
fn a_client_without_the_capability_gets_the_gateways_fallback() {
    let world = world();
    let mut client = Stateless::start(&world, &[], json!({}));
    // The 2026-07-28 backend is told the client cannot elicit: the gateway declines for it.
    let done = client.call("mcp_c_test_input_required_result_elicitation", json!({}));
    assert_eq!(text(&done), "Hello, unknown!", "{done}");
    // The 2025-11-25 backend's request is declined by the gateway.
    let done = client.call("mcp_m_elicit", json!({}));
    assert_eq!(text(&done), "decline", "{done}");
    // A backend that requires a capability the client lacks refuses with -32021, as sent.
    let refused = client.call("mcp_c_test_missing_capability", json!({}));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
}

#[test]
fn a_2026_client_that_never_answers_has_its_call_expire_and_the_backend_call_cancelled() {
    let world = world();
    let mut client = Stateless::start(&world, &["--timeout", "1500"], json!({"elicitation": {}}));
    let (state, keys) = asked(&client.call("mcp_m_elicit", json!({})));
    assert!(
        backend_cancelled(&world),
        "the backend's call was not cancelled"
    );
    let retry = json!({"requestState": state, "inputResponses": {keys[0].clone(): accept("Ada")}});
    let late = client.call("mcp_m_elicit", retry);
    assert_invalid_params(&late, "expired");
}

/// Python SDK client scripts: the 2.3 `Client` (over HTTP, `auto`) and a 1.x `ClientSession`
/// (starting `mcpr serve` over stdio). Each answers elicitations with `{"name": "Ada"}`, calls
/// each tool named on its command line (the 2.3 client gets `prompt:<name>` as a prompt) and
/// prints one JSON line per result.
const PY_CLIENT_2: &str = r#"
import asyncio, json, sys
import mcp.types as types
from mcp.client.client import Client

async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})

async def main():
    async with Client(sys.argv[1], mode="auto", elicitation_callback=elicit) as client:
        print(json.dumps({"protocol": client.protocol_version}), flush=True)
        for tool in sys.argv[2:]:
            if tool.startswith("prompt:"):
                result = await client.get_prompt(tool[len("prompt:"):])
                print(json.dumps({"prompt": tool, "text": result.messages[0].content.text}), flush=True)
                continue
            result = await client.call_tool(tool, {})
            print(json.dumps({"tool": tool, "text": result.content[0].text}), flush=True)

asyncio.run(main())
"#;

const PY_CLIENT_1: &str = r#"
import asyncio, json, os, sys
import mcp.types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def elicit(context, params):
    return types.ElicitResult(action="accept", content={"name": "Ada"})

async def main():
    config = json.loads(sys.argv[1])
    params = StdioServerParameters(command=config["command"], args=config["args"], env=dict(os.environ))
    async with stdio_client(params, errlog=sys.stderr) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            init = await session.initialize()
            print(json.dumps({"protocol": init.protocolVersion}), flush=True)
            for tool in sys.argv[2:]:
                result = await session.call_tool(tool, {})
                print(json.dumps({"tool": tool, "text": result.content[0].text,
                                  "isError": bool(result.isError)}), flush=True)
            # Out before the SDK's own teardown: SDK 1.x fails with BrokenResourceError when a
            # message (such as the gateway's tools/list_changed once a backend still
            # connecting is up) arrives after the session closed but before the process did.
            os._exit(0)

asyncio.run(main())
os._exit(0)
"#;

/// Run `python` on `script` with `args`, bounded; its stdout as JSON lines.
fn run_python(
    world: &ServeWorld,
    python: &std::path::Path,
    script: &str,
    args: &[String],
) -> Vec<Value> {
    let path = world.path("client.py");
    std::fs::write(&path, script).expect("write the client");
    let mut command = Command::new(python);
    command.arg(&path).args(args);
    world.isolate(&mut command);
    let (out, err) = support::run_client(&mut command, BOUND);
    out.lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}\n{err}")))
        .collect()
}

#[test]
fn a_python_sdk_2_3_client_answers_elicitations_of_both_eras_backends_in_calls_and_prompts() {
    let python = support::python_sdk_2();
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let lines = run_python(
        &world,
        &python,
        PY_CLIENT_2,
        &[
            url,
            "mcp_c_test_input_required_result_elicitation".into(),
            "mcp_m_elicit".into(),
            format!("prompt:{ASK_PROMPT}"),
        ],
    );
    assert_eq!(lines[0]["protocol"], "2026-07-28", "{lines:?}");
    assert_eq!(lines[1]["text"], "Hello, Ada!", "{lines:?}");
    assert_eq!(lines[2]["text"], r#"accept {"name":"Ada"}"#, "{lines:?}");
    // A 2025-11-25 backend that asks during `prompts/get`: the client gets `input_required`.
    assert_eq!(
        lines[3]["text"], r#"Prompt for accept {"name":"Ada"}"#,
        "{lines:?}"
    );
}

#[test]
fn a_python_sdk_1_client_answers_elicitations_of_both_eras_backends() {
    let python = support::python_mcp();
    let world = world();
    let config = json!({"command": support::MCPR, "args": world.serve_args(&[])});
    let lines = run_python(
        &world,
        &python,
        PY_CLIENT_1,
        &[
            config.to_string(),
            "mcp_m_elicit".into(),
            "mcp_c_test_input_required_result_elicitation".into(),
        ],
    );
    assert_eq!(lines[0]["protocol"], "2025-11-25", "{lines:?}");
    assert_eq!(lines[1]["text"], r#"accept {"name":"Ada"}"#, "{lines:?}");
    assert_eq!(lines[2]["text"], "Hello, Ada!", "{lines:?}");
}

#[test]
fn a_session_client_that_never_answers_gets_an_error_within_the_call_timeout() {
    let world = world();
    let mut client = Stateless::start_session(&world, &["--timeout", "1500"]);
    // The backend's `elicitation/create` reaches the client, which never answers it.
    let listed = client.request("prompts/list", json!({}));
    assert!(listed.get("result").is_some(), "{listed}");
}

/// The prompt of the 2025-11-25 mock that asks during `prompts/get`.
const ASK_PROMPT: &str = "mcp_m_ask";

#[test]
fn a_2026_client_answers_a_2025_backend_that_asks_during_a_prompt() {
    let world = world();
    let mut client = Stateless::start(&world, &[], json!({"elicitation": {}}));
    let (state, keys) = asked(&client.prompt(ASK_PROMPT, json!({})));
    assert_eq!(keys.len(), 1, "{keys:?}");
    let answers = json!({keys[0].clone(): accept("Ada")});
    // The state is the prompt's: a tool call cannot take it.
    let stolen = client.call(
        "mcp_m_elicit",
        json!({"requestState": state, "inputResponses": answers}),
    );
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    // A forged state is refused.
    let (data, mac) = state.split_once('.').expect("data.mac");
    let flipped = if mac.starts_with('0') { "1" } else { "0" };
    let forged = format!("{data}.{flipped}{}", &mac[1..]);
    let refused = client.prompt(
        ASK_PROMPT,
        json!({"requestState": forged, "inputResponses": answers}),
    );
    assert_invalid_params(&refused, "integrity");
    // The answer reaches the backend's waiting request, and the prompt comes back.
    let retry = json!({"requestState": state, "inputResponses": answers});
    let done = client.prompt(ASK_PROMPT, retry.clone());
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"], r#"Prompt for accept {"name":"Ada"}"#,
        "{done}"
    );
    // The same answer again: the state was spent.
    let replayed = client.prompt(ASK_PROMPT, retry);
    assert_invalid_params(&replayed, "no call waiting");
}

#[test]
fn a_session_client_that_cancels_a_prompt_while_asked_has_the_backend_request_cancelled() {
    let world = world();
    let mut client = Stateless::start_session(&world, &[]);
    client.send(json!({"jsonrpc": "2.0", "id": 7, "method": "prompts/get",
                       "params": {"name": ASK_PROMPT}}));
    let question = client.asked_request("elicitation/create");
    assert_eq!(
        question["params"]["message"], "Who is the prompt for?",
        "{question}"
    );
    client.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": 7, "reason": "changed my mind"}}),
    );
    assert!(
        backend_cancelled(&world),
        "the backend's prompts/get was not cancelled"
    );
    // The gateway goes on.
    let done = client.request(
        "tools/call",
        json!({"name": "mcp_m_elicit", "arguments": {}}),
    );
    assert!(
        done.get("result").is_some() || done.get("error").is_some(),
        "{done}"
    );
}
