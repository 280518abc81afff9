//! The ranking's evaluation on this crate's corpus and labelled query sets (`data/`):
//!
//! ```text
//! cargo run --release -p tool-search --features eval --example eval -- [--dev] [--fresh-misses]
//! cargo run --release -p tool-search --features eval --example eval -- --cv | --loso
//! cargo run --release -p tool-search --features eval --example eval -- --query-cost N
//! cargo run --release -p tool-search --features eval --example eval -- --export-scores PATH
//! ```
//!
//! With no flag it prints the report (recall@1, recall@5 and MRR of plain BM25 and of the
//! default ranking on each set, build time and latency) and the development sets' misses at rank
//! 1 on stderr; `--dev` leaves the fresh set out (while the ranking changes), `--fresh-misses`
//! prints its misses too. `--cv` cross-validates the field weights, `--loso` re-tunes every
//! constant leaving one set out at a time, `--query-cost N` is a callgrind target for the
//! instructions of a query, `--export-scores PATH` writes every query's best tools with their
//! scores as JSON. `DISCOVERY_PARAMS=name=3,topic=0.5` tries other constants.

use std::path::Path;
use std::process::ExitCode;

use tool_search::eval::{self, EvalError, Options};

const FLAGS: [&str; 6] = [
    "--dev",
    "--fresh-misses",
    "--cv",
    "--loso",
    "--query-cost",
    "--export-scores",
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("error: {why}");
            if matches!(why, EvalError::NoCorpus { .. }) {
                eprintln!(
                    "(the corpus is listed live by `cargo run -p mcpr-bench -- discovery --capture`)"
                );
            }
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<ExitCode, EvalError> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("data");
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--query-cost" => {
                let Some(repeats) = rest.next().and_then(|n| n.parse::<usize>().ok()) else {
                    eprintln!(
                        "--query-cost takes a number of repeats (0 measures the set-up alone)"
                    );
                    return Ok(ExitCode::from(2));
                };
                let queries = eval::query_cost(&data, repeats)?;
                eprintln!("{queries} queries × {repeats}");
                return Ok(ExitCode::SUCCESS);
            }
            "--export-scores" => {
                let Some(path) = rest.next() else {
                    eprintln!("--export-scores takes the path of the JSON file to write");
                    return Ok(ExitCode::from(2));
                };
                eval::export_scores(&data, Path::new(path))?;
                return Ok(ExitCode::SUCCESS);
            }
            flag if FLAGS.contains(&flag) => {}
            other => {
                eprintln!("unknown argument {other} (eval takes {})", FLAGS.join(", "));
                return Ok(ExitCode::from(2));
            }
        }
    }
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--cv") {
        println!("{}", eval::cross_validation(&data)?);
        return Ok(ExitCode::SUCCESS);
    }
    if has("--loso") {
        println!("{}", eval::leave_one_set_out(&data)?);
        return Ok(ExitCode::SUCCESS);
    }
    let options = Options {
        dev_only: has("--dev"),
        fresh_misses: has("--fresh-misses"),
        params: eval::params_from_env()?,
    };
    let report = eval::report(&data, &options)?;
    println!("{}{}", report.body, report.targets);
    for (set, misses) in &report.misses {
        eprintln!("misses at rank 1 (default ranking, {set} set):");
        for miss in misses {
            eprintln!("  {miss}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
