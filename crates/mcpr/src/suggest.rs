//! "Did you mean": the closest of the names a user could have meant, for a mistyped server,
//! tool or agent-facing name (edit distance from the `strsim` crate).

/// The candidate closest to `typed` when it is close enough to be a typo (at most a third of
/// its characters changed, at least one allowed, never all of them); ties go to the first. `None` when nothing is
/// close, or `typed` itself is a candidate.
pub(crate) fn closest<'a, I>(typed: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let length = typed.chars().count();
    let allowed = (length / 3).max(1).min(length.saturating_sub(1));
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == typed {
            return None;
        }
        let distance = strsim::damerau_levenshtein(typed, candidate);
        if distance <= allowed && best.is_none_or(|(shortest, _)| distance < shortest) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// `"; did you mean `NAME`?"` for the closest candidate, or nothing: appended to an error.
pub(crate) fn did_you_mean<'a, I>(typed: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    closest(typed, candidates)
        .map(|name| format!("; did you mean `{}`?", crate::term::line(name)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_the_name_and_strangers_find_nothing() {
        let tools = ["echo", "add", "get-sum", "longRunningOperation"];
        assert_eq!(closest("ecoh", tools), Some("echo"));
        assert_eq!(closest("get_sum", tools), Some("get-sum"));
        assert_eq!(
            closest("everythin", ["everything", "time"]),
            Some("everything")
        );
        assert_eq!(closest("zzzz", tools), None);
        assert_eq!(closest("echo", tools), None);
        assert_eq!(closest("c", ["a", "b"]), None);
        assert_eq!(closest("mm", ["m"]), Some("m"));
        assert_eq!(did_you_mean("ad", tools), "; did you mean `add`?");
    }
}
