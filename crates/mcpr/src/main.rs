//! `mcpr`: see, test and call every MCP server from every AI tool you use.

mod ask;
mod cli;
mod cmd;
mod connect;
mod discovery;
mod exit;
mod logging;
mod mock;
mod shutdown;
mod term;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::exit::Failure;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.command);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcpr: cannot start the async runtime: {e}");
            return exit::INTERNAL.into();
        }
    };
    let result = runtime.block_on(async move {
        match cli.command {
            Command::Demo(args) => cmd::demo::run(&cli.global, args).await,
            Command::Tools(args) => cmd::tools::run(&cli.global, args).await,
            Command::Call(args) => cmd::call::run(&cli.global, args).await,
            Command::Status(args) => cmd::status::run(&cli.global, args).await,
            Command::Shell(args) => cmd::shell::run(&cli.global, args).await,
            Command::Servers(args) => cmd::servers::run(&cli.global, args).await,
            Command::Trust(args) => cmd::trust::run(&cli.global, args).await,
            Command::Add(args) => cmd::edit::add(&cli.global, args).await,
            Command::Remove(args) => cmd::edit::remove(&cli.global, args).await,
            Command::Enable(args) => cmd::edit::enable(&cli.global, args).await,
            Command::Disable(args) => cmd::edit::disable(&cli.global, args).await,
            Command::Serve(args) => cmd::serve::run(&cli.global, args).await,
            Command::Registry(args) => cmd::registry::run(&cli.global, args).await,
            Command::Login(args) => cmd::login::login(&cli.global, args).await,
            Command::Logout(args) => cmd::login::logout(&cli.global, args).await,
            Command::Conformance(args) => cmd::conformance::run(args).await,
            Command::Mock(args) => mock::run(args)
                .await
                .map(|()| exit::OK)
                .map_err(Failure::internal),
        }
    });
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

/// Logs go to stderr, filtered by `RUST_LOG` (default: warnings). The mock server logs nothing
/// by default so that tests see only what they ask for. rmcp's own logs are off by default:
/// its failures reach the user as our errors, which say the same without the URL's query.
/// The shell reports server failures and reconnects itself, above its prompt; a log line
/// written straight to the terminal would break the line being edited.
fn init_logging(command: &Command) {
    let default = match command {
        Command::Mock(_) => "off",
        Command::Shell(_) => "error,rmcp=off",
        _ => "warn,rmcp=off",
    };
    logging::init(default);
}
