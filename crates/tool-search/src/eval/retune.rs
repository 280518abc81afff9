//! `--loso`: does re-tuning the ranking's constants help on queries they
//! were not tuned on? For each development set in turn, every constant of [`RankingParams`] is
//! tuned by coordinate ascent (two passes, each constant times 0, ½, ¾, 4/3 and 2, kept when the
//! MRR of the other sets rises) and the result scored on the set left out, beside the defaults.

use super::Query;
use super::crossval::{ranks, rr};
use super::measure::Server;
use crate::RankingParams;

/// The tunable constants, by name, with how to read and write each.
type Constant = (&'static str, fn(&mut RankingParams) -> &mut f32);

pub(super) const CONSTANTS: [Constant; 17] = [
    ("name", |p| &mut p.name),
    ("title", |p| &mut p.title),
    ("summary", |p| &mut p.summary),
    ("details", |p| &mut p.details),
    ("server", |p| &mut p.server),
    ("params", |p| &mut p.params),
    ("expansion", |p| &mut p.expansion),
    ("coverage", |p| &mut p.coverage),
    ("server_named", |p| &mut p.server_named),
    ("action", |p| &mut p.action),
    ("topic", |p| &mut p.topic),
    ("phrase", |p| &mut p.phrase),
    ("deprecated", |p| &mut p.deprecated),
    ("crossed", |p| &mut p.crossed),
    ("argument", |p| &mut p.argument),
    ("query_coverage", |p| &mut p.query_coverage),
    ("value_words", |p| &mut p.value_words),
];

/// Factors (of at most 1) that must stay at most 1.
const AT_MOST_ONE: [&str; 2] = ["deprecated", "crossed"];

/// Recall@1 and MRR of `params` on `queries`.
fn quality(servers: &[Server], params: RankingParams, queries: &[&Query]) -> (f64, f64) {
    let ranks = ranks(servers, params, queries);
    let n = ranks.len().max(1) as f64;
    let first = ranks.iter().filter(|r| **r == Some(0)).count() as f64;
    (first / n, ranks.iter().map(rr).sum::<f64>() / n)
}

fn mrr(servers: &[Server], params: RankingParams, queries: &[&Query]) -> f64 {
    quality(servers, params, queries).1
}

/// Coordinate ascent on the MRR of `train`, from the defaults.
fn tune(servers: &[Server], train: &[&Query]) -> RankingParams {
    let mut best = RankingParams::default();
    let mut best_mrr = mrr(servers, best, train);
    for _pass in 0..2 {
        for (name, field) in CONSTANTS {
            for factor in [0.0, 0.5, 0.75, 4.0 / 3.0, 2.0] {
                let mut candidate = best;
                let value = field(&mut candidate);
                *value *= factor;
                if AT_MOST_ONE.contains(&name) {
                    *value = value.min(1.0);
                }
                let score = mrr(servers, candidate, train);
                // A change must be worth more than a single query's rounding.
                if score > best_mrr + 1e-4 {
                    (best, best_mrr) = (candidate, score);
                }
            }
        }
    }
    best
}

/// One row per set left out: its recall@1 and MRR under the defaults and under the constants
/// tuned on the other sets, and which constants moved.
pub(super) fn leave_one_set_out(servers: &[Server], sets: &[(&str, Vec<Query>)]) -> String {
    let mut out = String::from(
        "Ranking constants re-tuned on the other development sets (coordinate ascent on MRR), \
         scored on the set left out:\n\n| set left out | defaults: recall@1, MRR | re-tuned: \
         recall@1, MRR | constants that moved |\n|---|---|---|---|\n",
    );
    let defaults = RankingParams::default();
    for (left_out, (file, test)) in sets.iter().enumerate() {
        let train: Vec<&Query> = sets
            .iter()
            .enumerate()
            .filter(|(set, _)| *set != left_out)
            .flat_map(|(_, (_, queries))| queries)
            .collect();
        let test: Vec<&Query> = test.iter().collect();
        let tuned = tune(servers, &train);
        let moved: Vec<String> = CONSTANTS
            .iter()
            .filter_map(|(name, field)| {
                let (mut a, mut b) = (defaults, tuned);
                let (from, to) = (*field(&mut a), *field(&mut b));
                ((from - to).abs() > 1e-6).then(|| format!("{name} {from} → {to:.2}"))
            })
            .collect();
        let (default_first, default_mrr) = quality(servers, defaults, &test);
        let (tuned_first, tuned_mrr) = quality(servers, tuned, &test);
        out.push_str(&format!(
            "| {file} | {default_first:.2}, {default_mrr:.3} | {tuned_first:.2}, {tuned_mrr:.3} | \
             {} |\n",
            moved.join(", ")
        ));
    }
    out
}
