//! The runner options a registry entry may give (`runtimeArguments`): for each runner (`npx`,
//! `uvx`, `docker`) a short allowlist of options that change only output, caching or resource
//! limits, each with the values it accepts. Anything else is refused, naming the option, and
//! for the options known to be dangerous, what they would do.
//!
//! The words are read as the runner reads them: `--opt value`, `--opt=value`, `-o value`,
//! `-o=value`. A word that is not an option would be taken as the package or the image, and a
//! flag that takes no value must not be followed by one, so both are refused. Docker's
//! `-e NAME[=VALUE]` is taken out of the options: mcpr sets such a variable in docker's own
//! environment and passes it by name, so a value (a secret, say) is never on the command line.

use super::Resolved;
use super::rules::{self, Rule};

/// A program that runs a package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Runner {
    /// `npx` (npm packages).
    Npx,
    /// `uvx` (PyPI packages).
    Uvx,
    /// `docker run` (container images).
    Docker,
}

/// What an allowed option takes after it.
#[derive(Clone, Copy)]
enum Takes {
    /// Nothing: a flag.
    Nothing,
    /// A value, checked by the function (which says what is wrong).
    Value(fn(&str) -> Result<(), &'static str>),
    /// Docker's `-e NAME[=VALUE]`.
    Variable,
}

/// The options of one runner: allowed ones, and the refused ones known to be dangerous.
struct Table {
    allowed: &'static [(&'static [&'static str], Takes)],
    dangerous: &'static [(&'static [&'static str], &'static str)],
    /// The allowlist, as error messages state it.
    summary: &'static str,
    /// What a word that is not an option becomes.
    positional: &'static str,
}

const NPX: Table = Table {
    allowed: &[
        (
            &[
                "-y",
                "--yes",
                "-q",
                "--quiet",
                "--silent",
                "--prefer-offline",
                "--prefer-online",
                "--ignore-scripts",
                "--no-update-notifier",
            ],
            Takes::Nothing,
        ),
        (&["--loglevel"], Takes::Value(npm_loglevel)),
    ],
    dangerous: &[
        (&["-p", "--package"], "swaps the package that runs"),
        (&["-c", "--call"], "runs a shell command"),
        (
            &[
                "--registry",
                "--userconfig",
                "--globalconfig",
                "--prefix",
                "--cache",
                "-w",
                "--workspace",
                "--workspaces",
            ],
            "changes where packages or settings come from",
        ),
        (
            &["--node-options", "--script-shell", "--shell"],
            "changes the program that npm or node runs",
        ),
    ],
    summary: "-y/--yes, -q/--quiet, --silent, --prefer-offline, --prefer-online, --ignore-scripts, \
              --no-update-notifier and --loglevel LEVEL",
    positional: "the package to run",
};

const UVX: Table = Table {
    allowed: &[
        (
            &[
                "-q",
                "--quiet",
                "--offline",
                "--no-progress",
                "--isolated",
                "--no-cache",
                "--refresh",
            ],
            Takes::Nothing,
        ),
        (&["--python"], Takes::Value(python_version)),
    ],
    dangerous: &[
        (
            &[
                "--from",
                "--with",
                "-w",
                "--with-editable",
                "--with-requirements",
            ],
            "swaps or adds the packages that run",
        ),
        (
            &[
                "-i",
                "--index",
                "--index-url",
                "--default-index",
                "--extra-index-url",
                "-f",
                "--find-links",
                "--index-strategy",
                "--keyring-provider",
            ],
            "changes where packages come from",
        ),
        (
            &[
                "--config-file",
                "--env-file",
                "--directory",
                "--project",
                "--cache-dir",
            ],
            "reads settings or code from a path on this machine",
        ),
        (
            &["-p"],
            "picks the Python program to run (give --python VERSION)",
        ),
    ],
    summary: "-q/--quiet, --offline, --no-progress, --isolated, --no-cache, --refresh and \
              --python VERSION",
    positional: "the package to run",
};

const DOCKER: Table = Table {
    allowed: &[
        (
            &["-i", "--interactive", "--rm", "--init", "--read-only"],
            Takes::Nothing,
        ),
        (&["--network", "--net"], Takes::Value(docker_network)),
        (&["-w", "--workdir"], Takes::Value(container_path)),
        (&["-m", "--memory"], Takes::Value(size)),
        (&["--cpus"], Takes::Value(cpus)),
        (&["--pids-limit"], Takes::Value(count)),
        (&["--platform"], Takes::Value(platform)),
        (&["--pull"], Takes::Value(pull)),
        (&["--cap-drop"], Takes::Value(capability)),
        (&["-e", "--env"], Takes::Variable),
    ],
    dangerous: &[
        (
            &[
                "--privileged",
                "--cap-add",
                "--security-opt",
                "-u",
                "--user",
                "--group-add",
                "--userns",
                "--runtime",
                "--sysctl",
                "--device-cgroup-rule",
                "--oom-kill-disable",
                "--ulimit",
            ],
            "widens the container's privileges",
        ),
        (
            &[
                "--pid",
                "--ipc",
                "--uts",
                "--cgroupns",
                "--cgroup-parent",
                "--volumes-from",
                "--link",
            ],
            "shares a namespace of the host or of another container",
        ),
        (
            &["-v", "--volume", "--mount", "--device", "--gpus", "--tmpfs"],
            "mounts a host path or device",
        ),
        (
            &["--env-file", "--label-file", "--cidfile"],
            "reads or writes a file on this machine",
        ),
        (
            &[
                "-p",
                "--publish",
                "-P",
                "--publish-all",
                "--expose",
                "--add-host",
                "--dns",
                "--ip",
                "--ip6",
            ],
            "opens or redirects the container's network",
        ),
        (
            &["--entrypoint", "-d", "--detach", "-t", "--tty", "--name"],
            "changes what runs or how mcpr talks to it",
        ),
    ],
    summary: "-i, --rm, --init, --read-only, --network none|bridge, -w/--workdir PATH, \
              -m/--memory SIZE, --cpus N, --pids-limit N, --platform OS/ARCH, \
              --pull always|missing|never, --cap-drop CAP and -e NAME[=VALUE]",
    positional: "the image",
};

impl Runner {
    /// The program's name, as messages show it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Runner::Npx => "npx",
            Runner::Uvx => "uvx",
            Runner::Docker => "docker",
        }
    }

    fn table(self) -> &'static Table {
        match self {
            Runner::Npx => &NPX,
            Runner::Uvx => &UVX,
            Runner::Docker => &DOCKER,
        }
    }
}

/// The checked runner options of an entry.
#[derive(Debug, Default)]
pub(super) struct RunnerOptions {
    /// The options to write, in order (they hold no secret).
    pub words: Vec<String>,
    /// Docker's `-e NAME[=VALUE]`: each name, with the value when the entry gives one.
    pub variables: Vec<(String, Option<Resolved>)>,
}

/// Check `words` (the entry's `runtimeArguments`, resolved) against `runner`'s allowlist.
pub(super) fn check(runner: Runner, words: &[Resolved]) -> Result<RunnerOptions, Rule> {
    let table = runner.table();
    let name = runner.name();
    let mut out = RunnerOptions::default();
    let mut rest = words.iter();
    while let Some(word) = rest.next() {
        let text = word.value.as_str();
        let Some((option, inline)) = split_option(text) else {
            return Err(Rule::NotAnOption {
                runner: name,
                value: if word.secret {
                    "***".into()
                } else {
                    text.to_owned()
                },
                becomes: table.positional,
            });
        };
        let refused = |why| Rule::RunnerOption {
            runner: name,
            option: option.to_owned(),
            why,
            allowed: table.summary,
        };
        let Some(takes) = table
            .allowed
            .iter()
            .find(|(names, _)| names.contains(&option))
            .map(|(_, takes)| *takes)
        else {
            let why = table
                .dangerous
                .iter()
                .find(|(names, _)| names.contains(&option))
                .map_or("is not an option a registry entry may give", |(_, why)| {
                    *why
                });
            return Err(refused(why));
        };
        // `-ofoo` (a short option run together with its value or other flags) is read
        // differently by each runner: only the plain forms are taken.
        if inline.is_none() && text != option {
            return Err(refused("must be given on its own, or as `option=value`"));
        }
        if let Takes::Nothing = takes {
            if inline.is_some() || word.secret {
                return Err(refused("takes no value"));
            }
            out.words.push(text.to_owned());
            continue;
        }
        // The value: after `=`, else the next word.
        let (value, secret, reference, next) = match inline {
            Some(value) => (value.to_owned(), word.secret, word.reference, None),
            None => {
                let next = rest.next().ok_or_else(|| Rule::MissingValue {
                    runner: name,
                    option: option.to_owned(),
                })?;
                (next.value.clone(), next.secret, next.reference, Some(next))
            }
        };
        match takes {
            Takes::Variable => {
                let (var, value) = match value.split_once('=') {
                    Some((var, value)) => (var.to_owned(), Some(value.to_owned())),
                    // A secret only ever goes after `=`, into docker's environment.
                    None if secret => {
                        return Err(Rule::SecretOnCommandLine {
                            runner: name,
                            option: option.to_owned(),
                        });
                    }
                    None => (value, None),
                };
                rules::variable(&var)?;
                let value = value.map(|value| Resolved {
                    value,
                    secret,
                    reference,
                    user_start: false,
                });
                out.variables.push((var, value));
            }
            Takes::Value(accepts) => {
                if secret {
                    return Err(Rule::SecretOnCommandLine {
                        runner: name,
                        option: option.to_owned(),
                    });
                }
                accepts(&value).map_err(|why| Rule::OptionValue {
                    runner: name,
                    option: option.to_owned(),
                    value: value.clone(),
                    why,
                })?;
                out.words.push(text.to_owned());
                if let Some(next) = next {
                    out.words.push(next.value.clone());
                }
            }
            Takes::Nothing => unreachable!("handled above"),
        }
    }
    Ok(out)
}

/// `--opt=value` → (`--opt`, `Some(value)`); `-o=value` → (`-o`, `Some(value)`); `--opt` and
/// `-o` → (itself, `None`); `-ofoo` → (`-o`, `None`). `None` for a word that is not an option
/// (`-` and `--` included: the first is a file name, the second ends the options).
fn split_option(word: &str) -> Option<(&str, Option<&str>)> {
    if word == "-" || word == "--" || !word.starts_with('-') {
        return None;
    }
    if word.starts_with("--") {
        return Some(match word.split_once('=') {
            Some((option, value)) => (option, Some(value)),
            None => (word, None),
        });
    }
    let end = word.char_indices().nth(2).map_or(word.len(), |(i, _)| i);
    let (option, rest) = word.split_at(end);
    Some((option, rest.strip_prefix('=')))
}

fn npm_loglevel(value: &str) -> Result<(), &'static str> {
    matches!(
        value,
        "silent" | "error" | "warn" | "notice" | "http" | "info" | "verbose" | "silly"
    )
    .then_some(())
    .ok_or("takes only silent, error, warn, notice, http, info, verbose or silly")
}

/// `3`, `3.12`, `3.12.1`: a version, never a path or a program's name.
fn python_version(value: &str) -> Result<(), &'static str> {
    let parts: Vec<&str> = value.split('.').collect();
    (parts.len() <= 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())))
    .then_some(())
    .ok_or("takes only a Python version like 3.12 (a path or a name would pick the program to run)")
}

fn docker_network(value: &str) -> Result<(), &'static str> {
    match value {
        "none" | "bridge" => Ok(()),
        "host" => Err("shares the host's network namespace"),
        v if v.starts_with("container:") => Err("shares another container's network namespace"),
        _ => Err("takes only none or bridge"),
    }
}

fn container_path(value: &str) -> Result<(), &'static str> {
    (value.starts_with('/')
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')))
    .then_some(())
    .ok_or("takes only an absolute path inside the container")
}

fn size(value: &str) -> Result<(), &'static str> {
    let digits = value.trim_end_matches(['b', 'k', 'm', 'g', 'B', 'K', 'M', 'G']);
    (!digits.is_empty()
        && value.len() - digits.len() <= 1
        && digits.chars().all(|c| c.is_ascii_digit()))
    .then_some(())
    .ok_or("takes only a size like 512m")
}

fn cpus(value: &str) -> Result<(), &'static str> {
    let mut parts = value.splitn(2, '.');
    parts
        .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        .then_some(())
        .ok_or("takes only a number of CPUs like 1.5")
}

fn count(value: &str) -> Result<(), &'static str> {
    (!value.is_empty() && value.chars().all(|c| c.is_ascii_digit()))
        .then_some(())
        .ok_or("takes only a positive number")
}

fn platform(value: &str) -> Result<(), &'static str> {
    let parts: Vec<&str> = value.split('/').collect();
    ((2..=3).contains(&parts.len())
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        }))
    .then_some(())
    .ok_or("takes only a platform like linux/amd64")
}

fn pull(value: &str) -> Result<(), &'static str> {
    matches!(value, "always" | "missing" | "never")
        .then_some(())
        .ok_or("takes only always, missing or never")
}

fn capability(value: &str) -> Result<(), &'static str> {
    (!value.is_empty() && value.chars().all(|c| c.is_ascii_alphabetic() || c == '_'))
        .then_some(())
        .ok_or("takes only a capability name like NET_RAW or ALL")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(texts: &[&str]) -> Vec<Resolved> {
        texts
            .iter()
            .map(|t| Resolved {
                value: (*t).to_owned(),
                secret: false,
                reference: false,
                user_start: false,
            })
            .collect()
    }

    fn refused(runner: Runner, texts: &[&str]) -> String {
        match check(runner, &words(texts)) {
            Ok(out) => panic!("{texts:?} passed: {:?}", out.words),
            Err(rule) => rule.to_string(),
        }
    }

    #[test]
    fn docker_options_outside_the_allowlist_are_refused_by_name() {
        for (texts, named, why) in [
            (&["--privileged"][..], "--privileged", "privileges"),
            (&["-v", "/:/host"], "-v", "mounts a host path"),
            (&["--volume=/:/host"], "--volume", "mounts a host path"),
            (&["-v/:/host"], "-v", "mounts a host path"),
            (&["--mount", "type=bind,src=/,dst=/h"], "--mount", "mounts"),
            (&["--device", "/dev/sda"], "--device", "mounts"),
            (&["--network", "host"], "--network host", "host's network"),
            (&["--net=host"], "--net host", "host's network"),
            (
                &["--network", "container:x"],
                "--network container:x",
                "another container",
            ),
            (&["--pid", "host"], "--pid", "namespace"),
            (&["--pid=host"], "--pid", "namespace"),
            (&["--ipc", "host"], "--ipc", "namespace"),
            (&["--uts=host"], "--uts", "namespace"),
            (&["--userns", "host"], "--userns", "privileges"),
            (&["--cgroupns", "host"], "--cgroupns", "namespace"),
            (&["--cap-add", "ALL"], "--cap-add", "privileges"),
            (&["--cap-add=SYS_ADMIN"], "--cap-add", "privileges"),
            (
                &["--security-opt", "seccomp=unconfined"],
                "--security-opt",
                "privileges",
            ),
            (
                &["--env-file", "/home/u/.env"],
                "--env-file",
                "reads or writes a file",
            ),
            (&["-it"], "-i", "on its own"),
            (&["--rm=false"], "--rm", "takes no value"),
            (&["--init", "evil/image"], "evil/image", "the image"),
            (&["evil/image"], "evil/image", "the image"),
            (&["--workdir"], "--workdir", "has no value"),
            (&["--", "x"], "--", "the image"),
        ] {
            let message = refused(Runner::Docker, texts);
            assert!(
                message.contains(named) && message.contains(why),
                "{texts:?}: {message}"
            );
        }
    }

    #[test]
    fn docker_variables_are_taken_out_of_the_options() {
        let out = check(
            Runner::Docker,
            &words(&[
                "--network",
                "none",
                "-e",
                "A=1",
                "--env=B",
                "-e=C=x=y",
                "--read-only",
                "--memory=512m",
            ]),
        )
        .unwrap();
        assert_eq!(
            out.words,
            ["--network", "none", "--read-only", "--memory=512m"]
        );
        let vars: Vec<(&str, Option<&str>)> = out
            .variables
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_ref().map(|v| v.value.as_str())))
            .collect();
        assert_eq!(vars, [("A", Some("1")), ("B", None), ("C", Some("x=y"))]);
        assert!(refused(Runner::Docker, &["-e", "LD_PRELOAD=/x.so"]).contains("LD_PRELOAD"));
    }

    #[test]
    fn npx_and_uvx_options_that_swap_the_package_are_refused() {
        for (runner, texts, named) in [
            (
                Runner::Npx,
                &["--package", "file:/tmp/evil"][..],
                "--package",
            ),
            (Runner::Npx, &["--package=file:/tmp/evil"], "--package"),
            (Runner::Npx, &["-p", "evil"], "-p"),
            (Runner::Npx, &["--call=touch /tmp/x"], "--call"),
            (Runner::Npx, &["--registry", "http://evil/"], "--registry"),
            (
                Runner::Npx,
                &["--node-options", "--require=/x.js"],
                "--node-options",
            ),
            (Runner::Npx, &["--yes", "evil-package"], "evil-package"),
            (Runner::Npx, &["--loglevel", "loud"], "--loglevel loud"),
            (Runner::Uvx, &["--with", "git+http://evil/x"], "--with"),
            (Runner::Uvx, &["--from=git+https://evil/x"], "--from"),
            (
                Runner::Uvx,
                &["--index-url", "http://evil/simple"],
                "--index-url",
            ),
            (
                Runner::Uvx,
                &["--python", "/tmp/evil/python"],
                "--python /tmp/evil/python",
            ),
            (Runner::Uvx, &["-p", "3.12"], "-p"),
        ] {
            let message = refused(runner, texts);
            assert!(message.contains(named), "{texts:?}: {message}");
        }
        let ok = check(Runner::Uvx, &words(&["--python", "3.12", "-q"])).unwrap();
        assert_eq!(ok.words, ["--python", "3.12", "-q"]);
        let ok = check(Runner::Npx, &words(&["--yes", "--loglevel=warn"])).unwrap();
        assert_eq!(ok.words, ["--yes", "--loglevel=warn"]);
    }

    #[test]
    fn a_secret_is_never_an_option_value() {
        let mut secret = words(&["--network", "s3cret"]);
        secret[1].secret = true;
        let message = check(Runner::Docker, &secret).unwrap_err().to_string();
        assert!(
            message.contains("secret") && !message.contains("s3cret"),
            "{message}"
        );
        let mut positional = words(&["s3cret"]);
        positional[0].secret = true;
        let message = check(Runner::Npx, &positional).unwrap_err().to_string();
        assert!(!message.contains("s3cret"), "{message}");
    }
}
