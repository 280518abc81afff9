//! `--cv`: the field weights of the default ranking chosen by 5-fold
//! cross-validation over both development sets, so that a weight is kept only if it also ranks
//! well on queries it was not chosen on. Each fold's weights are the grid point with the best
//! MRR on the other four folds; the fold's own queries then score them. The fresh held-out set is
//! never read here.

use super::Query;
use super::measure::{Server, build, id};
use crate::{Ranking, RankingParams};

const FOLDS: usize = 5;

/// One grid point: (name, title, summary, details, params) weights.
type Point = [f32; 5];

fn grid() -> Vec<Point> {
    let d = RankingParams::default();
    // The default first, so that it wins ties.
    let mut points = vec![[d.name, d.title, d.summary, d.details, d.params]];
    for name in [2.0, 3.0, 4.0] {
        for title in [1.0, 2.0] {
            for summary in [2.0, 3.0, 4.0] {
                for details in [0.25, 0.5, 1.0] {
                    for params in [0.1, 0.2, 0.4] {
                        let point = [name, title, summary, details, params];
                        if !points.contains(&point) {
                            points.push(point);
                        }
                    }
                }
            }
        }
    }
    points
}

fn params_of(point: &Point) -> RankingParams {
    let mut params = RankingParams::default();
    [
        params.name,
        params.title,
        params.summary,
        params.details,
        params.params,
    ] = *point;
    params
}

/// The rank (0-based) of the first expected tool for each query, if in the top 10.
pub(super) fn ranks(
    servers: &[Server],
    params: RankingParams,
    queries: &[&Query],
) -> Vec<Option<usize>> {
    let (index, _) = build(Ranking::Tuned, params, servers);
    queries
        .iter()
        .map(|query| {
            index
                .search(&query.query, 10)
                .iter()
                .position(|hit| query.expected.contains(&id(&hit.tool)))
        })
        .collect()
}

pub(super) fn rr(rank: &Option<usize>) -> f64 {
    rank.map_or(0.0, |r| 1.0 / (r as f64 + 1.0))
}

/// The cross-validation as a markdown table, one row per fold.
pub(super) fn cross_validate(servers: &[Server], queries: &[&Query]) -> String {
    let points = grid();
    let results: Vec<Vec<Option<usize>>> = points
        .iter()
        .map(|point| ranks(servers, params_of(point), queries))
        .collect();
    let fold_of = |i: usize| i % FOLDS;
    let mean = |values: &mut dyn Iterator<Item = f64>| {
        let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
        sum / n.max(1) as f64
    };
    let mut out = format!(
        "Field weights by {FOLDS}-fold cross-validation over both development sets ({} \
         queries, {} grid points; name, title, summary, details, parameters):\n\n\
         | fold | weights chosen on the other folds | MRR there | test recall@1 | test \
         recall@5 | test MRR | default's test MRR |\n|---|---|---:|---:|---:|---:|---:|\n",
        queries.len(),
        points.len()
    );
    for fold in 0..FOLDS {
        let train = |ranks: &Vec<Option<usize>>| {
            mean(
                &mut ranks
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| fold_of(*i) != fold)
                    .map(|(_, r)| rr(r)),
            )
        };
        let best = (0..points.len())
            .max_by(|&a, &b| {
                train(&results[a])
                    .total_cmp(&train(&results[b]))
                    .then(b.cmp(&a))
            })
            .unwrap_or(0);
        let test: Vec<&Option<usize>> = results[best]
            .iter()
            .enumerate()
            .filter(|(i, _)| fold_of(*i) == fold)
            .map(|(_, r)| r)
            .collect();
        let default_test = mean(
            &mut results[0]
                .iter()
                .enumerate()
                .filter(|(i, _)| fold_of(*i) == fold)
                .map(|(_, r)| rr(r)),
        );
        let at = |k: usize| mean(&mut test.iter().map(|r| f64::from(r.is_some_and(|r| r < k))));
        out.push_str(&format!(
            "| {} | {:?} | {:.3} | {:.2} | {:.2} | {:.3} | {:.3} |\n",
            fold + 1,
            points[best],
            train(&results[best]),
            at(1),
            at(5),
            mean(&mut test.iter().map(|r| rr(r))),
            default_test
        ));
    }
    out
}
