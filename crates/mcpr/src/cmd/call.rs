//! `mcpr call`: call one tool, by server and tool name or by its `mcp_<server>_<tool>` name
//! (resolved in `call_target`), with its arguments checked against the tool's input schema
//! first (`argument_check`), and print the result. A tool that runs as a task is waited for
//! (its status on the live line, Ctrl-C cancelling the task), or left running with
//! `--detach`, which prints the task's id for `mcpr task`.

use std::time::Duration;

use mcp_runtime::client::{
    CallOptions, ClientError, Content, OutputCap, TaskProblem, TaskStart, ToolOutput, TraceContext,
    TraceContextError,
};
use mcp_runtime::manager::ManagerError;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::advice::Advise as _;
use crate::connect::OneShot;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::inline::InlineArgs;
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
    /// Send the arguments without checking them against the tool's input schema (by default
    /// a missing required parameter, a wrong type, a value outside an `enum` or an unknown
    /// key stops the call with exit 2, and nothing is sent).
    #[arg(long)]
    pub no_validate: bool,
    /// Cut the result to BYTES (on a block and character boundary) and write the whole of it
    /// to a private file named at the end; 0 for no cap (the default: the result is whole).
    #[arg(long, value_name = "BYTES")]
    pub max_output: Option<usize>,
    /// Start the tool as a task, print the task's id (with --json, its state) and exit 0
    /// without waiting; follow it with `mcpr task get|result|cancel SERVER ID`. A server that
    /// answers at once, without a task, has its result printed.
    #[arg(long)]
    pub detach: bool,
}

pub(crate) async fn run(global: &GlobalArgs, args: CallArgs) -> Outcome {
    let discovery = crate::inline::discover_some(global, &args.inline)?;
    let target =
        crate::cmd::call_target::resolve(&discovery, &args.target, args.inline.is_set()).await?;
    let raw_args = target.arguments;
    let servers = match target.started {
        Some(servers) => servers,
        None => {
            // One server and tool: connect that server alone.
            let server = &target.server;
            let config = discovery.configs.get(server).cloned();
            let config = config.ok_or_else(|| Failure::usage(format!("no server `{server}`")))?;
            // The manager's listing would hold a changed tool; a lone client refuses it here.
            crate::cmd::trust_pins::refuse_held(&discovery.cwd, server, &config, &target.tool)?;
            let open = OneShot::open(discovery.cwd.clone(), server, &config);
            crate::shutdown::until_signal(open)
                .await?
                .map_err(|e| Failure::connection(e.explained()))?
        }
    };
    let target = (target.server, target.tool);
    let known = crate::cmd::call_arguments::KnownTools::new(&discovery, &target.0);
    let validate = !args.no_validate;
    let checked = crate::cmd::call_arguments::checked(&servers, &target, raw_args, validate, known);
    let arguments = match checked.await {
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
    if args.detach {
        let outcome = detach(&servers, &target, arguments, &options, args.json).await;
        servers.stop().await;
        return outcome;
    }
    let mode = live::Mode::choose(args.quiet, args.progress_json);
    let (display, progress) = live::Display::start(mode, &target.1);
    options.progress = progress;
    options.task_status = display.task_status();
    let result = {
        let call = servers.call_tool(&target.0, &target.1, arguments, options);
        tokio::pin!(call);
        // On Ctrl-C or SIGTERM, cancel the call and let it finish telling the server
        // (`notifications/cancelled`) before shutting down.
        tokio::select! {
            result = &mut call => Ok(result),
            code = crate::shutdown::interrupted() => {
                cancel.cancel();
                // A task is cancelled with a request (`tasks/cancel`), which needs a moment.
                let _ = tokio::time::timeout(Duration::from_secs(2), &mut call).await;
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

/// `mcpr call --detach`: start the tool as a task and print its id (or its state as JSON).
async fn detach(
    servers: &crate::connect::OneShot,
    (server, tool): &(String, String),
    arguments: Option<serde_json::Map<String, Value>>,
    options: &CallOptions,
    json: bool,
) -> Outcome {
    let client = servers
        .connection(server)
        .ok_or_else(|| Failure::connection(format!("server `{server}` is not connected")))?;
    let started = client.start_tool_task(tool, arguments, options).await;
    match started.map_err(|e| call_failure(ManagerError::Client(e)))? {
        TaskStart::Started(state) if json => {
            println!("{}", state.to_json());
            Ok(exit::OK)
        }
        TaskStart::Started(state) => {
            println!("{}", term::line(&state.id));
            Ok(exit::OK)
        }
        TaskStart::Finished(output) => print_result(&output, json),
        _ => Err(Failure::internal(
            "the server's answer is not known to this mcpr",
        )),
    }
}

/// A JSON-RPC error (unknown tool, bad arguments, an unknown task) is the caller's mistake, a
/// call past its time limit has a code of its own, a task that failed or was cancelled is the
/// tool's failure; anything else means the connection failed.
pub(crate) fn call_failure(error: ManagerError) -> Failure {
    match error {
        ManagerError::Client(ClientError::Rpc { .. }) => Failure::usage(error),
        ManagerError::Client(ClientError::Timeout { .. }) => Failure::timeout(error),
        ManagerError::Client(ClientError::Task { ref problem, .. }) => match problem {
            TaskProblem::Cancelled | TaskProblem::Failed(_) | TaskProblem::NeedsInput => Failure {
                code: exit::TOOL_ERROR,
                message: error.to_string(),
            },
            TaskProblem::InvalidState(_) => Failure::connection(error.explained()),
            _ => Failure::usage(error),
        },
        other => Failure::connection(other.explained()),
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
