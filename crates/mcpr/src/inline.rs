//! A server given on the command line instead of in a config file (`mcpr tools -- CMD ARGS...`,
//! `mcpr call --url URL TOOL`): the quickest way to try a server. Typing it is the user's own
//! intent, so it needs no trust; it is started alone, under the name [`INLINE_NAME`], and
//! written nowhere.
//!
//! `-H` values expand `${VAR}`, `${VAR:-default}` and `${env:VAR}` from the environment with
//! the same expander stored configs use, so `-H 'Authorization: Bearer ${TOKEN}'` (quoted, so
//! the shell leaves it alone) sends the token, not the text `${TOKEN}`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use mcp_runtime::config::expand::{Context, EnvSource, Syntax, expand_str};
use mcp_runtime::config::{
    Discovery, HttpConfig, HttpKind, ServerConfig, StdioConfig, Transport, load_all_mcp_configs,
};

use crate::exit::Failure;
use crate::flags::GlobalArgs;

/// The name an inline server goes by (in tool names, errors and `mcpr status`).
pub(crate) const INLINE_NAME: &str = "inline";

/// The flags that give a server inline, shared by `tools`, `call`, `status` and `shell`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct InlineArgs {
    /// Try the remote server at URL instead of the configured servers.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// With `--url`: a request header, `'Name: value'` (repeatable).
    #[arg(
        short = 'H',
        long = "header",
        value_name = "'NAME: VALUE'",
        requires = "url"
    )]
    pub headers: Vec<String>,
    /// With `--url`: use the legacy HTTP+SSE transport instead of streamable HTTP.
    #[arg(long, requires = "url")]
    pub sse: bool,
    /// Try this server instead of the configured ones: its command and arguments, after `--`.
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

impl InlineArgs {
    /// Whether a server was given inline.
    pub(crate) fn is_set(&self) -> bool {
        self.url.is_some() || !self.command.is_empty()
    }

    /// The inline server's config, when one was given.
    pub(crate) fn config(&self) -> Result<Option<ServerConfig>, String> {
        let transport = if let Some(url) = &self.url {
            let mut headers = BTreeMap::new();
            for header in &self.headers {
                let (name, value) = parse_header(header)?;
                let value = expand_header(&name, &value)?;
                if name.eq_ignore_ascii_case("authorization") {
                    AUTHORIZATION_GIVEN.store(true, Ordering::Relaxed);
                }
                headers.insert(name, value);
            }
            Transport::Http(HttpConfig {
                url: url.clone(),
                headers,
                kind: if self.sse {
                    HttpKind::Sse
                } else {
                    HttpKind::StreamableHttp
                },
                oauth: None,
            })
        } else if let Some((command, args)) = self.command.split_first() {
            Transport::Stdio(StdioConfig {
                command: command.clone(),
                args: args.to_vec(),
                env: BTreeMap::new(),
                cwd: None,
                sandbox: None,
                inherit_env: false,
            })
        } else {
            return Ok(None);
        };
        let mut config = ServerConfig::stdio("", Vec::<String>::new());
        config.transport = transport;
        // Validate exactly as a config file entry would be.
        let entry = mcp_runtime::config::writer::server_to_json(&config);
        mcp_runtime::config::server_from_json(INLINE_NAME, &entry)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

/// Set once an inline server's `Authorization` header came from `-H`: a refused login is then
/// a wrong or empty token, not a missing one, and the advice says so.
static AUTHORIZATION_GIVEN: AtomicBool = AtomicBool::new(false);

/// Whether `-H` gave the inline server an `Authorization` header.
pub(crate) fn authorization_given() -> bool {
    AUTHORIZATION_GIVEN.load(Ordering::Relaxed)
}

/// The value of `-H 'NAME: VALUE'` with `${VAR}` references expanded from the environment.
/// The error names the flag, the header and the variable, never a value.
fn expand_header(name: &str, value: &str) -> Result<String, String> {
    let env = EnvSource::Process;
    expand_str(value, Syntax::STANDARD, &Context::new(&env))
        .map_err(|e| format!("-H `{name}`: {e}"))
}

/// `'Name: value'` of `-H`, split and trimmed.
pub(crate) fn parse_header(header: &str) -> Result<(String, String), String> {
    header
        .split_once(':')
        .filter(|(name, _)| !name.trim().is_empty())
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .ok_or_else(|| format!("-H `{header}`: expected 'Name: value'"))
}

/// The servers a command works on: the inline one alone when given, else the configured ones
/// (see [`crate::discovery::discover`]).
pub(crate) fn discover(global: &GlobalArgs, inline: &InlineArgs) -> Result<Discovery, Failure> {
    let Some(config) = inline.config().map_err(Failure::usage)? else {
        return crate::discovery::discover(global);
    };
    if !global.config.is_empty() || global.strict_config || global.trust_project {
        return Err(Failure::usage(
            "a server given inline (after `--` or with --url) replaces the configured ones: \
             leave out --config, --strict-config and --trust-project",
        ));
    }
    // Nothing is read: no config file, no project. The result only carries the directory.
    let flags = crate::discovery::CliFlags::from(global);
    let mut discovery = load_all_mcp_configs(
        &flags.cwd(),
        &flags
            .options()
            .with_strict(true)
            .with_explicit_files(Vec::new())
            .with_enable_project_config(false),
    );
    crate::logging::add_secrets(config.secret_values());
    discovery.configs.insert(INLINE_NAME.to_owned(), config);
    Ok(discovery)
}

/// Like [`discover`], but having no server to work on is a usage error.
pub(crate) fn discover_some(
    global: &GlobalArgs,
    inline: &InlineArgs,
) -> Result<Discovery, Failure> {
    if inline.is_set() {
        discover(global, inline)
    } else {
        crate::discovery::discover_some(global)
    }
}
