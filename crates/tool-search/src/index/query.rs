//! A query as the ranking reads it, against the index's vocabulary: the terms it says, means
//! (synonyms, a verb's sense, two words written as one) and implies (a question), each with its
//! weight; the kinds of value it carries; the servers it names; and whether it reads or changes.

use super::ToolIndex;
use crate::analyzer::Effect;
use crate::arguments::read_request;

/// Weight of a term a question implies.
const QUESTION_WEIGHT: f32 = 0.5;

/// A query as the ranking reads it.
pub(super) struct QueryTerms {
    /// Terms with their weights: said (1.0), meant through a synonym, implied by a question.
    pub(super) terms: Vec<(u32, f32)>,
    /// Adjacent pairs of said terms (for the phrase bonus).
    pub(super) pairs: Vec<(u32, u32)>,
    /// The request's first word and the words it means (for the action bonus).
    pub(super) actions: Vec<u32>,
    /// Whether the request asks to read or to change something, when it says.
    pub(super) effect: Option<Effect>,
}

impl<T> ToolIndex<T> {
    /// The servers the query names ("in git", "on GitHub", "google maps"): ids of
    /// [`server_key`](super::server_key)s equal to a word of the query or to two adjacent words.
    pub(super) fn servers_named(&self, query: &str) -> Vec<u32> {
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
        let mut pair = String::new();
        for (i, word) in words.iter().enumerate() {
            check(word);
            if let Some(next) = words.get(i + 1) {
                pair.clear();
                pair.push_str(word);
                pair.push_str(next);
                check(&pair);
            }
        }
        named
    }

    /// The query's terms with their weights: what it says (1.0), then what it means (the
    /// expansion weight); terms unknown to the index are dropped. Also the adjacent pairs of
    /// what it says, for the phrase bonus.
    pub(super) fn query_terms(&self, query: &str) -> QueryTerms {
        let mut out: Vec<(u32, f32)> = Vec::new();
        let request = read_request(query);
        // The kinds of value the request carries (a path, a URL, a time zone…) are terms it
        // says, matched by the tools whose parameters take them.
        for kind in request.kinds.terms() {
            if let Some(&term) = self.vocab.get(kind) {
                out.push((term, 1.0));
            }
        }
        // What the request asks for is in its prose; the words inside its values (`shop` in
        // `~/code/shop`, `logs` in `logs/app.log`) name things, so they weigh less.
        let query = &*self.analyzer.rewrite_phrases(&request.prose);
        let said = self.analyzer.tokens(query);
        // A request starts with what to do; a question (what, which, show…) does not.
        let mut actions: Vec<u32> = Vec::new();
        let mut effect = None;
        if !self.analyzer.implied_by(query).is_empty() {
            effect = Some(Effect::Reads);
        } else if let Some(first) = said.first() {
            for token in std::iter::once(first).chain(self.analyzer.synonyms(first)) {
                effect = effect.or_else(|| self.analyzer.effect(token));
                actions.extend(self.vocab.get(token).copied());
            }
            for meant in self.analyzer.verb_synonyms(first) {
                if let Some(&term) = self.vocab.get(&meant) {
                    actions.push(term);
                }
            }
        }
        let mut pairs = Vec::new();
        let mut previous: Option<u32> = None;
        for token in &said {
            let term = self.vocab.get(token).copied();
            if let Some(term) = term
                && !out.iter().any(|(t, _)| *t == term)
            {
                out.push((term, 1.0));
            }
            if let (Some(a), Some(b)) = (previous, term)
                && a != b
            {
                pairs.push((a, b));
            }
            previous = term;
        }
        // What the request's verb means only as a verb ("open an issue": create one).
        for &term in &actions {
            if !out.iter().any(|(t, _)| *t == term) {
                out.push((term, self.params.expansion));
            }
        }
        // "check out", "look up": what a tool spells as one word.
        for compound in self.analyzer.compounds(query) {
            if let Some(&term) = self.vocab.get(&compound)
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
                    out.push((term, self.params.expansion));
                }
            }
        }
        for token in self.analyzer.tokens(&request.values) {
            if let Some(&term) = self.vocab.get(&token)
                && !out.iter().any(|(t, _)| *t == term)
            {
                out.push((term, self.params.value_words));
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
        QueryTerms {
            terms: out,
            pairs,
            actions,
            effect,
        }
    }
}
