//! `mcpr add --from-registry`: every package kind becomes a working entry, secrets go to the
//! credential store, and a missing required value writes nothing.

use super::*;

#[test]
fn the_npm_server_is_added_and_started_with_its_secret_injected() {
    let everything = support::server_everything();
    let npm_root = everything.ancestors().nth(5).unwrap().to_owned();
    let registry = Registry::start();
    let home = home();
    let out = ok(mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "everything",
            "--from-registry",
            "io.test/everything",
            "--env",
            &format!("API_KEY={SECRET}"),
        ],
    ));
    assert!(!out.contains(SECRET), "{out}");
    assert!(out.contains("env.API_KEY"), "{out}");
    let written = entry(&home, "everything");
    assert_eq!(written["command"], "npx");
    assert_eq!(
        written["args"],
        json!([
            "-y",
            format!("@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"),
            "stdio"
        ])
    );
    assert_eq!(written["env"]["LOG_LEVEL"], "info");
    assert_eq!(written["env"]["API_KEY"], "mcpr-secret:env.API_KEY");
    assert_only_in_store(&home, SECRET);

    let out = ok(mcpr(&home, &registry.url, &["servers"]));
    assert!(out.contains("everything") && !out.contains(SECRET), "{out}");

    // Started for real (npx finds the package installed in the peers directory, offline): the
    // server sees the stored secret in its environment.
    let out = mcpr_in(
        &home,
        &npm_root,
        &registry.url,
        &["call", "everything", "get-env", "{}"],
    );
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains(SECRET),
        "the secret did not reach the server:\n{shown}"
    );
    assert!(shown.contains("\"LOG_LEVEL\""), "{shown}");

    // Removing the server forgets its secret.
    ok(mcpr(&home, &registry.url, &["remove", "everything"]));
    let store = std::fs::read_to_string(home.join(".local/share/mcpr/secrets.json")).unwrap();
    assert!(!store.contains(SECRET), "{store}");
}

#[test]
fn every_package_kind_becomes_a_working_entry() {
    let registry = Registry::start();
    let home = home();
    ok(mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "weather",
            "--from-registry",
            "io.test/pypi@0.4.0",
            "--arg",
            "city=Berlin",
        ],
    ));
    let pypi = entry(&home, "weather");
    assert_eq!(pypi["command"], "uvx");
    assert_eq!(
        pypi["args"],
        json!([
            "--python",
            "3.12",
            "weather-mcp==0.4.0",
            "--units",
            "metric",
            "Berlin"
        ])
    );

    ok(mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "container",
            "--from-registry",
            "io.test/oci",
            "--timeout",
            "60000",
        ],
    ));
    let oci = entry(&home, "container");
    assert_eq!(oci["command"], "docker");
    assert_eq!(
        oci["args"],
        json!([
            "run",
            "-i",
            "--rm",
            "--network",
            "none",
            "-e",
            "REGION",
            "ghcr.io/test/server:2.0.0"
        ])
    );
    assert_eq!(oci["env"]["REGION"], "eu");
    assert_eq!(oci["timeout"], 60000);

    // A remote with a URL template and a secret header given as a reference: nothing to store.
    ok(mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "hosted",
            "--from-registry",
            "io.test/remote",
            "--header-value",
            "tenant=acme",
            "--header-value",
            "token=${ACME_TOKEN}",
        ],
    ));
    let remote = entry(&home, "hosted");
    assert_eq!(remote["url"], "https://acme.example.com/mcp");
    assert_eq!(remote["headers"]["Authorization"], "Bearer ${ACME_TOKEN}");
    assert_eq!(remote["headers"]["X-Client"], "mcpr");

    // The same remote with the token itself, in the project file: the token goes to the store.
    ok(mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "hosted",
            "--project",
            "--from-registry",
            "io.test/remote",
            "--header-value",
            "tenant=acme",
            "--header-value",
            &format!("token={HEADER_SECRET}"),
        ],
    ));
    let project = std::fs::read_to_string(home.join("project/.mcpr/mcp.json")).unwrap();
    assert!(
        project.contains("mcpr-secret:headers.Authorization"),
        "{project}"
    );
    assert_only_in_store(&home, HEADER_SECRET);
    let out = ok(mcpr(&home, &registry.url, &["servers", "--trust-project"]));
    assert!(!out.contains(HEADER_SECRET), "{out}");

    // The bundle: downloaded, checked, unpacked into the data directory and started.
    let out = ok(mcpr(
        &home,
        &registry.url,
        &["add", "bundled", "--from-registry", "io.test/bundle"],
    ));
    assert!(out.contains("Added `bundled`"), "{out}");
    let bundle = entry(&home, "bundled");
    assert_eq!(bundle["command"], MCPR);
    assert_eq!(
        bundle["args"],
        json!(["mock", "--name", "bundled", "--tools", "2"])
    );
    let dir = PathBuf::from(bundle["env"]["BUNDLE_DIR"].as_str().unwrap());
    assert!(
        dir.starts_with(home.join(".local/share/mcpr/bundles")),
        "{}",
        dir.display()
    );
    assert!(dir.ends_with(format!("io.test_bundle-{}", &registry.bundle_sha[..16])));
    assert_eq!(
        std::fs::read_to_string(dir.join("server/README")).unwrap(),
        "bundled server"
    );
    let out = ok(mcpr(
        &home,
        &registry.url,
        &["call", "bundled", "tool_1", r#"{"text":"from the bundle"}"#],
    ));
    assert!(out.contains("from the bundle"), "{out}");
}

#[test]
fn a_missing_required_value_is_named_and_nothing_is_written() {
    let registry = Registry::start();
    let home = home();
    let out = mcpr(
        &home,
        &registry.url,
        &["add", "everything", "--from-registry", "io.test/everything"],
    );
    assert!(!out.status.success());
    let shown = text(&out);
    assert!(
        shown.contains("--env API_KEY") && shown.contains("nothing was written"),
        "{shown}"
    );
    let out = mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "hosted",
            "--from-registry",
            "io.test/remote",
            "--header-value",
            "tenant=a",
        ],
    );
    assert!(!out.status.success());
    assert!(
        text(&out).contains("--header-value token"),
        "{}",
        text(&out)
    );
    // A value outside the allowed choices.
    let out = mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "w",
            "--from-registry",
            "io.test/pypi",
            "--arg",
            "city=x",
            "--arg",
            "units=kelvin",
        ],
    );
    assert!(!out.status.success());
    assert!(text(&out).contains("metric, imperial"), "{}", text(&out));
    // A value the entry does not ask for (a typo) is refused, not dropped.
    let out = mcpr(
        &home,
        &registry.url,
        &[
            "add",
            "e",
            "--from-registry",
            "io.test/everything",
            "--env",
            &format!("API_KEYS={SECRET}"),
        ],
    );
    let shown = text(&out);
    assert!(!out.status.success(), "{shown}");
    assert!(
        shown.contains("asks for no value --env API_KEYS") && shown.contains("--env API_KEY,"),
        "{shown}"
    );
    assert!(!shown.contains(SECRET), "{shown}");
    assert!(!user_config(&home).exists());
    assert!(!home.join(".local/share/mcpr/secrets.json").exists());
}
