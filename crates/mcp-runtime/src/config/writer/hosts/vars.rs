//! Variable references in a value (`${VAR}`, `${VAR:-default}`, `${env:VAR}`,
//! `${workspaceFolder}`, `${input:id}`) spelled as the host that will read them does, so that a
//! reference stays a reference: it is never expanded here, and never silently turned into a
//! literal the host would pass on as text.

use serde_json::Value;

/// How a host spells its variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Spelling {
    /// `${VAR}` and `${VAR:-default}` (mcpr, Claude Code, Gemini CLI).
    Standard,
    /// `${VAR}`, `${env:VAR}` and the editor variables (Cursor).
    Cursor,
    /// `${env:VAR}` and the editor variables, no defaults (VS Code).
    VsCode,
}

/// The editor's own variables (VS Code, Cursor), which other hosts do not read.
const EDITOR_VARIABLES: &[&str] = &[
    "workspaceFolder",
    "workspaceFolderBasename",
    "userHome",
    "pathSeparator",
    "/",
];

/// What a `${...}` names.
enum Reference<'a> {
    /// An environment variable, with its default when one is given.
    Env {
        name: &'a str,
        default: Option<&'a str>,
    },
    /// One of [`EDITOR_VARIABLES`].
    Editor,
    /// A VS Code input prompt (`${input:id}`).
    Input,
    /// Anything else, left as written.
    Other,
}

fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn classify(inner: &str) -> Reference<'_> {
    if EDITOR_VARIABLES.contains(&inner) {
        return Reference::Editor;
    }
    if inner.starts_with("input:") {
        return Reference::Input;
    }
    let bare = inner.strip_prefix("env:").unwrap_or(inner);
    let (name, default) = match bare.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (bare, None),
    };
    if is_name(name) {
        Reference::Env { name, default }
    } else {
        Reference::Other
    }
}

/// `value` with each reference spelled for `spelling`; a reference the host cannot read is an
/// error saying which.
pub(super) fn respell(value: &str, spelling: Spelling, host: &str) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let whole = &rest[start..start + len + 1];
        let inner = &whole[2..whole.len() - 1];
        let spelled = match (classify(inner), spelling) {
            (Reference::Input, _) => {
                return Err(format!(
                    "`{whole}` is a VS Code input prompt; put the value, or a ${{VAR}} \
                     reference, in its place first"
                ));
            }
            (Reference::Editor, Spelling::Standard) => {
                return Err(format!(
                    "`{whole}` is an editor variable, which {host} does not read"
                ));
            }
            (Reference::Env { name, default }, Spelling::Standard) => match default {
                Some(default) => format!("${{{name}:-{default}}}"),
                None => format!("${{{name}}}"),
            },
            (
                Reference::Env {
                    default: Some(_), ..
                },
                Spelling::VsCode,
            ) => {
                return Err(format!(
                    "`{whole}` has a default, which VS Code does not read (only ${{env:VAR}})"
                ));
            }
            (Reference::Env { name, .. }, Spelling::VsCode) => format!("${{env:{name}}}"),
            _ => whole.to_owned(),
        };
        out.push_str(&spelled);
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Every string inside `value` respelled; an error names the field (`env.TOKEN`).
pub(super) fn respell_all(
    value: &mut Value,
    spelling: Spelling,
    host: &str,
    field: &str,
) -> Result<(), String> {
    match value {
        Value::String(s) => {
            *s = respell(s, spelling, host).map_err(|e| format!("field `{field}`: {e}"))?;
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                respell_all(item, spelling, host, &format!("{field}[{i}]"))?;
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let inner = if field.is_empty() {
                    key.clone()
                } else {
                    format!("{field}.{key}")
                };
                respell_all(item, spelling, host, &inner)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The variable `value` consists of, when it is exactly one `${VAR}` (or `${env:VAR}`) without
/// a default: what Codex can take by name (`env_vars`, `env_http_headers`).
pub(super) fn whole_reference(value: &str) -> Option<&str> {
    let inner = value.strip_prefix("${")?.strip_suffix('}')?;
    match classify(inner) {
        Reference::Env {
            name,
            default: None,
        } if !inner.contains('}') => Some(name),
        _ => None,
    }
}

/// Whether `value` holds a reference at all.
pub(super) fn has_reference(value: &str) -> bool {
    value
        .find("${")
        .is_some_and(|start| value[start..].contains('}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_respelled_not_expanded() {
        let vs = |v| respell(v, Spelling::VsCode, "VS Code");
        assert_eq!(vs("Bearer ${TOKEN}").unwrap(), "Bearer ${env:TOKEN}");
        assert_eq!(vs("${workspaceFolder}/x").unwrap(), "${workspaceFolder}/x");
        assert!(vs("${A:-b}").unwrap_err().contains("default"));
        let std = |v| respell(v, Spelling::Standard, "Claude Code");
        assert_eq!(std("${env:KEY}-${B:-c}").unwrap(), "${KEY}-${B:-c}");
        assert!(
            std("${workspaceFolder}")
                .unwrap_err()
                .contains("Claude Code")
        );
        assert!(std("${input:pat}").unwrap_err().contains("input"));
        assert_eq!(std("plain $HOME {x}").unwrap(), "plain $HOME {x}");
        assert_eq!(
            respell("${env:A} ${B}", Spelling::Cursor, "Cursor").unwrap(),
            "${env:A} ${B}"
        );
    }

    #[test]
    fn whole_references_are_names() {
        assert_eq!(whole_reference("${TOKEN}"), Some("TOKEN"));
        assert_eq!(whole_reference("${env:TOKEN}"), Some("TOKEN"));
        assert_eq!(whole_reference("${A:-b}"), None);
        assert_eq!(whole_reference("x${A}"), None);
        assert!(has_reference("a ${B} c"));
        assert!(!has_reference("a $B c"));
    }
}
