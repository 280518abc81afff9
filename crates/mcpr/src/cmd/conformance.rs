//! `mcpr conformance URL` (hidden): the client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance client --command "mcpr conformance"`).
//!
//! The suite starts a test server, runs this command with its URL and names the scenario in
//! `MCP_CONFORMANCE_SCENARIO`; it scores the client from what it sees on the wire, and wants
//! exit status 0 when the client believes it succeeded. Everything goes through the same
//! `McpClient` that every other command uses: this file only decides what to call.

use std::sync::Arc;

use mcp_runtime::client::{
    CallOptions, ConnectOptions, ElicitationHandler, ElicitationResponse, McpClient, ToolOutput,
};
use mcp_runtime::config::server_from_json;
use serde_json::{Map, Value, json};

use crate::exit::{self, Failure, Outcome};

/// Arguments of `mcpr conformance`.
#[derive(Debug, clap::Args)]
pub struct ConformanceArgs {
    /// The test server's URL, as the suite passes it.
    pub url: String,
    /// The scenario to play.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO", value_name = "NAME")]
    pub scenario: String,
}

/// The client scenarios this command plays. The suite's `auth/*` scenarios need OAuth, which
/// mcpr does not do yet; they are refused rather than faked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// Handshake (then list tools, which the test server answers with none).
    Initialize,
    /// Call `add_numbers {a, b}`.
    ToolsCall,
    /// Declare elicitation and accept the server's request with the schema's defaults
    /// (SEP-1034).
    ElicitationDefaults,
    /// Call a tool whose SSE response stream the server closes early: the result must arrive
    /// after reconnecting with GET + `Last-Event-ID`, no sooner than the server's `retry:`.
    SseRetry,
}

impl Scenario {
    const ALL: [(&'static str, Scenario); 4] = [
        ("initialize", Scenario::Initialize),
        ("tools_call", Scenario::ToolsCall),
        (
            "elicitation-sep1034-client-defaults",
            Scenario::ElicitationDefaults,
        ),
        ("sse-retry", Scenario::SseRetry),
    ];

    fn parse(name: &str) -> Option<Scenario> {
        Self::ALL
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, scenario)| *scenario)
    }
}

pub async fn run(args: ConformanceArgs) -> Outcome {
    let scenario = Scenario::parse(&args.scenario).ok_or_else(|| {
        let known: Vec<&str> = Scenario::ALL.iter().map(|(name, _)| *name).collect();
        Failure::usage(format!(
            "unsupported conformance scenario `{}` (supported: {})",
            args.scenario,
            known.join(", ")
        ))
    })?;
    let config = server_from_json("conformance", &json!({"type": "http", "url": args.url}))
        .map_err(Failure::usage)?;
    let options = ConnectOptions {
        elicitation: (scenario == Scenario::ElicitationDefaults).then(accept_defaults),
        ..ConnectOptions::default()
    };
    let client =
        crate::shutdown::until_signal(McpClient::connect("conformance", &config, &options))
            .await?
            .map_err(Failure::connection)?;
    eprintln!(
        "connected over {} to {} {} (protocol {})",
        client.transport(),
        client.info().name,
        client.info().version,
        client.info().protocol_version
    );
    let outcome = crate::shutdown::until_signal(play(scenario, &client)).await;
    client.close().await;
    outcome?
}

/// Accept every elicitation with the defaults its schema declares.
fn accept_defaults() -> ElicitationHandler {
    Arc::new(|request| {
        Box::pin(async move {
            let defaults = request.defaults();
            eprintln!(
                "elicitation from {}: {:?}; accepting with {}",
                request.server,
                request.message,
                Value::Object(defaults.clone())
            );
            ElicitationResponse::accept(defaults)
        })
    })
}

async fn play(scenario: Scenario, client: &McpClient) -> Outcome {
    let tools = client.list_tools().await.map_err(Failure::connection)?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    eprintln!("tools: {}", names.join(", "));
    let (tool, arguments) = match scenario {
        Scenario::Initialize => return Ok(exit::OK),
        Scenario::ToolsCall => ("add_numbers", json!({"a": 5, "b": 3})),
        Scenario::ElicitationDefaults => ("test_client_elicitation_defaults", json!({})),
        Scenario::SseRetry => ("test_reconnection", json!({})),
    };
    if !names.contains(&tool) {
        return Err(Failure::connection(format!(
            "the server does not offer `{tool}`"
        )));
    }
    let output = call(client, tool, arguments).await?;
    eprintln!("{tool}: {}", output.text());
    Ok(if output.is_error {
        exit::TOOL_ERROR
    } else {
        exit::OK
    })
}

async fn call(client: &McpClient, tool: &str, arguments: Value) -> Result<ToolOutput, Failure> {
    let arguments: Option<Map<String, Value>> = arguments.as_object().cloned();
    client
        .call_tool(tool, arguments, CallOptions::default())
        .await
        .map_err(Failure::connection)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_are_the_suites() {
        assert_eq!(Scenario::parse("sse-retry"), Some(Scenario::SseRetry));
        assert_eq!(
            Scenario::parse("elicitation-sep1034-client-defaults"),
            Some(Scenario::ElicitationDefaults)
        );
        assert_eq!(Scenario::parse("auth/basic-cimd"), None);
    }
}
