//! The mock's command line: every flag of `mcpr mock` and `mcp-mock` ([`MockArgs`]), with its
//! help text. What the flags do is wired up in `lib.rs` and the modules it names.

use std::net::SocketAddr;
use std::num::{NonZeroU64, NonZeroUsize};
use std::path::PathBuf;

use crate::{era, oauth, server};

/// Flags of the mock server (`mcpr mock`, `mcp-mock`).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "It speaks real MCP (JSON-RPC lines over stdio) and offers built-in tools (echo, add, sleep, \
        fail, image, structured, mixed, progress, huge, roots), generated tools and tools from a \
        file. Fault knobs make it slow, broken or hostile, so you can test how an MCP client or \
        agent copes. All flags are optional and can be combined.\n\n\
        The server exits with status 0 shortly after stdin is closed (calls still running are \
        dropped). With --http or --sse it serves HTTP instead, prints `listening on URL` on \
        stderr (port 0 picks a free port) and runs until SIGINT or SIGTERM.\n\n\
        Built-in tools:\n  \
        echo {text}             returns `text` (alias: `message`)\n  \
        add {a, b}              returns the sum as text and as structuredContent {\"sum\": ...}\n  \
        sleep {ms}              sleeps, then returns \"slept <ms> ms\"; stops on notifications/cancelled\n  \
        fail                    returns isError: true with \"failure requested\"\n  \
        image                   returns a 1x1 PNG image\n  \
        structured              returns {\"temperature\": 21.5, \"unit\": \"C\"} (declares an outputSchema)\n  \
        mixed                   returns one content block of each kind plus structuredContent\n  \
        progress {steps, interval_ms}\n                          \
        sends notifications/progress (if the call has a progressToken), then \"done\"\n  \
        huge {bytes}            returns one text block of exactly `bytes` bytes (at most 512 MiB)\n  \
        roots                   asks the client for roots/list and returns the root URIs\n\n\
        Exit status: 0 on stdin EOF (over HTTP: on SIGINT or SIGTERM), 1 for --fail-init and \
        --exit-after-init, 101 for --crash-after.\n\n\
        Examples:\n  \
        mcpr mock --tools 500 --page-size 100\n  \
        mcpr mock --call-delay 2000 --stderr-flood\n  \
        mcpr mock --garbage 3 --crash-after 5\n  \
        mcpr mock --http 127.0.0.1:0 --drop-stream 1 --expire-session-after 10\n  \
        mcpr mock --http 127.0.0.1:0 --oauth --oauth-token-ttl 60 --oauth-call-scope mcp:admin\n  \
        mcpr mock --sse 127.0.0.1:3001 --require-token secret"
)]
pub struct MockArgs {
    /// Server name reported in `serverInfo`.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "mcpr-mock",
        help_heading = "Server"
    )]
    pub name: String,

    /// Answer `initialize` with exactly this protocol version instead of negotiating (to test
    /// that clients reject versions they do not support).
    #[arg(long, value_name = "VERSION", help_heading = "Server")]
    pub protocol_version: Option<String>,

    /// Which era of MCP to speak: `legacy` (the `initialize` handshake only; `server/discover`
    /// gets "method not found"), `both`, or `2026-07-28` (`server/discover` only; `initialize`
    /// is refused).
    #[arg(
        long,
        value_name = "ERA",
        value_enum,
        default_value = "legacy",
        help_heading = "Server"
    )]
    pub era: era::EraKnob,

    /// Never answer `server/discover` (with `--era legacy`), as old servers that ignore
    /// unknown methods do.
    #[arg(long, help_heading = "Server")]
    pub ignore_unknown: bool,

    /// Never answer `server/discover` (with `--era legacy`) and exit when the next message
    /// arrives, as servers built on the Python SDK before 1.7 do after a method they do not
    /// know (over HTTP: exit at once).
    #[arg(long, help_heading = "Server", conflicts_with = "ignore_unknown")]
    pub exit_on_unknown: bool,

    /// Never answer (nor acknowledge) `subscriptions/listen`, as a server whose notification
    /// stream is broken would (2026-07-28 clients must not wait for it).
    #[arg(long, help_heading = "Server")]
    pub no_listen_ack: bool,

    /// Serve `subscriptions/listen` (and so acknowledge it) only MS milliseconds after it
    /// arrived, as a slow server would (stdio).
    #[arg(
        long,
        value_name = "MS",
        conflicts_with = "no_listen_ack",
        help_heading = "Server"
    )]
    pub listen_ack_delay: Option<u64>,

    /// Put the caching hint `ttlMs: MS` on `server/discover` and `tools/list` results
    /// (2026-07-28): how long a client may consider them fresh. Without it they say `0`.
    #[arg(long, value_name = "MS", help_heading = "Server")]
    pub ttl_ms: Option<u64>,

    /// The `cacheScope` put on `server/discover` and `tools/list` results: `public` (anyone
    /// may cache them) or `private` (only for the same authorization context).
    #[arg(long, value_name = "SCOPE", value_enum, help_heading = "Server")]
    pub cache_scope: Option<server::Scope>,

    /// Serve what the official MCP conformance suite checks, in both eras: the reference
    /// tools (test_simple_text, test_tool_with_progress, test_input_required_result_*, ...),
    /// resources, templates, prompts and completions; sessions for `initialize` clients and
    /// stateless 2026-07-28 (`server/discover`, per-request `_meta`, header validation,
    /// `subscriptions/listen`, input-required results) for the rest. Over stdio or `--http`;
    /// the other tool and fault flags do not apply.
    ///
    /// Tasks, in both eras: `greet {name}` (never a task), `slow_compute {seconds, label}`
    /// (sleeps, may be a task), `failing_job` (must be a task; completes with isError),
    /// `protocol_error_job` (may be a task; fails with a JSON-RPC error), `confirm_delete
    /// {filename}` (asks the client to confirm), `multi_input` (asks two questions at once),
    /// `test_tool_with_task` (must be a task; asks `user_name` before the task starts).
    /// 2025-11-25 sessions: `tools/call` with `params.task` answers `{task}`; `tasks/get`,
    /// `tasks/result` (questions reach the client as requests on its stream), `tasks/list`,
    /// `tasks/cancel`, `notifications/tasks/status`; -32601 for a required task called
    /// without `task`. 2026-07-28: a client declaring the `io.modelcontextprotocol/tasks`
    /// extension gets `resultType: "task"`, then `tasks/get` (result, error or
    /// `inputRequests` inlined), `tasks/update`, `tasks/cancel`; -32021 without it. Tasks live
    /// 300 s (`ttl`), poll every 100 ms (`pollInterval`), at most 256 per session (or per
    /// server, stateless).
    #[arg(
        long,
        help_heading = "Server",
        conflicts_with_all = ["sse", "oauth", "require_token", "era", "protocol_version", "tools", "tool_file", "resources", "record"]
    )]
    pub conformance: bool,

    /// Also serve N generated echo tools, `tool_0` .. `tool_{N-1}`, each taking `{text}`.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = "Tools")]
    pub tools: usize,

    /// Also serve the tools in FILE: a JSON array of `{name, description?, inputSchema?,
    /// result?}` (any other Tool field, e.g. title or outputSchema, is passed through). A call
    /// returns `result` (a CallToolResult object) if given, else echoes its arguments as JSON
    /// text. A tool named like a built-in or generated tool replaces it; a name repeated in the
    /// file is listed twice, like a broken server would (calls reach the first).
    #[arg(long, value_name = "FILE", help_heading = "Tools")]
    pub tool_file: Option<PathBuf>,

    /// Also serve the tool `flood {count}`, which sends `count` notifications as fast as it
    /// can (log messages, every 16th a tools/list_changed, progress when the call has a token)
    /// before it answers, to test that clients bound what they queue.
    #[arg(long, help_heading = "Tools")]
    pub flood_tool: bool,

    /// Also serve the tool `rich`, whose result sets every optional field of every content
    /// type (annotations, _meta, fields no protocol revision defines), structuredContent, a
    /// result _meta and an unknown result field, to test that clients pass results on whole.
    #[arg(long, help_heading = "Tools")]
    pub rich_tool: bool,

    /// Also serve the tools `log {text, level?}`, which sends `text` as a log message
    /// (`notifications/message`, level `info` unless given, logger `mock`) unless it is below
    /// the level set with `logging/setLevel`, and `touch {uri}`, which sends
    /// `notifications/resources/updated` for `uri` if the client subscribed to it. The server
    /// then offers logging and resource subscriptions (`resources/subscribe`, `unsubscribe`).
    #[arg(long, help_heading = "Tools")]
    pub notify_tools: bool,

    /// Also serve the tool `elicit {message}`, which asks the client for a `name`
    /// (`elicitation/create`, form mode) and returns what came back: `accept <content>`,
    /// `decline`, `cancel`, or the client's error as an error result.
    #[arg(long, help_heading = "Tools")]
    pub elicit_tool: bool,

    /// Also serve the prompt `ask`, whose `prompts/get` asks the client for a `name`
    /// (`elicitation/create`) and then answers `Prompt for <what came back>`.
    #[arg(long, help_heading = "Tools")]
    pub elicit_prompt: bool,

    /// Also serve an MCP App: the tool `app`, whose `_meta.ui.resourceUri` is URI, and URI
    /// itself, listed and read as `text/html;profile=mcp-app` (a page naming `--name`).
    #[arg(long, value_name = "URI", help_heading = "Tools")]
    pub app: Option<String>,

    /// Also serve the tool `meta`, which returns the `_meta` its `tools/call` carried.
    #[arg(long, help_heading = "Tools")]
    pub echo_meta: bool,

    /// Also serve the tool `sample {prompt}`, which asks the client's model to answer `prompt`
    /// (`sampling/createMessage`) and returns `sampled <text>`, or the client's error as an
    /// error result.
    #[arg(long, help_heading = "Tools")]
    pub sample_tool: bool,

    /// Also serve tools that run as tasks (the `io.modelcontextprotocol/tasks` extension, for
    /// clients that declare it; the server then advertises it): `task_sleep {ms, steps?}`
    /// works in steps, reporting each as its status message and as progress, and stops when
    /// cancelled (`tasks/cancel`); `task_ask {message?}` asks the client for a `name` inside
    /// the task (`input_required`, answered with `tasks/update`); `task_required {text}` must
    /// run as a task (else -32021). `tasks/get` inlines the result. The 2025-11-25 form of
    /// tasks (`params.task`, `tasks/result`, `tasks/list`) is served by --conformance.
    #[arg(long, help_heading = "Tools")]
    pub task_tools: bool,

    /// Paginate `tools/list`: P tools per page, with an opaque `nextCursor`.
    #[arg(long, value_name = "P", help_heading = "Tools")]
    pub page_size: Option<NonZeroUsize>,

    /// Broken pagination: every page returns the same `nextCursor`, forever (to test client
    /// loop guards). Without --page-size, pages hold one tool.
    #[arg(long, help_heading = "Tools")]
    pub repeat_cursor: bool,

    /// After `notifications/initialized`, send `notifications/tools/list_changed` every T ms.
    #[arg(long, value_name = "T", help_heading = "Tools")]
    pub list_changed_ms: Option<NonZeroU64>,

    /// Also serve resources (`mock://NAME/public`, `mock://NAME/private`), a resource template
    /// (`mock://NAME/items/{id}`) and prompts (`greet {name}`, `secret`). `resources/read`
    /// answers `contents of URI` for any URI, listed or not, as a careless server would.
    #[arg(long, help_heading = "Tools")]
    pub resources: bool,

    /// Print MSG on stderr and exit with status 1 at once, before reading anything.
    #[arg(long, value_name = "MSG", help_heading = "Faults")]
    pub fail_init: Option<String>,

    /// Wait MS milliseconds before answering `initialize`.
    #[arg(long, value_name = "MS", help_heading = "Faults")]
    pub init_delay: Option<u64>,

    /// Never answer `initialize`.
    #[arg(long, help_heading = "Faults")]
    pub hang_init: bool,

    /// Wait MS milliseconds before answering each `tools/list`.
    #[arg(long, value_name = "MS", help_heading = "Faults")]
    pub list_delay: Option<u64>,

    /// Never answer `tools/list`.
    #[arg(long, help_heading = "Faults")]
    pub hang_list: bool,

    /// Wait MS milliseconds before running each `tools/call` (cancellable).
    #[arg(long, value_name = "MS", help_heading = "Faults")]
    pub call_delay: Option<u64>,

    /// Never answer any `tools/call` (until the client cancels it).
    #[arg(long, help_heading = "Faults")]
    pub hang_call: bool,

    /// Exit with status 1 as soon as `notifications/initialized` arrives.
    #[arg(long, help_heading = "Faults")]
    pub exit_after_init: bool,

    /// Answer N tool calls normally, then exit with status 101 on receiving call N+1, without
    /// answering it (`--crash-after 0` dies on the first call).
    #[arg(long, value_name = "N", help_heading = "Faults")]
    pub crash_after: Option<usize>,

    /// Write N non-JSON garbage lines on stdout before the first message and before every
    /// `tools/call` response (always between whole JSON lines, never inside one).
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = "Faults")]
    pub garbage: usize,

    /// Answer the first `tools/call` with a line that never ends: the start of its answer,
    /// then text without a line break for as long as the client reads (stdio only).
    #[arg(long, help_heading = "Faults")]
    pub endless_answer: bool,

    /// Write TEXT as one line on stderr at start.
    #[arg(long, value_name = "TEXT", help_heading = "Process")]
    pub stderr: Option<String>,

    /// Write lines on stderr as fast as possible for as long as the server runs (from a
    /// separate thread; serving is not affected), to test that clients drain and bound stderr.
    #[arg(long, help_heading = "Process")]
    pub stderr_flood: bool,

    /// At start, spawn a grandchild process (`sleep 3600`, same process group) and write its pid
    /// to PIDFILE, to test that clients kill the whole process group.
    #[arg(long, value_name = "PIDFILE", help_heading = "Process")]
    pub grandchild: Option<PathBuf>,

    /// At start, spawn a grandchild process (`sleep 3600`) in a session of its own (setsid),
    /// hence out of the mock's process group, and write its pid to PIDFILE: a signal to the
    /// group misses it.
    #[arg(long, value_name = "PIDFILE", help_heading = "Process")]
    pub grandchild_setsid: Option<PathBuf>,

    /// At start, leave a process behind as a daemon does (`sleep 3600` in a session of its
    /// own, whose parent has already exited) and write its pid to PIDFILE.
    #[arg(long, value_name = "PIDFILE", help_heading = "Process")]
    pub orphan: Option<PathBuf>,

    /// Write the mock's own pid to FILE at start.
    #[arg(long, value_name = "FILE", help_heading = "Process")]
    pub pid_file: Option<PathBuf>,

    /// Write the environment the mock started with to FILE at start, one `NAME=VALUE` a line
    /// (to assert what a client passes to its servers).
    #[arg(long, value_name = "FILE", help_heading = "Process")]
    pub env_dump: Option<PathBuf>,

    /// Ignore SIGTERM, so that clients have to escalate to SIGKILL.
    #[arg(long, help_heading = "Process")]
    pub ignore_sigterm: bool,

    /// Append every raw line received on stdin to FILE, flushed as it arrives (to assert what a
    /// client sent, e.g. `notifications/cancelled`). Over HTTP: one JSON line per request,
    /// `{"http": METHOD, "session", "lastEventId", "protocolVersion", "mcpMethod", "mcpName",
    /// "mcpParams", "body"}` (the MCP headers as sent; `mcpParams` holds the `Mcp-Param-*`
    /// ones), followed by `{"refused": "expired", "session", "body"}` when
    /// `--expire-session-after` answered it 404.
    #[arg(long, value_name = "FILE", help_heading = "Process")]
    pub record: Option<PathBuf>,

    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:0).
    #[arg(
        long,
        value_name = "ADDR",
        conflicts_with = "sse",
        help_heading = "HTTP"
    )]
    pub http: Option<SocketAddr>,

    /// Serve the legacy HTTP+SSE transport (2024-11-05) at http://ADDR/sse instead of stdio.
    #[arg(long, value_name = "ADDR", help_heading = "HTTP")]
    pub sse: Option<SocketAddr>,

    /// Streamable HTTP without sessions, answering with plain JSON instead of event streams.
    #[arg(long, requires = "http", help_heading = "HTTP")]
    pub json_response: bool,

    /// Answer 401 with a `WWW-Authenticate` challenge unless the request carries
    /// `Authorization: Bearer TOKEN`.
    #[arg(long, value_name = "TOKEN", help_heading = "HTTP")]
    pub require_token: Option<String>,

    /// Answer the first N `tools/call` POSTs with HTTP 500 and a text body.
    #[arg(long, value_name = "N", default_value_t = 0, help_heading = "HTTP")]
    pub http_500: usize,

    /// Expire each session after N JSON-RPC requests: request N+1 and everything after it on
    /// that session get 404, so the client must initialize a new one. Requests the session
    /// took before are still answered; the session then ends (its GET stream too).
    #[arg(long, value_name = "N", requires = "http", help_heading = "HTTP")]
    pub expire_session_after: Option<usize>,

    /// End the event streams of the first N `tools/call` responses right after their first
    /// (priming) event, before the result, so the client must resume with `Last-Event-ID`.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        requires = "http",
        help_heading = "HTTP"
    )]
    pub drop_stream: usize,

    /// End the response stream of the first request of METHOD (with `tools/call:NAME`, the
    /// first call of tool NAME) before its answer, once: the server ran the request, the
    /// client never hears how it went. Repeatable.
    #[arg(
        long,
        value_name = "METHOD[:NAME]",
        requires = "http",
        help_heading = "HTTP"
    )]
    pub drop_answer: Vec<String>,

    /// Answer every resumption (GET with `Last-Event-ID`) with HTTP 500.
    #[arg(long, requires = "http", help_heading = "HTTP")]
    pub fail_resume: bool,

    /// Slow SSE: hold back every chunk of every event stream for MS milliseconds.
    #[arg(long, value_name = "MS", help_heading = "HTTP")]
    pub sse_delay: Option<u64>,

    /// The `retry:` interval (ms) announced on streamable HTTP event streams: how long a
    /// client waits before resuming a dropped stream.
    #[arg(long, value_name = "MS", default_value_t = 3000, help_heading = "HTTP")]
    pub sse_retry: u64,

    /// Protect /mcp with OAuth 2.1 and be its authorization server on the same origin:
    /// metadata at /.well-known/oauth-protected-resource/mcp and
    /// /.well-known/oauth-authorization-server, /register, /authorize (approves at once, PKCE
    /// S256 required, http loopback redirect URIs only), /token, and counters at
    /// /__oauth/stats. Every /mcp request then needs `Authorization: Bearer` with a live access
    /// token, else 401 with a `resource_metadata` challenge. URLs in metadata and challenges
    /// follow the request's Host header; registered clients must authenticate at /token the
    /// way they registered (`token_endpoint_auth_method`).
    #[arg(
        long,
        requires = "http",
        conflicts_with_all = ["sse", "require_token"],
        help_heading = "OAuth"
    )]
    pub oauth: bool,

    /// Pre-register a confidential client (either client_secret_basic or client_secret_post;
    /// any http loopback redirect URI). Repeatable.
    #[arg(
        long,
        value_name = "ID:SECRET",
        requires = "oauth",
        help_heading = "OAuth"
    )]
    pub oauth_client: Vec<oauth::ClientCredentials>,

    /// No dynamic client registration: no `registration_endpoint`, and /register answers 404.
    #[arg(long, requires = "oauth", help_heading = "OAuth")]
    pub oauth_no_registration: bool,

    /// Deny every authorization: /authorize redirects back with `error=access_denied`.
    #[arg(long, requires = "oauth", help_heading = "OAuth")]
    pub oauth_deny: bool,

    /// Refuse every refresh with 400 `invalid_grant`, so the client must authorize again.
    #[arg(long, requires = "oauth", help_heading = "OAuth")]
    pub oauth_refresh_invalid: bool,

    /// Access tokens expire SECS seconds after they are issued (`expires_in`); 0 issues tokens
    /// that are already expired.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 3600,
        requires = "oauth",
        help_heading = "OAuth"
    )]
    pub oauth_token_ttl: u64,

    /// Leave `expires_in` out of token responses (tokens still expire): the client learns of
    /// the expiry from the 401.
    #[arg(long, requires = "oauth", help_heading = "OAuth")]
    pub oauth_hide_expiry: bool,

    /// Like --oauth-token-ttl, in milliseconds (`expires_in` is rounded up to whole seconds).
    #[arg(
        long,
        value_name = "MS",
        conflicts_with = "oauth_token_ttl",
        requires = "oauth",
        help_heading = "OAuth"
    )]
    pub oauth_token_ttl_ms: Option<u64>,

    /// Access tokens issued by a refresh expire SECS seconds after they are issued (default:
    /// as --oauth-token-ttl). With a short first token and a long refreshed one, a test sees
    /// exactly one refresh however slowly it runs.
    #[arg(long, value_name = "SECS", requires = "oauth", help_heading = "OAuth")]
    pub oauth_refreshed_token_ttl: Option<u64>,

    /// The space-separated `scopes_supported`, granted when a client asks for no scope.
    /// Requested scopes are granted as asked, known or not.
    #[arg(
        long,
        value_name = "SCOPES",
        default_value = "mcp:tools",
        requires = "oauth",
        help_heading = "OAuth"
    )]
    pub oauth_scopes: String,

    /// `tools/call` also needs SCOPE in the token (else 403 `insufficient_scope`, naming the
    /// token's scopes plus SCOPE). SCOPE need not be in --oauth-scopes: then only clients that
    /// ask for it get it.
    #[arg(long, value_name = "SCOPE", requires = "oauth", help_heading = "OAuth")]
    pub oauth_call_scope: Option<String>,

    /// Advertise URL, as it is, as the `authorization_endpoint` of the authorization server
    /// metadata (the real endpoint stays at /authorize): a hostile authorization server for
    /// testing what a client opens.
    #[arg(long, value_name = "URL", requires = "oauth", help_heading = "OAuth")]
    pub oauth_authorize_endpoint: Option<String>,
    /// Advertise URL, as it is, as FIELD of the authorization server metadata (`issuer`,
    /// `token_endpoint`, `registration_endpoint`, ...; repeatable), the real endpoints staying
    /// where they are: a hostile authorization server for testing where a client sends what.
    #[arg(
        long,
        value_name = "FIELD=URL",
        requires = "oauth",
        help_heading = "OAuth"
    )]
    pub oauth_endpoint: Vec<String>,
    /// Name URL, as it is, as the only authorization server of the protected resource
    /// metadata (the mock still serves its own at its origin).
    #[arg(long, value_name = "URL", requires = "oauth", help_heading = "OAuth")]
    pub oauth_authorization_server: Option<String>,
    /// The `scope` every token response carries, verbatim, whatever was granted: a hostile
    /// authorization server for testing what a client prints.
    #[arg(long, value_name = "TEXT", requires = "oauth", help_heading = "OAuth")]
    pub oauth_token_scope: Option<String>,
    /// Move `/mcp` to a second authorization server once a token has been used: from then on
    /// the resource metadata names `http://HOST:PORT/as2`, served by this same process on its
    /// own port (so HOST is this mock under another name, such as `localhost` when clients
    /// connect to 127.0.0.1: another origin), and only that server's tokens are accepted.
    #[arg(long, value_name = "HOST", requires = "oauth", help_heading = "OAuth")]
    pub oauth_migrate_to: Option<String>,
    /// Offer DPoP-bound tokens (ES256; proofs are required, not verified): `on`; or a hostile
    /// server that answers every proof at the `token` endpoint, or at the `resource`, with a
    /// new `use_dpop_nonce` challenge.
    #[arg(long, value_name = "MODE", requires = "oauth", help_heading = "OAuth")]
    pub oauth_dpop: Option<oauth::DpopKnob>,
    /// Advertise the `iss` authorization response parameter (RFC 9207) and send it `right`;
    /// or, as a hostile server, leave it `missing` or send a `wrong` one.
    #[arg(long, value_name = "MODE", requires = "oauth", help_heading = "OAuth")]
    pub oauth_iss: Option<oauth::IssKnob>,
    /// Accept the JWT-bearer grant (workload identity federation) for this assertion only;
    /// any other is refused with an error description carrying a terminal escape sequence.
    #[arg(long, value_name = "JWT", requires = "oauth", help_heading = "OAuth")]
    pub oauth_jwt_bearer: Option<String>,
}
