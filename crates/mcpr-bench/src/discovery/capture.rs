//! `mcpr-bench discovery --capture`: install the corpus servers (pinned, from npm and PyPI) into
//! `target/peers/discovery-*`, start each with dummy credentials, list its tools live and write
//! `data/tool_corpus.json` with the package versions, so that the evaluation runs offline.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use indexmap::IndexMap;
use mcp_runtime::config::{ServerConfig, Transport};
use mcp_runtime::manager::{ManagerOptions, McpManager};
use serde_json::{Value, json};

use super::data_dir;

/// One npm server of the corpus: (server name, package, `.bin` entry, args, env).
type NpmServer = (
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

/// The npm servers of the corpus, pinned.
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

/// The PyPI servers of the corpus, pinned: (server name, requirement, script, args).
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

fn peers_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/mcpr-bench → target/peers
    exe.parent()
        .and_then(Path::parent)
        .map(|target| target.join("peers"))
        .unwrap_or_else(|| PathBuf::from("target/peers"))
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

/// Install the servers (once), list every server's tools live and write the corpus fixture.
pub(super) fn capture() -> Result<(), String> {
    let peers = peers_dir();
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
    let work = tempfile::tempdir().map_err(|e| e.to_string())?;
    let work_str = work.path().to_string_lossy().into_owned();
    let fill = |s: &str| s.replace("{work}", &work_str);
    std::fs::write(work.path().join("kubeconfig"), KUBECONFIG).map_err(|e| e.to_string())?;
    let mut configs: IndexMap<String, ServerConfig> = IndexMap::new();
    let mut versions: IndexMap<String, (String, String)> = IndexMap::new();
    for (name, package, bin, args, env) in NPM {
        let mut config = ServerConfig::stdio(
            npm_root
                .join("node_modules/.bin")
                .join(bin)
                .to_string_lossy(),
            args.iter().map(|a| fill(a)),
        );
        if let Transport::Stdio(stdio) = &mut config.transport {
            stdio.cwd = Some(work.path().to_owned());
            for (key, value) in *env {
                stdio.env.insert((*key).into(), fill(value));
            }
        }
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
        configs.insert((*name).into(), config);
        versions.insert((*name).into(), (format!("npm {package_name}"), version));
    }
    for (name, requirement, script, args) in PYPI {
        let mut config = ServerConfig::stdio(
            venv.join("bin").join(script).to_string_lossy(),
            args.iter().map(|a| fill(a)),
        );
        if let Transport::Stdio(stdio) = &mut config.transport {
            stdio.cwd = Some(work.path().to_owned());
        }
        let (package, version) = requirement.split_once("==").unwrap_or((requirement, "?"));
        configs.insert((*name).into(), config);
        versions.insert(
            (*name).into(),
            (format!("PyPI {package}"), version.to_owned()),
        );
    }
    let mut sqlite = ServerConfig::stdio(
        sqlite_venv.join("bin/mcp-server-sqlite").to_string_lossy(),
        ["--db-path".to_owned(), fill("{work}/bench.db")],
    );
    if let Transport::Stdio(stdio) = &mut sqlite.transport {
        stdio.cwd = Some(work.path().to_owned());
    }
    configs.insert(SQLITE.0.into(), sqlite);
    versions.insert(
        SQLITE.0.into(),
        ("PyPI mcp-server-sqlite".into(), "2025.4.25".into()),
    );
    // The git server wants a repository to stand in.
    let _ = Command::new("git")
        .args(["init", "-q"])
        .current_dir(work.path())
        .status();

    let runtime = tokio::runtime::Runtime::new().map_err(|e| e.to_string())?;
    let report = runtime.block_on(async {
        let manager = McpManager::new(
            ManagerOptions::default()
                .with_cache(None)
                .with_project(work.path().to_owned())
                .with_reconnect(false)
                .with_wait_for_uncached(true)
                .with_gate(Duration::from_secs(120)),
        );
        let report = manager.connect_servers(configs, IndexMap::new()).await;
        let _ = tokio::time::timeout(Duration::from_secs(30), manager.disconnect_all()).await;
        report
    });
    for (server, error) in &report.errors {
        eprintln!("  {server}: failed: {error}");
    }
    let mut servers = Vec::new();
    for listed in &report.servers {
        let (package, version) = versions
            .get(&listed.server)
            .cloned()
            .unwrap_or_else(|| ("?".into(), "?".into()));
        eprintln!(
            "  {}: {} tools ({package} {version})",
            listed.server,
            listed.tools.len()
        );
        servers.push(json!({
            "server": listed.server,
            "package": package,
            "version": version,
            "tools": listed.tools.iter().collect::<Vec<_>>(),
        }));
    }
    let failed: Vec<Value> = report
        .errors
        .iter()
        .map(|(server, error)| json!({"server": server, "error": error.to_string()}))
        .collect();
    let corpus = json!({
        "captured_with": "cargo run -p mcpr-bench -- discovery --capture",
        "servers": servers,
        "failed": failed,
    });
    let path = data_dir().join("tool_corpus.json");
    std::fs::create_dir_all(data_dir()).map_err(|e| e.to_string())?;
    let text = serde_json::to_string_pretty(&corpus).map_err(|e| e.to_string())?;
    std::fs::write(&path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    eprintln!("» wrote {}", path.display());
    Ok(())
}
