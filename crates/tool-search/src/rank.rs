//! The scoring of the default ranking, kept cheap at thousands of tools: each posting's BM25F
//! weight is computed once per change of the index (not once per query), a query sums plain
//! numbers into dense arrays indexed by tool id, and the bonuses for what the query says about a
//! tool as a whole (every word of its name, its server, a phrase of its summary) are applied to
//! the tools it touched only.
//!
//! It owns what a score is made of: the fields of a tool and their weights, the constants of
//! both rankings, and the arithmetic; the index feeds it numbers.

/// How hits are scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Ranking {
    /// Plain BM25 over all of a tool's text as one bag of words (the baseline).
    Bm25,
    /// Field-weighted BM25 (BM25F) with query expansion; the default.
    #[default]
    Tuned,
}

/// The fields of a tool that are indexed.
pub(crate) const FIELDS: usize = 7;
pub(crate) const NAME: usize = 0;
pub(crate) const TITLE: usize = 1;
pub(crate) const DESCRIPTION: usize = 2;
pub(crate) const SERVER: usize = 3;
pub(crate) const PARAMS: usize = 4;
/// The description after its first sentence: details, caveats and pointers to other tools
/// ("use browser_snapshot instead"), which say less about what the tool does.
pub(crate) const DETAILS: usize = 5;
/// The kinds of value the tool's parameters take, one term each (never a word of a text).
pub(crate) const ARGUMENTS: usize = 6;

/// BM25 term-frequency saturation.
pub(crate) const K1: f32 = 1.2;
/// Length normalisation of plain BM25.
pub(crate) const B: f32 = 0.75;
/// BM25F length normalisation of each field (names are short and alike, so barely normalised).
pub(crate) const FIELD_B: [f32; FIELDS] = [0.3, 0.5, 0.75, 0.0, 0.75, 0.75, 0.0];

/// The constants of the default ranking: how much each field of a tool weighs and how large
/// each bonus is. [`RankingParams::default`] is what the index uses; other values exist to
/// measure the ranking (the `eval` feature's evaluation cross-validates and re-tunes them).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct RankingParams {
    /// Weight of a word in the tool's name.
    pub name: f32,
    /// Weight of a word in the tool's title.
    pub title: f32,
    /// Weight of a word in the description's first sentence (what the tool does).
    pub summary: f32,
    /// Weight of a word in the rest of the description (details, caveats, other tools).
    pub details: f32,
    /// Weight of a word in the server's name.
    pub server: f32,
    /// Weight of a word in a parameter's name or description.
    pub params: f32,
    /// Weight of a word the query did not say but that means the same (a synonym).
    pub expansion: f32,
    /// Relative gain of a tool whose every name word the query says.
    pub coverage: f32,
    /// Relative gain of a tool whose server the query names ("in git", "on GitHub").
    pub server_named: f32,
    /// Relative gain of a tool whose name says the query's first word, or a word it means: an
    /// agent's request starts with what to do ("commit the staged changes", "close issue 42").
    pub action: f32,
    /// Relative gain of a tool on the server that matches the query best as a whole (the
    /// average match of its tools), in proportion: "a local branch" is about git, whose tools
    /// say branch, not about the one search tool that says local.
    pub topic: f32,
    /// Gain (times the phrase's rarity) for two adjacent query words that are adjacent in the
    /// tool's name, title or summary ("pull request", "knowledge graph").
    pub phrase: f32,
    /// Factor of a tool whose description sends the reader elsewhere ("Deprecated", "use X
    /// instead"): it loses ties to the tool it points at.
    pub deprecated: f32,
    /// Factor of a tool whose name changes things when the request asks to read (a question,
    /// or a first word such as show or list), or reads when the request changes.
    pub crossed: f32,
    /// Weight of a kind of value the query carries (a URL, a path, a time zone, coordinates, an
    /// SQL statement, a number) that a parameter of the tool takes: each kind is a term of its
    /// own, so a rare kind (a time zone) weighs more than a common one (a number).
    pub argument: f32,
    /// Power of the share of the query's words (by rarity) that the tool matches: above 0, a
    /// tool matching one rare word of the request ranks below one matching most of it.
    pub query_coverage: f32,
    /// Weight of a word inside a value the query carries (`shop` in `~/code/shop`): it names
    /// a thing rather than saying what to do with it.
    pub value_words: f32,
}

impl Default for RankingParams {
    fn default() -> Self {
        RankingParams {
            name: 3.0,
            title: 2.0,
            summary: 3.0,
            details: 0.5,
            server: 1.5,
            params: 0.2,
            expansion: 0.6,
            coverage: 0.3,
            server_named: 1.0,
            topic: 0.3,
            action: 0.3,
            phrase: 0.3,
            deprecated: 0.8,
            crossed: 0.5,
            argument: 2.0,
            query_coverage: 0.25,
            value_words: 0.4,
        }
    }
}

impl RankingParams {
    /// The field weights, indexed by field.
    pub(crate) fn field_weights(&self) -> [f32; FIELDS] {
        let mut weights = [0.0; FIELDS];
        weights[NAME] = self.name;
        weights[TITLE] = self.title;
        weights[DESCRIPTION] = self.summary;
        weights[SERVER] = self.server;
        weights[PARAMS] = self.params;
        weights[DETAILS] = self.details;
        weights[ARGUMENTS] = self.argument;
        weights
    }
}

/// One posting with its BM25F weight already computed: `tf × (K1 + 1) / (tf + K1)` of the
/// field-weighted, length-normalised term frequency.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Weighted {
    pub(crate) doc: u32,
    pub(crate) weight: f32,
    /// Whether the term is a word of the tool's name (for the coverage bonus).
    pub(crate) in_name: bool,
}

/// Per-query work space: score and name coverage per tool id, and the ids touched in order.
pub(crate) struct Scores {
    pub(crate) score: Vec<f32>,
    pub(crate) covered: Vec<f32>,
    /// Whether the tool's name says the query's action (its first word, or a synonym).
    pub(crate) acted: Vec<bool>,
    /// The rarity (idf × weight) of the query's terms each tool matches.
    pub(crate) matched: Vec<f32>,
    pub(crate) touched: Vec<u32>,
}

impl Scores {
    pub(crate) fn new(docs: usize) -> Self {
        Scores {
            score: vec![0.0; docs],
            covered: vec![0.0; docs],
            acted: vec![false; docs],
            matched: vec![0.0; docs],
            touched: Vec::new(),
        }
    }

    /// Add `value` to the score of `doc`.
    pub(crate) fn add(&mut self, doc: u32, value: f32) {
        let slot = &mut self.score[doc as usize];
        if *slot == 0.0 {
            self.touched.push(doc);
        }
        *slot += value;
    }

    /// Add the postings of one query term, said (or meant) with `weight`, of rarity `idf`;
    /// `action` when the term is the query's first word or one it means.
    pub(crate) fn add_term(&mut self, postings: &[Weighted], weight: f32, idf: f32, action: bool) {
        let factor = weight * idf;
        for posting in postings {
            let doc = posting.doc as usize;
            let slot = &mut self.score[doc];
            if *slot == 0.0 {
                self.touched.push(posting.doc);
            }
            *slot += factor * posting.weight;
            self.matched[doc] += factor;
            if posting.in_name {
                self.covered[doc] += weight;
                self.acted[doc] |= action;
            }
        }
    }

    /// Add `gain` to every tool of `docs` the query already touched (a phrase bonus never makes
    /// a tool a match by itself).
    pub(crate) fn add_to_touched(&mut self, docs: &[u32], gain: f32) {
        for &doc in docs {
            let slot = &mut self.score[doc as usize];
            if *slot > 0.0 {
                *slot += gain;
            }
        }
    }
}

/// BM25F weight of a posting from its per-field term frequencies and the tool's field lengths.
pub(crate) fn posting_weight(
    tf: &[u16; FIELDS],
    lens: &[u32; FIELDS],
    avg: &[f32; FIELDS],
    weights: &[f32; FIELDS],
    field_b: &[f32; FIELDS],
) -> f32 {
    let mut sum = 0.0f32;
    for field in 0..FIELDS {
        if tf[field] == 0 {
            continue;
        }
        let norm = 1.0 - field_b[field] + field_b[field] * lens[field] as f32 / avg[field];
        sum += weights[field] * f32::from(tf[field]) / norm;
    }
    sum * (K1 + 1.0) / (sum + K1)
}

/// Whether a description sends the reader to another tool: it says "deprecated", or "use X
/// instead" within eight words.
pub(crate) fn points_elsewhere(description: &str) -> bool {
    let lower = description.to_lowercase();
    if lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| word == "deprecated")
    {
        return true;
    }
    let words: Vec<&str> = lower.split_whitespace().collect();
    words.iter().enumerate().any(|(at, word)| {
        *word == "use"
            && words[at + 1..]
                .iter()
                .take(8)
                .any(|next| next.trim_matches(|c: char| !c.is_alphanumeric()) == "instead")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_pointing_elsewhere_is_recognised() {
        assert!(points_elsewhere(
            "Read a file. DEPRECATED: Use read_text_file instead."
        ));
        assert!(points_elsewhere(
            "Old entry point; use the scrape tool in json mode instead."
        ));
        assert!(!points_elsewhere(
            "Take a screenshot. You can't act on it, use browser_snapshot for actions."
        ));
        assert!(!points_elsewhere("Use this to search the web."));
    }

    #[test]
    fn weights_saturate_and_favour_short_fields() {
        let avg = [2.0; FIELDS];
        let weights = [1.0; FIELDS];
        let field_b = [0.75; FIELDS];
        let mut tf = [0u16; FIELDS];
        tf[0] = 1;
        let short = posting_weight(&tf, &[1; FIELDS], &avg, &weights, &field_b);
        let long = posting_weight(&tf, &[8; FIELDS], &avg, &weights, &field_b);
        assert!(short > long, "{short} > {long}");
        tf[0] = 100;
        assert!(posting_weight(&tf, &[1; FIELDS], &avg, &weights, &field_b) < K1 + 1.0);
    }
}
