//! `mcpr shell`: an interactive session over one manager. Tools are called by their
//! exposed names through a [`Session`] whose MCP tools follow the manager (late servers,
//! `list_changed`, reconnects), and `/mcp` commands inspect and change the servers — reload,
//! reconnect, enable, disable — without restarting the shell.
//!
//! On a terminal, lines are edited with completion and history; otherwise they are read from
//! stdin as they come, which is how scripts and tests drive it. Quitting (Ctrl-D, `/exit`, end
//! of input, SIGTERM) disconnects every server, so no server process outlives the shell.
//! Fed from stdin, it exits with [`LINES_FAILED`] when any line failed, so a script notices.
//! Its start-up is one line counting the servers as they connect (and naming those that
//! failed), then the prompt.
//!
//! This file is the REPL: the loop, its commands and the manager's events. [`input`] reads
//! lines, [`complete`] completes them, [`render`] formats what is printed.

mod arguments;
mod complete;
mod input;
mod render;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::io::IsTerminal;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use mcp_runtime::ManagerEvent;
use mcp_runtime::client::CallOptions;
use mcp_runtime::client::{ClientError, McpClient};
use mcp_runtime::config::{Discovery, writer};
use mcp_runtime::manager::McpManager;
use mcp_runtime::session::{RegisteredTool, Session, SessionError};
use mcp_runtime::tools::{McpTool, NamingStyle};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use self::arguments::parse_arguments;
use self::complete::Vocabulary;
use self::input::{Input, LineSource, Printer, TerminalGuard};
use self::render::{
    Listing, count, describe_change, no_servers, print_help, print_listings, prompt_line,
    resource_line,
};
use crate::advice::Advise as _;
use crate::connect::{Progress, StartOptions, connect, start};
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::term;

/// The exit code of a shell fed from stdin (not a terminal) when any of its lines failed: an
/// unknown tool or command, bad arguments, a failed call, or a tool that returned `isError`.
pub(crate) const LINES_FAILED: u8 = exit::TOOL_ERROR;

/// How long a cancelled call may take to tell its server before the shell moves on.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// Arguments of `mcpr shell`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Type /help in the shell for its commands. Fed from stdin, the shell exits with 1 \
when any line failed.\n\nExamples:\n  mcp_everything_echo {\"message\": \"hi\"}\n  mcp_files_read @args.json\n  /mcp status"
)]
pub(crate) struct ShellArgs {
    /// Name tools as Claude Code does (`mcp__server__tool`).
    #[arg(long)]
    pub claude_names: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: crate::inline::InlineArgs,
    /// Cut each tool result to BYTES (on a block and character boundary); the whole result
    /// goes to a private file (~/.cache/mcpr/outputs) that the cut result names. 0 for no
    /// cap. Default: $MCPR_MAX_OUTPUT, else 100000 (about 25k tokens).
    #[arg(long, value_name = "BYTES")]
    pub max_output: Option<usize>,
}

/// Run the shell until Ctrl-D, `/exit`, the end of stdin, or SIGTERM.
pub(crate) async fn run(global: &GlobalArgs, args: ShellArgs) -> Outcome {
    let discovery = crate::inline::discover(global, &args.inline)?;
    let output_cap = crate::cmd::agent_output_cap(args.max_output)?;
    let mut signals = Signals::install()?;
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let known = configured_names(&discovery);
    // One line counting the servers as they connect, then the prompt.
    let options = StartOptions {
        progress: Progress::Summary,
        ..connect_options(false)
    };
    let starting = start(
        discovery.cwd.clone(),
        discovery.configs,
        discovery.sources,
        options,
    );
    // Dropping an unfinished start drops its clients, which kills their processes.
    let started = tokio::select! {
        started = starting => started,
        stop = signals.next() => return Err(stop.failure()),
    };
    let naming = if args.claude_names {
        NamingStyle::Claude
    } else {
        NamingStyle::Mcpr
    };
    let mut shell = Shell::new(global, started.manager, naming, known);
    shell.session.set_output_cap(output_cap);

    let _terminal = interactive.then(TerminalGuard::save);
    let lines = open_input(interactive, &shell.vocabulary).await;
    let outcome = match lines {
        Ok((mut lines, printer)) => {
            shell.printer = printer;
            if interactive {
                shell.greet();
            }
            shell.run(&mut lines, &mut signals).await
        }
        Err(e) => Err(Failure::internal(e)),
    };
    shell.session.manager().disconnect_all().await;
    outcome
}

/// The line editor on a terminal (plain lines if it cannot start), else plain stdin lines.
async fn open_input(
    interactive: bool,
    vocabulary: &Arc<RwLock<Vocabulary>>,
) -> Result<(LineSource, Option<Printer>), String> {
    if interactive {
        match LineSource::editor(vocabulary.clone(), input::history_path()).await {
            Ok((lines, printer)) => return Ok((lines, Some(printer))),
            Err(e) => eprintln!("warning: line editing unavailable ({e}); reading plain lines"),
        }
    }
    LineSource::piped().map(|lines| (lines, None))
}

/// Every server name discovery saw, enabled or not (for completion of `/mcp enable`).
fn configured_names(discovery: &Discovery) -> BTreeSet<String> {
    discovery.servers.iter().map(|s| s.name.clone()).collect()
}

/// SIGINT and SIGTERM, listened to for the whole life of the shell.
struct Signals {
    interrupt: Signal,
    terminate: Signal,
}

/// A signal that stops something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Interrupt,
    Terminate,
}

impl Signals {
    fn install() -> Result<Self, Failure> {
        let listen = |kind| {
            signal(kind).map_err(|e| Failure::internal(format!("cannot handle signals: {e}")))
        };
        Ok(Signals {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
        })
    }

    /// The next SIGINT or SIGTERM.
    async fn next(&mut self) -> Stop {
        tokio::select! {
            Some(()) = self.interrupt.recv() => Stop::Interrupt,
            Some(()) = self.terminate.recv() => Stop::Terminate,
            else => std::future::pending().await,
        }
    }
}

impl Stop {
    /// The failure a shell stopped by this signal exits with (128 + signal number).
    fn failure(self) -> Failure {
        let code = match self {
            Stop::Interrupt => 128 + libc::SIGINT as u8,
            Stop::Terminate => 128 + libc::SIGTERM as u8,
        };
        Failure {
            code,
            message: "interrupted".into(),
        }
    }
}

/// Whether to read another line.
enum Flow {
    Continue,
    /// Quit; with the signal that asked for it, if any.
    Quit(Option<Stop>),
}

/// What woke the shell up while it waited for a line.
enum Wake {
    Input(Input),
    /// A manager event; `None` when some were missed (lagged), so everything is re-read.
    Event(Option<ManagerEvent>),
    Signal(Stop),
}

/// The shell's state: the session, what the completer knows, and the tools last announced.
struct Shell<'a> {
    global: &'a GlobalArgs,
    session: Session,
    events: broadcast::Receiver<ManagerEvent>,
    /// Shared with the line editor's completer.
    vocabulary: Arc<RwLock<Vocabulary>>,
    /// Server names seen by the last discovery.
    configured: BTreeSet<String>,
    /// Tool name → server, as last announced (to say what changed).
    announced: BTreeMap<String, String>,
    /// Prints above the prompt on a terminal; `None` off a terminal (notes go to stderr).
    printer: Option<Printer>,
    /// Lines that failed (for the exit code of a shell fed from stdin).
    failed_lines: usize,
}

impl<'a> Shell<'a> {
    fn new(
        global: &'a GlobalArgs,
        manager: McpManager,
        naming: NamingStyle,
        configured: BTreeSet<String>,
    ) -> Self {
        // Subscribe before the first refresh, so no change after it can be missed.
        let events = manager.subscribe();
        let mut shell = Shell {
            global,
            session: Session::new(manager, naming),
            events,
            vocabulary: Arc::default(),
            configured,
            announced: BTreeMap::new(),
            printer: None,
            failed_lines: 0,
        };
        // Start-up already showed every server's tools: nothing to announce.
        let _ = shell.refresh();
        shell
    }

    /// One line of welcome on a terminal.
    fn greet(&mut self) {
        let tools = count(self.announced.len(), "tool");
        let servers = count(self.session.manager().server_names().len(), "server");
        self.note(format!(
            "{tools} from {servers}. Type /help for commands, Ctrl-D to quit."
        ));
    }

    /// Read and run lines until the input ends or the shell is told to quit.
    async fn run(&mut self, lines: &mut LineSource, signals: &mut Signals) -> Outcome {
        loop {
            let wake = tokio::select! {
                input = lines.next() => Wake::Input(input),
                event = next_event(&mut self.events) => Wake::Event(event),
                stop = signals.next() => Wake::Signal(stop),
            };
            let flow = match wake {
                Wake::Input(Input::Line(line)) => self.execute(&line, signals).await,
                // The editor already cleared the line.
                Wake::Input(Input::Interrupted) => Flow::Continue,
                Wake::Input(Input::Eof) => Flow::Quit(None),
                Wake::Input(Input::Failed(e)) => {
                    return Err(Failure::internal(format!("cannot read input: {e}")));
                }
                Wake::Event(event) => {
                    self.on_event(event);
                    Flow::Continue
                }
                Wake::Signal(stop) => self.on_idle_signal(stop),
            };
            match flow {
                Flow::Continue => {}
                Flow::Quit(None) if self.failed_lines > 0 && self.printer.is_none() => {
                    eprintln!("{} failed", count(self.failed_lines, "line"));
                    return Ok(LINES_FAILED);
                }
                Flow::Quit(None) => return Ok(exit::OK),
                Flow::Quit(Some(stop)) => return Err(stop.failure()),
            }
        }
    }

    /// A signal while no command runs. On a terminal, Ctrl-C at the prompt is a key the
    /// editor handles, so a SIGINT here is a stray one (between two prompts) and is ignored.
    fn on_idle_signal(&self, stop: Stop) -> Flow {
        match (stop, self.printer.is_some()) {
            (Stop::Interrupt, true) => Flow::Continue,
            _ => Flow::Quit(Some(stop)),
        }
    }

    /// Run one line: a command (`/...`) or a tool call.
    async fn execute(&mut self, line: &str, signals: &mut Signals) -> Flow {
        let line = line.trim();
        if line.is_empty() {
            return Flow::Continue;
        }
        if line.starts_with('/') {
            // Commands other than calls have nothing to cancel on the server: Ctrl-C just
            // stops waiting for them (their background work is the manager's).
            tokio::select! {
                flow = self.command(line) => flow,
                stop = signals.next() => match stop {
                    Stop::Interrupt => {
                        eprintln!("interrupted");
                        Flow::Continue
                    }
                    Stop::Terminate => Flow::Quit(Some(stop)),
                },
            }
        } else {
            self.call(line, signals).await
        }
    }

    /// `/exit`, `/help`, `/mcp ...`.
    async fn command(&mut self, line: &str) -> Flow {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["/exit"] | ["/quit"] => return Flow::Quit(None),
            ["/help"] => print_help(),
            ["/mcp"] | ["/mcp", "status"] => self.status(),
            ["/mcp", "list"] => self.list(),
            ["/mcp", "reload"] => self.reload().await,
            ["/mcp", "reconnect", name] => self.reconnect(name).await,
            ["/mcp", "enable", name] => self.set_enabled(name, true).await,
            ["/mcp", "disable", name] => self.set_enabled(name, false).await,
            ["/mcp", "test", name] => self.test(name).await,
            // `reauth` / `unauth`: older names for the same thing.
            ["/mcp", "login" | "reauth", name] => self.login(name).await,
            ["/mcp", "logout" | "unauth", name] => self.logout(name).await,
            ["/mcp", "resources"] => self.resources().await,
            ["/mcp", "prompts"] => self.prompts().await,
            ["/mcp", "trust"] => self.trust(false).await,
            ["/mcp", "trust", "--yes" | "-y"] => self.trust(true).await,
            [
                "/mcp",
                sub @ ("reconnect" | "enable" | "disable" | "test" | "login" | "logout"),
            ] => {
                eprintln!("usage: /mcp {sub} NAME");
                self.failed_lines += 1;
            }
            _ => {
                eprintln!("unknown command `{line}` (see /help)");
                self.failed_lines += 1;
            }
        }
        Flow::Continue
    }

    /// `TOOL_NAME [ARGS]`: call the tool and print its result. Ctrl-C cancels the call (the
    /// server is sent `notifications/cancelled`) and returns to the prompt.
    async fn call(&mut self, line: &str, signals: &mut Signals) -> Flow {
        let (name, rest) = line
            .split_once(char::is_whitespace)
            .map_or((line, ""), |(name, rest)| (name, rest.trim()));
        let tool = self.session.get(name);
        let schema = match tool {
            Some(RegisteredTool::Mcp(tool)) => Some(tool.definition.input_schema.to_value()),
            Some(RegisteredTool::Host(_)) => None,
            None => {
                eprintln!("error: {}", self.unknown_tool(name));
                self.failed_lines += 1;
                return Flow::Continue;
            }
        };
        let checked = |a| crate::cmd::argument_check::check_tool(tool, a);
        let arguments = match parse_arguments(rest, schema.as_ref()).and_then(checked) {
            Ok(arguments) => arguments,
            Err(e) => {
                eprintln!("error: {e}");
                self.failed_lines += 1;
                return Flow::Continue;
            }
        };
        let cancel = CancellationToken::new();
        let mut options = CallOptions::default().with_cancel(cancel.clone());
        // The progress line only on a terminal (where the printer is): never in a script.
        let mode = match self.printer {
            Some(_) => crate::live::Mode::choose(false, false),
            None => crate::live::Mode::Off,
        };
        let (display, progress) = crate::live::Display::start(mode, name);
        options.progress = progress;
        let call = self.session.call(name, arguments, options);
        tokio::pin!(call);
        let (result, stop) = tokio::select! {
            result = &mut call => (result, None),
            stop = signals.next() => {
                cancel.cancel();
                // Let the call send `notifications/cancelled` before moving on.
                let result = tokio::time::timeout(CANCEL_GRACE, &mut call)
                    .await
                    .unwrap_or(Err(SessionError::Aborted(mcp_runtime::tools::Aborted)));
                (result, Some(stop))
            }
        };
        display.finish().await;
        let failed = !matches!(&result, Ok(output) if !output.is_error);
        match result {
            Ok(output) => crate::cmd::call::print_output(&output),
            Err(SessionError::Aborted(_)) => eprintln!("call cancelled"),
            Err(e) => eprintln!("error: {}", term::text(&e.to_string())),
        }
        self.failed_lines += usize::from(failed);
        match stop {
            Some(Stop::Terminate) => Flow::Quit(Some(Stop::Terminate)),
            _ => Flow::Continue,
        }
    }

    /// Why `name` is not a tool, with a hint when it is a tool's raw name.
    fn unknown_tool(&self, name: &str) -> String {
        let raw_matches: Vec<&str> = self
            .mcp_tools()
            .filter(|tool| tool.tool == name)
            .map(|tool| tool.name.as_str())
            .collect();
        match raw_matches.as_slice() {
            [] => format!(
                "no tool named `{name}`{} (see /mcp list, or /help)",
                crate::suggest::did_you_mean(name, self.mcp_tools().map(|t| t.name.as_str()))
            ),
            names => format!(
                "no tool named `{name}`; did you mean {}?",
                names.join(" or ")
            ),
        }
    }

    /// `/mcp list`: every server with its tools.
    fn list(&self) {
        let tools: Vec<&McpTool> = self.mcp_tools().collect();
        render::print_tool_list(&self.session.manager().reports(), &tools);
    }

    /// `/mcp status`: the table of `mcpr status`, with each server's process id.
    fn status(&self) {
        let reports = self.session.manager().reports();
        if reports.is_empty() {
            println!("{}", no_servers());
        } else {
            crate::cmd::status::print_table(&reports, &[], true);
        }
    }

    /// `/mcp reload`: discover again and apply the difference — added servers start, removed
    /// ones stop, changed ones restart, the others keep running — then refresh the session.
    /// If discovery fails as a whole, the running servers are kept.
    async fn reload(&mut self) {
        let discovery = match crate::discovery::discover(self.global) {
            Ok(discovery) => discovery,
            Err(failure) => {
                eprintln!("error: {failure}; servers left as they were");
                return;
            }
        };
        let manager = self.session.manager().clone();
        if let Some(files) = crate::discovery::broken_sources(&discovery, &manager) {
            eprintln!("error: {files} cannot be read; servers left as they were");
            return;
        }
        self.configured = configured_names(&discovery);
        let count_servers = discovery.configs.len();
        let summary = crate::connect::reload(
            &manager,
            discovery.configs,
            discovery.sources,
            Progress::Show,
        )
        .await;
        self.settle();
        println!(
            "reloaded: {} ({}, {})",
            term::line(&summary.to_string()),
            count(count_servers, "server"),
            count(self.announced.len(), "tool")
        );
    }

    /// `/mcp trust [--yes]`: the review of `mcpr trust` (what changed in the project's config
    /// files, which servers would start); with `--yes`, trust the files as shown and reload, so
    /// that their servers start. The shell owns the terminal, so the question of `mcpr trust`
    /// is the `--yes` here.
    async fn trust(&mut self, yes: bool) {
        let reviewed = match crate::cmd::trust::review(self.global) {
            Ok(Some(reviewed)) => reviewed,
            Ok(None) => return,
            Err(failure) => {
                eprintln!("error: {failure}");
                self.failed_lines += 1;
                return;
            }
        };
        if !yes {
            println!("Type `/mcp trust --yes` to trust these files and start their servers.");
            return;
        }
        if let Err(failure) = crate::cmd::trust::record(reviewed) {
            eprintln!("error: {failure}");
            self.failed_lines += 1;
            return;
        }
        self.reload().await;
    }

    /// `/mcp reconnect NAME`.
    async fn reconnect(&mut self, name: &str) {
        let started = Instant::now();
        let result = self.session.manager().reconnect_server(name).await;
        match result {
            Ok(()) => println!(
                "`{name}` reconnected in {} ms",
                started.elapsed().as_millis()
            ),
            Err(e) => eprintln!("error: {}", term::text(&e.explained())),
        }
        self.settle();
    }

    /// `/mcp enable NAME` / `/mcp disable NAME`: persist the choice in mcpr's user config,
    /// then apply it at once (connect or disconnect that server).
    async fn set_enabled(&mut self, name: &str, enabled: bool) {
        let flags = crate::discovery::CliFlags::from(self.global);
        let discovery = flags.discover();
        if let Some(failure) = &discovery.failure {
            eprintln!("error: {}: {}", failure.path, failure.error);
            return;
        }
        let change = match writer::set_enabled(&discovery, &flags.options(), name, enabled) {
            Ok(change) => change,
            Err(e) => {
                eprintln!("error: {}", e.explained());
                return;
            }
        };
        let word = if enabled { "enabled" } else { "disabled" };
        if change.changed {
            println!(
                "`{name}` {word} (saved in {})",
                mcp_runtime::fsutil::display_path(&change.path)
            );
        } else {
            println!("`{name}` was already {word}");
        }
        if let Some(still_off) = &change.still_off {
            println!("note: {}", still_off.explained());
        }
        if enabled {
            self.start_server(name).await;
        } else {
            self.session.manager().disconnect_server(name).await;
        }
        self.settle();
    }

    /// Connect `name` if discovery (re-run after a config change) now starts it.
    async fn start_server(&mut self, name: &str) {
        let discovery = crate::discovery::CliFlags::from(self.global).discover();
        self.configured = configured_names(&discovery);
        let Some(config) = discovery.configs.get(name).cloned() else {
            eprintln!(
                "`{name}` is not started: {}",
                crate::discovery::why_not_started(&discovery, name)
            );
            return;
        };
        let configs = IndexMap::from([(name.to_owned(), config)]);
        let sources: IndexMap<_, _> = discovery
            .sources
            .get(name)
            .map(|source| (name.to_owned(), source.clone()))
            .into_iter()
            .collect();
        let manager = self.session.manager().clone();
        connect(&manager, configs, sources, connect_options(true)).await;
    }

    /// `/mcp login NAME`: the browser login of `mcpr login`, then a reconnect that uses it.
    async fn login(&mut self, name: &str) {
        let args = crate::cmd::login::LoginArgs {
            server: name.to_owned(),
            no_browser: false,
            scopes: Vec::new(),
        };
        if let Err(failure) = crate::cmd::login::login(self.global, args).await {
            eprintln!("error: {}", term::text(&failure.to_string()));
            return;
        }
        self.reconnect(name).await;
    }

    /// `/mcp logout NAME`: forget the stored login, and drop the connection that used it.
    async fn logout(&mut self, name: &str) {
        let args = crate::cmd::login::LogoutArgs {
            server: name.to_owned(),
        };
        if let Err(failure) = crate::cmd::login::logout(self.global, args).await {
            eprintln!("error: {}", term::text(&failure.to_string()));
            return;
        }
        self.session.manager().disconnect_server(name).await;
        self.settle();
    }

    /// `/mcp test NAME`: reconnect, list tools and ping, with the time each took.
    async fn test(&mut self, name: &str) {
        let manager = self.session.manager().clone();
        let started = Instant::now();
        let connected = manager.reconnect_server(name).await;
        let connect_ms = started.elapsed().as_millis();
        self.settle();
        if let Err(e) = connected {
            let e = term::text(&e.explained()).into_owned();
            println!("{name}: FAILED to connect after {connect_ms} ms: {e}");
            return;
        }
        let Some(client) = manager.client(name) else {
            println!("{name}: FAILED: the connection dropped right after connecting");
            return;
        };
        let started = Instant::now();
        let tools = match client.list_tools().await {
            Ok(tools) => tools.len(),
            Err(e) => {
                let e = term::text(&e.to_string()).into_owned();
                println!("{name}: FAILED tools/list: {e}");
                return;
            }
        };
        let list_ms = started.elapsed().as_millis();
        let started = Instant::now();
        if let Err(e) = client.ping().await {
            let e = term::text(&e.to_string()).into_owned();
            println!("{name}: FAILED ping: {e}");
            return;
        }
        let ping_ms = started.elapsed().as_millis();
        println!(
            "{name}: ok (connect {connect_ms} ms, tools/list {list_ms} ms with {}, ping {ping_ms} ms)",
            count(tools, "tool")
        );
    }

    /// `/mcp resources`.
    async fn resources(&self) {
        let listings = self.per_server(|client| async move { client.list_resources().await });
        print_listings(listings.await, "resource", resource_line);
    }

    /// `/mcp prompts`.
    async fn prompts(&self) {
        let listings = self.per_server(|client| async move { client.list_prompts().await });
        print_listings(listings.await, "prompt", prompt_line);
    }

    /// Run `list` on every connected server at once; `None` for servers not connected.
    async fn per_server<T, F, Fut>(&self, list: F) -> Vec<Listing<T>>
    where
        F: Fn(Arc<McpClient>) -> Fut,
        Fut: Future<Output = Result<Vec<T>, ClientError>>,
    {
        let manager = self.session.manager();
        let reports = manager.reports();
        let lists = reports.iter().map(|report| {
            let client = manager.client(&report.name);
            let list = &list;
            async move {
                match client {
                    Some(client) => Some(list(client).await),
                    None => None,
                }
            }
        });
        let results = futures::future::join_all(lists).await;
        reports
            .into_iter()
            .zip(results)
            .map(|(report, result)| Listing {
                server: report.name,
                state: report.state,
                result,
            })
            .collect()
    }

    /// A manager event while waiting for a line: re-read the tools when they changed (a late
    /// server, `list_changed`, a reconnect) and say what happened to a server's connection.
    fn on_event(&mut self, event: Option<ManagerEvent>) {
        let message = match &event {
            Some(ManagerEvent::Failed { server, error, .. }) => {
                let error = error.explained();
                let first = error.lines().next().unwrap_or_default();
                Some(crate::cmd::tools::with_name(server, first))
            }
            Some(ManagerEvent::Reconnecting {
                server, attempt, ..
            }) => Some(format!(
                "server `{server}`: connection lost; reconnecting (attempt {attempt})"
            )),
            Some(ManagerEvent::Suspended { server, reason }) => {
                Some(format!("server `{server}`: {reason}"))
            }
            _ => None,
        };
        if let Some(message) = message {
            self.note(message);
        }
        if matches!(event, None | Some(ManagerEvent::ToolsChanged { .. }))
            && let Some(change) = self.refresh()
        {
            self.note(change);
        }
    }

    /// After a command that connected or disconnected servers: it reported on them itself, so
    /// drop the events it caused, then re-read the tools and say what changed.
    fn settle(&mut self) {
        while let Ok(_) | Err(broadcast::error::TryRecvError::Lagged(_)) = self.events.try_recv() {}
        if let Some(change) = self.refresh() {
            self.note(change);
        }
    }

    /// Re-read the manager's tools into the session and the completer; returns a
    /// note when the tool set changed since the last announcement.
    fn refresh(&mut self) -> Option<String> {
        self.session.refresh_from_manager();
        let current: BTreeMap<String, String> = self
            .mcp_tools()
            .map(|tool| (tool.name.clone(), tool.server.clone()))
            .collect();
        let change = describe_change(&self.announced, &current);
        let mut servers = self.configured.clone();
        servers.extend(self.session.manager().server_names());
        let mut vocabulary = self
            .vocabulary
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        vocabulary.tools = current.keys().cloned().collect();
        vocabulary.servers = servers.into_iter().collect();
        drop(vocabulary);
        self.announced = current;
        change
    }

    /// The MCP tools of the session, sorted by name.
    fn mcp_tools(&self) -> impl Iterator<Item = &McpTool> {
        self.session.tools().filter_map(|tool| match tool {
            RegisteredTool::Mcp(tool) => Some(tool.as_ref()),
            RegisteredTool::Host(_) => None,
        })
    }

    /// A message that did not come from a command: above the prompt on a terminal, on
    /// stderr otherwise.
    fn note(&mut self, message: String) {
        // Notes carry servers' error messages.
        let message = term::text(&message).into_owned();
        let unprinted = match &mut self.printer {
            Some(printer) => printer.print(format!("{message}\n")).err().map(|_| message),
            None => Some(message),
        };
        if let Some(message) = unprinted {
            eprintln!("{message}");
        }
    }
}

/// Options for connecting servers from a command: progress shown, reconnecting after
/// crashes (the shell is long-running).
fn connect_options(wait: bool) -> StartOptions {
    StartOptions {
        progress: Progress::Show,
        wait,
        reconnect: true,
    }
}

/// The next manager event; `None` when events were missed. Never resolves once the manager
/// is gone (it lives as long as the shell, so that does not happen).
async fn next_event(events: &mut broadcast::Receiver<ManagerEvent>) -> Option<ManagerEvent> {
    match events.recv().await {
        Ok(event) => Some(event),
        Err(broadcast::error::RecvError::Lagged(_)) => None,
        Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
    }
}
