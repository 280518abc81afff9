//! `mcp-mock`: the mock MCP server as a program of its own, with exactly the flags of
//! `mcpr mock` (tests of the library start it without going through the CLI).

use clap::Parser;

/// A real MCP server with scriptable tools and fault knobs, for tests, benchmarks and trying
/// out agents.
#[derive(Debug, Parser)]
#[command(name = "mcp-mock", version, about)]
struct Cli {
    #[command(flatten)]
    args: mcp_mock::MockArgs,
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    // Silent by default so that tests see only what they ask for.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("off"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-mock: cannot start the async runtime: {e}");
            return mcp_mock::EXIT_FAILURE.into();
        }
    };
    let result = runtime.block_on(mcp_mock::run(cli.args));
    // Do not wait for stray blocking tasks (the stdin reader) at exit.
    runtime.shutdown_background();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp-mock: {e}");
            mcp_mock::EXIT_FAILURE.into()
        }
    }
}
