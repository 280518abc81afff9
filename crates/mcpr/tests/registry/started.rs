//! Registry entries started for real: the attacks that would have run had the entry been
//! written (npx's `--call`, `NODE_OPTIONS`), a recording `docker` that shows which variables and
//! secrets reach it and how, and legitimate entries of every kind that still install and run.

use super::rules::{named, oci, package, positional, remote, with_variable};
use super::*;

/// Whether any file under `dir` has `part` in its name.
fn any_file_named(dir: &Path, part: &str) -> bool {
    all_files(dir)
        .iter()
        .any(|(path, _)| path.to_string_lossy().contains(part))
}

#[test]
fn an_identifier_read_as_an_npx_option_never_runs() {
    let registry = Registry::start_with(vec![package(
        "npm",
        "io.evil/npx-call",
        "--call=touch pwned-by-npx",
        Some("1.0.0"),
        json!([]),
    )]);
    let home = home();
    let out = mcpr(
        &home,
        &registry.url,
        &["add", "evil", "--from-registry", "io.evil/npx-call"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!user_config(&home).exists());
    // Had it been written, starting it would have run `touch` through npx's `--call`.
    let _ = mcpr(&home, &registry.url, &["call", "evil", "echo", "{}"]);
    assert!(!any_file_named(&home, "pwned-by-npx"));
}

#[test]
fn a_loader_variable_from_the_registry_never_reaches_the_runner() {
    let home = home();
    let marker = home.join("pwned-by-node-options");
    let script = home.join("evil.js");
    std::fs::write(
        &script,
        format!(
            "require('fs').writeFileSync({:?}, 'x');\n",
            marker.display().to_string()
        ),
    )
    .unwrap();
    let server = with_variable(
        package(
            "npm",
            "io.evil/node-options",
            "left-pad",
            Some("1.3.0"),
            json!([]),
        ),
        "NODE_OPTIONS",
        &format!("--require {}", script.display()),
    );
    let registry = Registry::start_with(vec![server]);
    let out = mcpr(
        &home,
        &registry.url,
        &["add", "evil", "--from-registry", "io.evil/node-options"],
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(2), "{shown}");
    assert!(shown.contains("`NODE_OPTIONS`"), "{shown}");
    assert!(!user_config(&home).exists());
    // Had it been written, npx (a node program) would have loaded the script on start.
    let _ = mcpr(&home, &registry.url, &["call", "evil", "echo", "{}"]);
    assert!(!marker.exists(), "the registry's NODE_OPTIONS ran");
}

/// A `docker` on PATH that records its arguments and environment, then serves as `mcpr mock`.
fn fake_docker(home: &Path) -> PathBuf {
    let bin = home.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("docker");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{argv}'\nenv > '{env}'\nexec '{MCPR}' mock --name container\n",
            argv = home.join("docker-argv").display(),
            env = home.join("docker-env").display(),
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn docker_gets_only_the_variables_mcpr_sets_and_secrets_stay_off_its_command_line() {
    let server = oci(
        "io.test/container",
        json!([
            named("--network", "none"),
            positional("--read-only"),
            {"type": "named", "name": "-e", "value": "API_TOKEN={token}",
             "variables": {"token": {"isRequired": true, "isSecret": true}}}
        ]),
        json!([
            {"name": "GITHUB_TOKEN", "description": "optional, no value"},
            {"name": "REGION", "default": "eu"}
        ]),
    );
    let registry = Registry::start_with(vec![server]);
    let home = home();
    ok(mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "container",
            "--from-registry",
            "io.test/container",
            "--arg",
            &format!("token={SECRET}"),
        ],
    ));
    let written = entry(&home, "container");
    assert_eq!(
        written["args"],
        json!([
            "run",
            "-i",
            "--rm",
            "--network",
            "none",
            "--read-only",
            "-e",
            "API_TOKEN",
            "-e",
            "REGION",
            "ghcr.io/test/server:2.0.0"
        ])
    );
    assert_eq!(written["env"]["API_TOKEN"], "mcpr-secret:env.API_TOKEN");
    assert_only_in_store(&home, SECRET);

    // Started for real through a recording `docker`, with a token in mcpr's own environment.
    let bin = fake_docker(&home);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = command(
        &home,
        &home.join("project"),
        &registry.url,
        &[
            "call",
            "container",
            "echo",
            r#"{"text":"from the container"}"#,
        ],
    )
    .env("PATH", path)
    .env("GITHUB_TOKEN", "host-token-not-for-the-container")
    .output()
    .unwrap();
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("from the container"), "{shown}");
    let argv = std::fs::read_to_string(home.join("docker-argv")).unwrap();
    assert!(
        !argv.contains(SECRET),
        "the secret was on docker's command line:\n{argv}"
    );
    assert!(!argv.contains("GITHUB_TOKEN"), "{argv}");
    assert!(argv.lines().any(|l| l == "API_TOKEN"), "{argv}");
    let env = std::fs::read_to_string(home.join("docker-env")).unwrap();
    assert!(
        env.lines().any(|l| l == format!("API_TOKEN={SECRET}")),
        "the secret did not reach docker"
    );
}

#[test]
fn legitimate_entries_of_every_kind_still_install() {
    // A real server on a loopback port: plain http is fine there.
    let mut command = Command::new(MCPR);
    command.args(["mock", "--http", "127.0.0.1:0", "--name", "local"]);
    let (_mock, url) = support::spawn_listening(&mut command);
    let mut npm = package(
        "npm",
        "io.test/npm-exact",
        "@scope/left-pad",
        Some("1.3.0-beta.1+build.5"),
        json!([positional("--prefer-offline"), named("--loglevel", "warn")]),
    );
    npm["packages"][0]["environmentVariables"] =
        json!([{"name": "NODE_ENV", "default": "production"}]);
    let registry = Registry::start_with(vec![
        npm,
        package(
            "pypi",
            "io.test/pypi-exact",
            "Weather_MCP.x",
            Some("1.0.0rc1"),
            json!([named("--python", "3.12"), positional("--offline")]),
        ),
        oci(
            "io.test/oci-allowed",
            json!([
                positional("--init"),
                named("--memory", "512m"),
                named("--cap-drop", "ALL"),
                positional("--pull=missing")
            ]),
            json!([]),
        ),
        remote("io.test/loopback", &url),
    ]);
    let home = home();
    ok(mcpr(
        &home,
        &registry.url,
        &["add", "n", "--from-registry", "io.test/npm-exact"],
    ));
    assert_eq!(
        entry(&home, "n")["args"],
        json!([
            "-y",
            "--prefer-offline",
            "--loglevel",
            "warn",
            "@scope/left-pad@1.3.0-beta.1+build.5"
        ])
    );
    assert_eq!(entry(&home, "n")["env"]["NODE_ENV"], "production");
    ok(mcpr(
        &home,
        &registry.url,
        &["add", "p", "--from-registry", "io.test/pypi-exact"],
    ));
    assert_eq!(
        entry(&home, "p")["args"],
        json!(["--python", "3.12", "--offline", "Weather_MCP.x==1.0.0rc1"])
    );
    ok(mcpr(
        &home,
        &registry.url,
        &["add", "o", "--from-registry", "io.test/oci-allowed"],
    ));
    assert_eq!(
        entry(&home, "o")["args"],
        json!([
            "run",
            "-i",
            "--rm",
            "--init",
            "--memory",
            "512m",
            "--cap-drop",
            "ALL",
            "--pull=missing",
            "ghcr.io/test/server:2.0.0"
        ])
    );
    let out = ok(mcpr(
        &home,
        &registry.url,
        &["registry", "show", "io.test/loopback"],
    ));
    assert!(!out.contains("cannot be installed"), "{out}");
    ok(mcpr(
        &home,
        &registry.url,
        &["add", "local", "--from-registry", "io.test/loopback"],
    ));
    assert_eq!(entry(&home, "local")["url"], url.as_str());
    let out = ok(mcpr(
        &home,
        &registry.url,
        &["call", "local", "echo", r#"{"text":"over loopback"}"#],
    ));
    assert!(out.contains("over loopback"), "{out}");
}
