//! `mcpr call`: call one tool, by server and tool name or by its `mcp_<server>_<tool>` name,
//! and print the result.

use std::io::Read;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::client::{
    CallOptions, ClientError, Content, OutputCap, ToolOutput, TraceContext, TraceContextError,
};
use mcp_runtime::manager::{ManagerError, ServerError};

use mcp_runtime::tools::{NamingStyle, mcp_tools};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::advice::Advise as _;
use crate::connect::{OneShot, Progress, StartOptions, start};
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::inline::{INLINE_NAME, InlineArgs};
use crate::{live, term};

/// Arguments of `mcpr call`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "ARGS is a JSON object, @FILE to read it from a file, - for stdin, or key=value words \
typed by the tool's input schema (key:=JSON for raw JSON; see `mcpr tools SERVER/TOOL`).\n\n\
Examples:\n  mcpr call everything echo message=hi\n  mcpr call everything echo '{\"message\": \"hi\"}'\n  \
mcpr call mcp_everything_echo @args.json\n  echo '{}' | mcpr call everything get-tiny-image -\n  \
mcpr call echo message=hi -- npx -y @modelcontextprotocol/server-everything\n  \
mcpr call --url http://localhost:3001/mcp echo message=hi"
)]
pub(crate) struct CallArgs {
    /// `SERVER TOOL [ARGS...]`, or `NAME [ARGS...]` with the tool's `mcp_<server>_<tool>` name,
    /// or `TOOL [ARGS...]` with a server given inline.
    #[arg(required = true, num_args = 1.., value_name = "SERVER TOOL [ARGS]", add = clap_complete::engine::ArgValueCompleter::new(crate::complete::call_targets))]
    pub target: Vec<String>,
    /// Time limit for the call in milliseconds (default: the server's tool timeout).
    #[arg(long, value_name = "MS")]
    pub timeout: Option<u64>,
    /// Print the whole result as JSON: every field the server sent (content blocks with
    /// their annotations and _meta, structuredContent, isError, _meta, newer fields).
    #[arg(long)]
    pub json: bool,
    /// Show no progress line and no problems of other servers' configs. On a terminal, a
    /// running call shows one on stderr (the server's message, progress and total, and the
    /// time so far); without a terminal it never does.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write each progress notification of the server as one JSON object per line on stderr
    /// (`{"progress", "total", "message", "elapsed_ms"}`), with or without a terminal, instead
    /// of the progress line.
    #[arg(long)]
    pub progress_json: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: InlineArgs,
    /// Cut the result to BYTES (on a block and character boundary) and write the whole of it
    /// to a private file named at the end; 0 for no cap (the default: the result is whole).
    #[arg(long, value_name = "BYTES")]
    pub max_output: Option<usize>,
}

pub(crate) async fn run(global: &GlobalArgs, args: CallArgs) -> Outcome {
    let discovery = crate::inline::discover_some(global, &args.inline)?;
    let first = &args.target[0];
    // `mcp_<server>_<tool>` names always start with `mcp_`; anything else names a server.
    let by_name = !discovery.configs.contains_key(first) && first.starts_with("mcp_");
    let (server, tool, raw_args): (Option<String>, String, &[String]) = if args.inline.is_set() {
        // One server: its name may be left out.
        let words = match args.target.as_slice() {
            [name, rest @ ..]
                if name == INLINE_NAME && rest.first().is_some_and(|w| !is_arguments(w)) =>
            {
                rest
            }
            all => all,
        };
        (Some(INLINE_NAME.to_owned()), words[0].clone(), &words[1..])
    } else if by_name {
        (None, first.clone(), &args.target[1..])
    } else if !discovery.configs.contains_key(first) {
        return Err(crate::discovery::not_enabled(&discovery, first));
    } else if let Some(tool) = args.target.get(1) {
        (Some(first.clone()), tool.clone(), &args.target[2..])
    } else {
        return Err(Failure::usage(format!(
            "which tool of `{first}`? (see `mcpr tools {first}`)"
        )));
    };

    // One server and tool named: connect that server alone and call the tool directly (no
    // tool list; an unknown tool is the server's own error). A tool name: start all, since
    // names are assigned over the whole set.
    let (servers, target) = match server {
        Some(server) => {
            let config = discovery.configs.get(&server).cloned();
            let config = config.ok_or_else(|| Failure::usage(format!("no server `{server}`")))?;
            // No tool list on this road: a tool its last listing held is refused here.
            crate::cmd::trust_pins::refuse_held(&discovery.cwd, &server, &config, &tool)?;
            let open = OneShot::open(discovery.cwd.clone(), &server, &config);
            let servers = crate::shutdown::until_signal(open)
                .await?
                .map_err(|e| Failure::connection(e.explained()))?;
            (servers, (server, tool))
        }
        None => {
            let options = StartOptions {
                progress: Progress::Quiet,
                wait: false,
                reconnect: false,
            };
            let started = crate::shutdown::until_signal(start(
                discovery.cwd.clone(),
                discovery.configs,
                discovery.sources,
                options,
            ))
            .await?;
            let tools = mcp_tools(&started.report.servers, NamingStyle::Mcpr);
            let held = started.manager.held_tools();
            let servers = OneShot::Manager(started.manager);
            match tools.iter().find(|t| t.name == tool) {
                Some(found) => (servers, (found.server.clone(), found.tool.clone())),
                None => {
                    servers.stop().await;
                    // A held tool has no name in the view; say why rather than "no tool".
                    if let Some(failure) = crate::cmd::trust_pins::held_by_name(&tool, &held) {
                        return Err(failure);
                    }
                    return Err(unknown_tool(&tool, &started.report.errors));
                }
            }
        }
    };
    // `key=value` words are typed by the tool's input schema, which only then is listed.
    let typed = raw_args.len() > 1 || raw_args.iter().any(|w| crate::cmd::arguments::is_pair(w));
    let schema = match typed {
        true => servers.tool_schema(&target.0, &target.1).await,
        false => None,
    };
    let arguments = match parse_arguments(raw_args, schema.as_ref()) {
        Ok(arguments) => arguments,
        Err(failure) => {
            servers.stop().await;
            return Err(failure);
        }
    };

    let cancel = CancellationToken::new();
    let mut options = CallOptions::default()
        .with_cancel(cancel.clone())
        .with_trace(trace_from_env());
    options.timeout = args.timeout.map(Duration::from_millis);
    let mode = live::Mode::choose(args.quiet, args.progress_json);
    let (display, progress) = live::Display::start(mode, &target.1);
    options.progress = progress;
    let result = {
        let call = servers.call_tool(&target.0, &target.1, arguments, options);
        tokio::pin!(call);
        // On Ctrl-C or SIGTERM, cancel the call and let it finish telling the server
        // (`notifications/cancelled`) before shutting down.
        tokio::select! {
            result = &mut call => Ok(result),
            code = crate::shutdown::interrupted() => {
                cancel.cancel();
                let _ = tokio::time::timeout(Duration::from_secs(1), &mut call).await;
                Err(code)
            }
        }
    };
    display.finish().await;
    // The result is printed the moment it arrives; the servers are stopped after.
    let outcome = match result {
        Ok(Ok(output)) => {
            let output = match args.max_output.filter(|limit| *limit > 0) {
                Some(limit) => OutputCap::with_limit(limit)
                    .apply(&format!("{}_{}", target.0, target.1), output),
                None => output,
            };
            print_result(&output, args.json)
        }
        Ok(Err(e)) => Err(call_failure(e)),
        Err(code) => Err(Failure {
            code,
            message: "interrupted; call cancelled".into(),
        }),
    };
    servers.stop().await;
    outcome
}

/// Print a call's result as asked (`--json` or readable); the exit code says whether the tool
/// reported an error.
fn print_result(output: &ToolOutput, json: bool) -> Outcome {
    if json {
        let text = serde_json::to_string_pretty(output).map_err(Failure::internal)?;
        println!("{text}");
    } else {
        print_output(output);
    }
    Ok(if output.is_error {
        exit::TOOL_ERROR
    } else {
        exit::OK
    })
}

/// A tool name nobody offers: say so, and mention servers that failed (it may be theirs).
fn unknown_tool(tool: &str, errors: &IndexMap<String, ServerError>) -> Failure {
    if errors.is_empty() {
        return Failure::usage(format!("no tool named `{tool}` (see `mcpr tools`)"));
    }
    let failed: Vec<&str> = errors.keys().map(String::as_str).collect();
    Failure::connection(format!(
        "no tool named `{tool}`; these servers failed to start: {}",
        failed.join(", ")
    ))
}

/// A JSON-RPC error (unknown tool, bad arguments) is the caller's mistake, a call past its time
/// limit has a code of its own; anything else means the connection failed.
fn call_failure(error: ManagerError) -> Failure {
    match error {
        ManagerError::Client(ClientError::Rpc { .. }) => Failure::usage(error),
        ManagerError::Client(ClientError::Timeout { .. }) => Failure::timeout(error),
        other => Failure::connection(other.explained()),
    }
}

/// Parse ARGS: one inline JSON object, `@file` or `-` (stdin), or `key=value` words typed by
/// the tool's input `schema` (when known). None means no arguments. A bad `key=value` word
/// gets an error that lists the tool's parameters.
fn parse_arguments(
    raw: &[String],
    schema: Option<&Value>,
) -> Result<Option<Map<String, Value>>, Failure> {
    match raw {
        [] => Ok(None),
        [one] if !crate::cmd::arguments::is_pair(one) => {
            read_arguments(one, "the command line", true)
                .map(Some)
                .map_err(Failure::usage)
        }
        words => crate::cmd::arguments::from_pairs(words, schema)
            .map(Some)
            .map_err(|e| {
                let mut message = e;
                if let Some(schema) = schema {
                    message.push_str("\nthe tool's parameters:\n");
                    message
                        .push_str(&crate::cmd::arguments::parameter_lines(schema, "  ").join("\n"));
                }
                Failure::usage(message)
            }),
    }
}

/// Whether `word` is tool arguments (JSON, `@FILE`, `-`, `key=value`) rather than a name.
fn is_arguments(word: &str) -> bool {
    word.starts_with('{') || word.starts_with('@') || word == "-" || word.contains('=')
}

/// Tool arguments as `mcpr call` and the shell take them: inline JSON (named `inline` in
/// errors), `@FILE`, or with `stdin` also `-` for standard input.
pub(crate) fn read_arguments(
    raw: &str,
    inline: &str,
    stdin: bool,
) -> Result<Map<String, Value>, String> {
    let (text, origin) = if stdin && raw == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read arguments from stdin: {e}"))?;
        (text, "stdin")
    } else if let Some(path) = raw.strip_prefix('@') {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read arguments from {path}: {e}"))?;
        (text, path)
    } else {
        (raw.to_owned(), inline)
    };
    json_object(&text, origin)
}

/// Parse tool arguments read from `origin` (named in the error): they must be a JSON object.
pub(crate) fn json_object(text: &str, origin: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "arguments from {origin} must be a JSON object, not {other}"
        )),
        Err(e) => Err(format!("arguments from {origin} are not valid JSON: {e}")),
    }
}

/// Human-readable rendering: text as is, other blocks as one-line summaries, then structured
/// content when there is no text saying the same. Shared with the shell.
pub(crate) fn print_output(output: &ToolOutput) {
    if output.is_error {
        eprintln!("tool reported an error:");
    }
    for block in &output.content {
        match block {
            Content::Text { text, .. } => println!("{}", term::text(text)),
            Content::Image {
                data, mime_type, ..
            } => {
                let mime_type = term::line(mime_type);
                println!("[image {mime_type}, {} bytes base64]", data.len())
            }
            Content::Audio {
                data, mime_type, ..
            } => {
                let mime_type = term::line(mime_type);
                println!("[audio {mime_type}, {} bytes base64]", data.len())
            }
            Content::Resource { resource, .. } => {
                let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("?");
                let uri = term::line(uri);
                match resource.get("text").and_then(Value::as_str) {
                    Some(text) => println!("[resource {uri}]\n{}", term::text(text)),
                    None => println!("[resource {uri}]"),
                }
            }
            Content::ResourceLink(link) => {
                let uri = link.get("uri").and_then(Value::as_str).unwrap_or("?");
                println!("[resource link {}]", term::line(uri));
            }
            // A kind of content newer than this build (`--json` shows it whole).
            Content::Other(block) => {
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("?");
                println!("[{} content; see --json]", term::line(kind));
            }
            _ => println!("[content this version of mcpr cannot show; see --json]"),
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

/// A part of a trace context added, if it is well-formed.
type AddPart = fn(TraceContext, &str) -> Result<TraceContext, TraceContextError>;

/// The trace context of the environment, as OpenTelemetry's environment carrier names it
/// (`TRACEPARENT`, `TRACESTATE`, `BAGGAGE`), so that a script's or CI job's trace continues at
/// the server. A malformed value is dropped with a one-line warning, never sent.
fn trace_from_env() -> TraceContext {
    let mut trace = TraceContext::default();
    let parts: [(&str, AddPart); 3] = [
        ("TRACEPARENT", TraceContext::with_traceparent),
        ("TRACESTATE", TraceContext::with_tracestate),
        ("BAGGAGE", TraceContext::with_baggage),
    ];
    for (variable, with) in parts {
        let Some(value) = std::env::var_os(variable) else {
            continue;
        };
        let checked = match value.to_str() {
            Some(value) => with(trace.clone(), value),
            None => {
                eprintln!("warning: {variable} is not UTF-8; it is not sent");
                continue;
            }
        };
        match checked {
            Ok(with_part) => trace = with_part,
            Err(e) => eprintln!("warning: {variable}: {e}"),
        }
    }
    if trace.tracestate().is_some() && trace.traceparent().is_none() {
        eprintln!("warning: TRACESTATE without a valid TRACEPARENT is not sent");
    }
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_a_json_object_or_pairs() {
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(parse_arguments(&[], None).unwrap().is_none());
        assert_eq!(
            parse_arguments(&words(&[r#"{"a": 1}"#]), None)
                .unwrap()
                .unwrap()["a"],
            1
        );
        assert_eq!(
            parse_arguments(&words(&["[1]"]), None).unwrap_err().code,
            exit::USAGE
        );
        assert_eq!(
            parse_arguments(&words(&["{oops"]), None).unwrap_err().code,
            exit::USAGE
        );
        assert_eq!(
            parse_arguments(&words(&["@/definitely/missing"]), None)
                .unwrap_err()
                .code,
            exit::USAGE
        );
        let schema = serde_json::json!({"properties": {"n": {"type": "string"}}});
        assert_eq!(
            parse_arguments(&words(&["n=5"]), Some(&schema))
                .unwrap()
                .unwrap()["n"],
            "5"
        );
        let error = parse_arguments(&words(&["m=5"]), Some(&schema)).unwrap_err();
        assert!(
            error.message.contains("parameters:\n  n  string"),
            "{error}"
        );
    }
}
