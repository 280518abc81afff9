//! `mcpr task get|result|cancel|list SERVER [ID]`: the tasks of one server, as
//! `mcpr call --detach` leaves them: a task's state, its result (waited for, with the live
//! line on a terminal), cancelling it, and the server's list of tasks (protocol 2025-11-25;
//! the 2026-07-28 extension has none). A task outlives the connection that started it on a
//! server that keeps it (a remote one); a stdio server's tasks end with its process.

use std::time::Duration;

use mcp_runtime::client::{CallOptions, McpClient, TaskState};
use mcp_runtime::manager::ManagerError;
use tokio_util::sync::CancellationToken;

use crate::advice::Advise as _;
use crate::cmd::call::{call_failure, print_output};
use crate::connect::OneShot;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::inline::{INLINE_NAME, InlineArgs};
use crate::{live, term};

/// Most pages `mcpr task list` reads.
const MAX_LIST_PAGES: usize = 100;

/// Arguments of `mcpr task`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  id=$(mcpr call --detach jobs build target=all)\n  mcpr task get jobs \"$id\"\n  \
mcpr task result jobs \"$id\"\n  mcpr task cancel jobs \"$id\"\n  mcpr task list jobs"
)]
pub(crate) struct TaskArgs {
    #[command(subcommand)]
    pub action: TaskAction,
}

/// What to do with a server's tasks.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum TaskAction {
    /// Show a task's status and message.
    Get(TaskIdArgs),
    /// Wait for a task to finish and print its result (exit 1 when the tool reported an error
    /// or the task failed or was cancelled).
    Result(TaskResultArgs),
    /// Ask the server to cancel a task.
    Cancel(TaskIdArgs),
    /// List the server's tasks (protocol 2025-11-25; the 2026-07-28 extension has no list).
    List(TaskListArgs),
}

/// `SERVER ID`, and how to print.
#[derive(Debug, clap::Args)]
pub(crate) struct TaskIdArgs {
    /// `SERVER ID`, or `ID` with a server given inline.
    #[arg(num_args = 1..=2, required = true, value_name = "SERVER ID")]
    pub target: Vec<String>,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: InlineArgs,
}

/// Arguments of `mcpr task result`.
#[derive(Debug, clap::Args)]
pub(crate) struct TaskResultArgs {
    #[command(flatten)]
    pub task: TaskIdArgs,
    /// Time limit for the wait in milliseconds (default: the server's tool timeout); past
    /// it the task is cancelled.
    #[arg(long, value_name = "MS")]
    pub timeout: Option<u64>,
    /// Show no status line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Arguments of `mcpr task list`.
#[derive(Debug, clap::Args)]
pub(crate) struct TaskListArgs {
    /// `SERVER`, or nothing with a server given inline.
    #[arg(num_args = 0..=1, value_name = "SERVER")]
    pub target: Vec<String>,
    /// Print as JSON (an array of task states).
    #[arg(long)]
    pub json: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: InlineArgs,
}

/// `mcpr task`.
pub(crate) async fn run(global: &GlobalArgs, args: TaskArgs) -> Outcome {
    match args.action {
        TaskAction::Get(args) => {
            let (server, id) = server_and_id(&args.target, &args.inline)?;
            let json = args.json;
            with_server(global, &args.inline, &server, |client| async move {
                let state = client.get_task(&id).await.map_err(failure)?;
                print_state(&state, json);
                Ok(exit::OK)
            })
            .await
        }
        TaskAction::Cancel(args) => {
            let (server, id) = server_and_id(&args.target, &args.inline)?;
            let json = args.json;
            with_server(global, &args.inline, &server, |client| async move {
                match client.cancel_task(&id).await.map_err(failure)? {
                    Some(state) => print_state(&state, json),
                    None if json => println!("{}", serde_json::json!({"taskId": id})),
                    None => println!("{}: cancel requested", term::line(&id)),
                }
                Ok(exit::OK)
            })
            .await
        }
        TaskAction::Result(args) => result(global, args).await,
        TaskAction::List(args) => {
            let server = match (&args.target[..], args.inline.is_set()) {
                (_, true) => INLINE_NAME.to_owned(),
                ([server], false) => server.clone(),
                _ => return Err(Failure::usage("which server? (see `mcpr list`)")),
            };
            let json = args.json;
            with_server(global, &args.inline, &server, |client| async move {
                let tasks = list_all(&client).await?;
                if json {
                    let all: Vec<_> = tasks.iter().map(TaskState::to_json).collect();
                    println!("{}", serde_json::Value::Array(all));
                } else {
                    for state in &tasks {
                        print_state(state, false);
                    }
                }
                Ok(exit::OK)
            })
            .await
        }
    }
}

/// `mcpr task result`: wait for the task and print its result as `mcpr call` would.
async fn result(global: &GlobalArgs, args: TaskResultArgs) -> Outcome {
    let (server, id) = server_and_id(&args.task.target, &args.task.inline)?;
    let json = args.task.json;
    let (timeout, quiet) = (args.timeout, args.quiet);
    with_server(global, &args.task.inline, &server, |client| async move {
        let cancel = CancellationToken::new();
        let mut options = CallOptions::default().with_cancel(cancel.clone());
        options.timeout = timeout.map(Duration::from_millis);
        let (display, _) = live::Display::start(live::Mode::choose(quiet, false), &id);
        options.task_status = display.task_status();
        let waited = {
            let wait = client.wait_task(&id, options);
            tokio::pin!(wait);
            tokio::select! {
                waited = &mut wait => Ok(waited),
                code = crate::shutdown::interrupted() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(2), &mut wait).await;
                    Err(code)
                }
            }
        };
        display.finish().await;
        let output = match waited {
            Ok(waited) => waited.map_err(failure)?,
            Err(code) => {
                return Err(Failure {
                    code,
                    message: "interrupted; task cancelled".into(),
                });
            }
        };
        if json {
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
    })
    .await
}

/// Every page of the server's tasks.
async fn list_all(client: &McpClient) -> Result<Vec<TaskState>, Failure> {
    let mut tasks = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let page = client
            .list_tasks(cursor.as_deref())
            .await
            .map_err(failure)?;
        tasks.extend(page.tasks);
        match page.next_cursor {
            Some(next) if cursor.as_deref() != Some(next.as_str()) => cursor = Some(next),
            _ => return Ok(tasks),
        }
    }
    Ok(tasks)
}

/// `ID  STATUS  MESSAGE`, or the state as one JSON object.
fn print_state(state: &TaskState, json: bool) {
    if json {
        println!("{}", state.to_json());
        return;
    }
    let message = state.status_message.as_deref().unwrap_or("");
    println!(
        "{}\t{}\t{}",
        term::line(&state.id),
        state.status,
        term::line(message)
    );
}

fn failure(error: mcp_runtime::client::ClientError) -> Failure {
    call_failure(ManagerError::Client(error))
}

/// The server and the task id of `SERVER ID` (or `ID` with an inline server).
fn server_and_id(target: &[String], inline: &InlineArgs) -> Result<(String, String), Failure> {
    match (target, inline.is_set()) {
        ([id], true) => Ok((INLINE_NAME.to_owned(), id.clone())),
        ([server, id], false) => Ok((server.clone(), id.clone())),
        (_, true) => Err(Failure::usage("give the task's ID after the options")),
        _ => Err(Failure::usage("give the SERVER and the task's ID")),
    }
}

/// Start `server` alone, run `work` on its connection, and shut it down.
async fn with_server<F, Fut>(
    global: &GlobalArgs,
    inline: &InlineArgs,
    server: &str,
    work: F,
) -> Outcome
where
    F: FnOnce(std::sync::Arc<McpClient>) -> Fut,
    Fut: std::future::Future<Output = Outcome>,
{
    let mut discovery = crate::inline::discover_some(global, inline)?;
    let Some(config) = discovery.configs.swap_remove(server) else {
        return Err(crate::discovery::not_enabled(&discovery, server));
    };
    let open = OneShot::open(discovery.cwd.clone(), server, &config);
    let servers = crate::shutdown::until_signal(open)
        .await?
        .map_err(|e| Failure::connection(e.explained()))?;
    let outcome = match servers.client() {
        Some(client) => work(client).await,
        None => Err(Failure::connection(format!(
            "server `{}`: not connected",
            term::line(server)
        ))),
    };
    servers.stop().await;
    outcome
}
