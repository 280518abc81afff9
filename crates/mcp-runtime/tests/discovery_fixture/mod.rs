//! The shared fixture of the discovery tests: a realistic home and project holding every
//! provider's files, as those tools write them (`tests/fixtures/discovery/`). Everything runs
//! in temp dirs with explicit options: the real home, process environment and trust store are
//! never touched.

// Each test file uses part of the fixture and of what it re-exports.
#![allow(dead_code, unused_imports)]

pub(crate) use std::collections::BTreeMap;
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::sync::Arc;

pub(crate) use mcp_runtime::config::trust::TrustStore;
pub(crate) use mcp_runtime::config::writer::{self, McprFile, Scope};
pub(crate) use mcp_runtime::config::{
    Discovery, DiscoveryOptions, EnvSource, HARD_FAILURE_PATH, HttpKind, Level, PendingReason,
    ProjectTrustState, ServerConfig, ServerState, Transport, load_all_mcp_configs,
    revoke_project_trust, trust_project,
};

pub(crate) const GITHUB_TOKEN: &str = "ghp_realSecretValue0123456789";
pub(crate) const MY_API_KEY: &str = "gemini-secret-key-value-42";

pub(crate) struct Fixture {
    _tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub project: PathBuf,
    pub store: PathBuf,
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

pub(crate) fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/discovery");
    let home = root.join("home");
    let project = root.join("work/project");
    copy_dir(&source.join("home"), &home);
    copy_dir(&source.join("project"), &project);
    let claude = home.join(".claude.json");
    let text = std::fs::read_to_string(&claude).unwrap();
    std::fs::write(
        &claude,
        text.replace("__PROJECT__", &project.to_string_lossy()),
    )
    .unwrap();
    Fixture {
        store: root.join("data/mcpr/trust.json"),
        _tmp: tmp,
        home,
        project,
    }
}

impl Fixture {
    pub(crate) fn env(&self) -> BTreeMap<String, String> {
        [
            ("HOME", self.home.to_string_lossy().as_ref()),
            ("GITHUB_TOKEN", GITHUB_TOKEN),
            ("MY_API_KEY", MY_API_KEY),
            ("API_TOKEN", "api-token-value"),
            ("OPENCODE_VAR", "opencode-value"),
            ("CONTEXT7_API_KEY", "ctx7-secret"),
            ("CURSOR_TOKEN", "cursor-secret"),
            ("WINDSURF_KEY", "windsurf-secret"),
            ("OPENWEATHER_API_KEY", "weather-secret"),
            ("CONTINUE_TOKEN", "continue-secret"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    pub(crate) fn options(&self) -> DiscoveryOptions {
        DiscoveryOptions::default()
            .with_home(Some(self.home.clone()))
            .with_env(EnvSource::Map(self.env()))
            .with_trust_store(Some(self.store.clone()))
    }

    pub(crate) fn trusted(&self) -> DiscoveryOptions {
        self.options().with_trust_project(true)
    }

    pub(crate) fn discover(&self, options: &DiscoveryOptions) -> Discovery {
        let found = load_all_mcp_configs(&self.project, options);
        assert!(found.failure.is_none(), "{:?}", found.failure);
        found
    }

    pub(crate) fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = if let Some(rest) = rel.strip_prefix("~/") {
            self.home.join(rest)
        } else {
            self.project.join(rel)
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// States of every definition of `name`, as `(provider name, state)`.
pub(crate) fn states(found: &Discovery, name: &str) -> Vec<(String, String)> {
    found
        .servers
        .iter()
        .filter(|s| s.name == name)
        .map(|s| (s.source.provider_name.clone(), s.state.to_string()))
        .collect()
}

pub(crate) fn stdio(cfg: &ServerConfig) -> &mcp_runtime::config::StdioConfig {
    match &cfg.transport {
        Transport::Stdio(s) => s,
        other => panic!("not stdio: {other:?}"),
    }
}

pub(crate) fn http(cfg: &ServerConfig) -> &mcp_runtime::config::HttpConfig {
    match &cfg.transport {
        Transport::Http(h) => h,
        other => panic!("not http: {other:?}"),
    }
}
