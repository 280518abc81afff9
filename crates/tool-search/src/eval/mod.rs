//! The evaluation of the ranking (feature `eval`): how well and how fast the index finds the
//! right tool, on a corpus of real tools and on labelled query sets. The ranking's constants were
//! chosen with it; run it after any change of the ranking:
//! `cargo run --release -p tool-search --features eval --example eval -- [--dev]` (the example's
//! doc lists its flags). `mcpr-bench discovery` prints the same report with the size of mcpr's
//! tool lists added, and writes it into this crate's `RESULTS.md`.
//!
//! The files, all in one data directory (`data/` beside this crate's `Cargo.toml`):
//!
//! - `tool_corpus.json`: the tools listed live from real MCP servers installed from npm and PyPI
//!   (`cargo run -p mcpr-bench -- discovery --capture` lists them again), so the evaluation runs
//!   offline: `{"servers": [{"server", "package", "version", "tools": [...]}], "failed":
//!   [{"server", "error"}]}`, each tool as `tools/list` gives it (`name`, `title`,
//!   `description`, `inputSchema`).
//! - `tool_queries*.json`: needs as an agent phrases them mid-task, each with every tool that
//!   answers it: `{"about", "queries": [{"query", "expected": ["server/tool", ...]}]}`
//!   (`check_queries.py` there validates them and flags paraphrases across sets).
//!
//! The query sets: `tool_queries.json`, on which the ranking was tuned;
//! `tool_queries_heldout.json` and `tool_queries_fresh.json` to `tool_queries_fresh8.json`, each
//! written before any result on it was seen (from `fresh2` on, each reported once as the fresh
//! set), so they are development sets too; and `tool_queries_fresh9.json`, written by a session
//! that never saw the ranking, committed before the index was run on it and never used to tune:
//! `--dev` leaves it out while the ranking changes.

mod crossval;
mod measure;
mod report;
mod retune;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::RankingParams;
pub use measure::{export_scores, query_cost};
pub use report::{Options, Report, report};

/// The corpus's file name in the data directory.
pub const CORPUS_FILE: &str = "tool_corpus.json";
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
/// The environment variable that overrides ranking constants ([`params_from_env`]).
const PARAMS_VARIABLE: &str = "DISCOVERY_PARAMS";

/// What went wrong reading the evaluation's files.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The corpus file is not there (it is captured from live servers).
    #[error("{}: {source}", path.display())]
    NoCorpus {
        /// The corpus file.
        path: PathBuf,
        /// Why it could not be read.
        source: std::io::Error,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not JSON.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// Where and why.
        source: serde_json::Error,
    },
    /// A file is JSON but a field is missing or of the wrong type.
    #[error("{}: {field}: {problem}", path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// Where in the file (`servers[3].tools[2].name`).
        field: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// `DISCOVERY_PARAMS` is not a list of `constant=number`.
    #[error("{PARAMS_VARIABLE}: {item:?}: {problem}")]
    Params {
        /// The item it could not read.
        item: String,
        /// What is wrong with it.
        problem: &'static str,
    },
}

/// The corpus: the tools of each server, as listed live.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The servers listed, in the order they were captured.
    pub servers: Vec<CorpusServer>,
    /// The servers that could not be listed, with why.
    pub failed: Vec<FailedServer>,
}

/// One server of the corpus.
#[derive(Debug, Clone)]
pub struct CorpusServer {
    /// The server's name.
    pub server: String,
    /// The package it was installed from (`npm @modelcontextprotocol/server-git`).
    pub package: String,
    /// The package's version.
    pub version: String,
    /// Its tool definitions as `tools/list` gave them.
    pub tools: Vec<Value>,
}

/// A server the capture could not list.
#[derive(Debug, Clone)]
pub struct FailedServer {
    /// The server's name.
    pub server: String,
    /// The error, as the capture reported it.
    pub error: String,
}

impl Corpus {
    /// The corpus in `data` (its [`CORPUS_FILE`]).
    pub fn load(data: &Path) -> Result<Corpus, EvalError> {
        let path = data.join(CORPUS_FILE);
        let text = std::fs::read_to_string(&path).map_err(|source| EvalError::NoCorpus {
            path: path.clone(),
            source,
        })?;
        let json = parse(&path, &text)?;
        let field = |field: String, problem| EvalError::Field {
            path: path.clone(),
            field,
            problem,
        };
        let mut servers = Vec::new();
        let listed = json["servers"]
            .as_array()
            .ok_or_else(|| field("servers".into(), "not a list"))?;
        for (at, server) in listed.iter().enumerate() {
            let name = server["server"]
                .as_str()
                .ok_or_else(|| field(format!("servers[{at}].server"), "not a string"))?;
            let tools = server["tools"]
                .as_array()
                .ok_or_else(|| field(format!("servers[{at}].tools"), "not a list"))?;
            let text = |key: &str| server[key].as_str().unwrap_or("?").to_owned();
            servers.push(CorpusServer {
                server: name.to_owned(),
                package: text("package"),
                version: text("version"),
                tools: tools.clone(),
            });
        }
        let failed = json["failed"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|failed| FailedServer {
                server: failed["server"].as_str().unwrap_or("?").to_owned(),
                error: failed["error"].as_str().unwrap_or("?").to_owned(),
            })
            .collect();
        Ok(Corpus { servers, failed })
    }
}

/// One labelled query.
#[derive(Debug, Clone)]
pub struct Query {
    /// The need, as an agent phrases it.
    pub query: String,
    /// `server/tool` of every tool that answers it.
    pub expected: Vec<String>,
}

/// The queries of the set `file` in `data`.
pub fn load_queries(data: &Path, file: &str) -> Result<Vec<Query>, EvalError> {
    let path = data.join(file);
    let text = std::fs::read_to_string(&path).map_err(|source| EvalError::Io {
        path: path.clone(),
        source,
    })?;
    let json = parse(&path, &text)?;
    let field = |field: String, problem| EvalError::Field {
        path: path.clone(),
        field,
        problem,
    };
    let entries = json["queries"]
        .as_array()
        .ok_or_else(|| field("queries".into(), "not a list"))?;
    let mut out = Vec::with_capacity(entries.len());
    for (at, entry) in entries.iter().enumerate() {
        let query = entry["query"]
            .as_str()
            .ok_or_else(|| field(format!("queries[{at}].query"), "not a string"))?;
        let expected = match &entry["expected"] {
            Value::String(one) => vec![one.clone()],
            Value::Array(many) => many
                .iter()
                .map(|tool| tool.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| field(format!("queries[{at}].expected"), "not all strings"))?,
            _ => {
                return Err(field(
                    format!("queries[{at}].expected"),
                    "neither a string nor a list",
                ));
            }
        };
        out.push(Query {
            query: query.to_owned(),
            expected,
        });
    }
    Ok(out)
}

fn parse(path: &Path, text: &str) -> Result<Value, EvalError> {
    serde_json::from_str(text).map_err(|source| EvalError::Json {
        path: path.to_owned(),
        source,
    })
}

/// The default ranking's constants, with those `DISCOVERY_PARAMS=name=3,topic=0.5,…` sets (to
/// try a value without rebuilding; the figures in `RESULTS.md` are always the defaults').
pub fn params_from_env() -> Result<RankingParams, EvalError> {
    params_from(&std::env::var(PARAMS_VARIABLE).unwrap_or_default())
}

/// The default ranking's constants with those `spec` sets (`name=3,topic=0.5`).
fn params_from(spec: &str) -> Result<RankingParams, EvalError> {
    let mut params = RankingParams::default();
    for item in spec.split(',').filter(|item| !item.is_empty()) {
        let problem = |problem| EvalError::Params {
            item: item.to_owned(),
            problem,
        };
        let (key, value) = item
            .split_once('=')
            .ok_or_else(|| problem("not constant=value"))?;
        let value: f32 = value.parse().map_err(|_| problem("not a number"))?;
        let (_, slot) = retune::CONSTANTS
            .iter()
            .find(|(name, _)| *name == key)
            .ok_or_else(|| problem("no such constant"))?;
        *slot(&mut params) = value;
    }
    Ok(params)
}

/// `--cv`: the field weights cross-validated over the first two development sets, as a
/// markdown table.
pub fn cross_validation(data: &Path) -> Result<String, EvalError> {
    let servers = measure::servers(&Corpus::load(data)?)?;
    let tuning = load_queries(data, TUNING_QUERIES)?;
    let held_out = load_queries(data, HELD_OUT_QUERIES)?;
    let queries: Vec<&Query> = tuning.iter().chain(&held_out).collect();
    Ok(crossval::cross_validate(&servers, &queries))
}

/// `--loso`: every ranking constant re-tuned on all development sets but one and scored on that
/// one, for each set in turn, as a markdown table.
pub fn leave_one_set_out(data: &Path) -> Result<String, EvalError> {
    let servers = measure::servers(&Corpus::load(data)?)?;
    let mut sets = Vec::new();
    for (_, file) in DEVELOPMENT_SETS {
        sets.push((file, load_queries(data, file)?));
    }
    Ok(retune::leave_one_set_out(&servers, &sets))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, file: &str, text: &str) {
        std::fs::write(dir.join(file), text).unwrap();
    }

    #[test]
    fn a_malformed_query_set_is_an_error_naming_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let check = |text: &str, field: &str| {
            write(dir.path(), "set.json", text);
            let err = load_queries(dir.path(), "set.json")
                .unwrap_err()
                .to_string();
            assert!(err.contains("set.json") && err.contains(field), "{err}");
        };
        check(r#"{"queries": {}}"#, "queries");
        check(
            r#"{"queries": [{"query": "a", "expected": "s/t"}, {"expected": []}]}"#,
            "queries[1].query",
        );
        check(
            r#"{"queries": [{"query": "a", "expected": [1]}]}"#,
            "queries[0].expected",
        );
        check(r#"{"queries": [{"query": "a"}]}"#, "queries[0].expected");
        check("{not json", "line 1");
        write(
            dir.path(),
            "set.json",
            r#"{"queries": [{"query": "a", "expected": "s/t"}]}"#,
        );
        let queries = load_queries(dir.path(), "set.json").unwrap();
        assert_eq!(queries[0].expected, ["s/t"]);
    }

    #[test]
    fn a_malformed_corpus_is_an_error_naming_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let err = Corpus::load(dir.path()).unwrap_err();
        assert!(matches!(err, EvalError::NoCorpus { .. }), "{err}");
        write(dir.path(), CORPUS_FILE, r#"{"servers": [{"tools": []}]}"#);
        let err = Corpus::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("servers[0].server"), "{err}");
        write(
            dir.path(),
            CORPUS_FILE,
            r#"{"servers": [{"server": "git", "tools": [{"name": "git_log"}, {"title": "x"}]}]}"#,
        );
        let corpus = Corpus::load(dir.path()).unwrap();
        assert_eq!(corpus.servers[0].package, "?");
        let err = measure::servers(&corpus).unwrap_err().to_string();
        assert!(err.contains("servers[0].tools[1].name"), "{err}");
    }

    #[test]
    fn ranking_constants_are_set_by_name_and_bad_ones_refused() {
        let params = params_from("name=4,value_words=0.5,").unwrap();
        assert_eq!((params.name, params.value_words), (4.0, 0.5));
        assert_eq!(params_from("").unwrap(), RankingParams::default());
        for bad in ["name", "name=x", "nme=3"] {
            let err = params_from(bad).unwrap_err().to_string();
            assert!(err.contains(PARAMS_VARIABLE) && err.contains(bad), "{err}");
        }
    }
}
