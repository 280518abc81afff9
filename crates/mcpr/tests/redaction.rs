//! Secrets never appear in output: run the CLI with secrets in the environment,
//! referenced from every kind of field, and look for them in everything it prints.

mod support;

use std::process::{Command, Stdio};

use serde_json::json;
use support::MCPR;

const SECRETS: [&str; 5] = [
    "sk-env-secret-0001",
    "hdr-secret-0002",
    "url-secret-0003",
    "arg-secret-0004",
    "cmd-secret-0005",
];

#[test]
fn no_command_prints_a_secret() {
    let home = support::isolated_home();
    let dir = support::temp_dir();
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {
        // A working server whose env carries secrets (expanded and `!command` values).
        "local": {
            "command": MCPR,
            "args": ["mock"],
            "env": {"API_KEY": "${API_KEY}", "FROM_CMD": "!printf %s-%s cmd-secret 0005"}
        },
        // A failing stdio server: secrets in its args must not leak through its error.
        "broken": {
            "command": MCPR,
            "args": ["mock", "--fail-init", "boom", "--token=${ARG_TOKEN}"],
            "env": {"API_KEY": "${API_KEY}"}
        },
        // An unreachable remote server: secrets in URL and headers must not leak through
        // connection errors.
        "remote": {
            "url": "http://127.0.0.1:9/mcp?key=${URL_KEY}",
            "headers": {"Authorization": "Bearer ${HEADER_TOKEN}"}
        }
    }});
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap();

    let runs: &[&[&str]] = &[
        &["servers", "--all"],
        &["servers", "--all", "--json"],
        &["tools"],
        &["tools", "--json"],
        &["status"],
        &["status", "--json"],
        &["call", "local", "echo", r#"{"text": "hi"}"#],
        &["call", "broken", "echo"],
        &["call", "remote", "echo"],
    ];
    for args in runs {
        let mut command = Command::new(MCPR);
        command
            .args(*args)
            .args(["--config", config, "--strict-config"])
            .current_dir(home.join("project"))
            .stdin(Stdio::null())
            .env("RUST_LOG", "debug");
        support::isolate_env(&mut command, &home);
        command
            .env("API_KEY", SECRETS[0])
            .env("HEADER_TOKEN", SECRETS[1])
            .env("URL_KEY", SECRETS[2])
            .env("ARG_TOKEN", SECRETS[3]);
        let out = command.output().expect("run mcpr");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for secret in SECRETS {
            assert!(
                !printed.contains(secret),
                "`mcpr {}` printed the secret {secret}:\n{printed}",
                args.join(" ")
            );
        }
    }
}
