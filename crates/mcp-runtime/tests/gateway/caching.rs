//! The caching hints of 2026-07-28 servers (`ttlMs`, `cacheScope` on `server/discover` and
//! `tools/list`) through the gateway over streamable HTTP, as mcpr's own 2026-07-28 client and
//! the Python SDK's see them: one server's as it set them, several servers' merged to the most
//! restrictive, and `private` never widened.

use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::cache::CacheHints;
use mcp_runtime::client::{ConnectOptions, Era, McpClient};
use mcp_runtime::config::ServerConfig;
use mcp_runtime::gateway::{GatewayOptions, ToolFilter};
use mcp_runtime::tools::NamingStyle;

use crate::HttpGateway;
use crate::support::{self, temp_dir};

/// A 2026-07-28 mock giving its results `ttl_ms` and `scope` (`None`: a mock of the
/// `initialize` era, which gives no hints).
fn mock(hints: Option<(u64, &str)>) -> ServerConfig {
    match hints {
        Some((ttl_ms, scope)) => support::mock(&[
            "--era",
            "2026-07-28",
            "--ttl-ms",
            &ttl_ms.to_string(),
            "--cache-scope",
            scope,
        ]),
        None => support::mock(&[]),
    }
}

fn servers<const N: usize>(servers: [(&str, ServerConfig); N]) -> IndexMap<String, ServerConfig> {
    servers
        .into_iter()
        .map(|(name, config)| (name.to_owned(), config))
        .collect()
}

/// Server `c` alone, under its own tool names (`mcpr serve --servers c --raw-names`).
fn c_raw() -> GatewayOptions {
    GatewayOptions::default()
        .with_filter(ToolFilter::default().with_servers(["c"]))
        .with_naming(NamingStyle::Raw)
}

/// The hints mcpr's client gets from a gateway serving `servers` with `options`: those of the
/// tool list, and those of `server/discover`.
async fn hints_through(
    servers: IndexMap<String, ServerConfig>,
    options: GatewayOptions,
) -> (CacheHints, Option<CacheHints>) {
    let gateway = HttpGateway::start(servers, options).await;
    let config = support::remote(&gateway.url, None);
    // The tool list waits for the servers behind to start; `server/discover` is answered at
    // once, without hints while they start: a second connection opens once they have.
    let first = McpClient::connect("gateway", &config, &ConnectOptions::default())
        .await
        .expect("connect to the gateway");
    first.list_tools().await.expect("tools/list");
    first.close().await;
    let client = McpClient::connect("gateway", &config, &ConnectOptions::default())
        .await
        .expect("connect to the gateway again");
    assert_eq!(client.opening().era, Era::Modern);
    client.list_tools().await.expect("tools/list");
    let hints = (client.tools_cache_hints(), client.discovery_cache_hints());
    client.close().await;
    gateway.stop().await;
    hints
}

fn hints(ttl_ms: Option<u64>, private: bool) -> CacheHints {
    CacheHints::new(ttl_ms, private)
}

/// One server behind `--raw-names`: its hints as it set them, public or private.
#[tokio::test(flavor = "multi_thread")]
async fn one_server_s_hints_reach_the_client_as_set() {
    let public = hints_through(servers([("c", mock(Some((60_000, "public"))))]), c_raw()).await;
    let expected = hints(Some(60_000), false);
    assert_eq!(public, (expected, Some(expected)));

    let private = hints_through(servers([("c", mock(Some((30_000, "private"))))]), c_raw()).await;
    let expected = hints(Some(30_000), true);
    assert_eq!(private, (expected, Some(expected)));
    assert_eq!(private.0.ttl, Some(Duration::from_secs(30)));
}

/// Several servers: the shortest time and private if any is; a server without hints makes
/// the result never fresh.
#[tokio::test(flavor = "multi_thread")]
async fn merged_hints_are_the_most_restrictive() {
    let both = servers([
        ("a", mock(Some((60_000, "public")))),
        ("b", mock(Some((5_000, "private")))),
    ]);
    let merged = hints_through(both, GatewayOptions::default()).await;
    let expected = hints(Some(5_000), true);
    assert_eq!(merged, (expected, Some(expected)));

    let with_old = servers([("a", mock(Some((60_000, "public")))), ("old", mock(None))]);
    let (tools, discovery) = hints_through(with_old, GatewayOptions::default()).await;
    assert_eq!(tools.ttl, None, "{tools:?}");
    assert_eq!(discovery.and_then(|d| d.ttl), None, "{discovery:?}");
}

/// A Python SDK 2.3 client in `auto` mode (it opens with `server/discover`): the hints of
/// the tool list and of `server/discover`, once the servers behind have started (a first
/// connection lists the tools, which waits for them; a second one discovers again).
const PY_HINTS_CLIENT: &str = r#"
import asyncio, sys
from mcp.client.client import Client

async def main():
    async with Client(sys.argv[1], mode="auto") as client:
        await client.list_tools()
    async with Client(sys.argv[1], mode="auto") as client:
        tools = await client.list_tools(cache_mode="bypass")
        print("tools", tools.ttl_ms, tools.cache_scope, flush=True)
        found = client.session.discover_result
        print("discover", found.ttl_ms, found.cache_scope, flush=True)

asyncio.run(main())
"#;

/// What the Python client printed about the hints of a gateway serving `servers` with
/// `options`.
fn python_hints(servers: IndexMap<String, ServerConfig>, options: GatewayOptions) -> String {
    let python = support::python_sdk_2();
    // The gateway serves from this runtime's workers while this thread runs the client.
    let runtime = tokio::runtime::Runtime::new().expect("a runtime for the gateway");
    let gateway = runtime.block_on(HttpGateway::start(servers, options));
    let dir = temp_dir();
    let script = dir.path().join("client.py");
    std::fs::write(&script, PY_HINTS_CLIENT).expect("write the client");
    let (out, err) = support::run_client(
        std::process::Command::new(python)
            .arg(&script)
            .arg(&gateway.url),
        Duration::from_secs(120),
    );
    runtime.block_on(gateway.stop());
    format!("{out}\n{err}")
}

/// The Python SDK 2.3 client sees one server's hints as set, and several servers' merged.
#[test]
fn a_python_sdk_2_3_client_sees_the_servers_hints() {
    let one = python_hints(servers([("c", mock(Some((60_000, "public"))))]), c_raw());
    assert!(one.contains("tools 60000 public"), "{one}");
    assert!(one.contains("discover 60000 public"), "{one}");

    let both = servers([
        ("a", mock(Some((60_000, "public")))),
        ("b", mock(Some((5_000, "private")))),
    ]);
    let merged = python_hints(both, GatewayOptions::default());
    assert!(merged.contains("tools 5000 private"), "{merged}");
    assert!(merged.contains("discover 5000 private"), "{merged}");
}

/// The hints mcpr's client gets on the resource, template and prompt lists of a gateway
/// serving `servers` with `options`.
async fn list_hints_through(
    servers: IndexMap<String, ServerConfig>,
    options: GatewayOptions,
) -> Vec<Option<CacheHints>> {
    let gateway = HttpGateway::start(servers, options).await;
    let config = support::remote(&gateway.url, None);
    let client = McpClient::connect("gateway", &config, &ConnectOptions::default())
        .await
        .expect("connect to the gateway");
    assert_eq!(client.opening().era, Era::Modern);
    client.list_resources().await.expect("resources/list");
    client
        .list_resource_templates()
        .await
        .expect("resources/templates/list");
    client.list_prompts().await.expect("prompts/list");
    let hints = ["resources/list", "resources/templates/list", "prompts/list"]
        .map(|method| client.list_cache_hints(method))
        .to_vec();
    client.close().await;
    gateway.stop().await;
    hints
}

/// Resource, template and prompt lists carry the servers' hints too: the conformance mock's
/// (five minutes, public) as it set them; merged with a server whose resource lists say
/// `ttlMs: 0`, `private` (rmcp's defaults), those lists are never fresh and private.
#[tokio::test(flavor = "multi_thread")]
async fn resource_and_prompt_lists_carry_the_servers_hints() {
    let conformance = support::mock(&["--conformance"]);
    let one = list_hints_through(servers([("c", conformance.clone())]), c_raw()).await;
    let five_minutes = Some(hints(Some(300_000), false));
    assert_eq!(one, vec![five_minutes; 3]);

    let other = support::mock(&["--era", "2026-07-28", "--resources"]);
    let merged = list_hints_through(
        servers([("c", conformance), ("r", other)]),
        GatewayOptions::default(),
    )
    .await;
    assert_eq!(merged[0], Some(hints(None, true)), "{merged:?}");
    assert_eq!(merged[1], Some(hints(None, true)), "{merged:?}");
}
