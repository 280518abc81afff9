//! The peer clients: a TypeScript SDK script and a Python SDK script, written to a temporary
//! directory at run time. Each takes one JSON argument (the job), prints one JSON line (the
//! result) and exits; timings are taken inside the script, after its own start-up, exactly
//! where the Rust side takes them.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::proc;

/// Node's side: `node bench.mjs NPM_PREFIX JOB_JSON`.
const TYPESCRIPT: &str = r#"// mcpr-bench: the TypeScript SDK client (written at run time).
import { createRequire } from 'node:module';
const [prefix, jobText] = process.argv.slice(2);
const require = createRequire(prefix + '/package.json');
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');

const now = () => Number(process.hrtime.bigint()) / 1e6;
const ECHO = { name: 'echo', arguments: { message: 'hello' } };
const text = (result) => (result.content || []).map((c) => c.text || '').join('');

async function connect(server) {
  const client = new Client({ name: 'mcpr-bench', version: '0.0.0' });
  const transport = new StdioClientTransport({ command: server.command, args: server.args, stderr: 'ignore' });
  await client.connect(transport);
  return client;
}

const modes = {
  // Sequential and in-flight echo calls/s on one connection.
  async calls({ server, calls, warmup, in_flight }) {
    const client = await connect(server);
    for (let i = 0; i < warmup; i++) {
      const result = await client.callTool(ECHO);
      if (i === 0 && !text(result).includes('hello')) throw new Error('unexpected echo answer: ' + JSON.stringify(result));
    }
    const cpu = (since) => { const u = process.cpuUsage(since); return (u.user + u.system) / calls; };
    let started = now();
    let cpuStart = process.cpuUsage();
    for (let i = 0; i < calls; i++) await client.callTool(ECHO);
    const seq = calls / ((now() - started) / 1000);
    const cpu_seq = cpu(cpuStart);
    started = now();
    cpuStart = process.cpuUsage();
    let next = 0;
    const worker = async () => { while (next < calls) { next++; await client.callTool(ECHO); } };
    await Promise.all(Array.from({ length: Math.min(in_flight, calls) }, worker));
    const par = calls / ((now() - started) / 1000);
    const cpu_par = cpu(cpuStart);
    await client.close();
    return { seq, par, cpu_seq, cpu_par };
  },
  // Launch every server in parallel; done when every tools/list has answered.
  async startup({ servers }) {
    const started = now();
    const connected = await Promise.all(servers.map(async (server) => {
      const client = await connect(server);
      const { tools } = await client.listTools();
      return [client, tools.length];
    }));
    const ms = now() - started;
    const tools = connected.reduce((sum, [, n]) => sum + n, 0);
    await Promise.all(connected.map(([client]) => client.close()));
    return { ms, tools };
  },
  // One call, as a one-shot CLI would do it.
  async oneshot({ server }) {
    const client = await connect(server);
    const result = await client.callTool(ECHO);
    await client.close();
    return { text: text(result) };
  },
  // RSS growth of this process per idle connection, after a first one (see memory.rs).
  async idle({ server, count }) {
    const warmUp = await connect(server);
    await warmUp.listTools();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const before = process.memoryUsage().rss;
    const clients = await Promise.all(Array.from({ length: count }, async () => {
      const client = await connect(server);
      await client.listTools();
      return client;
    }));
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = process.memoryUsage().rss;
    await Promise.all([warmUp, ...clients].map((client) => client.close()));
    return { before_kib: before / 1024, after_kib: after / 1024, connected: clients.length };
  },
};

const job = JSON.parse(jobText);
modes[job.mode](job).then(
  (result) => { process.stdout.write(JSON.stringify(result) + '\n'); process.exit(0); },
  (error) => { process.stderr.write(String(error && error.stack || error) + '\n'); process.exit(1); },
);
"#;

/// Python's side: `python bench.py JOB_JSON`.
const PYTHON: &str = r#"# mcpr-bench: the Python SDK client (written at run time).
import asyncio, json, os, sys, time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def calls(job):
    server = StdioServerParameters(command=job["server"]["command"], args=job["server"]["args"])
    with open(os.devnull, "w") as devnull:
        async with stdio_client(server, errlog=devnull) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                arguments = {"message": "hello"}
                for i in range(job["warmup"]):
                    result = await session.call_tool("echo", arguments)
                    if i == 0 and "hello" not in "".join(getattr(c, "text", "") for c in result.content):
                        raise RuntimeError(f"unexpected echo answer: {result}")
                n = job["calls"]
                started, cpu = time.perf_counter(), time.process_time()
                for _ in range(n):
                    await session.call_tool("echo", arguments)
                seq = n / (time.perf_counter() - started)
                cpu_seq = (time.process_time() - cpu) * 1e6 / n

                async def worker(first):
                    for _ in range(first, n, job["in_flight"]):
                        await session.call_tool("echo", arguments)

                started, cpu = time.perf_counter(), time.process_time()
                await asyncio.gather(*(worker(w) for w in range(min(job["in_flight"], n))))
                par = n / (time.perf_counter() - started)
                cpu_par = (time.process_time() - cpu) * 1e6 / n
    return {"seq": seq, "par": par, "cpu_seq": cpu_seq, "cpu_par": cpu_par}


job = json.loads(sys.argv[1])
result = asyncio.run({"calls": calls}[job["mode"]](job))
print(json.dumps(result), flush=True)
os._exit(0)
"#;

/// The scripts, written into a directory.
#[derive(Debug)]
pub struct Scripts {
    pub typescript: PathBuf,
    pub python: PathBuf,
}

impl Scripts {
    pub fn write(dir: &Path) -> std::io::Result<Scripts> {
        let scripts = Scripts {
            typescript: dir.join("bench.mjs"),
            python: dir.join("bench.py"),
        };
        std::fs::write(&scripts.typescript, TYPESCRIPT)?;
        std::fs::write(&scripts.python, PYTHON)?;
        Ok(scripts)
    }
}

/// A server to start: program and arguments.
#[derive(Debug, Clone)]
pub struct Server {
    pub command: String,
    pub args: Vec<String>,
}

impl Server {
    pub fn new(command: impl Into<String>, args: &[&str]) -> Server {
        Server {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    pub fn json(&self) -> Value {
        json!({"command": self.command, "args": self.args})
    }
}

/// Run one job of the TypeScript script; its JSON result, or why there is none.
pub(crate) fn typescript(
    scripts: &Scripts,
    npm_root: &Path,
    job: &Value,
    bound: Duration,
) -> Result<(Value, Duration), String> {
    let mut command = Command::new("node");
    command
        .arg(&scripts.typescript)
        .arg(npm_root)
        .arg(job.to_string());
    run_json(&mut command, bound, "TypeScript SDK script")
}

/// Run one job of the Python script.
pub(crate) fn python(
    scripts: &Scripts,
    python: &Path,
    job: &Value,
    bound: Duration,
) -> Result<(Value, Duration), String> {
    let mut command = Command::new(python);
    command.arg(&scripts.python).arg(job.to_string());
    run_json(&mut command, bound, "Python SDK script")
}

fn run_json(
    command: &mut Command,
    bound: Duration,
    what: &str,
) -> Result<(Value, Duration), String> {
    let outcome = proc::run_bounded(command, bound).map_err(|e| format!("{what}: {e}"))?;
    if !outcome.success() {
        return Err(outcome.failure(what));
    }
    let line = outcome
        .stdout
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .ok_or_else(|| format!("{what}: no result on stdout"))?;
    let value = serde_json::from_str(line).map_err(|e| format!("{what}: {e}: {line}"))?;
    Ok((value, outcome.elapsed))
}
