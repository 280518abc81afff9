//! Tests of install plans: what a registry entry needs, and the config entry it becomes.

use super::*;

fn server(json: serde_json::Value) -> ServerJson {
    serde_json::from_value(json).unwrap()
}

#[test]
fn npm_with_arguments_defaults_and_secret() {
    let s = server(serde_json::json!({
        "name": "io.x/a", "version": "1.0.0",
        "packages": [{
            "registryType": "npm", "identifier": "@x/a", "version": "1.2.3",
            "transport": {"type": "stdio"},
            "runtimeArguments": [{"type": "named", "name": "--node-options", "value": "--max-old-space-size=512"}],
            "packageArguments": [
                {"type": "positional", "valueHint": "root", "isRequired": true},
                {"type": "named", "name": "--port", "default": "8080"},
                {"type": "named", "name": "--token", "isSecret": true, "isRequired": true}
            ],
            "environmentVariables": [
                {"name": "API_KEY", "isRequired": true, "isSecret": true},
                {"name": "MODE", "default": "fast"},
                {"name": "URL", "value": "https://{host}/v1", "variables": {"host": {"default": "h.example"}}}
            ]
        }]
    }));
    let plan = plan(&s, None).unwrap();
    let missing = plan.missing(&Values::default());
    assert_eq!(missing, ["--arg root", "--arg token", "--env API_KEY"]);
    let mut values = Values::default();
    values.set(ValueSource::Arg, "root", "/srv");
    values.set(ValueSource::Arg, "token", "t0p");
    values.set(ValueSource::Env, "API_KEY", "k3y");
    let out = plan.build("a", &values, None).unwrap();
    let Transport::Stdio(stdio) = &out.config.transport else {
        panic!()
    };
    assert_eq!(stdio.command, "npx");
    assert_eq!(
        stdio.args,
        [
            "-y",
            "--node-options",
            "--max-old-space-size=512",
            "@x/a@1.2.3",
            "/srv",
            "--port",
            "8080",
            "--token",
            "mcpr-secret:args.8"
        ]
    );
    assert_eq!(stdio.env["API_KEY"], "mcpr-secret:env.API_KEY");
    assert_eq!(stdio.env["MODE"], "fast");
    assert_eq!(stdio.env["URL"], "https://h.example/v1");
    assert_eq!(out.secrets["env.API_KEY"], "k3y");
    assert_eq!(out.secrets["args.8"], "t0p");
}

#[test]
fn a_secret_given_as_a_reference_is_written_as_is() {
    let s = server(serde_json::json!({
        "name": "io.x/r", "version": "1",
        "remotes": [{"type": "sse", "url": "https://{tenant}.example/sse",
            "variables": {"tenant": {"isRequired": true}},
            "headers": [{"name": "Authorization", "value": "Bearer {token}",
                "variables": {"token": {"isRequired": true, "isSecret": true}}}]}]
    }));
    let plan = plan(&s, None).unwrap();
    assert_eq!(plan.kind, InstallKind::Remote);
    let mut values = Values::default();
    values.set(ValueSource::Header, "tenant", "acme");
    values.set(ValueSource::Header, "token", "${ACME_TOKEN}");
    let out = plan.build("r", &values, None).unwrap();
    let Transport::Http(http) = &out.config.transport else {
        panic!()
    };
    assert_eq!(http.url, "https://acme.example/sse");
    assert_eq!(http.kind, HttpKind::Sse);
    assert_eq!(http.headers["Authorization"], "Bearer ${ACME_TOKEN}");
    assert!(out.secrets.is_empty());
    values.set(ValueSource::Header, "token", "raw");
    let out = plan.build("r", &values, None).unwrap();
    let Transport::Http(http) = &out.config.transport else {
        panic!()
    };
    assert_eq!(
        http.headers["Authorization"],
        "mcpr-secret:headers.Authorization"
    );
    assert_eq!(out.secrets["headers.Authorization"], "Bearer raw");
}

#[test]
fn pypi_and_oci_command_lines() {
    let s = server(serde_json::json!({
        "name": "io.x/p", "version": "1",
        "packages": [
            {"registryType": "pypi", "identifier": "x-mcp", "version": "0.3", "transport": {"type": "stdio"}},
            {"registryType": "oci", "identifier": "ghcr.io/x/mcp", "version": "0.3",
             "transport": {"type": "stdio"}, "environmentVariables": [{"name": "K", "default": "v"}]}
        ]
    }));
    let out = plan(&s, None)
        .unwrap()
        .build("p", &Values::default(), None)
        .unwrap();
    let Transport::Stdio(stdio) = &out.config.transport else {
        panic!()
    };
    assert_eq!(
        (stdio.command.as_str(), stdio.args.as_slice()),
        ("uvx", &["x-mcp==0.3".to_owned()][..])
    );
    let out = plan(&s, Some(InstallKind::Oci))
        .unwrap()
        .build("p", &Values::default(), None)
        .unwrap();
    let Transport::Stdio(stdio) = &out.config.transport else {
        panic!()
    };
    assert_eq!(stdio.command, "docker");
    assert_eq!(
        stdio.args,
        ["run", "-i", "--rm", "-e", "K", "ghcr.io/x/mcp:0.3"]
    );
    assert_eq!(stdio.env["K"], "v");
    assert_eq!(oci_reference("x/y:1", Some("2")), "x/y:1");
    assert_eq!(
        oci_reference("localhost:5000/y", Some("2")),
        "localhost:5000/y:2"
    );
}

#[test]
fn registry_values_mcpr_would_act_on_are_refused() {
    for (json, field) in [
        (
            serde_json::json!({"name": "io.x/h", "version": "1", "remotes": [{"type": "sse",
                "url": "https://h/sse", "headers": [{"name": "X-Steal", "value": "${HOME}"}]}]}),
            "headers.X-Steal",
        ),
        (
            serde_json::json!({"name": "io.x/h", "version": "1", "remotes": [{"type": "sse",
                "url": "https://h/sse", "headers": [{"name": "X-Steal", "default": "GITHUB_TOKEN"}]}]}),
            "headers.X-Steal",
        ),
        (
            serde_json::json!({"name": "io.x/h", "version": "1", "remotes": [{"type": "sse",
                "url": "https://h/{p}", "variables": {"p": {"default": "{env:HOME}"}}}]}),
            "url",
        ),
        (
            serde_json::json!({"name": "io.x/o", "version": "1", "packages": [{"registryType": "oci",
                "identifier": "i", "transport": {"type": "stdio"},
                "environmentVariables": [{"name": "RUN", "value": "!touch /tmp/x"}]}]}),
            "env.RUN",
        ),
        (
            serde_json::json!({"name": "io.x/o", "version": "1", "packages": [{"registryType": "oci",
                "identifier": "i", "transport": {"type": "stdio"},
                "environmentVariables": [{"name": "REGION", "default": "AWS_SECRET_ACCESS_KEY"}]}]}),
            "env.REGION",
        ),
    ] {
        let server = server(json);
        let err = plan(&server, None)
            .unwrap()
            .build("h", &Values::default(), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains(field) && err.contains("refused"), "{err}");
    }
    // The same shapes typed by the user are theirs to give.
    let s = server(
        serde_json::json!({"name": "io.x/h", "version": "1", "remotes": [{"type": "sse",
        "url": "https://h/sse", "headers": [{"name": "X-Token", "isRequired": true}]}]}),
    );
    let mut values = Values::default();
    values.set(ValueSource::Header, "X-Token", "MY_TOKEN");
    assert!(plan(&s, None).unwrap().build("h", &values, None).is_ok());
}

#[test]
fn unknown_registry_types_and_choices_are_errors() {
    let s = server(serde_json::json!({
        "name": "io.x/u", "version": "1",
        "packages": [{"registryType": "cargo", "identifier": "x", "transport": {"type": "stdio"}}]
    }));
    let err = plan(&s, None).unwrap_err().to_string();
    assert!(err.contains("cargo") && err.contains("io.x/u"), "{err}");
    let s = server(serde_json::json!({
        "name": "io.x/c", "version": "1",
        "packages": [{"registryType": "npm", "identifier": "x", "transport": {"type": "stdio"},
            "environmentVariables": [{"name": "LEVEL", "choices": ["a", "b"]}]}]
    }));
    let mut values = Values::default();
    values.set(ValueSource::Env, "LEVEL", "c");
    let err = plan(&s, None)
        .unwrap()
        .build("c", &values, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("LEVEL") && err.contains("a, b"), "{err}");
}
