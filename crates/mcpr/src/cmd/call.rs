//! `mcpr call`: connect to one server, call one tool, print the result.

use std::io::Read;
use std::time::Duration;

use mcp_runtime::client::{
    CallOptions, ClientError, ConnectOptions, Content, McpClient, ToolOutput,
};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::cli::GlobalArgs;
use crate::exit::{self, Failure, Outcome};
use crate::sources::configured_server;

/// Arguments of `mcpr call`.
#[derive(Debug, clap::Args)]
pub struct CallArgs {
    /// The server, as named in the config.
    pub server: String,
    /// The tool, as the server names it.
    pub tool: String,
    /// Arguments: a JSON object, `@FILE` to read it from a file, or `-` for stdin.
    pub args: Option<String>,
    /// Time limit for the call in milliseconds (default: the server's tool timeout).
    #[arg(long, value_name = "MS")]
    pub timeout: Option<u64>,
    /// Print the whole result as JSON (content blocks, structuredContent, isError).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(global: &GlobalArgs, args: CallArgs) -> Outcome {
    let arguments = parse_arguments(args.args.as_deref())?;
    let config = configured_server(global, &args.server)?;
    let client = crate::shutdown::until_signal(McpClient::connect(
        &args.server,
        &config,
        &ConnectOptions::default(),
    ))
    .await?
    .map_err(Failure::connection)?;

    let cancel = CancellationToken::new();
    let options = CallOptions {
        timeout: args.timeout.map(Duration::from_millis),
        cancel: Some(cancel.clone()),
    };
    let call = client.call_tool(&args.tool, arguments, options);
    tokio::pin!(call);
    // On Ctrl-C or SIGTERM, cancel the call and let it finish telling the server
    // (`notifications/cancelled`) before shutting down.
    let result = tokio::select! {
        result = &mut call => Ok(result),
        code = crate::shutdown::interrupted() => {
            cancel.cancel();
            let _ = tokio::time::timeout(Duration::from_secs(1), &mut call).await;
            Err(code)
        }
    };
    client.close().await;
    let output = match result {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => return Err(call_failure(e)),
        Err(code) => {
            return Err(Failure {
                code,
                message: "interrupted; call cancelled".into(),
            });
        }
    };

    if args.json {
        let text = serde_json::to_string_pretty(&output).map_err(Failure::internal)?;
        println!("{text}");
    } else {
        print_output(&output);
    }
    Ok(if output.is_error {
        exit::TOOL_ERROR
    } else {
        exit::OK
    })
}

/// A JSON-RPC error (unknown tool, bad arguments) is the caller's mistake; anything else means
/// the connection failed.
fn call_failure(error: ClientError) -> Failure {
    match error {
        ClientError::Rpc { .. } => Failure::usage(error),
        other => Failure::connection(other),
    }
}

/// Parse ARGS: inline JSON, `@file` or `-` (stdin). Absent means no arguments.
fn parse_arguments(raw: Option<&str>) -> Result<Option<Map<String, Value>>, Failure> {
    let Some(raw) = raw else { return Ok(None) };
    let (text, origin) = if raw == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Failure::usage(format!("cannot read arguments from stdin: {e}")))?;
        (text, "stdin".to_owned())
    } else if let Some(path) = raw.strip_prefix('@') {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::usage(format!("cannot read arguments from {path}: {e}")))?;
        (text, path.to_owned())
    } else {
        (raw.to_owned(), "the command line".to_owned())
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(Failure::usage(format!(
            "arguments from {origin} must be a JSON object, not {other}"
        ))),
        Err(e) => Err(Failure::usage(format!(
            "arguments from {origin} are not valid JSON: {e}"
        ))),
    }
}

/// Human-readable rendering: text as is, other blocks as one-line summaries, then structured
/// content when there is no text saying the same.
fn print_output(output: &ToolOutput) {
    if output.is_error {
        eprintln!("tool reported an error:");
    }
    for block in &output.content {
        match block {
            Content::Text { text } => println!("{text}"),
            Content::Image { data, mime_type } => {
                println!("[image {mime_type}, {} bytes base64]", data.len())
            }
            Content::Audio { data, mime_type } => {
                println!("[audio {mime_type}, {} bytes base64]", data.len())
            }
            Content::Resource { resource } => {
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => println!("[resource {uri}]\n{text}"),
                    None => println!("[resource {uri}]"),
                }
            }
            Content::ResourceLink(link) => {
                let uri = link.get("uri").and_then(Value::as_str).unwrap_or("?");
                println!("[resource link {uri}]");
            }
        }
    }
    let has_text = output
        .content
        .iter()
        .any(|b| matches!(b, Content::Text { .. }));
    if let (Some(structured), false) = (&output.structured_content, has_text) {
        println!(
            "{}",
            serde_json::to_string_pretty(structured).unwrap_or_default()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_a_json_object() {
        assert!(parse_arguments(None).unwrap().is_none());
        assert_eq!(
            parse_arguments(Some(r#"{"a": 1}"#)).unwrap().unwrap()["a"],
            1
        );
        assert_eq!(parse_arguments(Some("[1]")).unwrap_err().code, exit::USAGE);
        assert_eq!(
            parse_arguments(Some("{oops")).unwrap_err().code,
            exit::USAGE
        );
        assert_eq!(
            parse_arguments(Some("@/definitely/missing"))
                .unwrap_err()
                .code,
            exit::USAGE
        );
    }
}
