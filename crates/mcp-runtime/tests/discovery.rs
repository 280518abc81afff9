//! Discovery against a realistic home and project holding every provider's files, as those
//! tools write them (`tests/fixtures/discovery/`). Everything runs in temp dirs with explicit
//! options: the real home, process environment and trust store are never touched.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mcp_runtime::config::trust::TrustStore;
use mcp_runtime::config::writer::{self, McprFile, Scope};
use mcp_runtime::config::{
    Discovery, DiscoveryOptions, EnvSource, HARD_FAILURE_PATH, HttpKind, Level, PendingReason,
    ProjectTrustState, ServerConfig, ServerState, Transport, load_all_mcp_configs,
    revoke_project_trust, trust_project,
};

const GITHUB_TOKEN: &str = "ghp_realSecretValue0123456789";
const MY_API_KEY: &str = "gemini-secret-key-value-42";

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    store: PathBuf,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/discovery");
    let home = root.join("home");
    let project = root.join("work/project");
    copy_dir(&source.join("home"), &home);
    copy_dir(&source.join("project"), &project);
    let claude = home.join(".claude.json");
    let text = std::fs::read_to_string(&claude).unwrap();
    std::fs::write(
        &claude,
        text.replace("__PROJECT__", &project.to_string_lossy()),
    )
    .unwrap();
    Fixture {
        store: root.join("data/mcpr/trust.json"),
        _tmp: tmp,
        home,
        project,
    }
}

impl Fixture {
    fn env(&self) -> BTreeMap<String, String> {
        [
            ("HOME", self.home.to_string_lossy().as_ref()),
            ("GITHUB_TOKEN", GITHUB_TOKEN),
            ("MY_API_KEY", MY_API_KEY),
            ("API_TOKEN", "api-token-value"),
            ("OPENCODE_VAR", "opencode-value"),
            ("CONTEXT7_API_KEY", "ctx7-secret"),
            ("CURSOR_TOKEN", "cursor-secret"),
            ("WINDSURF_KEY", "windsurf-secret"),
            ("OPENWEATHER_API_KEY", "weather-secret"),
            ("CONTINUE_TOKEN", "continue-secret"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn options(&self) -> DiscoveryOptions {
        DiscoveryOptions {
            home: Some(self.home.clone()),
            env: EnvSource::Map(self.env()),
            trust_store: Some(self.store.clone()),
            ..DiscoveryOptions::default()
        }
    }

    fn trusted(&self) -> DiscoveryOptions {
        DiscoveryOptions {
            trust_project: true,
            ..self.options()
        }
    }

    fn discover(&self, options: &DiscoveryOptions) -> Discovery {
        let found = load_all_mcp_configs(&self.project, options);
        assert!(found.failure.is_none(), "{:?}", found.failure);
        found
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = if let Some(rest) = rel.strip_prefix("~/") {
            self.home.join(rest)
        } else {
            self.project.join(rel)
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// States of every definition of `name`, as `(provider name, state)`.
fn states(found: &Discovery, name: &str) -> Vec<(String, String)> {
    found
        .servers
        .iter()
        .filter(|s| s.name == name)
        .map(|s| (s.source.provider_name.clone(), s.state.to_string()))
        .collect()
}

fn stdio(cfg: &ServerConfig) -> &mcp_runtime::config::StdioConfig {
    match &cfg.transport {
        Transport::Stdio(s) => s,
        other => panic!("not stdio: {other:?}"),
    }
}

fn http(cfg: &ServerConfig) -> &mcp_runtime::config::HttpConfig {
    match &cfg.transport {
        Transport::Http(h) => h,
        other => panic!("not http: {other:?}"),
    }
}

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
fn precedence_and_shadowing() {
    let fx = fixture();
    let found = fx.discover(&fx.trusted());
    assert_eq!(
        states(&found, "github"),
        vec![
            ("mcpr".into(), "enabled".into()),
            ("Claude Code".into(), "shadowed by mcpr".into()),
            ("Cursor".into(), "shadowed by mcpr".into()),
        ]
    );
    // Inside Claude: local beats project; project beats user; Claude beats Claude Desktop.
    assert_eq!(
        states(&found, "local-db"),
        vec![
            ("Claude Code".into(), "enabled".into()),
            ("Claude Code".into(), "shadowed by Claude Code".into())
        ]
    );
    assert_eq!(stdio(&found.configs["local-db"]).command, "npx");
    assert_eq!(
        stdio(&found.configs["shared"]).command,
        "claude-project-shared"
    );
    let shared = states(&found, "shared");
    assert_eq!(shared.len(), 3, "{shared:?}");
    assert_eq!(
        shared[2],
        ("Claude Desktop".into(), "shadowed by Claude Code".into())
    );
    assert_eq!(found.sources["shared"].path, fx.project.join(".mcp.json"));
    let winner = found.winner("github").unwrap();
    assert_eq!(winner.source.provider_id, "mcpr");
    assert!(winner.line.is_some() && winner.location().contains("mcp.json:"));
}

#[test]
fn explicit_files_come_first_and_strict_uses_them_alone() {
    let fx = fixture();
    let extra = fx.write(
        "~/extra/servers.toml",
        "[mcp_servers.github]\ncommand = \"from-config-flag\"\n",
    );
    let yaml = fx.write(
        "~/extra/goose.yaml",
        "extensions:\n  only-here:\n    type: stdio\n    cmd: x\n    enabled: true\n",
    );
    let options = DiscoveryOptions {
        explicit_files: vec![extra.clone(), yaml.clone()],
        ..fx.trusted()
    };
    let found = fx.discover(&options);
    assert_eq!(stdio(&found.configs["github"]).command, "from-config-flag");
    assert_eq!(found.sources["github"].provider_id, "config");
    assert_eq!(found.sources["github"].path, extra);
    assert!(found.configs.contains_key("only-here"));
    assert_eq!(
        found.configs.keys().next().map(String::as_str),
        Some("github")
    );

    let strict = fx.discover(&DiscoveryOptions {
        strict: true,
        ..options
    });
    let names: Vec<&str> = strict.configs.keys().map(String::as_str).collect();
    assert_eq!(names, vec!["github", "only-here"]);
    assert_eq!(strict.project.state, ProjectTrustState::NoProjectConfig);
}

#[test]
fn disabling_project_config_removes_every_project_entry() {
    let fx = fixture();
    let found = fx.discover(&DiscoveryOptions {
        enable_project_config: false,
        ..fx.trusted()
    });
    assert!(
        found.servers.iter().all(|s| s.source.level == Level::User),
        "{:?}",
        found
            .servers
            .iter()
            .filter(|s| s.source.level == Level::Project)
            .map(|s| &s.name)
            .collect::<Vec<_>>()
    );
    // Claude's projects[cwd] entries are project level too, though trusted.
    assert!(!found.configs.contains_key("local-db"));
    assert!(found.configs.contains_key("claude-user-fs"));
    assert_eq!(found.project.state, ProjectTrustState::Disabled);
}

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
    let found = fx.discover(&DiscoveryOptions {
        env: EnvSource::Map(env),
        ..fx.trusted()
    });
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
    let found = fx.discover(&DiscoveryOptions {
        env: EnvSource::Map(env),
        ..fx.trusted()
    });
    assert_eq!(
        stdio(&found.configs["perplexity"]).env["PERPLEXITY_API_KEY"],
        "pplx-123"
    );
}

#[test]
fn project_servers_wait_for_trust_bound_to_the_config_hash() {
    let fx = fixture();
    let options = fx.options();
    let found = fx.discover(&options);
    assert_eq!(found.project.state, ProjectTrustState::Untrusted);
    assert!(found.project.files.contains(&fx.project.join(".mcp.json")));
    assert!(
        !found
            .project
            .files
            .iter()
            .any(|f| f.ends_with(".claude/settings.local.json"))
    );
    for name in [
        "mcpr-project",
        "claude-project",
        "codex-project",
        "root-project",
        "vscode-project",
    ] {
        assert_eq!(
            found.winner(name).unwrap().state,
            ServerState::PendingApproval,
            "{name}"
        );
        assert!(!found.configs.contains_key(name));
    }
    // A pending project definition does not hide the user's own one.
    assert_eq!(
        stdio(&found.configs["shared"]).command,
        "claude-user-shared"
    );
    // Claude's projects[cwd] lives in the home: trusted.
    assert!(found.configs.contains_key("local-db"));
    // A repository cannot approve itself through .claude/settings.local.json.
    assert_eq!(
        found.winner("approved-one").unwrap().state,
        ServerState::PendingApproval
    );
    assert_eq!(
        found.winner("rejected-one").unwrap().state,
        ServerState::Disabled
    );

    let trusted = trust_project(&fx.project, &options).unwrap();
    assert_eq!(trusted.state, ProjectTrustState::Trusted);
    let record = TrustStore::new(&fx.store)
        .get(&fx.project)
        .unwrap()
        .unwrap();
    assert!(record.files.contains(&".mcp.json".to_owned()));
    let found = fx.discover(&options);
    assert_eq!(found.project.state, ProjectTrustState::Trusted);
    assert!(
        found.configs.contains_key("claude-project") && found.configs.contains_key("root-project")
    );
    assert_eq!(
        stdio(&found.configs["shared"]).command,
        "claude-project-shared"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&fx.store).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // A changed project file asks again; so does a new one.
    fx.write(
        ".mcp.json",
        r#"{"mcpServers": {"claude-project": {"command": "evil"}}}"#,
    );
    let found = fx.discover(&options);
    assert_eq!(found.project.state, ProjectTrustState::Changed);
    assert_eq!(
        found.winner("claude-project").unwrap().state,
        ServerState::PendingApproval
    );
    trust_project(&fx.project, &options).unwrap();
    assert!(fx.discover(&options).project.is_trusted());
    fx.write(
        ".cursor/mcp.json",
        r#"{"mcpServers": {"new": {"command": "n"}}}"#,
    );
    assert_eq!(
        fx.discover(&options).project.state,
        ProjectTrustState::Changed
    );

    // One-run trust, and revocation.
    assert!(fx.discover(&fx.trusted()).configs.contains_key("new"));
    assert!(revoke_project_trust(&fx.project, &options).unwrap());
    assert!(!revoke_project_trust(&fx.project, &options).unwrap());
    assert_eq!(
        fx.discover(&options).project.state,
        ProjectTrustState::Untrusted
    );
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
    let found = fx.discover(&DiscoveryOptions {
        env: EnvSource::Map(env),
        ..fx.trusted()
    });
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

#[test]
fn a_throwing_discovery_becomes_one_synthetic_error() {
    let fx = fixture();
    let options = DiscoveryOptions {
        env: EnvSource::Fn(Arc::new(|_| panic!("environment exploded"))),
        home: None,
        ..fx.options()
    };
    let found = load_all_mcp_configs(&fx.project, &options);
    let failure = found.failure.expect("synthetic error");
    assert_eq!(failure.path, HARD_FAILURE_PATH);
    assert!(failure.error.contains("environment exploded"));
    assert!(found.configs.is_empty() && found.servers.is_empty());
}

#[test]
fn writer_edits_only_mcpr_files_atomically_with_mode_0600() {
    let fx = fixture();
    let options = fx.trusted();
    let user_file = writer::user_config_path(&options).unwrap();
    assert_eq!(user_file, fx.home.join(".config/mcpr/mcp.json"));

    let mut cfg = ServerConfig::stdio("mcpr", ["mock"]);
    if let Transport::Stdio(s) = &mut cfg.transport {
        s.env.insert("K".into(), "V".into());
    }
    let path =
        writer::add_server(&options, &fx.project, Scope::User, "added", &cfg, false).unwrap();
    assert_eq!(path, user_file);
    let err =
        writer::add_server(&options, &fx.project, Scope::User, "added", &cfg, false).unwrap_err();
    assert!(err.to_string().contains("already defined"), "{err}");
    let project_path = writer::add_server(
        &options,
        &fx.project,
        Scope::Project,
        "proj-added",
        &cfg,
        false,
    )
    .unwrap();
    assert_eq!(project_path, fx.project.join(".mcpr/mcp.json"));
    #[cfg(unix)]
    for file in [&user_file, &project_path] {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(user_file.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left behind");
    // Other content of the user file survives.
    let file = McprFile::load(&user_file).unwrap();
    assert!(file.server("github").is_some() && file.listed(writer::List::Disabled, "off-by-list"));

    let found = fx.discover(&options);
    assert_eq!(stdio(&found.configs["added"]).env["K"], "V");
    assert!(found.configs.contains_key("proj-added"));

    // Another tool's server: the user file's lists, never the tool's file.
    let cursor_file = fx.home.join(".cursor/mcp.json");
    let before = std::fs::read(&cursor_file).unwrap();
    let change = writer::set_enabled(&found, &options, "cursor-user", false).unwrap();
    assert!(change.changed && change.path == user_file);
    assert_eq!(std::fs::read(&cursor_file).unwrap(), before);
    let found = fx.discover(&options);
    assert_eq!(
        found.winner("cursor-user").unwrap().state,
        ServerState::Disabled
    );
    let change = writer::set_enabled(&found, &options, "cursor-user", true).unwrap();
    assert!(change.changed);
    let found = fx.discover(&options);
    assert!(found.configs.contains_key("cursor-user"));
    assert!(
        !McprFile::load(&user_file)
            .unwrap()
            .listed(writer::List::Disabled, "cursor-user")
    );

    // A host's `enabled: false` is overridden through enabledServers.
    let change = writer::set_enabled(&found, &options, "omp-off", true).unwrap();
    assert!(change.changed);
    let found = fx.discover(&options);
    assert!(found.configs.contains_key("omp-off"));
    assert!(
        McprFile::load(&user_file)
            .unwrap()
            .listed(writer::List::Enabled, "omp-off")
    );

    // A host's rejection (Claude `disabledMcpjsonServers`) too.
    assert_eq!(
        found.winner("rejected-one").unwrap().state,
        ServerState::Disabled
    );
    assert!(
        writer::set_enabled(&found, &options, "rejected-one", true)
            .unwrap()
            .changed
    );
    let found = fx.discover(&options);
    assert!(found.configs.contains_key("rejected-one"));

    // mcpr's own user entries are edited in place.
    writer::set_enabled(&found, &options, "mcpr-user-echo", false).unwrap();
    let entry = McprFile::load(&user_file)
        .unwrap()
        .server("mcpr-user-echo")
        .cloned()
        .unwrap();
    assert_eq!(entry["enabled"], false);
    let found = fx.discover(&options);
    assert_eq!(
        found.winner("mcpr-user-echo").unwrap().state,
        ServerState::Disabled
    );
    let unchanged = writer::set_enabled(&found, &options, "mcpr-user-echo", false).unwrap();
    assert!(!unchanged.changed);

    // Remove: mcpr files only, with a pointer to `disable` for other tools' servers.
    assert_eq!(
        writer::remove_server(&options, &fx.project, "added", None, None).unwrap(),
        user_file
    );
    let err = writer::remove_server(&options, &fx.project, "cursor-user", None, Some(&found))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Cursor") && err.contains("mcpr disable cursor-user"),
        "{err}"
    );
    assert!(writer::set_enabled(&found, &options, "no-such-server", true).is_err());
}

#[test]
fn trust_binds_to_the_files_project_servers_read() {
    let fx = fixture();
    let options = fx.options();
    fx.write("token.txt", "first-token\n");
    fx.write(
        "opencode.json",
        r#"{"mcp": {"oc-file": {"type": "local", "command": ["{file:./cmd.txt}", "x"], "environment": {"T": "{file:token.txt}"}}}}"#,
    );
    fx.write("cmd.txt", "harmless");
    let found = fx.discover(&options);
    for file in [".env", "token.txt", "cmd.txt"] {
        assert!(
            found.project.files.contains(&fx.project.join(file)),
            "{file}"
        );
    }
    trust_project(&fx.project, &options).unwrap();
    let found = fx.discover(&options);
    assert_eq!(stdio(&found.configs["oc-file"]).command, "harmless");
    assert_eq!(stdio(&found.configs["vscode-project"]).env["SECOND"], "two");

    // A pull that changes only the envFile: the server waits, and the file is named.
    fx.write(
        ".env",
        "FROM_ENV_FILE=yes\nNODE_OPTIONS=--require ./evil.js\n",
    );
    let found = fx.discover(&options);
    assert_eq!(found.project.state, ProjectTrustState::Changed);
    assert_eq!(found.project.changed, vec![fx.project.join(".env")]);
    let vs = found.winner("vscode-project").unwrap();
    assert_eq!(vs.state, ServerState::PendingApproval);
    assert_eq!(
        vs.pending_reason,
        Some(PendingReason::Changed(vec![fx.project.join(".env")]))
    );
    assert!(!found.configs.contains_key("vscode-project"));
    trust_project(&fx.project, &options).unwrap();
    assert!(fx.discover(&options).configs.contains_key("vscode-project"));

    // The same for a `{file:}` target in `command`.
    fx.write("cmd.txt", "evil");
    let found = fx.discover(&options);
    let oc = found.winner("oc-file").unwrap();
    assert_eq!(oc.state, ServerState::PendingApproval);
    assert_eq!(
        oc.pending_reason,
        Some(PendingReason::Changed(vec![fx.project.join("cmd.txt")]))
    );
    assert!(!found.configs.contains_key("oc-file"));
    // A referenced file that appears or disappears counts as a change as well.
    trust_project(&fx.project, &options).unwrap();
    std::fs::remove_file(fx.project.join("token.txt")).unwrap();
    assert_eq!(
        fx.discover(&options).project.changed,
        vec![fx.project.join("token.txt")]
    );
}

#[test]
fn user_configs_never_read_an_untrusted_project() {
    let fx = fixture();
    let options = DiscoveryOptions {
        enable_project_config: true,
        ..fx.options()
    };
    fx.write(".env", "LD_PRELOAD=/tmp/evil.so\n");
    fx.write("~/.cursor/.env", "OWN=mine\n");
    fx.write(
        "~/.cursor/mcp.json",
        r#"{"mcpServers": {
            "relative": {"command": "a", "envFile": ".env"},
            "workspace": {"command": "b", "envFile": "${workspaceFolder}/.env"},
            "other-dir": {"command": "c", "envFile": "${workspaceFolder}/../project/.env"}
        }}"#,
    );
    let found = fx.discover(&options);
    // A relative envFile of a user file is the user's own, next to that file.
    let relative = stdio(&found.configs["relative"]);
    assert_eq!(relative.env["OWN"], "mine");
    assert!(!relative.env.contains_key("LD_PRELOAD"));
    // `${workspaceFolder}` reads the project: it waits for the project's trust.
    for name in ["workspace", "other-dir"] {
        let server = found.winner(name).unwrap();
        assert_eq!(server.state, ServerState::PendingApproval, "{name}");
        assert!(!server.trusted);
        let Some(PendingReason::ReadsProject(files)) = &server.pending_reason else {
            panic!("{name}: {:?}", server.pending_reason);
        };
        assert!(files.len() == 1 && files[0].ends_with(".env"), "{files:?}");
        assert!(!found.configs.contains_key(name));
    }
    assert!(found.project.files.contains(&fx.project.join(".env")));

    // Trusting the project lets it start, bound to the `.env` as it is now.
    trust_project(&fx.project, &options).unwrap();
    let found = fx.discover(&options);
    assert_eq!(
        stdio(&found.configs["workspace"]).env["LD_PRELOAD"],
        "/tmp/evil.so"
    );
    fx.write(".env", "LD_PRELOAD=/tmp/other.so\n");
    let found = fx.discover(&options);
    assert_eq!(
        found.winner("workspace").unwrap().pending_reason,
        Some(PendingReason::Changed(vec![fx.project.join(".env")]))
    );
    assert!(!found.configs.contains_key("workspace"));
    assert!(found.configs.contains_key("relative"));
}

#[test]
fn a_project_with_only_a_file_a_user_config_reads_can_be_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let (home, project) = (root.join("home"), root.join("project"));
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::create_dir_all(home.join(".config/opencode")).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"s": {"command": "x", "envFile": "${workspaceFolder}/.env"}}}"#,
    )
    .unwrap();
    // OpenCode: `{file:}` relative to the user's own file, and an absolute one into the project.
    std::fs::write(
        home.join(".config/opencode/opencode.json"),
        format!(
            r#"{{"mcp": {{"o": {{"type": "local", "command": ["y", "{{file:token}}", "{{file:{}}}"]}}}}}}"#,
            project.join("arg.txt").display()
        ),
    )
    .unwrap();
    std::fs::write(home.join(".config/opencode/token"), "t").unwrap();
    std::fs::write(project.join(".env"), "K=v\n").unwrap();
    std::fs::write(project.join("arg.txt"), "--evil").unwrap();
    let options = DiscoveryOptions {
        home: Some(home.clone()),
        env: EnvSource::map([("HOME", home.to_string_lossy())]),
        trust_store: Some(root.join("trust.json")),
        ..DiscoveryOptions::default()
    };
    let found = load_all_mcp_configs(&project, &options);
    assert_eq!(found.project.state, ProjectTrustState::Untrusted);
    let mut files = found.project.files.clone();
    files.sort();
    assert_eq!(files, vec![project.join(".env"), project.join("arg.txt")]);
    for (name, file) in [("s", ".env"), ("o", "arg.txt")] {
        let server = found.winner(name).unwrap();
        assert_eq!(server.state, ServerState::PendingApproval, "{name}");
        assert_eq!(
            server.pending_reason.as_ref().unwrap().to_string(),
            format!(
                "reads {} from the untrusted project",
                project.join(file).display()
            )
        );
    }
    assert!(found.configs.is_empty());
    let trusted = trust_project(&project, &options).unwrap();
    assert_eq!(trusted.state, ProjectTrustState::Trusted);
    let found = load_all_mcp_configs(&project, &options);
    let s = stdio(&found.configs["s"]);
    assert_eq!(s.env["K"], "v");
    assert_eq!(stdio(&found.configs["o"]).args, vec!["t", "--evil"]);
}

#[test]
fn trust_binds_to_the_project_files_servers_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let (home, project) = (root.join("home"), root.join("project"));
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::create_dir_all(project.join("bin")).unwrap();
    std::fs::create_dir_all(project.join("data")).unwrap();
    let server = project.join("bin/server");
    std::fs::write(&server, "#!/bin/sh\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(project.join("srv.py"), "print()\n").unwrap();
    std::fs::write(
        home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {
            "direct": {"command": "${workspaceFolder}/bin/server"},
            "script": {"command": "python3.12", "args": ["-u", "srv.py"], "cwd": "${workspaceFolder}"},
            "module": {"command": "python3", "args": ["-m", "srv", "${workspaceFolder}/data"], "cwd": "${workspaceFolder}"},
            "directory": {"command": "/bin/sh", "args": ["${workspaceFolder}/data"]}
        }}"#,
    )
    .unwrap();
    // The project's own server runs its own program: trust binds to that program as well.
    std::fs::write(
        project.join(".mcp.json"),
        r#"{"mcpServers": {"own": {"command": "./bin/server"}}}"#,
    )
    .unwrap();
    let options = DiscoveryOptions {
        home: Some(home.clone()),
        env: EnvSource::map([("HOME", home.to_string_lossy())]),
        trust_store: Some(root.join("trust.json")),
        ..DiscoveryOptions::default()
    };
    let found = load_all_mcp_configs(&project, &options);
    assert_eq!(found.project.state, ProjectTrustState::Untrusted);
    for (name, file) in [("direct", "bin/server"), ("script", "srv.py")] {
        let server = found.winner(name).unwrap();
        assert_eq!(server.state, ServerState::PendingApproval, "{name}");
        assert_eq!(
            server.pending_reason,
            Some(PendingReason::RunsProject(vec![project.join(file)])),
            "{name}"
        );
        assert_eq!(
            server.pending_reason.as_ref().unwrap().to_string(),
            format!(
                "runs {} from the untrusted project",
                project.join(file).display()
            )
        );
    }
    // A module name or a directory given as an argument is not code of the project.
    assert!(found.configs.contains_key("module"));
    assert!(found.configs.contains_key("directory"));
    assert!(!found.configs.contains_key("own"));
    assert!(found.project.files.contains(&server));
    assert!(found.project.files.contains(&project.join("srv.py")));

    trust_project(&project, &options).unwrap();
    let found = load_all_mcp_configs(&project, &options);
    for name in ["direct", "script", "own"] {
        assert!(found.configs.contains_key(name), "{name}");
    }

    // A changed program asks again, naming it, for the user's server and the project's alike.
    std::fs::write(&server, "#!/bin/sh\necho changed\n").unwrap();
    let found = load_all_mcp_configs(&project, &options);
    assert_eq!(found.project.state, ProjectTrustState::Changed);
    for name in ["direct", "own"] {
        assert_eq!(
            found.winner(name).unwrap().pending_reason,
            Some(PendingReason::Changed(vec![server.clone()])),
            "{name}"
        );
        assert!(!found.configs.contains_key(name), "{name}");
    }
}
