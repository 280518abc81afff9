//! The kinds of value a request carries and a tool takes: a request that names a URL, a path, a
//! time zone, coordinates, an SQL statement, a date or a commit most likely wants a tool with a
//! parameter for it ("cat /etc/hosts" a file tool, "2pm Australia/Sydney in Europe/Madrid" a
//! time tool). Words do not say this; the shape of the values does. The index makes each kind a
//! term of its own, in a field of its own, so that BM25F weighs it by its rarity like any word.

use serde_json::Value;

/// A set of argument kinds, one bit each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ArgumentKinds(u8);

impl ArgumentKinds {
    pub(crate) const URL: Self = Self(1);
    pub(crate) const PATH: Self = Self(1 << 1);
    pub(crate) const TIME_ZONE: Self = Self(1 << 2);
    pub(crate) const COORDINATES: Self = Self(1 << 3);
    pub(crate) const SQL: Self = Self(1 << 4);
    /// A bare number (many tools take one, so as a term it is common and weighs little).
    pub(crate) const NUMBER: Self = Self(1 << 5);
    /// A calendar date (`2025-05-10`).
    pub(crate) const DATE: Self = Self(1 << 6);
    /// A commit (`a1b2c3d`, `HEAD~3`).
    pub(crate) const REVISION: Self = Self(1 << 7);

    fn insert(&mut self, kind: Self) {
        self.0 |= kind.0;
    }

    #[cfg(test)]
    fn contains(self, kind: Self) -> bool {
        self.0 & kind.0 == kind.0
    }

    /// One index term per kind in the set: strings no text analysis produces.
    pub(crate) fn terms(self) -> impl Iterator<Item = &'static str> {
        const TERMS: [&str; 8] = [
            "\u{1}url",
            "\u{1}path",
            "\u{1}time-zone",
            "\u{1}coordinates",
            "\u{1}sql",
            "\u{1}number",
            "\u{1}date",
            "\u{1}revision",
        ];
        (0..TERMS.len())
            .filter(move |bit| self.0 & (1 << bit) != 0)
            .map(|bit| TERMS[bit])
    }

    /// The kinds of value `schema`'s parameters take, from their names, types and descriptions.
    pub(crate) fn of_schema(schema: &Value) -> Self {
        let mut kinds = Self::default();
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return kinds;
        };
        for (name, property) in properties {
            let name = name.to_lowercase();
            let description = property
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_lowercase();
            let opening: Vec<&str> = description.split_whitespace().take(6).collect();
            if ["url", "uri", "href"].iter().any(|k| name.contains(k))
                || opening
                    .iter()
                    .any(|w| w.trim_matches(|c: char| !c.is_alphanumeric()) == "url")
            {
                kinds.insert(Self::URL);
            }
            if name.ends_with("path")
                || name.ends_with("paths")
                || ["source", "destination", "directory", "dir"].contains(&name.as_str())
            {
                kinds.insert(Self::PATH);
            }
            if name.ends_with("date")
                || name.ends_with("timestamp")
                || name == "since"
                || description.contains("iso 8601")
                || description.contains("yyyy-mm-dd")
                || description.contains("rfc3339")
            {
                kinds.insert(Self::DATE);
            }
            if ["sha", "revision", "commit_id", "ref", "contains"].contains(&name.as_str())
                || description.contains("commit sha")
                || description.contains("the sha")
            {
                kinds.insert(Self::REVISION);
            }
            if name.contains("timezone") || description.contains("timezone") {
                kinds.insert(Self::TIME_ZONE);
            }
            if [
                "latitude",
                "longitude",
                "lat",
                "lng",
                "location",
                "locations",
            ]
            .contains(&name.as_str())
                || description.contains("latitude")
            {
                kinds.insert(Self::COORDINATES);
            }
            if (name == "query" || name == "sql") && description.contains("sql") {
                kinds.insert(Self::SQL);
            }
            let numeric = matches!(
                property.get("type").and_then(Value::as_str),
                Some("integer" | "number")
            );
            if numeric || name.ends_with("number") {
                kinds.insert(Self::NUMBER);
            }
        }
        kinds
    }
}

/// A request read for its values.
pub(crate) struct RequestValues {
    /// The kinds of value it carries.
    pub(crate) kinds: ArgumentKinds,
    /// The request without its values (paths, URLs, time zones, dates, commits): what it asks
    /// for, in words.
    pub(crate) prose: String,
    /// The values, as written.
    pub(crate) values: String,
}

/// Reads the values a request carries and separates them from its prose.
pub(crate) fn read_request(text: &str) -> RequestValues {
    let mut kinds = ArgumentKinds::default();
    let mut prose = String::with_capacity(text.len());
    let mut values = String::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.iter().filter(|w| SQL_WORDS.contains(w)).count() >= 2 {
        kinds.insert(ArgumentKinds::SQL);
    }
    for (at, raw) in words.iter().enumerate() {
        let next = words.get(at + 1).copied().unwrap_or_default();
        let value = value_kind(raw, next);
        if let Some(kind) = value {
            kinds.insert(kind);
        }
        let digits = raw
            .trim_matches(|c: char| c == '.' || AROUND.contains(c))
            .trim_start_matches('#');
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            kinds.insert(ArgumentKinds::NUMBER);
        }
        let out = if value.is_some() {
            &mut values
        } else {
            &mut prose
        };
        out.push_str(raw);
        out.push(' ');
        // A file's extension says what it holds (an image, a log): that is prose.
        if value == Some(ArgumentKinds::PATH)
            && let Some((_, extension)) = raw
                .trim_end_matches(|c: char| !c.is_alphanumeric())
                .rsplit_once('.')
            && EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str())
        {
            prose.push_str(extension);
            prose.push(' ');
        }
    }
    RequestValues {
        kinds,
        prose,
        values,
    }
}

/// The kind of value `raw` is, if it is one (`next` is the word after it, for coordinates
/// written as two words).
fn value_kind(raw: &str, next: &str) -> Option<ArgumentKinds> {
    let word = bare(raw);
    if word.contains("://") || word.starts_with("www.") {
        Some(ArgumentKinds::URL)
    } else if is_time_zone(word) {
        Some(ArgumentKinds::TIME_ZONE)
    } else if is_date(word) {
        Some(ArgumentKinds::DATE)
    } else if is_revision(word) {
        Some(ArgumentKinds::REVISION)
    } else if is_coordinate_pair(raw.trim_end_matches(['?', '.', ')']), next) {
        Some(ArgumentKinds::COORDINATES)
    } else if is_path(word) {
        Some(ArgumentKinds::PATH)
    } else {
        None
    }
}

/// Quotes, brackets and punctuation that stand around a word.
const AROUND: &str = "'\"`()[]{}<>,;:?!";

/// `raw` without the quotes, brackets and punctuation around it (a dot stays: `.env`).
fn bare(raw: &str) -> &str {
    raw.trim_matches(|c: char| AROUND.contains(c))
}

/// SQL keywords as a statement writes them (upper case): two of them make a statement.
const SQL_WORDS: &[&str] = &[
    "SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER", "DROP", "FROM", "INTO", "WHERE",
    "VALUES", "TABLE", "SET", "JOIN",
];

/// File extensions that make a word a file's name (`package.json`, `deploy.log`).
const EXTENSIONS: &[&str] = &[
    "c", "cfg", "conf", "cpp", "cs", "css", "csv", "env", "gif", "go", "h", "html", "ini", "java",
    "jpeg", "jpg", "js", "json", "jsx", "kt", "lock", "log", "md", "pdf", "php", "png", "py", "rb",
    "rs", "sh", "sql", "svg", "swift", "toml", "ts", "tsx", "txt", "xml", "yaml", "yml", "zip",
];

/// The areas of IANA time zone names (`Europe/Madrid`), and the abbreviations agents write.
const ZONE_AREAS: &[&str] = &[
    "Africa",
    "America",
    "Antarctica",
    "Asia",
    "Atlantic",
    "Australia",
    "Europe",
    "Indian",
    "Pacific",
    "Etc",
];
const ZONE_NAMES: &[&str] = &[
    "UTC", "GMT", "PST", "PDT", "EST", "EDT", "CET", "CEST", "JST",
];

fn is_time_zone(word: &str) -> bool {
    if ZONE_NAMES.contains(&word) {
        return true;
    }
    let Some((area, city)) = word.split_once('/') else {
        return false;
    };
    ZONE_AREAS.contains(&area) && city.starts_with(|c: char| c.is_ascii_uppercase())
}

/// A path (`~/code/shop`, `src/main.rs`, `/etc/hosts`) or a file's name (`package.json`).
fn is_path(word: &str) -> bool {
    let word = word.trim_end_matches('.');
    if word.starts_with("~/") || word.starts_with("./") || word.starts_with("../") {
        return true;
    }
    let inner_slash = word
        .char_indices()
        .any(|(at, c)| c == '/' && at > 0 && at + 1 < word.len())
        || (word.starts_with('/') && word.len() > 1);
    if inner_slash && word.chars().any(char::is_alphabetic) {
        return true;
    }
    match word.rsplit_once('.') {
        Some((stem, extension)) => {
            !stem.is_empty()
                && stem.chars().any(char::is_alphabetic)
                && EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str())
        }
        None => false,
    }
}

/// `2025-05-10`, alone or opening an ISO 8601 date and time.
fn is_date(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.len() >= 10
        && bytes[..10].iter().enumerate().all(|(at, b)| match at {
            4 | 7 => *b == b'-',
            _ => b.is_ascii_digit(),
        })
        && bytes.get(10).is_none_or(|b| matches!(b, b'T' | b' '))
}

/// A commit: 7 to 40 hexadecimal digits with a letter and a digit, or `HEAD` with `~` or `^`.
fn is_revision(word: &str) -> bool {
    if word.starts_with("HEAD~") || word.starts_with("HEAD^") {
        return true;
    }
    (7..=40).contains(&word.len())
        && word
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        && word.bytes().any(|b| b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_alphabetic())
}

/// A latitude and longitude written as `46.85,-121.76` (one word) or `41.40, 2.17` (two).
fn is_coordinate_pair(word: &str, next: &str) -> bool {
    let (first, second) = match word.split_once(',') {
        Some((first, "")) => (first, next.trim_end_matches(['?', '.', ')', ';'])),
        Some((first, second)) => (first, second),
        None => return false,
    };
    is_degrees(first.trim_start_matches('(')) && is_degrees(second)
}

fn is_degrees(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let Some((whole, fraction)) = digits.split_once('.') else {
        return false;
    };
    (1..=3).contains(&whole.len())
        && whole.bytes().all(|b| b.is_ascii_digit())
        && !fraction.is_empty()
        && fraction.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_names_the_kinds_of_its_values() {
        let kinds = |text: &str| read_request(text).kinds;
        assert!(kinds("cat /etc/hosts please").contains(ArgumentKinds::PATH));
        assert!(kinds("last 5 commits of ~/code/shop").contains(ArgumentKinds::PATH));
        assert!(kinds("how big is package.json?").contains(ArgumentKinds::PATH));
        assert!(!kinds("ship 2.4.1 today").contains(ArgumentKinds::PATH));
        assert!(kinds("open https://example.org/a").contains(ArgumentKinds::URL));
        assert!(!kinds("open https://example.org/a").contains(ArgumentKinds::PATH));
        let zones = kinds("2pm Australia/Sydney in Europe/Madrid");
        assert!(zones.contains(ArgumentKinds::TIME_ZONE));
        assert!(!zones.contains(ArgumentKinds::PATH));
        assert!(kinds("elevation of 46.8523,-121.7603?").contains(ArgumentKinds::COORDINATES));
        assert!(kinds("EXIF says 41.4036, 2.1744; address?").contains(ArgumentKinds::COORDINATES));
        assert!(!kinds("version 41.4036").contains(ArgumentKinds::COORDINATES));
        assert!(kinds("SELECT sku FROM products").contains(ArgumentKinds::SQL));
        assert!(!kinds("select the second tab").contains(ArgumentKinds::SQL));
        assert!(kinds("merge PR #230").contains(ArgumentKinds::NUMBER));
        assert!(kinds("commits since 2025-05-10").contains(ArgumentKinds::DATE));
        assert!(kinds("after 2024-01-15T14:30:25").contains(ArgumentKinds::DATE));
        assert!(!kinds("v2025-05").contains(ArgumentKinds::DATE));
        assert!(kinds("show commit a1b2c3d").contains(ArgumentKinds::REVISION));
        assert!(kinds("src/cart.ts at HEAD~3").contains(ArgumentKinds::REVISION));
        assert!(!kinds("a deadbeef moment").contains(ArgumentKinds::REVISION));
        assert_eq!(
            kinds("what changed since yesterday"),
            ArgumentKinds::default()
        );
    }

    #[test]
    fn a_request_s_values_are_told_from_its_prose() {
        let request = read_request("last 5 commits of ~/code/shop since 2025-05-10");
        assert_eq!(request.prose.trim(), "last 5 commits of since");
        assert_eq!(request.values.trim(), "~/code/shop 2025-05-10");
        let request = read_request("show me screenshots/login-bug.png");
        assert_eq!(
            request.prose.trim(),
            "show me png",
            "the extension says what it is"
        );
        let request = read_request("SELECT id FROM users");
        assert_eq!(request.prose.trim(), "SELECT id FROM users");
        assert!(request.values.is_empty());
    }

    #[test]
    fn odd_requests_are_read_without_panicking() {
        for text in [
            "",
            " ",
            "/",
            "~/",
            "./",
            "é/ü",
            "/é",
            "a.",
            ".png",
            "1.,",
            "1.5,",
            ",2.5",
            "-.5,1.",
            "HEAD~",
            "HEAD^^",
            "2025-13-99",
            "2025-01-0",
            "ﬁle.ｊｓｏｎ",
            "🦀/🦀.rs",
            "#",
            "##1",
            "SELECT",
            "a\u{0}b/c",
            "x://",
            "www.",
        ] {
            let request = read_request(text);
            assert!(request.prose.len() + request.values.len() <= 2 * text.len() + 8);
        }
    }

    #[test]
    fn a_schema_names_the_kinds_its_parameters_take() {
        let schema = json!({"properties": {
            "repo_path": {"type": "string"},
            "url": {"type": "string"},
            "source_timezone": {"type": "string", "description": "IANA timezone name"},
            "latitude": {"type": "number"},
            "query": {"type": "string", "description": "SELECT SQL query to run"},
            "start_timestamp": {"type": "string", "description": "ISO 8601 start"},
            "revision": {"type": "string"},
        }});
        let kinds = ArgumentKinds::of_schema(&schema);
        for kind in [
            ArgumentKinds::PATH,
            ArgumentKinds::URL,
            ArgumentKinds::TIME_ZONE,
            ArgumentKinds::COORDINATES,
            ArgumentKinds::SQL,
            ArgumentKinds::NUMBER,
            ArgumentKinds::DATE,
            ArgumentKinds::REVISION,
        ] {
            assert!(kinds.contains(kind), "{kind:?}");
        }
        let search =
            json!({"properties": {"query": {"type": "string", "description": "Search terms"}}});
        assert_eq!(ArgumentKinds::of_schema(&search), ArgumentKinds::default());
        assert_eq!(
            ArgumentKinds::of_schema(&json!({})),
            ArgumentKinds::default()
        );
    }
}
