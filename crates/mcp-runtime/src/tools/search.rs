//! Search over many tools, so a host can defer their definitions and let the model find the few
//! it needs: an inverted index over each tool's name, title, description, server and parameters.
//!
//! The default ranking is BM25F: identifiers are split (and CamelCase brands such as `GitHub`
//! also kept whole), words are stemmed (Snowball English), filler words are dropped, each field
//! has its own weight and length normalisation (a description's first sentence says what the
//! tool does and weighs more than the rest), the query is widened with a small table of verbs
//! and nouns that tools describe in different words (and a question with list/get), tools whose
//! name the query covers rank higher, and so do the tools of a server the query names ("in
//! git", "on GitHub"). Plain BM25 stays available as the baseline.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::McpTool;
use super::analyzer::Analyzer;
pub use super::analyzer::split_words;

/// A ranked match.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The tool, as it was indexed.
    pub tool: McpTool,
    /// Relevance; higher is better, always positive.
    pub score: f32,
}

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
const FIELDS: usize = 6;
const NAME: usize = 0;
const TITLE: usize = 1;
const DESCRIPTION: usize = 2;
const SERVER: usize = 3;
const PARAMS: usize = 4;
/// The description after its first sentence: details, caveats and pointers to other tools
/// ("use browser_snapshot instead"), which say less about what the tool does.
const DETAILS: usize = 5;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// BM25F weight of each field: a word in the name or the description's first sentence says
/// more than one in the details or a parameter.
const WEIGHTS: [f32; FIELDS] = [3.0, 2.0, 3.0, 1.5, 0.2, 0.5];
/// BM25F length normalisation of each field (names are short and alike, so barely normalised).
const FIELD_B: [f32; FIELDS] = [0.3, 0.5, 0.75, 0.0, 0.75, 0.75];
/// Weight of a word the query did not say but that means the same (a synonym).
const EXPANSION_WEIGHT: f32 = 0.6;
/// How much a tool gains when the query says every word of its name (a word it means, through
/// a synonym, counts at [`EXPANSION_WEIGHT`]).
const COVERAGE_BONUS: f32 = 0.3;
/// How much a tool gains when the query names its server ("in git", "on GitHub").
const SERVER_NAMED_BONUS: f32 = 0.5;
/// Weight of a term a question implies.
const QUESTION_WEIGHT: f32 = 0.5;

#[derive(Debug, Clone)]
struct Doc {
    tool: McpTool,
    lens: [u32; FIELDS],
    /// Term ids this document contains (to unlink it from the postings).
    terms: Vec<u32>,
    /// Distinct term ids of the tool's own name (for the coverage bonus).
    name_terms: Vec<u32>,
    /// The tool's server, as an id of [`server_key`] (for the server the query names).
    server_key: u32,
}

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u16; FIELDS],
}

/// An inverted index over tools, updated one server at a time.
///
/// ```
/// use mcp_runtime::tools::{McpTool, ToolIndex};
///
/// let tool = |name: &str, description: &str| McpTool {
///     name: format!("mcp_git_{name}"),
///     server: "git".into(),
///     tool: name.into(),
///     definition: serde_json::from_value(
///         serde_json::json!({"name": name, "description": description}),
///     )
///     .unwrap(),
///     label: "mcp:git".into(),
///     deferred: false,
/// };
/// let mut index = ToolIndex::new();
/// index.set_server("git", &[
///     tool("git_status", "Shows the working tree status"),
///     tool("git_diff_unstaged", "Shows changes in the working directory that are not yet staged"),
/// ]);
/// let hits = index.search("unstaged changes", 5);
/// assert_eq!(hits[0].tool.tool, "git_diff_unstaged");
/// ```
#[derive(Clone)]
pub struct ToolIndex {
    ranking: Ranking,
    analyzer: Analyzer,
    docs: Vec<Option<Doc>>,
    free: Vec<u32>,
    by_server: HashMap<String, Vec<u32>>,
    vocab: HashMap<String, u32>,
    postings: Vec<Vec<Posting>>,
    total_lens: [u64; FIELDS],
    live: usize,
    /// [`server_key`] of every server ever indexed → its id.
    server_keys: HashMap<String, u32>,
}

impl Default for ToolIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ToolIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolIndex")
            .field("ranking", &self.ranking)
            .field("tools", &self.live)
            .field("terms", &self.vocab.len())
            .finish()
    }
}

impl ToolIndex {
    /// An empty index with the default ranking.
    pub fn new() -> Self {
        Self::with_ranking(Ranking::default())
    }

    /// An empty index ranking with `ranking`.
    pub fn with_ranking(ranking: Ranking) -> Self {
        ToolIndex {
            ranking,
            analyzer: Analyzer::new(ranking),
            docs: Vec::new(),
            free: Vec::new(),
            by_server: HashMap::new(),
            vocab: HashMap::new(),
            postings: Vec::new(),
            total_lens: [0; FIELDS],
            live: 0,
            server_keys: HashMap::new(),
        }
    }

    /// The ranking in use.
    pub fn ranking(&self) -> Ranking {
        self.ranking
    }

    /// Replace everything indexed for `server` with `tools` (other servers are untouched), as a
    /// server's tool list changes, it reconnects or the configuration is reloaded.
    pub fn set_server(&mut self, server: &str, tools: &[McpTool]) {
        self.remove_server(server);
        let ids: Vec<u32> = tools.iter().map(|tool| self.add(tool.clone())).collect();
        if !ids.is_empty() {
            self.by_server.insert(server.to_owned(), ids);
        }
    }

    /// Forget every tool of `server`.
    pub fn remove_server(&mut self, server: &str) {
        let Some(ids) = self.by_server.remove(server) else {
            return;
        };
        let mut touched: Vec<u32> = Vec::new();
        for &id in &ids {
            if let Some(doc) = self.docs[id as usize].take() {
                for (field, len) in doc.lens.iter().enumerate() {
                    self.total_lens[field] -= u64::from(*len);
                }
                touched.extend(doc.terms);
                self.live -= 1;
            }
            self.free.push(id);
        }
        touched.sort_unstable();
        touched.dedup();
        let gone: HashSet<u32> = ids.into_iter().collect();
        for term in touched {
            self.postings[term as usize].retain(|posting| !gone.contains(&posting.doc));
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
    pub fn search(&self, query: &str, k: usize) -> Vec<SearchHit> {
        self.search_filtered(query, k, &|_| true)
    }

    /// Like [`ToolIndex::search`], among only the tools for which `allow` is true (a scoped
    /// view never finds what it cannot call).
    pub fn search_filtered(
        &self,
        query: &str,
        k: usize,
        allow: &dyn Fn(&McpTool) -> bool,
    ) -> Vec<SearchHit> {
        if k == 0 || self.live == 0 {
            return Vec::new();
        }
        let scores = match self.ranking {
            Ranking::Bm25 => self.score_bm25(query),
            Ranking::Tuned => self.score_tuned(query),
        };
        // Best first; ties by name so results are stable. Only the allowed candidates are
        // ranked, and only the best `k` of them are kept (a bounded heap, no full sort).
        let name = |id: u32| self.docs[id as usize].as_ref().map(|doc| &doc.tool.name);
        let better = |a: &(u32, f32), b: &(u32, f32)| {
            b.1.total_cmp(&a.1).then_with(|| name(a.0).cmp(&name(b.0)))
        };
        let mut best: Vec<(u32, f32)> = Vec::with_capacity(k + 1);
        for (id, score) in scores {
            if !(score > 0.0 && score.is_finite()) {
                continue;
            }
            if best.len() == k
                && better(&(id, score), best.last().expect("k > 0")) != std::cmp::Ordering::Less
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

    fn add(&mut self, tool: McpTool) -> u32 {
        let fields = fields_of(&tool);
        let mut counts: HashMap<u32, [u16; FIELDS]> = HashMap::new();
        let mut lens = [0u32; FIELDS];
        let mut name_terms = Vec::new();
        for (field, text) in fields.iter().enumerate() {
            for token in self.analyzer.tokens(text) {
                let term = self.term_id(&token);
                let tf = &mut counts.entry(term).or_insert([0; FIELDS])[field];
                *tf = tf.saturating_add(1);
                lens[field] += 1;
                if field == NAME && !name_terms.contains(&term) {
                    name_terms.push(term);
                }
            }
        }
        let id = match self.free.pop() {
            Some(id) => id,
            None => {
                self.docs.push(None);
                (self.docs.len() - 1) as u32
            }
        };
        let mut terms = Vec::with_capacity(counts.len());
        for (term, tf) in counts {
            self.postings[term as usize].push(Posting { doc: id, tf });
            terms.push(term);
        }
        for (field, len) in lens.iter().enumerate() {
            self.total_lens[field] += u64::from(*len);
        }
        let key = server_key(&tool.server);
        let next = self.server_keys.len() as u32;
        let server_key = *self.server_keys.entry(key).or_insert(next);
        self.docs[id as usize] = Some(Doc {
            tool,
            lens,
            terms,
            name_terms,
            server_key,
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
        let mut scores = Accumulator::new(self.docs.len());
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
        scores.into_hits()
    }
}

impl ToolIndex {
    /// The servers the query names ("in git", "on GitHub", "google maps"): ids of
    /// [`server_key`]s equal to a word of the query or to two adjacent words.
    fn servers_named(&self, query: &str) -> Vec<u32> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let mut named = Vec::new();
        let mut check = |key: &str| {
            if let Some(&id) = self.server_keys.get(key)
                && !named.contains(&id)
            {
                named.push(id);
            }
        };
        for (i, word) in words.iter().enumerate() {
            check(word);
            if let Some(next) = words.get(i + 1) {
                check(&format!("{word}{next}"));
            }
        }
        named
    }

    /// The query's terms with their weights: what it says (1.0), then what it means
    /// ([`EXPANSION_WEIGHT`]); terms unknown to the index are dropped.
    fn query_terms(&self, query: &str) -> Vec<(u32, f32)> {
        let mut out: Vec<(u32, f32)> = Vec::new();
        let said = self.analyzer.tokens(query);
        for token in &said {
            if let Some(&term) = self.vocab.get(token)
                && !out.iter().any(|(t, _)| *t == term)
            {
                out.push((term, 1.0));
            }
        }
        for token in &said {
            for other in self.analyzer.synonyms(token) {
                if let Some(&term) = self.vocab.get(other)
                    && !out.iter().any(|(t, _)| *t == term)
                {
                    out.push((term, EXPANSION_WEIGHT));
                }
            }
        }
        // A question asks to read: "what tables does the database have" wants a list, "who is
        // in the workspace" wants to get users.
        for implied in self.analyzer.implied_by(query) {
            if let Some(&term) = self.vocab.get(*implied)
                && !out.iter().any(|(t, _)| *t == term)
            {
                out.push((term, QUESTION_WEIGHT));
            }
        }
        out
    }

    fn score_tuned(&self, query: &str) -> Vec<(u32, f32)> {
        let terms = self.query_terms(query);
        let mut avg = [1.0f32; FIELDS];
        for (field, total) in self.total_lens.iter().enumerate() {
            avg[field] = (*total as f32 / self.live as f32).max(1.0);
        }
        let mut scores = Accumulator::new(self.docs.len());
        for &(term, weight) in &terms {
            let postings = &self.postings[term as usize];
            if postings.is_empty() {
                continue;
            }
            let idf = self.idf(postings.len());
            for posting in postings {
                let Some(doc) = &self.docs[posting.doc as usize] else {
                    continue;
                };
                let mut tf = 0.0f32;
                for field in 0..FIELDS {
                    if posting.tf[field] == 0 {
                        continue;
                    }
                    let norm =
                        1.0 - FIELD_B[field] + FIELD_B[field] * doc.lens[field] as f32 / avg[field];
                    tf += WEIGHTS[field] * f32::from(posting.tf[field]) / norm;
                }
                scores.add(posting.doc, weight * idf * tf * (K1 + 1.0) / (tf + K1));
            }
        }
        let mut scores = scores.into_hits();
        let named = self.servers_named(query);
        for (doc, score) in &mut scores {
            let Some(doc) = &self.docs[*doc as usize] else {
                continue;
            };
            // The query names the server: among near-equal matches, the one on that server is
            // meant (create_issue "on GitHub", not on GitLab).
            if named.contains(&doc.server_key) {
                *score *= 1.0 + SERVER_NAMED_BONUS;
            }
            // A tool whose whole name the query says is very likely the one meant (read_file
            // rather than read_multiple_files for "read the file").
            if doc.name_terms.is_empty() {
                continue;
            }
            let covered: f32 = doc
                .name_terms
                .iter()
                .filter_map(|term| terms.iter().find(|(t, _)| t == term).map(|(_, w)| *w))
                .sum();
            *score *= 1.0 + COVERAGE_BONUS * covered / doc.name_terms.len() as f32;
        }
        scores
    }
}

/// Per-document score sums in a dense array (cheaper than a map at thousands of tools), with
/// the documents touched kept in order of first touch.
struct Accumulator {
    scores: Vec<f32>,
    touched: Vec<u32>,
}

impl Accumulator {
    fn new(docs: usize) -> Self {
        Accumulator {
            scores: vec![0.0; docs],
            touched: Vec::new(),
        }
    }

    fn add(&mut self, doc: u32, score: f32) {
        let slot = &mut self.scores[doc as usize];
        if *slot == 0.0 {
            self.touched.push(doc);
        }
        *slot += score;
    }

    fn into_hits(self) -> Vec<(u32, f32)> {
        let scores = self.scores;
        self.touched
            .into_iter()
            .map(|doc| (doc, scores[doc as usize]))
            .collect()
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
fn fields_of(tool: &McpTool) -> [String; FIELDS] {
    let definition = &tool.definition;
    let mut params = String::new();
    if let Some(properties) = definition
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
    out[NAME] = tool.tool.clone();
    out[TITLE] = definition.title.clone().unwrap_or_default();
    let description = definition.description.as_deref().unwrap_or_default();
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

/// The first non-empty line of `text`, cut to `max_chars` characters (with `…`): a tool
/// description as a search result shows it.
pub fn one_line_summary(text: &str, max_chars: usize) -> String {
    let line = text.trim().lines().next().unwrap_or("").trim();
    if line.chars().count() <= max_chars {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A tool's parameters as `name: type` (`name?: type` when optional; a type list as
/// `a|b`), from its input schema: what a model needs to call a tool found by a search.
pub fn parameter_summary(schema: &Value) -> Vec<String> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    properties
        .iter()
        .map(|(name, property)| {
            let kind = match property.get("type") {
                Some(Value::String(kind)) => kind.clone(),
                Some(Value::Array(kinds)) => kinds
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ => "any".to_owned(),
            };
            let optional = if required.contains(name.as_str()) {
                ""
            } else {
                "?"
            };
            format!("{name}{optional}: {kind}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(server: &str, name: &str, description: &str) -> McpTool {
        McpTool {
            name: format!("mcp_{server}_{name}"),
            server: server.into(),
            tool: name.into(),
            definition: serde_json::from_value(
                serde_json::json!({"name": name, "description": description}),
            )
            .unwrap(),
            label: format!("mcp:{server}"),
            deferred: false,
        }
    }

    #[test]
    fn default_is_the_tuned_ranking_and_shareable() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ToolIndex>();
        let mut index = ToolIndex::default();
        assert_eq!(index.ranking(), Ranking::Tuned);
        index.set_server("fs", &[tool("fs", "list_files", "Lists files")]);
        assert_eq!(index.search("listing", 5).len(), 1, "stemmed");
    }

    #[test]
    fn plain_bm25_ranks_and_updates() {
        let mut index = ToolIndex::with_ranking(Ranking::Bm25);
        index.set_server(
            "fs",
            &[
                tool("fs", "read_file", "Read a file"),
                tool("fs", "write_file", "Write a file"),
            ],
        );
        index.set_server("web", &[tool("web", "fetch", "Fetch a URL")]);
        assert_eq!(index.len(), 3);
        assert_eq!(index.search("write", 5)[0].tool.tool, "write_file");
        assert!(index.search("nothing matches this", 5).is_empty());
        index.set_server("fs", &[tool("fs", "delete_file", "Delete a file")]);
        assert_eq!(index.len(), 2);
        assert!(index.search("write", 5).is_empty());
        index.remove_server("web");
        assert_eq!(index.len(), 1);
        assert!(index.search("url", 5).is_empty());
        let hits = index.search_filtered("file", 5, &|tool| tool.server != "fs");
        assert!(hits.is_empty());
    }
}
