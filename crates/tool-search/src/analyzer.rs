//! Text to index terms, the same way for a tool's fields and for a query: identifiers split,
//! words lower-cased and (for the tuned ranking) stemmed with filler words dropped, plus the
//! tables of what words mean: synonyms, and what a question implies. A leaf: it knows words,
//! not tools nor scores.

use std::borrow::Cow;
use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// Words that tools and agents use for the same thing. Each group expands to the others. The
/// groups are general English verbs and nouns of software work, not fitted to any query; a word
/// that means different things (`open` a page, `open` issues) stays out of the groups it would
/// mislead.
#[rustfmt::skip] // One group per line reads as a thesaurus; rustfmt would stack long ones.
const SYNONYMS: &[&[&str]] = &[
    &["get", "fetch", "retrieve", "read", "obtain", "load", "view", "print", "display",
        "download", "inspect"],
    &["create", "add", "new", "make", "insert", "generate", "raise", "post"],
    &["delete", "remove", "erase", "drop", "destroy", "trash", "forget", "discard", "wipe",
        "purge", "eliminate", "nuke"],
    &["update", "edit", "modify", "change", "patch", "alter", "mark", "set", "reopen", "reassign"],
    &["list", "enumerate", "browse"],
    &["search", "find", "query", "lookup", "locate", "grep", "seek", "discover"],
    &["write", "save", "store", "persist", "remember", "record"],
    &["move", "rename", "relocate"],
    &["run", "execute", "invoke", "evaluate", "eval", "trigger", "launch"],
    &["url", "link", "address", "webpage", "website"],
    &["click", "press", "tap", "hit"],
    &["type", "enter", "fill", "input"],
    &["directory", "folder", "dir"],
    &["issue", "ticket", "bug"],
    &["pull", "pr"],
    &["time", "clock", "timezone"],
    &["convert", "translate", "transform"],
    &["screenshot", "capture", "snapshot", "picture"],
    &["image", "picture", "photo", "media", "audio", "video", "png", "jpg", "jpeg", "gif"],
    &["message", "post", "send", "chat", "tell", "notify", "announce", "broadcast"],
    &["user", "person", "member", "people", "account", "everyone", "everybody"],
    &["comment", "reply", "respond", "answer", "remark"],
    &["review", "approve", "approval", "lgtm"],
    &["entity", "node"],
    &["relation", "edge", "connection", "link", "relationship"],
    &["observation", "fact", "note"],
    &["wait", "sleep", "pause"],
    &["navigate", "visit", "goto", "open"],
    &["close", "quit", "exit", "shut", "dismiss"],
    &["resize", "dimension", "viewport"],
    &["upload", "attach", "push"],
    &["diff", "difference", "compare"],
    &["log", "history", "tail"],
    &["repository", "repo"],
    &["database", "db", "sql"],
    &["hover", "mouseover"],
    &["drag", "drop"],
    &["dialog", "alert", "popup", "confirm", "prompt", "modal"],
    &["console", "devtools"],
    &["request", "network", "xhr"],
    &["place", "location", "geocode", "business", "shop"],
    &["route", "direction"],
    &["multiple", "several", "many", "batch", "bulk", "both"],
    &["current", "now", "today"],
    &["coordinates", "latitude", "longitude", "geocode", "lat", "lng", "lon", "gps"],
    &["simultaneously", "once", "together"],
    &["size", "large", "big", "biggest", "bytes"],
    &["recent", "lately", "latest", "last"],
    &["fork", "copy", "clone", "duplicate"],
    &["echo", "repeat"],
    &["elevation", "altitude", "height"],
    &["distance", "travel", "drive", "driving", "commute", "trip", "far"],
    &["error", "exception", "crash", "failure", "fault", "segfault", "stacktrace", "traceback"],
    &["key", "keystroke", "keyboard", "keypress", "hotkey", "shortcut"],
    &["schema", "column", "structure"],
    &["scale", "replica", "shrink", "grow"],
    &["switch", "select", "choose"],
    &["forward", "expose", "tunnel", "reachable"],
    &["install", "deploy"],
    &["upgrade", "bump", "update"],
    &["status", "untracked", "dirty"],
    &["undo", "revert", "reset", "unstage", "rollback", "restore"],
    &["allow", "permit", "permission", "access", "authorize"],
    &["rollout", "restart", "redeploy"],
];

/// Words, one or two, that mean what an index spells otherwise: phrases ("tear down" a job:
/// delete it) and, as a request's first word, the shell's names for file work (`cat`, `ls`,
/// `rm`). Like [`SYNONYMS`], general English of software work.
const PHRASES: &[(&str, &str)] = &[
    ("tear down", "delete"),
    ("take down", "delete"),
    ("wipe out", "delete"),
    ("clean up", "delete"),
    ("get rid", "delete"),
    ("pull up", "get"),
    ("bring up", "get"),
    ("look at", "view"),
    ("set up", "create"),
    ("spin up", "create"),
    ("kick off", "run"),
    ("go back", "back"),
    ("return to", "back to"),
    ("mouse over", "hover"),
    ("sign off", "approve"),
    ("cat", "read file"),
    ("ls", "list directory"),
    ("mkdir", "create directory"),
    ("rmdir", "delete directory"),
    ("rm", "delete"),
    ("mv", "move"),
    ("cp", "copy"),
    ("whoami", "get current user"),
];

/// Words that mean more as a request's first word, the verb, than elsewhere: "open an issue",
/// "file a bug" create one, while "the open issues" and "a file" do not; "react to a message"
/// adds a reaction, while "React docs" are a library's.
const VERB_SYNONYMS: &[(&str, &[&str])] = &[
    ("open", &["create"]),
    ("file", &["create"]),
    ("react", &["reaction", "emoji"]),
    ("end", &["close"]),
];

/// First words of a query that make it a question (which asks to read, not to change).
const QUESTION_WORDS: &[&str] = &[
    "what", "what's", "which", "who", "whose", "where", "when", "is", "are", "does", "did", "do",
    "any", "show",
];
/// The (stemmed) terms a question implies.
const QUESTION_IMPLIES: &[&str] = &["list", "get"];

/// Verbs that read and verbs that change, as a tool's name or a request starts with them: a
/// request to read is rarely answered by a tool that changes things, and the other way round.
#[rustfmt::skip]
const READING_VERBS: &[&str] = &[
    "get", "list", "read", "search", "find", "fetch", "retrieve", "show", "view", "describe",
    "inspect", "lookup", "print", "display", "browse", "see",
];
#[rustfmt::skip]
const CHANGING_VERBS: &[&str] = &[
    "create", "add", "update", "delete", "remove", "set", "push", "merge", "write", "edit",
    "move", "post", "send", "patch", "put", "insert", "drop", "fork", "close", "reply", "upload",
    "rename", "archive", "save", "store", "erase", "destroy", "modify", "change",
];

/// What a verb does to what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    Reads,
    Changes,
}

/// Words that carry no meaning in a query ("I need to ... the ...").
const STOPWORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could",
    "do", "does", "for", "from", "have", "how", "i", "i'd", "if", "in", "into", "is", "it", "its",
    "just", "let", "lets", "me", "my", "need", "now", "of", "on", "or", "our", "please", "should",
    "so", "some", "that", "the", "their", "them", "then", "there", "this", "to", "up", "us",
    "want", "was", "we", "what", "which", "will", "with", "would", "you", "your",
];

/// Turns text into index terms, the same way for tools and queries.
#[derive(Clone, Default)]
pub(crate) struct Analyzer {
    /// Stem and drop filler words (the tuned ranking); plain BM25 only splits and lower-cases.
    tuned: bool,
    /// Stemmed word → the stemmed words of its synonym groups.
    synonyms: HashMap<String, Vec<String>>,
    /// Stemmed verb → whether it reads or changes.
    effects: HashMap<String, Effect>,
}

impl Analyzer {
    /// Words split and lower-cased only (plain BM25).
    pub(crate) fn plain() -> Self {
        Analyzer::default()
    }

    /// Words also stemmed, filler words dropped, and the tables of meaning read (the tuned
    /// ranking).
    pub(crate) fn tuned() -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut synonyms: HashMap<String, Vec<String>> = HashMap::new();
        for group in SYNONYMS {
            let stems: Vec<String> = group.iter().map(|w| stemmer.stem(w).into_owned()).collect();
            for stem in &stems {
                let entry = synonyms.entry(stem.clone()).or_default();
                for other in &stems {
                    if other != stem && !entry.contains(other) {
                        entry.push(other.clone());
                    }
                }
            }
        }
        let mut effects = HashMap::new();
        for (verbs, effect) in [
            (READING_VERBS, Effect::Reads),
            (CHANGING_VERBS, Effect::Changes),
        ] {
            for verb in verbs {
                effects.insert(stemmer.stem(verb).into_owned(), effect);
            }
        }
        Analyzer {
            tuned: true,
            synonyms,
            effects,
        }
    }

    /// Whether the (stemmed) `term` is a verb that reads or one that changes.
    pub(crate) fn effect(&self, term: &str) -> Option<Effect> {
        self.effects.get(term).copied()
    }

    pub(crate) fn tokens(&self, text: &str) -> Vec<String> {
        if !self.tuned {
            return split_words(text);
        }
        let mut words = Vec::new();
        for chunk in text.split(|c: char| !c.is_alphanumeric()) {
            if chunk.is_empty() {
                continue;
            }
            let parts = split_words(chunk);
            // A name written in camel case (GitHub, JavaScript) is also the word an agent
            // types in lower case (github, javascript).
            if parts.len() == 2
                && chunk.starts_with(char::is_uppercase)
                && chunk.chars().all(char::is_alphabetic)
            {
                words.push(chunk.to_lowercase());
            }
            words.extend(parts);
        }
        // A `Stemmer` is only a function pointer: creating one per call costs nothing.
        let stemmer = Stemmer::create(Algorithm::English);
        words
            .into_iter()
            .filter(|word| !STOPWORDS.contains(&word.as_str()))
            .map(|word| stemmer.stem(&word).into_owned())
            .collect()
    }

    /// Two adjacent words of `text` written as one ("check out" → `checkout`, "look up" →
    /// `lookup`, "drop down" → `dropdown`), stemmed: tools spell many such verbs and nouns as one
    /// word, agents as two. Which of them are words is for the caller (the index's vocabulary).
    pub(crate) fn compounds(&self, text: &str) -> Vec<String> {
        if !self.tuned {
            return Vec::new();
        }
        let words: Vec<String> = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let stemmer = Stemmer::create(Algorithm::English);
        words
            .windows(2)
            .filter(|pair| pair.iter().all(|w| w.chars().all(char::is_alphabetic)))
            .map(|pair| {
                stemmer
                    .stem(&format!("{}{}", pair[0], pair[1]))
                    .into_owned()
            })
            .collect()
    }

    pub(crate) fn synonyms(&self, term: &str) -> impl Iterator<Item = &String> {
        self.synonyms.get(term).into_iter().flatten()
    }

    /// What `term` also means as a request's first word (the verb), stemmed.
    pub(crate) fn verb_synonyms(&self, term: &str) -> Vec<String> {
        if !self.tuned {
            return Vec::new();
        }
        let stemmer = Stemmer::create(Algorithm::English);
        VERB_SYNONYMS
            .iter()
            .filter(|(verb, _)| *verb == term)
            .flat_map(|(_, meant)| meant.iter())
            .map(|word| stemmer.stem(word).into_owned())
            .collect()
    }

    /// `text` with each of its [`PHRASES`] written as the word it means ("tear down the job" →
    /// "delete the job"): the phrase's own words would mislead ("pull up" is no pull request).
    pub(crate) fn rewrite_phrases<'t>(&self, text: &'t str) -> Cow<'t, str> {
        if !self.tuned {
            return Cow::Borrowed(text);
        }
        // Each word with its byte range.
        let mut words = Vec::new();
        let mut start = None;
        for (at, c) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some(at),
                (false, Some(from)) => {
                    words.push((from, at));
                    start = None;
                }
                _ => {}
            }
        }
        let mut out = String::new();
        let mut copied = 0;
        let mut at = 0;
        while at < words.len() {
            let matched = PHRASES.iter().find_map(|(phrase, meant)| {
                // A shell command is the request only as its first word: "ls the folder" lists
                // it, "run ls in the pod" runs a command.
                if at > 0 && !phrase.contains(' ') {
                    return None;
                }
                let mut end = at;
                for (i, word) in phrase.split(' ').enumerate() {
                    let &(from, to) = words.get(at + i)?;
                    // Words of a phrase stand apart by spaces only, not punctuation.
                    if i > 0 && !text[words[end].1..from].chars().all(char::is_whitespace) {
                        return None;
                    }
                    if !text[from..to].eq_ignore_ascii_case(word) {
                        return None;
                    }
                    end = at + i;
                }
                Some((end, *meant))
            });
            match matched {
                Some((end, meant)) => {
                    out.push_str(&text[copied..words[at].0]);
                    out.push_str(meant);
                    copied = words[end].1;
                    at = end + 1;
                }
                None => at += 1,
            }
        }
        if copied == 0 {
            return Cow::Borrowed(text);
        }
        out.push_str(&text[copied..]);
        Cow::Owned(out)
    }

    /// The terms a query implies without saying them: a question (its first word is one of
    /// [`QUESTION_WORDS`]) asks to read, so it implies list and get.
    pub(crate) fn implied_by(&self, query: &str) -> &'static [&'static str] {
        let first = query
            .split(|c: char| !c.is_alphanumeric() && c != '\'')
            .find(|w| !w.is_empty())
            .map(str::to_lowercase);
        if self.tuned && first.is_some_and(|word| QUESTION_WORDS.contains(&word.as_str())) {
            QUESTION_IMPLIES
        } else {
            &[]
        }
    }
}

/// Words of `text`, lower-cased, with identifiers split at `_`, `.`, `-`, `/` and at
/// camelCase boundaries (`readFile` → `read`, `file`; `HTTPServer` → `http`, `server`).
pub fn split_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in text.split(|c: char| !c.is_alphanumeric()) {
        if chunk.is_empty() {
            continue;
        }
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next_lower = chars.get(i + 1).is_some_and(|c| c.is_lowercase());
            let boundary = (prev.is_lowercase() && cur.is_uppercase())
                || (prev.is_uppercase() && cur.is_uppercase() && next_lower)
                || (prev.is_alphabetic() && cur.is_ascii_digit())
                || (prev.is_ascii_digit() && cur.is_alphabetic());
            if boundary {
                words.push(chars[start..i].iter().collect::<String>().to_lowercase());
                start = i;
            }
        }
        words.push(chars[start..].iter().collect::<String>().to_lowercase());
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_split() {
        assert_eq!(split_words("read_file"), ["read", "file"]);
        assert_eq!(
            split_words("readMultipleFiles"),
            ["read", "multiple", "files"]
        );
        assert_eq!(
            split_words("HTTPServer.get-v2"),
            ["http", "server", "get", "v", "2"]
        );
        assert_eq!(split_words("browser_click"), ["browser", "click"]);
    }

    #[test]
    fn two_words_are_also_tried_as_one() {
        let tuned = Analyzer::tuned();
        let compounds = tuned.compounds("check out the tag, then look up v1.2");
        assert!(compounds.contains(&"checkout".to_owned()), "{compounds:?}");
        assert!(compounds.contains(&"lookup".to_owned()), "{compounds:?}");
        assert!(!compounds.iter().any(|c| c.contains('1')), "{compounds:?}");
        assert!(Analyzer::plain().compounds("check out").is_empty());
    }

    #[test]
    fn open_is_not_create() {
        // "the open issues" are not issues to create; "open the page" is to navigate.
        let tuned = Analyzer::tuned();
        let open: Vec<&String> = tuned.synonyms("open").collect();
        assert!(!open.iter().any(|s| *s == "creat"), "{open:?}");
        assert!(open.iter().any(|s| *s == "navig"), "{open:?}");
    }

    #[test]
    fn open_as_the_verb_means_create() {
        let tuned = Analyzer::tuned();
        assert_eq!(tuned.verb_synonyms("open"), ["creat"]);
        assert!(tuned.verb_synonyms("issu").is_empty());
    }

    #[test]
    fn two_words_can_mean_one_thing() {
        let tuned = Analyzer::tuned();
        assert_eq!(
            tuned.rewrite_phrases("Tear down the stuck job, then pull  up its logs"),
            "delete the stuck job, then get its logs"
        );
        assert_eq!(tuned.rewrite_phrases("go back"), "back");
        assert_eq!(
            tuned.rewrite_phrases("mkdir -p tmp/cache, then ls it"),
            "create directory -p tmp/cache, then ls it"
        );
        // Words apart, or across punctuation, are no phrase.
        assert_eq!(
            tuned.rewrite_phrases("tear the page down"),
            "tear the page down"
        );
        assert_eq!(tuned.rewrite_phrases("pull. up"), "pull. up");
        assert_eq!(Analyzer::plain().rewrite_phrases("tear down"), "tear down");
    }

    #[test]
    fn a_question_implies_list_and_get() {
        let tuned = Analyzer::tuned();
        assert_eq!(
            tuned.implied_by("What's in the staging area?"),
            ["list", "get"]
        );
        assert!(tuned.implied_by("create a table").is_empty());
        assert!(Analyzer::plain().implied_by("what tables").is_empty());
    }
}
