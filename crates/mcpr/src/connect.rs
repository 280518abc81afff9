//! Starting the servers a command needs through one manager, with one live line per server on
//! a terminal (connecting… / connected in N ms with T tools / failed: reason) so start-up never
//! looks frozen. Off a terminal, one plain line per server is printed as it settles (a failure
//! as just "failed": the command tells the error itself, once). The shell
//! asks for one line for them all instead ([`Progress::Summary`]): its prompt should not come
//! after a screen of start-up lines.
//!
//! One-shot commands print first and stop their servers after: [`stop_after_output`] flushes
//! stdout, then gives each server [`ONE_SHOT_GRACE`] to exit after stdin EOF, then SIGTERM to
//! its group and SIGKILL, all servers at once. A call that names its
//! server and tool opens that one server alone ([`OneShot`]) and lists no tools.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use indexmap::IndexMap;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use mcp_runtime::ManagerEvent;
use mcp_runtime::client::{CallOptions, McpClient, ToolDefinition, ToolOutput};
use mcp_runtime::config::{ServerConfig, ServerSource};
use mcp_runtime::manager::{
    ManagerError, ManagerOptions, McpManager, ReloadSummary, ServerError, StartupReport,
};
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use crate::advice::Advise as _;
/// How long a one-shot command's server may take to exit by itself once stdin is closed
/// before SIGTERM to its process group (which it gets
/// [`MIN_TERM_GRACE`](mcp_runtime::client::MIN_TERM_GRACE) to act on before SIGKILL). The
/// output is out already; a server that lingers after EOF (server-everything takes ~350 ms)
/// must not hold up the exit, and one that exits at EOF does so within this.
pub(crate) const ONE_SHOT_GRACE: Duration = Duration::from_millis(25);

/// How much to say while connecting.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Progress {
    /// Live lines on a terminal, plain lines otherwise (on stderr).
    Show,
    /// One live line counting the servers connected and failed on a terminal, which stays as
    /// the summary; off a terminal, only the failures, one line each.
    Summary,
    /// Nothing (for `--json` and one-shot calls).
    Quiet,
}

/// A started set of servers.
pub(crate) struct Started {
    pub manager: McpManager,
    pub report: StartupReport,
}

/// Connect `configs` behind the fast-start gate. With `wait`, also wait for servers still
/// connecting after the gate (bounded by their own timeouts).
pub(crate) async fn start(
    project: PathBuf,
    configs: IndexMap<String, ServerConfig>,
    sources: IndexMap<String, ServerSource>,
    options: StartOptions,
) -> Started {
    let manager = McpManager::new(manager_options(project, options.reconnect));
    let report = connect(&manager, configs, sources, options).await;
    Started { manager, report }
}

/// The manager settings of every command.
fn manager_options(project: PathBuf, reconnect: bool) -> ManagerOptions {
    // The CLI keeps the per-user tool cache and stored logins.
    ManagerOptions::for_user()
        .with_project(project)
        .with_reconnect(reconnect)
        // MCPR_INHERIT_ENV=1 gives stdio servers mcpr's whole environment (but MCPR_*).
        .with_inherit_env(mcp_runtime::client::environment::inherit_requested())
        // A server that asks the user gets asked on the terminal, or declined without one.
        .with_elicitation(Some(crate::ask::handler()))
}

/// The servers of a one-shot call: the one server it names, opened alone, or all of them
/// behind a manager (a call by the `mcp_<server>_<tool>` name needs every tool's name).
pub(crate) enum OneShot {
    /// One server, connected without listing its tools (shared: a client is large, and
    /// `resource`/`prompt`/`skill` hand it to their work).
    Client(std::sync::Arc<McpClient>),
    /// Every configured server.
    Manager(McpManager),
}

impl OneShot {
    /// Connect `name` alone, as [`start`] would but with no tool list and no reconnects.
    pub(crate) async fn open(
        project: PathBuf,
        name: &str,
        config: &ServerConfig,
    ) -> Result<Self, ServerError> {
        let manager = McpManager::new(manager_options(project, false));
        let client = manager.open_client(name, config).await?;
        Ok(OneShot::Client(std::sync::Arc::new(client)))
    }

    /// Call `tool` of `server`.
    pub(crate) async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        options: CallOptions,
    ) -> Result<ToolOutput, ManagerError> {
        match self {
            OneShot::Client(client) => Ok(client.call_tool(tool, arguments, options).await?),
            OneShot::Manager(manager) => manager.call_tool(server, tool, arguments, options).await,
        }
    }

    /// The connection of a lone server.
    pub(crate) fn client(&self) -> Option<std::sync::Arc<McpClient>> {
        match self {
            OneShot::Client(client) => Some(client.clone()),
            OneShot::Manager(_) => None,
        }
    }

    /// The connection of `server`: the lone one, or the manager's while it is connected.
    pub(crate) fn connection(&self, server: &str) -> Option<std::sync::Arc<McpClient>> {
        match self {
            OneShot::Client(client) => Some(client.clone()),
            OneShot::Manager(manager) => manager.client(server),
        }
    }

    /// The tools of `server` as it lists them now (a lone server is asked; a manager's
    /// current list is read), or `None` when it cannot list them.
    pub(crate) async fn tools(&self, server: &str) -> Option<Vec<ToolDefinition>> {
        match self {
            OneShot::Client(client) => client.list_tools().await.ok(),
            OneShot::Manager(manager) => manager
                .server_tools()
                .into_iter()
                .find(|s| s.server == server)
                .map(|s| s.tools.to_vec()),
        }
    }

    /// Stop the servers once the output is out ([`stop_after_output`]).
    pub(crate) async fn stop(self) {
        match self {
            OneShot::Client(client) => {
                flush_stdout();
                client.close_within(ONE_SHOT_GRACE).await;
            }
            OneShot::Manager(manager) => stop_after_output(&manager).await,
        }
    }
}

/// End of a one-shot command: what it printed goes out first, then every server is stopped at
/// once: stdin EOF, [`ONE_SHOT_GRACE`], SIGTERM to its group, SIGKILL; servers still booting
/// are killed at once. No server process is left when it returns.
pub(crate) async fn stop_after_output(manager: &McpManager) {
    flush_stdout();
    manager.disconnect_all_within(ONE_SHOT_GRACE).await;
}

fn flush_stdout() {
    use std::io::Write as _;
    // A closed stdout is the terminal helper's business; here only the timing matters.
    let _ = std::io::stdout().flush();
}

/// Apply new `configs` to `manager` by difference ([`McpManager::reload`]), with live lines for
/// the servers it starts: for the shell's `/mcp reload`.
pub(crate) async fn reload(
    manager: &McpManager,
    configs: IndexMap<String, ServerConfig>,
    sources: IndexMap<String, ServerSource>,
    progress: Progress,
) -> ReloadSummary {
    let starting: Vec<String> = manager
        .plan_reload(&configs, &sources)
        .started()
        .cloned()
        .collect();
    let render = Render::start(LiveView::new(&starting, progress), manager);
    let summary = manager.reload(configs, sources).await;
    render.finish().await;
    if progress == Progress::Show {
        note_deferred(&summary.startup);
    }
    summary
}

/// Connect `configs` on an existing `manager` (servers it already runs are left alone), with
/// the same live lines and gate as [`start`]: for a shell that reloads or enables servers
/// without replacing its manager. `options.reconnect` is the manager's, so it is ignored here.
pub(crate) async fn connect(
    manager: &McpManager,
    configs: IndexMap<String, ServerConfig>,
    sources: IndexMap<String, ServerSource>,
    options: StartOptions,
) -> StartupReport {
    let names: Vec<String> = configs.keys().cloned().collect();
    let render = Render::start(LiveView::new(&names, options.progress), manager);

    let mut report = manager.connect_servers(configs, sources).await;
    if options.wait && !report.pending.is_empty() {
        let waits = report
            .pending
            .iter()
            .map(|name| manager.wait_for_connection(name));
        let _ = futures::future::join_all(waits).await;
        report = settled_report(manager, &names);
    }
    // The view draws the events sent so far, then servers still connecting are marked.
    render.finish().await;
    if options.progress == Progress::Show {
        note_deferred(&report);
    }
    report
}

/// Say which servers offer cached tools while they finish connecting, and which were not
/// waited for because their last start failed.
fn note_deferred(report: &StartupReport) {
    for (server, error) in &report.failed_before {
        let first = error.lines().next().unwrap_or_default();
        eprintln!(
            "  {}  still connecting, not waited for: its last start failed ({})",
            crate::term::line(server),
            crate::term::line(first)
        );
    }
    for server in &report.servers {
        if server.deferred {
            eprintln!(
                "  {}  still connecting; {} cached tools offered meanwhile",
                server.server,
                server.tools.len()
            );
        }
    }
}

/// Settings of [`start`].
#[derive(Clone, Copy)]
pub(crate) struct StartOptions {
    pub progress: Progress,
    /// Wait for every server, not just until the gate.
    pub wait: bool,
    /// Reconnect after crashes (long-running commands).
    pub reconnect: bool,
}

/// The report after waiting: current tools and the errors of servers that failed.
fn settled_report(manager: &McpManager, names: &[String]) -> StartupReport {
    let mut report = StartupReport {
        servers: manager.server_tools(),
        ..StartupReport::default()
    };
    for name in names {
        match manager.last_error(name) {
            Some(error) if manager.client(name).is_none() => {
                report.errors.insert(name.clone(), error);
            }
            _ => {}
        }
    }
    report
}

/// A [`LiveView`] drawing the manager's events on a task of its own.
struct Render {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Render {
    fn start(view: LiveView, manager: &McpManager) -> Render {
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(view.run(manager.subscribe(), stopped));
        Render { stop, task }
    }

    /// Draw the events sent until now and stop: no sleep for the last ones to arrive, as
    /// every event of a settled server was sent before the manager answered.
    async fn finish(self) {
        let _ = self.stop.send(());
        let _ = self.task.await;
    }
}

/// The live per-server lines, or the one summary line.
struct LiveView {
    bars: Option<(MultiProgress, HashMap<String, ProgressBar>)>,
    /// The summary line ([`Progress::Summary`] on a terminal) and what it counts.
    summary: Option<(ProgressBar, std::sync::Mutex<Tally>)>,
    width: usize,
    progress: Progress,
}

/// What the summary line counts: each server once, by how its start ended.
#[derive(Default)]
struct Tally {
    servers: usize,
    /// Server → tools, of those connected.
    connected: HashMap<String, usize>,
    /// Servers that failed, as shown (escaped), in the order they failed.
    failed: Vec<String>,
}

impl Tally {
    /// Count how `server`'s start ended (a server that reconnects is counted once).
    fn settle(&mut self, server: &str, outcome: Outcome) {
        let shown = crate::term::line(server).into_owned();
        match outcome {
            Outcome::Connected(tools) => {
                self.failed.retain(|s| *s != shown);
                self.connected.insert(server.to_owned(), tools);
            }
            Outcome::Failed if !self.connected.contains_key(server) => {
                if !self.failed.contains(&shown) {
                    self.failed.push(shown);
                }
            }
            Outcome::Failed | Outcome::Pending => {}
        }
    }

    /// "3/5 servers connected, 42 tools; failed: a", and what is left when `done`.
    fn line(&self, done: bool) -> String {
        let tools: usize = self.connected.values().sum();
        let mut line = format!(
            "{}/{} servers connected, {tools} tool{}",
            self.connected.len(),
            self.servers,
            if tools == 1 { "" } else { "s" }
        );
        if !self.failed.is_empty() {
            line.push_str(&format!(
                "; failed: {} (see /mcp status)",
                self.failed.join(", ")
            ));
        }
        let waiting = self
            .servers
            .saturating_sub(self.connected.len() + self.failed.len());
        if waiting > 0 {
            line.push_str(&format!(
                "; {waiting} {}",
                if done {
                    "still connecting"
                } else {
                    "connecting…"
                }
            ));
        }
        line
    }
}

impl LiveView {
    fn new(names: &[String], progress: Progress) -> Self {
        let width = names
            .iter()
            .map(|name| crate::term::line(name).len())
            .max()
            .unwrap_or(0);
        let terminal = std::io::stderr().is_terminal();
        let summary = (progress == Progress::Summary && terminal && !names.is_empty()).then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(spinner_style());
            let tally = Tally {
                servers: names.len(),
                ..Tally::default()
            };
            bar.set_message(tally.line(false));
            bar.enable_steady_tick(Duration::from_millis(80));
            (bar, std::sync::Mutex::new(tally))
        });
        let live = progress == Progress::Show && terminal;
        let bars = live.then(|| {
            let multi = MultiProgress::new();
            let style = spinner_style();
            let bars = names
                .iter()
                .map(|name| {
                    let bar = multi.add(ProgressBar::new_spinner());
                    bar.set_style(style.clone());
                    let shown = crate::term::line(name);
                    bar.set_message(format!("{shown:width$}  connecting…"));
                    bar.enable_steady_tick(Duration::from_millis(80));
                    (name.clone(), bar)
                })
                .collect();
            (multi, bars)
        });
        LiveView {
            bars,
            summary,
            width,
            progress,
        }
    }

    async fn run(
        self,
        mut events: broadcast::Receiver<ManagerEvent>,
        mut stop: tokio::sync::oneshot::Receiver<()>,
    ) {
        let _guard = FinishOnDrop(&self);
        loop {
            let received = tokio::select! {
                biased;
                received = events.recv() => received,
                _ = &mut stop => {
                    loop {
                        match events.try_recv() {
                            Ok(event) => self.draw(&event),
                            Err(broadcast::error::TryRecvError::Lagged(_)) => continue,
                            Err(_) => return,
                        }
                    }
                }
            };
            match received {
                Ok(event) => self.draw(&event),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Show one event on its server's line.
    fn draw(&self, event: &ManagerEvent) {
        let width = self.width;
        // Server names come from config files, maybe a project's: escaped like the rest.
        let name = crate::term::line(event.server());
        let (line, outcome) = match event {
            ManagerEvent::Connected { tools, elapsed, .. } => (
                format!(
                    "{name:width$}  connected in {} ms with {tools} tool{}",
                    elapsed.as_millis(),
                    if *tools == 1 { "" } else { "s" }
                ),
                Outcome::Connected(*tools),
            ),
            ManagerEvent::Failed { error, .. } => {
                let error = error.explained();
                let first = crate::term::line(error.lines().next().unwrap_or_default());
                (format!("{name:width$}  failed: {first}"), Outcome::Failed)
            }
            ManagerEvent::Reconnecting { attempt, .. } => (
                format!("{name:width$}  reconnecting (attempt {attempt})…"),
                Outcome::Pending,
            ),
            _ => return,
        };
        self.show(event.server(), line, outcome);
    }

    fn show(&self, server: &str, line: String, outcome: Outcome) {
        if let Some((bar, tally)) = &self.summary {
            let mut tally = tally.lock().unwrap_or_else(|e| e.into_inner());
            tally.settle(server, outcome);
            bar.set_message(tally.line(false));
            return;
        }
        let done = outcome != Outcome::Pending;
        match &self.bars {
            Some((_, bars)) => {
                if let Some(bar) = bars.get(server) {
                    if done {
                        bar.finish_with_message(line);
                    } else {
                        bar.set_message(line);
                    }
                }
            }
            // Off a terminal, where each line stays in a log: the commands that show this
            // tell each failure as their error, so the line does not say it a first time.
            None if self.progress == Progress::Show && outcome == Outcome::Failed => {
                let name = crate::term::line(server);
                eprintln!("  {name:width$}  failed", width = self.width);
            }
            None if self.progress == Progress::Show && done => eprintln!("  {line}"),
            // Off a terminal the shell's start-up says only what went wrong.
            None if self.progress == Progress::Summary && outcome == Outcome::Failed => {
                eprintln!("  {line}")
            }
            None => {}
        }
    }
}

/// Where a server's start stands after an event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Connected, with this many tools.
    Connected(usize),
    /// Failed to start.
    Failed,
    /// Still trying.
    Pending,
}

/// The style of the spinner lines: coloured only where mcpr may colour.
fn spinner_style() -> ProgressStyle {
    let template = if crate::term::colour_on_stderr() {
        "{spinner:.cyan} {msg}"
    } else {
        "{spinner} {msg}"
    };
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

/// Stop the spinners of servers that did not settle, leaving their last line on screen; the
/// summary line stays with its final count.
struct FinishOnDrop<'a>(&'a LiveView);

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        if let Some((bar, tally)) = &self.0.summary {
            let tally = tally.lock().unwrap_or_else(|e| e.into_inner());
            bar.finish_with_message(tally.line(true));
        }
        if let Some((_, bars)) = &self.0.bars {
            for bar in bars.values().filter(|bar| !bar.is_finished()) {
                bar.abandon();
            }
        }
    }
}
