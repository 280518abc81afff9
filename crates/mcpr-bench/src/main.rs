//! `cargo run --release -p mcpr-bench`: where mcpr stands against its peers, as figures and
//! ratios, measured side by side in one run on one machine.
//!
//! The run installs the pinned peers into `target/peers` (as the integration tests do), builds
//! the release `mcpr`, then measures: client cost per call, start-up, the one-shot CLI, the
//! gateway, memory per idle connection and the hot path in instructions. It prints markdown
//! tables and the targets with ✅/❌, writes them to `target/mcpr-bench/latest.md`, and with
//! `--update` into `BENCHMARKS.md`. Every external step is bounded in time; a peer that cannot
//! be installed turns its rows into "n/a (why)" and the run goes on. Counts come from `BENCH_*`
//! environment variables (`--help` lists them).

mod call_by_name;
mod callgrind;
mod client;
mod discovery;
mod firstbyte;
mod gateway;
mod gateway_http;
mod http_relay;
mod machine;
mod memory;
mod oneshot;
mod otlp_sink;
mod peers;
mod pinning;
mod proc;
mod rates;
mod raw;
mod real_servers;
mod relay;
mod report;
mod rmcp_proxy;
mod sandbox;
mod scripts;
mod settings;
mod soak;
mod startup;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use peers::Peers;
use report::Report;
use scripts::{Scripts, Server};
use settings::Settings;

/// Everything the sections share.
#[derive(Debug)]
pub struct Ctx {
    pub settings: Settings,
    /// The release `mcpr` binary.
    pub mcpr: PathBuf,
    /// This binary (re-executed for the RSS and callgrind targets).
    pub self_exe: PathBuf,
    pub peers: Peers,
    /// Where peers are installed (`target/peers` or `BENCH_PEERS_DIR`).
    pub peers_dir: PathBuf,
    pub scripts: Scripts,
    /// A temporary directory for scripts, configs, caches and the isolated HOME.
    pub work: PathBuf,
    pub runtime: tokio::runtime::Runtime,
}

impl Ctx {
    /// Run `future` on the bench's runtime, bounded by one step (`BENCH_TIMEOUT_S`).
    pub fn within_step<F: std::future::Future>(&self, future: F) -> Result<F::Output, String> {
        self.within_step_on(&self.runtime, future)
    }

    /// [`within_step`](Self::within_step) on a runtime of one thread of its own, made for
    /// this measurement: the calling task, the connection's reader and the timers then share
    /// the thread, as in an agent built on a current-thread runtime.
    pub fn within_step_on_one_thread<F: std::future::Future>(
        &self,
        future: F,
    ) -> Result<F::Output, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("a current-thread runtime: {e}"))?;
        self.within_step_on(&runtime, future)
    }

    /// [`within_step`](Self::within_step) from a task spawned on the bench's runtime, as an
    /// agent's own tasks call: an answer's wake-up then runs the caller on the thread that read
    /// it, where a caller outside the runtime (`block_on`) is woken from another thread.
    pub fn within_step_in_task<F>(&self, future: F) -> Result<F::Output, String>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.within_step(async move {
            tokio::spawn(future)
                .await
                .map_err(|e| format!("the calling task: {e}"))
        })
        .and_then(|ran| ran)
    }

    fn within_step_on<F: std::future::Future>(
        &self,
        runtime: &tokio::runtime::Runtime,
        future: F,
    ) -> Result<F::Output, String> {
        let step = self.settings.step;
        runtime
            .block_on(async { tokio::time::timeout(step, future).await })
            .map_err(|_| format!("no result within {} s", step.as_secs()))
    }

    /// `mcpr mock FLAGS`.
    pub fn mock(&self, flags: &[&str]) -> Server {
        let mut args = vec!["mock"];
        args.extend_from_slice(flags);
        Server::new(self.mcpr.to_string_lossy(), &args)
    }

    /// `node server-everything stdio`.
    pub fn everything(&self) -> Result<Server, String> {
        match &self.peers.npm {
            Ok(npm) => Ok(Server::new(
                "node",
                &[&npm.everything.to_string_lossy(), "stdio"],
            )),
            Err(why) => Err(format!("npm peers: {why}")),
        }
    }

    /// An empty HOME, so that this machine's own AI-tool configs and caches stay out.
    pub fn home(&self) -> PathBuf {
        self.work.join("home")
    }

    /// The project directory `mcpr` runs in (inside the empty HOME).
    pub fn project_dir(&self) -> PathBuf {
        self.home().join("project")
    }

    /// HOME and XDG locations, all inside the empty HOME.
    pub fn isolated_env(&self) -> Vec<(String, String)> {
        let home = self.home();
        let at = |p: &str| home.join(p).to_string_lossy().into_owned();
        vec![
            ("HOME".into(), home.to_string_lossy().into_owned()),
            ("XDG_CONFIG_HOME".into(), at(".config")),
            ("XDG_CACHE_HOME".into(), at(".cache")),
            ("XDG_DATA_HOME".into(), at(".local/share")),
        ]
    }
}

/// Apply `env` (from [`Ctx::isolated_env`]) and drop the variables that point mcpr elsewhere.
pub fn isolate(command: &mut Command, env: &[(String, String)]) {
    for (key, value) in env {
        command.env(key, value);
    }
    for key in [
        "CODEX_HOME",
        "CLAUDE_CONFIG_DIR",
        "PI_CODING_AGENT_DIR",
        "MCPR_TIMEOUT_MS",
        // Export only where a path asks for it.
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
    ] {
        command.env_remove(key);
    }
}

fn help() {
    println!(
        "mcpr-bench: mcpr against its peers, side by side in one run\n\n\
         Usage: cargo run --release -p mcpr-bench [-- --update]\n\
         \x20      cargo run -p mcpr-bench -- discovery [--capture] [--update]\n\n\
         --update   also write the results into BENCHMARKS.md\n\
         discovery  tool search quality and speed (--capture lists the corpus live again)\n\n\
         Environment:"
    );
    for (name, default, meaning) in settings::KNOBS {
        println!("  {name:<24} {meaning} (default: {default})");
    }
}

fn main() -> ExitCode {
    // The sandboxed servers of the `sandbox` section are launched by this executable.
    mcp_runtime::sandbox::run_if_launcher();
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--callgrind-target") => return callgrind::target(&args[1..]),
        Some("--oneshot-target") => return raw::oneshot_target(&args[1..]),
        Some("--relay-target") => return relay::relay_target(&args[1..]),
        Some("--tcp-relay-target") => return relay::tcp_relay_target(&args[1..]),
        Some("--http-relay-target") => return http_relay::http_relay_target(&args[1..]),
        Some("--http-calls-target") => return gateway_http::calls_target(&args[1..]),
        Some("--rmcp-proxy-target") => return rmcp_proxy::rmcp_proxy_target(&args[1..]),
        Some("--rss-target") => return memory::target(&args[1..]),
        Some("discovery") => return discovery::main(&args[1..]),
        Some("-h" | "--help") => {
            help();
            return ExitCode::SUCCESS;
        }
        _ => {}
    }
    let update = args.iter().any(|a| a == "--update");
    if let Some(unknown) = args.iter().find(|a| *a != "--update") {
        eprintln!("unknown argument {unknown} (see --help)");
        return ExitCode::from(2);
    }
    let code = run(update);
    proc::kill_all();
    code
}

fn run(update: bool) -> ExitCode {
    let started = Instant::now();
    let settings = Settings::from_env();
    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    // Ctrl-C or SIGTERM: kill every process group we started, then leave. (Servers started
    // by mcp-runtime die with us: PR_SET_PDEATHSIG.)
    runtime.spawn(async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async {
                match term.as_mut() {
                    Some(term) => { term.recv().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {}
        }
        eprintln!("\ninterrupted: stopping every process the bench started");
        proc::kill_all();
        std::process::exit(130);
    });

    let self_exe = std::env::current_exe().expect("current exe");
    let exe_dir = self_exe.parent().expect("exe dir").to_owned();
    let target_dir = exe_dir.parent().expect("target dir").to_owned();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from("."));
    if cfg!(debug_assertions) {
        eprintln!(
            "warning: this is a debug build of the bench; use `cargo run --release -p mcpr-bench`"
        );
    }

    let mut notes = Vec::new();
    let mcpr = match locate_mcpr(&settings, &workspace, &target_dir, &mut notes) {
        Ok(mcpr) => mcpr,
        Err(why) => {
            eprintln!("error: no mcpr binary: {why}");
            return ExitCode::FAILURE;
        }
    };

    eprintln!(
        "» peers: installing or finding them in {}",
        peers_dir(&target_dir).display()
    );
    let peers = peers::install(&peers_dir(&target_dir), settings.install);

    let work = match tempfile::Builder::new().prefix("mcpr-bench-").tempdir() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("error: temp dir: {e}");
            return ExitCode::FAILURE;
        }
    };
    let scripts = match Scripts::write(work.path())
        .and_then(|s| std::fs::create_dir_all(work.path().join("home/project")).map(|_| s))
    {
        Ok(scripts) => scripts,
        Err(e) => {
            eprintln!("error: write scripts: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = Ctx {
        settings,
        mcpr,
        self_exe,
        peers,
        peers_dir: peers_dir(&target_dir),
        scripts,
        work: work.path().to_owned(),
        runtime,
    };
    let machine = machine::describe(&ctx.mcpr, &ctx.peers);
    let load_start = machine::load();
    let measuring = Instant::now();

    let mut report = Report::default();
    type Section = fn(&Ctx, &mut Report);
    let sections: [(&str, Section); 11] = [
        ("client", client::run),
        ("startup", startup::run),
        ("sandbox", sandbox::run),
        ("oneshot", oneshot::run),
        ("callname", call_by_name::run),
        ("gateway", gateway::run),
        ("http", gateway_http::run),
        ("memory", memory::run),
        ("callgrind", callgrind::run),
        ("soak", soak::run),
        // Installs ~20 real servers: only when asked for by name.
        ("firstbyte", firstbyte::run),
    ];
    for (name, section) in sections {
        if ctx.settings.runs(name) {
            section(&ctx, &mut report);
            proc::kill_all();
        }
    }

    let load_end = machine::load();
    let mut out = String::new();
    out.push_str("## Latest results\n\n");
    out.push_str(&machine);
    out.push_str(&format!(
        "- Command: `cargo run --release -p mcpr-bench`; {}{}\n",
        ctx.settings.summary(),
        if ctx.settings.all_sections() {
            String::new()
        } else {
            format!(
                "; BENCH_ONLY={}",
                std::env::var("BENCH_ONLY").unwrap_or_default()
            )
        }
    ));
    out.push_str(&format!(
        "- Load average (1/5/15 min) when measuring started: {load_start}; at the end: \
         {load_end}; measurements took {:.0} s (whole run with build and installs {:.0} s)\n",
        measuring.elapsed().as_secs_f64(),
        started.elapsed().as_secs_f64()
    ));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let busiest = [&load_start, &load_end]
        .iter()
        .filter_map(|l| l.split_whitespace().next()?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    if busiest > 0.5 * cores {
        out.push_str(&format!(
            "- **Measured while other work ran on this machine** (1-minute load average up to \
             {busiest:.2} on {cores} cores): absolute figures are noisy; the ratios, taken side \
             by side in the same run, are the meaningful part\n"
        ));
    }
    for note in &notes {
        out.push_str(&format!("- {note}\n"));
    }
    out.push('\n');
    out.push_str(&report.render());
    // Paths relative to the workspace: the report is committed.
    let out = out.replace(&format!("{}/", workspace.display()), "");

    println!("\n{out}");
    let latest = target_dir.join("mcpr-bench/latest.md");
    if std::fs::create_dir_all(latest.parent().expect("parent"))
        .and_then(|_| std::fs::write(&latest, &out))
        .is_ok()
    {
        eprintln!("written to {}", latest.display());
    }
    if update {
        match update_benchmarks(&workspace.join("BENCHMARKS.md"), &out) {
            Ok(()) => eprintln!("BENCHMARKS.md updated"),
            Err(e) => eprintln!("could not update BENCHMARKS.md: {e}"),
        }
    }
    drop(ctx);
    drop(work);
    ExitCode::SUCCESS
}

fn peers_dir(target_dir: &Path) -> PathBuf {
    std::env::var_os("BENCH_PEERS_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir.join("peers"))
}

/// `MCPR_BIN`, else `cargo build --release -p mcpr` and `target/release/mcpr`. A failed build
/// falls back to an existing binary, with a note in the report.
fn locate_mcpr(
    settings: &Settings,
    workspace: &Path,
    target_dir: &Path,
    notes: &mut Vec<String>,
) -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("MCPR_BIN").filter(|v| !v.is_empty()) {
        // Absolute: commands run from other working directories.
        let bin = std::fs::canonicalize(&bin).unwrap_or_else(|_| PathBuf::from(bin));
        notes.push(format!("mcpr binary from MCPR_BIN: `{}`", bin.display()));
        return Ok(bin);
    }
    let bin = target_dir.join("release/mcpr");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("» building mcpr: cargo build --release -p mcpr");
    let mut command = Command::new(cargo);
    command
        .args(["build", "--release", "-p", "mcpr", "--manifest-path"])
        .arg(workspace.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    let built = match proc::spawn(&mut command) {
        Ok(mut group) => {
            let watchdog = proc::Watchdog::new(group.pgid(), settings.build);
            let status = group.wait();
            if watchdog.disarm() {
                Err(format!("no result within {} s", settings.build.as_secs()))
            } else {
                match status {
                    Ok(status) if status.success() => Ok(()),
                    Ok(status) => Err(format!("cargo build: {status}")),
                    Err(e) => Err(format!("cargo build: {e}")),
                }
            }
        }
        Err(e) => Err(format!("cannot run cargo: {e}")),
    };
    match built {
        Ok(()) if bin.exists() => Ok(bin),
        Ok(()) => Err(format!("{} missing after the build", bin.display())),
        Err(why) if bin.exists() => {
            eprintln!("warning: {why}; using the existing {}", bin.display());
            notes.push(format!(
                "the build of mcpr failed ({why}); measured the existing `{}`",
                bin.display()
            ));
            Ok(bin)
        }
        Err(why) => Err(why),
    }
}

const BEGIN: &str =
    "<!-- mcpr-bench:begin (generated by `cargo run --release -p mcpr-bench -- --update`) -->";
const END: &str = "<!-- mcpr-bench:end -->";

/// Replace the generated part of BENCHMARKS.md (between the markers), or append it.
fn update_benchmarks(path: &Path, results: &str) -> std::io::Result<()> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|_| "# Benchmarks\n\n".into());
    let block = format!("{BEGIN}\n{results}{END}\n");
    let updated = match (text.find("<!-- mcpr-bench:begin"), text.find(END)) {
        (Some(begin), Some(end)) if end > begin => {
            format!(
                "{}{block}{}",
                &text[..begin],
                text[end + END.len()..].trim_start_matches('\n')
            )
        }
        _ => format!("{}\n{block}", text.trim_end()),
    };
    std::fs::write(path, updated)
}
