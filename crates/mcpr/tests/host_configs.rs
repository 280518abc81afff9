//! `mcpr add --to HOST` and `mcpr add-from HOST` against real files in a temp home and project:
//! each host's file gets the server in its own shape with its comments and other keys kept,
//! what mcpr's own discovery reads back is exactly the server added, servers copy between
//! hosts with their references intact, and neither an untrusted project's server nor a project
//! file linking out of the project gets through.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use mcp_runtime::config::{
    Discovery, DiscoveryOptions, EnvSource, HttpKind, Transport, load_all_mcp_configs,
    resolve_connect_values_with,
};
use support::{MCPR, temp_dir, text};

/// A fresh home with an empty `project` directory.
fn home() -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir();
    let home = dir.path().to_owned();
    std::fs::create_dir_all(home.join("project")).unwrap();
    (dir, home)
}

fn mcpr(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, home);
    command.env("PROBE_KEY", "probe-secret-value");
    command.stdin(Stdio::null()).output().expect("run mcpr")
}

fn both(out: &Output) -> String {
    format!("{}{}", text(&out.stdout), text(&out.stderr))
}

fn ok(home: &Path, args: &[&str]) -> String {
    let out = mcpr(home, args);
    assert!(out.status.success(), "mcpr {args:?}: {}", both(&out));
    text(&out.stdout)
}

/// mcpr's own discovery over `home`, with `PROBE_KEY` set.
fn discover(home: &Path) -> Discovery {
    let env: BTreeMap<String, String> = [
        ("HOME", home.to_owned()),
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_DATA_HOME", home.join(".local/share")),
        ("PROBE_KEY", "probe-secret-value".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_string_lossy().into_owned()))
    .collect();
    let mut options = DiscoveryOptions::default();
    options.home = Some(home.to_owned());
    options.env = EnvSource::Map(env);
    load_all_mcp_configs(&home.join("project"), &options)
}

/// The server `name` as mcpr would start it from `host`'s definition: its command, arguments
/// and environment, with every reference resolved.
fn started_as(found: &Discovery, host: &str, name: &str) -> (String, Vec<String>, Vec<String>) {
    let server = found
        .servers
        .iter()
        .find(|s| s.name == name && s.source.provider_id == host)
        .unwrap_or_else(|| panic!("{host} has no `{name}`: {:?}", found.servers));
    assert!(server.trusted, "{name} from {host}: {}", server.state);
    let config = found
        .configs
        .get(name)
        .unwrap_or_else(|| panic!("`{name}` does not start: {}", server.state));
    let env = EnvSource::Map([("PROBE_KEY".into(), "probe-secret-value".into())].into());
    let config = resolve_connect_values_with(name, config, true, &env).unwrap();
    let Transport::Stdio(stdio) = &config.transport else {
        panic!("{name} is not stdio");
    };
    let env = stdio.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    (stdio.command.clone(), stdio.args.clone(), env)
}

/// The server every case adds: a reference and a plain value.
const ADD: [&str; 8] = [
    "probe",
    "-e",
    "PROBE_KEY=${PROBE_KEY}",
    "-e",
    "MODE=fast",
    "--",
    "probe-server",
    "--flag",
];

struct Case {
    host: &'static str,
    scope: &'static str,
    file: &'static str,
    before: &'static str,
    /// Text that must still be there afterwards (comments, other entries).
    kept: &'static [&'static str],
    /// Text the host's shape puts there.
    shape: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        host: "claude",
        scope: "user",
        file: ".claude.json",
        before: r#"{"numStartups": 42, "mcpServers": {"old": {"type": "stdio", "command": "old"}}, "projects": {"/elsewhere": {"allowedTools": ["Bash"]}}, "tipsHistory": {"a": 1}}"#,
        kept: &[
            r#""numStartups": 42"#,
            r#""allowedTools": ["Bash"]"#,
            r#""tipsHistory""#,
        ],
        shape: &[r#""type": "stdio""#, r#""PROBE_KEY": "${PROBE_KEY}""#],
    },
    Case {
        host: "cursor",
        scope: "user",
        file: ".cursor/mcp.json",
        before: "// Cursor's servers\n{\n  \"mcpServers\": {\n    // the old one\n    \"old\": {\"command\": \"old\"}, // trailing\n  },\n}\n",
        kept: &["// Cursor's servers", "// the old one", "// trailing"],
        shape: &[r#""PROBE_KEY": "${PROBE_KEY}""#],
    },
    Case {
        host: "vscode",
        scope: "user",
        file: ".config/Code/User/mcp.json",
        before: "{\n  // asked once\n  \"inputs\": [{\"type\": \"promptString\", \"id\": \"pat\", \"password\": true}],\n  \"servers\": {\n    \"old\": {\"type\": \"stdio\", \"command\": \"old\", \"args\": [\"${workspaceFolder}\"], \"env\": {\"T\": \"${input:pat}\"}}\n  }\n}\n",
        kept: &[
            "// asked once",
            r#""${input:pat}""#,
            r#""${workspaceFolder}""#,
        ],
        shape: &[r#""type": "stdio""#, r#""PROBE_KEY": "${env:PROBE_KEY}""#],
    },
    Case {
        host: "codex",
        scope: "user",
        file: ".codex/config.toml",
        before: "# Codex settings\nmodel = \"o4\" # the model\n\n[mcp_servers.old]\ncommand = \"old\" # keep me\n",
        kept: &[
            "# Codex settings",
            "model = \"o4\" # the model",
            "command = \"old\" # keep me",
        ],
        shape: &["[mcp_servers.probe]", r#"env_vars = ["PROBE_KEY"]"#],
    },
    Case {
        host: "gemini",
        scope: "user",
        file: ".gemini/settings.json",
        before: "{\n  // Gemini's settings\n  \"theme\": \"dark\",\n  \"mcpServers\": {\"old\": {\"command\": \"old\"}}\n}\n",
        kept: &["// Gemini's settings", r#""theme": "dark""#],
        shape: &[r#""PROBE_KEY": "${PROBE_KEY}""#],
    },
];

#[test]
fn each_host_gets_the_server_in_its_own_shape_and_mcpr_reads_back_exactly_that() {
    for case in CASES {
        let (_dir, home) = home();
        let path = home.join(case.file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, case.before).unwrap();
        // Another tool's file, readable by others: it stays so.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();

        let mut args = vec!["add", "--to", case.host, "--scope", case.scope];
        args.extend(ADD);
        let stdout = ok(&home, &args);
        assert!(stdout.contains("Added `probe`"), "{}: {stdout}", case.host);
        assert!(!stdout.contains("probe-secret-value"), "{stdout}");

        let after = std::fs::read_to_string(&path).unwrap();
        for kept in case.kept.iter().chain(case.shape) {
            assert!(
                after.contains(kept),
                "{}: no {kept:?} in\n{after}",
                case.host
            );
        }
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{}", case.host);
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");

        let found = discover(&home);
        assert_eq!(
            started_as(&found, case.host, "probe"),
            (
                "probe-server".to_owned(),
                vec!["--flag".to_owned()],
                vec![
                    "MODE=fast".to_owned(),
                    "PROBE_KEY=probe-secret-value".into()
                ]
            ),
            "{}:\n{after}",
            case.host
        );
        // The server that was there is still read as before.
        assert!(
            found
                .servers
                .iter()
                .any(|s| s.name == "old" && s.source.provider_id == case.host),
            "{}",
            case.host
        );
    }
}

/// The remote server `name` as mcpr would reach it from `host`'s definition: URL, transport
/// and headers, with every reference resolved.
fn reached_as(found: &Discovery, host: &str, name: &str) -> (String, HttpKind, Vec<String>) {
    assert!(
        found
            .sources
            .get(name)
            .is_some_and(|s| s.provider_id == host),
        "{host}: {:?}",
        found.servers
    );
    let config = &found.configs[name];
    let env = EnvSource::Map([("PROBE_KEY".into(), "probe-secret-value".into())].into());
    let config = resolve_connect_values_with(name, config, true, &env).unwrap();
    let Transport::Http(http) = &config.transport else {
        panic!("{name} is not remote");
    };
    let headers = http
        .headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    (http.url.clone(), http.kind, headers)
}

#[test]
fn remote_servers_round_trip_for_each_host() {
    for host in ["claude", "cursor", "vscode", "codex", "gemini"] {
        let (_dir, home) = home();
        let kinds: &[(&str, HttpKind)] = if host == "codex" {
            &[("http", HttpKind::StreamableHttp)]
        } else {
            &[("http", HttpKind::StreamableHttp), ("sse", HttpKind::Sse)]
        };
        for (transport, kind) in kinds {
            let name = format!("web-{transport}");
            let url = format!("https://{transport}.example/mcp");
            ok(
                &home,
                &[
                    "add",
                    "--to",
                    host,
                    &name,
                    "--transport",
                    transport,
                    &url,
                    "-H",
                    "Authorization: Bearer ${PROBE_KEY}",
                    "-H",
                    "X-Team: blue",
                ],
            );
            let found = discover(&home);
            let (got_url, got_kind, headers) = reached_as(&found, host, &name);
            assert_eq!(
                (got_url.as_str(), got_kind),
                (url.as_str(), *kind),
                "{host}"
            );
            let mut headers = headers;
            headers.sort();
            assert_eq!(
                headers,
                ["Authorization: Bearer probe-secret-value", "X-Team: blue"],
                "{host} {transport}"
            );
        }
    }
}

#[test]
fn claude_code_scopes_land_where_claude_mcp_add_puts_them() {
    let (_dir, home) = home();
    let claude = home.join(".claude.json");
    let before = r#"{"numStartups": 7, "projects": {"/elsewhere": {"allowedTools": []}}}"#;
    std::fs::write(&claude, before).unwrap();
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o600)).unwrap();

    let mut local = vec!["add", "--to", "claude", "--scope", "local"];
    local.extend(ADD);
    ok(&home, &local);
    let root: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
    let project = std::fs::canonicalize(home.join("project")).unwrap();
    let key = project.to_string_lossy();
    assert!(
        root["projects"][key.as_ref()]["mcpServers"]["probe"].is_object(),
        "{root:#}"
    );
    assert_eq!(root["numStartups"], 7);
    assert_eq!(
        root["projects"]["/elsewhere"]["allowedTools"],
        serde_json::json!([])
    );
    assert!(root.get("mcpServers").is_none(), "{root:#}");
    let mode = std::fs::metadata(&claude).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Local scope is the user's own: it starts without any trust step.
    let found = discover(&home);
    assert_eq!(started_as(&found, "claude", "probe").0, "probe-server");

    // Project scope is the repository's `.mcp.json`: written, and waiting for trust.
    let mut shared = vec!["add", "--to", "claude", "--scope", "project", "--force"];
    shared.extend(ADD);
    ok(&home, &shared);
    let mcp_json = std::fs::read_to_string(home.join("project/.mcp.json")).unwrap();
    assert!(
        mcp_json.contains(r#""PROBE_KEY": "${PROBE_KEY}""#),
        "{mcp_json}"
    );

    // `local` is Claude Code's only.
    let mut wrong = vec!["add", "--to", "cursor", "--scope", "local"];
    wrong.extend(ADD);
    let out = mcpr(&home, &wrong);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Claude Code's"),
        "{}",
        both(&out)
    );
}

#[test]
fn add_from_copies_servers_between_hosts_with_references_kept_and_clashes_refused() {
    let (_dir, home) = home();
    std::fs::write(
        home.join(".claude.json"),
        r#"{"mcpServers": {
            "docs": {"type": "http", "url": "https://docs.example/mcp",
                     "headers": {"Authorization": "Bearer ${DOCS_TOKEN}", "X-Team": "sk-literal-team-secret"}},
            "files": {"type": "stdio", "command": "files-server", "env": {"API_KEY": "${API_KEY}"}}
        }}"#,
    )
    .unwrap();

    let out = ok(&home, &["add-from", "claude"]);
    assert!(out.contains("`docs`") && out.contains("`files`"), "{out}");
    assert!(!out.contains("sk-literal-team-secret"), "{out}");
    let mine = home.join(".config/mcpr/mcp.json");
    let written = std::fs::read_to_string(&mine).unwrap();
    assert!(written.contains("Bearer ${DOCS_TOKEN}"), "{written}");
    assert!(written.contains(r#""API_KEY": "${API_KEY}""#), "{written}");

    // A second copy would overwrite: refused, naming --force, file unchanged.
    let out = mcpr(&home, &["add-from", "claude"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("--force"), "{}", both(&out));
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), written);
    ok(&home, &["add-from", "claude", "files", "--force"]);

    // To Codex, which expands nothing: the references become the names Codex reads.
    ok(
        &home,
        &["add-from", "claude", "docs", "files", "--to", "codex"],
    );
    let toml = std::fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(
        toml.contains(r#"bearer_token_env_var = "DOCS_TOKEN""#),
        "{toml}"
    );
    assert!(toml.contains(r#"env_vars = ["API_KEY"]"#), "{toml}");
    let found = discover(&home);
    let codex_docs = found
        .servers
        .iter()
        .find(|s| s.name == "docs" && s.source.provider_id == "codex")
        .and_then(|s| s.config.clone())
        .unwrap();
    assert_eq!(
        codex_docs.bearer_token_env_var.as_deref(),
        Some("DOCS_TOKEN")
    );

    // A VS Code input prompt has no meaning elsewhere: that server is skipped, the rest copied.
    let vscode_user = home.join(".config/Code/User/mcp.json");
    std::fs::create_dir_all(vscode_user.parent().unwrap()).unwrap();
    std::fs::write(
        &vscode_user,
        r#"{"inputs": [{"type": "promptString", "id": "pat", "password": true}],
            "servers": {"gh": {"type": "stdio", "command": "gh-server", "env": {"T": "${input:pat}"}},
                        "plain": {"type": "stdio", "command": "plain-server"}}}"#,
    )
    .unwrap();
    let out = ok(&home, &["add-from", "vscode", "--to", "gemini"]);
    assert!(
        out.contains("Skipped `gh`") && out.contains("input"),
        "{out}"
    );
    assert!(out.contains("Copied `plain`"), "{out}");

    // To VS Code, which reads `${env:VAR}`.
    ok(&home, &["add-from", "codex", "files", "--to", "vscode"]);
    let vscode = std::fs::read_to_string(home.join(".config/Code/User/mcp.json")).unwrap();
    assert!(
        vscode.contains(r#""API_KEY": "${env:API_KEY}""#),
        "{vscode}"
    );

    // Claude Code's own habit: Claude Desktop's servers into Claude Code's file.
    let desktop = home.join(".config/Claude/claude_desktop_config.json");
    std::fs::create_dir_all(desktop.parent().unwrap()).unwrap();
    std::fs::write(
        &desktop,
        r#"{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}"#,
    )
    .unwrap();
    ok(&home, &["add-from", "claude-desktop", "--to", "claude"]);
    let found = discover(&home);
    let (command, args, _) = started_as(&found, "claude", "time");
    assert_eq!(
        (command.as_str(), args),
        ("uvx", vec!["mcp-server-time".to_owned()])
    );
    let out = mcpr(&home, &["add-from-claude-desktop"]);
    assert!(
        text(&out.stderr).contains("mcpr add-from claude-desktop"),
        "{}",
        both(&out)
    );

    let out = mcpr(&home, &["add-from", "claude", "nope"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("`nope`"), "{}", both(&out));
}

#[test]
fn add_from_never_copies_a_server_of_an_untrusted_project() {
    let (_dir, home) = home();
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::write(
        home.join(".cursor/mcp.json"),
        r#"{"mcpServers": {"fine": {"command": "fine-server"}}}"#,
    )
    .unwrap();
    // A cloned repository brings its own Cursor server.
    std::fs::create_dir_all(home.join("project/.cursor")).unwrap();
    std::fs::write(
        home.join("project/.cursor/mcp.json"),
        r#"{"mcpServers": {"evil": {"command": "./steal-keys.sh"}}}"#,
    )
    .unwrap();

    let out = ok(&home, &["add-from", "cursor"]);
    let mine = std::fs::read_to_string(home.join(".config/mcpr/mcp.json")).unwrap();
    assert!(mine.contains("fine-server"), "{mine}");
    assert!(!mine.contains("steal-keys"), "copied:\n{mine}");
    assert!(out.contains("Skipped `evil`"), "{out}");
    assert!(out.contains("not trusted"), "{out}");

    // Asked for by name: still not copied, and said so.
    let out = mcpr(&home, &["add-from", "cursor", "evil", "--to", "claude"]);
    assert!(!out.status.success(), "{}", both(&out));
    assert!(both(&out).contains("Skipped `evil`"), "{}", both(&out));
    assert!(!home.join(".claude.json").exists());

    // Once the user trusts the project, it is theirs to copy.
    ok(&home, &["trust"]);
    let out = ok(&home, &["add-from", "cursor", "evil"]);
    assert!(out.contains("`evil`"), "{out}");
}

#[test]
fn a_project_host_file_linking_out_of_the_project_is_not_written() {
    let (_dir, home) = home();
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    let user_file = home.join(".cursor/mcp.json");
    let before = r#"{"mcpServers": {"mine": {"command": "mine"}}}"#;
    std::fs::write(&user_file, before).unwrap();
    // The repository's `.cursor/mcp.json` is a link to the user's own Cursor file: a
    // "project" server written there would start in every project.
    std::fs::create_dir_all(home.join("project/.cursor")).unwrap();
    std::os::unix::fs::symlink(
        "../../.cursor/mcp.json",
        home.join("project/.cursor/mcp.json"),
    )
    .unwrap();

    let mut args = vec!["add", "--to", "cursor", "--scope", "project"];
    args.extend(ADD);
    let out = mcpr(&home, &args);
    assert!(!out.status.success(), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("outside the project"),
        "{}",
        both(&out)
    );
    assert_eq!(std::fs::read_to_string(&user_file).unwrap(), before);
}

#[test]
fn what_a_host_cannot_read_is_refused_with_the_field_and_the_file_left_alone() {
    let (_dir, home) = home();
    // Codex expands no `${VAR}`: a reference it cannot take by name would reach the server as
    // text.
    let out = mcpr(
        &home,
        &[
            "add",
            "--to",
            "codex",
            "s",
            "-e",
            "A=${OTHER}",
            "--",
            "prog",
        ],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("env.A") && err.contains("Codex"), "{err}");
    assert!(!home.join(".codex/config.toml").exists());

    // Codex speaks streamable HTTP only.
    let out = mcpr(
        &home,
        &[
            "add",
            "--to",
            "codex",
            "old",
            "--transport",
            "sse",
            "https://e.example/sse",
        ],
    );
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("SSE"), "{}", both(&out));
    // A sandboxed server would run unconfined under another host: refused, not dropped.
    let out = mcpr(
        &home,
        &["add", "--to", "claude", "boxed", "--sandbox", "--", "prog"],
    );
    assert!(!out.status.success(), "{}", both(&out));
    assert!(text(&out.stderr).contains("unconfined"), "{}", both(&out));
    assert!(!home.join(".claude.json").exists());
    // A setting the host has no field for is named, not silently lost.
    let out = ok(
        &home,
        &[
            "add",
            "--to",
            "cursor",
            "slow",
            "--timeout",
            "5000",
            "--",
            "prog",
        ],
    );
    assert!(
        out.contains("not carried") && out.contains("timeout"),
        "{out}"
    );

    // A host file that does not parse is reported with its place, and never overwritten.
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    let broken = "{\n  \"mcpServers\": {,\n}\n";
    std::fs::write(home.join(".gemini/settings.json"), broken).unwrap();
    let mut args = vec!["add", "--to", "gemini"];
    args.extend(ADD);
    let out = mcpr(&home, &args);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("settings.json:2"),
        "{}",
        both(&out)
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".gemini/settings.json")).unwrap(),
        broken
    );
}

#[test]
fn a_server_written_into_cursors_file_is_reached_through_that_entry() {
    let (_dir, home) = home();
    ok(
        &home,
        &["add", "--to", "cursor", "echoer", "--", MCPR, "mock"],
    );
    let out = ok(&home, &["call", "echoer", "echo", "text=through cursor"]);
    assert_eq!(out.trim(), "through cursor");
}
