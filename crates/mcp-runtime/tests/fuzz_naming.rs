//! Property tests of tool-name mapping: for any set of (server, tool) names, every name is
//! valid for model APIs (`^[a-zA-Z0-9_-]{1,64}$`), distinct pairs get distinct names, and the
//! same set always gets the same names whatever its order.

use std::collections::HashMap;

use mcp_runtime::tools::{NamingStyle, assign_names, is_valid_tool_name};
use proptest::prelude::*;

/// Names that sanitise alike, run long, or hold any character.
fn part() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-c._ -]{0,4}",
        "[a-z_]{60,80}",
        any::<String>(),
        Just(String::new()),
        "[é.:/ ]{1,3}",
    ]
}

fn pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((part(), part()), 0..24)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn names_are_valid_injective_and_stable(pairs in pairs(), seed in any::<u64>()) {
        for style in [NamingStyle::Mcpr, NamingStyle::Claude] {
            let names = assign_names(style, pairs.iter().map(|(s, t)| (s.as_str(), t.as_str())));
            prop_assert_eq!(names.len(), pairs.len());
            let mut owner: HashMap<&str, &(String, String)> = HashMap::new();
            for (name, pair) in names.iter().zip(&pairs) {
                let valid = is_valid_tool_name(name)
                    && name.len() <= 64
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                prop_assert!(valid, "{name:?} for {pair:?}");
                if let Some(previous) = owner.insert(name, pair) {
                    prop_assert_eq!(previous, pair, "two pairs share {}", name);
                }
            }
            // Same set, other order: same name for each pair.
            let mut shuffled: Vec<usize> = (0..pairs.len()).collect();
            let mut state = seed;
            for i in (1..shuffled.len()).rev() {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                shuffled.swap(i, (state >> 33) as usize % (i + 1));
            }
            let again = assign_names(
                style,
                shuffled.iter().map(|&i| (pairs[i].0.as_str(), pairs[i].1.as_str())),
            );
            for (k, &i) in shuffled.iter().enumerate() {
                prop_assert_eq!(&again[k], &names[i]);
            }
        }
    }
}
