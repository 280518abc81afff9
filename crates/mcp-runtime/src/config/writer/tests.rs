//! Tests of editing mcpr's own config files.

use super::*;

#[test]
fn edits_keep_other_content_and_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(
        &path,
        r#"{"z": 1, "mcpServers": {"b": {"command": "b"}, "a": {"command": "a"}}, "x": true}"#,
    )
    .unwrap();
    let mut file = McprFile::load(&path).unwrap();
    file.set_server("c", json!({"command": "c"}));
    assert!(file.remove_server("b"));
    assert!(!file.remove_server("b"));
    assert!(file.set_listed(List::Disabled, "a", true));
    assert!(!file.set_listed(List::Disabled, "a", true));
    file.save().unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let z = text.find("\"z\"").unwrap();
    let servers = text.find("mcpServers").unwrap();
    let x = text.find("\"x\"").unwrap();
    assert!(z < servers && servers < x, "{text}");
    assert_eq!(
        McprFile::load(&path).unwrap().server_names(),
        vec!["a", "c"]
    );
    let mut file = McprFile::load(&path).unwrap();
    assert!(file.set_listed(List::Disabled, "a", false));
    file.save().unwrap();
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains("disabledServers")
    );
}

#[test]
fn broken_files_are_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, "{\n  \"mcpServers\": {\n    \"a\": \n").unwrap();
    let err = McprFile::load(&path).unwrap_err().to_string();
    assert!(err.contains("mcp.json:"), "{err}");
}

#[test]
fn round_trip_of_every_field() {
    let mut cfg = ServerConfig::stdio("srv", ["--x"]);
    cfg.timeout_ms = Some(5);
    cfg.enabled = false;
    cfg.env_vars = vec!["HOME".into()];
    cfg.disabled_tools = vec!["rm".into()];
    cfg.enabled_tools = Some(vec!["ls".into()]);
    cfg.always_load = true;
    assert_eq!(
        super::super::server_from_json("x", &server_to_json(&cfg)).unwrap(),
        cfg
    );
    let http = ServerConfig {
        transport: Transport::Http(super::super::HttpConfig {
            url: "http://h/sse".into(),
            headers: [("A".to_owned(), "b".to_owned())].into(),
            kind: HttpKind::Sse,
            oauth: None,
        }),
        bearer_token_env_var: Some("TOK".into()),
        ..ServerConfig::stdio("x", Vec::<String>::new())
    };
    assert_eq!(
        super::super::server_from_json("x", &server_to_json(&http)).unwrap(),
        http
    );
}
proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 100,
        failure_persistence: None,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Any sequence of edits on a commented file saves, reads back as made, and keeps the
    /// comments of what it did not remove.
    #[test]
    fn edits_of_a_commented_file_keep_its_comments(
        names in proptest::collection::btree_set("[a-c]{1,2}", 0..4),
        ops in proptest::collection::vec((0u8..5, "[a-c]{1,2}", proptest::bool::ANY), 0..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp.json");
        let mut text = String::from("// head\n{\n  /* servers */\n  \"mcpServers\": {\n");
        for name in &names {
            text.push_str(&format!(
                "    // about {name}\n    \"{name}\": {{\"command\": \"{name}\"}}, // tail {name}\n"
            ));
        }
        text.push_str("  },\n  \"x\": [\"zz\"], // list\n}\n");
        std::fs::write(&path, &text).unwrap();
        let mut file = McprFile::load(&path).unwrap();
        for (op, name, flag) in &ops {
            match op {
                0 => {
                    file.set_server(name, json!({"command": format!("new-{name}"), "args": [flag]}));
                }
                1 => {
                    file.remove_server(name);
                }
                2 => {
                    file.set_listed(List::Disabled, name, *flag);
                }
                3 => {
                    file.set_listed(List::Enabled, name, *flag);
                }
                _ => {
                    file.set_entry_enabled(name, *flag);
                }
            }
        }
        file.save().unwrap();
        let saved = std::fs::read_to_string(&path).unwrap();
        let again = McprFile::load(&path).unwrap();
        proptest::prop_assert_eq!(&again.root, &file.root, "{}", saved);
        for comment in ["// head", "/* servers */", "// list"] {
            proptest::prop_assert!(saved.contains(comment), "{}", saved);
        }
        for name in &names {
            if file.server(name).is_some() {
                let about = format!("// about {name}");
                proptest::prop_assert!(saved.contains(&about), "{}", saved);
            }
        }
    }
}
