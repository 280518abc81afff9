//! The arguments of a `mcpr call`: read (inline JSON, `@FILE`, `-` for stdin, or `key=value`
//! words typed by the tool's input schema) and, unless `--no-validate`, checked against that
//! schema before anything is sent ([`super::argument_check`]).
//!
//! The schema comes from the per-user tool cache when it has the tool, so a call whose
//! arguments pass goes straight to the server without listing its tools. Arguments the cached
//! schema refuses, or a tool it lacks, are judged again on the server's live list (the cache
//! may be older than the server), which is then cached for the next call.

use std::io::Read as _;

use mcp_runtime::cache::{CacheKey, ToolCache};
use mcp_runtime::client::ToolDefinition;
use mcp_runtime::config::Discovery;
use serde_json::{Map, Value};

use crate::cmd::argument_check::{check_shown, with_parameters};
use crate::connect::OneShot;
use crate::exit::Failure;

/// The tool list of one server as the tool cache last saw it.
pub(crate) struct KnownTools {
    cache: Option<ToolCache>,
    key: Option<CacheKey>,
}

impl KnownTools {
    /// The cache entry of `server` among the servers of `discovery`.
    pub(crate) fn new(discovery: &Discovery, server: &str) -> Self {
        KnownTools {
            cache: ToolCache::user_default(),
            key: discovery
                .configs
                .get(server)
                .map(|config| CacheKey::new(server, &discovery.cwd, config)),
        }
    }

    fn cached(&self) -> Option<Vec<ToolDefinition>> {
        self.cache.as_ref()?.get(self.key.as_ref()?)
    }

    fn remember(&self, tools: &[ToolDefinition]) {
        if let (Some(cache), Some(key)) = (&self.cache, &self.key) {
            cache.put(key, tools);
        }
    }
}

/// The arguments of the call to `target` (server, tool), typed by the tool's input schema
/// and, with `validate`, checked against it: a tool the server does not list, or arguments
/// its schema refuses, fail with exit 2 before anything is sent. Without `validate`, the
/// schema is looked up only when `key=value` words need their types.
pub(crate) async fn checked(
    servers: &OneShot,
    target: &(String, String),
    raw: &[String],
    validate: bool,
    known: KnownTools,
) -> Result<Option<Map<String, Value>>, Failure> {
    let given = Given::read(raw)?;
    if !validate && !matches!(given, Given::Pairs(_)) {
        return given.typed(None);
    }
    // What the cache knows is enough when the arguments pass it.
    if let Some(cached) = known.cached()
        && let Some(tool) = cached.iter().find(|t| t.name == target.1)
        && let Ok(arguments) = judged(&given, &tool.input_schema.to_value(), validate)
    {
        return Ok(arguments);
    }
    let Some(tools) = servers.tools(&target.0).await else {
        // No list to judge by: the server judges.
        return given.typed(None);
    };
    known.remember(&tools);
    let Some(tool) = tools.iter().find(|t| t.name == target.1) else {
        let (server, tool) = (crate::term::line(&target.0), crate::term::line(&target.1));
        return Err(Failure::usage(format!(
            "server `{server}` has no tool named `{tool}`{} (see `mcpr tools {server}`)",
            crate::suggest::did_you_mean(&target.1, tools.iter().map(|t| t.name.as_str()))
        )));
    };
    judged(&given, &tool.input_schema.to_value(), validate)
}

/// The `given` arguments typed by `schema`, and with `validate` checked against it.
fn judged(
    given: &Given<'_>,
    schema: &Value,
    validate: bool,
) -> Result<Option<Map<String, Value>>, Failure> {
    let arguments = given.typed(Some(schema))?;
    if validate {
        let empty = Map::new();
        check_shown(schema, arguments.as_ref().unwrap_or(&empty)).map_err(Failure::usage)?;
    }
    Ok(arguments)
}

/// Tool arguments as `mcpr call` and the shell take them: inline JSON (named `inline` in
/// errors), `@FILE`, or with `stdin` also `-` for standard input.
pub(crate) fn read_arguments(
    raw: &str,
    inline: &str,
    stdin: bool,
) -> Result<Map<String, Value>, String> {
    let (text, origin) = if stdin && raw == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read arguments from stdin: {e}"))?;
        (text, "stdin")
    } else if let Some(path) = raw.strip_prefix('@') {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read arguments from {path}: {e}"))?;
        (text, path)
    } else {
        (raw.to_owned(), inline)
    };
    json_object(&text, origin)
}

/// Parse tool arguments read from `origin` (named in the error): they must be a JSON object.
pub(crate) fn json_object(text: &str, origin: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "arguments from {origin} must be a JSON object, not {other}"
        )),
        Err(e) => Err(format!("arguments from {origin} are not valid JSON: {e}")),
    }
}

/// The arguments as given, read once (stdin can be read only once) and typed later.
enum Given<'a> {
    /// No arguments.
    Nothing,
    /// A JSON object (inline, from `@FILE` or from stdin).
    Object(Map<String, Value>),
    /// `key=value` words, typed by the schema.
    Pairs(&'a [String]),
}

impl<'a> Given<'a> {
    /// Read ARGS: one inline JSON object, `@file` or `-` (stdin), or `key=value` words.
    fn read(raw: &'a [String]) -> Result<Self, Failure> {
        match raw {
            [] => Ok(Given::Nothing),
            [one] if !crate::cmd::arguments::is_pair(one) => {
                read_arguments(one, "the command line", true)
                    .map(Given::Object)
                    .map_err(Failure::usage)
            }
            words => Ok(Given::Pairs(words)),
        }
    }

    /// The arguments object, `key=value` words typed by the tool's input `schema` (when
    /// known); `None` means no arguments. A bad word gets an error that lists the tool's
    /// parameters.
    fn typed(&self, schema: Option<&Value>) -> Result<Option<Map<String, Value>>, Failure> {
        match self {
            Given::Nothing => Ok(None),
            Given::Object(object) => Ok(Some(object.clone())),
            Given::Pairs(words) => crate::cmd::arguments::from_pairs(words, schema)
                .map(Some)
                .map_err(|e| match schema {
                    Some(schema) => Failure::usage(with_parameters(e, schema)),
                    None => Failure::usage(e),
                }),
        }
    }
}

#[cfg(test)]
fn parse_arguments(
    raw: &[String],
    schema: Option<&Value>,
) -> Result<Option<Map<String, Value>>, Failure> {
    Given::read(raw)?.typed(schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit;

    #[test]
    fn arguments_must_be_a_json_object_or_pairs() {
        let words = |list: &[&str]| list.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(parse_arguments(&[], None).unwrap().is_none());
        assert_eq!(
            parse_arguments(&words(&[r#"{"a": 1}"#]), None)
                .unwrap()
                .unwrap()["a"],
            1
        );
        assert_eq!(
            parse_arguments(&words(&["[1]"]), None).unwrap_err().code,
            exit::USAGE
        );
        assert_eq!(
            parse_arguments(&words(&["{oops"]), None).unwrap_err().code,
            exit::USAGE
        );
        assert_eq!(
            parse_arguments(&words(&["@/definitely/missing"]), None)
                .unwrap_err()
                .code,
            exit::USAGE
        );
        let schema = serde_json::json!({"properties": {"n": {"type": "string"}}});
        assert_eq!(
            parse_arguments(&words(&["n=5"]), Some(&schema))
                .unwrap()
                .unwrap()["n"],
            "5"
        );
        let error = parse_arguments(&words(&["m=5"]), Some(&schema)).unwrap_err();
        assert!(
            error.message.contains("parameters:\n  n  string"),
            "{error}"
        );
    }
}
