//! The gateway soak, written once for the CLI's test and for the benchmark: `mcpr serve`
//! (stdio) takes [`CALLS`] `tools/call`s, [`IN_FLIGHT`] in flight at every moment, written as
//! raw JSON-RPC lines to its stdin, over six backends that fail in every way the mock knows:
//!
//! - `crash`: a stdio server that exits on its 151st call (and is started again), failing
//!   the calls it was running;
//! - `hang`: a stdio server that never answers a call (each times out after a second);
//! - `garbage`: a stdio server that writes lines that are not JSON before every answer;
//! - `http500`: an HTTP server whose first 30 calls get HTTP 500;
//! - `expire`: an HTTP server that expires each session after 25 requests (then 404) while
//!   other calls of the session are still running (each takes 20 ms);
//! - `drop`: an HTTP server that cuts the event streams of its first 20 calls before the
//!   answer, so that they are resumed.
//!
//! [`run`] starts the backends (all `mcpr mock`, so the `mcpr` binary given is all it needs)
//! and the gateway, drives the calls, tells each answer's outcome apart (an injected failure
//! by its error text: the crash, the time limit, the 500's body), reads what the HTTP backends
//! recorded (which call text reached which session) and the gateway's memory. It asserts
//! nothing: the test asserts on the returned [`SoakRun`], the benchmark reports it. Every wait
//! is bounded, and every process it starts is killed when it returns (on Linux also when the
//! thread that started it dies first, as a benchmark stopped by Ctrl-C does).

use std::collections::BTreeMap;
use std::fmt;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{ChildGuard, isolate_env, line_channel};

/// Calls in all.
pub const CALLS: usize = 3_000;

/// Calls in flight at every moment.
pub const IN_FLIGHT: usize = 64;

/// Generous bound on the wait for any one answer; never reached when things work.
const HANG: Duration = Duration::from_secs(60);

/// Bound on an HTTP backend's start (its `listening on URL` line).
const LISTENING: Duration = Duration::from_secs(30);

/// One of the six backends, each failing its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Backend {
    /// Exits on its 151st call, and is started again.
    Crash,
    /// Never answers a call; each times out after a second.
    Hang,
    /// Writes lines that are not JSON before every answer.
    Garbage,
    /// HTTP: its first 30 calls get HTTP 500.
    Http500,
    /// HTTP: expires each session after 25 requests.
    Expire,
    /// HTTP: cuts the event streams of its first 20 calls before the answer.
    Drop,
}

impl Backend {
    /// All six, in the order the gateway's config lists them.
    pub const ALL: [Backend; 6] = [
        Backend::Crash,
        Backend::Hang,
        Backend::Garbage,
        Backend::Http500,
        Backend::Expire,
        Backend::Drop,
    ];

    /// The three reached over HTTP, which record every request they take.
    pub const HTTP: [Backend; 3] = [Backend::Http500, Backend::Expire, Backend::Drop];

    /// Its server name in the gateway's config.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Crash => "crash",
            Backend::Hang => "hang",
            Backend::Garbage => "garbage",
            Backend::Http500 => "http500",
            Backend::Expire => "expire",
            Backend::Drop => "drop",
        }
    }

    /// The backend call `index` goes to: every 50th to the one that hangs, the others in turn.
    pub fn of_call(index: usize) -> Backend {
        const IN_TURN: [Backend; 5] = [
            Backend::Crash,
            Backend::Garbage,
            Backend::Http500,
            Backend::Expire,
            Backend::Drop,
        ];
        if index % 50 == 49 {
            Backend::Hang
        } else {
            IN_TURN[index % IN_TURN.len()]
        }
    }

    /// Whether `error` (the text of a failed call) is the failure this backend was told to
    /// inject.
    pub fn injects(self, error: &str) -> bool {
        match self {
            Backend::Crash => error.contains("exit status: 101"),
            Backend::Hang => error.contains("timed out"),
            Backend::Http500 => error.contains("injected failure (mcpr mock --http-500)"),
            Backend::Garbage | Backend::Expire | Backend::Drop => false,
        }
    }

    /// The gateway's name for the mock's `echo` on this backend.
    fn tool(self) -> String {
        format!("mcp_{}_echo", self.name())
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How one call ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Answered with its own text.
    Echoed,
    /// Failed with the failure its backend injects (the error text).
    Injected(String),
    /// Failed some other way (the error text).
    Failed(String),
    /// Answered without an error, but with another text than its own.
    OtherText(String),
    /// Never answered: the gateway stopped answering first (see [`SoakRun::stalled`]).
    Lost,
}

/// One call of the soak.
#[derive(Debug, Clone)]
pub struct Call {
    /// Its JSON-RPC id, and the `call-INDEX` text it echoes.
    pub index: usize,
    pub backend: Backend,
    pub outcome: Outcome,
}

impl Call {
    /// What went wrong with the call that no backend was told to do, if anything.
    pub fn unexpected(&self) -> Option<String> {
        let (index, backend) = (self.index, self.backend);
        match &self.outcome {
            Outcome::Failed(error) => Some(format!("call {index} ({backend}) failed: {error}")),
            Outcome::OtherText(text) => Some(format!("call {index} ({backend}) answered {text:?}")),
            Outcome::Echoed | Outcome::Injected(_) | Outcome::Lost => None,
        }
    }
}

/// A process's memory, from `/proc/PID/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Resident now (`VmRSS`), in KiB.
    pub rss_kib: u64,
    /// The most it has been resident (`VmHWM`), in KiB.
    pub peak_kib: u64,
}

impl Memory {
    /// The memory of process `pid`; `None` where `/proc` does not tell (not Linux, or gone).
    pub fn of(pid: u32) -> Option<Memory> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kib| kib.parse().ok())
        };
        Some(Memory {
            rss_kib: field("VmRSS:")?,
            peak_kib: field("VmHWM:")?,
        })
    }
}

/// What one HTTP backend recorded of the soak's calls.
#[derive(Debug, Clone, Default)]
pub struct Recorded {
    /// Each call text that reached the server, with the session of each time it did, in order.
    pub sessions_of: BTreeMap<String, Vec<Value>>,
    /// How many times each call text was refused with 404 as of an expired session (so never
    /// ran).
    pub expired_of: BTreeMap<String, usize>,
    /// `initialize` requests: one per session the gateway opened.
    pub initializes: usize,
    /// Event streams resumed (a GET with `Last-Event-ID`).
    pub resumed_streams: usize,
}

impl Recorded {
    /// Call texts that reached the server more than once.
    pub fn replays(&self) -> usize {
        self.sessions_of
            .values()
            .filter(|sessions| sessions.len() > 1)
            .count()
    }

    /// Read a mock's `--record` file (missing or unreadable: nothing recorded).
    fn read(path: &Path) -> Recorded {
        let lines: Vec<Value> = std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| serde_json::from_str(line).ok())
            .collect();
        let mut recorded = Recorded::default();
        for line in &lines {
            let method = &line["body"]["method"];
            if line["http"] == "POST" && method == "tools/call" {
                if let Some(text) = line["body"]["params"]["arguments"]["text"].as_str() {
                    recorded
                        .sessions_of
                        .entry(text.to_owned())
                        .or_default()
                        .push(line["session"].clone());
                }
            } else if line["refused"] == "expired" && method == "tools/call" {
                if let Some(text) = line["body"]["params"]["arguments"]["text"].as_str() {
                    *recorded.expired_of.entry(text.to_owned()).or_default() += 1;
                }
            } else if line["http"] == "POST" && method == "initialize" {
                recorded.initializes += 1;
            } else if line["http"] == "GET" && line["lastEventId"].is_string() {
                recorded.resumed_streams += 1;
            }
        }
        recorded
    }
}

/// What the soak saw.
#[derive(Debug, Clone)]
pub struct SoakRun {
    /// Every call, in the order sent (`calls[i].index == i`).
    pub calls: Vec<Call>,
    /// Answers to a call that had been answered already.
    pub answered_twice: Vec<String>,
    /// Lines of the gateway's that answer no call of ours (an unknown id, or not JSON).
    pub strays: Vec<String>,
    /// Why the driver stopped before every call was answered (the gateway stopped answering
    /// within the bound, closed its output or its input).
    pub stalled: Option<String>,
    /// From the first call sent to the last answer read.
    pub elapsed: Duration,
    /// The gateway's memory once every backend was connected, before the first call.
    pub memory_at_start: Option<Memory>,
    /// The gateway's memory after the last answer.
    pub memory_at_end: Option<Memory>,
    /// What each HTTP backend recorded.
    pub recorded: BTreeMap<Backend, Recorded>,
}

impl SoakRun {
    /// Calls that were answered (once or more).
    pub fn answered(&self) -> usize {
        self.calls.len() - self.lost()
    }

    /// Calls never answered.
    pub fn lost(&self) -> usize {
        self.calls
            .iter()
            .filter(|call| call.outcome == Outcome::Lost)
            .count()
    }

    /// Injected failures, counted per backend (backends with none are left out).
    pub fn injected_by_backend(&self) -> BTreeMap<Backend, usize> {
        let mut counts = BTreeMap::new();
        for call in &self.calls {
            if let Outcome::Injected(_) = call.outcome {
                *counts.entry(call.backend).or_default() += 1;
            }
        }
        counts
    }

    /// Every call that failed without an injected fault or echoed another text, described.
    pub fn unexpected(&self) -> Vec<String> {
        self.calls.iter().filter_map(Call::unexpected).collect()
    }

    /// Call texts sent to an HTTP backend more than once, over all of them.
    pub fn replays(&self) -> usize {
        self.recorded.values().map(Recorded::replays).sum()
    }
}

/// Why the soak could not run.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    #[error("cannot create the soak's directory in {dir}: {source}")]
    Scratch {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {what}: {source}")]
    Spawn {
        what: String,
        source: std::io::Error,
    },
    #[error("{what} printed no `listening on` line within {} s", bound.as_secs())]
    NotListening { what: String, bound: Duration },
    #[error("the gateway failed before the first call: {0}")]
    Handshake(String),
    #[error("the gateway's tool list lacks {missing:?} (it lists {listed:?})")]
    MissingTools {
        missing: Vec<String>,
        listed: Vec<String>,
    },
}

/// Run the soak against the `mcpr` binary `mcpr`, with its files in a fresh directory inside
/// `scratch` (removed at the end). An `Err` only when it could not start: everything that
/// happens once the calls run is in the [`SoakRun`].
pub fn run(mcpr: &Path, scratch: &Path) -> Result<SoakRun, SoakError> {
    let dir = tempfile::Builder::new()
        .prefix("mcpr-soak-")
        .tempdir_in(scratch)
        .map_err(|source| SoakError::Scratch {
            dir: scratch.to_owned(),
            source,
        })?;
    let record = |backend: Backend| dir.path().join(format!("{backend}.jsonl"));
    let record_flag = |backend: Backend| record(backend).to_string_lossy().into_owned();
    let http500 = HttpBackend::start(
        mcpr,
        Backend::Http500,
        &[
            "--http-500",
            "30",
            "--record",
            &record_flag(Backend::Http500),
        ],
    )?;
    let expire = HttpBackend::start(
        mcpr,
        Backend::Expire,
        &[
            "--expire-session-after",
            "25",
            "--call-delay",
            "20",
            "--record",
            &record_flag(Backend::Expire),
        ],
    )?;
    let dropper = HttpBackend::start(
        mcpr,
        Backend::Drop,
        &[
            "--drop-stream",
            "20",
            "--sse-retry",
            "50",
            "--record",
            &record_flag(Backend::Drop),
        ],
    )?;
    let mcpr_text = mcpr.to_string_lossy();
    let stdio = |flags: &[&str]| {
        let mut args = vec!["mock"];
        args.extend_from_slice(flags);
        json!({"command": mcpr_text, "args": args})
    };
    let mut hang = stdio(&["--hang-call"]);
    hang["tool_timeout_ms"] = json!(1_000);
    let servers = json!({
        // About four crashes in all: under the crash-storm breaker's limit, so it comes back.
        "crash": stdio(&["--crash-after", "150"]),
        "hang": hang,
        "garbage": stdio(&["--garbage", "2"]),
        "http500": {"type": "http", "url": http500.url},
        "expire": {"type": "http", "url": expire.url},
        "drop": {"type": "http", "url": dropper.url},
    });

    let mut gateway = Gateway::start(mcpr, dir.path(), &servers)?;
    gateway.handshake()?;
    let memory_at_start = Memory::of(gateway.pid());
    let driven = gateway.drive();
    let memory_at_end = Memory::of(gateway.pid());
    drop(gateway);

    let recorded = Backend::HTTP
        .into_iter()
        .map(|backend| (backend, Recorded::read(&record(backend))))
        .collect();
    drop((http500, expire, dropper));
    Ok(SoakRun {
        calls: driven.calls,
        answered_twice: driven.answered_twice,
        strays: driven.strays,
        stalled: driven.stalled,
        elapsed: driven.elapsed,
        memory_at_start,
        memory_at_end,
        recorded,
    })
}

/// Spawn `command` in a process group of its own, killed when the guard is dropped and, on
/// Linux, when the thread that spawned it dies.
fn spawn(command: &mut Command, what: &str) -> Result<ChildGuard, SoakError> {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
    #[cfg(target_os = "linux")]
    // SAFETY: between fork and exec only `prctl`, which is async-signal-safe, runs.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
        .spawn()
        .map(ChildGuard)
        .map_err(|source| SoakError::Spawn {
            what: what.to_owned(),
            source,
        })
}

/// An HTTP backend: `mcpr mock --http 127.0.0.1:0 FLAGS`, running until dropped.
struct HttpBackend {
    _child: ChildGuard,
    url: String,
}

impl HttpBackend {
    fn start(mcpr: &Path, backend: Backend, flags: &[&str]) -> Result<HttpBackend, SoakError> {
        let what = format!("the `{backend}` backend (mcpr mock --http)");
        let mut command = Command::new(mcpr);
        command
            .args(["mock", "--http", "127.0.0.1:0"])
            .args(flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = spawn(&mut command, &what)?;
        let Some(stderr) = child.0.stderr.take() else {
            return Err(SoakError::NotListening {
                what,
                bound: LISTENING,
            });
        };
        // Read stderr to its end, so the mock never blocks on a full pipe.
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = sender.send(url.trim().to_owned());
                }
            }
        });
        let url = receiver
            .recv_timeout(LISTENING)
            .map_err(|_| SoakError::NotListening {
                what,
                bound: LISTENING,
            })?;
        Ok(HttpBackend { _child: child, url })
    }
}

/// `mcpr serve` over stdio, its output read line by line on a thread.
struct Gateway {
    child: ChildGuard,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

/// What driving the calls gave.
struct Driven {
    calls: Vec<Call>,
    answered_twice: Vec<String>,
    strays: Vec<String>,
    stalled: Option<String>,
    elapsed: Duration,
}

impl Gateway {
    /// Write `servers` as the config in `dir` and serve exactly it, with `dir/home` as the
    /// home of its configs and caches.
    fn start(mcpr: &Path, dir: &Path, servers: &Value) -> Result<Gateway, SoakError> {
        let config = dir.join("mcp.json");
        let home = dir.join("home");
        std::fs::write(&config, json!({ "mcpServers": servers }).to_string()).map_err(
            |source| SoakError::Write {
                path: config.clone(),
                source,
            },
        )?;
        std::fs::create_dir_all(home.join("project")).map_err(|source| SoakError::Write {
            path: home.join("project"),
            source,
        })?;
        let mut command = Command::new(mcpr);
        command
            .arg("--strict-config")
            .arg("--config")
            .arg(&config)
            .arg("serve")
            .current_dir(home.join("project"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        isolate_env(&mut command, &home);
        let mut child = spawn(&mut command, "the gateway (mcpr serve)")?;
        let (Some(stdin), Some(stdout)) = (child.0.stdin.take(), child.0.stdout.take()) else {
            return Err(SoakError::Handshake("no pipes to the gateway".into()));
        };
        Ok(Gateway {
            child,
            stdin,
            lines: line_channel(stdout),
        })
    }

    fn pid(&self) -> u32 {
        self.child.0.id()
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        self.stdin
            .write_all(format!("{message}\n").as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("the gateway's input closed: {e}"))
    }

    /// The next line the gateway writes, within [`HANG`].
    fn next_line(&self) -> Result<String, String> {
        self.lines.recv_timeout(HANG).map_err(|e| match e {
            RecvTimeoutError::Timeout => {
                format!("the gateway wrote nothing for {} s", HANG.as_secs())
            }
            RecvTimeoutError::Disconnected => "the gateway closed its output".to_owned(),
        })
    }

    /// Read until the answer with id `id`, skipping everything else.
    fn answer_to(&self, id: &str) -> Result<Value, String> {
        loop {
            let line = self.next_line()?;
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && message["id"] == json!(id)
            {
                return Ok(message);
            }
        }
    }

    /// `initialize`, then `tools/list`, which waits for every backend: each backend's `echo`
    /// must be listed.
    fn handshake(&mut self) -> Result<(), SoakError> {
        let failed = SoakError::Handshake;
        self.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "soak", "version": "0"}}}),
        )
        .map_err(failed)?;
        self.answer_to("init").map_err(failed)?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .map_err(failed)?;
        self.send(&json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}))
            .map_err(failed)?;
        let listed = self.answer_to("list").map_err(failed)?;
        let listed: Vec<String> = listed["result"]["tools"]
            .as_array()
            .ok_or_else(|| failed(format!("`tools/list` answered {listed}")))?
            .iter()
            .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
            .collect();
        let missing: Vec<String> = Backend::ALL
            .into_iter()
            .map(Backend::tool)
            .filter(|tool| !listed.contains(tool))
            .collect();
        if !missing.is_empty() {
            return Err(SoakError::MissingTools { missing, listed });
        }
        Ok(())
    }

    /// Send the calls, [`IN_FLIGHT`] at a time, and read their answers, until every call is
    /// answered or the gateway stops answering.
    fn drive(&mut self) -> Driven {
        let mut answers: Vec<Option<Value>> = vec![None; CALLS];
        let mut answered = 0;
        let mut answered_twice = Vec::new();
        let mut strays = Vec::new();
        let mut stalled = None;
        let mut sent = 0;
        let started = Instant::now();
        'calls: while answered < CALLS {
            while sent < CALLS && sent - answered < IN_FLIGHT {
                let call = json!({"jsonrpc": "2.0", "id": sent, "method": "tools/call", "params": {
                    "name": Backend::of_call(sent).tool(),
                    "arguments": {"text": format!("call-{sent}")}}});
                if let Err(why) = self.send(&call) {
                    stalled = Some(why);
                    break 'calls;
                }
                sent += 1;
            }
            let line = match self.next_line() {
                Ok(line) => line,
                Err(why) => {
                    stalled = Some(why);
                    break;
                }
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                strays.push(format!("not JSON: {line}"));
                continue;
            };
            if message.get("method").is_some() {
                continue; // a notification of the gateway's own (a reconnect's list change)
            }
            let id = message["id"].as_u64();
            let Some(slot) = id.and_then(|id| answers.get_mut(usize::try_from(id).ok()?)) else {
                strays.push(message.to_string());
                continue;
            };
            match slot {
                Some(previous) => answered_twice.push(format!(
                    "call {} answered twice: {previous} then {message}",
                    id.unwrap_or_default()
                )),
                None => {
                    *slot = Some(message);
                    answered += 1;
                }
            }
        }
        let elapsed = started.elapsed();
        let calls = answers
            .into_iter()
            .enumerate()
            .map(|(index, answer)| {
                let backend = Backend::of_call(index);
                let outcome = match answer {
                    None => Outcome::Lost,
                    Some(answer) => outcome(backend, index, &answer),
                };
                Call {
                    index,
                    backend,
                    outcome,
                }
            })
            .collect();
        Driven {
            calls,
            answered_twice,
            strays,
            stalled,
            elapsed,
        }
    }
}

/// How the answer of call `index` to `backend` ends it. The text is that of the answer's first
/// content block; a JSON-RPC error counts as a failure, with its message as the text.
fn outcome(backend: Backend, index: usize, answer: &Value) -> Outcome {
    let (failed, text) = match answer.get("error") {
        Some(error) => (true, error.to_string()),
        None => {
            let result = &answer["result"];
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            (result["isError"] == json!(true), text.to_owned())
        }
    };
    if !failed {
        if text == format!("call-{index}") {
            Outcome::Echoed
        } else {
            Outcome::OtherText(text)
        }
    } else if backend.injects(&text) {
        Outcome::Injected(text)
    } else {
        Outcome::Failed(text)
    }
}
