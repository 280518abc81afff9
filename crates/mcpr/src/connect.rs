//! Connecting the servers a command needs, all at once, with one live line per server on a
//! terminal (connecting… / connected in N ms with T tools / failed: reason) so start-up never
//! looks frozen. Off a terminal, one plain line per server is printed as it finishes.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use mcp_runtime::client::{ClientError, ConnectOptions, McpClient, ToolDefinition};
use mcp_runtime::config::ServerConfig;

/// The outcome for one server.
pub struct Connected {
    pub name: String,
    pub result: Result<(Arc<McpClient>, Vec<ToolDefinition>), ClientError>,
}

/// How much to say while connecting.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Live lines on a terminal, plain lines otherwise.
    Show,
    /// Nothing (for `--json` and single-server commands).
    Quiet,
}

/// Connect every server concurrently and list its tools. Results come back in input order.
pub async fn connect_all(
    servers: Vec<(String, ServerConfig)>,
    progress: Progress,
) -> Vec<Connected> {
    let live = progress == Progress::Show && std::io::stderr().is_terminal();
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("{spinner:.cyan} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let width = servers
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);

    let tasks = servers.into_iter().map(|(name, config)| {
        let bar = live.then(|| {
            let bar = bars.add(ProgressBar::new_spinner());
            bar.set_style(style.clone());
            bar.set_message(format!("{name:width$}  connecting…"));
            bar.enable_steady_tick(Duration::from_millis(80));
            bar
        });
        async move {
            let started = Instant::now();
            let result = connect_one(&name, &config).await;
            let elapsed = started.elapsed();
            let line = status_line(&name, width, &result, elapsed);
            match bar {
                Some(bar) => bar.finish_with_message(line),
                None if progress == Progress::Show => eprintln!("  {line}"),
                None => {}
            }
            Connected { name, result }
        }
    });
    futures::future::join_all(tasks).await
}

async fn connect_one(
    name: &str,
    config: &ServerConfig,
) -> Result<(Arc<McpClient>, Vec<ToolDefinition>), ClientError> {
    let client = McpClient::connect(name, config, &ConnectOptions::default()).await?;
    // The first list belongs to start-up, so it shares the startup bound with the handshake.
    let listing = match config.startup_timeout() {
        Some(bound) => tokio::time::timeout(bound, client.list_tools())
            .await
            .unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    server: name.to_owned(),
                    phase: "tools/list".into(),
                    after: bound,
                    stderr: client.stderr_tail(20),
                })
            }),
        None => client.list_tools().await,
    };
    match listing {
        Ok(tools) => Ok((Arc::new(client), tools)),
        Err(e) => {
            client.close().await;
            Err(e)
        }
    }
}

fn status_line(
    name: &str,
    width: usize,
    result: &Result<(Arc<McpClient>, Vec<ToolDefinition>), ClientError>,
    elapsed: Duration,
) -> String {
    match result {
        Ok((_, tools)) => format!(
            "{name:width$}  connected in {} ms with {} tool{}",
            elapsed.as_millis(),
            tools.len(),
            if tools.len() == 1 { "" } else { "s" }
        ),
        Err(e) => {
            let first_line = e.to_string().lines().next().unwrap_or_default().to_owned();
            format!("{name:width$}  failed: {first_line}")
        }
    }
}

/// Close every connected client concurrently.
pub async fn close_all(connected: &[Connected]) {
    let closing = connected
        .iter()
        .filter_map(|c| c.result.as_ref().ok())
        .map(|(client, _)| client.close());
    futures::future::join_all(closing).await;
}
