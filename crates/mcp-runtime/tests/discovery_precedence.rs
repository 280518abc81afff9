//! Which definition wins a name: `--config` files, provider priority, shadowing, project
//! config turned off, and mcpr's own files and lists that turn servers on and off.

mod discovery_fixture;

use discovery_fixture::*;

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
    let options = fx
        .trusted()
        .with_explicit_files(vec![extra.clone(), yaml.clone()]);
    let found = fx.discover(&options);
    assert_eq!(stdio(&found.configs["github"]).command, "from-config-flag");
    assert_eq!(found.sources["github"].provider_id, "config");
    assert_eq!(found.sources["github"].path, extra);
    assert!(found.configs.contains_key("only-here"));
    assert_eq!(
        found.configs.keys().next().map(String::as_str),
        Some("github")
    );

    let strict = fx.discover(&options.with_strict(true));
    let names: Vec<&str> = strict.configs.keys().map(String::as_str).collect();
    assert_eq!(names, vec!["github", "only-here"]);
    assert_eq!(strict.project.state, ProjectTrustState::NoProjectConfig);
}

#[test]
fn disabling_project_config_removes_every_project_entry() {
    let fx = fixture();
    let found = fx.discover(&fx.trusted().with_enable_project_config(false));
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

    // Remove: mcpr files only; another tool's server is named with the tool and its file.
    assert_eq!(
        writer::remove_server(&options, &fx.project, "added", None, None).unwrap(),
        user_file
    );
    let err = writer::remove_server(&options, &fx.project, "cursor-user", None, Some(&found))
        .unwrap_err();
    assert!(
        matches!(
            &err,
            mcp_runtime::config::ConfigError::ForeignDefinition { server, provider, .. }
                if server == "cursor-user" && provider == "Cursor"
        ),
        "{err}"
    );
    assert!(writer::set_enabled(&found, &options, "no-such-server", true).is_err());
}
