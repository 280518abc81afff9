//! MCP Apps (`io.modelcontextprotocol/ui`) through `mcpr serve`, with real processes: two
//! `mcpr mock --app` backends serving the SAME `ui://` URI behind one gateway (stdio and
//! `--http`), and the TypeScript SDK client listing the tools and reading each app.
//!
//! Each tool's `_meta` reaches the client whole, its `ui.resourceUri` namespaced by its server;
//! each read returns that backend's own HTML byte for byte; a backend that offers a URI shaped
//! like another backend's namespaced one gets its own, never the other's; a scoped view hides
//! the apps of the servers it hides; a presented app template completes through its own
//! backend, and a subscription to a presented app follows its own backend. The CLI's side: `mcpr tools --json` and `--long`, and
//! `mcpr resource ... --output FILE`.

mod support;

use std::process::Stdio;

use serde_json::{Value, json};
use support::sdk::{Sdk, SdkClient, ServeWorld, Target};
use support::{MCPR, temp_dir, text};

/// The app URI both backends serve.
const APP: &str = "ui://widgets/app.html";

/// A world with the mock backends `servers` (name, `--app` URI), each named after its server
/// and recording what it receives into `<name>.record`.
fn world(servers: &[(&str, &str)]) -> ServeWorld {
    world_with(servers, &[])
}

/// [`world`], each backend also given the mock options `extra`.
fn world_with(servers: &[(&str, &str)], extra: &[&str]) -> ServeWorld {
    let dir = temp_dir();
    let mut config = serde_json::Map::new();
    for (name, app) in servers {
        let record = dir.path().join(format!("{name}.record"));
        let record = record.to_str().expect("a UTF-8 path");
        let mut args = vec![
            "mock",
            "--name",
            name,
            "--app",
            app,
            "--echo-meta",
            "--record",
            record,
        ];
        args.extend(extra);
        config.insert(name.to_string(), json!({"command": MCPR, "args": args}));
    }
    ServeWorld::with_servers(dir, Value::Object(config))
}

/// What backend `name` received so far.
fn record(world: &ServeWorld, name: &str) -> String {
    std::fs::read_to_string(world.path(&format!("{name}.record"))).unwrap_or_default()
}

/// The HTML backend `server`'s app returns, read from the backend alone with
/// `mcpr resource SERVER URI --output FILE`: what the gateway must hand on unchanged.
fn direct_html(world: &ServeWorld, server: &str, uri: &str) -> Vec<u8> {
    let file = world.path(&format!("{server}.html"));
    let mut command = std::process::Command::new(MCPR);
    command
        .args(["--strict-config", "--config"])
        .arg(&world.config)
        .args(["resource", server, uri, "--output"])
        .arg(&file)
        .stdin(Stdio::null());
    world.isolate(&mut command);
    let output = command.output().expect("run mcpr resource");
    assert!(
        output.status.success(),
        "mcpr resource failed: {}",
        text(&output.stderr)
    );
    assert!(
        output.stdout.is_empty(),
        "--output prints nothing: {}",
        text(&output.stdout)
    );
    std::fs::read(&file).expect("the saved HTML")
}

/// The tool exposed as `name` in `tools`.
fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {tools:?}"))
}

/// `resources/read` of `uri`: the one content's text and MIME type.
fn read(client: &mut SdkClient, uri: &str) -> (String, String) {
    let answer = client.step(json!({"op": "read", "uri": uri}));
    let contents = answer["result"]["contents"].as_array().expect("contents");
    assert_eq!(contents.len(), 1, "{answer}");
    (
        contents[0]["text"].as_str().expect("text").to_owned(),
        contents[0]["mimeType"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// The app's URI the gateway presents in the tool's `_meta`, checked to be namespaced and to
/// keep every other `_meta` key as the backend sent it.
fn presented_app(tools: &[Value], server: &str) -> String {
    let meta = &tool(tools, &format!("mcp_{server}_app"))["_meta"];
    assert_eq!(meta["anthropic/alwaysLoad"], true, "{meta}");
    assert_eq!(meta["mcpr-mock/kept"], json!({"nested": [1, 2]}), "{meta}");
    assert_eq!(meta["ui"]["visibility"], json!(["model", "app"]), "{meta}");
    let uri = meta["ui"]["resourceUri"].as_str().expect("resourceUri");
    assert!(uri.starts_with("ui://mcpr/"), "not namespaced: {uri}");
    uri.to_owned()
}

/// Both backends' apps through one client: distinct URIs, each read giving that backend's
/// own HTML byte for byte, listed as resources with their MIME type.
fn both_apps(world: &ServeWorld, client: &mut SdkClient) {
    let tools = client.tools();
    let a = presented_app(&tools, "a");
    let b = presented_app(&tools, "b");
    assert_ne!(a, b, "the same URI of two backends must not collide");
    let listed = client.step(json!({"op": "resources"}))["resources"].clone();
    for uri in [&a, &b] {
        let entry = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["uri"] == uri.as_str())
            .unwrap_or_else(|| panic!("{uri} not listed: {listed}"));
        assert_eq!(entry["mimeType"], "text/html;profile=mcp-app");
    }
    for (server, uri) in [("a", &a), ("b", &b)] {
        let (html, mime) = read(client, uri);
        assert_eq!(mime, "text/html;profile=mcp-app");
        assert_eq!(html.as_bytes(), direct_html(world, server, APP), "{server}");
        assert!(html.contains(&format!("app of {server} ")), "{html}");
    }
}

#[test]
fn two_backends_with_the_same_app_uri_each_serve_their_own_over_stdio() {
    let world = world(&[("a", APP), ("b", APP)]);
    let mut client = world.connect(Sdk::TypeScript, Target::Stdio(&[]));
    both_apps(&world, &mut client);
    client.close();
}

#[test]
fn two_backends_with_the_same_app_uri_each_serve_their_own_over_http() {
    let world = world(&[("a", APP), ("b", APP)]);
    let (_gateway, url) = world.http_gateway(&[], &[]);
    let mut client = world.connect(Sdk::TypeScript, Target::Http(&url, None));
    both_apps(&world, &mut client);
    client.close();
}

/// Backend `a` (first in config order) offers as its app the very URI the gateway presents for
/// `b`'s. It must get a URI of its own, and no read of either URI may reach the wrong backend.
#[test]
fn an_app_uri_shaped_like_another_backends_cannot_reach_it() {
    let lookalike = "ui://mcpr/b/widgets/app.html";
    let world = world(&[("a", lookalike), ("b", APP)]);
    let mut client = world.connect(Sdk::TypeScript, Target::Stdio(&[]));
    let tools = client.tools();
    let a = presented_app(&tools, "a");
    let b = presented_app(&tools, "b");
    assert_eq!(b, lookalike, "b's app as the gateway presents it");
    assert_ne!(a, b, "a took b's URI");
    let (html, _) = read(&mut client, &a);
    assert!(html.contains("app of a "), "a's app read {html}");
    let (html, _) = read(&mut client, &b);
    assert!(html.contains("app of b "), "b's app read {html}");
    // A `ui://` URI the gateway never presented reaches no backend.
    let refused = client.try_step(json!({"op": "read", "uri": APP}));
    assert_ne!(refused["ok"], true, "{refused}");
    client.close();
    assert!(
        !record(&world, "b").contains(lookalike),
        "b was asked for a's URI:\n{}",
        record(&world, "b")
    );
    assert!(
        !record(&world, "a").contains(&format!("\"{APP}\"")),
        "a was asked for b's URI:\n{}",
        record(&world, "a")
    );
}

/// Each backend lists the same `ui://` resource template; the gateway presents one per
/// backend, and completing an argument of a presented template asks that backend, under the
/// template it listed. The backend's own template, never presented, completes nothing.
#[test]
fn completing_a_presented_app_template_asks_its_own_backend() {
    let world = world(&[("a", APP), ("b", APP)]);
    let mut client = world.connect(Sdk::TypeScript, Target::Stdio(&[]));
    let templates = client.step(json!({"op": "templates"}))["templates"].clone();
    let presented: Vec<&str> = templates
        .as_array()
        .expect("templates")
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .filter(|t| t.starts_with("ui://"))
        .collect();
    assert_eq!(presented.len(), 2, "{templates}");
    assert_ne!(presented[0], presented[1], "{templates}");
    for server in ["a", "b"] {
        let template = presented
            .iter()
            .find(|t| t.starts_with(&format!("ui://mcpr/{server}/")))
            .unwrap_or_else(|| panic!("no template of {server} in {templates}"));
        let answer = client.step(json!({
            "op": "complete",
            "ref": {"type": "ref/resource", "uri": template},
            "argument": {"name": "theme", "value": ""}
        }));
        assert_eq!(
            answer["result"]["completion"]["values"],
            json!([format!("{server}-light"), format!("{server}-dark")]),
            "{answer}"
        );
    }
    let raw = format!("{APP}{{?theme}}");
    let refused = client.try_step(json!({
        "op": "complete",
        "ref": {"type": "ref/resource", "uri": raw},
        "argument": {"name": "theme", "value": ""}
    }));
    assert_ne!(refused["ok"], true, "{refused}");
    client.close();
}

/// A subscription to a presented app URI reaches its own backend under the URI it knows, and
/// that backend's update comes back under the presented URI; the other backend, serving the
/// same URI, is never asked.
#[test]
fn a_subscription_to_an_app_follows_its_own_backend() {
    let world = world_with(&[("a", APP), ("b", APP)], &["--notify-tools"]);
    let mut client = world.connect(Sdk::TypeScript, Target::Stdio(&[]));
    let b = presented_app(&client.tools(), "b");
    client.step(json!({"op": "subscribe", "uri": b}));
    let touched = client.call("mcp_b_touch", json!({"uri": APP}));
    assert_eq!(support::sdk::text(&touched), format!("updated {APP}"));
    let updated = client.step(json!({"op": "wait_updated", "count": 1, "timeout_ms": 15000}));
    assert_eq!(updated["uris"], json!([b]), "{updated}");
    client.close();
    assert!(
        record(&world, "b").contains("resources/subscribe"),
        "b was not asked:\n{}",
        record(&world, "b")
    );
    assert!(
        !record(&world, "a").contains("resources/subscribe"),
        "a was asked for b's app:\n{}",
        record(&world, "a")
    );
}

/// A view of `a` alone neither lists nor reads `b`'s app, and `b` is never asked.
#[test]
fn a_scoped_view_hides_a_hidden_servers_app() {
    let world = world(&[("a", APP), ("b", APP)]);
    let mut client = world.connect(Sdk::TypeScript, Target::Stdio(&["--servers", "a"]));
    let tools = client.tools();
    let a = presented_app(&tools, "a");
    let b = a.replacen("ui://mcpr/a/", "ui://mcpr/b/", 1);
    let listed = client.step(json!({"op": "resources"}))["resources"].to_string();
    assert!(listed.contains(&a), "{listed}");
    assert!(!listed.contains(&b), "{listed}");
    let refused = client.try_step(json!({"op": "read", "uri": b}));
    assert_ne!(refused["ok"], true, "{refused}");
    let (html, _) = read(&mut client, &a);
    assert!(html.contains("app of a "), "{html}");
    client.close();
    assert!(
        !record(&world, "b").contains("resources/read"),
        "{}",
        record(&world, "b")
    );
}

/// `mcpr tools --json` carries a tool's `_meta` whole; `--long` says the tool has an app.
#[test]
fn the_cli_shows_a_tools_meta_and_its_app() {
    let world = world(&[("a", APP)]);
    let run = |extra: &[&str]| {
        let mut command = std::process::Command::new(MCPR);
        command
            .args(["--strict-config", "--config"])
            .arg(&world.config)
            .args(extra)
            .stdin(Stdio::null());
        world.isolate(&mut command);
        let output = command.output().expect("run mcpr");
        assert!(output.status.success(), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let listing: Value = serde_json::from_str(&run(&["tools", "a", "--json"])).unwrap();
    let app = tool(listing.as_array().unwrap(), "mcp_a_app");
    assert_eq!(app["_meta"]["ui"]["resourceUri"], APP, "{app}");
    assert_eq!(app["_meta"]["anthropic/alwaysLoad"], true, "{app}");
    let long = run(&["tools", "a", "--long"]);
    assert!(long.contains(&format!("app: {APP}")), "{long}");
    let printed = run(&["resource", "a", APP]);
    assert!(printed.contains("app of a — ünïcode"), "{printed}");
}
