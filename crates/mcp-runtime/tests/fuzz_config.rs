//! Property tests of the config readers with generated hostile input: every format a host
//! writes, `${}` substitution, and whole discovery runs over generated files. They must never
//! panic, and what they accept must be what was written.
//!
//! Case counts are fixed so the run stays short on a small CI machine.

use std::path::Path;

use mcp_runtime::config::expand::{Context, EnvSource, Syntax, expand_value};
use mcp_runtime::config::{DiscoveryOptions, load_all_mcp_configs};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Text made of the characters that matter to the readers and to substitution.
fn syntax_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(vec![
                "$", "{", "}", "${", "${{", "}}", ":-", "env:", "input:", "file:", "workspaceFolder",
                "userHome", "secrets.", "\"", "'", "\\", "[", "]", ",", ":", "=", "#", "//", "/*",
                "*/", "\n", " ", "-", "- ", "? ", "|", ">", "...", "---", "\t", "\u{feff}", "é",
                "\u{0}", "0x1F", "1e999", "NaN", "true", "null", "mcpServers", "command", "args",
                "url", "env", "[[", "]]", "'''", "\"\"\"",
            ])
            .prop_map(str::to_owned),
            1 => "[a-zA-Z0-9_.~/]{1,6}",
            1 => any::<String>().prop_map(|s| s.chars().take(4).collect()),
        ],
        0..60,
    )
    .prop_map(|parts| parts.concat())
}

/// Text for a whole file: the soup, often around nesting deep enough to overflow a stack (a
/// file of such text once aborted the process).
fn file_text() -> impl Strategy<Value = String> {
    let deep = (
        0usize..30_000,
        prop::sample::select(vec![
            "[", "{\"a\":", "- ", "{a = ", "a.", "[{\"a\":", "x = [",
        ]),
    )
        .prop_map(|(n, open)| open.repeat(n));
    prop_oneof![
        syntax_soup(),
        (deep.clone(), syntax_soup()).prop_map(|(a, b)| format!("{a}{b}")),
        (syntax_soup(), deep, syntax_soup()).prop_map(|(a, b, c)| format!("{a}{b}{c}")),
    ]
}

/// A value a server entry might hold: strings full of references, numbers, nesting.
fn field_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        syntax_soup().prop_map(Value::from),
        "\\$\\{[A-Z_]{1,4}(:-[a-z]{0,3})?\\}".prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-zA-Z_$]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A server entry: known keys with arbitrary values.
fn server_entry() -> impl Strategy<Value = Value> {
    let keys = prop::sample::subsequence(
        vec![
            "command",
            "args",
            "env",
            "url",
            "type",
            "headers",
            "enabled",
            "disabled",
            "timeout",
            "cwd",
            "envFile",
            "transport",
            "serverUrl",
            "httpUrl",
            "startup_timeout_ms",
            "tool_timeout_sec",
            "enabled_tools",
            "disabled_tools",
            "bearer_token_env_var",
            "env_http_headers",
            "oauth",
            "cmd",
            "uri",
            "name",
        ],
        0..8,
    );
    (keys, prop::collection::vec(field_value(), 8)).prop_map(|(keys, values)| {
        Value::Object(
            keys.into_iter()
                .zip(values)
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
        )
    })
}

fn servers() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((any::<String>(), server_entry()), 0..4)
        .prop_map(|items| items.into_iter().collect())
}

/// A TOML rendering of a JSON value (inline form), enough for the Codex reader.
fn toml_value(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => serde_json::to_string(s).unwrap(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(toml_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{} = {}", serde_json::to_string(k).unwrap(), toml_value(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn codex_toml(servers: &Map<String, Value>) -> String {
    let mut text = String::new();
    for (name, entry) in servers {
        text.push_str(&format!(
            "[mcp_servers.{}]\n",
            serde_json::to_string(name).unwrap()
        ));
        for (key, value) in entry.as_object().into_iter().flatten() {
            text.push_str(&format!("{key} = {}\n", toml_value(value)));
        }
    }
    text
}

/// Every file a host writes, in its own format, holding `servers`.
fn write_hosts(home: &Path, project: &Path, servers: &Map<String, Value>, soup: &str) {
    let write = |path: std::path::PathBuf, text: String| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let standard = json!({"mcpServers": servers}).to_string();
    write(project.join(".mcp.json"), standard.clone());
    write(home.join(".config/mcpr/mcp.json"), standard.clone());
    write(home.join(".cursor/mcp.json"), standard.clone());
    write(home.join(".gemini/settings.json"), standard.clone());
    write(
        project.join(".vscode/mcp.json"),
        format!(
            "// comment\n{},\n",
            json!({"servers": servers, "inputs": []})
        ),
    );
    write(
        project.join("opencode.json"),
        json!({"mcp": servers}).to_string(),
    );
    write(project.join(".codex/config.toml"), codex_toml(servers));
    write(
        home.join(".config/goose/config.yaml"),
        serde_yaml_ng::to_string(&json!({"extensions": servers})).unwrap(),
    );
    write(
        project.join(".continue/mcpServers/a.yaml"),
        serde_yaml_ng::to_string(
            &json!({"name": "a", "mcpServers": servers.values().collect::<Vec<_>>()}),
        )
        .unwrap(),
    );
    // And raw text in every format.
    write(project.join(".cursor/mcp.json"), soup.to_owned());
    write(home.join(".codex/config.toml"), soup.to_owned());
    write(project.join(".continue/mcpServers/b.yaml"), soup.to_owned());
    write(home.join(".config/zed/settings.json"), soup.to_owned());
}

fn options(home: &Path) -> DiscoveryOptions {
    DiscoveryOptions::default()
        .with_home(Some(home.to_owned()))
        .with_env(EnvSource::map([
            ("HOME", home.to_string_lossy().as_ref()),
            ("A", "x"),
            ("B", ""),
        ]))
        .with_enable_project_config(true)
        .with_trust_project(true)
        .with_trust_store(Some(home.join("trust.json")))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, failure_persistence: None, ..ProptestConfig::default() })]

    /// Substitution in every syntax never panics, and text without references is unchanged.
    #[test]
    fn expansion_never_panics(value in syntax_soup(), in_env in any::<bool>()) {
        let env = EnvSource::map([("A", "x"), ("B", ""), ("HOME", "/h")]);
        let dir = std::env::temp_dir();
        let mut cx = Context::new(&env);
        cx.home = Some(Path::new("/h"));
        cx.workspace = Some(&dir);
        cx.config_dir = Some(&dir);
        let all = Syntax { braces: true, bare_in_env: true, opencode: true, editor: true, continue_secrets: true };
        for syntax in [Syntax::NONE, Syntax::STANDARD, Syntax::EDITOR, all] {
            let out = expand_value(&value, syntax, in_env, &cx);
            if !value.contains(['$', '{']) {
                prop_assert_eq!(out.as_deref(), Ok(value.as_str()));
            }
        }
    }

    /// `--config FILE` text never panics the reader (nor fails discovery as a whole).
    #[test]
    fn a_config_file_never_panics_the_reader(text in file_text()) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(&file, &text).unwrap();
        let options = options(&dir.path().join("home")).with_explicit_files(vec![file]).with_strict(true);
        let found = load_all_mcp_configs(dir.path(), &options);
        prop_assert!(found.failure.is_none(), "{:?}", found.failure);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Whole discovery runs over generated files of every host never fail or panic, and every
    /// server they report was written by the test.
    #[test]
    fn discovery_over_generated_files_never_panics(servers in servers(), soup in file_text()) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let project = dir.path().join("project");
        std::fs::create_dir_all(&project).unwrap();
        write_hosts(&home, &project, &servers, &soup);
        let found = load_all_mcp_configs(&project, &options(&home));
        prop_assert!(found.failure.is_none(), "{:?}", found.failure);
        for server in &found.servers {
            let _ = server.redacted();
            let _ = server.location();
        }
    }
}
