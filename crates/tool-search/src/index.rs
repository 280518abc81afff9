//! The index: an inverted index over each tool's name, title, description, server and
//! parameters, updated one server at a time, and the search that ranks its tools for a query.
//!
//! The default ranking is BM25F: identifiers are split (and CamelCase brands such as `GitHub`
//! also kept whole), words are stemmed (Snowball English), filler words are dropped, each field
//! has its own weight and length normalisation (a description's first sentence says what the
//! tool does and weighs more than the rest), the query is widened with a small table of verbs
//! and nouns that tools describe in different words (and a question with list/get), tools whose
//! name the query covers rank higher, and so do the tools of a server the query names ("in
//! git", "on GitHub"). The values a query carries (a path, a URL, a time zone, a date…) are
//! matched by their kind against what the tools' parameters take, and their own words weigh
//! less; a tool matching only a small share of the query loses ground to one matching most of
//! it. Plain BM25 stays available as the baseline.

mod query;

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde_json::Value;

use crate::analyzer::{Analyzer, Effect};
use crate::arguments::ArgumentKinds;
use crate::rank::{
    ARGUMENTS, B, DESCRIPTION, DETAILS, FIELD_B, FIELDS, K1, NAME, PARAMS, Ranking, RankingParams,
    SERVER, Scores, TITLE, Weighted, points_elsewhere, posting_weight,
};
use crate::tool::{Searchable, SearchableTool};
use query::QueryTerms;

/// A ranked match.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit<T = SearchableTool> {
    /// The tool, as it was indexed.
    pub tool: T,
    /// Relevance; higher is better, always positive.
    pub score: f32,
}

#[derive(Debug, Clone)]
struct Doc<T> {
    tool: T,
    lens: [u32; FIELDS],
    /// Term ids this document contains (to unlink it from the postings).
    terms: Vec<u32>,
    /// Adjacent term pairs of its name, title and summary (to unlink it from the phrases).
    phrases: Vec<(u32, u32)>,
    /// Its names as [`ToolIndex::by_name`] keys them (to unlink it from there).
    names: Vec<String>,
}

/// What the ranking needs of each tool id, dense and small so that a query reads it without
/// chasing the tool's definition.
#[derive(Debug, Clone, Copy, Default)]
struct DocStats {
    /// Distinct words of the tool's name (for the coverage bonus); 0 for a free id.
    name_len: u16,
    /// The tool's server, as an id of [`server_key`] (for the server the query names).
    server_key: u32,
    /// Factor of the tool's score: below 1 when its description points at another tool.
    prior: f32,
    /// Whether the tool's name says it reads or changes (`None`: neither, or both).
    effect: Option<Effect>,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u16; FIELDS],
}

/// An inverted index over tools of type `T` (any [`Searchable`] type; [`SearchableTool`] by
/// default), updated one server at a time.
///
/// ```
/// use tool_search::{SearchableTool, ToolIndex};
///
/// let tool = |name: &str, description: &str| {
///     SearchableTool::new("git", name).with_description(description)
/// };
/// let mut index = ToolIndex::new();
/// index.set_server("git", &[
///     tool("git_status", "Shows the working tree status"),
///     tool("git_diff_unstaged", "Shows changes in the working directory that are not yet staged"),
/// ]);
/// let hits = index.search("unstaged changes", 5);
/// assert_eq!(hits[0].tool.name, "git_diff_unstaged");
/// ```
#[derive(Clone)]
pub struct ToolIndex<T = SearchableTool> {
    ranking: Ranking,
    params: RankingParams,
    analyzer: Analyzer,
    docs: Vec<Option<Doc<T>>>,
    stats: Vec<DocStats>,
    free: Vec<u32>,
    by_server: HashMap<String, Vec<u32>>,
    vocab: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    /// Adjacent term pairs of names, titles and summaries → the tools that have them.
    phrases: HashMap<(u32, u32), Vec<u32>>,
    /// Every name of a tool ([`exact_name`]) → the tools that have it: a query that is exactly
    /// a name ranks those tools first.
    by_name: HashMap<String, Vec<u32>>,
    total_lens: [u64; FIELDS],
    live: usize,
    /// [`server_key`] of every server ever indexed → its id.
    server_keys: HashMap<String, u32>,
    /// Tools indexed per server key id.
    server_sizes: Vec<u32>,
    /// The postings with their BM25F weights, computed by the first search after a change
    /// (weights depend on the average field lengths, which every change moves).
    weighted: OnceLock<Vec<Vec<Weighted>>>,
}

impl<T: Searchable> Default for ToolIndex<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for ToolIndex<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("ranking", &self.ranking)
            .field("tools", &self.live)
            .field("terms", &self.vocab.len())
            .finish()
    }
}

impl<T: Searchable> ToolIndex<T> {
    /// An empty index with the default ranking.
    pub fn new() -> Self {
        Self::with_ranking(Ranking::default())
    }

    /// An empty index ranking with `ranking`.
    pub fn with_ranking(ranking: Ranking) -> Self {
        ToolIndex {
            ranking,
            params: RankingParams::default(),
            analyzer: match ranking {
                Ranking::Bm25 => Analyzer::plain(),
                Ranking::Tuned => Analyzer::tuned(),
            },
            docs: Vec::new(),
            stats: Vec::new(),
            free: Vec::new(),
            by_server: HashMap::new(),
            vocab: HashMap::new(),
            postings: Vec::new(),
            phrases: HashMap::new(),
            by_name: HashMap::new(),
            total_lens: [0; FIELDS],
            live: 0,
            server_keys: HashMap::new(),
            server_sizes: Vec::new(),
            weighted: OnceLock::new(),
        }
    }

    /// An empty index with the default ranking and its constants set to `params` (to measure
    /// the ranking with other weights).
    pub fn with_params(params: RankingParams) -> Self {
        ToolIndex {
            params,
            ..Self::with_ranking(Ranking::Tuned)
        }
    }

    /// The ranking in use.
    pub fn ranking(&self) -> Ranking {
        self.ranking
    }

    /// Replace everything indexed for `server` with `tools` (other servers are untouched), as a
    /// server's tool list changes, it reconnects or the configuration is reloaded. `server` is
    /// the key of the set; each tool's own [`SearchableTool::server`] is what is indexed.
    pub fn set_server(&mut self, server: &str, tools: &[T]) {
        self.remove_server(server);
        let ids: Vec<u32> = tools.iter().map(|tool| self.add(tool.clone())).collect();
        if !ids.is_empty() {
            self.by_server.insert(server.to_owned(), ids);
        }
        self.weighted = OnceLock::new();
    }

    /// Forget every tool of `server`.
    pub fn remove_server(&mut self, server: &str) {
        let Some(ids) = self.by_server.remove(server) else {
            return;
        };
        self.weighted = OnceLock::new();
        let mut touched: Vec<u32> = Vec::new();
        let mut phrases: Vec<(u32, u32)> = Vec::new();
        for &id in &ids {
            if let Some(doc) = self.docs[id as usize].take() {
                for name in &doc.names {
                    if let Some(docs) = self.by_name.get_mut(name) {
                        docs.retain(|doc| *doc != id);
                        if docs.is_empty() {
                            self.by_name.remove(name);
                        }
                    }
                }
                for (field, len) in doc.lens.iter().enumerate() {
                    self.total_lens[field] -= u64::from(*len);
                }
                touched.extend(doc.terms);
                phrases.extend(doc.phrases);
                self.live -= 1;
                let key = self.stats[id as usize].server_key as usize;
                self.server_sizes[key] = self.server_sizes[key].saturating_sub(1);
            }
            self.stats[id as usize] = DocStats::default();
            self.free.push(id);
        }
        touched.sort_unstable();
        touched.dedup();
        phrases.sort_unstable();
        phrases.dedup();
        let gone: HashSet<u32> = ids.into_iter().collect();
        for term in touched {
            self.postings[term as usize].retain(|posting| !gone.contains(&posting.doc));
        }
        for pair in phrases {
            if let Some(docs) = self.phrases.get_mut(&pair) {
                docs.retain(|doc| !gone.contains(doc));
                if docs.is_empty() {
                    self.phrases.remove(&pair);
                }
            }
        }
    }

    /// How many tools are indexed.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether no tool is indexed.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The best `k` tools for `query`, best first; only hits with a positive score.
    pub fn search(&self, query: &str, k: usize) -> Vec<SearchHit<T>> {
        self.search_filtered(query, k, &|_| true)
    }

    /// Like [`ToolIndex::search`], among only the tools for which `allow` is true (a scoped
    /// view never finds what it cannot call).
    pub fn search_filtered(
        &self,
        query: &str,
        k: usize,
        allow: &dyn Fn(&T) -> bool,
    ) -> Vec<SearchHit<T>> {
        if k == 0 || self.live == 0 {
            return Vec::new();
        }
        let mut scores = match self.ranking {
            Ranking::Bm25 => self.score_bm25(query),
            Ranking::Tuned => self.score_tuned(query),
        };
        self.lift_exact_names(query, &mut scores);
        // Best first; ties in the tools' own order so results are stable. Only the allowed
        // candidates are ranked, and only the best `k` of them are kept (a bounded insertion,
        // no full sort).
        let tool = |id: u32| self.docs[id as usize].as_ref().map(|doc| &doc.tool);
        let better = |a: &(u32, f32), b: &(u32, f32)| {
            b.1.total_cmp(&a.1)
                .then_with(|| match (tool(a.0), tool(b.0)) {
                    (Some(a), Some(b)) => a.tie_order(b),
                    (a, b) => a.is_some().cmp(&b.is_some()),
                })
        };
        let mut best: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
        for (id, score) in scores {
            if !(score > 0.0 && score.is_finite()) {
                continue;
            }
            if let Some(last) = best.last()
                && best.len() == k
                && (score < last.1 || better(&(id, score), last) != Ordering::Less)
            {
                continue;
            }
            let Some(doc) = &self.docs[id as usize] else {
                continue;
            };
            if !allow(&doc.tool) {
                continue;
            }
            let at = best
                .binary_search_by(|probe| better(probe, &(id, score)))
                .unwrap_or_else(|at| at);
            best.insert(at, (id, score));
            best.truncate(k);
        }
        let mut hits = Vec::with_capacity(best.len());
        for (id, score) in best {
            if let Some(doc) = &self.docs[id as usize] {
                hits.push(SearchHit {
                    tool: doc.tool.clone(),
                    score,
                });
            }
        }
        hits
    }

    /// Rank first the tools whose name is exactly `query`: an agent or a user who types a
    /// tool's name means that tool, whatever else its words match better. Such a tool gets a
    /// score above every other one (so scores still say the order).
    fn lift_exact_names(&self, query: &str, scores: &mut Vec<(u32, f32)>) {
        let Some(named) = self.by_name.get(&exact_name(query)) else {
            return;
        };
        let top = scores
            .iter()
            .map(|(_, score)| *score)
            .filter(|score| score.is_finite())
            .fold(0.0f32, f32::max);
        let lifted = top + 1.0;
        for (id, score) in scores.iter_mut() {
            if named.contains(id) {
                *score = lifted;
            }
        }
        for id in named {
            if !scores.iter().any(|(scored, _)| scored == id) {
                scores.push((*id, lifted));
            }
        }
    }

    fn add(&mut self, tool: T) -> u32 {
        let text = tool.searchable();
        let mut names: Vec<String> = std::iter::once(exact_name(&text.name))
            .chain(tool.other_names().iter().map(|name| exact_name(name)))
            .filter(|name| !name.is_empty())
            .collect();
        names.sort_unstable();
        names.dedup();
        let fields = fields_of(&text);
        let mut counts: HashMap<u32, [u16; FIELDS]> = HashMap::new();
        let mut lens = [0u32; FIELDS];
        let mut name_terms: Vec<u32> = Vec::new();
        let mut phrases: Vec<(u32, u32)> = Vec::new();
        // Whether the name has a verb that reads, and one that changes.
        let (mut reads, mut changes) = (false, false);
        for (field, text) in fields.iter().enumerate() {
            let mut previous: Option<u32> = None;
            for token in self.analyzer.tokens(text) {
                let term = self.term_id(&token);
                let tf = &mut counts.entry(term).or_insert([0; FIELDS])[field];
                *tf = tf.saturating_add(1);
                lens[field] += 1;
                if field == NAME {
                    if !name_terms.contains(&term) {
                        name_terms.push(term);
                    }
                    match self.analyzer.effect(&token) {
                        Some(Effect::Reads) => reads = true,
                        Some(Effect::Changes) => changes = true,
                        None => {}
                    }
                }
                if matches!(field, NAME | TITLE | DESCRIPTION)
                    && let Some(previous) = previous
                    && previous != term
                    && !phrases.contains(&(previous, term))
                {
                    phrases.push((previous, term));
                }
                previous = Some(term);
            }
        }
        if self.ranking == Ranking::Tuned {
            for kind in ArgumentKinds::of_schema(&text.input_schema).terms() {
                let term = self.term_id(kind);
                counts.entry(term).or_insert([0; FIELDS])[ARGUMENTS] = 1;
                lens[ARGUMENTS] += 1;
            }
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.docs.push(None);
                self.stats.push(DocStats::default());
                (self.docs.len() - 1) as u32
            }
        };
        let mut terms = Vec::with_capacity(counts.len());
        for (term, tf) in counts {
            self.postings[term as usize].push(Posting { doc: id, tf });
            terms.push(term);
        }
        for pair in &phrases {
            self.phrases.entry(*pair).or_default().push(id);
        }
        for name in &names {
            self.by_name.entry(name.clone()).or_default().push(id);
        }
        for (field, len) in lens.iter().enumerate() {
            self.total_lens[field] += u64::from(*len);
        }
        let key = server_key(&text.server);
        let next = self.server_keys.len() as u32;
        let server_key = *self.server_keys.entry(key).or_insert(next);
        if self.server_sizes.len() <= server_key as usize {
            self.server_sizes.resize(server_key as usize + 1, 0);
        }
        self.server_sizes[server_key as usize] += 1;
        let description = text.description.as_deref().unwrap_or_default();
        // The one kind of verb the name has (`post-search`, with both, says neither).
        let effect = match (reads, changes) {
            (true, false) => Some(Effect::Reads),
            (false, true) => Some(Effect::Changes),
            _ => None,
        };
        self.stats[id as usize] = DocStats {
            name_len: u16::try_from(name_terms.len()).unwrap_or(u16::MAX),
            server_key,
            prior: if points_elsewhere(description) {
                self.params.deprecated
            } else {
                1.0
            },
            effect,
        };
        self.docs[id as usize] = Some(Doc {
            tool,
            lens,
            terms,
            phrases,
            names,
        });
        self.live += 1;
        id
    }

    fn term_id(&mut self, token: &str) -> u32 {
        if let Some(&id) = self.vocab.get(token) {
            return id;
        }
        let id = self.postings.len() as u32;
        self.postings.push(Vec::new());
        self.vocab.insert(token.to_owned(), id);
        id
    }

    fn idf(&self, df: usize) -> f32 {
        let n = self.live as f32;
        let df = df as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    fn score_bm25(&self, query: &str) -> Vec<(u32, f32)> {
        let mut terms: Vec<u32> = self
            .analyzer
            .tokens(query)
            .iter()
            .filter_map(|token| self.vocab.get(token).copied())
            .collect();
        terms.sort_unstable();
        terms.dedup();
        let mut scores = Scores::new(self.docs.len());
        let total: u64 = self.total_lens.iter().sum();
        let avg = (total as f32 / self.live as f32).max(1.0);
        for term in terms {
            let postings = &self.postings[term as usize];
            if postings.is_empty() {
                continue;
            }
            let idf = self.idf(postings.len());
            for posting in postings {
                let Some(doc) = &self.docs[posting.doc as usize] else {
                    continue;
                };
                let tf: f32 = posting.tf.iter().map(|&tf| f32::from(tf)).sum();
                let len: u32 = doc.lens.iter().sum();
                let norm = K1 * (1.0 - B + B * len as f32 / avg);
                scores.add(posting.doc, idf * tf * (K1 + 1.0) / (tf + norm));
            }
        }
        let Scores { score, touched, .. } = scores;
        touched
            .into_iter()
            .map(|doc| (doc, score[doc as usize]))
            .collect()
    }

    /// The postings with their BM25F weights under the current field lengths.
    fn weighted(&self) -> &[Vec<Weighted>] {
        self.weighted.get_or_init(|| {
            let mut avg = [1.0f32; FIELDS];
            for (field, total) in self.total_lens.iter().enumerate() {
                avg[field] = (*total as f32 / self.live.max(1) as f32).max(1.0);
            }
            let weights = self.params.field_weights();
            self.postings
                .iter()
                .map(|postings| {
                    postings
                        .iter()
                        .filter_map(|posting| {
                            let doc = self.docs[posting.doc as usize].as_ref()?;
                            Some(Weighted {
                                doc: posting.doc,
                                weight: posting_weight(
                                    &posting.tf,
                                    &doc.lens,
                                    &avg,
                                    &weights,
                                    &FIELD_B,
                                ),
                                in_name: posting.tf[NAME] > 0,
                            })
                        })
                        .collect()
                })
                .collect()
        })
    }

    fn score_tuned(&self, query: &str) -> Vec<(u32, f32)> {
        let QueryTerms {
            terms,
            pairs,
            actions,
            effect,
        } = self.query_terms(query);
        let weighted = self.weighted();
        let mut scores = Scores::new(self.docs.len());
        // The rarity of what the query says, against which each tool's match is a share.
        let mut said_idf = 0.0f32;
        for &(term, weight) in &terms {
            let postings = &weighted[term as usize];
            if postings.is_empty() {
                continue;
            }
            let idf = self.idf(postings.len());
            if weight >= 1.0 {
                said_idf += idf;
            }
            let action = actions.contains(&term);
            scores.add_term(postings, weight, idf, action);
        }
        // Two words said together that stand together in a tool's name or summary ("pull
        // request", "knowledge graph") mean that tool more than the same words apart.
        for pair in &pairs {
            if let Some(docs) = self.phrases.get(pair) {
                scores.add_to_touched(docs, self.params.phrase * self.idf(docs.len()));
            }
        }
        let named = self.servers_named(query);
        let Scores {
            score,
            covered,
            acted,
            matched,
            touched,
        } = scores;
        // How well each server matches as a whole: the average score of its tools.
        let mut topic = vec![0.0f32; self.server_sizes.len()];
        for &doc in &touched {
            let key = self.stats[doc as usize].server_key as usize;
            topic[key] += score[doc as usize] / self.server_sizes[key].max(1) as f32;
        }
        let best_topic = topic
            .iter()
            .copied()
            .fold(0.0f32, f32::max)
            .max(f32::MIN_POSITIVE);
        touched
            .into_iter()
            .map(|doc| {
                let stats = &self.stats[doc as usize];
                let mut value = score[doc as usize] * stats.prior;
                // A tool that matches most of what the request says beats one that matches a
                // single rare word of it ("cat /etc/hosts from the local disk" is no local
                // business search).
                if said_idf > 0.0 {
                    let share = (matched[doc as usize] / said_idf).min(1.0);
                    value *= coverage_factor(share, self.params.query_coverage);
                }
                value *= 1.0 + self.params.topic * topic[stats.server_key as usize] / best_topic;
                // The query names the server: among near-equal matches, the one on that server
                // is meant (create_issue "on GitHub", not on GitLab).
                if named.contains(&stats.server_key) {
                    value *= 1.0 + self.params.server_named;
                }
                // The tool does what the request starts with ("close issue 42": update_issue
                // through close → update, not get_issue).
                if acted[doc as usize] {
                    value *= 1.0 + self.params.action;
                }
                // A request to read is rarely answered by a tool that changes things ("what
                // has been posted": the channel's history, not post_message), and the other
                // way round.
                if let (Some(wanted), Some(does)) = (effect, stats.effect)
                    && wanted != does
                {
                    value *= self.params.crossed;
                }
                // A tool whose whole name the query says (a word it means, through a synonym,
                // counts at its weight) is very likely the one meant (read_file rather than
                // read_multiple_files for "read the file").
                if stats.name_len > 0 {
                    let share = covered[doc as usize] / f32::from(stats.name_len);
                    value *= 1.0 + self.params.coverage * share.min(1.0);
                }
                (doc, value)
            })
            .collect()
    }
}

/// `share` to the power `power`; the default's fourth root as two square roots, since `powf`
/// for every tool a query touches cost a sixth of the query at 10,000 tools.
fn coverage_factor(share: f32, power: f32) -> f32 {
    if power == 0.25 {
        share.sqrt().sqrt()
    } else {
        share.powf(power)
    }
}

/// A server name as a query would say it: lower-case letters and digits only (`google-maps` →
/// `googlemaps`, `GitHub` → `github`).
fn server_key(server: &str) -> String {
    server
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The indexed text of a tool, by field.
fn fields_of(tool: &SearchableTool) -> [String; FIELDS] {
    let mut params = String::new();
    if let Some(properties) = tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
    {
        for (name, schema) in properties {
            params.push_str(name);
            params.push(' ');
            if let Some(description) = schema.get("description").and_then(Value::as_str) {
                params.push_str(description);
                params.push(' ');
            }
        }
    }
    let mut out: [String; FIELDS] = Default::default();
    out[NAME] = tool.name.clone();
    out[TITLE] = tool.title.clone().unwrap_or_default();
    let description = tool.description.as_deref().unwrap_or_default();
    let (summary, details) = first_sentence(description);
    out[DESCRIPTION] = summary.to_owned();
    out[DETAILS] = details.to_owned();
    out[SERVER] = tool.server.clone();
    out[PARAMS] = params;
    out
}

/// `text` split after its first sentence (at the first `. `, `.` + line break, or blank line).
fn first_sentence(text: &str) -> (&str, &str) {
    let text = text.trim_start();
    let end = [". ", ".\n", "\n\n"]
        .iter()
        .filter_map(|stop| text.find(stop).map(|at| at + 1))
        .min()
        .unwrap_or(text.len());
    text.split_at(end)
}

/// A tool name or a query as compared for an exact match: trimmed, in lower case.
fn exact_name(name: &str) -> String {
    name.trim().to_lowercase()
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
