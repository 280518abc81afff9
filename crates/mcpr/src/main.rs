//! `mcpr`: see, test and call every MCP server from every AI tool you use.

mod advice;
mod ask;
mod cli;
mod cmd;
mod complete;
mod connect;
mod copies;
mod discovery;
mod exit;
mod flags;
mod inline;
mod live;
mod logging;
mod output;
mod seen_problems;
mod shutdown;
mod suggest;
mod telemetry;
mod term;
mod usage;

use crate::cli::{Cli, Command};
use crate::exit::Failure;

/// The bound of tokio's blocking thread pool (its default is 512). Blocking work here is short
/// (config files read, `!command` values run, secrets read; the tool cache has a thread of its
/// own), and each thread started stays for 10 s with its stack and its malloc arena, so a burst
/// of servers starting at once must not start one each.
const BLOCKING_THREADS: usize = 16;

/// The runtime a command runs on. The gateway, over stdio or HTTP, runs on one thread: each
/// of its calls is a few short steps between sockets or pipes, and on one thread a call stays
/// where its bytes arrive, while a multi-thread runtime hands the call between workers (the
/// front's connection, the handler, the backend connection's task) and wakes idle ones to look
/// for work that is not there. That costs about 10 µs per relayed call over stdio, and over
/// HTTP about two more context switches per call; the calls of many clients are not faster for it
/// either, on a machine whose other cores run the clients and the servers. Starting server
/// processes and other blocking work have threads of their own. Everything else gets worker
/// threads.
fn runtime_builder(command: &Command) -> tokio::runtime::Builder {
    match command {
        Command::Serve(_) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    }
}

fn main() -> std::process::ExitCode {
    // First, single-threaded: this process may be a sandbox launcher (and then never returns).
    mcp_runtime::sandbox::run_if_launcher();
    // A shell asking for completions (`COMPLETE=bash mcpr -- ...`) is answered, then we exit.
    cli::answer_completion_if_asked();
    let cli = usage::parse();
    if matches!(
        cli.command,
        Command::Mock(_) | Command::Conformance(_) | Command::Completions(_)
    ) && cli.global.is_set()
    {
        // These commands read no config: say so rather than ignore the flags.
        use clap::CommandFactory as _;
        Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                "--cwd, --config, --strict-config, --no-project and --trust-project do not apply \
                 to this command",
            )
            .exit();
    }
    init_logging(&cli.command);
    let mut builder = runtime_builder(&cli.command);
    let runtime = match builder
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcpr: cannot start the async runtime: {e}");
            return exit::INTERNAL.into();
        }
    };
    // A failed write to stdout (a closed pipe, a full disk) ends the command early, with its
    // servers stopped: see `output`.
    output::quiet_write_panics();
    let result = runtime.block_on(output::guard(async move {
        let telemetry = telemetry::install(&cli.command);
        let outcome = run(cli).await;
        if let Some(telemetry) = telemetry {
            telemetry.shutdown().await;
        }
        outcome
    }));
    // Do not wait for stray blocking tasks (e.g. a stdin reader) at exit.
    runtime.shutdown_background();
    match result {
        Ok(code) => code.into(),
        Err(failure) => {
            // Failures quote servers (error bodies, stderr lines).
            eprintln!("mcpr: {}", term::text(&failure.to_string()));
            failure.code.into()
        }
    }
}

/// Run the command.
async fn run(cli: Cli) -> exit::Outcome {
    match cli.command {
        Command::Demo(c) => cmd::demo::run(&cli.global.merged(&c.global), c.args).await,
        Command::Tools(c) => {
            let global = cli.global.merged(&c.global).with_quiet(c.args.quiet);
            cmd::tools::run(&global, c.args).await
        }
        Command::Call(c) => {
            let global = cli.global.merged(&c.global).with_quiet(c.args.quiet);
            cmd::call::run(&global, c.args).await
        }
        Command::Task(c) => cmd::task::run(&cli.global.merged(&c.global), c.args).await,
        Command::Resource(c) => cmd::read::resource(&cli.global.merged(&c.global), c.args).await,
        Command::Prompt(c) => cmd::read::prompt(&cli.global.merged(&c.global), c.args).await,
        Command::Skill(c) => cmd::read::skill(&cli.global.merged(&c.global), c.args).await,
        Command::Status(c) => {
            let global = cli.global.merged(&c.global).with_quiet(c.args.quiet);
            cmd::status::run(&global, c.args).await
        }
        Command::Shell(c) => cmd::shell::run(&cli.global.merged(&c.global), c.args).await,
        Command::Servers(c) => cmd::servers::run(&cli.global.merged(&c.global), c.args).await,
        Command::Get(c) => cmd::servers::get(&cli.global.merged(&c.global), c.args).await,
        Command::Trust(c) => cmd::trust::run(&cli.global.merged(&c.global), c.args).await,
        Command::Add(c) => cmd::edit::add(&cli.global.merged(&c.global), c.args).await,
        Command::AddJson(c) => cmd::edit::add_json(&cli.global.merged(&c.global), c.args).await,
        Command::AddFrom(c) => cmd::hosts::add_from(&cli.global.merged(&c.global), c.args).await,
        Command::Remove(c) => cmd::edit::remove(&cli.global.merged(&c.global), c.args).await,
        Command::Enable(c) => cmd::edit::enable(&cli.global.merged(&c.global), c.args).await,
        Command::Disable(c) => cmd::edit::disable(&cli.global.merged(&c.global), c.args).await,
        Command::Serve(c) => cmd::serve::run(&cli.global.merged(&c.global), c.args).await,
        Command::Registry(c) => cmd::registry::run(&cli.global.merged(&c.global), c.args).await,
        Command::Login(c) => cmd::login::login(&cli.global.merged(&c.global), c.args).await,
        Command::Logout(c) => cmd::login::logout(&cli.global.merged(&c.global), c.args).await,
        Command::Conformance(args) => cmd::conformance::run(args).await,
        Command::Completions(args) => Ok(usage::completions(args.shell)),
        Command::Mock(args) => mcp_mock::run(args)
            .await
            .map(|()| exit::OK)
            .map_err(Failure::internal),
    }
}

/// Logs go to stderr, filtered by `RUST_LOG` (default: warnings). The mock server logs nothing
/// by default so that tests see only what they ask for. rmcp's own logs are off by default:
/// its failures reach the user as our errors, which say the same without the URL's query.
/// The shell reports server failures and reconnects itself, above its prompt; a log line
/// written straight to the terminal would break the line being edited. Commands other than
/// the gateway show each server's failure on its own line and as their error, so the
/// manager's log line of it would say it a third time. Only the gateway, which runs for
/// hours, stamps its lines with the time.
fn init_logging(command: &Command) {
    let default = match command {
        Command::Mock(_) => "off",
        Command::Shell(_) => "error,rmcp=off",
        Command::Serve(_) => "warn,rmcp=off",
        _ => "warn,rmcp=off,mcp_runtime::manager::supervisor=error",
    };
    logging::init(default, matches!(command, Command::Serve(_)));
}
