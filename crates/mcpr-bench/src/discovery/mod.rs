//! `mcpr-bench discovery`: how well and how fast the tool index finds the right tool.
//!
//! Run it with `cargo run --release -p mcpr-bench -- discovery [--update]`, or, to rebuild only
//! the small crates involved with optimisation rather than the whole dependency tree:
//! `cargo run -p mcpr-bench --config profile.dev.package.mcp-runtime.opt-level=3
//! --config profile.dev.package.rust-stemmers.opt-level=3
//! --config profile.dev.package.mcpr-bench.opt-level=3
//! --config profile.dev.package.mcp-runtime.debug-assertions=false
//! --config profile.dev.package.mcp-runtime.overflow-checks=false -- discovery [--update]`.
//!
//! The corpus is the tools listed live from real MCP servers installed from npm and PyPI
//! (`--capture` lists them again, see [`capture`]), so the evaluation itself runs offline. The
//! queries are needs as an agent phrases them mid-task, each with the tool(s) that answer it, in
//! eleven sets: `data/tool_queries.json`, on which the ranking was tuned;
//! `data/tool_queries_heldout.json` and `data/tool_queries_fresh.json` to
//! `data/tool_queries_fresh8.json`, each written before any result on it was seen (the last
//! two reported once as the fresh set), so they are development sets too; and
//! `data/tool_queries_fresh9.json`, written by a session that never saw the ranking, committed
//! before the index was run on it and never used to tune. The run prints recall@1, recall@5 and
//! MRR of plain BM25 and of the default ranking on each set, index build time,
//! query latency at the corpus size and at 10,000 tools, and the size of the tool list in
//! discovery mode against the full list. The development sets' misses at rank 1 go to stderr;
//! the fresh set's only with `--fresh-misses`. `--dev` leaves the fresh set out (while the
//! ranking changes); `--query-cost N` is a callgrind target for the instructions of a query;
//! `--export-scores PATH` writes every query's best tools with their scores as JSON, to try a
//! change of the ranking offline (`crates/mcp-runtime/tools-data/prototype.py`).

mod capture;
mod crossval;
mod retune;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp_runtime::client::ToolDefinition;
use mcp_runtime::gateway;
use mcp_runtime::manager::ServerTools;
use mcp_runtime::session::Discovery;
use mcp_runtime::tools::{
    McpTool, NamingStyle, Ranking, RankingParams, ToolIndex, invoke_tool_definition, mcp_tools,
    search_tool_definition,
};
use serde_json::{Value, json};

use capture::capture;

/// One captured server: (server name, package, version, tools).
type CorpusServer = (String, String, String, Vec<ToolDefinition>);

/// The tuning set of queries (the ranking was tuned on it).
const TUNING_QUERIES: &str = "tool_queries.json";
/// The first held-out set (its misses have since been read).
const HELD_OUT_QUERIES: &str = "tool_queries_heldout.json";
/// Every development set, labelled, in the order they were written. Each held-out set was
/// committed before the index was run on it; from held-out 2 on, each was then reported once as
/// the fresh set, and from held-out 4 on, written by a session that never saw the ranking. Their
/// misses were read afterwards while changing the ranking, so they are development sets now.
const DEVELOPMENT_SETS: [(&str, &str); 10] = [
    ("tuning", TUNING_QUERIES),
    ("held-out 1", HELD_OUT_QUERIES),
    ("held-out 2", "tool_queries_fresh.json"),
    ("held-out 3", "tool_queries_fresh2.json"),
    ("held-out 4", "tool_queries_fresh3.json"),
    ("held-out 5", "tool_queries_fresh4.json"),
    ("held-out 6", "tool_queries_fresh5.json"),
    ("held-out 7", "tool_queries_fresh6.json"),
    ("held-out 8", "tool_queries_fresh7.json"),
    ("held-out 9", "tool_queries_fresh8.json"),
];
/// The fresh held-out set, written by a session that never saw the ranking code nor a result,
/// and committed before the index was run on it; never tuned on.
const FRESH_QUERIES: &str = "tool_queries_fresh9.json";
/// The arguments `discovery` takes.
const FLAGS: [&str; 8] = [
    "--capture",
    "--cv",
    "--loso",
    "--update",
    "--dev",
    "--fresh-misses",
    "--query-cost",
    "--export-scores",
];

/// What a run reports.
#[derive(Clone, Copy)]
struct Options {
    /// Only the development sets (while changing the ranking the fresh set stays unseen).
    dev_only: bool,
    /// Print the fresh set's misses (once, when the ranking is final).
    fresh_misses: bool,
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

/// `mcpr-bench discovery [--capture] [--update] [--dev] [--fresh-misses] [--query-cost N]`.
pub fn main(args: &[String]) -> ExitCode {
    let capture_first = args.iter().any(|a| a == "--capture");
    let update = args.iter().any(|a| a == "--update");
    let options = Options {
        dev_only: args.iter().any(|a| a == "--dev"),
        fresh_misses: args.iter().any(|a| a == "--fresh-misses"),
    };
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if arg == "--query-cost" {
            let Some(repeats) = rest.next().and_then(|n| n.parse::<usize>().ok()) else {
                eprintln!("--query-cost takes a number of repeats (0 measures the set-up alone)");
                return ExitCode::from(2);
            };
            return match query_cost(repeats) {
                Ok(()) => ExitCode::SUCCESS,
                Err(why) => {
                    eprintln!("error: {why}");
                    ExitCode::FAILURE
                }
            };
        }
        if arg == "--export-scores" {
            let Some(path) = rest.next() else {
                eprintln!("--export-scores takes the path of the JSON file to write");
                return ExitCode::from(2);
            };
            return match export_scores(Path::new(path)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(why) => {
                    eprintln!("error: {why}");
                    ExitCode::FAILURE
                }
            };
        }
        if !FLAGS.contains(&arg.as_str()) {
            eprintln!(
                "unknown argument {arg} (discovery takes {})",
                FLAGS.join(", ")
            );
            return ExitCode::from(2);
        }
    }
    let table = if args.iter().any(|a| a == "--cv") {
        Some(cv())
    } else if args.iter().any(|a| a == "--loso") {
        Some(leave_one_set_out())
    } else {
        None
    };
    if let Some(table) = table {
        return match table {
            Ok(table) => {
                println!("{table}");
                ExitCode::SUCCESS
            }
            Err(why) => {
                eprintln!("error: {why}");
                ExitCode::FAILURE
            }
        };
    }
    if capture_first && let Err(why) = capture() {
        eprintln!("error: capture: {why}");
        return ExitCode::FAILURE;
    }
    match evaluate(options) {
        Ok(markdown) => {
            println!("{markdown}");
            if update && let Err(why) = write_benchmarks(&markdown) {
                eprintln!("error: BENCHMARKS.md: {why}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(why) => {
            eprintln!("error: {why}");
            ExitCode::FAILURE
        }
    }
}

/// `--query-cost N`, a target for `valgrind --tool=callgrind`: index the corpus replicated to
/// 10,000 tools, then run every query of the first two development sets N times through
/// [`one_search`]. Run with 0 and with N: the difference divided by N × queries is the cost of
/// one query in instructions. `--dump-after=*one_search*` gives each query's own count.
fn query_cost(repeats: usize) -> Result<(), String> {
    let servers = corpus_servers(&load_corpus()?);
    let queries: Vec<Query> = load_queries(TUNING_QUERIES)?
        .into_iter()
        .chain(load_queries(HELD_OUT_QUERIES)?)
        .collect();
    let (index, _) = build(Ranking::Tuned, &replicated(&servers, 10_000));
    // The first search after a change computes the index's weights once: not a query's cost.
    std::hint::black_box(index.search("warm up", 5));
    for _ in 0..repeats {
        for query in &queries {
            one_search(&index, &query.query);
        }
    }
    eprintln!("{} queries × {repeats}", queries.len());
    Ok(())
}

/// `--export-scores PATH`: every query of the development sets with the default ranking's best
/// 50 tools and their scores, as JSON, for trying a change of the ranking offline (a blend with
/// another score) before writing it in Rust.
fn export_scores(path: &Path) -> Result<(), String> {
    let servers = corpus_servers(&load_corpus()?);
    let (index, _) = build(Ranking::Tuned, &servers);
    let mut sets = serde_json::Map::new();
    for (_, file) in DEVELOPMENT_SETS {
        let queries: Vec<Value> = load_queries(file)?
            .iter()
            .map(|query| {
                let hits: Vec<Value> = index
                    .search(&query.query, 50)
                    .iter()
                    .map(|hit| {
                        let id = format!("{}/{}", hit.tool.server, hit.tool.tool);
                        json!([id, hit.score])
                    })
                    .collect();
                json!({"query": query.query, "expected": query.expected, "hits": hits})
            })
            .collect();
        sets.insert(file.to_owned(), Value::Array(queries));
    }
    let text = serde_json::to_string(&sets).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

/// `--cv`: the field weights cross-validated over the first two development sets.
fn cv() -> Result<String, String> {
    let servers = corpus_servers(&load_corpus()?);
    let tuning = load_queries(TUNING_QUERIES)?;
    let held_out = load_queries(HELD_OUT_QUERIES)?;
    let queries: Vec<&Query> = tuning.iter().chain(&held_out).collect();
    Ok(crossval::cross_validate(&servers, &queries))
}

/// `--loso`: every ranking constant re-tuned on all development sets but one and scored on that
/// one, for each set in turn.
fn leave_one_set_out() -> Result<String, String> {
    let servers = corpus_servers(&load_corpus()?);
    let mut sets = Vec::new();
    for (_, file) in DEVELOPMENT_SETS {
        sets.push((file, load_queries(file)?));
    }
    Ok(retune::leave_one_set_out(&servers, &sets))
}

/// One `search(query, 5)`, never inlined so that callgrind can count it on its own.
#[inline(never)]
fn one_search(index: &ToolIndex, query: &str) {
    std::hint::black_box(index.search(query, 5));
}

fn corpus_servers(corpus: &[CorpusServer]) -> Vec<ServerTools> {
    corpus
        .iter()
        .map(|(server, _, _, tools)| ServerTools {
            server: server.clone(),
            source: None,
            tools: Arc::from(tools.clone()),
            deferred: false,
        })
        .collect()
}

/// The corpus as the manager would hand it over: (server, package, version, tools).
fn load_corpus() -> Result<Vec<CorpusServer>, String> {
    let path = data_dir().join("tool_corpus.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "{}: {e} (run `mcpr-bench discovery --capture`)",
            path.display()
        )
    })?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for server in json["servers"].as_array().into_iter().flatten() {
        let tools: Vec<ToolDefinition> = serde_json::from_value(server["tools"].clone())
            .map_err(|e| format!("{}: tools: {e}", path.display()))?;
        out.push((
            server["server"].as_str().unwrap_or("?").to_owned(),
            server["package"].as_str().unwrap_or("?").to_owned(),
            server["version"].as_str().unwrap_or("?").to_owned(),
            tools,
        ));
    }
    Ok(out)
}

/// The servers `--capture` could not list, with the first line of why.
fn load_failed() -> Result<Vec<(String, String)>, String> {
    let path = data_dir().join("tool_corpus.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(json["failed"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let why = f["error"]
                .as_str()
                .unwrap_or("?")
                .lines()
                .next()
                .unwrap_or("?");
            (
                f["server"].as_str().unwrap_or("?").to_owned(),
                why.to_owned(),
            )
        })
        .collect())
}

struct Query {
    query: String,
    /// `server/tool` of every tool that answers it.
    expected: Vec<String>,
}

fn load_queries(file: &str) -> Result<Vec<Query>, String> {
    let path = data_dir().join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = Vec::new();
    for entry in json["queries"].as_array().into_iter().flatten() {
        let expected = match &entry["expected"] {
            Value::String(one) => vec![one.clone()],
            Value::Array(many) => many
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        out.push(Query {
            query: entry["query"].as_str().unwrap_or_default().to_owned(),
            expected,
        });
    }
    Ok(out)
}

fn tools_of(servers: &[ServerTools]) -> Vec<McpTool> {
    mcp_tools(servers, NamingStyle::Mcpr)
}

fn build(ranking: Ranking, servers: &[ServerTools]) -> (ToolIndex, Duration) {
    let tools = tools_of(servers);
    let started = Instant::now();
    let mut index = match ranking {
        Ranking::Tuned => ToolIndex::with_params(params_from_env()),
        _ => ToolIndex::with_ranking(ranking),
    };
    for server in servers {
        let mine: Vec<McpTool> = tools
            .iter()
            .filter(|t| t.server == server.server)
            .cloned()
            .collect();
        index.set_server(&server.server, &mine);
    }
    (index, started.elapsed())
}

/// The default ranking's constants, with any of `DISCOVERY_PARAMS=name=3,topic=0.5,…` (to try a
/// value without rebuilding; the figures in BENCHMARKS.md are always the defaults').
fn params_from_env() -> RankingParams {
    let mut params = RankingParams::default();
    let Ok(spec) = std::env::var("DISCOVERY_PARAMS") else {
        return params;
    };
    for item in spec.split(',').filter(|s| !s.is_empty()) {
        let Some((key, value)) = item.split_once('=') else {
            eprintln!("DISCOVERY_PARAMS: {item:?} is not key=value");
            continue;
        };
        let Ok(value) = value.parse::<f32>() else {
            eprintln!("DISCOVERY_PARAMS: {key}: {value:?} is not a number");
            continue;
        };
        let slot = match key {
            "name" => &mut params.name,
            "title" => &mut params.title,
            "summary" => &mut params.summary,
            "details" => &mut params.details,
            "server" => &mut params.server,
            "params" => &mut params.params,
            "expansion" => &mut params.expansion,
            "coverage" => &mut params.coverage,
            "server_named" => &mut params.server_named,
            "topic" => &mut params.topic,
            "action" => &mut params.action,
            "phrase" => &mut params.phrase,
            "deprecated" => &mut params.deprecated,
            _ => {
                eprintln!("DISCOVERY_PARAMS: unknown constant {key}");
                continue;
            }
        };
        *slot = value;
    }
    params
}

struct Quality {
    recall1: f64,
    recall5: f64,
    mrr: f64,
    misses: Vec<String>,
}

fn quality(index: &ToolIndex, queries: &[Query]) -> Quality {
    let (mut hit1, mut hit5, mut rr) = (0usize, 0usize, 0f64);
    let mut misses = Vec::new();
    for query in queries {
        let hits = index.search(&query.query, 10);
        let rank = hits.iter().position(|hit| {
            let id = format!("{}/{}", hit.tool.server, hit.tool.tool);
            query.expected.contains(&id)
        });
        match rank {
            Some(0) => hit1 += 1,
            _ => {
                let got = hits
                    .first()
                    .map(|h| format!("{}/{}", h.tool.server, h.tool.tool))
                    .unwrap_or_else(|| "nothing".into());
                misses.push(format!(
                    "{:?}: wanted {}, got {got} (rank {})",
                    query.query,
                    query.expected.join(" or "),
                    rank.map_or("-".into(), |r| (r + 1).to_string())
                ));
            }
        }
        if let Some(rank) = rank {
            if rank < 5 {
                hit5 += 1;
            }
            rr += 1.0 / (rank as f64 + 1.0);
        }
    }
    let n = queries.len().max(1) as f64;
    Quality {
        recall1: hit1 as f64 / n,
        recall5: hit5 as f64 / n,
        mrr: rr / n,
        misses,
    }
}

/// p50 and p99 over the queries of one search's time, each query's time being the median of
/// five runs (so that a moment's preemption by another process does not count as its cost).
fn latency(index: &ToolIndex, queries: &[&Query]) -> (Duration, Duration) {
    let mut per_query: Vec<Duration> = queries
        .iter()
        .map(|query| {
            let mut runs: Vec<Duration> = (0..5)
                .map(|_| {
                    let started = Instant::now();
                    std::hint::black_box(index.search(&query.query, 5));
                    started.elapsed()
                })
                .collect();
            runs.sort();
            runs[runs.len() / 2]
        })
        .collect();
    if per_query.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    per_query.sort();
    let at = |q: f64| per_query[((per_query.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99))
}

/// `n` tools made by replicating the corpus under renamed servers.
fn replicated(servers: &[ServerTools], n: usize) -> Vec<ServerTools> {
    let mut out = Vec::new();
    let mut count = 0;
    let mut copy = 0;
    while count < n {
        for server in servers {
            if count >= n {
                break;
            }
            let take = server.tools.len().min(n - count);
            let name = if copy == 0 {
                server.server.clone()
            } else {
                format!("{}-{copy}", server.server)
            };
            out.push(ServerTools {
                server: name,
                source: None,
                tools: Arc::from(server.tools[..take].to_vec()),
                deferred: false,
            });
            count += take;
        }
        copy += 1;
    }
    out
}

/// A tool as `tools/list` shows it.
fn listed(definition: &ToolDefinition, name: &str) -> Value {
    let mut value = serde_json::to_value(definition).unwrap_or(Value::Null);
    value["name"] = json!(name);
    value
}

/// `n` in words, as the report's prose writes small numbers.
fn number_word(n: usize) -> String {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve",
    ];
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |word| (*word).to_owned())
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

fn evaluate(options: Options) -> Result<String, String> {
    let corpus = load_corpus()?;
    let mut sets: Vec<(&str, Vec<Query>)> = Vec::new();
    for (label, file) in DEVELOPMENT_SETS {
        sets.push((label, load_queries(file)?));
    }
    let fresh = if options.dev_only {
        Vec::new()
    } else {
        load_queries(FRESH_QUERIES)?
    };
    let servers = corpus_servers(&corpus);
    let total: usize = servers.iter().map(|s| s.tools.len()).sum();
    let mut out = String::new();
    out.push_str("## Tool discovery\n\n");
    // "held-out 1 (79), 2 (182), … and 9 (256)".
    let held_out: Vec<String> = sets[1..]
        .iter()
        .enumerate()
        .map(|(at, (label, queries))| {
            let label = if at == 0 {
                label
            } else {
                label.trim_start_matches("held-out ")
            };
            format!("{label} ({})", queries.len())
        })
        .collect();
    let (last, rest) = held_out.split_last().ok_or("no held-out set")?;
    out.push_str(&format!(
        "`cargo run --release -p mcpr-bench -- discovery` (`crates/mcpr-bench/src/discovery/`). \
         Corpus: {total} tools listed live from {} servers (`--capture` installs and lists them \
         again). Queries phrased as an agent does mid-task, with near-miss distractors \
         (`crates/mcpr-bench/data/`), in {} sets: tuning ({}), on which the ranking was \
         tuned; {} and {last}, each written and committed before any result on it was seen, \
         whose misses were then read while changing the ranking, so they are development sets \
         too; and fresh held-out ({}), written by a session that never saw the ranking code nor \
         a result, committed before the index was run on it, never used to tune and reported \
         once, at the end.\n\n",
        servers.len(),
        number_word(sets.len() + 1),
        sets[0].1.len(),
        rest.join(", "),
        fresh.len()
    ));
    out.push_str("| server | package | version | tools |\n|---|---|---|---:|\n");
    for (server, package, version, tools) in &corpus {
        out.push_str(&format!(
            "| {server} | {package} | {version} | {} |\n",
            tools.len()
        ));
    }
    for (server, why) in load_failed()? {
        out.push_str(&format!("\nNot in the corpus: {server} ({why}).\n"));
    }
    out.push('\n');

    let rankings = [
        ("plain BM25", Ranking::Bm25),
        ("mcpr (BM25F, stemming, expansion)", Ranking::Tuned),
    ];
    if !options.dev_only {
        sets.push(("fresh held-out", fresh));
    }
    out.push_str("| ranking | queries | recall@1 | recall@5 | MRR |\n|---|---|---:|---:|---:|\n");
    let mut tuned = Vec::new();
    for (label, ranking) in rankings {
        let (index, _) = build(ranking, &servers);
        for (set, queries) in &sets {
            let q = quality(&index, queries);
            out.push_str(&format!(
                "| {label} | {set} ({}) | {:.2} | {:.2} | {:.3} |\n",
                queries.len(),
                q.recall1,
                q.recall5,
                q.mrr
            ));
            if ranking == Ranking::Tuned {
                tuned.push((*set, q));
            }
        }
    }
    out.push('\n');

    out.push_str(
        "| ranking | index build | query p50 | query p99 | build at 10,000 tools | p50 at 10,000 | \
         p99 at 10,000 |\n|---|---:|---:|---:|---:|---:|---:|\n",
    );
    let every: Vec<&Query> = sets.iter().flat_map(|(_, queries)| queries).collect();
    let big = replicated(&servers, 10_000);
    for (label, ranking) in rankings {
        let (index, built) = build(ranking, &servers);
        let (p50, p99) = latency(&index, &every);
        let (big_index, big_built) = build(ranking, &big);
        let (big50, big99) = latency(&big_index, &every);
        out.push_str(&format!(
            "| {label} | {} | {} | {} | {} | {} | {} |\n",
            ms(built),
            ms(p50),
            ms(p99),
            ms(big_built),
            ms(big50),
            ms(big99)
        ));
    }
    out.push_str(
        "\nPlain BM25: identifiers split and lower-cased, one bag of words per tool. mcpr: \
         BM25F over name, title, the description's first sentence, the rest of the description, \
         server and parameters with per-field weights; Snowball stemming; filler words dropped; \
         CamelCase brands (GitHub) also indexed as one word; query expansion from a built-in \
         synonym table and two words written as one (\"check out\" → checkout); a question \
         (what, which, who, show…) implies list/get; bonuses for saying the words of the \
         tool's name, for its name saying the request's first word, for two words adjacent in \
         its summary, for naming its server (\"in git\", \"on GitHub\") and for the server \
         that matches best as a whole; a request to read against a tool that changes (and \
         the other way round) is marked down; the kinds of value a request carries (a path, a \
         URL, a time zone, coordinates, SQL, a date, a commit, a number) are terms matched by \
         the tools whose parameters take them, and the words inside those values weigh less; \
         a tool's score is scaled by the fourth root of the share of the request it matches; \
         a tool whose description says \"deprecated\" or \"use X instead\" loses ties. \
         Latency is one `search(query, 5)` call: each query of every set runs five times, its \
         median is its time, and p50/p99 are over the queries; at 10,000 tools the corpus is \
         replicated under renamed servers.\n\n",
    );

    // Tokens: the full tools/list against discovery mode's (no server marked alwaysLoad): a
    // host's list is the search tool alone, the gateway's the search and invoke tools.
    let tools = tools_of(&servers);
    let full: Vec<Value> = tools
        .iter()
        .map(|t| listed(&t.definition, &t.name))
        .collect();
    let full = serde_json::to_string(&json!({"tools": full})).map_err(|e| e.to_string())?;
    let host = serde_json::to_string(&json!({"tools": [Discovery::search_tool_definition()]}))
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
    out.push_str(&format!(
        "Tool list tokens, counted with OpenAI's o200k_base tokenizer (`tiktoken-rs`; \
         characters ÷ 4 in brackets): full `tools/list` {full_tokens} ({}), discovery mode \
         {host_tokens} ({}) for a host's search tool, {:.2}% of the full list, and \
         {gateway_tokens} ({}) for the gateway's search and invoke tools, {:.2}%.\n\n",
        full.len() / 4,
        host.len() / 4,
        percent(host_tokens),
        gateway.len() / 4,
        percent(gateway_tokens),
    ));
    let check = |ok: bool| if ok { "✅" } else { "❌" };
    for (set, q) in &tuned {
        out.push_str(&format!(
            "Targets ({set}): recall@5 ≥ 0.90 {} ({:.2}), recall@1 ≥ 0.70 {} ({:.2}).\n",
            check(q.recall5 >= 0.90),
            q.recall5,
            check(q.recall1 >= 0.70),
            q.recall1,
        ));
    }
    out.push_str(&format!(
        "Target: discovery list ≤ 5% {} ({:.2}%).\n",
        check(ratio <= 0.05),
        ratio * 100.0
    ));
    for (set, q) in &tuned {
        if q.misses.is_empty() || (*set == "fresh held-out" && !options.fresh_misses) {
            continue;
        }
        eprintln!("misses at rank 1 (default ranking, {set} set):");
        for miss in &q.misses {
            eprintln!("  {miss}");
        }
    }
    Ok(out)
}

/// Replace (or append) the "## Tool discovery" section of BENCHMARKS.md.
fn write_benchmarks(markdown: &str) -> Result<(), String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../BENCHMARKS.md");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_reaches_the_size_with_distinct_servers() {
        let tools: Vec<ToolDefinition> = (0..3)
            .map(|i| serde_json::from_value(json!({"name": format!("t{i}")})).unwrap())
            .collect();
        let servers = [ServerTools {
            server: "s".into(),
            source: None,
            tools: Arc::from(tools),
            deferred: false,
        }];
        let big = replicated(&servers, 10);
        assert_eq!(big.iter().map(|s| s.tools.len()).sum::<usize>(), 10);
        assert_eq!(big[1].server, "s-1");
    }
}
