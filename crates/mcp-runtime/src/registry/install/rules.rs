//! What a registry entry may decide, checked before mcpr writes it: package names of each
//! ecosystem, exact versions, the environment variables a registry may not set, and the URLs an
//! entry may point at. Runner options (`runtimeArguments`) are checked by the `options` module.
//!
//! A registry entry is written by whoever published it, so no option of the user's lifts these
//! rules, and they apply to the final command line, values typed by the user included: whoever
//! wants more writes the entry by hand.

use super::InstallKind;
use crate::registry::model::Package;

/// Why an entry cannot be installed: the field of `server.json` and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The field, as `server.json` spells it (`packages[0].runtimeArguments`, `remotes[1].url`).
    pub field: String,
    /// The rule.
    pub rule: Rule,
}

impl Refusal {
    pub(super) fn new(field: impl Into<String>, rule: Rule) -> Self {
        Refusal {
            field: field.into(),
            rule,
        }
    }
}

/// A rule a registry entry breaks. Messages never hold a secret value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Rule {
    /// The identifier is not a name its ecosystem allows (it could be read as an option, a path
    /// or a version range).
    #[error("`{identifier}` is not {what}: {why}")]
    PackageName {
        /// The identifier as published.
        identifier: String,
        /// `an npm package name`, `a PyPI project name`, `an image reference`.
        what: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// No version, or one that names a range or a tag rather than one release.
    #[error("{}", exact_version_message(*kind, version.as_deref()))]
    ExactVersion {
        /// npm or PyPI.
        kind: InstallKind,
        /// The version as published.
        version: Option<String>,
    },
    /// A URL that is neither https nor http to a loopback host.
    #[error(
        "{why}; only https URLs, or http URLs to a loopback host (localhost, 127.0.0.1, [::1]), are installed"
    )]
    Url {
        /// What is wrong with it (the URL itself is not repeated: it may hold a secret).
        why: String,
    },
    /// An environment variable that changes which code a program loads or runs.
    #[error(
        "`{name}` changes which code a program loads or where it comes from; a registry entry cannot set it"
    )]
    LoaderVariable {
        /// The variable.
        name: String,
    },
    /// Not an environment variable name.
    #[error(
        "`{name}` is not an environment variable name (letters, digits and `_`, not starting with a digit)"
    )]
    VariableName {
        /// The name as published.
        name: String,
    },
    /// A runner option outside the allowlist.
    #[error("`{runner}` option `{option}` {why} (registry entries may give only {allowed})")]
    RunnerOption {
        /// `npx`, `uvx` or `docker`.
        runner: &'static str,
        /// The option (`--privileged`).
        option: String,
        /// What it does.
        why: &'static str,
        /// The runner's allowlist.
        allowed: &'static str,
    },
    /// An allowed option with a value it does not accept.
    #[error("`{runner}` option `{option} {value}`: {why}")]
    OptionValue {
        /// `npx`, `uvx` or `docker`.
        runner: &'static str,
        /// The option.
        option: String,
        /// Its value.
        value: String,
        /// What it accepts, or what the value would do.
        why: &'static str,
    },
    /// An allowed option without its value.
    #[error("`{runner}` option `{option}` has no value: the next word would become its value")]
    MissingValue {
        /// `npx`, `uvx` or `docker`.
        runner: &'static str,
        /// The option.
        option: String,
    },
    /// A runtime argument that is not an option.
    #[error("`{value}` is not an option: `{runner}` would take it as {becomes}")]
    NotAnOption {
        /// `npx`, `uvx` or `docker`.
        runner: &'static str,
        /// The argument (`***` for a secret).
        value: String,
        /// `the package to run`, `the image`.
        becomes: &'static str,
    },
    /// `-e NAME` for a variable the entry does not set.
    #[error(
        "`-e {name}` passes a variable the entry does not set: docker would copy it from mcpr's own environment into the container"
    )]
    HostVariable {
        /// The variable.
        name: String,
    },
    /// A secret value as a runner option.
    #[error(
        "`{runner}` option `{option}` would carry a secret value on the command line, which other local users can read"
    )]
    SecretOnCommandLine {
        /// `npx`, `uvx` or `docker`.
        runner: &'static str,
        /// The option.
        option: String,
    },
}

fn exact_version_message(kind: InstallKind, version: Option<&str>) -> String {
    let example = match kind {
        InstallKind::Pypi => "a PEP 440 version like 1.2.3",
        _ => "a semantic version like 1.2.3",
    };
    match version {
        None => format!(
            "no version given: {kind} packages are installed only at an exact version ({example})"
        ),
        Some(version) => format!(
            "`{version}` is not an exact {kind} version: a registry entry must name one release \
             ({example}), not a range or a tag"
        ),
    }
}

/// Environment variables a registry entry may not set (compared without regard to case), on
/// any package: they decide which code the runner or the server loads, or where it comes from.
pub const LOADER_VARIABLES: &[&str] = &[
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "ENV",
    "BASH_ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "IFS",
    "ZDOTDIR",
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_EXTRA_CA_CERTS",
    "NODE_TLS_REJECT_UNAUTHORIZED",
    "NODE_REPL_EXTERNAL_MODULE",
    "CLASSPATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "GCONV_PATH",
    "GLIBC_TUNABLES",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EXEC_PATH",
    "GIT_ASKPASS",
    "GIT_PROXY_COMMAND",
];

/// Prefixes of more such variables: the dynamic loaders (`LD_PRELOAD`, `LD_LIBRARY_PATH`,
/// `LD_AUDIT`, `DYLD_*`), interpreters (`PYTHONPATH`, `PERL5OPT`, `RUBYOPT`, ...), exported
/// shell functions, and the runners' own settings (`npm_config_registry`, `UV_INDEX_URL`,
/// `PIP_INDEX_URL`, `DOCKER_HOST`, `GIT_CONFIG_*`).
pub const LOADER_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "PYTHON",
    "PERL",
    "RUBY",
    "BASH_FUNC_",
    "NPM_CONFIG_",
    "UV_",
    "PIP_",
    "DOCKER_",
    "GIT_CONFIG",
];

/// Whether a registry entry may set the environment variable `name`.
pub fn is_loader_variable(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    LOADER_VARIABLES.contains(&upper.as_str())
        || LOADER_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// A variable an entry sets: a variable name, and not a loader variable.
pub(super) fn variable(name: &str) -> Result<(), Rule> {
    let mut chars = name.chars();
    let well_formed = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !well_formed {
        return Err(Rule::VariableName {
            name: name.to_owned(),
        });
    }
    if is_loader_variable(name) {
        return Err(Rule::LoaderVariable {
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The rules on a package that need no user value: its identifier, version, package registry and
/// the names of its variables. `index` is its position in the entry's `packages`.
pub(super) fn package(kind: InstallKind, index: usize, package: &Package) -> Result<(), Refusal> {
    let field = |name: &str| format!("packages[{index}].{name}");
    let identifier = package.identifier.as_str();
    let version = package.version.as_deref().filter(|v| !v.is_empty());
    let name = |what, check: fn(&str) -> Result<(), &'static str>| {
        check(identifier).map_err(|why| {
            Refusal::new(
                field("identifier"),
                Rule::PackageName {
                    identifier: identifier.to_owned(),
                    what,
                    why,
                },
            )
        })
    };
    let exact = |check: fn(&str) -> bool| match version {
        Some(v) if !v.contains(char::is_whitespace) && check(v) => Ok(()),
        _ => Err(Refusal::new(
            field("version"),
            Rule::ExactVersion {
                kind,
                version: version.map(str::to_owned),
            },
        )),
    };
    match kind {
        InstallKind::Npm => {
            name("an npm package name", npm_name)?;
            exact(|v| semver::Version::parse(v).is_ok())?;
        }
        InstallKind::Pypi => {
            name("a PyPI project name", pypi_name)?;
            exact(|v| v.parse::<pep440_rs::Version>().is_ok())?;
        }
        InstallKind::Oci => {
            name("an image reference", oci_reference)?;
            let full = super::oci_reference(identifier, version);
            oci_reference(&full).map_err(|why| {
                Refusal::new(
                    field("version"),
                    Rule::PackageName {
                        identifier: full.clone(),
                        what: "an image reference",
                        why,
                    },
                )
            })?;
        }
        InstallKind::Mcpb => {
            url(identifier).map_err(|rule| Refusal::new(field("identifier"), rule))?
        }
        InstallKind::Remote => {}
    }
    if let Some(base) = package
        .registry_base_url
        .as_deref()
        .filter(|b| !b.is_empty())
    {
        url(base).map_err(|rule| Refusal::new(field("registryBaseUrl"), rule))?;
    }
    for (j, var) in package.environment_variables.iter().enumerate() {
        variable(&var.name).map_err(|rule| {
            Refusal::new(field(&format!("environmentVariables[{j}].name")), rule)
        })?;
    }
    Ok(())
}

/// npm's rules for new package names: at most 214 characters, lowercase letters, digits, `-`,
/// `.` and `_`, optionally under an `@scope/`. A leading `-`, `.` or `_` is refused (npm
/// refuses the last two; the first would be read as an option of `npx`).
fn npm_name(name: &str) -> Result<(), &'static str> {
    if name.len() > 214 {
        return Err("npm names are at most 214 characters");
    }
    let (scope, bare) = match name.strip_prefix('@') {
        Some(rest) => {
            let (scope, bare) = rest
                .split_once('/')
                .ok_or("a scoped npm name is `@scope/name`")?;
            (Some(scope), bare)
        }
        None => (None, name),
    };
    for part in scope.into_iter().chain([bare]) {
        if !part
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return Err("an npm name (and scope) starts with a lowercase letter or a digit");
        }
        if !part
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.' | '_'))
        {
            return Err(
                "npm names hold only lowercase letters, digits, `-`, `.` and `_` (a version goes in `version`)",
            );
        }
    }
    if matches!(name, "node_modules" | "favicon.ico") {
        return Err("npm reserves that name");
    }
    Ok(())
}

/// PEP 508 names (normalised per PEP 503 by the index): ASCII letters and digits, with `-`, `_`
/// and `.` inside.
fn pypi_name(name: &str) -> Result<(), &'static str> {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let well_formed = edge(name.chars().next())
        && edge(name.chars().last())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if well_formed {
        Ok(())
    } else {
        Err(
            "PyPI names hold ASCII letters, digits, `-`, `_` and `.`, and start and end with a letter or digit (a version goes in `version`)",
        )
    }
}

/// The reference grammar of container images (`[domain[:port]/]path[:tag][@digest]`, as
/// docker's `distribution/reference` defines it).
fn oci_reference(reference: &str) -> Result<(), &'static str> {
    const WHY: &str =
        "an image reference is `[registry[:port]/]name[:tag][@digest]`, with a lowercase name";
    let (rest, digest) = match reference.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (reference, None),
    };
    if let Some(digest) = digest
        && !oci_digest(digest)
    {
        return Err("its digest is not `algorithm:hex`");
    }
    // A tag follows the last `:` after the last `/`; a `:` before it is a registry's port.
    let name_start = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[name_start..].rfind(':') {
        Some(i) => (&rest[..name_start + i], Some(&rest[name_start + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag
        && !oci_tag(tag)
    {
        return Err(
            "a tag is at most 128 letters, digits, `_`, `.` and `-`, not starting with `.` or `-`",
        );
    }
    if name.is_empty() || name.len() > 255 {
        return Err(WHY);
    }
    let mut components = name.split('/').peekable();
    if let Some(first) = components.peek().copied()
        && name.contains('/')
        && (first.contains(['.', ':'])
            || first == "localhost"
            || first.chars().any(|c| c.is_ascii_uppercase()))
    {
        if !oci_domain(first) {
            return Err("its registry is not `host[:port]`");
        }
        components.next();
    }
    if components.all(oci_path_component) {
        Ok(())
    } else {
        Err(WHY)
    }
}

/// `[a-z0-9]+` runs joined by `.`, `_`, `__` or any number of `-`.
fn oci_path_component(component: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let edges =
        component.chars().next().is_some_and(alnum) && component.chars().last().is_some_and(alnum);
    // Splitting at each letter or digit leaves the separators, each run whole.
    let separators = component
        .split(alnum)
        .filter(|s| !s.is_empty())
        .all(|s| matches!(s, "." | "_" | "__") || s.chars().all(|c| c == '-'));
    edges && separators
}

/// `host[:port]`: DNS labels joined by `.`, or an IPv6 address in brackets.
fn oci_domain(domain: &str) -> bool {
    let port_ok = |port: &str| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit());
    if let Some(rest) = domain.strip_prefix('[') {
        let Some((ip, after)) = rest.split_once(']') else {
            return false;
        };
        return ip.parse::<std::net::Ipv6Addr>().is_ok()
            && (after.is_empty() || after.strip_prefix(':').is_some_and(port_ok));
    }
    let (host, port) = match domain.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (domain, None),
    };
    port.is_none_or(port_ok)
        && host.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`.
fn oci_tag(tag: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    tag.len() <= 128
        && tag.chars().next().is_some_and(word)
        && tag.chars().all(|c| word(c) || matches!(c, '.' | '-'))
}

/// `algorithm:hex`: `[A-Za-z][A-Za-z0-9]*` parts joined by `+`, `.`, `_` or `-`, and at least
/// 32 hex digits.
fn oci_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let algorithm_ok = algorithm.split(['+', '.', '_', '-']).all(|part| {
        part.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && part.chars().all(|c| c.is_ascii_alphanumeric())
    });
    algorithm_ok && hex.len() >= 32 && hex.chars().all(|c| c.is_ascii_hexdigit())
}

/// A URL an entry may point at: `https:`, or `http:` to a loopback host.
pub(super) fn url(url: &str) -> Result<(), Rule> {
    let parsed = reqwest::Url::parse(url).map_err(|e| Rule::Url {
        why: format!("not a URL ({e})"),
    })?;
    match parsed.scheme() {
        "https" if parsed.host().is_some() => Ok(()),
        "http" if parsed.host_str().is_some_and(crate::net::is_loopback_host) => Ok(()),
        "http" => Err(Rule::Url {
            why: "plain http to a host that is not a loopback host".into(),
        }),
        "https" => Err(Rule::Url {
            why: "no host".into(),
        }),
        other => Err(Rule::Url {
            why: format!("scheme `{other}:`"),
        }),
    }
}

/// The part of the rule on URLs that a URL still holding `{var}` templates can be checked
/// against: its scheme, and for `http:` its host when neither holds a template.
pub(super) fn url_template(template: &str) -> Result<(), Rule> {
    let Some((scheme, rest)) = template.split_once(':') else {
        return Ok(());
    };
    if scheme.contains('{') {
        return Ok(());
    }
    let authority = rest
        .trim_start_matches('/')
        .split(['/', '?', '#'])
        .next()
        .unwrap_or_default();
    match scheme.to_ascii_lowercase().as_str() {
        "https" => Ok(()),
        "http" if authority.contains('{') => Ok(()),
        "http" => url(&format!("http://{authority}/")),
        other => Err(Rule::Url {
            why: format!("scheme `{other}:`"),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_names_follow_npm_rules() {
        for good in [
            "a",
            "@x/a",
            "server-everything",
            "@modelcontextprotocol/server-everything",
            "a.b_c-1",
            "1x",
        ] {
            assert_eq!(npm_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "-y",
            "--call=touch /tmp/x",
            ".hidden",
            "_a",
            "Upper",
            "a@latest",
            "@x/a@1",
            "@x",
            "@/a",
            "@x/a/b",
            "a b",
            "file:../evil",
            "git+https://h/r",
            "node_modules",
        ] {
            assert!(npm_name(bad).is_err(), "{bad}");
        }
        assert!(npm_name(&"a".repeat(215)).is_err());
    }

    #[test]
    fn pypi_names_follow_pep_508() {
        for good in ["weather-mcp", "A.b_c", "x", "mcp2"] {
            assert_eq!(pypi_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "-x",
            "--from=git+https://h/r",
            "x-",
            "x[cli]",
            "x==1",
            "x @ file:///tmp",
            "é",
        ] {
            assert!(pypi_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn image_references_follow_the_reference_grammar() {
        for good in [
            "ubuntu",
            "ghcr.io/test/server",
            "ghcr.io/test/server:2.0.0",
            "localhost:5000/y",
            "localhost/y:1",
            "[::1]:5000/a/b",
            "a__b/c--d.e",
            "x/y@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "Registry.Example.com/a",
        ] {
            assert_eq!(oci_reference(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "--privileged",
            "-v",
            "upper/Case",
            "Upper",
            "a//b",
            "a/b:",
            "a:-tag",
            "a@sha256:short",
            "a b",
            "host:port:x/y",
            "a/.b",
            "a/b_",
        ] {
            assert!(oci_reference(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_are_https_or_loopback_http() {
        for good in [
            "https://h.example/mcp",
            "http://127.0.0.1:9/mcp",
            "http://localhost/x",
            "http://[::1]:8/",
            "http://127.1/",
        ] {
            assert_eq!(url(good), Ok(()), "{good}");
        }
        for bad in [
            "http://evil.example/mcp",
            "http://10.0.0.1/",
            "ftp://h/x",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "ws://h/",
            "not a url",
        ] {
            assert!(url(bad).is_err(), "{bad}");
        }
        assert_eq!(url_template("https://{tenant}.example.com/mcp"), Ok(()));
        assert_eq!(url_template("http://{host}/mcp"), Ok(()));
        assert_eq!(url_template("{base}/mcp"), Ok(()));
        assert!(url_template("http://evil.example/{p}").is_err());
        assert!(url_template("file:///{p}").is_err());
    }

    #[test]
    fn loader_variables_are_refused_in_any_case() {
        for name in [
            "NODE_OPTIONS",
            "LD_PRELOAD",
            "ld_audit",
            "DYLD_INSERT_LIBRARIES",
            "PATH",
            "PYTHONPATH",
            "BASH_ENV",
            "npm_config_registry",
            "UV_INDEX_URL",
            "PERL5OPT",
            "RUBYOPT",
        ] {
            assert!(
                matches!(variable(name), Err(Rule::LoaderVariable { .. })),
                "{name}"
            );
        }
        for name in ["API_KEY", "NODE_ENV", "LOG_LEVEL", "_X"] {
            assert_eq!(variable(name), Ok(()), "{name}");
        }
        for name in ["", "1X", "A=B", "A B", "A\n"] {
            assert!(
                matches!(variable(name), Err(Rule::VariableName { .. })),
                "{name:?}"
            );
        }
    }
}
