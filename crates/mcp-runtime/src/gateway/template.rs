//! Whether a URI is one that a server's resource template (RFC 6570) can produce.
//!
//! The gateway reads a URI that no server listed only from a server whose template matches it,
//! so the matching is deliberately strict: each expression matches only the characters its
//! operator can produce (a simple `{id}` never spans a `/`), and a URI with a `.` or `..` path
//! segment never matches, so that a template cannot be used to climb out of the place it
//! names. Crates that implement RFC 6570 expand templates; few match them, none widely used,
//! and this is the part a boundary depends on, so it is kept small and here.

/// The longest URI matched against a template; longer ones never match (bounds the work).
const MAX_URI: usize = 4096;

/// One piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// An expression, by its operator (`'\0'` for none).
    Expression(char),
}

/// A parsed URI template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UriTemplate {
    parts: Vec<Part>,
}

impl UriTemplate {
    /// Parse `template`; `None` when it is not a valid template (such a template matches
    /// nothing).
    pub(super) fn parse(template: &str) -> Option<UriTemplate> {
        let mut parts = Vec::new();
        let mut rest = template;
        while !rest.is_empty() {
            match rest.find('{') {
                Some(0) => {
                    let end = rest.find('}')?;
                    let body = &rest[1..end];
                    let operator = match body.chars().next()? {
                        c @ ('+' | '#' | '.' | '/' | ';' | '?' | '&') => c,
                        _ => '\0',
                    };
                    let names = if operator == '\0' { body } else { &body[1..] };
                    let valid_name = |name: &str| {
                        let name = name.strip_suffix('*').unwrap_or(name);
                        let name = name.split_once(':').map_or(name, |(n, _)| n);
                        !name.is_empty()
                            && name.chars().all(|c| {
                                c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '%'
                            })
                    };
                    if !names.split(',').all(valid_name) {
                        return None;
                    }
                    parts.push(Part::Expression(operator));
                    rest = &rest[end + 1..];
                }
                Some(start) => {
                    parts.push(Part::Literal(rest[..start].to_owned()));
                    rest = &rest[start..];
                }
                None => {
                    if rest.contains('}') {
                        return None;
                    }
                    parts.push(Part::Literal(rest.to_owned()));
                    rest = "";
                }
            }
        }
        Some(UriTemplate { parts })
    }

    /// Whether `uri` is an expansion of this template.
    pub(super) fn matches(&self, uri: &str) -> bool {
        if uri.len() > MAX_URI || has_dot_segment(uri) {
            return false;
        }
        let text = uri.as_bytes();
        // Positions in `text` reachable after each part: linear in the parts, quadratic at
        // worst in the (bounded) URI length, no backtracking blow-up.
        let mut reachable = vec![false; text.len() + 1];
        reachable[0] = true;
        for part in &self.parts {
            let mut next = vec![false; text.len() + 1];
            for start in (0..=text.len()).filter(|&i| reachable[i]) {
                match part {
                    Part::Literal(literal) => {
                        if text[start..].starts_with(literal.as_bytes()) {
                            next[start + literal.len()] = true;
                        }
                    }
                    Part::Expression(operator) => {
                        for end in expansion_ends(*operator, text, start) {
                            next[end] = true;
                        }
                    }
                }
            }
            reachable = next;
        }
        reachable[text.len()]
    }
}

/// Every end position of an expansion of an expression with `operator` starting at `start`.
fn expansion_ends(operator: char, text: &[u8], start: usize) -> Vec<usize> {
    // The leading character the operator writes, and what may follow it.
    let (lead, allowed): (Option<u8>, fn(u8) -> bool) = match operator {
        '+' => (None, reserved_or_unreserved),
        '#' => (Some(b'#'), reserved_or_unreserved),
        '.' => (Some(b'.'), unreserved_or_list),
        '/' => (Some(b'/'), |c| unreserved_or_list(c) || c == b'/'),
        ';' => (Some(b';'), |c| {
            unreserved_or_list(c) || c == b'=' || c == b';'
        }),
        '?' => (Some(b'?'), |c| {
            unreserved_or_list(c) || c == b'=' || c == b'&'
        }),
        '&' => (Some(b'&'), |c| {
            unreserved_or_list(c) || c == b'=' || c == b'&'
        }),
        _ => (None, unreserved_or_list),
    };
    let mut ends = Vec::new();
    let mut i = start;
    // A simple or reserved expansion (no lead) must produce something: an empty one would let
    // `items/{id}` stand for `items/`, which the server never offered.
    if let Some(lead) = lead {
        // An undefined variable expands to nothing, operator included.
        ends.push(start);
        if text.get(i) != Some(&lead) {
            return ends;
        }
        i += 1;
    }
    while i < text.len() && allowed(text[i]) {
        i += 1;
        ends.push(i);
    }
    ends
}

/// RFC 3986 unreserved characters, `%` of percent-encoding, and `,` between list values.
fn unreserved_or_list(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~' | b'%' | b',')
}

/// What `{+var}` and `{#var}` may produce: unreserved and reserved characters.
fn reserved_or_unreserved(c: u8) -> bool {
    unreserved_or_list(c)
        || matches!(
            c,
            b':' | b'/'
                | b'?'
                | b'#'
                | b'['
                | b']'
                | b'@'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b';'
                | b'='
        )
}

/// Whether `uri` has a `.` or `..` segment once decoded as a lenient server might: percent-
/// encoding undone (so `..%2F` climbs too), backslashes as separators, and the query and
/// fragment included (a server that joins the URI to a directory reads them as path).
fn has_dot_segment(uri: &str) -> bool {
    let decoded = super::filter::fully_decoded(uri);
    decoded.split(['/', '\\', '?', '#', ';']).any(|segment| {
        let segment = segment.trim();
        segment == "." || segment == ".."
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(template: &str, uri: &str) -> bool {
        UriTemplate::parse(template).is_some_and(|t| t.matches(uri))
    }

    #[test]
    fn simple_expressions_match_one_segment() {
        assert!(matches("mock://a/items/{id}", "mock://a/items/42"));
        assert!(matches("mock://a/items/{id}", "mock://a/items/a%2Fb"));
        assert!(!matches("mock://a/items/{id}", "mock://a/items/"));
        assert!(!matches("mock://a/items/{id}", "mock://a/items/1/2"));
        assert!(!matches("mock://a/items/{id}", "mock://b/items/1"));
        assert!(!matches("mock://a/items/{id}", "mock://a/items/1?x=1"));
        assert!(matches("db://{table}/{id}", "db://users/7"));
        assert!(!matches("db://{table}/{id}", "db://users"));
    }

    #[test]
    fn reserved_expressions_span_segments() {
        assert!(matches("file:///srv/{+path}", "file:///srv/docs/a.md"));
        assert!(!matches("file:///srv/{+path}", "file:///etc/passwd"));
        assert!(!matches("file:///srv/{+path}", "file:///srv/"));
    }

    #[test]
    fn dot_segments_never_match() {
        assert!(!matches("file:///srv/{+path}", "file:///srv/../etc/passwd"));
        assert!(!matches("file:///srv/{+path}", "file:///srv/docs/%2e%2E/x"));
        assert!(!matches("file:///srv/{+path}", "file:///srv/./x"));
        assert!(!matches("mock://a/items/{id}", "mock://a/items/.."));
        assert!(matches("file:///srv/{+path}", "file:///srv/a..b/.hidden"));
        // Encoded separators, queries and fragments a lenient server reads as path.
        assert!(!matches(
            "file:///srv/{+path}",
            "file:///srv/..%2Fetc/passwd"
        ));
        assert!(!matches(
            "file:///srv/{+path}",
            "file:///srv/%252e%252e/etc"
        ));
        assert!(!matches(
            "file:///srv/{+path}",
            "file:///srv/x?/../../etc/passwd"
        ));
        assert!(!matches(
            "file:///srv/{+path}",
            "file:///srv/x#/../../etc/passwd"
        ));
        assert!(!matches(
            "file:///srv/{+path}",
            "file:///srv/..;/etc/passwd"
        ));
        assert!(!matches("mock://a/items/{id}", "mock://a/items/..%5Cx"));
        assert!(matches("mock://a/items/{id}", "mock://a/items/a%2Fb"));
    }

    #[test]
    fn operators() {
        assert!(matches("s://x{?q,n}", "s://x?q=1&n=2"));
        assert!(matches("s://x{?q}", "s://x"));
        assert!(!matches("s://x{?q}", "s://x/y"));
        assert!(matches("s://x{/seg*}", "s://x/a/b"));
        assert!(matches("s://x/{name}{.ext}", "s://x/a.txt"));
        assert!(matches("s://x{#frag}", "s://x#f/g"));
    }

    #[test]
    fn invalid_templates_match_nothing() {
        assert!(UriTemplate::parse("s://{unclosed").is_none());
        assert!(UriTemplate::parse("s://x}").is_none());
        assert!(UriTemplate::parse("s://{}").is_none());
        assert!(UriTemplate::parse("s://{a b}").is_none());
        assert!(matches("no/expressions", "no/expressions"));
        assert!(!matches("no/expressions", "no/expressions/"));
    }

    #[test]
    fn long_uris_are_bounded() {
        let uri = format!("s://{}", "a".repeat(MAX_URI));
        assert!(!matches("s://{+p}", &uri));
        let uri = format!("s://{}", "a".repeat(500));
        assert!(matches("s://{+a}{+b}{+c}{+d}", &uri));
    }
}
