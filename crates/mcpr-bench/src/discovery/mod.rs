//! `mcpr-bench discovery`: how well and how fast the tool index finds the right tool, and how
//! small discovery mode keeps mcpr's tool lists.
//!
//! Run it with `cargo run --release -p mcpr-bench -- discovery [--capture] [--update] [--dev]
//! [--fresh-misses]`, or, to rebuild only the small crates involved with optimisation rather
//! than the whole dependency tree: `cargo run -p mcpr-bench
//! --config profile.dev.package.tool-search.opt-level=3
//! --config profile.dev.package.rust-stemmers.opt-level=3
//! --config profile.dev.package.tool-search.debug-assertions=false
//! --config profile.dev.package.tool-search.overflow-checks=false -- discovery`.
//!
//! The evaluation itself is the `tool-search` crate's (`crates/tool-search/src/eval/`, its
//! corpus and labelled query sets in `crates/tool-search/data/`): recall@1, recall@5 and MRR of
//! plain BM25 and of the default ranking on each query set, build time and query latency. This
//! adds what needs MCP: `--capture` lists the corpus again, live, from real servers (see
//! [`capture`]), and the size of the full tool list against discovery mode's is counted in
//! tokens. `--update` writes the section into `crates/tool-search/RESULTS.md`. The development
//! sets' misses at rank 1 go to stderr; the fresh set's only with `--fresh-misses`; `--dev`
//! leaves the fresh set out (while the ranking changes). The tools for working on the ranking
//! (`--cv`, `--loso`, `--query-cost`, `--export-scores`) are the crate's example:
//! `cargo run --release -p tool-search --features eval --example eval -- --cv`.

mod capture;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use mcp_runtime::client::ToolDefinition;
use mcp_runtime::gateway;
use mcp_runtime::manager::ServerTools;
use mcp_runtime::session::HostToolSearch;
use mcp_runtime::tools::{NamingStyle, invoke_tool_definition, mcp_tools, search_tool_definition};
use serde_json::{Value, json};
use tool_search::eval::{self, Corpus, EvalError, Options};

use capture::capture;

/// The arguments `discovery` takes.
const FLAGS: [&str; 4] = ["--capture", "--update", "--dev", "--fresh-misses"];
/// The arguments that moved to `tool-search`'s example with the evaluation.
const MOVED: [&str; 4] = ["--cv", "--loso", "--query-cost", "--export-scores"];

/// The evaluation's data: the corpus `--capture` writes, and the query sets.
fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tool-search/data")
}

/// `mcpr-bench discovery [--capture] [--update] [--dev] [--fresh-misses]`.
pub(crate) fn main(args: &[String]) -> ExitCode {
    for arg in args {
        if MOVED.contains(&arg.as_str()) {
            eprintln!(
                "{arg} is the evaluation's own: cargo run --release -p tool-search --features \
                 eval --example eval -- {arg}"
            );
            return ExitCode::from(2);
        }
        if !FLAGS.contains(&arg.as_str()) {
            eprintln!(
                "unknown argument {arg} (discovery takes {})",
                FLAGS.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--capture")
        && let Err(why) = capture(&data_dir())
    {
        eprintln!("error: capture: {why}");
        return ExitCode::FAILURE;
    }
    let markdown = match evaluate(has("--dev"), has("--fresh-misses")) {
        Ok(markdown) => markdown,
        Err(why) => {
            eprintln!("error: {why}");
            return ExitCode::FAILURE;
        }
    };
    println!("{markdown}");
    if has("--update")
        && let Err(why) = write_results(&markdown)
    {
        eprintln!("error: crates/tool-search/RESULTS.md: {why}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

/// The evaluation's report with the tool-list tokens between its body and its targets.
fn evaluate(dev_only: bool, fresh_misses: bool) -> Result<String, String> {
    let data = data_dir();
    let options = Options {
        dev_only,
        fresh_misses,
        params: eval::params_from_env().map_err(|e| e.to_string())?,
    };
    let report = eval::report(&data, &options).map_err(|e| match e {
        EvalError::NoCorpus { .. } => format!("{e} (run `mcpr-bench discovery --capture`)"),
        e => e.to_string(),
    })?;
    let corpus = Corpus::load(&data).map_err(|e| e.to_string())?;
    let (tokens, ratio) = tool_list_tokens(&corpus)?;
    let check = |ok: bool| if ok { "✅" } else { "❌" };
    for (set, misses) in &report.misses {
        eprintln!("misses at rank 1 (default ranking, {set} set):");
        for miss in misses {
            eprintln!("  {miss}");
        }
    }
    Ok(format!(
        "{}{tokens}{}Target: discovery list ≤ 5% {} ({:.2}%).\n",
        report.body,
        report.targets,
        check(ratio <= 0.05),
        ratio * 100.0
    ))
}

/// Tokens: the full `tools/list` against discovery mode's (no server marked alwaysLoad): a
/// host's list is the search tool alone, the gateway's the search and invoke tools. The
/// paragraph, and the larger of the two discovery lists as a share of the full one.
fn tool_list_tokens(corpus: &Corpus) -> Result<(String, f64), String> {
    let mut servers = Vec::new();
    for server in &corpus.servers {
        let tools: Vec<ToolDefinition> = serde_json::from_value(Value::from(server.tools.clone()))
            .map_err(|e| format!("{}: {}: tools: {e}", eval::CORPUS_FILE, server.server))?;
        servers.push(ServerTools {
            server: server.server.clone(),
            source: None,
            tools: Arc::from(tools),
            deferred: false,
        });
    }
    let tools = mcp_tools(&servers, NamingStyle::Mcpr);
    let full: Vec<Value> = tools
        .iter()
        .map(|t| listed(&t.definition, &t.name))
        .collect();
    let full = serde_json::to_string(&json!({"tools": full})).map_err(|e| e.to_string())?;
    let host = serde_json::to_string(&json!({"tools": [HostToolSearch::search_tool_definition()]}))
        .map_err(|e| e.to_string())?;
    let gateway_tools = [
        search_tool_definition(gateway::SEARCH_TOOL),
        invoke_tool_definition(gateway::INVOKE_TOOL, gateway::SEARCH_TOOL),
    ];
    let gateway =
        serde_json::to_string(&json!({"tools": gateway_tools})).map_err(|e| e.to_string())?;
    let tokenizer = tiktoken_rs::o200k_base().map_err(|e| format!("o200k_base: {e}"))?;
    let tokens = |text: &str| tokenizer.encode_with_special_tokens(text).len();
    let (full_tokens, host_tokens, gateway_tokens) =
        (tokens(&full), tokens(&host), tokens(&gateway));
    let percent = |part: usize| part as f64 * 100.0 / full_tokens as f64;
    let ratio = gateway_tokens.max(host_tokens) as f64 / full_tokens as f64;
    let paragraph = format!(
        "Tool list tokens, counted with OpenAI's o200k_base tokenizer (`tiktoken-rs`; \
         characters ÷ 4 in brackets): full `tools/list` {full_tokens} ({}), discovery mode \
         {host_tokens} ({}) for a host's search tool, {:.2}% of the full list, and \
         {gateway_tokens} ({}) for the gateway's search and invoke tools, {:.2}%.\n\n",
        full.len() / 4,
        host.len() / 4,
        percent(host_tokens),
        gateway.len() / 4,
        percent(gateway_tokens),
    );
    Ok((paragraph, ratio))
}

/// A tool as `tools/list` shows it.
fn listed(definition: &ToolDefinition, name: &str) -> Value {
    let mut value = serde_json::to_value(definition).unwrap_or(Value::Null);
    value["name"] = json!(name);
    value
}

/// Replace (or append) the "## Tool discovery" section of the tool-search crate's `RESULTS.md`.
fn write_results(markdown: &str) -> Result<(), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tool-search/RESULTS.md");
    let text = std::fs::read_to_string(&path).map_err(|e| e.to_string())?;
    let start = text.find("## Tool discovery");
    let new = match start {
        Some(start) => {
            let end = text[start + 3..]
                .find("\n## ")
                .map_or(text.len(), |i| start + 3 + i + 1);
            format!(
                "{}{}\n{}",
                &text[..start],
                markdown.trim_end(),
                &text[end..]
            )
        }
        None => format!("{}\n{}\n", text.trim_end(), markdown.trim_end()),
    };
    std::fs::write(&path, new).map_err(|e| e.to_string())
}
