//! `mcpr tools`: start every configured server and list the tools an agent would get, or
//! (`--search`) the ones that best match a need, ranked.
//!
//! The listing is grouped by server, one line per tool; on a terminal each line is cut to its
//! width, and `--long` shows whole descriptions and parameters. A server configured several
//! times under other names (one per AI tool) is started and listed once, naming its copies.

use std::fmt::Write as _;

use mcp_runtime::tools::{McpTool, NamingStyle, ToolIndex, mcp_tools};
use serde_json::{Value, json};

use crate::advice::Advise as _;
use crate::connect::{Progress, StartOptions, start};
use crate::copies::Copies;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::inline::InlineArgs;
use crate::term;

/// Arguments of `mcpr tools`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mcpr tools\n  mcpr tools everything --long\n  mcpr tools everything/echo\n  \
mcpr tools -- npx -y @modelcontextprotocol/server-everything\n  \
mcpr tools --url http://localhost:3001/mcp -H 'Authorization: Bearer ${TOKEN}'"
)]
pub(crate) struct ToolsArgs {
    /// Only this server (default: every configured server), or `SERVER/TOOL` for one tool and
    /// its parameters.
    #[arg(value_name = "SERVER[/TOOL]", add = clap_complete::engine::ArgValueCompleter::new(crate::complete::server_names))]
    pub server: Option<String>,
    /// Show each tool's whole description and its parameters (name, type, required,
    /// description); without it, one line per tool, cut to the terminal's width.
    #[arg(long, short = 'l')]
    pub long: bool,
    /// Say nothing but the listing and the errors of the servers listed: no connection lines,
    /// no problems of other servers' configs.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Wait for every server instead of offering cached tools for slow ones.
    #[arg(long)]
    pub wait: bool,
    /// Name tools as Claude Code does (`mcp__server__tool`).
    #[arg(long)]
    pub claude_names: bool,
    /// Print JSON (one object per tool, with its server, raw name and full schema; with
    /// `--search`, plus its `score`).
    #[arg(long)]
    pub json: bool,
    /// Only the tools that match QUERY (words of what the tool should do), best first.
    #[arg(long, value_name = "QUERY")]
    pub search: Option<String>,
    /// With `--search`: at most K tools.
    #[arg(long, value_name = "K", requires = "search", default_value_t = 10,
          value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub limit: u16,
    /// Wait for every server and exit 3 when any failed (by default a listing exits 0 while
    /// one server answered, and reports the failed ones on stderr).
    #[arg(long)]
    pub strict: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: InlineArgs,
}

pub(crate) async fn run(global: &GlobalArgs, args: ToolsArgs) -> Outcome {
    if let Some(query) = &args.search
        && query.trim().is_empty()
    {
        return Err(Failure::usage("`--search` needs words to search for"));
    }
    let mut discovery = crate::inline::discover_some(global, &args.inline)?;
    let (only, one_tool) = which(&args, &discovery.configs);
    if let Some(only) = &only {
        if !discovery.configs.contains_key(only) {
            return Err(crate::discovery::not_enabled(&discovery, only));
        }
        discovery.configs.retain(|name, _| name == only);
    }
    // The same server under three names would list each tool three times.
    let copies = Copies::fold(&mut discovery.configs, &discovery.sources);
    let total = discovery.configs.len();
    let options = StartOptions {
        progress: if args.json || args.quiet {
            Progress::Quiet
        } else {
            Progress::Show
        },
        // One tool, or a server being tried inline: its live tools, not the cached ones.
        // `--strict` judges every server, so it waits for each to settle.
        wait: args.wait || args.strict || one_tool.is_some() || args.inline.is_set(),
        reconnect: false,
    };
    let started = crate::shutdown::until_signal(start(
        discovery.cwd.clone(),
        discovery.configs,
        discovery.sources,
        options,
    ))
    .await?;
    crate::cmd::trust_pins::warn_held(&started.manager);
    let naming = if args.claude_names {
        NamingStyle::Claude
    } else {
        NamingStyle::Mcpr
    };
    let mut tools = mcp_tools(&started.report.servers, naming);
    if let Some(wanted) = &one_tool {
        tools.retain(|t| &t.tool == wanted);
        if tools.is_empty() && started.report.errors.is_empty() {
            started.manager.disconnect_all().await;
            let server = only.as_deref().unwrap_or(crate::inline::INLINE_NAME);
            return Err(Failure::usage(format!(
                "server `{server}` has no tool named `{wanted}` (see `mcpr tools {server}`)"
            )));
        }
    }

    if let Some(query) = &args.search {
        let mut index = ToolIndex::new();
        for server in &started.report.servers {
            let mine: Vec<McpTool> = tools
                .iter()
                .filter(|t| t.server == server.server)
                .cloned()
                .collect();
            index.set_server(&server.server, &mine);
        }
        let hits = index.search(query, usize::from(args.limit));
        if args.json {
            let listing: Vec<Value> = hits
                .iter()
                .map(|hit| {
                    let mut object = tool_json(&hit.tool, &copies);
                    object["score"] = json!(hit.score);
                    object
                })
                .collect();
            let text = serde_json::to_string_pretty(&listing).map_err(Failure::internal)?;
            println!("{text}");
        } else if hits.is_empty() {
            eprintln!("no tool matches {}", term::line(query));
        } else {
            let width = term::stdout_width();
            let mut text = String::new();
            for hit in &hits {
                let line = format!(
                    "{:>6.2}  {:<32} {}",
                    hit.score,
                    hit.tool.name,
                    term::line(summary(&hit.tool))
                );
                let _ = writeln!(text, "{}", cut(&line, width));
            }
            print!("{text}");
            let mut servers: Vec<&str> = Vec::new();
            for hit in &hits {
                if !servers.contains(&hit.tool.server.as_str()) {
                    servers.push(&hit.tool.server);
                }
            }
            for server in servers {
                if let Some(named) = copies.named(server) {
                    eprintln!(
                        "note: `{}` is also configured as {}; its tools are shown once",
                        term::line(server),
                        term::line(&named)
                    );
                }
            }
        }
    } else if args.json {
        let listing: Vec<Value> = tools.iter().map(|tool| tool_json(tool, &copies)).collect();
        let text = serde_json::to_string_pretty(&listing).map_err(Failure::internal)?;
        println!("{text}");
    } else {
        // One write: the listing goes out at once, not a system call per line while the
        // servers still booting compete for the CPU.
        let long = args.long || one_tool.is_some();
        let width = if long { None } else { term::stdout_width() };
        let mut text = String::new();
        for server in &started.report.servers {
            let cached = if server.deferred {
                ", cached: still connecting"
            } else {
                ""
            };
            let also = match copies.named(&server.server) {
                Some(named) => format!("; also configured as {named}"),
                None => String::new(),
            };
            let header = format!(
                "{} ({} tools{cached}{also})",
                server.server,
                server.tools.len()
            );
            // Whole even on a terminal: it names the server's other names.
            let _ = writeln!(text, "{}", term::line(&header));
            for tool in tools.iter().filter(|t| t.server == server.server) {
                if long {
                    write_long(&mut text, tool);
                } else {
                    let line = format!("  {:<32} {}", tool.name, term::line(summary(tool)));
                    let _ = writeln!(text, "{}", cut(&line, width));
                }
            }
        }
        print!("{text}");
    }
    let report = &started.report;
    if args.json {
        // The listing on stdout keeps its shape; a script finds the failures here, with the
        // servers not waited for because their last start failed.
        let mut errors: serde_json::Map<String, Value> = report
            .errors
            .iter()
            .map(|(name, error)| (name.clone(), json!(error.explained())))
            .collect();
        for (name, error) in &report.failed_before {
            let message = format!("not waited for: its last start failed: {error}");
            errors.insert(name.clone(), json!(message));
        }
        if !errors.is_empty() {
            eprintln!("{}", json!({ "errors": errors }));
        }
    } else {
        for (name, error) in &report.errors {
            eprintln!(
                "error: {}",
                term::text(&with_name(name, &error.explained()))
            );
        }
    }
    let failed = report.errors.len() + report.failed_before.len();
    // Printed at the gate; the servers are stopped after.
    crate::connect::stop_after_output(&started.manager).await;
    Ok(exit::listing(failed, total, args.strict))
}

/// The server to list (`None`: all) and the one tool to show, from `SERVER`, `SERVER/TOOL`, or
/// with a server given inline, `TOOL`. A server's own name wins over a split at `/`.
fn which(
    args: &ToolsArgs,
    configs: &indexmap::IndexMap<String, mcp_runtime::config::ServerConfig>,
) -> (Option<String>, Option<String>) {
    let Some(given) = &args.server else {
        return (None, None);
    };
    if configs.contains_key(given) {
        return (Some(given.clone()), None);
    }
    match given.rsplit_once('/') {
        Some((server, tool)) if configs.contains_key(server) && !tool.is_empty() => {
            (Some(server.to_owned()), Some(tool.to_owned()))
        }
        _ if args.inline.is_set() => (None, Some(given.clone())),
        _ => (Some(given.clone()), None),
    }
}

/// `line` cut to `width` columns, when there is a width (a terminal).
fn cut(line: &str, width: Option<usize>) -> std::borrow::Cow<'_, str> {
    match width {
        Some(width) => term::fit(line, width),
        None => std::borrow::Cow::Borrowed(line),
    }
}

/// One tool in full: its name with the first line of its description, the description's
/// other lines, and its parameters.
fn write_long(text: &mut String, tool: &McpTool) {
    let _ = writeln!(text, "  {:<32} {}", tool.name, term::line(summary(tool)));
    let description = tool.definition.description.as_deref().unwrap_or("");
    for line in description.lines().skip(1) {
        let _ = writeln!(text, "      {}", term::line(line));
    }
    let schema = &tool.definition.input_schema.to_value();
    for line in crate::cmd::arguments::parameter_lines(schema, "      ") {
        let _ = writeln!(text, "{}", term::line(&line));
    }
    if let Some(app) = tool.definition.ui_resource_uri() {
        let _ = writeln!(text, "      app: {}", term::line(app));
    }
}

/// The first line of a tool's description.
fn summary(tool: &McpTool) -> &str {
    tool.definition
        .description
        .as_deref()
        .and_then(|d| d.lines().next())
        .unwrap_or("")
}

/// One tool as `--json` prints it; `sameServerAs` names the copies of its server, when it has
/// some (their tools are not listed again).
fn tool_json(tool: &McpTool, copies: &Copies) -> Value {
    let mut object = json!({
        "name": tool.name,
        "server": tool.server,
        "tool": tool.tool,
        "label": tool.label,
        "deferred": tool.deferred,
        "title": tool.definition.title,
        "description": tool.definition.description,
        "inputSchema": tool.definition.input_schema,
        "outputSchema": tool.definition.output_schema,
        "annotations": tool.definition.annotations,
    });
    // Every other field of the definition (`_meta`, `icons`, ...) as the server sent it.
    if let Value::Object(fields) = &mut object {
        for (key, value) in &tool.definition.extra {
            fields.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    let same: Vec<&str> = copies
        .of(&tool.server)
        .iter()
        .map(|copy| copy.name.as_str())
        .collect();
    if !same.is_empty() {
        object["sameServerAs"] = json!(same);
    }
    object
}

/// Errors from the runtime already name their server; make sure the few that do not still do.
pub(crate) fn with_name(server: &str, error: &str) -> String {
    if error.contains(&format!("`{server}`")) {
        error.to_owned()
    } else {
        format!("server `{server}`: {error}")
    }
}
