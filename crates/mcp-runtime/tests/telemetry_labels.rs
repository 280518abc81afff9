//! The call meters' labels stay bounded: a caller that makes up 10,000 tool names (here,
//! straight at a real `mcp-mock` server, which refuses each) does not make 10,000 series;
//! names past `MAX_TOOL_LABELS` are counted under `_other`. Read back as the Prometheus text
//! the HTTP gateway serves.

use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
use mcp_runtime::telemetry::{MAX_TOOL_LABELS, Telemetry, TelemetryOptions, prometheus_text};

/// How many names the hostile caller makes up.
const MADE_UP: usize = 10_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_tool_names_do_not_grow_the_series() {
    let options = TelemetryOptions::new("labels-under-test").with_prometheus();
    let telemetry = Telemetry::from_env(options).expect("telemetry installs");
    let config = mcp_testkit::mock(&[]);
    let client = McpClient::connect("m", &config, &ConnectOptions::default())
        .await
        .expect("the mock connects");
    let echo = mcp_testkit::args(serde_json::json!({"text": "hi"}));
    let output = client
        .call_tool("echo", echo, CallOptions::default())
        .await
        .expect("echo");
    assert_eq!(output.text(), "hi");
    for n in 0..MADE_UP {
        let name = format!("made_up_{n}");
        // Refused by the server, one way or another; only the meters matter here.
        let _ = client.call_tool(&name, None, CallOptions::default()).await;
    }
    client.close().await;

    let text = prometheus_text().expect("the meters are kept as Prometheus text");
    let series: Vec<&str> = text
        .lines()
        .filter(|line| line.starts_with("mcpr_calls_total{"))
        .collect();
    // Each label value may show with two outcomes at most (refused as an error result or as
    // a JSON-RPC error), plus echo's.
    assert!(
        series.len() <= 2 * (MAX_TOOL_LABELS + 1) + 1,
        "{} series for {MADE_UP} made-up names",
        series.len()
    );
    assert!(
        series
            .iter()
            .any(|line| line.contains("gen_ai_tool_name=\"_other\"")),
        "no folded series"
    );
    assert!(
        series
            .iter()
            .any(|line| line.contains("gen_ai_tool_name=\"echo\"")
                && line.contains("outcome=\"ok\"")),
        "{text}"
    );
    telemetry.shutdown().await;
}
