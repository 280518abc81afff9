//! What a stdio server finds in its environment, against the real binary and real server
//! processes that write their environment to a file (`mcpr mock --env-dump`): cloud keys and
//! mcpr's own variables (the gateway token above all) stay out; `env_vars`, `inheritEnv` and
//! `MCPR_INHERIT_ENV` pass what they name; a server that dies for want of a variable names it.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{MCPR, temp_dir};

const SECRET: &str = "aws-secret-value-4711";
const GATEWAY_TOKEN: &str = "gateway-token-value-0815";

/// `dir/mcp.json` with these servers; returns its path.
fn config(dir: &Path, servers: Value) -> PathBuf {
    let path = dir.join("mcp.json");
    std::fs::write(&path, json!({ "mcpServers": servers }).to_string()).unwrap();
    path
}

/// A server entry running `mcpr mock` that dumps its environment into `dump`, with `extra`
/// keys merged in.
fn dumping(dump: &Path, extra: Value) -> Value {
    let mut entry = json!({
        "command": MCPR,
        "args": ["mock", "--env-dump", dump.to_str().unwrap()],
    });
    for (key, value) in extra.as_object().unwrap() {
        entry[key] = value.clone();
    }
    entry
}

/// `mcpr` run in an isolated home with the hostile environment every test starts from, plus
/// `env`.
fn mcpr(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home);
    support::isolate_env(&mut command, home);
    command
        .env("AWS_SECRET_ACCESS_KEY", SECRET)
        .env("OPENAI_API_KEY", "openai-key-value")
        .env("MCPR_GATEWAY_TOKEN", GATEWAY_TOKEN)
        .env("NODE_OPTIONS", "--require /nonexistent/hook.js")
        .env_remove("MCPR_INHERIT_ENV")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn run(home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    mcpr(home, args, env).output().expect("run mcpr")
}

/// The environment a server wrote with `--env-dump`.
fn dumped(path: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("no environment dump at {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

fn tools(home: &Path, config: &Path, env: &[(&str, &str)]) -> Output {
    let out = run(
        home,
        &[
            "--strict-config",
            "--config",
            config.to_str().unwrap(),
            "tools",
            "--json",
        ],
        env,
    );
    assert!(
        out.status.success(),
        "mcpr tools failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_server_receives_neither_the_hosts_secrets_nor_mcprs_own_variables() {
    let home = temp_dir();
    let dump = home.path().join("env");
    // Even a config that asks for mcpr's token by name.
    let config = config(
        home.path(),
        json!({ "srv": dumping(&dump, json!({"env_vars": ["MCPR_GATEWAY_TOKEN"]})) }),
    );
    tools(home.path(), &config, &[]);

    let env = dumped(&dump);
    for absent in [
        "AWS_SECRET_ACCESS_KEY",
        "OPENAI_API_KEY",
        "MCPR_GATEWAY_TOKEN",
        "NODE_OPTIONS",
    ] {
        assert!(!env.contains_key(absent), "{absent} reached the server");
    }
    assert!(
        !env.values().any(|v| v == SECRET || v == GATEWAY_TOKEN),
        "a secret value reached the server under another name"
    );
    // What programs need to run and find their files still arrives.
    assert_eq!(env.get("HOME").map(String::as_str), home.path().to_str());
    assert!(env.contains_key("PATH"));
    assert!(env.contains_key("XDG_CACHE_HOME"));
    // And the nesting count mcpr sets on every process it starts.
    assert_eq!(env.get("MCPR_NESTING").map(String::as_str), Some("1"));
}

#[test]
fn env_vars_and_configured_values_reach_the_server() {
    let home = temp_dir();
    let dump = home.path().join("env");
    let config = config(
        home.path(),
        json!({ "srv": dumping(&dump, json!({
            "env_vars": ["AWS_PROFILE", {"name": "AWS_REGION", "source": "local"}],
            "env": {"CONFIGURED": "yes"},
        })) }),
    );
    tools(
        home.path(),
        &config,
        &[("AWS_PROFILE", "work"), ("AWS_REGION", "eu-west-1")],
    );
    let env = dumped(&dump);
    assert_eq!(env.get("AWS_PROFILE").map(String::as_str), Some("work"));
    assert_eq!(env.get("AWS_REGION").map(String::as_str), Some("eu-west-1"));
    assert_eq!(env.get("CONFIGURED").map(String::as_str), Some("yes"));
    assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
}

#[test]
fn inherit_env_passes_everything_but_mcprs_own() {
    let home = temp_dir();
    let (one, all) = (home.path().join("one"), home.path().join("all"));
    // Per server.
    let config_one = config(
        home.path(),
        json!({ "srv": dumping(&one, json!({"inheritEnv": true})) }),
    );
    tools(home.path(), &config_one, &[]);
    // For every server, from the environment.
    let config_all = config(home.path(), json!({ "srv": dumping(&all, json!({})) }));
    tools(home.path(), &config_all, &[("MCPR_INHERIT_ENV", "1")]);

    for dump in [one, all] {
        let env = dumped(&dump);
        assert_eq!(
            env.get("AWS_SECRET_ACCESS_KEY").map(String::as_str),
            Some(SECRET)
        );
        assert!(env.contains_key("NODE_OPTIONS"));
        assert!(
            !env.contains_key("MCPR_GATEWAY_TOKEN"),
            "{}",
            dump.display()
        );
        assert!(!env.contains_key("MCPR_INHERIT_ENV"));
        assert_eq!(env.get("MCPR_NESTING").map(String::as_str), Some("1"));
    }
}

#[test]
fn a_server_that_dies_for_want_of_a_variable_names_it_but_not_its_value() {
    let home = temp_dir();
    // A server that relied on inheriting its token.
    let script = format!(
        r#"[ -n "$MY_SERVICE_TOKEN" ] || {{ echo "MY_SERVICE_TOKEN is not set" >&2; exit 1; }}; exec "{MCPR}" mock"#
    );
    let config = config(
        home.path(),
        json!({ "needy": {"command": "sh", "args": ["-c", script]} }),
    );
    let out = run(
        home.path(),
        &[
            "--strict-config",
            "--config",
            config.to_str().unwrap(),
            "tools",
        ],
        &[("MY_SERVICE_TOKEN", "token-value-1234")],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let held = stderr
        .lines()
        .find(|line| line.contains("not passed from mcpr's environment"))
        .unwrap_or_else(|| panic!("the error names no held-back variable: {stderr}"));
    assert!(held.contains("MY_SERVICE_TOKEN"), "{held}");
    assert!(stderr.contains("env_vars"), "{stderr}");
    assert!(!stderr.contains("token-value-1234"), "{stderr}");
    assert!(!stderr.contains(SECRET), "{stderr}");
    assert!(!stderr.contains("MCPR_GATEWAY_TOKEN"), "{stderr}");

    // Named in `env_vars`, it starts.
    let config = config_with_env_vars(home.path(), &script);
    let out = run(
        home.path(),
        &[
            "--strict-config",
            "--config",
            config.to_str().unwrap(),
            "tools",
            "--json",
        ],
        &[("MY_SERVICE_TOKEN", "token-value-1234")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn config_with_env_vars(dir: &Path, script: &str) -> PathBuf {
    config(
        dir,
        json!({ "needy": {
            "command": "sh",
            "args": ["-c", script],
            "env_vars": ["MY_SERVICE_TOKEN"],
        } }),
    )
}

#[test]
fn get_names_the_variables_a_server_receives_never_their_values() {
    let home = temp_dir();
    let config = config(
        home.path(),
        json!({ "srv": {
            "command": MCPR,
            "args": ["mock"],
            "env_vars": ["AWS_PROFILE"],
            "env": {"CONFIGURED": "configured-value"},
        } }),
    );
    let out = run(
        home.path(),
        &[
            "--strict-config",
            "--config",
            config.to_str().unwrap(),
            "get",
            "srv",
        ],
        &[("AWS_PROFILE", "profile-value")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let passes = stdout
        .lines()
        .find(|line| line.trim_start().starts_with("passes"))
        .unwrap_or_else(|| panic!("no `passes` row: {stdout}"));
    for name in ["AWS_PROFILE", "CONFIGURED", "HOME", "PATH", "MCPR_NESTING"] {
        assert!(passes.contains(name), "{name} missing: {passes}");
    }
    assert!(!passes.contains("AWS_SECRET_ACCESS_KEY"), "{passes}");
    assert!(!passes.contains("MCPR_GATEWAY_TOKEN"), "{passes}");
    assert!(!stdout.contains("profile-value"), "{stdout}");
}

#[test]
fn no_backend_of_a_gateway_receives_its_token_under_any_name() {
    let home = temp_dir();
    let dump = home.path().join("env");
    let token_file = home.path().join("token");
    std::fs::write(&token_file, format!("{GATEWAY_TOKEN}\n")).unwrap();
    // Even a backend that inherits everything, from a host that keeps the token elsewhere too.
    let config = config(
        home.path(),
        json!({ "srv": dumping(&dump, json!({"inheritEnv": true})) }),
    );
    let mut child = mcpr(
        home.path(),
        &[
            "--strict-config",
            "--config",
            config.to_str().unwrap(),
            "serve",
            "--http",
            "127.0.0.1:0",
            "--token-file",
            token_file.to_str().unwrap(),
        ],
        &[("GATEWAY_TOKEN_COPY", GATEWAY_TOKEN)],
    )
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .expect("start mcpr serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dump.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // The dump is written before the backend serves: give the write time to finish.
    std::thread::sleep(Duration::from_millis(200));
    let _ = child.kill();
    let _ = child.wait();

    let env = dumped(&dump);
    assert!(!env.contains_key("MCPR_GATEWAY_TOKEN"));
    assert!(!env.contains_key("GATEWAY_TOKEN_COPY"));
    assert!(!env.values().any(|v| v == GATEWAY_TOKEN));
    // The backend did inherit the rest.
    assert_eq!(
        env.get("AWS_SECRET_ACCESS_KEY").map(String::as_str),
        Some(SECRET)
    );
}
