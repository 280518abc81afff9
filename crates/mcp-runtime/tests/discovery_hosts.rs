//! Discovery of each AI tool's files, as those tools write them: sources, host quirks, host
//! approvals, and what the display form hides.

mod discovery_fixture;

use discovery_fixture::*;

#[test]
fn every_provider_is_discovered_with_its_source() {
    let fx = fixture();
    let found = fx.discover(&fx.trusted());
    let expect = [
        ("github", "mcpr", Level::User),
        ("mcpr-user-echo", "mcpr", Level::User),
        ("mcpr-project", "mcpr", Level::Project),
        ("omp-user", "oh-my-pi", Level::User),
        ("omp-project", "oh-my-pi", Level::Project),
        ("local-db", "Claude Code", Level::Project),
        ("claude-project", "Claude Code", Level::Project),
        ("claude-user-fs", "Claude Code", Level::User),
        ("sentry", "Claude Code", Level::User),
        ("docs", "Codex", Level::User),
        ("figma", "Codex", Level::User),
        ("local-tool", "Codex", Level::User),
        ("codex-project", "Codex", Level::Project),
        ("gemini-sse", "Gemini CLI", Level::User),
        ("gemini-http", "Gemini CLI", Level::User),
        ("gemini-stdio", "Gemini CLI", Level::User),
        ("gemini-project", "Gemini CLI", Level::Project),
        ("opencode-local", "OpenCode", Level::User),
        ("opencode-remote", "OpenCode", Level::User),
        ("opencode-project", "OpenCode", Level::Project),
        ("cursor-user", "Cursor", Level::User),
        ("cursor-project", "Cursor", Level::Project),
        ("windsurf-remote", "Windsurf", Level::User),
        ("windsurf-project", "Windsurf", Level::Project),
        ("vscode-user-http", "VS Code", Level::User),
        ("vscode-project", "VS Code", Level::Project),
        ("desktop-fs", "Claude Desktop", Level::User),
        ("zed-new", "Zed", Level::User),
        ("zed-old", "Zed", Level::User),
        ("zed-remote", "Zed", Level::User),
        ("zed-project", "Zed", Level::Project),
        ("cline-weather", "Cline", Level::User),
        ("cline-sse", "Cline", Level::User),
        ("roo-project", "Roo Code", Level::Project),
        ("continue-sqlite", "Continue", Level::User),
        ("continue-remote", "Continue", Level::User),
        ("continue-project", "Continue", Level::Project),
        ("goose-fetch", "goose", Level::User),
        ("kiro-fetch", "Kiro", Level::User),
        ("kiro-project", "Kiro", Level::Project),
        ("root-project", "MCP config", Level::Project),
    ];
    for (name, provider, level) in expect {
        let source = found
            .sources
            .get(name)
            .unwrap_or_else(|| panic!("`{name}` not enabled: {:?}", states(&found, name)));
        assert_eq!(
            (source.provider_name.as_str(), source.level),
            (provider, level),
            "{name}"
        );
        assert!(found.configs.contains_key(name), "{name}");
    }
    // Priority order: mcpr first, root files last.
    let order: Vec<&str> = found.configs.keys().map(String::as_str).collect();
    assert_eq!(order.first(), Some(&"mcpr-project"), "{order:?}");
    assert_eq!(order.last(), Some(&"root-project"), "{order:?}");
    // Claude: local (projects[cwd]) before project before user.
    let pos = |n: &str| order.iter().position(|o| *o == n).unwrap();
    assert!(
        pos("local-db") < pos("claude-project") && pos("claude-project") < pos("claude-user-fs")
    );
    // `.mcp.json` is Claude's; the root provider does not read it again.
    assert!(
        found
            .servers
            .iter()
            .all(|s| s.source.provider_id != "mcp-json" || s.name == "root-project")
    );
    // Off or skipped entries.
    for (name, state) in [
        ("omp-off", "disabled"),
        ("windsurf-off", "disabled"),
        ("cline-off", "disabled"),
        ("goose-remote", "disabled"),
        ("off-by-list", "disabled"),
        ("both-lists", "disabled"),
        ("rejected-one", "disabled"),
    ] {
        assert_eq!(
            states(&found, name).first().map(|s| s.1.as_str()),
            Some(state),
            "{name}"
        );
    }
    assert!(
        states(&found, "developer").is_empty(),
        "goose builtins are skipped"
    );
    assert!(
        states(&found, "mcp-server-github").is_empty(),
        "Zed extensions are skipped"
    );
    assert!(
        states(&found, "elsewhere").is_empty(),
        "other projects of ~/.claude.json"
    );
    let zed_note = found
        .warnings
        .iter()
        .find(|w| w.message.contains("Zed extension"))
        .unwrap();
    assert!(
        zed_note
            .file
            .as_ref()
            .unwrap()
            .ends_with(".config/zed/settings.json")
    );
    assert!(zed_note.line.is_some());
    assert!(
        found
            .warnings
            .iter()
            .any(|w| w.message.contains("anthropic/memory-mcp"))
    );
}

#[test]
fn host_quirks_are_mapped() {
    let fx = fixture();
    let found = fx.discover(&fx.trusted());
    let cfg = |name: &str| found.configs.get(name).unwrap_or_else(|| panic!("{name}"));

    // Codex: env_vars, timeouts in seconds, relative paths, bearer token and header vars.
    let docs = cfg("docs");
    assert_eq!(docs.env_vars, vec!["DOCS_TOKEN"]);
    assert_eq!(
        (docs.startup_timeout_ms, docs.tool_timeout_ms),
        (Some(20_500), Some(90_000))
    );
    let figma = cfg("figma");
    assert_eq!(
        figma.bearer_token_env_var.as_deref(),
        Some("FIGMA_OAUTH_TOKEN")
    );
    assert_eq!(http(figma).headers["X-Figma-Region"], "us-east-1");
    assert_eq!(figma.env_headers["X-Org"], "FIGMA_ORG");
    let local = stdio(cfg("local-tool"));
    assert_eq!(
        Path::new(&local.command),
        fx.home.join(".codex/bin/local-tool")
    );
    assert_eq!(
        local.cwd.as_deref(),
        Some(fx.home.join(".codex/work").as_path())
    );
    assert!(cfg("local-tool").allows_tool("search") && !cfg("local-tool").allows_tool("delete"));
    assert_eq!(
        Path::new(&stdio(cfg("codex-project")).command),
        fx.project.join(".codex/scripts/codex-mcp.sh")
    );
    assert!(
        cfg("codex-disabled").enabled,
        "enabledServers beats enabled = false"
    );

    // Gemini: url = SSE, httpUrl = streamable HTTP, $VAR in env only.
    assert_eq!(http(cfg("gemini-sse")).kind, HttpKind::Sse);
    assert_eq!(http(cfg("gemini-http")).kind, HttpKind::StreamableHttp);
    assert_eq!(
        http(cfg("gemini-http")).headers["Authorization"],
        "Bearer $API_TOKEN"
    );
    let gemini = stdio(cfg("gemini-stdio"));
    assert_eq!(gemini.env["API_KEY"], MY_API_KEY);
    assert_eq!(gemini.env["PLAIN"], "$NOT_SET_ANYWHERE");
    assert!(
        cfg("gemini-stdio").allows_tool("safe_tool")
            && !cfg("gemini-stdio").allows_tool("dangerous_tool")
    );

    // OpenCode: argv arrays, environment, {env:VAR}.
    let oc = stdio(cfg("opencode-local"));
    assert_eq!(
        (oc.command.as_str(), oc.args.as_slice()),
        (
            "npx",
            &[
                "-y".to_owned(),
                "@modelcontextprotocol/server-everything".to_owned()
            ][..]
        )
    );
    assert_eq!(oc.env["MY_ENV_VAR"], "opencode-value");
    assert_eq!(
        http(cfg("opencode-remote")).headers["CONTEXT7_API_KEY"],
        "ctx7-secret"
    );
    assert_eq!(
        stdio(cfg("opencode-project")).args,
        vec!["x", "my-mcp-command"]
    );

    // Cursor / VS Code editor variables and envFile.
    assert_eq!(
        stdio(cfg("cursor-user")).args[2],
        format!("{}/data", fx.home.display())
    );
    assert_eq!(stdio(cfg("cursor-user")).env["TOKEN"], "cursor-secret");
    assert_eq!(
        stdio(cfg("cursor-project")).args[0],
        format!("{}/tools/server.js", fx.project.display())
    );
    let vs = stdio(cfg("vscode-project"));
    assert_eq!(
        (vs.env["FROM_ENV_FILE"].as_str(), vs.env["SECOND"].as_str()),
        ("yes", "two")
    );

    // Windsurf serverUrl; Claude: url without type is http, ${VAR:-default}.
    assert_eq!(
        http(cfg("windsurf-remote")).url,
        "https://windsurf.example.com/mcp"
    );
    assert_eq!(http(cfg("sentry")).kind, HttpKind::StreamableHttp);
    assert_eq!(
        stdio(cfg("claude-project")).env["API_BASE"],
        "https://api.example.com"
    );
    assert_eq!(stdio(cfg("local-db")).args[3], "postgres://localhost/dev");
    assert_eq!(
        stdio(cfg("claude-user-fs")).args[2],
        format!("{}/notes", fx.home.display())
    );

    // Zed old nesting, Cline/Roo seconds, goose, Continue, Kiro, oh-my-pi strings.
    let zed = stdio(cfg("zed-old"));
    assert_eq!(
        (
            zed.command.as_str(),
            zed.args.as_slice(),
            zed.env["K"].as_str()
        ),
        ("old-command", &["a".to_owned()][..], "v")
    );
    assert_eq!(http(cfg("zed-remote")).headers["X"], "y");
    assert_eq!(cfg("cline-weather").timeout_ms, Some(60_000));
    assert_eq!(http(cfg("cline-sse")).kind, HttpKind::Sse);
    assert_eq!(cfg("roo-project").timeout_ms, Some(30_000));
    let goose = cfg("goose-fetch");
    assert_eq!(
        (stdio(goose).command.as_str(), goose.timeout_ms),
        ("uvx", Some(300_000))
    );
    assert_eq!(goose.env_vars, vec!["FETCH_TOKEN"]);
    assert_eq!(stdio(goose).env["USER_AGENT"], "goose");
    assert_eq!(
        http(cfg("continue-remote")).headers["Authorization"],
        "Bearer continue-secret"
    );
    assert_eq!(
        stdio(cfg("continue-project")).args[2],
        "postgres://localhost/test"
    );
    assert!(!cfg("kiro-fetch").allows_tool("fetch_raw"));
    assert_eq!(cfg("omp-user").timeout_ms, Some(15_000));
    assert_eq!(http(cfg("omp-project")).kind, HttpKind::Sse);
}

#[test]
fn host_approval_keys_from_the_home_are_honoured() {
    let fx = fixture();
    let claude = fx.home.join(".claude.json");
    let text = std::fs::read_to_string(&claude).unwrap();
    std::fs::write(
        &claude,
        text.replace(
            "\"enabledMcpjsonServers\": []",
            "\"enabledMcpjsonServers\": [\"approved-one\"]",
        ),
    )
    .unwrap();
    let found = fx.discover(&fx.options());
    assert!(found.configs.contains_key("approved-one"));
    assert_eq!(
        found.winner("claude-project").unwrap().state,
        ServerState::PendingApproval
    );
    assert_eq!(
        found.winner("rejected-one").unwrap().state,
        ServerState::Disabled
    );

    fx.write(
        "~/.claude/settings.json",
        r#"{"enableAllProjectMcpServers": true}"#,
    );
    let found = fx.discover(&fx.options());
    assert!(found.configs.contains_key("claude-project"));
    assert_eq!(
        found.winner("rejected-one").unwrap().state,
        ServerState::Disabled
    );
    assert_eq!(
        found.winner("codex-project").unwrap().state,
        ServerState::PendingApproval,
        "Claude keys approve Claude files only"
    );

    // Codex: [projects."<cwd>"] trust_level = "trusted"; Gemini: trustedFolders.json.
    let codex = fx.home.join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&codex).unwrap();
    text.push_str(&format!(
        "\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        fx.project.display()
    ));
    std::fs::write(&codex, text).unwrap();
    let parent = fx.project.parent().unwrap().join("child");
    fx.write(
        "~/.gemini/trustedFolders.json",
        &format!("{{\"{}\": \"TRUST_PARENT\"}}", parent.display()),
    );
    let found = fx.discover(&fx.options());
    assert!(found.configs.contains_key("codex-project"));
    assert!(found.configs.contains_key("gemini-project"));
    assert_eq!(
        found.winner("root-project").unwrap().state,
        ServerState::PendingApproval
    );
}

#[test]
fn exa_servers_are_discovered_and_enabled_like_any_other() {
    let fx = fixture();
    // The fixture's `~/.claude.json` defines `exa` at mcp.exa.ai with the key in the URL.
    fx.write(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"web-search": {"command": "npx", "args": ["-y", "mcp-remote", "https://mcp.exa.ai/mcp?exaApiKey=${EXA_KEY}"]}}}"#,
    );
    let mut env = fx.env();
    env.insert("EXA_KEY".into(), "exa-from-env".into());
    let found = fx.discover(&fx.trusted().with_env(EnvSource::Map(env)));
    let exa = found.winner("exa").unwrap();
    assert_eq!(exa.state, ServerState::Enabled);
    assert_eq!(found.sources["exa"].provider_name, "Claude Code");
    match &found.configs["exa"].transport {
        Transport::Http(http) => assert!(http.url.contains("exaApiKey=exa-key-from-url")),
        other => panic!("expected an HTTP server, got {other:?}"),
    }
    assert_eq!(
        found.winner("web-search").unwrap().state,
        ServerState::Enabled
    );
    match &found.configs["web-search"].transport {
        Transport::Stdio(stdio) => {
            assert!(
                stdio
                    .args
                    .iter()
                    .any(|a| a.contains("exaApiKey=exa-from-env"))
            )
        }
        other => panic!("expected a stdio server, got {other:?}"),
    }
    // The key in the URL stays out of the display form.
    let shown = exa.redacted().unwrap();
    let text = format!("{} {:?}", shown.target(), shown.url);
    assert!(text.contains("mcp.exa.ai"), "{text}");
    assert!(!text.contains("exa-key-from-url"), "{text}");
}

#[test]
fn secrets_never_appear_in_the_display_form() {
    let fx = fixture();
    let found = fx.discover(&fx.trusted());
    let secrets = [
        GITHUB_TOKEN,
        MY_API_KEY,
        "ctx7-secret",
        "cursor-secret",
        "windsurf-secret",
        "weather-secret",
        "continue-secret",
        "exa-key-from-url",
    ];
    for server in &found.servers {
        let Some(shown) = server.redacted() else {
            continue;
        };
        let text = format!(
            "{} {:?} {:?} {:?}",
            shown.target(),
            shown.env,
            shown.headers,
            shown.url
        );
        for secret in secrets {
            assert!(!text.contains(secret), "{}: {text}", server.name);
        }
    }
    for warning in &found.warnings {
        for secret in secrets {
            assert!(!warning.to_string().contains(secret), "{warning}");
        }
    }
    let github = found.winner("github").unwrap().redacted().unwrap();
    assert_eq!(github.headers["Authorization"], "Bearer ${GITHUB_TOKEN}");
    let cursor_github = found
        .servers
        .iter()
        .find(|s| s.name == "github" && s.source.provider_name == "Cursor")
        .unwrap();
    assert_eq!(cursor_github.redacted().unwrap().target(), "cursor-github");
}
