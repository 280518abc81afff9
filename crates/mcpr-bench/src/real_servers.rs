//! Real MCP servers published on npm and PyPI, pinned: installed into `target/peers/discovery-*`
//! and started with dummy credentials (every server lists its tools without reaching its
//! service). The discovery corpus lists their tools (`discovery --capture`); the first-byte
//! section starts them all behind `mcpr tools`.

use std::path::{Path, PathBuf};
use std::process::Command;

use indexmap::IndexMap;
use mcp_runtime::config::{ServerConfig, Transport};
use serde_json::{Value, json};

/// One npm server: (server name, package, `.bin` entry, args, env).
type NpmServer = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// The npm servers, pinned.
const NPM: &[NpmServer] = &[
    (
        "everything",
        "@modelcontextprotocol/server-everything@2026.8.31",
        "mcp-server-everything",
        &["stdio"],
        &[],
    ),
    (
        "filesystem",
        "@modelcontextprotocol/server-filesystem@2026.8.31",
        "mcp-server-filesystem",
        &["{work}"],
        &[],
    ),
    (
        "memory",
        "@modelcontextprotocol/server-memory@2026.8.31",
        "mcp-server-memory",
        &[],
        &[("MEMORY_FILE_PATH", "{work}/memory.json")],
    ),
    (
        "sequential-thinking",
        "@modelcontextprotocol/server-sequential-thinking@2026.8.31",
        "mcp-server-sequential-thinking",
        &[],
        &[],
    ),
    (
        "github",
        "@modelcontextprotocol/server-github@2025.4.8",
        "mcp-server-github",
        &[],
        &[("GITHUB_PERSONAL_ACCESS_TOKEN", "dummy")],
    ),
    (
        "gitlab",
        "@modelcontextprotocol/server-gitlab@2025.4.25",
        "mcp-server-gitlab",
        &[],
        &[
            ("GITLAB_PERSONAL_ACCESS_TOKEN", "dummy"),
            ("GITLAB_API_URL", "http://127.0.0.1:9/api/v4"),
        ],
    ),
    (
        "slack",
        "@modelcontextprotocol/server-slack@2025.4.25",
        "mcp-server-slack",
        &[],
        &[("SLACK_BOT_TOKEN", "xoxb-dummy"), ("SLACK_TEAM_ID", "T0")],
    ),
    (
        "brave-search",
        "@modelcontextprotocol/server-brave-search@0.6.2",
        "mcp-server-brave-search",
        &[],
        &[("BRAVE_API_KEY", "dummy")],
    ),
    (
        "google-maps",
        "@modelcontextprotocol/server-google-maps@0.6.2",
        "mcp-server-google-maps",
        &[],
        &[("GOOGLE_MAPS_API_KEY", "dummy")],
    ),
    (
        "postgres",
        "@modelcontextprotocol/server-postgres@0.6.2",
        "mcp-server-postgres",
        &["postgresql://127.0.0.1:9/none"],
        &[],
    ),
    (
        "puppeteer",
        "@modelcontextprotocol/server-puppeteer@2025.5.12",
        "mcp-server-puppeteer",
        &[],
        &[],
    ),
    (
        "playwright",
        "@playwright/mcp@0.0.83",
        "playwright-mcp",
        &["--headless"],
        &[],
    ),
    (
        "notion",
        "@notionhq/notion-mcp-server@2.5.2",
        "notion-mcp-server",
        &[],
        &[("NOTION_TOKEN", "dummy")],
    ),
    (
        "supabase",
        "@supabase/mcp-server-supabase@0.13.0",
        "mcp-server-supabase",
        &["--access-token", "dummy"],
        &[],
    ),
    (
        "firecrawl",
        "firecrawl-mcp@3.26.0",
        "firecrawl-mcp",
        &[],
        &[("FIRECRAWL_API_KEY", "fc-dummy")],
    ),
    (
        "kubernetes",
        "mcp-server-kubernetes@4.1.7",
        "mcp-server-kubernetes",
        &[],
        &[("KUBECONFIG", "{work}/kubeconfig")],
    ),
    (
        "tavily",
        "tavily-mcp@0.2.22",
        "tavily-mcp",
        &[],
        &[("TAVILY_API_KEY", "tvly-dummy")],
    ),
    (
        "context7",
        "@upstash/context7-mcp@4.1.1",
        "context7-mcp",
        &[],
        &[],
    ),
];

/// The PyPI servers, pinned: (server name, requirement, script, args).
const PYPI: &[(&str, &str, &str, &[&str])] = &[
    ("git", "mcp-server-git==2026.10.19", "mcp-server-git", &[]),
    (
        "fetch",
        "mcp-server-fetch==2026.10.24",
        "mcp-server-fetch",
        &[],
    ),
    (
        "time",
        "mcp-server-time==2026.10.19",
        "mcp-server-time",
        &["--local-timezone", "UTC"],
    ),
];

/// mcp-server-sqlite breaks with the current Python SDK (it uses an API the SDK dropped), so it
/// gets a venv of its own with the SDK it was released against.
const SQLITE: (&str, &[&str]) = (
    "sqlite",
    &[
        "mcp-server-sqlite==2025.4.25",
        "mcp==1.6.0",
        "pydantic==2.10.6",
    ],
);

/// The Kubernetes server reads a kubeconfig at start-up; this one points at a closed port.
const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: none\n  cluster: {server: 'https://127.0.0.1:9'}\nusers:\n- name: none\n  user: {token: dummy}\ncontexts:\n- name: none\n  context: {cluster: none, user: none}\ncurrent-context: none\n";

/// One installed server, ready to start: its name, where it comes from, and how to run it.
pub(crate) struct RealServer {
    pub name: String,
    /// `npm PACKAGE` or `PyPI PACKAGE`.
    pub package: String,
    pub version: String,
    pub command: PathBuf,
    pub args: Vec<String>,
    pub env: IndexMap<String, String>,
}

impl RealServer {
    /// Its config for mcp-runtime, run from `cwd`.
    pub(crate) fn config(&self, cwd: &Path) -> ServerConfig {
        let mut config = ServerConfig::stdio(self.command.to_string_lossy(), self.args.clone());
        if let Transport::Stdio(stdio) = &mut config.transport {
            stdio.cwd = Some(cwd.to_owned());
            for (key, value) in &self.env {
                stdio.env.insert(key.clone(), value.clone());
            }
        }
        config
    }

    /// Its entry in an `mcpServers` config file, run from `cwd`.
    pub(crate) fn json(&self, cwd: &Path) -> Value {
        json!({
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "cwd": cwd,
        })
    }
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
        Err(format!("{what}: {} ({tail})", output.status))
    }
}

/// Install every server into `peers` (once: what is there already is kept).
pub(crate) fn install(peers: &Path) -> Result<(), String> {
    let npm_root = peers.join("discovery-npm");
    let venv = peers.join("discovery-py/venv");
    if !NPM
        .iter()
        .all(|s| npm_root.join("node_modules/.bin").join(s.2).exists())
    {
        std::fs::create_dir_all(&npm_root).map_err(|e| e.to_string())?;
        std::fs::write(npm_root.join("package.json"), "{\"private\":true}")
            .map_err(|e| e.to_string())?;
        eprintln!("» npm install into {}", npm_root.display());
        run(
            Command::new("npm")
                .current_dir(&npm_root)
                .args(["install", "--no-audit", "--no-fund", "--ignore-scripts"])
                .args(NPM.iter().map(|s| s.1))
                // Browsers are never downloaded: listing tools does not start one.
                .env("PUPPETEER_SKIP_DOWNLOAD", "1")
                .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1"),
            "npm install",
        )?;
    }
    if !venv.join("bin/mcp-server-time").exists() {
        eprintln!("» pip install into {}", venv.display());
        run(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        )?;
        run(
            Command::new(venv.join("bin/pip"))
                .args(["install", "-q"])
                .args(PYPI.iter().map(|s| s.1)),
            "pip install",
        )?;
    }
    let sqlite_venv = peers.join("discovery-py-sqlite/venv");
    if !sqlite_venv.join("bin/.pinned").exists() {
        run(
            Command::new("python3")
                .args(["-m", "venv"])
                .arg(&sqlite_venv),
            "python3 -m venv",
        )?;
        run(
            Command::new(sqlite_venv.join("bin/pip"))
                .args(["install", "-q"])
                .args(SQLITE.1),
            "pip install (sqlite)",
        )?;
        std::fs::write(sqlite_venv.join("bin/.pinned"), "").map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Fill `work`, the servers' working directory, with what they read at start-up: a
/// kubeconfig pointing at a closed port, and a git repository for the git server.
pub(crate) fn prepare_work(work: &Path) -> Result<(), String> {
    std::fs::write(work.join("kubeconfig"), KUBECONFIG).map_err(|e| e.to_string())?;
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(work)
        .status();
    Ok(())
}

/// Every server installed in `peers` (by [`install`]), with `{work}` in its arguments and
/// environment standing for `work`.
pub(crate) fn servers(peers: &Path, work: &Path) -> Vec<RealServer> {
    let npm_root = peers.join("discovery-npm");
    let venv = peers.join("discovery-py/venv");
    let sqlite_venv = peers.join("discovery-py-sqlite/venv");
    let work_str = work.to_string_lossy().into_owned();
    let fill = |s: &str| s.replace("{work}", &work_str);
    let mut out = Vec::new();
    for (name, package, bin, args, env) in NPM {
        let (package_name, _) = package.rsplit_once('@').unwrap_or((package, ""));
        let version = std::fs::read_to_string(
            npm_root
                .join("node_modules")
                .join(package_name)
                .join("package.json"),
        )
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|json| json["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".into());
        out.push(RealServer {
            name: (*name).into(),
            package: format!("npm {package_name}"),
            version,
            command: npm_root.join("node_modules/.bin").join(bin),
            args: args.iter().map(|a| fill(a)).collect(),
            env: env
                .iter()
                .map(|(key, value)| ((*key).into(), fill(value)))
                .collect(),
        });
    }
    for (name, requirement, script, args) in PYPI {
        let (package, version) = requirement.split_once("==").unwrap_or((requirement, "?"));
        out.push(RealServer {
            name: (*name).into(),
            package: format!("PyPI {package}"),
            version: version.to_owned(),
            command: venv.join("bin").join(script),
            args: args.iter().map(|a| fill(a)).collect(),
            env: IndexMap::new(),
        });
    }
    out.push(RealServer {
        name: SQLITE.0.into(),
        package: "PyPI mcp-server-sqlite".into(),
        version: "2025.4.25".into(),
        command: sqlite_venv.join("bin/mcp-server-sqlite"),
        args: vec!["--db-path".into(), fill("{work}/bench.db")],
        env: IndexMap::new(),
    });
    out
}
