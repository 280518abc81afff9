//! The measurements: the corpus indexed as a host indexes its servers, recall and MRR of a query
//! set, query latency, and the corpus replicated to 10,000 tools; plus the two outputs for
//! working on the ranking elsewhere (`--query-cost` for callgrind, `--export-scores` as JSON).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{
    Corpus, DEVELOPMENT_SETS, EvalError, HELD_OUT_QUERIES, Query, TUNING_QUERIES, load_queries,
    params_from_env,
};
use crate::{Ranking, RankingParams, SearchableTool, ToolIndex};

/// The index the evaluation builds: tools shared, so that a hit costs no copy.
pub(super) type Index = ToolIndex<Arc<SearchableTool>>;

/// One server's tools, in the corpus's order.
#[derive(Debug, Clone)]
pub(super) struct Server {
    pub(super) name: String,
    pub(super) tools: Vec<Arc<SearchableTool>>,
}

/// The corpus's servers as the index reads them.
pub(super) fn servers(corpus: &Corpus) -> Result<Vec<Server>, EvalError> {
    let mut out = Vec::with_capacity(corpus.servers.len());
    for (at, server) in corpus.servers.iter().enumerate() {
        let mut tools = Vec::with_capacity(server.tools.len());
        for (index, tool) in server.tools.iter().enumerate() {
            let name = tool["name"].as_str().ok_or_else(|| EvalError::Field {
                path: super::CORPUS_FILE.into(),
                field: format!("servers[{at}].tools[{index}].name"),
                problem: "not a string",
            })?;
            let text = |key: &str| tool[key].as_str().map(str::to_owned);
            let mut searchable = SearchableTool::new(&server.server, name)
                .with_input_schema(tool["inputSchema"].clone());
            searchable.title = text("title");
            searchable.description = text("description");
            tools.push(Arc::new(searchable));
        }
        out.push(Server {
            name: server.server.clone(),
            tools,
        });
    }
    Ok(out)
}

/// The index of `servers` under `ranking` (the tuned one with `params`), and how long it took.
pub(super) fn build(
    ranking: Ranking,
    params: RankingParams,
    servers: &[Server],
) -> (Index, Duration) {
    // Each server's tools in name order, as a host lists them: the order in which tools enter
    // the index is the order of the floating-point sums that score them.
    let sorted: Vec<Vec<Arc<SearchableTool>>> = servers
        .iter()
        .map(|server| {
            let mut tools = server.tools.clone();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            tools
        })
        .collect();
    let started = Instant::now();
    let mut index = match ranking {
        Ranking::Tuned => Index::with_params(params),
        _ => Index::with_ranking(ranking),
    };
    for (server, tools) in servers.iter().zip(&sorted) {
        index.set_server(&server.name, tools);
    }
    (index, started.elapsed())
}

/// `server/tool` of a hit, as query sets name tools.
pub(super) fn id(tool: &SearchableTool) -> String {
    format!("{}/{}", tool.server, tool.name)
}

/// Recall at 1 and 5 and MRR of a query set, with its misses at rank 1.
pub(super) struct Quality {
    pub(super) recall1: f64,
    pub(super) recall5: f64,
    pub(super) mrr: f64,
    pub(super) misses: Vec<String>,
}

pub(super) fn quality(index: &Index, queries: &[Query]) -> Quality {
    let (mut hit1, mut hit5, mut rr) = (0usize, 0usize, 0f64);
    let mut misses = Vec::new();
    for query in queries {
        let hits = index.search(&query.query, 10);
        let rank = hits
            .iter()
            .position(|hit| query.expected.contains(&id(&hit.tool)));
        match rank {
            Some(0) => hit1 += 1,
            _ => {
                let got = hits
                    .first()
                    .map(|h| id(&h.tool))
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
pub(super) fn latency(index: &Index, queries: &[&Query]) -> (Duration, Duration) {
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
pub(super) fn replicated(servers: &[Server], n: usize) -> Vec<Server> {
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
                server.name.clone()
            } else {
                format!("{}-{copy}", server.name)
            };
            let tools = server.tools[..take]
                .iter()
                .map(|tool| {
                    let mut tool = SearchableTool::clone(tool);
                    tool.server.clone_from(&name);
                    Arc::new(tool)
                })
                .collect();
            out.push(Server { name, tools });
            count += take;
        }
        copy += 1;
    }
    out
}

/// `--query-cost N`, a target for `valgrind --tool=callgrind`: index the corpus replicated to
/// 10,000 tools, then run every query of the first two development sets N times through
/// `one_search`. Run with 0 and with N: the difference divided by N × queries is the cost of
/// one query in instructions. `--dump-after=*one_search*` gives each query's own count.
/// Returns the number of queries.
pub fn query_cost(data: &Path, repeats: usize) -> Result<usize, EvalError> {
    let servers = servers(&Corpus::load(data)?)?;
    let queries: Vec<Query> = load_queries(data, TUNING_QUERIES)?
        .into_iter()
        .chain(load_queries(data, HELD_OUT_QUERIES)?)
        .collect();
    let params = params_from_env()?;
    let (index, _) = build(Ranking::Tuned, params, &replicated(&servers, 10_000));
    // The first search after a change computes the index's weights once: not a query's cost.
    std::hint::black_box(index.search("warm up", 5));
    for _ in 0..repeats {
        for query in &queries {
            one_search(&index, &query.query);
        }
    }
    Ok(queries.len())
}

/// One `search(query, 5)`, never inlined so that callgrind can count it on its own.
#[inline(never)]
fn one_search(index: &Index, query: &str) {
    std::hint::black_box(index.search(query, 5));
}

/// `--export-scores PATH`: every query of the development sets with the default ranking's best
/// 50 tools and their scores, as JSON, for trying a change of the ranking offline (a blend with
/// another score) before writing it in Rust.
pub fn export_scores(data: &Path, path: &Path) -> Result<(), EvalError> {
    let servers = servers(&Corpus::load(data)?)?;
    let (index, _) = build(Ranking::Tuned, params_from_env()?, &servers);
    let mut sets = serde_json::Map::new();
    for (_, file) in DEVELOPMENT_SETS {
        let queries: Vec<Value> = load_queries(data, file)?
            .iter()
            .map(|query| {
                let hits: Vec<Value> = index
                    .search(&query.query, 50)
                    .iter()
                    .map(|hit| json!([id(&hit.tool), hit.score]))
                    .collect();
                json!({"query": query.query, "expected": query.expected, "hits": hits})
            })
            .collect();
        sets.insert(file.to_owned(), Value::Array(queries));
    }
    let io = |source| EvalError::Io {
        path: path.to_owned(),
        source,
    };
    let text = serde_json::to_string(&sets).map_err(|e| io(std::io::Error::other(e)))?;
    std::fs::write(path, text).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replication_reaches_the_size_with_distinct_servers() {
        let tools = (0..3)
            .map(|i| Arc::new(SearchableTool::new("s", format!("t{i}"))))
            .collect();
        let servers = [Server {
            name: "s".into(),
            tools,
        }];
        let big = replicated(&servers, 10);
        assert_eq!(big.iter().map(|s| s.tools.len()).sum::<usize>(), 10);
        assert_eq!(big[1].name, "s-1");
        assert_eq!(big[1].tools[0].server, "s-1");
    }
}
