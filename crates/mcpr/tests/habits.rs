//! The command line as people coming from other MCP tools type it: a server given inline
//! (`-- CMD ARGS...`, `--url URL -H ...`), `claude mcp`-style `add`/`list`/`get`/`add-json`,
//! `key=value` tool arguments typed by the schema, resources and prompts, completions, and the
//! advice given for the common mistakes. Every case runs the real `mcpr` binary against the
//! real mock server.

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use support::{HttpMock, MCPR, temp_dir};

/// A home of its own (configs, trust, caches) with a project directory inside.
struct Home {
    _dir: tempfile::TempDir,
    home: PathBuf,
}

impl Home {
    fn new() -> Self {
        let dir = temp_dir();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(home.join("project")).unwrap();
        Home { _dir: dir, home }
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(MCPR);
        command.args(args).current_dir(self.home.join("project"));
        support::isolate_env(&mut command, &self.home);
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args)
            .stdin(Stdio::null())
            .output()
            .expect("run mcpr")
    }

    /// Run with `input` on stdin.
    fn run_with_input(&self, args: &[&str], input: &str) -> Output {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcpr");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        child.wait_with_output().expect("wait for mcpr")
    }

    /// Run and expect success; returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "mcpr {args:?}: {}", both(&out));
        text(&out.stdout)
    }

    /// mcpr's user config, parsed.
    fn user_config(&self) -> Value {
        let path = self.home.join(".config/mcpr/mcp.json");
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn both(out: &Output) -> String {
    format!(
        "{:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// `args` followed by `-- mcpr mock FLAGS...`: a mock server given inline.
fn inline<'a>(args: &[&'a str], flags: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(["--", MCPR, "mock"]);
    all.extend(flags);
    all
}

/// A mock tool file with one tool of every parameter type; a call echoes its arguments.
fn typed_tool(dir: &Path) -> PathBuf {
    let path = dir.join("typed.json");
    let tools = json!([{
        "name": "typed",
        "description": "Echoes its arguments.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "label": {"type": "string", "description": "Any text."},
                "count": {"type": "integer"},
                "ratio": {"type": "number"},
                "loud": {"type": "boolean"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "extra": {"type": "object"},
            },
            "required": ["label"],
            "additionalProperties": false,
        },
    }]);
    std::fs::write(&path, tools.to_string()).unwrap();
    path
}

#[test]
fn a_server_given_inline_is_listed_called_and_reported_without_a_config() {
    let h = Home::new();
    // An untrusted project config is no business of an inline server.
    std::fs::write(
        h.home.join("project/.mcp.json"),
        r#"{"mcpServers": {"proj": {"command": "false"}}}"#,
    )
    .unwrap();

    let out = h.run(&inline(&["tools"], &["--tools", "1"]));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", both(&out));
    assert!(stdout.contains("inline ("), "{stdout}");
    assert!(stdout.contains("mcp_inline_tool_0"), "{stdout}");
    assert!(!text(&out.stderr).contains("pending"), "{}", both(&out));

    // One server: no server name needed, and its name is accepted too.
    let out = h.run(&inline(&["call", "echo", "text=hi"], &[]));
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(text(&out.stdout).trim(), "hi");
    let out = h.run(&inline(
        &["call", "inline", "echo", r#"{"text": "json"}"#],
        &[],
    ));
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(text(&out.stdout).trim(), "json");

    let out = h.run(&inline(&["status"], &[]));
    assert!(out.status.success(), "{}", both(&out));
    let row = text(&out.stdout);
    assert!(
        row.lines()
            .any(|l| l.starts_with("inline ") && l.contains("connected")),
        "{row}"
    );

    // Flags that pick config files do not go with an inline server.
    let out = h.run(&inline(&["tools", "--config", "x.json"], &[]));
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(text(&out.stderr).contains("inline"), "{}", both(&out));
}

#[test]
fn a_remote_server_given_inline_gets_its_headers() {
    let h = Home::new();
    let mock = HttpMock::http(&["--require-token", "sesame"]);
    let out = h.run(&[
        "tools",
        "--url",
        &mock.url,
        "-H",
        "Authorization: Bearer sesame",
    ]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(
        text(&out.stdout).contains("mcp_inline_echo"),
        "{}",
        both(&out)
    );

    let out = h.run(&[
        "call",
        "--url",
        &mock.url,
        "-H",
        "Authorization: Bearer sesame",
        "echo",
        "text=over http",
    ]);
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(text(&out.stdout).trim(), "over http");

    // Without the header the server refuses, and the token never shows.
    let out = h.run(&["call", "--url", &mock.url, "echo", "text=x"]);
    assert!(!out.status.success(), "{}", both(&out));
}

#[test]
fn a_shell_on_an_inline_server_exits_non_zero_when_a_line_failed() {
    let h = Home::new();
    let out = h.run_with_input(
        &inline(&["shell"], &[]),
        "mcp_inline_echo {\"text\": \"first\"}\n",
    );
    assert!(out.status.success(), "{}", both(&out));
    assert!(text(&out.stdout).contains("first"), "{}", both(&out));

    let out = h.run_with_input(
        &inline(&["shell"], &[]),
        "mcp_inline_echo {\"text\": \"ok\"}\nmcp_inline_nosuch {}\nmcp_inline_fail\n/nonsense\n",
    );
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(text(&out.stdout).contains("ok"), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("3 lines failed"),
        "{}",
        both(&out)
    );
}

#[test]
fn add_takes_the_command_without_double_dash_and_list_and_get_show_it() {
    let h = Home::new();
    // Everything after the command is the server's, even words that look like mcpr's flags.
    let out = h.ok(&[
        "add",
        "-e",
        "MODE=test",
        "mock",
        MCPR,
        "mock",
        "--tools",
        "2",
        "--name",
        "typed",
    ]);
    assert!(out.contains("~/.config/mcpr/mcp.json"), "{out}");
    let entry = &h.user_config()["mcpServers"]["mock"];
    assert_eq!(entry["command"], MCPR);
    assert_eq!(
        entry["args"],
        json!(["mock", "--tools", "2", "--name", "typed"])
    );
    assert_eq!(entry["env"]["MODE"], "test");

    // `--` still works, and the server's flags stay the server's.
    h.ok(&["add", "other", "--", MCPR, "mock", "--scope", "x"]);
    assert_eq!(
        h.user_config()["mcpServers"]["other"]["args"],
        json!(["mock", "--scope", "x"])
    );

    let list = h.ok(&["list"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with("mock ") && l.contains("~/.config/mcpr/mcp.json")),
        "{list}"
    );
    let get = h.ok(&["get", "mock"]);
    assert!(get.starts_with("mock\n"), "{get}");
    assert!(
        get.contains("args     mock --tools 2 --name typed"),
        "{get}"
    );
    assert!(get.contains("env      MODE=test"), "{get}");
    let tools = h.ok(&["tools", "mock"]);
    assert!(tools.contains("mcp_mock_tool_1"), "{tools}");

    let out = h.run(&["get", "nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(text(&out.stderr).contains("mcpr list"), "{}", both(&out));
}

#[test]
fn add_takes_a_transport_and_a_url_as_claude_mcp_add_does() {
    let h = Home::new();
    h.ok(&[
        "add",
        "--transport",
        "http",
        "web",
        "https://example.com/mcp",
        "-H",
        "X-Team: blue",
    ]);
    h.ok(&[
        "add",
        "--transport",
        "sse",
        "old",
        "https://example.com/sse",
    ]);
    let servers = &h.user_config()["mcpServers"];
    assert_eq!(servers["web"]["type"], "http");
    assert_eq!(servers["web"]["url"], "https://example.com/mcp");
    assert_eq!(servers["web"]["headers"]["X-Team"], "blue");
    assert_eq!(servers["old"]["type"], "sse");

    let out = h.run(&[
        "add",
        "--transport",
        "http",
        "two",
        "https://a",
        "https://b",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(text(&out.stderr).contains("one URL"), "{}", both(&out));
    let out = h.run(&["add", "lonely"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("mcpr add lonely CMD ARGS..."),
        "{}",
        both(&out)
    );
}

#[test]
fn add_json_writes_a_checked_entry() {
    let h = Home::new();
    let entry = json!({"command": MCPR, "args": ["mock"], "env": {"TOKEN": "s3cret"}});
    h.ok(&["add-json", "fromjson", &entry.to_string()]);
    assert_eq!(
        h.user_config()["mcpServers"]["fromjson"]["args"],
        json!(["mock"])
    );
    // Secrets stay out of what is shown.
    let get = h.ok(&["get", "fromjson"]);
    assert!(!get.contains("s3cret"), "{get}");

    let out = h.run(&["add-json", "bad", r#"{"command": 5}"#]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(text(&out.stderr).contains("`command`"), "{}", both(&out));
    let out = h.run(&["add-json", "bad", "{oops"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("not valid JSON"),
        "{}",
        both(&out)
    );
}

#[test]
fn key_value_arguments_follow_the_tool_schema() {
    let h = Home::new();
    let dir = temp_dir();
    let tools = typed_tool(dir.path());
    let tools = tools.to_str().unwrap();
    let out = h.run(&inline(
        &[
            "call",
            "typed",
            "label=5",
            "count=5",
            "ratio=0.5",
            "loud=true",
            "tags=a,b",
            r#"extra:={"k": [1]}"#,
        ],
        &["--tool-file", tools],
    ));
    assert!(out.status.success(), "{}", both(&out));
    let echoed: Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
    assert_eq!(
        echoed,
        json!({"label": "5", "count": 5, "ratio": 0.5, "loud": true, "tags": ["a", "b"],
               "extra": {"k": [1]}})
    );

    // A bad argument shows the tool's parameters.
    let out = h.run(&inline(
        &["call", "typed", "label=x", "count=many"],
        &["--tool-file", tools],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("`count=many`: expected integer"),
        "{stderr}"
    );
    assert!(
        stderr.contains("label  string, required  Any text."),
        "{stderr}"
    );
    assert!(stderr.contains("tags   array of string"), "{stderr}");
    let out = h.run(&inline(
        &["call", "typed", "lable=x"],
        &["--tool-file", tools],
    ));
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("no parameter `lable`"),
        "{}",
        both(&out)
    );
}

#[test]
fn tools_shows_parameters_with_long_or_for_one_tool() {
    let h = Home::new();
    let out = h.run(&inline(&["tools", "--long"], &[]));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", both(&out));
    assert!(
        stdout.contains("a  number, required  First addend."),
        "{stdout}"
    );
    assert!(stdout.contains("ms  integer, required"), "{stdout}");

    h.ok(&["add", "m", MCPR, "mock"]);
    let one = h.ok(&["tools", "m/add"]);
    assert!(one.contains("mcp_m_add"), "{one}");
    assert!(one.contains("b  number, required  Second addend."), "{one}");
    assert!(!one.contains("mcp_m_echo"), "{one}");
    let out = h.run(&["tools", "m/nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
}

#[test]
fn resources_are_read_and_prompts_filled() {
    let h = Home::new();
    h.ok(&["add", "res", MCPR, "mock", "--resources", "--name", "res"]);
    let out = h.ok(&["resource", "res", "mock://res/public"]);
    assert_eq!(out.trim(), "contents of mock://res/public");
    let out = h.ok(&["resource", "res", "mock://res/public", "--json"]);
    let json: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["contents"][0]["uri"], "mock://res/public");

    let listed = h.ok(&["resource", "res"]);
    assert!(listed.contains("mock://res/public"), "{listed}");
    let listed = h.ok(&["prompt", "res"]);
    assert!(listed.contains("greet(name*)"), "{listed}");

    let out = h.ok(&["prompt", "res", "greet", "name=Ada"]);
    assert!(out.contains("Hello, Ada!"), "{out}");
    let out = h.run(&["prompt", "res", "greet", "nmae=Ada"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no parameter `nmae`"), "{stderr}");
    assert!(stderr.contains("name  string, required"), "{stderr}");

    // The same, with the server given inline.
    let out = h.run(&inline(&["prompt", "greet", "name=Bo"], &["--resources"]));
    assert!(out.status.success(), "{}", both(&out));
    assert!(text(&out.stdout).contains("Hello, Bo!"), "{}", both(&out));
}

#[test]
fn completions_are_printed_for_each_shell_and_complete_names_from_configs_and_the_cache() {
    let h = Home::new();
    // Each script hands completion to mcpr itself (`COMPLETE=<shell> mcpr -- ...`).
    for (shell, marker) in [
        ("bash", "_clap_complete_mcpr()"),
        ("zsh", "#compdef mcpr"),
        ("fish", "complete --keep-order"),
    ] {
        let out = h.ok(&["completions", shell]);
        assert!(out.contains(marker), "{shell}: {out}");
        let asks = [format!("COMPLETE={shell}"), format!("COMPLETE=\"{shell}\"")];
        assert!(asks.iter().any(|a| out.contains(a)), "{shell}: {out}");
    }
    let pid_file = h.home.join("docs.pid");
    let pid = pid_file.to_str().unwrap();
    h.ok(&["add", "docs", "--", MCPR, "mock", "--pid-file", pid]);
    h.ok(&["add", "files", "--", MCPR, "mock", "--tools", "2"]);
    // What fish asks for `mcpr <words> <typed>`: one candidate per line.
    let complete = |words: &[&str]| -> Vec<String> {
        let out = h
            .command(&[&["--", "mcpr"], words].concat())
            .env("COMPLETE", "fish")
            .stdin(Stdio::null())
            .output()
            .expect("run mcpr");
        assert!(out.status.success(), "{}", both(&out));
        text(&out.stdout)
            .lines()
            .map(|l| l.split('\t').next().unwrap_or("").to_owned())
            .filter(|c| !c.starts_with('-'))
            .collect()
    };
    assert!(complete(&["add"]).contains(&"add-json".to_owned()));
    assert_eq!(complete(&["get", "d"]), ["docs"]);
    assert_eq!(complete(&["disable", ""]), ["docs", "files"]);
    // Tool names come from the cache only: none before a listing, and nothing is started.
    assert!(
        !complete(&["call", ""])
            .iter()
            .any(|c| c.starts_with("mcp_"))
    );
    assert!(!pid_file.exists(), "completion started a server");
    h.ok(&["tools"]);
    std::fs::remove_file(&pid_file).unwrap();
    let calls = complete(&["call", "mcp_f"]);
    assert!(calls.contains(&"mcp_files_tool_1".to_owned()), "{calls:?}");
    assert!(calls.iter().all(|c| c.starts_with("mcp_f")), "{calls:?}");
    let tools = complete(&["call", "docs", "ec"]);
    assert_eq!(tools, ["echo"], "{tools:?}");
    assert!(!pid_file.exists(), "completion started a server");
}

#[test]
fn common_mistakes_get_what_to_type_instead() {
    let h = Home::new();
    let out = h.run(&["tools", "npx", "-y", "@scope/server", "/tmp"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("mcpr tools -- npx -y @scope/server /tmp"),
        "{}",
        both(&out)
    );
    let out = h.run(&["rm", "x"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("mcpr remove NAME"),
        "{}",
        both(&out)
    );
    let out = h.run(&["call", "srv", "echo", "--text", "hi"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("mcpr call SERVER TOOL text=VALUE"),
        "{}",
        both(&out)
    );
}

#[test]
fn messages_say_what_to_do_and_only_that() {
    let h = Home::new();
    // Nothing configured: say how to add a server.
    let out = h.run(&["tools"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        text(&out.stderr).contains("mcpr add NAME CMD ARGS..."),
        "{}",
        both(&out)
    );
    let out = h.run_with_input(&["shell"], "/mcp list\n");
    assert!(out.status.success(), "{}", both(&out));
    let shown = text(&out.stdout);
    assert!(shown.contains("mcpr add NAME CMD ARGS..."), "{shown}");
    assert!(!shown.contains("disabled"), "{shown}");

    let out = h.run(&["remove", "nosuch"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("not found in mcpr's config files"),
        "{stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("defined by"), "{stderr}");
}

#[test]
fn an_invalid_project_entry_is_invalid_and_warned_about_once() {
    let h = Home::new();
    std::fs::write(
        h.home.join("project/.mcp.json"),
        format!(
            r#"{{"mcpServers": {{"bad": {{"command": 5}}, "good": {{"command": "{MCPR}", "args": ["mock"]}}}}}}"#
        ),
    )
    .unwrap();
    let servers = h.ok(&["servers"]);
    let row = servers
        .lines()
        .find(|l| l.starts_with("bad "))
        .unwrap_or_else(|| panic!("{servers}"));
    assert!(row.contains("invalid: field `command`"), "{row}");
    assert!(!row.contains("pending approval"), "{row}");
    assert!(row.contains("~/project/.mcp.json"), "{row}");

    let trust = h.ok(&["trust"]);
    assert!(
        !trust.contains("  bad "),
        "an invalid entry may not start: {trust}"
    );
    let out = h.run(&["tools"]);
    assert!(out.status.success(), "{}", both(&out));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.matches("expected a string").count(),
        1,
        "one warning, one format: {stderr}"
    );
}

#[test]
fn server_everything_given_inline_takes_key_value_arguments_resources_and_prompts() {
    let h = Home::new();
    let entry = support::server_everything();
    let server = ["--", "node", entry.to_str().unwrap(), "stdio"];
    let with = |args: &[&str]| {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend(server.iter().map(|a| a.to_string()));
        all
    };
    let run = |args: &[&str]| {
        let all = with(args);
        h.run(&all.iter().map(String::as_str).collect::<Vec<_>>())
    };

    let out = run(&["call", "echo", "message=hello everything"]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(
        text(&out.stdout).contains("hello everything"),
        "{}",
        both(&out)
    );
    // Numbers by the schema.
    let out = run(&["call", "get-sum", "a=2", "b=3"]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(text(&out.stdout).contains('5'), "{}", both(&out));

    // The first resource the server lists, read back.
    let out = run(&["resource"]);
    assert!(out.status.success(), "{}", both(&out));
    let listing = text(&out.stdout);
    let uri = listing
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|u| u.contains("://"))
        .unwrap_or_else(|| panic!("no resource listed: {listing}"))
        .to_owned();
    let out = run(&["resource", &uri, "--json"]);
    assert!(out.status.success(), "{}", both(&out));
    let read: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(read["contents"][0]["uri"], uri.as_str());

    let out = run(&["prompt"]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(
        text(&out.stdout).contains("simple-prompt"),
        "{}",
        both(&out)
    );
    let out = run(&["prompt", "simple-prompt"]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(text(&out.stdout).contains("user: "), "{}", both(&out));
}
