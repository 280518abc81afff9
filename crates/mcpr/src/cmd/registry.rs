//! `mcpr registry search | show` and `mcpr add NAME --from-registry SERVER[@VERSION]`: find
//! servers in an MCP Registry and add them to mcpr's own config.
//!
//! ```text
//! mcpr registry search WORDS... [--all] [--json] [--registry URL]
//! mcpr registry show SERVER[@VERSION] [--json] [--registry URL]
//! mcpr add NAME --from-registry SERVER[@VERSION] [--kind KIND] [-e NAME=VALUE]...
//!     [--header-value VAR=VALUE]... [--arg NAME=VALUE]... [--project]
//! ```
//!
//! Everything the registry sends is shown with control characters escaped: it is written by
//! whoever published the entry. What an entry may decide is limited by the library's rules
//! (`mcp_runtime::registry::install::rules`): `show` marks each package or remote that breaks one,
//! and `add` refuses it (exit 2) before anything is asked for or written, `--force` or not.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use mcp_runtime::config::writer::{self, McprFile, Scope};
use mcp_runtime::config::{DiscoveryOptions, server_from_json};
use mcp_runtime::registry::{
    self, DEFAULT_REGISTRY, InstallKind, Need, Plan, REGISTRY_URL_ENV, RegistryClient, SecretStore,
    ServerResponse, Status, ValueSource, Values,
};

use crate::advice::Advise as _;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::term;
use mcp_runtime::fsutil::display_path;

/// Which registry to ask.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RegistryArg {
    /// The registry's base URL (default: `$MCPR_REGISTRY_URL`, else the official registry).
    #[arg(long = "registry", value_name = "URL", global = true)]
    pub registry: Option<String>,
}

/// Arguments of `mcpr registry`.
#[derive(Debug, clap::Args)]
pub(crate) struct RegistryArgs {
    #[command(subcommand)]
    pub command: RegistryCommand,
    #[command(flatten)]
    pub registry: RegistryArg,
}

/// `mcpr registry` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RegistryCommand {
    /// List the servers matching WORDS: name, version, how each runs, description.
    Search(SearchArgs),
    /// Show what adding SERVER would install and which values it needs.
    Show(ShowArgs),
}

/// Arguments of `mcpr registry search`.
#[derive(Debug, clap::Args)]
pub(crate) struct SearchArgs {
    /// Words to look for (empty: everything).
    pub words: Vec<String>,
    /// Also list deprecated and deleted entries.
    #[arg(long)]
    pub all: bool,
    /// At most this many entries.
    #[arg(long, default_value = "50", value_name = "N")]
    pub limit: usize,
    /// Print the entries as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mcpr registry show`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The server's registry name, optionally `@VERSION`.
    pub server: String,
    /// Install this kind when the server offers several.
    #[arg(long, value_enum)]
    pub kind: Option<KindArg>,
    /// Print the registry entry as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A way to install a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KindArg {
    /// An npm package (`npx`).
    Npm,
    /// A PyPI package (`uvx`).
    Pypi,
    /// A container image (`docker run`).
    Oci,
    /// An MCP bundle, downloaded and unpacked.
    Mcpb,
    /// A hosted endpoint.
    Remote,
}

impl From<KindArg> for InstallKind {
    fn from(kind: KindArg) -> Self {
        match kind {
            KindArg::Npm => InstallKind::Npm,
            KindArg::Pypi => InstallKind::Pypi,
            KindArg::Oci => InstallKind::Oci,
            KindArg::Mcpb => InstallKind::Mcpb,
            KindArg::Remote => InstallKind::Remote,
        }
    }
}

/// The registry of these flags, with answers cached under `$XDG_CACHE_HOME/mcpr/registry`.
fn client(arg: &RegistryArg, options: &DiscoveryOptions) -> Result<RegistryClient, Failure> {
    let url = arg
        .registry
        .clone()
        .or_else(|| options.env.get(REGISTRY_URL_ENV).filter(|v| !v.is_empty()))
        .unwrap_or_else(|| DEFAULT_REGISTRY.to_owned());
    let client = RegistryClient::new(&url).map_err(Failure::usage)?;
    let cache = options
        .env
        .get("XDG_CACHE_HOME")
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| options.home_dir().map(|h| h.join(".cache")));
    Ok(match cache {
        Some(dir) => client.with_cache(dir.join("mcpr").join("registry"), registry::CACHE_TTL),
        None => client,
    })
}

/// `NAME@VERSION` → (`NAME`, `Some(VERSION)`). Names hold no `@`.
fn split_version(spec: &str) -> (&str, Option<&str>) {
    match spec.rsplit_once('@') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => (name, Some(version)),
        _ => (spec, None),
    }
}

fn fail(e: registry::RegistryError) -> Failure {
    match e {
        registry::RegistryError::Unreachable { .. } | registry::RegistryError::Status { .. } => {
            Failure::connection(e)
        }
        other => Failure::usage(other.explained()),
    }
}

/// `mcpr registry ...`.
pub(crate) async fn run(global: &GlobalArgs, args: RegistryArgs) -> Outcome {
    let options = crate::discovery::CliFlags::from(global).options();
    let client = client(&args.registry, &options)?;
    match args.command {
        RegistryCommand::Search(search) => run_search(&client, search).await,
        RegistryCommand::Show(show) => run_show(&client, show).await,
    }
}

async fn run_search(client: &RegistryClient, args: SearchArgs) -> Outcome {
    let words = args.words.join(" ");
    let list = client
        .search(&words, args.limit.max(1))
        .await
        .map_err(fail)?;
    let shown: Vec<&ServerResponse> = list
        .servers
        .iter()
        .filter(|entry| args.all || entry.status() == Status::Active)
        .collect();
    if args.json {
        let out: Vec<serde_json::Value> = shown
            .iter()
            .map(|entry| {
                serde_json::json!({
                    "name": entry.server.name,
                    "version": entry.server.version,
                    "description": entry.server.description,
                    "kinds": entry.server.kinds(),
                    "status": entry.status().to_string(),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
        return Ok(exit::OK);
    }
    if shown.is_empty() {
        println!("No servers found in {}.", client.base());
        return Ok(exit::OK);
    }
    for entry in &shown {
        let status = match entry.status() {
            Status::Active => String::new(),
            other => format!(" [{other}]"),
        };
        println!(
            "{} {} ({}){status}",
            term::line(&entry.server.name),
            term::line(&entry.server.version),
            term::line(&entry.server.kinds().join(", ")),
        );
        if let Some(description) = &entry.server.description {
            println!("    {}", term::line(description));
        }
    }
    let hidden = list.servers.len() - shown.len();
    if hidden > 0 {
        println!("({hidden} deprecated or deleted not shown; --all lists them)");
    }
    Ok(exit::OK)
}

async fn run_show(client: &RegistryClient, args: ShowArgs) -> Outcome {
    let (name, version) = split_version(&args.server);
    let entry = client.server(name, version).await.map_err(fail)?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&entry).unwrap_or_default()
        );
        return Ok(exit::OK);
    }
    let server = &entry.server;
    println!(
        "{} {}",
        term::line(&server.name),
        term::line(&server.version)
    );
    if let Some(description) = &server.description {
        println!("  {}", term::line(description));
    }
    if entry.status() != Status::Active {
        println!("  Status: {}", entry.status());
    }
    println!("  Offers: {}", term::line(&server.kinds().join(", ")));
    for way in registry::plans(server) {
        match way.refusal() {
            Some(refusal) => println!(
                "    {}: cannot be installed: {}",
                term::line(&label(&way)),
                term::line(&format!("`{}`: {}", refusal.field, refusal.rule))
            ),
            None => println!("    {}", term::line(&label(&way))),
        }
    }
    let plan = registry::plan(server, args.kind.map(Into::into)).map_err(fail)?;
    let values = Values::default();
    match plan.build(&server.name, &values, None) {
        Ok(installed) => {
            let shown = installed.config.redacted();
            println!(
                "  Installs: {} ({})",
                plan.kind,
                term::line(&format!("{}: {}", shown.transport, shown.target()))
            );
        }
        Err(registry::RegistryError::Refused { .. }) => println!(
            "  Installs: nothing: its {} {} cannot be installed",
            plan.kind,
            if plan.remote.is_some() {
                "remote"
            } else {
                "package"
            }
        ),
        Err(_) => println!(
            "  Installs: {} (once the required values are given)",
            plan.kind
        ),
    }
    let needs = plan.needs();
    if needs.is_empty() {
        println!("  Needs no values.");
    } else {
        println!("  Values:");
        for need in &needs {
            println!("    {}", describe(need));
        }
    }
    Ok(exit::OK)
}

/// `npm @scope/name 1.2.3`, `remote https://host/mcp`: one way to install a server.
fn label(plan: &Plan) -> String {
    match (&plan.package, &plan.remote) {
        (Some(package), _) => format!(
            "{} {} {}",
            plan.kind,
            package.identifier,
            package.version.as_deref().unwrap_or("(no version)")
        ),
        (None, Some(remote)) => format!("remote {}", remote.url),
        (None, None) => plan.kind.to_string(),
    }
}

/// `--env API_KEY (required, secret): what it is [default: x]`.
fn describe(need: &Need) -> String {
    let mut tags = Vec::new();
    if need.input.is_required {
        tags.push("required");
    }
    if need.input.is_secret {
        tags.push("secret");
    }
    let mut out = need.flag();
    if !tags.is_empty() {
        out.push_str(&format!(" ({})", tags.join(", ")));
    }
    if let Some(description) = &need.input.description {
        out.push_str(": ");
        out.push_str(description);
    }
    if let Some(default) = &need.input.default
        && !need.input.is_secret
    {
        out.push_str(&format!(" [default: {default}]"));
    }
    if !need.input.choices.is_empty() {
        out.push_str(&format!(" [one of: {}]", need.input.choices.join(", ")));
    }
    term::line(&out).into_owned()
}

/// What `mcpr add --from-registry` needs from `AddArgs`.
pub(crate) struct FromRegistry<'a> {
    /// The local name.
    pub name: &'a str,
    /// `SERVER[@VERSION]`.
    pub spec: &'a str,
    /// The file to write.
    pub scope: Scope,
    /// Preferred kind.
    pub kind: Option<KindArg>,
    /// `--env NAME=VALUE`.
    pub env: &'a [String],
    /// `--header-value VAR=VALUE`.
    pub header_values: &'a [String],
    /// `--arg NAME=VALUE`.
    pub arg_values: &'a [String],
    /// Replace an existing entry.
    pub force: bool,
    /// `--timeout` (ms) for the entry.
    pub timeout: Option<u64>,
    /// Which registry.
    pub registry: &'a RegistryArg,
}

fn parse_values(values: &mut Values, source: ValueSource, pairs: &[String]) -> Result<(), Failure> {
    for pair in pairs {
        let (key, value) = pair
            .split_once('=')
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| {
                // The value may be a secret: name only the part before any `=`.
                Failure::usage(format!(
                    "{} `{}`: expected NAME=VALUE",
                    source.flag(),
                    pair.split('=').next().unwrap_or_default()
                ))
            })?;
        values.set(source, key, value);
    }
    Ok(())
}

/// Ask for each missing required value on the terminal (secrets without echo).
fn prompt(plan: &Plan, values: &mut Values) -> Result<(), Failure> {
    for need in plan.needs() {
        let missing = plan.missing(values);
        if !missing.contains(&need.flag()) {
            continue;
        }
        let mut label = need.key.clone();
        if let Some(description) = &need.input.description {
            label.push_str(&format!(" ({description})"));
        }
        let value = if need.input.is_secret {
            read_hidden(&format!("{} (secret): ", term::line(&label)))
        } else {
            read_line(&format!("{}: ", term::line(&label)))
        }
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", need.flag())))?;
        if !value.is_empty() {
            values.set(need.source, &need.key, value);
        }
    }
    Ok(())
}

fn read_line(prompt: &str) -> std::io::Result<String> {
    let mut err = std::io::stderr();
    write!(err, "{prompt}")?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line.trim_end_matches(['\r', '\n']).to_owned())
}

/// Read a line with the terminal's echo off, restoring it afterwards.
fn read_hidden(prompt: &str) -> std::io::Result<String> {
    #[cfg(unix)]
    {
        // SAFETY: tcgetattr/tcsetattr on stdin with a zeroed termios filled by the call.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(libc::STDIN_FILENO, &mut saved) } == 0 {
            let mut quiet = saved;
            quiet.c_lflag &= !libc::ECHO;
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &quiet) };
            let result = read_line(prompt);
            unsafe { libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &saved) };
            eprintln!();
            return result;
        }
    }
    read_line(prompt)
}

/// `mcpr add NAME --from-registry SERVER[@VERSION]`.
pub(crate) async fn add(global: &GlobalArgs, args: FromRegistry<'_>) -> Outcome {
    let flags = crate::discovery::CliFlags::from(global);
    let cwd = flags.cwd();
    let options = flags.options();
    let (server_name, version) = split_version(args.spec);
    let mut values = Values::default();
    parse_values(&mut values, ValueSource::Env, args.env)?;
    parse_values(&mut values, ValueSource::Header, args.header_values)?;
    parse_values(&mut values, ValueSource::Arg, args.arg_values)?;

    // Refuse early, before anything is downloaded or stored.
    let path = writer::config_path(&options, &cwd, args.scope).map_err(Failure::usage)?;
    let file = McprFile::load(&path).map_err(Failure::usage)?;
    if !args.force && file.server(args.name).is_some() {
        return Err(Failure::usage(format!(
            "server `{}`: already defined in {} (remove it first, or replace it with --force)",
            args.name,
            display_path(&path)
        )));
    }

    let client = client(args.registry, &options)?;
    let entry = client.server(server_name, version).await.map_err(fail)?;
    match entry.status() {
        Status::Deleted => {
            return Err(Failure::usage(format!(
                "`{server_name}` was deleted from the registry; it is not installed"
            )));
        }
        Status::Deprecated => eprintln!(
            "warning: `{}` is deprecated in the registry",
            term::line(server_name)
        ),
        Status::Active => {}
    }
    let plan = registry::plan(&entry.server, args.kind.map(Into::into)).map_err(fail)?;
    // What the entry may not decide is refused before anything is asked for or written.
    if let Err(e @ registry::RegistryError::Refused { .. }) =
        plan.build(args.name, &values, Some(&Default::default()))
    {
        return Err(fail(e));
    }
    // A value the entry does not ask for would be dropped silently: a typo, or a secret given
    // under the wrong name.
    let needs = plan.needs();
    let unknown: Vec<String> = values
        .0
        .keys()
        .filter(|(source, key)| !needs.iter().any(|n| n.source == *source && n.key == *key))
        .map(|(source, key)| format!("{} {key}", source.flag()))
        .collect();
    if !unknown.is_empty() {
        let takes: Vec<String> = needs.iter().map(Need::flag).collect();
        return Err(Failure::usage(format!(
            "server `{}`: `{}` asks for no value {} (it takes: {}); nothing was written",
            args.name,
            term::line(server_name),
            unknown.join(", "),
            if takes.is_empty() {
                "none".to_owned()
            } else {
                takes.join(", ")
            }
        )));
    }
    if !plan.missing(&values).is_empty() && std::io::stdin().is_terminal() {
        prompt(&plan, &mut values)?;
    }
    let missing = plan.missing(&values);
    if !missing.is_empty() {
        return Err(Failure::usage(format!(
            "server `{}`: required value(s) not given: {}; nothing was written",
            args.name,
            missing.join(", ")
        )));
    }
    // Check every value before downloading a bundle.
    plan.build(args.name, &values, Some(&Default::default()))
        .map_err(fail)?;

    let data_dir = SecretStore::default_path(&options.env)
        .and_then(|p| p.parent().map(PathBuf::from))
        .ok_or_else(|| Failure::usage("cannot locate mcpr's data directory: HOME is not set"))?;
    let bundle = match (&plan.kind, &plan.package) {
        (InstallKind::Mcpb, Some(package)) => Some(
            registry::install_bundle(&entry.server.name, package, &data_dir.join("bundles"))
                .await
                .map_err(fail)?,
        ),
        _ => None,
    };
    let result = write_entry(
        &args,
        &options,
        &cwd,
        &plan,
        &values,
        bundle.as_ref(),
        &path,
    );
    if result.is_err()
        && let Some(bundle) = &bundle
        && bundle.created
    {
        let _ = std::fs::remove_dir_all(&bundle.dir);
    }
    let (installed, stored) = result?;
    let shown = installed.config.redacted();
    println!(
        "Added `{}` from {} {} ({}: {}) to {}",
        args.name,
        term::line(&entry.server.name),
        term::line(&entry.server.version),
        shown.transport,
        term::line(&shown.target()),
        display_path(&path)
    );
    if let Some(store) = stored {
        let fields: Vec<&str> = installed.secrets.keys().map(String::as_str).collect();
        println!(
            "Secret values ({}) kept in {}, not in the config file.",
            fields.join(", "),
            display_path(store.path())
        );
    }
    Ok(exit::OK)
}

/// Store the secrets, then write the entry; a failure of the second undoes the first.
fn write_entry(
    args: &FromRegistry<'_>,
    options: &DiscoveryOptions,
    cwd: &std::path::Path,
    plan: &Plan,
    values: &Values,
    bundle: Option<&registry::UnpackedBundle>,
    path: &std::path::Path,
) -> Result<(registry::Installed, Option<SecretStore>), Failure> {
    let mut installed = plan
        .build(args.name, values, bundle.map(|b| &b.command))
        .map_err(fail)?;
    installed.config.timeout_ms = args.timeout;
    // Validate exactly as discovery will read it back.
    let config = server_from_json(args.name, &writer::server_to_json(&installed.config))
        .map_err(Failure::usage)?;
    let store = if installed.secrets.is_empty() {
        None
    } else {
        let path = SecretStore::default_path(&options.env)
            .ok_or_else(|| Failure::usage("cannot locate the secret store: HOME is not set"))?;
        let store = SecretStore::new(path);
        store
            .put(args.name, &config, installed.secrets.clone())
            .map_err(|e| Failure::usage(format!("secret store: {e}")))?;
        Some(store)
    };
    let was_trusted = args.scope == Scope::Project
        && mcp_runtime::load_all_mcp_configs(cwd, options)
            .project
            .state
            == mcp_runtime::config::ProjectTrustState::Trusted;
    match writer::add_server(options, cwd, args.scope, args.name, &config, args.force) {
        Ok(written) => debug_assert_eq!(written, path),
        Err(e) => {
            if let Some(store) = &store {
                let _ = store.remove(args.name);
            }
            return Err(Failure::usage(e));
        }
    }
    if was_trusted && let Err(e) = mcp_runtime::config::trust_project(cwd, options) {
        eprintln!("warning: could not keep the project trusted: {e}");
    }
    Ok((installed, store))
}
