//! The report: markdown tables of figures and ratios, and the targets with ✅/❌.

use std::fmt::Write;
use std::time::Duration;

/// One markdown table under a heading.
#[derive(Debug, Default)]
pub(crate) struct Table {
    pub title: String,
    pub notes: Vec<String>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub(crate) fn new(title: &str, header: &[&str]) -> Table {
        Table {
            title: title.to_owned(),
            header: header.iter().map(|h| h.to_string()).collect(),
            ..Table::default()
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// A row that says why a figure is missing: the first cell, then the reason, then blanks.
    pub(crate) fn missing(&mut self, first: &str, why: &str) {
        let mut cells = vec![first.to_owned(), format!("n/a ({})", cell(why))];
        cells.resize(self.header.len().max(2), "—".into());
        self.rows.push(cells);
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "### {}\n", self.title);
        let _ = writeln!(out, "| {} |", self.header.join(" | "));
        let align: Vec<&str> = (0..self.header.len())
            .map(|i| if i == 0 { "---" } else { "---:" })
            .collect();
        let _ = writeln!(out, "|{}|", align.join("|"));
        for row in &self.rows {
            let _ = writeln!(out, "| {} |", row.join(" | "));
        }
        if !self.notes.is_empty() {
            out.push('\n');
            for note in &self.notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out.push('\n');
    }
}

/// A performance target and where we stand.
#[derive(Debug)]
pub(crate) struct Target {
    pub what: String,
    pub goal: String,
    pub measured: String,
    /// `None`: not measured in this run.
    pub met: Option<bool>,
}

#[derive(Debug, Default)]
pub(crate) struct Report {
    pub tables: Vec<Table>,
    pub targets: Vec<Target>,
}

impl Report {
    pub(crate) fn target(&mut self, what: &str, goal: &str, measured: String, met: Option<bool>) {
        self.targets.push(Target {
            what: what.into(),
            goal: goal.into(),
            measured,
            met,
        });
    }

    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "### Targets\n");
        let _ = writeln!(out, "| target | goal | measured | |");
        let _ = writeln!(out, "|---|---|---|:-:|");
        for t in &self.targets {
            let mark = match t.met {
                Some(true) => "✅",
                Some(false) => "❌",
                None => "—",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {mark} |",
                t.what,
                t.goal,
                cell(&t.measured)
            );
        }
        out.push('\n');
        for table in &self.tables {
            table.render(&mut out);
        }
        out
    }
}

/// Text safe inside a table cell.
pub(crate) fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// `12,345` (no decimals).
pub(crate) fn count(value: f64) -> String {
    let rounded = value.round() as u64;
    let digits = rounded.to_string();
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// `1.23×`.
pub(crate) fn ratio(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.2}×")
    } else {
        "—".into()
    }
}

/// Milliseconds with one decimal below 100 ms.
pub(crate) fn ms(duration: Duration) -> String {
    let ms = duration.as_secs_f64() * 1000.0;
    if ms < 100.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{ms:.0} ms")
    }
}

/// Microseconds.
pub(crate) fn us(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

/// The median of `values` (sorted copy); `None` when empty.
pub(crate) fn median(values: &[Duration]) -> Option<Duration> {
    let mut sorted = values.to_vec();
    sorted.sort();
    match sorted.len() {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(1234567.4), "1,234,567");
        assert_eq!(count(12.0), "12");
        assert_eq!(ratio(1.234), "1.23×");
        let d = Duration::from_millis;
        assert_eq!(median(&[d(3), d(1), d(2)]), Some(d(2)));
        assert_eq!(median(&[d(1), d(3)]), Some(d(2)));
        assert_eq!(median(&[]), None);
    }
}
