//! Loader variables: environment variables that make a program load code it was not handed as
//! an argument (`NODE_OPTIONS=--require ./hook.js`, `PYTHONPATH=./lib`, `LD_PRELOAD=./x.so`,
//! ...). This module reads each variable of a server's `env` (expanded, `envFile` included) in
//! that variable's own syntax, and names the files and directories the server would load code
//! from, resolved as the process resolves them. Trust binds to them as it binds to the program
//! itself; what a directory is bound by lives in [`tree`](super::tree).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::lexical;

/// The environment variables through which a server loads code, each read in its own syntax:
/// the files given to `NODE_OPTIONS`' `--require`/`-r`/`--import`/`--loader`/
/// `--experimental-loader`, to `RUBYOPT`'s `-r`, to `PERL5OPT`'s `-M`/`-m`/`-d:`; the
/// directories of `-I` in those two and of the path lists `NODE_PATH`, `PYTHONPATH`, `RUBYLIB`,
/// `PERL5LIB`, `PERLLIB`, `LD_LIBRARY_PATH` and `DYLD_LIBRARY_PATH`; the libraries of
/// `LD_PRELOAD`, `LD_AUDIT` and `DYLD_INSERT_LIBRARIES`; and the one file of `BASH_ENV`, `ENV`
/// and `PYTHONSTARTUP`.
pub const LOADER_VARIABLES: &[&str] = &[
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "BASH_ENV",
    "ENV",
    "RUBYOPT",
    "RUBYLIB",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "LD_PRELOAD",
    "LD_AUDIT",
    "LD_LIBRARY_PATH",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
];

/// The names (files and directories) followed in one server's loader variables, at most. Each
/// bare name is looked for in every directory the variables add, so a hostile config with
/// thousands of entries could otherwise make every start look at millions of paths; real
/// configs name a handful.
pub const MAX_LOADER_NAMES: usize = 64;

/// A file or directory, inside which a server would load code, named by a loader variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Loaded {
    /// As resolved, with `..` resolved but not symlinks (as [`super::run_files`] names files).
    pub path: PathBuf,
    /// For a directory: whether its subdirectories are searched as well (a module path such as
    /// `PYTHONPATH`), or only its own files (a library path such as `LD_LIBRARY_PATH`).
    pub nested: bool,
}

/// The program family a variable belongs to: a bare name given to one family's loading flag is
/// looked for in the directories the same family's variables add to its search path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Node,
    Python,
    Shell,
    Ruby,
    Perl,
    Linker,
}

/// What one loader variable names, before it is resolved against the server's directories.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Named {
    /// A file the program loads (`--require ./hook.js`, `BASH_ENV`), tried as written and with
    /// each of `extensions` appended, as the program's own lookup would.
    File {
        name: String,
        family: Family,
        extensions: &'static [&'static str],
    },
    /// A directory the program searches for code.
    SearchDir {
        name: String,
        family: Family,
        nested: bool,
    },
}

/// What `require` tries after the name as written.
const NODE_EXTENSIONS: &[&str] = &["", ".js", ".cjs", ".mjs", ".json", ".node"];
/// What Ruby's `require` tries after the name as written.
const RUBY_EXTENSIONS: &[&str] = &["", ".rb", ".so"];
/// The name exactly as written.
const AS_WRITTEN: &[&str] = &[""];

/// The `NODE_OPTIONS` flags whose value is a module loaded before the program.
const NODE_LOADING_FLAGS: &[&str] = &[
    "-r",
    "--require",
    "--import",
    "--loader",
    "--experimental-loader",
];

/// The files and directories `env` makes a server load code from, resolved against `bases`
/// (the directories it may start in, see [`super::working_dirs`]). Only those that exist are
/// returned: a file that appears later changes what trust binds to by appearing.
pub(crate) fn loaded_paths(env: &BTreeMap<String, String>, bases: &[PathBuf]) -> Vec<Loaded> {
    let named: Vec<Named> = env
        .iter()
        .flat_map(|(key, value)| parse(key, value))
        .take(MAX_LOADER_NAMES)
        .collect();
    let mut loaded: Vec<Loaded> = Vec::new();
    let mut push = |path: &Path, nested: bool| {
        let item = Loaded {
            path: lexical(path),
            nested: nested && path.is_dir(),
        };
        if path.exists() && !loaded.contains(&item) {
            loaded.push(item);
        }
    };
    let mut search: Vec<(Family, PathBuf)> = Vec::new();
    for item in &named {
        if let Named::SearchDir {
            name,
            family,
            nested,
        } = item
        {
            for dir in against(name, bases) {
                push(&dir, *nested);
                search.push((*family, dir));
            }
        }
    }
    for item in &named {
        if let Named::File {
            name,
            family,
            extensions,
        } = item
        {
            let within: Vec<PathBuf> = bases
                .iter()
                .cloned()
                .chain(
                    search
                        .iter()
                        .filter(|(f, _)| f == family)
                        .map(|(_, d)| d.clone()),
                )
                .collect();
            for candidate in against(name, &within) {
                for extension in *extensions {
                    let mut path = candidate.clone().into_os_string();
                    path.push(extension);
                    // A directory required as a module loads its `index.js` or whatever its
                    // `package.json` names: all of it is bound.
                    push(Path::new(&path), true);
                }
            }
        }
    }
    // A directory both searched for libraries and for modules is bound with its subdirectories.
    let nested: Vec<PathBuf> = loaded
        .iter()
        .filter(|l| l.nested)
        .map(|l| l.path.clone())
        .collect();
    loaded.retain(|l| l.nested || !nested.contains(&l.path));
    loaded
}

/// `name` as the process would find it: as is when absolute, else under each of `dirs`.
fn against(name: &str, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let path = Path::new(name);
    if path.is_absolute() {
        vec![path.to_owned()]
    } else {
        dirs.iter().map(|dir| dir.join(path)).collect()
    }
}

/// What the variable `key` set to `value` names (nothing for any other variable).
fn parse(key: &str, value: &str) -> Vec<Named> {
    match key {
        "NODE_OPTIONS" => node_options(value),
        "NODE_PATH" => search_path(value, Family::Node, true),
        "PYTHONPATH" => search_path(value, Family::Python, true),
        "PYTHONSTARTUP" => one_file(value, Family::Python),
        "BASH_ENV" | "ENV" => one_file(value, Family::Shell),
        "RUBYOPT" => ruby_options(value),
        "RUBYLIB" => search_path(value, Family::Ruby, true),
        "PERL5OPT" => perl_options(value),
        "PERL5LIB" | "PERLLIB" => search_path(value, Family::Perl, true),
        "LD_PRELOAD" | "LD_AUDIT" | "DYLD_INSERT_LIBRARIES" => libraries(value),
        "LD_LIBRARY_PATH" | "DYLD_LIBRARY_PATH" => search_path(value, Family::Linker, false),
        _ => Vec::new(),
    }
}

fn file(name: &str, family: Family, extensions: &'static [&'static str]) -> Named {
    Named::File {
        name: name.to_owned(),
        family,
        extensions,
    }
}

fn search_dir(name: &str, family: Family, nested: bool) -> Named {
    Named::SearchDir {
        name: name.to_owned(),
        family,
        nested,
    }
}

/// `BASH_ENV`, `ENV`, `PYTHONSTARTUP`: one file, run before anything else.
fn one_file(value: &str, family: Family) -> Vec<Named> {
    let value = value.trim();
    if value.is_empty() {
        return Vec::new();
    }
    vec![file(value, family, AS_WRITTEN)]
}

/// A `:`-separated list of directories (`;` on Windows). An empty entry is the working
/// directory for every program but Node, which drops it.
fn search_path(value: &str, family: Family, nested: bool) -> Vec<Named> {
    if value.is_empty() {
        return Vec::new();
    }
    std::env::split_paths(value)
        .filter_map(|dir| match dir.to_str() {
            Some("") if family == Family::Node => None,
            Some("") => Some(search_dir(".", family, nested)),
            Some(dir) => Some(search_dir(dir, family, nested)),
            None => None,
        })
        .collect()
}

/// `LD_PRELOAD` and its kin: libraries separated by spaces or colons.
fn libraries(value: &str) -> Vec<Named> {
    value
        .split([' ', ':', '\t'])
        .filter(|name| !name.is_empty())
        .map(|name| file(name, Family::Linker, AS_WRITTEN))
        .collect()
}

/// The words of `NODE_OPTIONS` as Node splits them: on spaces, with double quotes grouping
/// words and a backslash inside quotes taking the next character as it is.
fn node_words(value: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => word.extend(chars.next()),
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// `NODE_OPTIONS`: the modules of its loading flags, as `--require X` or `--require=X`.
fn node_options(value: &str) -> Vec<Named> {
    let mut named = Vec::new();
    let mut words = node_words(value).into_iter();
    while let Some(word) = words.next() {
        let module = if NODE_LOADING_FLAGS.contains(&word.as_str()) {
            words.next()
        } else {
            match word.split_once('=') {
                Some((flag, module)) if NODE_LOADING_FLAGS.contains(&flag) => {
                    Some(module.to_owned())
                }
                _ => None,
            }
        };
        if let Some(module) = module.filter(|m| !m.is_empty()) {
            // `--import` takes a URL as well; a `file:` one names a file.
            let module = module.strip_prefix("file://").unwrap_or(&module);
            named.push(file(module, Family::Node, NODE_EXTENSIONS));
        }
    }
    named
}

/// A switch's value: the rest of its word, or the next word when the rest is empty.
fn switch_value<'a>(rest: &'a str, words: &mut impl Iterator<Item = &'a str>) -> Option<&'a str> {
    if rest.is_empty() {
        words.next()
    } else {
        Some(rest)
    }
}

/// `RUBYOPT`: `-rFEATURE` (or `-r FEATURE`) is required first, `-IDIR` joins the load path.
/// Ruby reads a word without its leading `-` the same way (`RUBYOPT=rubygems`), and lets
/// switches without a value come first in a word (`-wr./x`).
fn ruby_options(value: &str) -> Vec<Named> {
    let mut named = Vec::new();
    let mut words = value.split_whitespace();
    while let Some(word) = words.next() {
        let switches = word.strip_prefix('-').unwrap_or(word);
        let rest = switches.trim_start_matches(['d', 'v', 'w', 'U']);
        if let Some(feature) = rest.strip_prefix('r') {
            if let Some(feature) = switch_value(feature, &mut words) {
                named.push(file(feature, Family::Ruby, RUBY_EXTENSIONS));
            }
        } else if let Some(dir) = rest.strip_prefix('I')
            && let Some(dir) = switch_value(dir, &mut words)
        {
            named.push(search_dir(dir, Family::Ruby, true));
        }
    }
    named
}

/// `PERL5OPT`: `-MModule`, `-mModule` and `-d:Module` (`Devel::Module`) load a module found
/// in `@INC`, which `-IDIR` extends. Like Perl, the leading `-` is optional and switches
/// without a value may come first in a word (`-wMstrict`).
fn perl_options(value: &str) -> Vec<Named> {
    let mut named = Vec::new();
    let mut words = value.split_whitespace();
    while let Some(word) = words.next() {
        let switches = word.strip_prefix('-').unwrap_or(word);
        let rest = switches.trim_start_matches(['t', 'T', 'w', 'W', 'U']);
        let module = if let Some(module) = rest.strip_prefix(['M', 'm']) {
            switch_value(module, &mut words).map(str::to_owned)
        } else if let Some(module) = rest.strip_prefix("d:").or(rest.strip_prefix("dt:")) {
            Some(format!("Devel::{module}"))
        } else {
            if let Some(dir) = rest.strip_prefix('I')
                && let Some(dir) = switch_value(dir, &mut words)
            {
                named.push(search_dir(dir, Family::Perl, true));
            }
            None
        };
        if let Some(path) = module.as_deref().and_then(perl_module_file) {
            named.push(file(&path, Family::Perl, AS_WRITTEN));
        }
    }
    named
}

/// The file of a module named as `-M` takes it (`-Foo::Bar=x,y` is `Foo/Bar.pm`).
fn perl_module_file(module: &str) -> Option<String> {
    let module = module.strip_prefix('-').unwrap_or(module);
    let name = module.split(['=', ' ']).next().unwrap_or_default();
    (!name.is_empty()).then(|| format!("{}.pm", name.replace("::", "/")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(key: &str, value: &str) -> Vec<String> {
        parse(key, value)
            .into_iter()
            .map(|named| match named {
                Named::File { name, .. } => format!("file {name}"),
                Named::SearchDir { name, nested, .. } => {
                    format!("dir {name}{}", if nested { "" } else { " (flat)" })
                }
            })
            .collect()
    }

    #[test]
    fn node_options_name_the_modules_of_loading_flags() {
        assert_eq!(
            names(
                "NODE_OPTIONS",
                r#"--max-old-space-size=4096 --require ./a.js -r=b --import=file:///abs/c.mjs --loader "./d e.mjs" --experimental-loader ./f --inspect"#
            ),
            [
                "file ./a.js",
                "file b",
                "file /abs/c.mjs",
                "file ./d e.mjs",
                "file ./f"
            ]
        );
        assert_eq!(
            node_words(r#"-r "a \"b\" c" x"#),
            [r#"-r"#, r#"a "b" c"#, "x"]
        );
        assert!(names("NODE_OPTIONS", "--require").is_empty());
        assert!(names("NODE_OPTIONS", "--require=").is_empty());
    }

    #[test]
    fn ruby_and_perl_options_follow_their_own_switch_rules() {
        assert_eq!(
            names(
                "RUBYOPT",
                "-r./x -rfoo -r bar -wrbaz rubygems -I./lib -Ilib2 -W:no-deprecated"
            ),
            [
                "file ./x",
                "file foo",
                "file bar",
                "file baz",
                "file ubygems",
                "dir ./lib",
                "dir lib2"
            ]
        );
        assert_eq!(
            names(
                "PERL5OPT",
                "-MFoo::Bar=x,y -mBaz -M-Warn -wMstrict -d:NYTProf -I./lib Iinc -T"
            ),
            [
                "file Foo/Bar.pm",
                "file Baz.pm",
                "file Warn.pm",
                "file strict.pm",
                "file Devel/NYTProf.pm",
                "dir ./lib",
                "dir inc"
            ]
        );
    }

    #[test]
    fn path_lists_and_single_files() {
        assert_eq!(
            names("PYTHONPATH", "./lib:/abs::src"),
            ["dir ./lib", "dir /abs", "dir .", "dir src"]
        );
        assert_eq!(names("NODE_PATH", ":./a:"), ["dir ./a"]);
        assert_eq!(names("LD_LIBRARY_PATH", "./lib"), ["dir ./lib (flat)"]);
        assert_eq!(
            names("LD_PRELOAD", "./a.so ./b.so:/c.so"),
            ["file ./a.so", "file ./b.so", "file /c.so"]
        );
        assert_eq!(names("BASH_ENV", " ./env.sh "), ["file ./env.sh"]);
        assert!(names("BASH_ENV", "").is_empty());
        assert!(names("PYTHONPATH", "").is_empty());
        assert!(names("LOG_LEVEL", "./x").is_empty());
        for key in LOADER_VARIABLES {
            assert!(!names(key, "-r ./x -M./x -I./x ./x").is_empty(), "{key}");
        }
    }

    #[test]
    fn a_hostile_number_of_names_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..=MAX_LOADER_NAMES).map(|i| format!("d{i}")).collect();
        for name in &names {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        let env = BTreeMap::from([("PYTHONPATH".to_owned(), names.join(":"))]);
        let loaded = loaded_paths(&env, &[dir.path().to_owned()]);
        assert_eq!(loaded.len(), MAX_LOADER_NAMES);
    }

    #[test]
    fn names_resolve_against_the_working_dirs_and_the_family_search_path() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("lib/pkg")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("hook.js"), "").unwrap();
        std::fs::write(root.join("lib/feature.rb"), "").unwrap();
        let env: BTreeMap<String, String> = [
            ("NODE_OPTIONS", "-r ./hook"),
            ("RUBYLIB", "lib"),
            ("RUBYOPT", "-rfeature -rmissing"),
            ("LD_LIBRARY_PATH", "lib"),
            ("LOG_LEVEL", "./hook.js"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let loaded = loaded_paths(&env, &[root.join("sub/..")]);
        let shown: Vec<(PathBuf, bool)> = loaded.into_iter().map(|l| (l.path, l.nested)).collect();
        assert_eq!(
            shown,
            [
                (root.join("lib"), true),
                (root.join("hook.js"), false),
                (root.join("lib/feature.rb"), false),
            ]
        );
    }
}
