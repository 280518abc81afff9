//! `mcpr add | remove | enable | disable` on a user config kept in a dotfiles repository: a
//! symbolic link to a file with comments. The link must stay a link, the change must land in
//! the file it points to, and the comments must stay. Adding a name that exists says how to
//! replace it.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::{MCPR, temp_dir};

const COMMENTED: &str = r#"// My MCP servers, shared through my dotfiles.
{
  /* Servers for every project. */
  "mcpServers": {
    // The docs server: keep it first.
    "docs": {
      "command": "docs-server",
      "args": ["--port", "1"], // the port it listens on
    },
  },
  "theme": "dark", // unknown to mcpr, kept as is
}
"#;

const COMMENTS: [&str; 5] = [
    "// My MCP servers, shared through my dotfiles.",
    "/* Servers for every project. */",
    "// The docs server: keep it first.",
    "// the port it listens on",
    "// unknown to mcpr, kept as is",
];

fn mcpr(home: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(MCPR);
    command.args(args).current_dir(home.join("project"));
    support::isolate_env(&mut command, home);
    command.stdin(Stdio::null()).output().expect("run mcpr")
}

fn ok(home: &Path, args: &[&str]) -> String {
    let out = mcpr(home, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mcpr {args:?}: {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The link is still the same link and its target keeps every comment, private mode and the
/// entry `docs` first.
fn check_kept(link: &Path, target: &Path) -> String {
    let meta = std::fs::symlink_metadata(link).unwrap();
    assert!(
        meta.file_type().is_symlink(),
        "{} is no longer a link",
        link.display()
    );
    assert_eq!(
        std::fs::read_link(link).unwrap(),
        Path::new("../../dotfiles/mcp.json")
    );
    let text = std::fs::read_to_string(target).unwrap();
    for comment in COMMENTS {
        assert!(text.contains(comment), "lost {comment:?}:\n{text}");
    }
    let mode = std::fs::metadata(target).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{text}");
    assert!(
        text.find("\"docs\"").unwrap() < text.find("\"theme\"").unwrap(),
        "{text}"
    );
    // No temp file left next to the target or the link.
    for dir in [target.parent().unwrap(), link.parent().unwrap()] {
        let names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }
    text
}

#[test]
fn edits_keep_a_symlinked_config_and_its_comments() {
    let dir = temp_dir();
    let home = dir.path();
    std::fs::create_dir_all(home.join("project")).unwrap();
    std::fs::create_dir_all(home.join("dotfiles")).unwrap();
    std::fs::create_dir_all(home.join(".config/mcpr")).unwrap();
    let target = home.join("dotfiles/mcp.json");
    std::fs::write(&target, COMMENTED).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let link = home.join(".config/mcpr/mcp.json");
    std::os::unix::fs::symlink("../../dotfiles/mcp.json", &link).unwrap();
    // A server of another tool, so that enable/disable also edit the user file's lists.
    std::fs::write(
        home.join(".claude.json"),
        r#"{"mcpServers": {"other": {"command": "other-server"}}}"#,
    )
    .unwrap();

    ok(home, &["add", "echo", "--", MCPR, "mock"]);
    let text = check_kept(&link, &target);
    assert!(text.contains("\"echo\""), "{text}");

    ok(home, &["disable", "docs"]);
    let text = check_kept(&link, &target);
    assert!(text.contains("\"enabled\": false"), "{text}");
    ok(home, &["enable", "docs"]);
    let text = check_kept(&link, &target);
    assert!(!text.contains("\"enabled\""), "{text}");

    ok(home, &["disable", "other"]);
    let text = check_kept(&link, &target);
    assert!(text.contains("disabledServers"), "{text}");
    ok(home, &["enable", "other"]);
    let text = check_kept(&link, &target);
    assert!(!text.contains("disabledServers"), "{text}");

    ok(home, &["remove", "echo"]);
    let text = check_kept(&link, &target);
    assert!(!text.contains("\"echo\""), "{text}");
    // Back to the original servers and settings.
    let servers = ok(home, &["servers", "--all"]);
    assert!(
        servers.contains("docs") && servers.contains("other"),
        "{servers}"
    );
}

#[test]
fn a_project_config_linking_out_of_the_project_is_not_written() {
    let dir = temp_dir();
    let home = dir.path();
    let project = home.join("project");
    std::fs::create_dir_all(project.join(".mcpr")).unwrap();
    // A repository's `.mcpr/mcp.json` pointing at a file of the user's outside the project.
    let outside = home.join("precious.json");
    let original = "{\n  // mine\n  \"mcpServers\": {}\n}\n";
    std::fs::write(&outside, original).unwrap();
    std::os::unix::fs::symlink(&outside, project.join(".mcpr/mcp.json")).unwrap();

    let out = mcpr(home, &["add", "x", "--scope", "project", "--", "cmd"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(".mcpr/mcp.json") && stderr.contains("outside the project"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), original);
    assert!(
        std::fs::symlink_metadata(project.join(".mcpr/mcp.json"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn adding_a_name_that_exists_names_the_file_and_force() {
    let dir = temp_dir();
    let home = dir.path();
    std::fs::create_dir_all(home.join("project")).unwrap();
    ok(home, &["add", "dup", "--", "first-server"]);
    let out = mcpr(home, &["add", "dup", "--", "second-server"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`dup`")
            && stderr.contains("already defined in")
            && stderr.contains("--force"),
        "{stderr}"
    );
    ok(home, &["add", "dup", "--force", "--", "second-server"]);
    assert!(ok(home, &["get", "dup"]).contains("second-server"));
}
