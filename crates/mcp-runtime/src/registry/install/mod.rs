//! From a `server.json` to a config entry: which package or remote to use, which values the
//! user must give, and the command line, environment and headers they make.
//!
//! - npm → `npx -y <identifier>@<version>`; PyPI → `uvx <identifier>==<version>`;
//!   OCI → `docker run -i --rm <image>:<tag>`; `mcpb` → the unpacked bundle's own command;
//!   remotes → a URL entry with headers.
//! - `runtimeArguments` go between the runner and the package, `packageArguments` after it;
//!   named arguments become `name value`, positional ones `value`.
//! - A fixed `value` has its `{var}` templates filled from `variables`; an input without one
//!   takes the user's value, else its `default`; a required input with neither is missing.
//! - A secret value (an `isSecret` input, or a template filled by one) is never put in the entry:
//!   the entry holds a marker ([`SECRET_PREFIX`]) and the value goes to the secret store, unless
//!   the user gave a `${VAR}` reference, which is written as is and read when the server starts.
//! - What an entry may decide is limited ([`rules`], and `options` for runner options): package
//!   names and exact versions, a short allowlist of runner options, no loader variables, https
//!   (or loopback http) URLs. mcpr builds the `docker run` line itself: a variable is passed with
//!   `-e NAME` only when the entry sets it, its value in docker's own environment.

use std::collections::BTreeMap;

use super::RegistryError;
use super::model::{Argument, Input, KeyValueInput, Package, RemoteTransport, ServerJson};
use crate::config::expand::has_reference;
use crate::config::resolve::is_env_name;
use crate::config::{HttpConfig, HttpKind, ServerConfig, StdioConfig, Transport};
use options::{Runner, RunnerOptions};

pub use crate::config::secrets::SECRET_PREFIX;
pub use rules::{Refusal, Rule};

mod options;
pub mod rules;

/// How a server is installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InstallKind {
    /// An npm package run with `npx`.
    Npm,
    /// A PyPI package run with `uvx`.
    Pypi,
    /// A container image run with `docker`.
    Oci,
    /// An MCP bundle downloaded and unpacked.
    Mcpb,
    /// A hosted endpoint.
    Remote,
}

impl InstallKind {
    /// The kind of a package's `registryType`, `None` for one mcpr cannot install.
    pub fn of_registry_type(registry_type: &str) -> Option<Self> {
        match registry_type.to_ascii_lowercase().as_str() {
            "npm" => Some(InstallKind::Npm),
            "pypi" => Some(InstallKind::Pypi),
            "oci" => Some(InstallKind::Oci),
            "mcpb" => Some(InstallKind::Mcpb),
            _ => None,
        }
    }
}

impl std::fmt::Display for InstallKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InstallKind::Npm => "npm",
            InstallKind::Pypi => "pypi",
            InstallKind::Oci => "oci",
            InstallKind::Mcpb => "mcpb",
            InstallKind::Remote => "remote",
        })
    }
}

/// Where a user value goes, and so which flag gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum ValueSource {
    /// An environment variable, or a variable of one's value (`--env NAME=VALUE`).
    Env,
    /// A header, or a variable of a header or URL (`--header-value NAME=VALUE`).
    Header,
    /// A command-line argument, by its flag or value hint (`--arg NAME=VALUE`).
    Arg,
}

impl ValueSource {
    /// The command-line flag that gives such a value.
    pub fn flag(self) -> &'static str {
        match self {
            ValueSource::Env => "--env",
            ValueSource::Header => "--header-value",
            ValueSource::Arg => "--arg",
        }
    }
}

/// A value the user may give.
#[derive(Debug, Clone, PartialEq)]
pub struct Need {
    /// Which flag gives it.
    pub source: ValueSource,
    /// Its name (for the flag: `NAME=VALUE`).
    pub key: String,
    /// What the registry says about it.
    pub input: Input,
}

impl Need {
    /// `--env NAME` (how to give it).
    pub fn flag(&self) -> String {
        format!("{} {}", self.source.flag(), self.key)
    }
}

/// The values a user gave, by source and name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values(pub BTreeMap<(ValueSource, String), String>);

impl Values {
    /// Set one value.
    pub fn set(&mut self, source: ValueSource, key: &str, value: impl Into<String>) {
        self.0.insert((source, key.to_owned()), value.into());
    }

    fn get(&self, source: ValueSource, key: &str) -> Option<&String> {
        self.0.get(&(source, key.to_owned()))
    }
}

/// A bundle's own command, read from its manifest after unpacking.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BundleCommand {
    /// The program.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment the manifest sets.
    pub env: BTreeMap<String, String>,
}

/// The result: an entry to write and the secrets to store for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Installed {
    /// The config entry (secret values replaced by markers).
    pub config: ServerConfig,
    /// Secret values by field (`env.NAME`, `headers.NAME`, `args.INDEX`).
    pub secrets: BTreeMap<String, String>,
}

/// What will be installed from one entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// How.
    pub kind: InstallKind,
    /// The package (for all kinds but [`InstallKind::Remote`]).
    pub package: Option<Package>,
    /// The remote (for [`InstallKind::Remote`]).
    pub remote: Option<RemoteTransport>,
    /// Its position in the entry's `packages` (or `remotes`), as error fields name it.
    pub index: usize,
}

/// Every way to install `server`, in its order: each package of a kind mcpr runs, then each
/// remote.
pub fn plans(server: &ServerJson) -> Vec<Plan> {
    let packages = server.packages.iter().enumerate().filter_map(|(index, p)| {
        InstallKind::of_registry_type(&p.registry_type).map(|kind| Plan {
            kind,
            package: Some(p.clone()),
            remote: None,
            index,
        })
    });
    let remotes = server.remotes.iter().enumerate().map(|(index, r)| Plan {
        kind: InstallKind::Remote,
        package: None,
        remote: Some(r.clone()),
        index,
    });
    packages.chain(remotes).collect()
}

/// Choose how to install `server`: the first package or remote of kind `prefer`, else the first
/// package mcpr can run, else the first remote. A package of an unknown `registryType` is
/// an error only when nothing else is offered.
pub fn plan(server: &ServerJson, prefer: Option<InstallKind>) -> Result<Plan, RegistryError> {
    let mut all = plans(server).into_iter();
    // Packages come before remotes, so the first plan of any kind is the first package if any.
    let chosen = match prefer {
        Some(want) => all.find(|plan| plan.kind == want),
        None => all.next(),
    };
    if let Some(plan) = chosen {
        return Ok(plan);
    }
    if let (None, Some(unknown)) = (prefer, server.packages.first()) {
        return Err(RegistryError::UnsupportedPackage {
            server: server.name.clone(),
            registry_type: unknown.registry_type.clone(),
        });
    }
    let offered = server.kinds();
    Err(RegistryError::NothingToInstall {
        server: server.name.clone(),
        message: match prefer {
            Some(kind) if !offered.is_empty() => format!(
                "it offers no {kind} package (it offers: {})",
                offered.join(", ")
            ),
            _ => "it lists no packages and no remotes".into(),
        },
    })
}

impl Plan {
    /// Every value the user may give, in order (required or not; secret or not).
    pub fn needs(&self) -> Vec<Need> {
        let values = Values::default();
        let mut walk = Walk::new(&values);
        let _ = self.assemble(&mut walk, None);
        walk.needs
    }

    /// The required values that `values` leaves unset (and that have no default), as the flags
    /// that give them.
    pub fn missing(&self, values: &Values) -> Vec<String> {
        let mut walk = Walk::new(values);
        let _ = self.assemble(&mut walk, Some(&BundleCommand::default()));
        walk.missing
    }

    /// The first rule this package or remote breaks with the entry's own values (its fixed
    /// values and defaults); `None` when it can be installed once the required values are given.
    pub fn refusal(&self) -> Option<Refusal> {
        let values = Values::default();
        let mut walk = Walk::new(&values);
        let _ = self.assemble(&mut walk, Some(&BundleCommand::default()));
        walk.refused
    }

    /// The config entry for `values` (and, for a bundle, its unpacked command). An entry that
    /// breaks a rule of [`rules`] is [`RegistryError::Refused`], whatever the values.
    pub fn build(
        &self,
        server: &str,
        values: &Values,
        bundle: Option<&BundleCommand>,
    ) -> Result<Installed, RegistryError> {
        let mut walk = Walk::new(values);
        let config = self.assemble(&mut walk, bundle);
        if let Some(Refusal { field, rule }) = walk.refused.take() {
            return Err(RegistryError::Refused {
                server: server.to_owned(),
                field,
                rule: Box::new(rule),
            });
        }
        let config = config?;
        if !walk.missing.is_empty() {
            return Err(RegistryError::Missing {
                server: server.to_owned(),
                values: walk.missing,
            });
        }
        if let Some(message) = walk.invalid.first() {
            return Err(RegistryError::Value {
                server: server.to_owned(),
                message: message.clone(),
            });
        }
        Ok(Installed {
            config,
            secrets: walk.secrets,
        })
    }

    fn assemble(
        &self,
        walk: &mut Walk<'_>,
        bundle: Option<&BundleCommand>,
    ) -> Result<ServerConfig, RegistryError> {
        if let Some(remote) = &self.remote {
            let kind =
                http_kind(&remote.kind).ok_or_else(|| RegistryError::UnsupportedTransport {
                    kind: remote.kind.clone(),
                })?;
            let field = format!("remotes[{}].url", self.index);
            return Ok(walk.http(&field, remote, kind));
        }
        let Some(package) = &self.package else {
            return Err(RegistryError::UnsupportedTransport {
                kind: "none".into(),
            });
        };
        if package.transport.kind != "stdio" {
            // A package that serves HTTP must be started separately; an entry cannot say both.
            return Err(RegistryError::UnsupportedTransport {
                kind: format!("{} (a package serving HTTP)", package.transport.kind),
            });
        }
        if let Err(refusal) = rules::package(self.kind, self.index, package) {
            walk.refuse(refusal);
        }
        let version = package.version.as_deref().filter(|v| !v.is_empty());
        let runner = match self.kind {
            InstallKind::Npm => Some(Runner::Npx),
            InstallKind::Pypi => Some(Runner::Uvx),
            InstallKind::Oci => Some(Runner::Docker),
            InstallKind::Mcpb | InstallKind::Remote => None,
        };
        let RunnerOptions {
            words: runner_words,
            variables,
        } = match runner {
            Some(runner) => {
                let words = walk.arguments(&package.runtime_arguments);
                options::check(runner, &words).unwrap_or_else(|rule| {
                    let field = format!("packages[{}].runtimeArguments", self.index);
                    walk.refuse(Refusal::new(field, rule));
                    RunnerOptions::default()
                })
            }
            None => RunnerOptions::default(),
        };
        let package_words = walk.arguments(&package.package_arguments);
        // A bundle's manifest sets its own environment; the entry's variables come on top.
        let unpacked =
            (self.kind == InstallKind::Mcpb).then(|| bundle.cloned().unwrap_or_default());
        if let Some(unpacked) = &unpacked {
            walk.env.extend(unpacked.env.clone());
        }
        let passed = walk.variables(
            package,
            self.index,
            variables,
            self.kind == InstallKind::Oci,
        );
        let mut args: Vec<String> = Vec::new();
        let command = match self.kind {
            InstallKind::Npm => {
                if !runner_words.iter().any(|a| a == "-y" || a == "--yes") {
                    args.push("-y".into());
                }
                args.extend(runner_words);
                if let Some(base) = custom_registry(package, "registry.npmjs.org") {
                    args.push(format!("--registry={base}"));
                }
                args.push(match version {
                    Some(v) => format!("{}@{v}", package.identifier),
                    None => package.identifier.clone(),
                });
                "npx".to_owned()
            }
            InstallKind::Pypi => {
                args.extend(runner_words);
                if let Some(base) = custom_registry(package, "pypi.org") {
                    args.push(format!("--index-url={base}"));
                }
                args.push(match version {
                    Some(v) => format!("{}=={v}", package.identifier),
                    None => package.identifier.clone(),
                });
                "uvx".to_owned()
            }
            InstallKind::Oci => {
                args.extend(["run", "-i", "--rm"].map(String::from));
                args.extend(runner_words);
                // `-e NAME` takes the value from the environment docker is started with: the
                // entry's `env`. A name mcpr does not set there would be read from mcpr's own.
                for name in passed.iter().filter(|name| walk.env.contains_key(*name)) {
                    args.push("-e".into());
                    args.push(name.clone());
                }
                args.push(oci_reference(&package.identifier, version));
                "docker".to_owned()
            }
            InstallKind::Mcpb => {
                let unpacked = unpacked.unwrap_or_default();
                args.extend(unpacked.args);
                unpacked.command
            }
            InstallKind::Remote => unreachable!("handled above"),
        };
        args.extend(package_words.into_iter().map(|word| {
            if word.secret && !word.reference {
                format!("{SECRET_PLACEHOLDER}{}", word.value)
            } else {
                word.value
            }
        }));
        // Secret arguments are replaced by markers with their final position.
        let args = args
            .into_iter()
            .enumerate()
            .map(|(i, arg)| match arg.strip_prefix(SECRET_PLACEHOLDER) {
                Some(value) => walk.keep(format!("args.{i}"), Resolved::secret(value.into())),
                None => arg,
            })
            .collect();
        let mut config = ServerConfig::stdio(command, Vec::<String>::new());
        config.transport = Transport::Stdio(StdioConfig {
            command: match &config.transport {
                Transport::Stdio(s) => s.command.clone(),
                Transport::Http(_) => unreachable!(),
            },
            args,
            env: std::mem::take(&mut walk.env),
            cwd: None,
            sandbox: None,
            inherit_env: false,
        });
        Ok(config)
    }
}

/// Tags a secret argument value until its position in the final command line is known.
const SECRET_PLACEHOLDER: &str = "\u{0}mcpr-secret\u{0}";

fn http_kind(kind: &str) -> Option<HttpKind> {
    match kind {
        "streamable-http" | "http" => Some(HttpKind::StreamableHttp),
        "sse" => Some(HttpKind::Sse),
        _ => None,
    }
}

/// The package's registry when it is not the default one (`default_host`).
fn custom_registry(package: &Package, default_host: &str) -> Option<String> {
    let base = package.registry_base_url.as_deref()?.trim_end_matches('/');
    let host = base.split("://").nth(1).unwrap_or(base);
    (!host.is_empty() && host.split('/').next() != Some(default_host)).then(|| base.to_owned())
}

/// `image:tag`, unless the identifier already names a tag or digest.
fn oci_reference(identifier: &str, version: Option<&str>) -> String {
    let last = identifier.rsplit('/').next().unwrap_or(identifier);
    match version {
        Some(v) if !last.contains(':') && !identifier.contains('@') => format!("{identifier}:{v}"),
        _ => identifier.to_owned(),
    }
}

/// A value found for an input, and whether it must be kept secret.
#[derive(Debug, Clone)]
struct Resolved {
    value: String,
    secret: bool,
    /// The user wrote a `${VAR}` reference: it is written as is even when secret.
    reference: bool,
    /// The value's first character came from the user (not from the registry).
    user_start: bool,
}

impl Resolved {
    fn secret(value: String) -> Self {
        Resolved {
            value,
            secret: true,
            reference: false,
            user_start: false,
        }
    }
}

/// One pass over a plan: collects what the user can give, what is missing, and the secrets.
struct Walk<'a> {
    values: &'a Values,
    needs: Vec<Need>,
    missing: Vec<String>,
    invalid: Vec<String>,
    secrets: BTreeMap<String, String>,
    env: BTreeMap<String, String>,
    /// The first rule the entry breaks.
    refused: Option<Refusal>,
}

impl<'a> Walk<'a> {
    fn new(values: &'a Values) -> Self {
        Walk {
            values,
            needs: Vec::new(),
            missing: Vec::new(),
            invalid: Vec::new(),
            secrets: BTreeMap::new(),
            env: BTreeMap::new(),
            refused: None,
        }
    }

    /// Record a broken rule (the first one is reported).
    fn refuse(&mut self, refusal: Refusal) {
        self.refused.get_or_insert(refusal);
    }

    /// The value of `input`, named `key` for the user: its fixed value with templates filled, or
    /// the user's value, or its default. `None` when it has none (recorded as missing if
    /// required).
    fn input(
        &mut self,
        source: ValueSource,
        key: &str,
        input: &Input,
        variables: &BTreeMap<String, Input>,
    ) -> Option<Resolved> {
        if let Some(fixed) = &input.value {
            let mut secret = input.is_secret;
            let mut reference = false;
            let mut user_start = false;
            let mut out = String::new();
            let mut rest = fixed.as_str();
            while let Some(start) = rest.find('{') {
                let Some(len) = rest[start..].find('}') else {
                    break;
                };
                let name = &rest[start + 1..start + len];
                out.push_str(&rest[..start]);
                match variables.get(name) {
                    Some(var) => {
                        let resolved = self.input(source, name, var, &BTreeMap::new())?;
                        secret |= resolved.secret;
                        reference |= resolved.reference;
                        if out.is_empty() && !resolved.value.is_empty() {
                            user_start = resolved.user_start;
                        }
                        out.push_str(&resolved.value);
                    }
                    None => out.push_str(&rest[start..=start + len]),
                }
                rest = &rest[start + len + 1..];
            }
            out.push_str(rest);
            return Some(Resolved {
                value: out,
                secret,
                reference,
                user_start,
            });
        }
        if !self
            .needs
            .iter()
            .any(|n| n.source == source && n.key == key)
        {
            self.needs.push(Need {
                source,
                key: key.to_owned(),
                input: input.clone(),
            });
        }
        let given = self.values.get(source, key).cloned();
        if let Some(value) = &given
            && !input.choices.is_empty()
            && !input.choices.contains(value)
        {
            self.invalid.push(format!(
                "{} {key}: `{}` is not one of {}",
                source.flag(),
                if input.is_secret { "***" } else { value },
                input.choices.join(", ")
            ));
        }
        let reference = given.as_deref().is_some_and(|v| v.contains("${"));
        let user_start = given.is_some();
        match given.or_else(|| input.default.clone()) {
            Some(value) => Some(Resolved {
                value,
                secret: input.is_secret,
                reference,
                user_start,
            }),
            None => {
                if input.is_required {
                    let flag = format!("{} {key}", source.flag());
                    if !self.missing.contains(&flag) {
                        self.missing.push(flag);
                    }
                }
                None
            }
        }
    }

    fn key_value(&mut self, source: ValueSource, kv: &KeyValueInput) -> Option<Resolved> {
        self.input(source, &kv.name, &kv.input, &kv.variables)
    }

    /// Refuse what the registry (not the user) put in `field` that mcpr would act on when the
    /// server starts: a leading `!` (a command mcpr runs), a `${VAR}`/`{env:}`/`{file:}`
    /// reference (the user's variables or files), and, where the value leaves this machine or a
    /// container's boundary (`leaves`), a bare variable name (read as that variable).
    fn vet(&mut self, field: &str, resolved: Option<Resolved>, leaves: bool) -> Option<Resolved> {
        let r = resolved?;
        let value = r.value.as_str();
        let problem = if value.starts_with('!') && !r.user_start {
            Some("starts with `!`, which mcpr would run as a command")
        } else if has_reference(value) && !r.reference {
            Some("refers to your environment variables or files")
        } else if leaves && is_env_name(value) && !r.user_start {
            Some("is a bare variable name, which mcpr would replace with your variable's value")
        } else {
            None
        };
        if let Some(problem) = problem {
            self.invalid.push(format!(
                "`{field}`: the registry's value {problem}; refused (give your own value)"
            ));
        }
        Some(r)
    }

    /// The entry's form of a resolved value: itself, or a marker (the value goes to the store).
    fn keep(&mut self, field: String, resolved: Resolved) -> String {
        if resolved.secret && !resolved.reference {
            let marker = format!("{SECRET_PREFIX}{field}");
            self.secrets.insert(field, resolved.value);
            marker
        } else {
            // A value set twice (docker's `-e NAME=...` and the variable itself) keeps no
            // stale secret.
            self.secrets.remove(&field);
            resolved.value
        }
    }

    /// Set the entry's variables: docker's `-e NAME=VALUE` options (`docker`) first, then the
    /// package's `environmentVariables` (for a `container`, a bare variable name is refused: it
    /// would hand it another variable). Returns every name, in order, for `-e NAME`.
    fn variables(
        &mut self,
        package: &Package,
        index: usize,
        docker: Vec<(String, Option<Resolved>)>,
        container: bool,
    ) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (name, value) in docker {
            match value {
                Some(value) => {
                    let field = format!("env.{name}");
                    if let Some(value) = self.vet(&field, Some(value), true) {
                        let value = self.keep(field, value);
                        self.env.insert(name.clone(), value);
                    }
                }
                // A bare `-e NAME` for a variable the entry does not declare would be copied
                // from mcpr's own environment.
                None if !package
                    .environment_variables
                    .iter()
                    .any(|var| var.name == name) =>
                {
                    let field = format!("packages[{index}].runtimeArguments");
                    let rule = Rule::HostVariable { name: name.clone() };
                    self.refuse(Refusal::new(field, rule));
                }
                None => {}
            }
            if !names.contains(&name) {
                names.push(name);
            }
        }
        for var in &package.environment_variables {
            let field = format!("env.{}", var.name);
            let resolved = self.key_value(ValueSource::Env, var);
            if let Some(value) = self.vet(&field, resolved, container) {
                let value = self.keep(field, value);
                self.env.insert(var.name.clone(), value);
            }
            if !names.contains(&var.name) {
                names.push(var.name.clone());
            }
        }
        names
    }

    /// The words of `arguments`: a named one is its flag and then its value, a positional one
    /// its value. An argument without a value is left out.
    fn arguments(&mut self, arguments: &[Argument]) -> Vec<Resolved> {
        let mut out = Vec::new();
        for argument in arguments {
            let key = argument
                .name
                .as_deref()
                .or(argument.value_hint.as_deref())
                .unwrap_or("value")
                .to_owned();
            let key = key.trim_start_matches('-').to_owned();
            let resolved = self.input(ValueSource::Arg, &key, &argument.input, &argument.variables);
            let Some(resolved) = self.vet(&format!("argument {key}"), resolved, false) else {
                continue;
            };
            if let (super::model::ArgumentKind::Named, Some(name)) = (argument.kind, &argument.name)
            {
                out.push(Resolved {
                    value: name.clone(),
                    secret: false,
                    reference: false,
                    user_start: false,
                });
            }
            out.push(resolved);
        }
        out
    }

    /// The entry of a remote; `field` names its URL in errors (`remotes[0].url`).
    fn http(&mut self, field: &str, remote: &RemoteTransport, kind: HttpKind) -> ServerConfig {
        let url_input = Input {
            value: Some(remote.url.clone()),
            ..Input::default()
        };
        let resolved = self.input(ValueSource::Header, "url", &url_input, &remote.variables);
        let url = match self.vet("url", resolved, false) {
            Some(resolved) => {
                if let Err(rule) = rules::url(&resolved.value) {
                    self.refuse(Refusal::new(field, rule));
                }
                if resolved.secret && !resolved.reference {
                    self.invalid.push(
                        "the URL would hold a secret; give it as a `${VAR}` reference instead"
                            .into(),
                    );
                }
                resolved.value
            }
            // A variable is missing (reported as such): check what the template already says.
            None => {
                if let Err(rule) = rules::url_template(&remote.url) {
                    self.refuse(Refusal::new(field, rule));
                }
                remote.url.clone()
            }
        };
        let mut out = BTreeMap::new();
        for header in &remote.headers {
            let resolved = self.key_value(ValueSource::Header, header);
            if let Some(resolved) = self.vet(&format!("headers.{}", header.name), resolved, true) {
                let value = self.keep(format!("headers.{}", header.name), resolved);
                out.insert(header.name.clone(), value);
            }
        }
        let mut config = ServerConfig::stdio("", Vec::<String>::new());
        config.transport = Transport::Http(HttpConfig {
            url,
            headers: out,
            kind,
            oauth: None,
        });
        config
    }
}

#[cfg(test)]
mod tests;
