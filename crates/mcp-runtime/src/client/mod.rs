//! One live connection to one MCP server.
//!
//! [`McpClient::connect`] starts the server (stdio: a child process in its own process group)
//! or reaches it (a `url`: streamable HTTP, or the legacy HTTP+SSE transport, with a fallback
//! from the first to the second), opens the connection within the server's startup timeout
//! (protocol 2026-07-28 through `server/discover`, else the `initialize` handshake with
//! 2025-11-25: see [`era`]), and checks the version the server picked. The client
//! then lists tools (following `nextCursor`), calls them with a per-call timeout and
//! cancellation (both of which send `notifications/cancelled`), answers the server's requests
//! (`roots/list`, `ping`, and `elicitation/create` through the host's callback, also when a
//! 2026-07-28 server embeds them in an `input_required` result), and closes on our own
//! deadline so nothing outlives it.
//!
//! The client is three wings and the features beside them:
//!
//! - `model/`: the protocol model, which knows no transport: eras, definitions and results, a
//!   `tools/call` request, [`ClientError`].
//! - `stdio/`: the stdio road: the server's process and pipe, and after the opening mcpr's own
//!   reader and direct request path in place of rmcp's service.
//! - `http/`: the HTTP road: streamable HTTP and legacy HTTP+SSE, run by rmcp's service.
//! - The connection, whichever road it takes: `open` (start or reach the server, choose the
//!   opening for its era), `probe` (the bounded `server/discover` probe), `link` (the server
//!   after the opening), `requests` (one request and its errors; `envelope`, what it sends
//!   and gets back), `handler` (our side of the
//!   protocol), `raw` (results as sent) and `tally` (log lines counted as they arrive), which
//!   both roads feed, and `options` (what a host sets).
//! - Features: `listing` (bounded paging of lists), `cap` (the cap on a result), `mrtr` (multi
//!   round-trip requests), `ask` (a call's own route for the server's questions, which a
//!   gateway points at its client), `elicitation` (the host callback's types), `progress`
//!   (per-call progress), `prompt` (`prompts/get`), `resource` (`resources/read` and
//!   `completion/complete`), `listen` and `subscribe` (2026-07-28
//!   subscriptions, log levels, resource subscriptions), `skills` (the skills extension),
//!   `tasks` (tools run as tasks, in either revision's form, with `task_watch` routing their
//!   status notifications).
//!
//! ```no_run
//! # async fn demo() -> Result<(), mcp_runtime::client::ClientError> {
//! use mcp_runtime::client::{CallOptions, ConnectOptions, McpClient};
//! use mcp_runtime::config::ServerConfig;
//!
//! let config = ServerConfig::stdio("mcpr", ["mock"]);
//! let client = McpClient::connect("mock", &config, &ConnectOptions::default()).await?;
//! let tools = client.list_tools().await?;
//! let args = serde_json::json!({"text": "hello"});
//! let output = client.call_tool("echo", args.as_object().cloned(), CallOptions::default()).await?;
//! assert_eq!(output.text(), "hello");
//! client.close().await;
//! # let _ = tools; Ok(()) }
//! ```

pub(crate) mod ask;
mod cap;
mod elicitation;
mod envelope;
mod handler;
mod http;
mod link;
mod listen;
mod listing;
pub(crate) mod model;
mod mrtr;
mod open;
mod options;
mod probe;
mod progress;
mod prompt;
mod raw;
mod requests;
mod resource;
mod skills;
mod stdio;
mod subscribe;
mod tally;
mod task_watch;
pub mod tasks;
mod trace;

use std::fmt::Display;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use model::tool_request::{Arguments, ToolRequest};
use rmcp::RoleClient;
use rmcp::model::{ClientRequest, ProtocolVersion, ServerResult};
use rmcp::service::{PeerRequestOptions, RunningService};
use serde_json::{Map, Value};

use crate::config::ServerConfig;

pub use cap::{DEFAULT_MAX_OUTPUT, MAX_OUTPUT_VARIABLE, OutputCap};
pub use elicitation::{
    ElicitationAction, ElicitationHandler, ElicitationRequest, ElicitationResponse,
};
pub use handler::ClientEvent;
pub use listing::{MAX_LISTED_BYTES, MAX_LISTED_ITEMS};
pub use model::era;
pub use model::era::{Era, Opening, SUPPORTED_PROTOCOL_VERSIONS};
pub use model::error::{ClientError, SkillRejection};
pub(crate) use model::tool_request::Retry;
pub use model::types::ResourceTemplateDefinition;
pub use model::types::{
    Content, PromptArgument, PromptDefinition, ResourceDefinition, ServerInfo, ToolDefinition,
    ToolOutput, UI_META_KEY, UI_RESOURCE_URI_LEGACY_KEY,
};
pub use mrtr::MAX_INPUT_ROUNDS;
pub use options::{CallOptions, ConnectOptions};
pub use progress::ProgressUpdate;
pub use skills::{LoadedSkill, SKILLS_EXTENSION, SkillEntry, SkillFile, SkillFiles};
pub use stdio::environment;
pub use stdio::environment::{ServerEnvironment, withhold_from_servers};
pub use stdio::group::group_alive;
pub use stdio::process::{DEFAULT_EXIT_GRACE, MIN_TERM_GRACE};
pub use tasks::{TaskPage, TaskProblem, TaskProtocol, TaskStart, TaskState, TaskStatus};
pub use trace::{BAGGAGE, TRACEPARENT, TRACESTATE, TraceContext, TraceContextError};

use handler::Handler;
pub(crate) use stdio::group::killed_groups_gone;
use stdio::process::ServerProcess;
#[cfg(feature = "gateway")]
pub(crate) use subscribe::LOG_LEVELS;

/// A fitting capacity for the channels of [`ConnectOptions::events`] and
/// [`CallOptions::progress`].
pub const EVENT_BUFFER: usize = 256;

/// Stderr lines attached to errors.
const STDERR_TAIL_LINES: usize = 20;

/// A connected MCP server.
///
/// Calls take `&self` and may run concurrently; share the client with an `Arc`. Call
/// [`close`](Self::close) to shut it down; dropping it kills the server's process group as a
/// last resort.
pub struct McpClient {
    server: String,
    /// The server after the opening: rmcp's service (remote) or our own reader (stdio).
    peer: link::ServerPeer,
    /// rmcp's service of a remote server; `None` for stdio, which has none after the opening.
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    /// The child process of a stdio server; `None` for remote servers.
    process: Option<ServerProcess>,
    /// The URL of a remote server, for its error messages; `None` for stdio.
    url: Option<reqwest::Url>,
    /// `stdio`, `http` (streamable HTTP) or `sse` (legacy HTTP+SSE).
    transport: &'static str,
    info: ServerInfo,
    handshake: Duration,
    config: ServerConfig,
    /// Shared with the handler, which feeds it the server's progress notifications.
    progress: std::sync::Arc<progress::ProgressRouter>,
    /// How the connection was opened (era, probes).
    opening: Opening,
    /// Answers the requests a server embeds in `input_required` results.
    handler: Handler,
    /// Protocol 2026-07-28: the `subscriptions/listen` stream for tool list changes and
    /// subscribed resources (see `subscribe`).
    listening: tokio::sync::Mutex<listen::Listening>,
    /// Becomes `true` once the connection's first request has its answer, when the opening
    /// sent none (see [`send_first`]): no `subscriptions/listen` goes out before.
    first_answer: Option<tokio::sync::watch::Receiver<bool>>,
    /// Protocol 2026-07-28: the log level every request asks for, as an index in
    /// [`LOG_LEVELS`] (see `subscribe`).
    log_level: std::sync::atomic::AtomicUsize,
    /// The caching hints of the last tool list.
    tools_hints: Mutex<crate::cache::CacheHints>,
    /// The caching hints of the `server/discover` result the connection opened with.
    discovery_hints: Option<crate::cache::CacheHints>,
    /// The caching hints of the last resource, template and prompt lists, by method.
    list_hints: Mutex<std::collections::HashMap<&'static str, crate::cache::CacheHints>>,
    /// Tools of the last list that may be called again when an answer is lost (read-only or
    /// idempotent).
    repeatable_tools: Mutex<std::collections::HashSet<String>>,
    /// The direct request path of a stdio connection (see [`direct`]); `None` over HTTP,
    /// whose requests take rmcp's service.
    direct: Option<std::sync::Arc<stdio::direct::Direct>>,
    /// The direct road of a tool call over streamable HTTP (see [`http::direct`]); `None`
    /// for stdio and the legacy HTTP+SSE transport.
    http_direct: Option<http::direct::HttpDirect>,
    /// The `_meta` every request carries on a connection without `initialize`.
    era_meta: Option<stdio::direct::EraMeta>,
    /// The bound on a tool call, as the config and environment set it at connect time
    /// (read once: the environment lookup cost a call more than its bookkeeping).
    tool_timeout: Option<Duration>,
    /// Where the opening's era and discovery were remembered (forgotten again when a replayed
    /// discovery turns out stale).
    #[cfg(feature = "cache")]
    cache: Option<std::sync::Arc<crate::cache::ToolCache>>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.server)
            .field("transport", &self.transport)
            .field("pid", &self.pid())
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Start (stdio) or reach the server and complete the MCP handshake, bounded by the server's
    /// startup timeout. On failure nothing is left running, and the error carries the tail of
    /// the server's stderr.
    pub async fn connect(
        server: &str,
        config: &ServerConfig,
        options: &ConnectOptions,
    ) -> Result<McpClient, ClientError> {
        let place = crate::telemetry::Place {
            server,
            ..Default::default()
        };
        let mut operation = crate::telemetry::start(crate::telemetry::Kind::Connect, place);
        let result = Self::open_connection(server, config, options).await;
        match &result {
            Ok(client) => {
                operation.opened(client.transport, &client.info.protocol_version);
                operation.finish(crate::telemetry::Outcome::Ok);
            }
            Err(error) => operation.finish(crate::telemetry::Outcome::Failed(error.kind())),
        }
        result
    }

    /// [`connect`](Self::connect) without its span.
    async fn open_connection(
        server: &str,
        config: &ServerConfig,
        options: &ConnectOptions,
    ) -> Result<McpClient, ClientError> {
        let progress = std::sync::Arc::new(progress::ProgressRouter::default());
        let handler = Handler {
            server: server.to_owned(),
            roots: options.roots.clone(),
            events: options.events.clone(),
            tools_changed_waiting: Default::default(),
            elicitation: options.elicitation.clone(),
            progress: progress.clone(),
            identity: options.identity.clone(),
            raw: raw::RawResults::default(),
            log_tally: tally::LogTally::default(),
            asking: ask::AskingCalls::default(),
            relay_input: options.relay_input,
            tasks: Default::default(),
        };
        let started = Instant::now();
        let bound = config.startup_timeout();
        let opened = open::open(server, config, options, handler.clone(), bound).await?;
        let (service, peer, process, url, transport) = (
            opened.service,
            opened.peer,
            opened.process,
            opened.url,
            opened.transport,
        );
        let discovery_hints = opened.discovery_hints;
        let Some(info) = server_info(&peer) else {
            let error =
                handshake_error(server, "no initialize result recorded", process.as_ref()).await;
            stop(process).await;
            return Err(error);
        };
        let era_meta = peer
            .peer_info()
            .filter(|info| !info.protocol_version.has_initialize())
            .map(|info| {
                use rmcp::ClientHandler as _;
                let ours = handler.get_info();
                stdio::direct::EraMeta::new(
                    info.protocol_version.clone(),
                    ours.client_info,
                    ours.capabilities,
                )
            });
        let http_direct = match (opened.http_direct, peer.peer_info(), url.as_ref()) {
            (Some(parts), Some(info), Some(url)) => http::direct::HttpDirect::for_connection(
                parts,
                url,
                &info.protocol_version,
                opened.opening.era == Era::Modern,
            ),
            _ => None,
        };
        let first_answer = if opened.opening.discovery_cached {
            send_first(&peer)
        } else {
            None
        };
        let listener = match opened.opening.era {
            Era::Modern => listen::start(&peer, &handler, first_answer.clone()).await,
            Era::Legacy => None,
        };
        let client = McpClient {
            server: server.to_owned(),
            peer,
            service: Mutex::new(service),
            process,
            url,
            transport,
            info,
            handshake: started.elapsed(),
            config: config.clone(),
            progress,
            opening: opened.opening,
            handler,
            listening: tokio::sync::Mutex::new(listen::Listening {
                listener,
                resources: Default::default(),
            }),
            first_answer,
            log_level: std::sync::atomic::AtomicUsize::new(subscribe::default_log_level()),
            tools_hints: Mutex::default(),
            discovery_hints,
            list_hints: Mutex::default(),
            repeatable_tools: Mutex::default(),
            #[cfg(feature = "cache")]
            cache: options.cache.clone(),
            direct: opened.direct,
            http_direct,
            era_meta,
            tool_timeout: config.tool_timeout(),
        };
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&client.info.protocol_version.as_str()) {
            let error = ClientError::UnsupportedProtocol {
                server: server.to_owned(),
                version: client.info.protocol_version.clone(),
            };
            client.close().await;
            return Err(error);
        }
        Ok(client)
    }

    /// The server's name as configured.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// What the server reported in `initialize`.
    pub fn info(&self) -> &ServerInfo {
        &self.info
    }

    /// How the connection was opened: the era it speaks, whether the cache chose the
    /// opening, and how many `server/discover` probes it took.
    pub fn opening(&self) -> Opening {
        self.opening
    }

    /// Protocol 2026-07-28: whether the server has acknowledged the subscription to tool list
    /// changes (`subscriptions/listen`). It is opened in the background, so a server that is
    /// slow to acknowledge it costs the connection nothing; `false` also when there is none
    /// (another revision, no listener for events, or a server without list changes).
    pub fn listening(&self) -> bool {
        // Busy only while a resource subscription opens a new stream: not acknowledged yet.
        self.listening.try_lock().is_ok_and(|listening| {
            listening
                .listener
                .as_ref()
                .is_some_and(listen::Listener::acknowledged)
        })
    }

    /// The transport in use: `stdio`, `http` (streamable HTTP) or `sse` (legacy HTTP+SSE,
    /// also when a URL without a type fell back to it).
    pub fn transport(&self) -> &'static str {
        self.transport
    }

    /// Time from spawn to a completed handshake.
    pub fn handshake_time(&self) -> Duration {
        self.handshake
    }

    /// OS process id of a stdio server (also its process group id).
    pub fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(ServerProcess::pid)
    }

    /// The last lines the server wrote on stderr.
    pub fn stderr_tail(&self, lines: usize) -> Vec<String> {
        self.process
            .as_ref()
            .map(|p| p.stderr_tail_now(lines))
            .unwrap_or_default()
    }

    /// `true` once the connection is gone (the process exited or the transport closed).
    pub fn is_closed(&self) -> bool {
        self.peer.is_transport_closed()
            || self.direct.as_ref().is_some_and(|d| d.is_closed())
            || self
                .process
                .as_ref()
                .is_some_and(|p| p.exit_status().is_some())
    }

    /// Resolves when the connection is gone, for whatever reason (for a stdio server: when
    /// its process exits, or its output ended or could not be read on).
    pub async fn closed(&self) {
        match &self.process {
            Some(process) => match &self.direct {
                // A server that writes a line without end is given up while it still runs.
                Some(direct) => tokio::select! {
                    _ = process.exited() => {}
                    () = direct.ended() => {}
                },
                None => {
                    process.exited().await;
                }
            },
            None => {
                while !self.peer.is_transport_closed() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    /// Call a tool. The server's tool timeout (or `options.timeout`) bounds the call; on
    /// timeout or cancellation the server is sent `notifications/cancelled`. A tool that fails
    /// on its own terms returns `Ok` with `is_error: true`. A server that answers
    /// `input_required` gets its embedded requests answered by the host's handlers and the
    /// call retried, at most [`MAX_INPUT_ROUNDS`] times.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<ToolOutput, ClientError> {
        let mut call = ToolRequest::new(tool.to_owned(), Arguments::Object(arguments));
        self.call_tool_with(&mut call, options).await
    }

    /// [`call_tool`](Self::call_tool) with the request's parameters lent, so that a caller
    /// that may send them again (the manager, after a connection lost before they left) keeps
    /// them without a copy. Rounds of questions leave their answers in `call`.
    pub(crate) async fn call_tool_with(
        &self,
        call: &mut ToolRequest,
        mut options: CallOptions,
    ) -> Result<ToolOutput, ClientError> {
        let tool = crate::telemetry::Kind::Tool(&call.params.name);
        let operation = crate::telemetry::start(tool, self.place(&options.trace));
        if let Some(traceparent) = operation.traceparent() {
            options.trace = options.trace.continued_by(traceparent);
        }
        let result = self.send_tool_call(call, options).await;
        operation.finish(match &result {
            Ok(output) if output.is_error => crate::telemetry::Outcome::ToolError,
            Ok(_) => crate::telemetry::Outcome::Ok,
            Err(error) => crate::telemetry::Outcome::Failed(error.kind()),
        });
        result
    }

    /// Where this connection's spans sit, under `trace`.
    fn place<'a>(&'a self, trace: &'a TraceContext) -> crate::telemetry::Place<'a> {
        crate::telemetry::Place {
            server: &self.server,
            transport: Some(self.transport),
            protocol: Some(self.info.protocol_version.as_str()),
            traceparent: trace.traceparent(),
            tracestate: trace.tracestate(),
        }
    }

    /// Send a `tools/call` and answer its rounds of questions.
    async fn send_tool_call(
        &self,
        call: &mut ToolRequest,
        options: CallOptions,
    ) -> Result<ToolOutput, ClientError> {
        if !options.trace.is_empty() {
            // In the parameters' own `_meta`, which both roads send.
            let meta = call.params.meta.get_or_insert_with(Default::default);
            options.trace.write_into(&mut meta.0.0);
        }
        match self.call_tool_plainly(call, &options).await {
            // A 2025-11-25 server refuses a tool that must run as a task, unrun, with -32601
            // (rmcp's tool model drops `execution.taskSupport`, which would have said so):
            // call it again as a task. An unknown tool gets the same error again.
            Err(error @ ClientError::Rpc { code: -32601, .. })
                if self.task_protocol() == Some(TaskProtocol::Core) =>
            {
                let tool = call.params.name.to_string();
                let Ok(params) = call.to_params() else {
                    return Err(error);
                };
                let as_task = self.call_tool_as_task(&tool, params.arguments, options);
                match Box::pin(as_task).await {
                    Err(ClientError::Rpc { code: -32601, .. }) => Err(error),
                    other => other,
                }
            }
            other => other,
        }
    }

    /// One `tools/call` as the caller sent it, through its rounds of questions; a task the
    /// server makes of it is followed to its result.
    async fn call_tool_plainly(
        &self,
        call: &mut ToolRequest,
        options: &CallOptions,
    ) -> Result<ToolOutput, ClientError> {
        let tool = &*call.params.name;
        let timeout = options.timeout.or(self.tool_timeout);
        let started = Instant::now();
        // Formatted only when an error names it.
        let method = ToolCall(tool);
        let input = options.input.as_ref();
        // While it runs, the server's questions about it go to its asker (see `ask`).
        let _asking = input.map(|input| self.handler.asking.register(input.clone()));
        // Looked up only when an answer is lost (rare, and only over HTTP).
        let repeatable = || {
            self.repeatable_tools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(tool)
        };
        for _round in 0..=MAX_INPUT_ROUNDS {
            let send = || {
                self.request_with_progress(
                    envelope::Outgoing::Tool(call),
                    &method,
                    timeout,
                    options.cancel.as_ref(),
                    options.progress.as_ref(),
                    input,
                )
            };
            let answer = match send().await {
                Err(ClientError::AnswerLost { .. }) if repeatable() => {
                    tracing::debug!(server = %self.server, "{method}: answer lost; the tool is read-only or idempotent, calling again");
                    send().await.map_err(http::lost::lost_again)
                }
                other => other,
            };
            let result = match answer? {
                envelope::Answer::Tool(envelope::ToolAnswer::Wire(sent)) if is_task(&sent) => {
                    if options.pass_tasks {
                        return Ok(tasks::handed_back(sent));
                    }
                    let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
                    return Box::pin(self.follow_created(&sent, options, left, &method)).await;
                }
                envelope::Answer::Tool(sent) => {
                    return envelope::tool_output(sent)
                        .map_err(|e| self.protocol_error(&method, format!("invalid result: {e}")));
                }
                envelope::Answer::Typed(result) => result,
            };
            match *result {
                // rmcp's parse, when the result as sent was not kept.
                ServerResult::CallToolResult(result) => {
                    let output = serde_json::to_value(&result).and_then(|wire| match wire {
                        Value::Object(wire) => ToolOutput::from_wire(wire),
                        other => serde_json::from_value(other),
                    });
                    return output
                        .map_err(|e| self.protocol_error(&method, format!("invalid result: {e}")));
                }
                // A 2026-07-28 server made a task of the call: wait for its result.
                ServerResult::CreateTaskResult(created) => {
                    let created = match serde_json::to_value(&created) {
                        Ok(Value::Object(created)) => created,
                        _ => return Err(self.protocol_error(&method, "invalid task")),
                    };
                    if options.pass_tasks {
                        return Ok(tasks::handed_back(created));
                    }
                    let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
                    return Box::pin(self.follow_created(&created, options, left, &method)).await;
                }
                // Some servers answer a tool with no output with `{}`.
                ServerResult::EmptyResult(_) => {
                    return Ok(ToolOutput::default());
                }
                ServerResult::InputRequiredResult(asked) => {
                    let left = timeout.map(|t| t.saturating_sub(started.elapsed()));
                    let asker = input.map(|input| (input, left));
                    let method = method.to_string();
                    // Boxed: a rare path, and a large future.
                    let round = Box::pin(mrtr::next_round(&self.handler, asked, &method, asker));
                    let retry = match options.cancel.as_ref() {
                        Some(cancel) => tokio::select! {
                            round = round => round?,
                            () = cancel.cancelled() => return Err(ClientError::Cancelled {
                                server: self.server.clone(),
                                method: method.clone(),
                            }),
                        },
                        None => round.await?,
                    };
                    call.params.input_responses = retry.input_responses;
                    call.params.request_state = retry.request_state;
                }
                _ => return Err(self.protocol_error(&method, "unexpected response type")),
            }
        }
        Err(self.protocol_error(
            &method,
            format!("the server still asked for input after {MAX_INPUT_ROUNDS} rounds"),
        ))
    }

    /// Send `ping` and wait for the answer.
    pub async fn ping(&self) -> Result<(), ClientError> {
        let request = ClientRequest::PingRequest(Default::default());
        self.request(request, "ping", self.config.request_timeout(), None)
            .await
            .map(|_| ())
    }

    /// Shut the server down: close the transport (for stdio: stdin EOF), give the process a
    /// short grace to exit, then SIGTERM and finally SIGKILL its whole process group. Returns
    /// the exit status of a stdio server. Safe to call twice.
    pub async fn close(&self) -> Option<std::process::ExitStatus> {
        self.close_within(DEFAULT_EXIT_GRACE).await
    }

    /// [`close`](Self::close) with the server's time to exit by itself set to `grace`: after
    /// stdin EOF it gets `grace`, after SIGTERM to its group `grace` again (at least
    /// [`MIN_TERM_GRACE`]), then SIGKILL. A one-shot command passes a short grace, since its
    /// result is already out and a server that lingers after EOF (server-everything takes
    /// ~350 ms) must not hold up the exit.
    pub async fn close_within(&self, grace: Duration) -> Option<std::process::ExitStatus> {
        let started = Instant::now();
        if let Some(process) = &self.process {
            // While it still runs: a server may exit as soon as its stdin closes, and then
            // what it started is no longer found below it.
            process.note_descendants();
        }
        let service = self
            .service
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut service) = service {
            // Cancelling the service drops the transport.
            // rmcp's own close waits for its worker; bound it by our grace, not its 3 + 3 s.
            let _ = service.close_with_timeout(grace).await;
        }
        // A stdio connection's reader drops the transport, and with it the child's stdin (EOF).
        self.peer.close().await;
        // One grace for both waits: the worker may only finish once the server has exited.
        let left = grace.saturating_sub(started.elapsed());
        match &self.process {
            Some(process) => Some(process.terminate(left).await),
            None => None,
        }
    }
}

/// End `operation` as `result` says.
pub(super) fn finish<T>(operation: crate::telemetry::Operation, result: &Result<T, ClientError>) {
    operation.finish(match result {
        Ok(_) => crate::telemetry::Outcome::Ok,
        Err(error) => crate::telemetry::Outcome::Failed(error.kind()),
    });
}

fn stderr_now(process: Option<&ServerProcess>) -> Vec<String> {
    process
        .map(|p| p.stderr_tail_now(STDERR_TAIL_LINES))
        .unwrap_or_default()
}

/// Kill whatever a failed connection left running.
async fn stop(process: Option<ServerProcess>) {
    if let Some(process) = process {
        process.terminate(Duration::ZERO).await;
    }
}

/// A failed handshake: if the process died, say how (exit status and stderr); otherwise report
/// the protocol failure.
async fn handshake_error(
    server: &str,
    message: &str,
    process: Option<&ServerProcess>,
) -> ClientError {
    if let Some(process) = process {
        // Let a dying process finish so the error can say how it ended.
        if let Some(status) = process.exited_within(Duration::from_millis(250)).await {
            return ClientError::Exited {
                server: server.to_owned(),
                phase: "initialize".into(),
                status: Some(status.to_string()),
                stderr: process.stderr_tail(STDERR_TAIL_LINES).await,
                held_back: process.held_back(),
            };
        }
    }
    ClientError::Handshake {
        server: server.to_owned(),
        message: message.to_owned(),
        stderr: match process {
            Some(process) => process.stderr_tail(STDERR_TAIL_LINES).await,
            None => Vec::new(),
        },
        held_back: process.map(ServerProcess::held_back).unwrap_or_default(),
    }
}

/// Convert an rmcp value into ours through the wire format they both follow.
/// Send a `ping` as the connection's first request, in the background; the receiver becomes
/// `true` once it is answered (or failed, or timed out). rmcp's streamable HTTP transport reads
/// the answer to the first request it sends as the opening's answer, draining that request's
/// stream until a response arrives; when the opening sent nothing (a cached `server/discover`
/// result), a `subscriptions/listen` sent first would hold the transport forever, its stream
/// never answering. So no listen stream opens before this ping is answered. (A stdio
/// connection reads for itself and needs nothing.)
fn send_first(peer: &link::ServerPeer) -> Option<tokio::sync::watch::Receiver<bool>> {
    let link::ServerPeer::Service(peer) = peer else {
        return None;
    };
    let (answered, first_answer) = tokio::sync::watch::channel(false);
    let peer = peer.clone();
    tokio::spawn(async move {
        let ping = ClientRequest::PingRequest(Default::default());
        let sent = peer.send_request_with_option(ping, PeerRequestOptions::default());
        if let Ok(handle) = sent.await {
            let _ = tokio::time::timeout(FIRST_PING_BOUND, handle.await_response()).await;
        }
        answered.send_replace(true);
    });
    Some(first_answer)
}

/// Wait until the connection's first request is answered (see [`send_first`]).
pub(crate) async fn first_answered(first_answer: Option<tokio::sync::watch::Receiver<bool>>) {
    if let Some(mut first_answer) = first_answer {
        // A dropped sender is an ended ping too.
        let _ = first_answer.wait_for(|answered| *answered).await;
    }
}

/// How long the background `ping` of [`send_first`] waits for its answer.
const FIRST_PING_BOUND: Duration = Duration::from_secs(30);

fn server_info(peer: &link::ServerPeer) -> Option<ServerInfo> {
    let info = peer.peer_info()?;
    let implementation = info.server_info.clone().unwrap_or_default();
    Some(ServerInfo {
        name: implementation.name,
        version: implementation.version,
        protocol_version: protocol_string(&info.protocol_version),
        instructions: info.instructions.clone(),
    })
}

/// Whether rmcp's streamable HTTP transport made up this error because a response stream was
/// lost (it marks them in `data`; the marker check itself is private to rmcp).
fn is_transport_closed(error: &rmcp::ErrorData) -> bool {
    error.data.as_ref().is_some_and(|data| {
        data.get("io.modelcontextprotocol/transportClosed")
            .is_some()
    })
}

/// Whether a `tools/call` result is a 2026-07-28 task handle rather than the tool's output.
fn is_task(result: &Map<String, Value>) -> bool {
    result.get("resultType").and_then(Value::as_str) == Some("task")
}

/// A `tools/call` request as errors name it: "tools/call `TOOL`".
struct ToolCall<'a>(&'a str);

impl Display for ToolCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tools/call `{}`", self.0)
    }
}

fn protocol_string(version: &ProtocolVersion) -> String {
    version.as_str().to_owned()
}
