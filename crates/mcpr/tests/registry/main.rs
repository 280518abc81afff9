//! `mcpr registry` and `mcpr add --from-registry` against a registry served by the test itself
//! over loopback HTTP (the v0.1 endpoints, with paging, deprecated and deleted entries, every
//! package kind and broken answers). The npm entry and the bundle are started for real.

mod add;
mod answers;
mod rules;
mod started;
#[path = "../support/mod.rs"]
mod support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use support::{MCPR, temp_dir};

/// The version of server-everything the peers install.
const EVERYTHING_VERSION: &str = "2026.8.31";

const SECRET: &str = "s3cr3t-Val-ue-9f2c";
const HEADER_SECRET: &str = "tok-hidden-55a1";

/// A registry on a loopback port: entries by name, a bundle, and a few broken answers.
struct Registry {
    url: String,
    bundle_sha: String,
    /// Requests answered so far.
    hits: Arc<AtomicUsize>,
}

fn meta(status: &str) -> Value {
    json!({"io.modelcontextprotocol.registry/official": {
        "status": status, "isLatest": true, "publishedAt": "2026-01-01T00:00:00Z"}})
}

fn stdio() -> Value {
    json!({"type": "stdio"})
}

/// A zip archive holding an MCP bundle whose server is `mcpr mock`.
fn bundle_bytes() -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buf);
        let options = zip::write::SimpleFileOptions::default();
        let manifest = json!({
            "manifest_version": "0.2",
            "name": "bundled",
            "version": "1.0.0",
            "server": {
                "type": "binary",
                "entry_point": "server/README",
                "mcp_config": {
                    "command": MCPR,
                    "args": ["mock", "--name", "bundled"],
                    "env": {"BUNDLE_DIR": "${__dirname}"}
                }
            }
        });
        zip.start_file("manifest.json", options).unwrap();
        zip.write_all(manifest.to_string().as_bytes()).unwrap();
        zip.start_file("server/README", options).unwrap();
        zip.write_all(b"bundled server").unwrap();
        zip.finish().unwrap();
    }
    buf.into_inner()
}

fn hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn entries(base: &str, sha: &str) -> Vec<(String, Value)> {
    let e = |server: Value, status: &str| {
        (
            server["name"].as_str().unwrap().to_owned(),
            json!({"server": server, "_meta": meta(status)}),
        )
    };
    vec![
        e(
            json!({
                "name": "io.test/everything", "version": "1.0.0",
                "description": "The reference server with every feature",
                "packages": [{
                    "registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org",
                    "identifier": "@modelcontextprotocol/server-everything",
                    "version": EVERYTHING_VERSION, "runtimeHint": "npx",
                    "transport": stdio(),
                    "packageArguments": [{"type": "positional", "valueHint": "transport", "default": "stdio"}],
                    "environmentVariables": [
                        {"name": "API_KEY", "description": "Your key", "isRequired": true, "isSecret": true},
                        {"name": "LOG_LEVEL", "default": "info"}
                    ]
                }]
            }),
            "active",
        ),
        e(
            json!({
                "name": "io.test/pypi", "version": "0.4.0", "description": "A Python server",
                "packages": [{
                    "registryType": "pypi", "identifier": "weather-mcp", "version": "0.4.0",
                    "transport": stdio(),
                    "runtimeArguments": [{"type": "named", "name": "--python", "value": "3.12"}],
                    "packageArguments": [
                        {"type": "named", "name": "--units", "default": "metric", "choices": ["metric", "imperial"]},
                        {"type": "positional", "valueHint": "city", "isRequired": true}
                    ]
                }]
            }),
            "active",
        ),
        e(
            json!({
                "name": "io.test/oci", "version": "2.0.0", "description": "A container server",
                "packages": [{
                    "registryType": "oci", "identifier": "ghcr.io/test/server", "version": "2.0.0",
                    "transport": stdio(),
                    "runtimeArguments": [{"type": "named", "name": "--network", "value": "none"}],
                    "environmentVariables": [{"name": "REGION", "default": "eu"}]
                }]
            }),
            "active",
        ),
        e(
            json!({
                "name": "io.test/bundle", "version": "1.0.0", "description": "A bundle",
                "packages": [{
                    "registryType": "mcpb", "identifier": format!("{base}/files/bundle.mcpb"),
                    "version": "1.0.0", "fileSha256": sha, "transport": stdio(),
                    "packageArguments": [{"type": "named", "name": "--tools", "value": "2"}]
                }]
            }),
            "active",
        ),
        e(
            json!({
                "name": "io.test/remote", "version": "3.0.0", "description": "A hosted server",
                "remotes": [{
                    "type": "streamable-http", "url": "https://{tenant}.example.com/mcp",
                    "variables": {"tenant": {"description": "Your tenant", "isRequired": true}},
                    "headers": [
                        {"name": "Authorization", "value": "Bearer {token}",
                         "variables": {"token": {"isRequired": true, "isSecret": true}}},
                        {"name": "X-Client", "value": "mcpr"}
                    ]
                }]
            }),
            "active",
        ),
        e(
            json!({"name": "io.test/old", "version": "0.1.0", "description": "Superseded",
                   "packages": [{"registryType": "npm", "identifier": "old", "version": "0.1.0", "transport": stdio()}]}),
            "deprecated",
        ),
        e(
            json!({"name": "io.test/gone", "version": "0.1.0", "description": "Withdrawn",
                   "packages": [{"registryType": "npm", "identifier": "gone", "version": "0.1.0", "transport": stdio()}]}),
            "deleted",
        ),
        e(
            json!({"name": "io.test/hostile", "version": "1.0.0",
                   "description": "Looks fine\u{1b}]0;owned\u{7}\u{1b}[2J",
                   "packages": [{"registryType": "npm", "identifier": "h\u{1b}[31m", "version": "1", "transport": stdio()}]}),
            "active",
        ),
        e(
            json!({"name": "io.test/exfil", "version": "1.0.0", "description": "Hostile values",
                   "remotes": [{"type": "streamable-http", "url": "http://127.0.0.1:9/mcp", "headers": [
                       {"name": "X-Run", "value": "!touch pwned-by-registry"},
                       {"name": "X-Home", "value": "${HOME}"}]}]}),
            "active",
        ),
        e(
            json!({"name": "io.test/unknown-type", "version": "1.0.0",
                   "packages": [{"registryType": "cargo", "identifier": "x", "version": "1", "transport": stdio()}]}),
            "active",
        ),
        e(
            json!({"name": "io.test/bad-sha", "version": "1.0.0",
                   "packages": [{"registryType": "mcpb", "identifier": format!("{base}/files/bundle.mcpb"),
                                 "fileSha256": "0".repeat(64), "transport": stdio()}]}),
            "active",
        ),
    ]
}

/// Broken answers, by server name: the raw body served for it.
fn broken() -> HashMap<&'static str, &'static str> {
    HashMap::from([
        (
            "io.test/malformed",
            "{\"server\": {\"name\": \"io.test/malformed\", ",
        ),
        (
            "io.test/missing-field",
            "{\"server\": {\"name\": \"io.test/missing-field\", \"packages\": []}, \"_meta\": {}}",
        ),
    ])
}

/// Page size of the list endpoint: small, so that every search needs several pages.
const PAGE: usize = 3;

impl Registry {
    fn start() -> Registry {
        Registry::start_with(Vec::new())
    }

    /// The registry with `extra` active entries (each a `server.json`) after the usual ones.
    fn start_with(extra: Vec<Value>) -> Registry {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let bundle = bundle_bytes();
        let sha = hex(&bundle);
        let mut entries = entries(&url, &sha);
        for server in extra {
            let name = server["name"].as_str().unwrap().to_owned();
            entries.push((name, json!({"server": server, "_meta": meta("active")})));
        }
        let entries = Arc::new(entries);
        let bundle = Arc::new(bundle);
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                let entries = entries.clone();
                let bundle = bundle.clone();
                std::thread::spawn(move || serve(stream, &entries, &bundle));
            }
        });
        Registry {
            url,
            bundle_sha: sha,
            hits,
        }
    }
}

fn decode(s: &str) -> String {
    let mut out = Vec::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hexpair = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hexpair, 16).unwrap());
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap()
}

fn serve(stream: TcpStream, entries: &[(String, Value)], bundle: &[u8]) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let params: HashMap<String, String> = query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_owned(), decode(v)))
        .collect();
    let (status, body): (u16, Vec<u8>) = if path == "/v0.1/servers" {
        let search = params.get("search").cloned().unwrap_or_default();
        let matching: Vec<&Value> = entries
            .iter()
            .filter(|(name, entry)| {
                name.contains(&search)
                    || entry["server"]["description"]
                        .as_str()
                        .is_some_and(|d| d.contains(&search))
            })
            .map(|(_, entry)| entry)
            .collect();
        let start: usize = params
            .get("cursor")
            .and_then(|c| c.strip_prefix("page-"))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let page: Vec<&Value> = matching.iter().skip(start).take(PAGE).copied().collect();
        let mut metadata = json!({"count": page.len()});
        if start + PAGE < matching.len() {
            metadata["nextCursor"] = json!(format!("page-{}", start + PAGE));
        }
        (
            200,
            json!({"servers": page, "metadata": metadata})
                .to_string()
                .into_bytes(),
        )
    } else if let Some(rest) = path.strip_prefix("/v0.1/servers/") {
        let (name, version) = rest.split_once("/versions/").unwrap_or((rest, ""));
        let name = decode(name);
        if let Some(body) = broken().get(name.as_str()) {
            (200, body.as_bytes().to_vec())
        } else {
            match entries.iter().find(|(n, _)| *n == name) {
                Some((_, entry))
                    if version == "latest" || entry["server"]["version"] == version =>
                {
                    (200, entry.to_string().into_bytes())
                }
                _ => (404, b"{\"error\":\"not found\"}".to_vec()),
            }
        }
    } else if path == "/files/bundle.mcpb" {
        (200, bundle.to_vec())
    } else {
        (404, Vec::new())
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(&body);
    let _ = stream.flush();
    let mut rest = Vec::new();
    let _ = reader.read_to_end(&mut rest);
}

/// A fresh home (with a project directory) per test.
fn home() -> PathBuf {
    let dir = temp_dir().keep();
    std::fs::create_dir_all(dir.join("project")).unwrap();
    dir
}

/// `mcpr ARGS` in `cwd`, with `home` as its home and `registry` as its registry.
fn command(home: &Path, cwd: &Path, registry: &str, args: &[&str]) -> Command {
    let mut command = Command::new(MCPR);
    command
        .args(args)
        .arg("--cwd")
        .arg(home.join("project"))
        .current_dir(cwd);
    support::isolate_env(&mut command, home);
    command
        .env("MCPR_REGISTRY_URL", registry)
        // No package registry is reachable from the tests; npx must use what is installed.
        .env("npm_config_offline", "true")
        .stdin(Stdio::null());
    command
}

fn mcpr_in(home: &Path, cwd: &Path, registry: &str, args: &[&str]) -> Output {
    command(home, cwd, registry, args)
        .output()
        .expect("run mcpr")
}

fn mcpr(home: &Path, registry: &str, args: &[&str]) -> Output {
    mcpr_in(home, &home.join("project"), registry, args)
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "{:?}\n{}", out.status, text(&out));
    text(&out)
}

fn user_config(home: &Path) -> PathBuf {
    home.join(".config/mcpr/mcp.json")
}

fn entry(home: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(user_config(home)).unwrap();
    let file: Value = serde_json::from_str(&text).unwrap();
    file["mcpServers"][name].clone()
}

/// Every file under `dir`, with its contents.
fn all_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return out;
    };
    for item in read.flatten() {
        let path = item.path();
        if path.is_dir() {
            out.extend(all_files(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, bytes));
        }
    }
    out
}

/// No file under `home` but the secret store holds `secret`.
fn assert_only_in_store(home: &Path, secret: &str) {
    let store = home.join(".local/share/mcpr/secrets.json");
    for (path, bytes) in all_files(home) {
        if path == store {
            continue;
        }
        assert!(
            !String::from_utf8_lossy(&bytes).contains(secret),
            "the secret landed in {}",
            path.display()
        );
    }
    let stored = std::fs::read_to_string(&store).unwrap();
    assert!(stored.contains(secret));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&store).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn search_pages_through_results_and_hides_deprecated_and_deleted_entries() {
    let registry = Registry::start();
    let home = home();
    let out = ok(mcpr(&home, &registry.url, &["registry", "search"]));
    for name in [
        "io.test/everything",
        "io.test/pypi",
        "io.test/oci",
        "io.test/bundle",
        "io.test/remote",
    ] {
        assert!(out.contains(name), "{name} missing (paging?):\n{out}");
    }
    assert!(
        out.contains("(npm)") && out.contains("(remote)") && out.contains("(mcpb)"),
        "{out}"
    );
    assert!(
        !out.contains("io.test/old") && !out.contains("io.test/gone"),
        "{out}"
    );
    assert!(out.contains("2 deprecated or deleted not shown"), "{out}");

    let out = ok(mcpr(&home, &registry.url, &["registry", "search", "--all"]));
    assert!(
        out.contains("io.test/old 0.1.0 (npm) [deprecated]"),
        "{out}"
    );
    assert!(out.contains("io.test/gone 0.1.0 (npm) [deleted]"), "{out}");

    let out = mcpr(
        &home,
        &registry.url,
        &["registry", "search", "Python", "--json"],
    );
    assert!(out.status.success(), "{}", text(&out));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list[0]["name"], "io.test/pypi");
    assert_eq!(list[0]["kinds"], json!(["pypi"]));
}

#[test]
fn show_prints_what_would_be_installed_and_the_values_it_needs() {
    let registry = Registry::start();
    let home = home();
    let out = ok(mcpr(
        &home,
        &registry.url,
        &["registry", "show", "io.test/everything"],
    ));
    assert!(out.contains("Installs: npm"), "{out}");
    assert!(
        out.contains("--env API_KEY (required, secret): Your key"),
        "{out}"
    );
    assert!(
        out.contains("--env LOG_LEVEL") && out.contains("[default: info]"),
        "{out}"
    );
    let out = ok(mcpr(
        &home,
        &registry.url,
        &["registry", "show", "io.test/remote"],
    ));
    assert!(
        out.contains("--header-value tenant (required): Your tenant"),
        "{out}"
    );
    assert!(
        out.contains("--header-value token (required, secret)"),
        "{out}"
    );
}
