//! The report: the corpus, recall@1, recall@5 and MRR of plain BM25 and of the default ranking
//! on each query set, index build time and query latency at the corpus's size and at 10,000
//! tools, and the targets, as the markdown of the "Tool discovery" section of this crate's
//! `RESULTS.md`.

use std::path::Path;
use std::time::Duration;

use super::measure::{self, Quality};
use super::{Corpus, DEVELOPMENT_SETS, EvalError, FRESH_QUERIES, Query, load_queries};
use crate::{Ranking, RankingParams};

/// What a report covers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Only the development sets (while the ranking changes, the fresh set stays unseen).
    pub dev_only: bool,
    /// Keep the fresh set's misses too (once, when the ranking is final).
    pub fresh_misses: bool,
    /// The default ranking's constants ([`RankingParams::default`] for the published figures).
    pub params: RankingParams,
}

/// A report, in parts, so that a caller can add figures of its own between them.
#[derive(Debug, Clone)]
pub struct Report {
    /// The section from its heading to the description of the rankings, ending with a blank
    /// line: the corpus, the quality and latency tables, and how they were measured.
    pub body: String,
    /// One line per query set: the targets of recall@5 and recall@1, met or not.
    pub targets: String,
    /// The misses at rank 1 of the default ranking, by set: the development sets', and the
    /// fresh set's with [`Options::fresh_misses`].
    pub misses: Vec<(String, Vec<String>)>,
}

/// The report on the data in `data`.
pub fn report(data: &Path, options: &Options) -> Result<Report, EvalError> {
    let corpus = Corpus::load(data)?;
    let mut sets: Vec<(&str, Vec<Query>)> = Vec::new();
    for (label, file) in DEVELOPMENT_SETS {
        sets.push((label, load_queries(data, file)?));
    }
    let fresh = if options.dev_only {
        Vec::new()
    } else {
        load_queries(data, FRESH_QUERIES)?
    };
    let servers = measure::servers(&corpus)?;
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
    let (last, rest) = match held_out.split_last() {
        Some((last, rest)) => (last.as_str(), rest),
        None => ("", &[][..]),
    };
    out.push_str(&format!(
        "`cargo run --release -p mcpr-bench -- discovery` (the evaluation is \
         `crates/tool-search/src/eval/`; without the tool-list tokens, `cargo run --release -p \
         tool-search --features eval --example eval`). Corpus: {total} tools listed live from {} \
         servers (`mcpr-bench discovery --capture` installs and lists them again). Queries \
         phrased as an agent does mid-task, with near-miss distractors \
         (`crates/tool-search/data/`), in {} sets: tuning ({}), on which the ranking was \
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
    for server in &corpus.servers {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            server.server,
            server.package,
            server.version,
            server.tools.len()
        ));
    }
    for failed in &corpus.failed {
        let why = failed.error.lines().next().unwrap_or("?");
        out.push_str(&format!(
            "\nNot in the corpus: {} ({why}).\n",
            failed.server
        ));
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
    let mut tuned: Vec<(&str, Quality)> = Vec::new();
    for (label, ranking) in rankings {
        let (index, _) = measure::build(ranking, options.params, &servers);
        for (set, queries) in &sets {
            let q = measure::quality(&index, queries);
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
    let big = measure::replicated(&servers, 10_000);
    for (label, ranking) in rankings {
        let (index, built) = measure::build(ranking, options.params, &servers);
        let (p50, p99) = measure::latency(&index, &every);
        let (big_index, big_built) = measure::build(ranking, options.params, &big);
        let (big50, big99) = measure::latency(&big_index, &every);
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

    let check = |ok: bool| if ok { "✅" } else { "❌" };
    let mut targets = String::new();
    for (set, q) in &tuned {
        targets.push_str(&format!(
            "Targets ({set}): recall@5 ≥ 0.90 {} ({:.2}), recall@1 ≥ 0.70 {} ({:.2}).\n",
            check(q.recall5 >= 0.90),
            q.recall5,
            check(q.recall1 >= 0.70),
            q.recall1,
        ));
    }
    let misses = tuned
        .into_iter()
        .filter(|(set, q)| {
            !q.misses.is_empty() && (*set != "fresh held-out" || options.fresh_misses)
        })
        .map(|(set, q)| (set.to_owned(), q.misses))
        .collect();
    Ok(Report {
        body: out,
        targets,
        misses,
    })
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
