//! Project trust: project servers wait until the project is trusted, and trust binds to the
//! config files, the files servers read and the project files they run.

mod discovery_fixture;

use discovery_fixture::*;

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
    let options = fx.options().with_enable_project_config(true);
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
    let options = DiscoveryOptions::default()
        .with_home(Some(home.clone()))
        .with_env(EnvSource::map([("HOME", home.to_string_lossy())]))
        .with_trust_store(Some(root.join("trust.json")));
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
    let options = DiscoveryOptions::default()
        .with_home(Some(home.clone()))
        .with_env(EnvSource::map([("HOME", home.to_string_lossy())]))
        .with_trust_store(Some(root.join("trust.json")));
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

/// A home and a project next to each other (the project outside the home), and options that
/// keep everything inside them.
fn home_and_project() -> (tempfile::TempDir, PathBuf, PathBuf, DiscoveryOptions) {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let (home, project) = (root.join("home"), root.join("project"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let options = DiscoveryOptions::default()
        .with_home(Some(home.clone()))
        .with_env(EnvSource::map([("HOME", home.to_string_lossy())]))
        .with_trust_store(Some(root.join("trust.json")));
    (tmp, home, project, options)
}

fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn trust_binds_to_the_code_that_loader_variables_name() {
    let (_tmp, _home, project, options) = home_and_project();
    for (file, text) in [
        ("hook.js", "// hook\n"),
        ("hook2.js", "// hook from the envFile\n"),
        ("lib/pkg/__init__.py", ""),
        ("lib/pkg/mod.py", "X = 1\n"),
        ("env.sh", "export A=1\n"),
        ("preload.so", "\x7fELF"),
        (".env", "NODE_OPTIONS=--require ./hook2.js\n"),
    ] {
        write_file(&project.join(file), text);
    }
    write_file(
        &project.join(".mcp.json"),
        r#"{"mcpServers": {
            "node-hook": {"command": "node", "args": ["-e", "0"], "env": {"NODE_OPTIONS": "--max-old-space-size=64 --require ./hook.js"}},
            "python-path": {"command": "python3", "args": ["-m", "srv"], "env": {"PYTHONPATH": "/nonexistent:./lib"}},
            "bash-env": {"command": "bash", "args": ["-c", "true"], "env": {"BASH_ENV": "./env.sh"}},
            "preload": {"command": "/bin/true", "env": {"LD_PRELOAD": "/nonexistent.so ./preload.so"}},
            "control": {"command": "/bin/true", "env": {"LOG_LEVEL": "./hook.js", "CONFIG": "./lib"}}
        }}"#,
    );
    // The same variable read from an `envFile` binds as well.
    write_file(
        &project.join(".vscode/mcp.json"),
        r#"{"servers": {"from-env-file": {"type": "stdio", "command": "node", "envFile": "${workspaceFolder}/.env"}}}"#,
    );
    let found = load_all_mcp_configs(&project, &options);
    assert_eq!(found.project.state, ProjectTrustState::Untrusted);
    for file in [
        "hook.js",
        "hook2.js",
        "lib/pkg/__init__.py",
        "lib/pkg/mod.py",
        "env.sh",
        "preload.so",
    ] {
        assert!(
            found.project.files.contains(&project.join(file)),
            "{file} is not bound: {:?}",
            found.project.files
        );
    }
    assert!(found.winner("control").unwrap().runs.is_empty());
    assert_eq!(
        found.winner("python-path").unwrap().runs,
        vec![project.join("lib")]
    );

    trust_project(&project, &options).unwrap();
    let servers = [
        ("node-hook", "hook.js"),
        ("from-env-file", "hook2.js"),
        ("python-path", "lib/pkg/mod.py"),
        ("bash-env", "env.sh"),
        ("preload", "preload.so"),
    ];
    let enabled = |found: &Discovery| {
        for name in servers.iter().map(|(name, _)| *name).chain(["control"]) {
            assert!(found.configs.contains_key(name), "{name} is not enabled");
        }
    };
    // Unchanged files: a second start needs no new approval.
    enabled(&load_all_mcp_configs(&project, &options));

    // A pull changes one loaded file: the server waits, naming it; the control names nothing.
    for (name, file) in servers {
        std::fs::write(project.join(file), "// changed by a pull\n").unwrap();
        let found = load_all_mcp_configs(&project, &options);
        assert_eq!(found.project.state, ProjectTrustState::Changed, "{file}");
        let server = found.winner(name).unwrap();
        assert_eq!(server.state, ServerState::PendingApproval, "{name}");
        assert_eq!(
            server.pending_reason,
            Some(PendingReason::Changed(vec![project.join(file)])),
            "{name}"
        );
        assert!(!found.configs.contains_key(name), "{name}");
        assert_eq!(found.winner("control").unwrap().pending_reason, None);
        trust_project(&project, &options).unwrap();
        enabled(&load_all_mcp_configs(&project, &options));
    }

    // A module added to the search path is code as well.
    write_file(&project.join("lib/pkg/new.py"), "import os\n");
    let found = load_all_mcp_configs(&project, &options);
    assert_eq!(
        found.winner("python-path").unwrap().pending_reason,
        Some(PendingReason::Changed(vec![project.join("lib/pkg/new.py")]))
    );
}

#[test]
fn a_user_config_loading_code_from_an_untrusted_project_waits() {
    let (_tmp, home, project, options) = home_and_project();
    write_file(&project.join("lib/mod.py"), "X = 1\n");
    write_file(&home.join("lib/own.py"), "Y = 1\n");
    write_file(
        &home.join(".cursor/mcp.json"),
        &format!(
            r#"{{"mcpServers": {{
                "project-lib": {{"command": "python3", "args": ["-m", "srv"], "env": {{"PYTHONPATH": "${{workspaceFolder}}/lib"}}}},
                "own-lib": {{"command": "python3", "args": ["-m", "srv"], "env": {{"PYTHONPATH": "{}"}}}},
                "not-a-loader": {{"command": "/bin/true", "env": {{"LOG_LEVEL": "${{workspaceFolder}}/lib"}}}}
            }}}}"#,
            home.join("lib").display()
        ),
    );
    let found = load_all_mcp_configs(&project, &options);
    let server = found.winner("project-lib").unwrap();
    assert_eq!(server.state, ServerState::PendingApproval);
    assert_eq!(
        server.pending_reason,
        Some(PendingReason::RunsProject(vec![project.join("lib")]))
    );
    assert_eq!(
        server.pending_reason.as_ref().unwrap().to_string(),
        format!(
            "runs {} from the untrusted project",
            project.join("lib").display()
        )
    );
    assert!(!found.configs.contains_key("project-lib"));
    assert!(found.configs.contains_key("own-lib"));
    assert!(found.configs.contains_key("not-a-loader"));
    assert_eq!(found.project.files, vec![project.join("lib/mod.py")]);

    // Trusted, it starts, bound to the module as it is now.
    trust_project(&project, &options).unwrap();
    assert!(
        load_all_mcp_configs(&project, &options)
            .configs
            .contains_key("project-lib")
    );
    std::fs::write(project.join("lib/mod.py"), "import os\n").unwrap();
    let found = load_all_mcp_configs(&project, &options);
    assert_eq!(
        found.winner("project-lib").unwrap().pending_reason,
        Some(PendingReason::Changed(vec![project.join("lib/mod.py")]))
    );
    assert!(!found.configs.contains_key("project-lib"));
}

#[test]
fn a_directory_past_the_bound_is_bound_by_its_listing() {
    use mcp_runtime::config::trust::MAX_TREE_FILES;
    let (_tmp, _home, project, options) = home_and_project();
    let lib = project.join("site-packages");
    std::fs::create_dir_all(&lib).unwrap();
    for i in 0..=MAX_TREE_FILES {
        std::fs::write(lib.join(format!("m{i:04}.py")), "x = 1\n").unwrap();
    }
    write_file(
        &project.join(".mcp.json"),
        r#"{"mcpServers": {"big": {"command": "python3", "env": {"PYTHONPATH": "site-packages"}}}}"#,
    );
    let found = load_all_mcp_configs(&project, &options);
    // The directory stands for its files: one entry, not a thousand.
    assert_eq!(
        found.project.files,
        vec![project.join(".mcp.json"), lib.clone()]
    );
    trust_project(&project, &options).unwrap();
    assert!(
        load_all_mcp_configs(&project, &options)
            .configs
            .contains_key("big")
    );

    // A renamed file, then a resized one, ask again, naming the directory.
    std::fs::rename(lib.join("m0007.py"), lib.join("m0007_.py")).unwrap();
    let pending = |found: &Discovery| {
        assert_eq!(
            found.winner("big").unwrap().pending_reason,
            Some(PendingReason::Changed(vec![lib.clone()]))
        );
        assert!(!found.configs.contains_key("big"));
    };
    pending(&load_all_mcp_configs(&project, &options));
    trust_project(&project, &options).unwrap();
    assert!(
        load_all_mcp_configs(&project, &options)
            .configs
            .contains_key("big")
    );
    std::fs::write(lib.join("m0042.py"), "import os; os.system('x')\n").unwrap();
    pending(&load_all_mcp_configs(&project, &options));
}
