//! A host that embeds the library without calling `sandbox::run_if_launcher()` (this test
//! binary is one) cannot launch a sandbox: a sandboxed server is refused, and never runs
//! unsandboxed instead.

mod support;

use mcp_runtime::client::{ConnectOptions, McpClient};
use mcp_runtime::config::Transport;
use mcp_runtime::sandbox::SandboxPolicy;
use support::{mock, temp_dir};

#[tokio::test]
async fn a_sandboxed_server_is_refused_when_the_host_cannot_launch_sandboxes() {
    let dir = temp_dir();
    let pid_file = dir.path().join("server.pid");
    let mut config = mock(&["--pid-file", pid_file.to_str().unwrap()]);
    let Transport::Stdio(stdio) = &mut config.transport else {
        unreachable!()
    };
    stdio.sandbox = Some(SandboxPolicy::default());

    let error = McpClient::connect("boxed", &config, &ConnectOptions::default())
        .await
        .expect_err("a sandboxed server started in a host without the launcher");
    let message = error.to_string();
    let expected = if cfg!(target_os = "linux") {
        "run_if_launcher"
    } else {
        "not supported"
    };
    assert!(message.contains(expected), "{message}");
    assert!(message.contains("boxed"), "{message}");
    assert!(!pid_file.exists(), "the server ran unsandboxed");
    assert!(!mcp_runtime::sandbox::launcher_wired());
}
