//! The state key that gateway replicas share (`--state-key-file`, `MCPR_STATE_KEY_FILE`):
//!
//! - `--generate-state-key` writes a private file once and never replaces it;
//!   `--rotate-state-key` puts a new key in and keeps the old one; neither prints a key;
//! - a key file that is missing, open to other users, malformed or a directory stops
//!   `mcpr serve` before any server starts, naming the file, never showing a key;
//! - two running gateways (2026-07-28 clients over stdio, one HTTP backend of 2026-07-28)
//!   that share the file resume each other's calls, the backend's own state carried in the
//!   gateway's; a gateway without the key cannot; a rotated file is picked up without a
//!   restart, and a state sealed under the old key still works during the grace.

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::sdk::ServeWorld;
use support::stateless::{Stateless, accept, asked, assert_invalid_params, text};
use support::{ChildGuard, HttpMock, MCPR, temp_dir};

/// The conformance mock's tool whose `input_required` carries a signed state of its own.
const BACKEND_STATE: &str = "mcp_c_test_input_required_result_request_state";

/// `mcpr ARGS` with `env`, run to its end (one still running after a while, such as a
/// gateway that should have refused to start, is killed and has no exit code): exit code,
/// stderr.
fn mcpr(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(MCPR);
    command
        .args(args)
        .env_remove("MCPR_STATE_KEY_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = ChildGuard::spawn(&mut command);
    let stderr = support::drain(child.0.stderr.take().expect("stderr"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let code = loop {
        if let Some(status) = child.0.try_wait().expect("wait for mcpr") {
            break status.code();
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(child);
    (code, stderr.join().unwrap_or_default())
}

/// The keys a key file holds (`key`, then `previous` if any).
fn keys(path: &Path) -> Vec<String> {
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    ["key", "previous"]
        .iter()
        .filter_map(|field| file[field].as_str().map(str::to_owned))
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn generate_writes_a_private_key_once_and_rotate_keeps_the_previous_one() {
    let dir = temp_dir();
    let path = dir.path().join("keys/state.key");
    let file = path.to_str().unwrap();
    let (code, said) = mcpr(&["serve", "--generate-state-key", file], &[]);
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(mode(&path), 0o600);
    let first = keys(&path);
    assert_eq!(first.len(), 1);
    assert!(!said.contains(&first[0]), "the key was printed: {said}");

    // Never replaced: the calls waiting under it would break.
    let (code, said) = mcpr(&["serve", "--generate-state-key", file], &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("state.key") && said.contains("--rotate-state-key"),
        "{said}"
    );
    assert_eq!(keys(&path), first);

    let (code, said) = mcpr(&["serve", "--rotate-state-key", file], &[]);
    assert_eq!(code, Some(0), "{said}");
    let rotated = keys(&path);
    assert_eq!(rotated.len(), 2);
    assert_ne!(rotated[0], first[0], "a new key");
    assert_eq!(rotated[1], first[0], "the old one kept as previous");
    assert_eq!(mode(&path), 0o600);
    assert!(
        rotated.iter().all(|key| !said.contains(key.as_str())),
        "a key was printed: {said}"
    );
}

#[test]
fn a_key_file_that_cannot_be_used_stops_serve_naming_the_file() {
    let dir = temp_dir();
    // A backend that would record its start: it must not start.
    let started = dir.path().join("started.jsonl");
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {"m": {"command": MCPR, "args": [
        "mock", "--record", started.to_string_lossy(),
    ]}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let serve = |key_flag: &[&str], env: &[(&str, &str)]| {
        let mut args = vec![
            "--strict-config",
            "--config",
            config.to_str().unwrap(),
            "serve",
            "--http",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(key_flag);
        mcpr(&args, env)
    };
    let key = dir.path().join("state.key");
    let key_path = key.to_str().unwrap();

    // Missing, named by the environment variable.
    let (code, said) = serve(&[], &[("MCPR_STATE_KEY_FILE", key_path)]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("state.key: no such file"), "{said}");
    assert!(said.contains("--generate-state-key"), "{said}");

    // Readable by other users: whoever reads it can forge states for every replica.
    let (code, said) = mcpr(&["serve", "--generate-state-key", key_path], &[]);
    assert_eq!(code, Some(0), "{said}");
    let secret = keys(&key).remove(0);
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, said) = serve(&["--state-key-file", key_path], &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("state.key") && said.contains("mode 644"),
        "{said}"
    );
    assert!(said.contains("chmod 600"), "{said}");
    assert!(!said.contains(&secret), "{said}");

    // Malformed: a key of the wrong length, which must not be shown either.
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let short = &secret[..secret.len() - 4];
    std::fs::write(&key, format!(r#"{{"mcprStateKey": 1, "key": "{short}"}}"#)).unwrap();
    let (code, said) = serve(&["--state-key-file", key_path], &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("state.key") && said.contains("32 bytes"),
        "{said}"
    );
    assert!(!said.contains(short), "{said}");

    // A directory.
    let directory = dir.path().join("keys");
    std::fs::create_dir(&directory).unwrap();
    let (code, said) = serve(&["--state-key-file", directory.to_str().unwrap()], &[]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("keys: cannot read it"), "{said}");

    assert!(
        !started.exists(),
        "a server started despite the bad key file"
    );
}

/// The key id of a state (`v1.<key id>.<sealed>`).
fn key_id(state: &str) -> String {
    state.split('.').nth(1).unwrap_or_default().to_owned()
}

fn confirm() -> Value {
    json!({"action": "accept", "content": {"ok": true}})
}

#[test]
fn gateways_sharing_a_key_file_resume_each_others_calls_and_follow_its_rotation() {
    let backend = HttpMock::http(&["--conformance"]);
    // Each gateway a home (and tool cache) of its own, as on machines of their own.
    let worlds: Vec<ServeWorld> = (0..3)
        .map(|_| {
            ServeWorld::with_servers(
                temp_dir(),
                json!({"c": {"type": "http", "url": backend.url}}),
            )
        })
        .collect();
    let key = worlds[0].path("state.key");
    let key = key.to_str().unwrap();
    let (code, said) = mcpr(&["serve", "--generate-state-key", key], &[]);
    assert_eq!(code, Some(0), "{said}");
    let declared = json!({"elicitation": {}});
    let shared = ["--state-key-file", key];
    let mut one = Stateless::start(&worlds[0], &shared, declared.clone());
    let mut two = Stateless::start(&worlds[1], &shared, declared.clone());
    let mut alone = Stateless::start(&worlds[2], &[], declared);

    // A call asked on one gateway is answered through the other: the backend's own state
    // comes back to it intact.
    let (state, keys_asked) = asked(&one.call(BACKEND_STATE, json!({})));
    assert_eq!(keys_asked, ["confirm"]);
    let answers = json!({"requestState": state, "inputResponses": {"confirm": confirm()}});
    // A gateway without the key cannot open it (nor be fooled by it).
    assert_invalid_params(&alone.call(BACKEND_STATE, answers.clone()), "integrity");
    // Nor can it go to another tool.
    let stolen = two.call("mcp_c_test_simple_text", answers.clone());
    assert_invalid_params(&stolen, "belongs to");
    let done = two.call(BACKEND_STATE, answers.clone());
    assert_eq!(text(&done), "state-ok: requestState validated", "{done}");
    // Spent on the gateway that took it.
    assert_invalid_params(&two.call(BACKEND_STATE, answers), "answered already");

    // A state sealed before the rotation, answered after it.
    let (before, _) = asked(&one.call(BACKEND_STATE, json!({})));
    let (code, said) = mcpr(&["serve", "--rotate-state-key", key], &[]);
    assert_eq!(code, Some(0), "{said}");
    // The running gateway seals under the new key once it looked at the file again.
    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        let (state, _) = asked(&one.call(BACKEND_STATE, json!({})));
        if key_id(&state) != key_id(&before) {
            break state;
        }
        assert!(Instant::now() < deadline, "the rotated key was never used");
        std::thread::sleep(Duration::from_millis(250));
    };
    for state in [after, before] {
        let answers = json!({"requestState": state, "inputResponses": {"confirm": confirm()}});
        let done = two.call(BACKEND_STATE, answers.clone());
        assert_eq!(text(&done), "state-ok: requestState validated", "{done}");
        assert_invalid_params(&alone.call(BACKEND_STATE, answers), "integrity");
    }
    // The elicitation tool too, answered by name.
    let (state, _) = asked(&two.call("mcp_c_test_input_required_result_elicitation", json!({})));
    let answers = json!({"requestState": state, "inputResponses": {"user_name": accept("Ada")}});
    let done = one.call("mcp_c_test_input_required_result_elicitation", answers);
    assert_eq!(text(&done), "Hello, Ada!", "{done}");
}
