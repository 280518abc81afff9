//! Real clients through `mcpr serve` in front of `mcpr mock --resources --notify-tools` (stdio):
//! progress, cancellation, log lines and resource subscriptions go both ways, in both eras
//! (and mcpr's own client answers a backend's question during a call).
//!
//! - the TypeScript SDK 1.32 client (`initialize` era), over stdio and over HTTP;
//! - mcpr's own client (`McpClient`), in the `initialize` era and in 2026-07-28;
//! - the Python SDK 2.3 client in `auto` mode (2026-07-28).
//!
//! The backend records every line it receives (`--record`), which shows what reached it:
//! one `resources/subscribe` however many clients subscribe, `notifications/cancelled` when a
//! client cancels.

mod support;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::cache::ToolCache;
use mcp_runtime::client::{
    CallOptions, ClientError, ClientEvent, ConnectOptions, Era, McpClient, ProgressUpdate,
};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use support::sdk::{Sdk, ServeWorld, Target, text};
use support::{MCPR, temp_dir};

/// The resource the tests subscribe to (the mock names its resources after `--name`).
const URI: &str = "mock://mcpr-mock/public";

/// A world with one backend `m`: the mock with logging and resource subscriptions, recording
/// what it receives into `m.record`.
fn world() -> ServeWorld {
    world_with(&[])
}

/// [`world`], the mock started with `flags` too.
fn world_with(flags: &[&str]) -> ServeWorld {
    let dir = temp_dir();
    let record = dir.path().join("m.record");
    let mut args = vec![json!("mock"), json!("--resources"), json!("--notify-tools")];
    args.extend(flags.iter().map(|flag| json!(flag)));
    args.extend([json!("--record"), json!(record)]);
    let servers = json!({"m": {"command": MCPR, "args": args}});
    ServeWorld::with_servers(dir, servers)
}

/// What the backend received so far.
fn record(world: &ServeWorld) -> String {
    std::fs::read_to_string(world.path("m.record")).unwrap_or_default()
}

/// Wait (bounded) until the backend received `count` lines containing `needle`.
fn wait_recorded(world: &ServeWorld, needle: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = record(world).matches(needle).count();
        if seen >= count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the backend received {seen} × {needle}, expected {count}:\n{}",
            record(world)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Everything the TypeScript client is asked, over one target.
fn typescript_session(world: &ServeWorld, target: Target<'_>) {
    let mut client = world.connect(Sdk::TypeScript, target);
    let names = client.tool_names();
    for name in ["mcp_m_echo", "mcp_m_log", "mcp_m_touch", "mcp_m_progress"] {
        assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
    }
    let capabilities = client.step(json!({"op": "capabilities"}))["capabilities"].clone();
    assert!(capabilities["logging"].is_object(), "{capabilities}");
    assert_eq!(
        capabilities["resources"]["subscribe"], true,
        "{capabilities}"
    );

    assert_eq!(
        text(&client.call("mcp_m_echo", json!({"text": "hi"}))),
        "hi"
    );

    let progress = client.step(json!({"op": "call", "name": "mcp_m_progress",
        "args": {"steps": 3, "interval_ms": 10}, "progress": true}));
    assert_eq!(text(&progress["result"]), "done", "{progress}");
    assert_eq!(
        progress["progress"].as_array().map(Vec::len),
        Some(3),
        "{progress}"
    );

    let cancelled = client.step(json!({"op": "cancel", "name": "mcp_m_sleep",
        "args": {"ms": 60000}, "after_ms": 300}));
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    wait_recorded(world, "notifications/cancelled", 1);

    client.step(json!({"op": "set_level", "level": "info"}));
    wait_recorded(world, "logging/setLevel", 1);
    let logged = client.call(
        "mcp_m_log",
        json!({"text": "hello from m", "level": "warning"}),
    );
    assert_eq!(text(&logged), "logged");
    let logs =
        client.step(json!({"op": "wait_logs", "count": 1, "timeout_ms": 15000}))["logs"].clone();
    assert_eq!(
        logs,
        json!([{"level": "warning", "logger": "m/mock", "data": "hello from m"}])
    );
    // Below the level the client asked for: the backend was told, and sends nothing.
    let quiet = client.call("mcp_m_log", json!({"text": "noise", "level": "debug"}));
    assert_eq!(text(&quiet), "below the log level");

    client.step(json!({"op": "subscribe", "uri": URI}));
    wait_recorded(world, "resources/subscribe", 1);
    assert_eq!(
        text(&client.call("mcp_m_touch", json!({"uri": URI}))),
        format!("updated {URI}")
    );
    let updated = client.step(json!({"op": "wait_updated", "count": 1, "timeout_ms": 15000}));
    assert_eq!(updated["uris"], json!([URI]), "{updated}");
    client.step(json!({"op": "unsubscribe", "uri": URI}));
    wait_recorded(world, "resources/unsubscribe", 1);
    client.close();
}

/// The TypeScript SDK 1.32 client over stdio: list, call, progress, cancel, a log line, a
/// resource subscription and its update.
#[test]
fn a_typescript_client_over_stdio_gets_progress_cancellation_logs_and_updates() {
    let world = world();
    typescript_session(&world, Target::Stdio(&[]));
}

/// The same over streamable HTTP.
#[test]
fn a_typescript_client_over_http_gets_progress_cancellation_logs_and_updates() {
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    typescript_session(&world, Target::Http(&url, None));
}

/// Two clients subscribed to one resource: the backend is asked once, both get the update,
/// and the backend is released only when the last one leaves.
#[test]
fn a_subscription_shared_by_two_clients_reaches_the_backend_once() {
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let mut first = world.connect(Sdk::TypeScript, Target::Http(&url, None));
    let mut second = world.connect(Sdk::TypeScript, Target::Http(&url, None));
    first.step(json!({"op": "subscribe", "uri": URI}));
    second.step(json!({"op": "subscribe", "uri": URI}));
    wait_recorded(&world, "resources/subscribe", 1);

    first.call("mcp_m_touch", json!({"uri": URI}));
    for client in [&mut first, &mut second] {
        let updated = client.step(json!({"op": "wait_updated", "count": 1, "timeout_ms": 15000}));
        assert_eq!(updated["uris"], json!([URI]), "{updated}");
    }

    first.step(json!({"op": "unsubscribe", "uri": URI}));
    // Still one subscriber: the backend keeps sending.
    let touched = second.call("mcp_m_touch", json!({"uri": URI}));
    assert_eq!(text(&touched), format!("updated {URI}"));
    let updated = second.step(json!({"op": "wait_updated", "count": 1, "timeout_ms": 15000}));
    assert_eq!(updated["uris"], json!([URI]), "{updated}");
    assert_eq!(record(&world).matches("resources/subscribe").count(), 1);
    assert!(!record(&world).contains("resources/unsubscribe"));

    second.step(json!({"op": "unsubscribe", "uri": URI}));
    wait_recorded(&world, "resources/unsubscribe", 1);
    first.close();
    second.close();
}

/// A backend that crashes and is started again is asked again for the subscriptions and the
/// log level its clients had: updates and log lines keep coming.
#[test]
fn a_reconnected_backend_is_subscribed_again() {
    // Each backend process crashes on its second call.
    let world = world_with(&["--crash-after", "1"]);
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let mut client = world.connect(Sdk::TypeScript, Target::Http(&url, None));
    client.step(json!({"op": "set_level", "level": "info"}));
    client.step(json!({"op": "subscribe", "uri": URI}));
    wait_recorded(&world, "resources/subscribe", 1);
    // The first call is answered, the second one crashes the backend.
    assert_eq!(
        text(&client.call("mcp_m_echo", json!({"text": "one"}))),
        "one"
    );
    let _ = client.try_step(json!({"op": "call", "name": "mcp_m_echo", "args": {"text": "two"}}));

    wait_recorded(&world, "resources/subscribe", 2);
    wait_recorded(&world, "logging/setLevel", 2);
    let touched = client.step(json!({"op": "call", "name": "mcp_m_touch", "args": {"uri": URI}}));
    assert_eq!(
        text(&touched["result"]),
        format!("updated {URI}"),
        "{touched}"
    );
    let updated = client.step(json!({"op": "wait_updated", "count": 1, "timeout_ms": 15000}));
    assert_eq!(updated["uris"], json!([URI]), "{updated}");
    client.close();
}

/// Wait (bounded) for the first event `pick` accepts.
async fn next_event<T>(
    events: &mut mpsc::Receiver<ClientEvent>,
    mut pick: impl FnMut(ClientEvent) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let event = tokio::time::timeout_at(deadline, events.recv())
            .await
            .expect("no such event in time")
            .expect("the event channel closed");
        if let Some(found) = pick(event) {
            return found;
        }
    }
}

/// mcpr's own client against the HTTP gateway in `era`.
async fn mcpr_session(world: &ServeWorld, url: &str, era: Era) {
    let config = support::remote(url, None);
    let (sender, mut events) = mpsc::channel(mcp_runtime::client::EVENT_BUFFER);
    let mut options = ConnectOptions::default();
    options.events = Some(sender);
    // The era is remembered per server: telling the cache decides how the client opens.
    let cache = Arc::new(ToolCache::in_dir(&world.path(&format!("cache-{era:?}"))));
    cache.put_era("gateway", &config, era);
    options.cache = Some(cache);
    // The host answers the backend's questions: the answer names the era it was asked in.
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let name = format!("Ada in {era:?}");
    options.elicitation = Some(Arc::new(move |request| {
        seen.lock().unwrap().push(request.message.clone());
        let name = name.clone();
        Box::pin(async move {
            let mut content = serde_json::Map::new();
            content.insert("name".into(), json!(name));
            mcp_runtime::client::ElicitationResponse {
                action: mcp_runtime::client::ElicitationAction::Accept,
                content: Some(content),
            }
        })
    }));
    let client = McpClient::connect("gateway", &config, &options)
        .await
        .expect("connect to the gateway");
    assert_eq!(client.opening().era, era);
    let names: Vec<String> = client
        .list_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(names.iter().any(|n| n == "mcp_m_touch"), "{names:?}");

    let (progress, mut updates) = mpsc::channel::<ProgressUpdate>(16);
    let mut settings = CallOptions::default();
    settings.progress = Some(progress);
    let args = json!({"steps": 3, "interval_ms": 10});
    let output = client
        .call_tool("mcp_m_progress", args.as_object().cloned(), settings)
        .await
        .expect("progress call");
    assert_eq!(output.text(), "done");
    let mut seen = 0;
    while updates.try_recv().is_ok() {
        seen += 1;
    }
    assert_eq!(seen, 3, "progress updates through the gateway");

    // A question of the backend (an old-era server) reaches this client during the call: over
    // its session in the `initialize` era, as an `input_required` result it answers by
    // retrying in 2026-07-28.
    let output = client
        .call_tool("mcp_m_elicit", None, CallOptions::default())
        .await
        .expect("elicit call");
    assert_eq!(
        output.text(),
        format!("accept {}", json!({"name": format!("Ada in {era:?}")}))
    );
    assert_eq!(*asked.lock().unwrap(), ["What is your name?"]);

    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let before = record(world).matches("notifications/cancelled").count();
    let slept = client
        .call_tool(
            "mcp_m_sleep",
            json!({"ms": 60000}).as_object().cloned(),
            CallOptions::default().with_cancel(cancel),
        )
        .await;
    assert!(
        matches!(slept, Err(ClientError::Cancelled { .. })),
        "{slept:?}"
    );
    let world_ref = world;
    tokio::task::block_in_place(|| wait_recorded(world_ref, "notifications/cancelled", before + 1));

    // Below the default level (info): only what the client asked for lets it through.
    client
        .set_log_level("debug")
        .await
        .expect("logging/setLevel");
    let args = json!({"text": format!("hello in {era:?}"), "level": "debug"});
    let output = client
        .call_tool(
            "mcp_m_log",
            args.as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .expect("log call");
    assert_eq!(output.text(), "logged");
    let (logger, data) = next_event(&mut events, |event| match event {
        ClientEvent::Log { logger, data, .. } => Some((logger, data)),
        _ => None,
    })
    .await;
    assert_eq!(logger.as_deref(), Some("m/mock"));
    assert_eq!(data, json!(format!("hello in {era:?}")));

    client.subscribe_resource(URI).await.expect("subscribe");
    // A 2026-07-28 subscription is acknowledged before the gateway has asked the backend
    // (the acknowledgement opens the stream): wait until it has.
    tokio::task::block_in_place(|| wait_recorded(world_ref, "resources/subscribe", 1));
    let output = client
        .call_tool(
            "mcp_m_touch",
            json!({"uri": URI}).as_object().cloned(),
            CallOptions::default(),
        )
        .await
        .expect("touch");
    assert_eq!(output.text(), format!("updated {URI}"));
    let uri = next_event(&mut events, |event| match event {
        ClientEvent::ResourceUpdated { uri } => Some(uri),
        _ => None,
    })
    .await;
    assert_eq!(uri, URI);
    client.unsubscribe_resource(URI).await.expect("unsubscribe");
    client.close().await;
}

/// mcpr's own client, in the `initialize` era and in 2026-07-28 (each with a gateway and a
/// backend of its own, so that the log level one asked for does not help the other): it also
/// answers the backend's question during a call.
#[tokio::test(flavor = "multi_thread")]
async fn mcpr_clients_of_both_eras_get_progress_cancellation_logs_updates_and_questions() {
    for era in [Era::Legacy, Era::Modern] {
        let world = world_with(&["--elicit-tool"]);
        let (_gateway, url) = world.http_gateway(&[], &[]);
        mcpr_session(&world, &url, era).await;
    }
}

/// A Python SDK 2.3 client in `auto` mode: lists, calls with progress, gets a log line on
/// the call's stream, and cancels a slow call by cancelling its task.
const PY_CLIENT: &str = r#"
import asyncio, sys
from mcp.client.client import Client

logs = []

async def on_log(params):
    logs.append(params)

async def main():
    async with Client(sys.argv[1], mode="auto", log_level="info", logging_callback=on_log) as client:
        print("protocol", client.protocol_version, flush=True)
        tools = await client.list_tools()
        print("tools", " ".join(t.name for t in tools.tools), flush=True)
        steps = []
        async def on_progress(value, total, message):
            steps.append(value)
        result = await client.call_tool("mcp_m_progress", {"steps": 3, "interval_ms": 10}, progress_callback=on_progress)
        print("progress", result.content[0].text, len(steps), flush=True)
        result = await client.call_tool("mcp_m_log", {"text": "hello python", "level": "warning"})
        await asyncio.sleep(0.2)
        print("log", result.content[0].text, [(l.logger, l.data) for l in logs], flush=True)
        call = asyncio.create_task(client.call_tool("mcp_m_sleep", {"ms": 60000}))
        await asyncio.sleep(0.5)
        call.cancel()
        try:
            await call
        except asyncio.CancelledError:
            print("cancelled", flush=True)

asyncio.run(main())
"#;

/// The Python SDK 2.3 client (2026-07-28): list, call, progress, a log line, and a
/// cancellation that reaches the backend.
#[test]
fn a_python_sdk_2_3_client_gets_progress_logs_and_cancellation_in_2026_07_28() {
    let python = support::python_sdk_2();
    let world = world();
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let script = world.path("client.py");
    std::fs::write(&script, PY_CLIENT).expect("write the client");
    let (out, err) = support::run_client(
        Command::new(python).arg(&script).arg(&url),
        Duration::from_secs(120),
    );
    let expect = [
        "protocol 2026-07-28",
        "mcp_m_touch",
        "progress done 3",
        "log logged [('m/mock', 'hello python')]",
        "cancelled",
    ];
    for line in expect {
        assert!(out.contains(line), "{line} missing:\n{out}\n{err}");
    }
    wait_recorded(&world, "notifications/cancelled", 1);
}
