//! What `mcpr trust` (and the shell's `/mcp trust`) shows before it trusts a project: each
//! changed file as a line diff against the text kept when it was last trusted (secret values
//! masked on both sides), the files to trust, and the servers that would start.

use mcp_runtime::config::{Discovery, ProjectTrustState};
use mcp_runtime::fsutil::display_path;

use crate::term;

/// Diffs of files whose line counts multiply past this are shown as old text then new text:
/// the line diff is quadratic, and config files are far smaller.
const MAX_DIFF_CELLS: usize = 4_000_000;

/// Print the review of the project `found` shows (as discovered without `--trust-project`).
pub(crate) fn print(found: &Discovery) {
    let project = &found.project;
    if project.state == ProjectTrustState::Changed && !project.changed.is_empty() {
        println!(
            "Changed since you trusted {}:",
            term::line(&display_path(&project.root))
        );
        for file in &project.changed {
            print_change(found, file);
        }
    } else {
        println!(
            "Files to trust in {}:",
            term::line(&display_path(&project.root))
        );
        for file in &project.files {
            println!("  {}", term::line(&display_path(file)));
        }
    }
    let pending: Vec<_> = found.pending().collect();
    if !pending.is_empty() {
        println!("Servers that would start:");
        for server in pending {
            let target = server.redacted().map(|r| r.target()).unwrap_or_default();
            println!(
                "  {}  {}  ({})",
                term::line(&server.name),
                term::line(&target),
                server.source.provider_name
            );
        }
    }
}

/// Ask `question` on stderr and read the answer from stdin: only `y` or `yes` is a yes.
pub(crate) fn confirm(question: &str) -> bool {
    use std::io::{BufRead, Write};
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim(), "y" | "Y" | "yes")
}

/// One changed file: added, removed, or its lines old beside new.
fn print_change(found: &Discovery, file: &std::path::Path) {
    let project = &found.project;
    let shown = display_path(file);
    let name = term::line(&shown);
    let old = project.trusted_texts.get(file);
    let new = project.texts.get(file);
    let present = project.files.iter().any(|f| f == file);
    match (old, new) {
        _ if !present => println!("  removed: {name}"),
        (None, Some(new)) if !was_trusted(found, file) => {
            println!("  new: {name}");
            for line in new.lines() {
                crate::cmd::trust_pins::print_marked("+", line);
            }
        }
        (Some(old), Some(new)) => {
            println!("  changed: {name}");
            print_diff(old, new);
        }
        (_, None) => println!("  changed: {name} (code a server runs or loads; not shown)"),
        (None, Some(_)) => println!("  changed: {name} (no earlier copy kept to compare)"),
    }
}

/// Whether `file` was among the files trusted last time (its digest is on record).
fn was_trusted(found: &Discovery, file: &std::path::Path) -> bool {
    let Some(store) = &found.project.store else {
        return false;
    };
    let Ok(Some(record)) =
        mcp_runtime::config::trust::TrustStore::new(store).get(&found.project.root)
    else {
        return false;
    };
    let name = file.strip_prefix(&found.cwd).unwrap_or(file);
    record.files.iter().any(|f| std::path::Path::new(f) == name)
}

/// The lines removed (`-`) and added (`+`) from `old` to `new`, in order, from their longest
/// common subsequence of lines.
fn print_diff(old: &str, new: &str) {
    for (mark, line) in diff(old, new) {
        crate::cmd::trust_pins::print_marked(mark, line);
    }
}

/// The removed and added lines from `old` to `new`, in order.
fn diff<'a>(old: &'a str, new: &'a str) -> Vec<(&'static str, &'a str)> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len().saturating_mul(b.len()) > MAX_DIFF_CELLS {
        let removed = a.iter().map(|l| ("-", *l));
        return removed.chain(b.iter().map(|l| ("+", *l))).collect();
    }
    // `common[i][j]`: the longest common subsequence of `a[i..]` and `b[j..]`.
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || common[i + 1][j] >= common[i][j + 1]) {
            out.push(("-", a[i]));
            i += 1;
        } else {
            out.push(("+", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_names_only_the_lines_that_changed() {
        let old = "{\n  \"a\": 1,\n  \"b\": 2\n}";
        let new = "{\n  \"a\": 1,\n  \"b\": 3,\n  \"c\": 4\n}";
        assert_eq!(
            diff(old, new),
            [
                ("-", "  \"b\": 2"),
                ("+", "  \"b\": 3,"),
                ("+", "  \"c\": 4")
            ]
        );
        assert!(diff(old, old).is_empty());
    }
}
