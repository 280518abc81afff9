//! The parameters of a `WWW-Authenticate` challenge that decide what a 401 or 403 asks for
//! (`scope`, `error`), read the same way with or without OAuth built in.

/// The `scope` parameter of a `WWW-Authenticate: Bearer` challenge, split.
#[cfg_attr(not(feature = "oauth"), allow(dead_code))]
pub(crate) fn challenge_scope(challenge: &str) -> Vec<String> {
    challenge_param(challenge, "scope")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Whether a `WWW-Authenticate` challenge says `error="insufficient_scope"`.
pub(crate) fn is_insufficient_scope(challenge: &str) -> bool {
    challenge_param(challenge, "error").as_deref() == Some("insufficient_scope")
}

/// One auth-param of a challenge (`name="value"` or `name=token`). Not rmcp's
/// `WWWAuthenticateParams`: it takes `scope=` inside another parameter's name for the scope,
/// and drops a `resource_metadata` URL on a loopback or private address, which would make a
/// local OAuth server look like one that wants a static token.
pub(crate) fn challenge_param(challenge: &str, name: &str) -> Option<String> {
    let mut rest = challenge;
    while let Some(at) = find_param(rest, name) {
        let value = rest[at + name.len()..].trim_start();
        let Some(value) = value.strip_prefix('=') else {
            rest = &rest[at + name.len()..];
            continue;
        };
        let value = value.trim_start();
        if let Some(quoted) = value.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.extend(chars.next()),
                    '"' => return Some(out),
                    c => out.push(c),
                }
            }
            return Some(out);
        }
        return Some(
            value
                .split([',', ' '])
                .next()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    None
}

/// Where `name` starts as a whole parameter name (after start, space or comma).
fn find_param(text: &str, name: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find(name) {
        let at = from + found;
        let before_ok = at == 0 || matches!(lower.as_bytes()[at - 1], b' ' | b',' | b'\t');
        let after = lower[at + name.len()..].trim_start();
        if before_ok && after.starts_with('=') {
            return Some(at);
        }
        from = at + name.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters() {
        let challenge = r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="http://h/.well-known/oauth-protected-resource/mcp""#;
        assert!(is_insufficient_scope(challenge));
        assert_eq!(challenge_scope(challenge), ["mcp:basic", "mcp:write"]);
        let plain = r#"Bearer resource_metadata="http://h/x", error=invalid_token"#;
        assert!(!is_insufficient_scope(plain));
        assert!(challenge_scope(plain).is_empty());
        // `scope` inside another parameter's name is not the scope parameter.
        assert!(challenge_scope(r#"Bearer myscope="a""#).is_empty());
    }
}
