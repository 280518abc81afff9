//! Broken input: malformed files, invalid entries and unset variables are warnings and
//! per-server errors naming file, line, column and field; the rest still loads.

mod discovery_fixture;

use discovery_fixture::*;

#[test]
fn malformed_files_report_file_line_column_and_the_rest_still_load() {
    let fx = fixture();
    let broken = [
        (
            "~/.cursor/mcp.json",
            "{\n  \"mcpServers\": {\n    \"x\": { \"command\": \"a\" \n  }\n",
            5usize,
        ),
        (
            "~/.codex/config.toml",
            "[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"-y\",\n\n[oops\n",
            5,
        ),
        (
            "~/.config/goose/config.yaml",
            "extensions:\n  a:\n    cmd: [x\n  b: c\n",
            4,
        ),
        (
            "~/.config/zed/settings.json",
            "// zed\n{\n  \"context_servers\": {\n    \"z\": { command: }\n  }\n}\n",
            4,
        ),
        (
            ".vscode/mcp.json",
            "{\n  \"servers\": {\n    \"v\": {\n      \"command\": \"x\",\n      \"args\": [1 2]\n",
            5,
        ),
    ];
    let mut paths = Vec::new();
    for (rel, text, _) in &broken {
        paths.push(fx.write(rel, text));
    }
    let found = fx.discover(&fx.trusted());
    for ((rel, _, line), path) in broken.iter().zip(&paths) {
        let warning = found
            .warnings
            .iter()
            .find(|w| w.file.as_ref() == Some(path))
            .unwrap_or_else(|| panic!("no warning for {rel}: {:#?}", found.warnings));
        assert_eq!(warning.line, Some(*line), "{rel}: {warning}");
        assert!(warning.column.is_some(), "{rel}: {warning}");
        let shown = warning.to_string();
        assert!(
            shown.starts_with(&format!("{}:{line}:", path.display())),
            "{shown}"
        );
    }
    // Everything else still loads.
    for name in [
        "github",
        "local-db",
        "gemini-stdio",
        "desktop-fs",
        "kiro-fetch",
        "root-project",
    ] {
        assert!(found.configs.contains_key(name), "{name}");
    }
    assert!(!found.configs.contains_key("docs") && !found.configs.contains_key("goose-fetch"));
}

#[test]
fn invalid_entries_name_server_field_and_position() {
    let fx = fixture();
    fx.write(
        ".mcp.json",
        "{\n  \"mcpServers\": {\n    \"both\": {\"command\": \"x\", \"url\": \"http://h\"},\n    \"ok\": {\"command\": \"ok\"},\n    \"weird name.v2:beta\": {\"command\": \"w\"}\n  }\n}\n",
    );
    let found = fx.discover(&fx.trusted());
    let warning = found
        .warnings
        .iter()
        .find(|w| w.server.as_deref() == Some("both"))
        .unwrap();
    assert_eq!((warning.line, warning.column), (Some(3), Some(5)));
    assert!(warning.message.contains("field `command`"), "{warning}");
    assert!(
        matches!(&found.winner("both").unwrap().state, ServerState::Invalid(r) if r.contains("`url`"))
    );
    assert!(found.errors["both"].to_string().contains("server `both`"));
    assert!(found.configs.contains_key("ok"));
    assert!(
        found.configs.contains_key("weird name.v2:beta"),
        "raw names are kept"
    );
}

#[test]
fn unset_variables_are_per_server_errors_naming_variable_and_field() {
    let fx = fixture();
    let mut env = fx.env();
    env.remove("GITHUB_TOKEN");
    let found = fx.discover(&fx.trusted().with_env(EnvSource::Map(env)));
    let reason = match &found.winner("github").unwrap().state {
        ServerState::Invalid(reason) => reason.clone(),
        other => panic!("{other:?}"),
    };
    assert!(
        reason.contains("`headers.Authorization`") && reason.contains("`GITHUB_TOKEN`"),
        "{reason}"
    );
    assert!(!found.configs.contains_key("github"));
    let warning = found
        .warnings
        .iter()
        .find(|w| w.server.as_deref() == Some("github"))
        .unwrap();
    assert!(
        warning
            .file
            .as_ref()
            .unwrap()
            .ends_with(".config/mcpr/mcp.json")
            && warning.line == Some(3),
        "{warning}"
    );
    // VS Code inputs are never sent literally.
    let perplexity = found.winner("perplexity").unwrap();
    assert!(
        matches!(&perplexity.state, ServerState::Invalid(r) if r.contains("needs input `perplexity-key`") && r.contains("Perplexity API Key"))
    );
    assert!(
        found.configs.contains_key("mcpr-user-echo"),
        "other servers continue"
    );

    let mut env = fx.env();
    env.insert("MCPR_INPUT_PERPLEXITY_KEY".into(), "pplx-123".into());
    let found = fx.discover(&fx.trusted().with_env(EnvSource::Map(env)));
    assert_eq!(
        stdio(&found.configs["perplexity"]).env["PERPLEXITY_API_KEY"],
        "pplx-123"
    );
}

#[test]
fn a_throwing_discovery_becomes_one_synthetic_error() {
    let fx = fixture();
    let options = fx
        .options()
        .with_env(EnvSource::Fn(Arc::new(|_| panic!("environment exploded"))))
        .with_home(None);
    let found = load_all_mcp_configs(&fx.project, &options);
    let failure = found.failure.expect("synthetic error");
    assert_eq!(failure.path, HARD_FAILURE_PATH);
    assert!(failure.error.contains("environment exploded"));
    assert!(found.configs.is_empty() && found.servers.is_empty());
}
