//! The mock MCP server behind `mcpr mock` and the `mcp-mock` binary: a real MCP server over
//! stdio, streamable HTTP or legacy HTTP+SSE, with scriptable tools and fault knobs.
//!
//! It is what our own tests, benchmarks and `mcpr demo` connect to, and what users point their
//! agents at to see how they cope with slow, broken or hostile servers. The crate is split by
//! job, and every transport serves the same [`server::MockServer`]:
//! - [`args`]: the command line ([`MockArgs`]); `lib.rs`: [`run`] and the stdio wiring;
//! - [`http`]: the HTTP modes (`--http`, `--sse`); [`legacy`]: the legacy SSE endpoint;
//!   [`faults`]: the HTTP-level fault knobs; [`events`]: the event store behind resumption;
//!   [`sessions`]: 404, never 500, for a streamable HTTP session that has ended;
//!   [`oauth`]: `--oauth`, the mock as an OAuth 2.1 protected resource and its own
//!   authorization server;
//! - [`server`]: the rmcp `ServerHandler` (handshake, listing, calls, timers);
//! - [`tools`]: the tool catalogue; [`tool_calls`]: what each tool does; [`task_tools`]: the
//!   tools of `--task-tools`, which run as tasks; `ask_prompt`: the prompt of
//!   `--elicit-prompt`, which asks the client first;
//! - [`transport`]: a transport wrapper for the wire-level knobs (forced version, garbage ids);
//! - [`era`]: which era of MCP the mock speaks (`--era`, `--ignore-unknown`);
//! - [`io`]: the stdin/stdout pumps behind `--record`, `--garbage` and `--endless-answer`;
//! - [`process`]: process-level knobs (pid files, grandchild, stderr, signals);
//! - [`conformance`]: `--conformance`, the reference server of the official conformance
//!   suite in both eras (2025-11-25 sessions and stateless 2026-07-28), answered by hand.

mod apps;
mod args;
pub use args::MockArgs;
mod ask_prompt;
mod conformance;
mod content;
mod era;
mod events;
mod faults;
mod http;
mod io;
mod legacy;
mod oauth;
mod process;
mod server;
mod sessions;
mod task_tools;
mod tool_calls;
mod tools;
pub use tool_calls::rich_result;
mod transport;

use std::time::Duration;

use anyhow::Context as _;
use rmcp::model::ProtocolVersion;
use rmcp::service::ServerInitializeError;
use rmcp::transport::async_rw::AsyncRwTransport;

use self::server::{Delay, Knobs, MockServer};
use self::tools::Catalog;
use self::transport::MockTransport;

/// The exit status of a mock that could not start (bad flags, port taken, unreadable
/// tool file): the one `mcpr` uses for internal failures.
pub const EXIT_FAILURE: u8 = 4;

/// How long in-flight work may still finish after stdin closes. Clients close stdin to stop a
/// server and expect it gone quickly, so calls still running after this are dropped.
const EOF_GRACE: Duration = Duration::from_millis(25);

/// How long the stdout pump gets to write what is already queued before the process exits.
const FLUSH_GRACE: Duration = Duration::from_millis(25);

/// Runs the mock server on stdio until stdin closes (or a fault knob ends the process).
pub async fn run(args: MockArgs) -> anyhow::Result<()> {
    if let Some(message) = &args.fail_init {
        // Before anything else, as a server that dies during start-up would.
        eprintln!("{message}");
        std::process::exit(1);
    }
    if args.conformance {
        let endpoint = match args.http {
            Some(addr) => conformance::Endpoint::Http(addr),
            None => conformance::Endpoint::Stdio,
        };
        return conformance::run(args.name.clone(), endpoint).await;
    }
    process::prepare(&process::ProcessKnobs {
        ignore_sigterm: args.ignore_sigterm,
        pid_file: args.pid_file.clone(),
        env_dump: args.env_dump.clone(),
        grandchild: args.grandchild.clone(),
        grandchild_setsid: args.grandchild_setsid.clone(),
        orphan: args.orphan.clone(),
        stderr_line: args.stderr.clone(),
        stderr_flood: args.stderr_flood,
    })?;

    let mut catalog = Catalog::build(
        args.tools,
        args.tool_file.as_deref(),
        args.flood_tool,
        args.rich_tool,
        args.notify_tools,
        args.elicit_tool,
        args.sample_tool,
    )?;
    apps::add_tools(&mut catalog, args.app.as_deref(), args.echo_meta)?;
    if args.task_tools {
        for tool in task_tools::definitions()? {
            catalog.add(tool, tools::Behaviour::Server);
        }
    }
    let forced_version = args
        .protocol_version
        .as_deref()
        .map(|version| serde_json::from_value::<ProtocolVersion>(version.into()))
        .transpose()
        .context("invalid --protocol-version")?;
    let server = MockServer::new(args.name.clone(), catalog, knobs(&args));
    if let Some(options) = http_options(&args, forced_version.clone())? {
        return http::serve(server, options).await;
    }

    // Init knobs stop rmcp from reading stdin until `initialize` is answered; a pump keeps
    // reading so that EOF is still noticed and the server exits promptly.
    let read_pump = args.hang_init || args.init_delay.is_some();
    let stdio = io::Stdio::open(&io::IoOptions {
        record: args.record.clone(),
        garbage: args.garbage,
        endless_answer: args.endless_answer,
        read_pump,
    })
    .await?;
    serve_stdio(server, stdio, forced_version, era_knobs(&args)).await
}

/// The era knobs, from the flags.
fn era_knobs(args: &MockArgs) -> era::EraKnobs {
    era::EraKnobs {
        era: args.era,
        ignore_unknown: args.ignore_unknown,
        exit_on_unknown: args.exit_on_unknown,
        ignore_listen: args.no_listen_ack,
        listen_delay: args.listen_ack_delay.map(Duration::from_millis),
    }
}

/// The HTTP settings, when `--http` or `--sse` is given.
fn http_options(
    args: &MockArgs,
    forced_version: Option<ProtocolVersion>,
) -> anyhow::Result<Option<http::HttpOptions>> {
    let (flavour, addr) = match (args.http, args.sse) {
        (Some(addr), _) => (http::Flavour::Streamable, addr),
        (None, Some(addr)) => (http::Flavour::LegacySse, addr),
        (None, None) => {
            if args.require_token.is_some() || args.http_500 > 0 || args.sse_delay.is_some() {
                anyhow::bail!("--require-token, --http-500 and --sse-delay need --http or --sse");
            }
            return Ok(None);
        }
    };
    if args.garbage > 0 || args.endless_answer {
        anyhow::bail!("--garbage and --endless-answer apply to stdio only");
    }
    if args.oauth && flavour != http::Flavour::Streamable {
        anyhow::bail!("--oauth needs --http");
    }
    Ok(Some(http::HttpOptions {
        flavour,
        addr,
        sse_retry: Duration::from_millis(args.sse_retry),
        json_response: args.json_response,
        knobs: faults::HttpKnobs {
            require_token: args.require_token.clone(),
            expire_session_after: args.expire_session_after,
            http_500: args.http_500,
            drop_stream: args.drop_stream,
            drop_answer: args.drop_answer.clone(),
            fail_resume: args.fail_resume,
            sse_delay: args.sse_delay.map(Duration::from_millis),
            // rmcp's streamable service negotiates by itself; the answer is rewritten on its
            // way out. The legacy endpoint uses the stdio wrapper (`forced_version` below).
            forced_version: match flavour {
                http::Flavour::Streamable => args.protocol_version.clone(),
                http::Flavour::LegacySse => None,
            },
        },
        record: args.record.clone(),
        ignore_sigterm: args.ignore_sigterm,
        era: era_knobs(args),
        oauth: args.oauth.then(|| oauth_knobs(args)).transpose()?,
        forced_version: match flavour {
            http::Flavour::Streamable => None,
            http::Flavour::LegacySse => forced_version,
        },
    }))
}

/// The `--oauth*` settings, from the flags.
fn oauth_knobs(args: &MockArgs) -> anyhow::Result<oauth::OAuthKnobs> {
    let scopes = oauth::parse_scopes(&args.oauth_scopes)
        .context("invalid --oauth-scopes: a scope may not hold `\"`, `\\` or control characters")?;
    let call_scope = match &args.oauth_call_scope {
        Some(scope) => match oauth::parse_scopes(scope).as_deref() {
            Some([one]) => Some(one.clone()),
            _ => anyhow::bail!("invalid --oauth-call-scope: expected one scope"),
        },
        None => None,
    };
    let mut endpoints = Vec::new();
    for entry in &args.oauth_endpoint {
        match entry.split_once('=') {
            Some((field, url))
                if !field.is_empty()
                    && field.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') =>
            {
                endpoints.push((field.to_owned(), url.to_owned()));
            }
            _ => anyhow::bail!("invalid --oauth-endpoint `{entry}`: expected FIELD=URL"),
        }
    }
    Ok(oauth::OAuthKnobs {
        scopes,
        clients: args.oauth_client.clone(),
        registration: !args.oauth_no_registration,
        deny: args.oauth_deny,
        refresh_invalid: args.oauth_refresh_invalid,
        token_ttl: match args.oauth_token_ttl_ms {
            Some(ms) => Duration::from_millis(ms),
            None => Duration::from_secs(args.oauth_token_ttl),
        },
        refreshed_token_ttl: args.oauth_refreshed_token_ttl.map(Duration::from_secs),
        hide_expiry: args.oauth_hide_expiry,
        call_scope,
        authorize_endpoint: args.oauth_authorize_endpoint.clone(),
        endpoints,
        authorization_server: args.oauth_authorization_server.clone(),
        token_scope: args.oauth_token_scope.clone(),
        migrate_to: args.oauth_migrate_to.clone(),
        dpop: args.oauth_dpop,
        iss: args.oauth_iss,
        jwt_bearer: args.oauth_jwt_bearer.clone(),
    })
}

/// The handler knobs, from the flags.
fn knobs(args: &MockArgs) -> Knobs {
    let delay = |hang: bool, ms: Option<u64>| match (hang, ms) {
        (true, _) => Delay::Forever,
        (false, Some(ms)) => Delay::For(Duration::from_millis(ms)),
        (false, None) => Delay::None,
    };
    Knobs {
        init: delay(args.hang_init, args.init_delay),
        list: delay(args.hang_list, args.list_delay),
        call: delay(args.hang_call, args.call_delay),
        exit_after_init: args.exit_after_init,
        crash_after: args.crash_after,
        page_size: match (args.page_size, args.repeat_cursor) {
            (Some(size), _) => Some(size.get()),
            (None, true) => Some(1),
            (None, false) => None,
        },
        repeat_cursor: args.repeat_cursor,
        notify_tools: args.notify_tools,
        elicit_prompt: args.elicit_prompt,
        list_changed_every: args
            .list_changed_ms
            .map(|ms| Duration::from_millis(ms.get())),
        content: args.resources,
        task_tools: args.task_tools,
        app: args.app.clone(),
        cache_hints: server::CacheHints {
            ttl_ms: args.ttl_ms,
            scope: args.cache_scope,
        },
    }
}

/// Serves `server` over the process's stdio until stdin closes.
async fn serve_stdio(
    server: MockServer,
    stdio: io::Stdio,
    forced_version: Option<ProtocolVersion>,
    era_knobs: era::EraKnobs,
) -> anyhow::Result<()> {
    let io::Stdio {
        reader,
        writer,
        eof,
        call_ids,
        out_pump,
    } = stdio;
    let transport = MockTransport::new(
        AsyncRwTransport::new_server(reader, writer),
        forced_version,
        call_ids,
        eof.clone(),
    );
    let transport = era::EraTransport::new(transport, era_knobs);
    // Not spawned: rmcp's serve future is not provably `Send` (a compiler limitation with its
    // generic async traits), and it need not be, as `run` is driven by `block_on`.
    let mut serving = Box::pin(async move {
        match rmcp::serve_server(server, transport).await {
            Ok(running) => {
                running
                    .waiting()
                    .await
                    .context("the MCP service task failed")?;
                Ok(())
            }
            // The client went away before the handshake ended: a normal way to stop.
            Err(ServerInitializeError::ConnectionClosed(_) | ServerInitializeError::Cancelled) => {
                Ok(())
            }
            Err(e) => Err(anyhow::anyhow!("MCP handshake failed: {e}")),
        }
    });

    let result = tokio::select! {
        result = &mut serving => result,
        // After EOF the client is gone: give in-flight work a moment, then stop regardless of
        // what the service says.
        () = eof.cancelled() => {
            let _ = tokio::time::timeout(EOF_GRACE, &mut serving).await;
            Ok(())
        }
    };
    // Dropping the service drops its transport, whose writer end tells the out pump to finish.
    drop(serving);
    if let Some(pump) = out_pump {
        let _ = tokio::time::timeout(FLUSH_GRACE, pump).await;
    }
    result
}
