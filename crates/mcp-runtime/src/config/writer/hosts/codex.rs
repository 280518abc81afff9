//! Codex's `config.toml`: a server is a `[mcp_servers.NAME]` table, edited with `toml_edit` so
//! that the rest of the file (comments, other tables, their order) stays as it was.
//!
//! Codex expands no `${VAR}`, but takes variables by name: an `env` value that is exactly
//! `${NAME}` for its own key becomes `env_vars`, an `Authorization: Bearer ${TOKEN}` header
//! `bearer_token_env_var`, a header that is exactly `${VAR}` `env_http_headers`. Any other
//! reference would reach the server as text, and is an error.

use std::path::Path;

use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, value};

use super::super::super::formats::line_col;
use super::super::super::{ConfigError, HttpKind, ServerConfig, Transport};
use super::vars::{has_reference, whole_reference};

/// A Codex config loaded for editing.
#[derive(Debug)]
pub(super) struct TomlFile {
    doc: DocumentMut,
}

impl TomlFile {
    /// Load `path`; a missing file is an empty one, one that does not parse is an error with
    /// line and column.
    pub(super) fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = super::super::read_or_empty(path)?;
        let doc = text.parse::<DocumentMut>().map_err(|e| {
            let (line, column) = line_col(&text, e.span().map_or(0, |span| span.start));
            ConfigError::Parse {
                path: path.to_owned(),
                line,
                column,
                message: e.message().to_owned(),
            }
        })?;
        Ok(TomlFile { doc })
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.doc
            .get("mcp_servers")
            .and_then(Item::as_table_like)
            .is_some_and(|servers| servers.contains_key(name))
    }

    /// Add or replace `[mcp_servers.NAME]`; returns the settings Codex has no field for.
    pub(super) fn set(&mut self, name: &str, config: &ServerConfig) -> Result<Vec<String>, String> {
        let (table, dropped) = server_table(config)?;
        let servers = self
            .doc
            .entry("mcp_servers")
            .or_insert_with(|| {
                let mut table = Table::new();
                // `[mcp_servers.NAME]` headers only, no empty `[mcp_servers]`.
                table.set_implicit(true);
                Item::Table(table)
            })
            .as_table_mut()
            .ok_or("`mcp_servers` is not a table of tables; edit the file by hand")?;
        servers.insert(name, Item::Table(table));
        Ok(dropped)
    }

    /// The new text of the file.
    pub(super) fn text(&self) -> String {
        self.doc.to_string()
    }
}

/// A literal for Codex: a value with a reference in it would reach the server as text.
fn literal(field: &str, text: &str) -> Result<String, String> {
    if has_reference(text) {
        return Err(format!(
            "field `{field}`: `{text}` refers to a variable, which Codex does not expand here"
        ));
    }
    Ok(text.to_owned())
}

fn strings<'a>(field: &str, items: impl IntoIterator<Item = &'a String>) -> Result<Array, String> {
    let mut array = Array::new();
    for item in items {
        array.push(literal(field, item)?);
    }
    Ok(array)
}

/// Milliseconds as Codex's seconds (whole seconds as an integer).
fn seconds(ms: u64) -> Item {
    if ms.is_multiple_of(1000) {
        value((ms / 1000) as i64)
    } else {
        value(ms as f64 / 1000.0)
    }
}

/// `config` as a `[mcp_servers.NAME]` table, and the settings Codex has no field for.
fn server_table(config: &ServerConfig) -> Result<(Table, Vec<String>), String> {
    let mut table = Table::new();
    let mut dropped = Vec::new();
    match &config.transport {
        Transport::Stdio(stdio) => {
            table.insert("command", value(literal("command", &stdio.command)?));
            if !stdio.args.is_empty() {
                table.insert("args", value(strings("args", &stdio.args)?));
            }
            let mut env = InlineTable::new();
            let mut env_vars: Vec<String> = Vec::new();
            for (key, text) in &stdio.env {
                if whole_reference(text) == Some(key.as_str()) {
                    env_vars.push(key.clone());
                } else {
                    env.insert(key, literal(&format!("env.{key}"), text)?.into());
                }
            }
            env_vars.extend(config.env_vars.iter().cloned());
            if !env.is_empty() {
                table.insert("env", value(env));
            }
            if !env_vars.is_empty() {
                table.insert("env_vars", value(strings("env_vars", &env_vars)?));
            }
            if let Some(cwd) = &stdio.cwd {
                table.insert("cwd", value(literal("cwd", &cwd.to_string_lossy())?));
            }
        }
        Transport::Http(http) => {
            if http.kind == HttpKind::Sse {
                return Err(
                    "it speaks the legacy SSE transport, and Codex speaks streamable HTTP only"
                        .into(),
                );
            }
            table.insert("url", value(literal("url", &http.url)?));
            let mut headers = InlineTable::new();
            let mut env_headers = InlineTable::new();
            let mut bearer = config.bearer_token_env_var.clone();
            for (name, text) in &http.headers {
                let token = text.strip_prefix("Bearer ").and_then(whole_reference);
                if name.eq_ignore_ascii_case("authorization") && token.is_some() && bearer.is_none()
                {
                    bearer = token.map(str::to_owned);
                } else if let Some(var) = whole_reference(text) {
                    env_headers.insert(name, var.into());
                } else {
                    headers.insert(name, literal(&format!("headers.{name}"), text)?.into());
                }
            }
            for (name, var) in &config.env_headers {
                env_headers.insert(name, var.as_str().into());
            }
            if let Some(var) = bearer {
                table.insert("bearer_token_env_var", value(var));
            }
            if !headers.is_empty() {
                table.insert("http_headers", value(headers));
            }
            if !env_headers.is_empty() {
                table.insert("env_http_headers", value(env_headers));
            }
        }
    }
    if config.timeout_ms.is_some() {
        dropped.push("timeout".to_owned());
    }
    if let Some(ms) = config.startup_timeout_ms {
        table.insert("startup_timeout_sec", seconds(ms));
    }
    if let Some(ms) = config.tool_timeout_ms {
        table.insert("tool_timeout_sec", seconds(ms));
    }
    if !config.enabled {
        table.insert("enabled", value(false));
    }
    if let Some(tools) = &config.enabled_tools {
        table.insert("enabled_tools", value(strings("enabled_tools", tools)?));
    }
    if !config.disabled_tools.is_empty() {
        let tools = strings("disabled_tools", &config.disabled_tools)?;
        table.insert("disabled_tools", value(tools));
    }
    if config.always_load {
        dropped.push("alwaysLoad".to_owned());
    }
    Ok((table, dropped))
}
