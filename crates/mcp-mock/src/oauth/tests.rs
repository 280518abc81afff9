//! Unit tests of the authorization server's pure parts and of its grant logic.

use super::resource::calls_a_tool;
use super::*;

/// RFC 7636 appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

#[test]
fn pkce_s256_matches_the_rfc_example_only() {
    assert!(is_challenge(CHALLENGE));
    assert!(pkce_matches(VERIFIER, CHALLENGE));
    assert!(!pkce_matches(
        VERIFIER,
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"
    ));
    // The plain method (verifier == challenge) is not accepted.
    assert!(!pkce_matches(CHALLENGE, CHALLENGE));
    // Too short, or with characters outside the unreserved set.
    assert!(!pkce_matches("short", CHALLENGE));
    assert!(!pkce_matches(&format!("{VERIFIER}+"), CHALLENGE));
    // Padded or standard-alphabet challenges are refused at /authorize.
    assert!(!is_challenge(&format!("{CHALLENGE}=")));
    assert!(!is_challenge("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw/cM"));
}

#[test]
fn basic_credentials_are_base64_then_form_decoded() {
    let header = format!("Basic {}", STANDARD.encode("my%20client:s3cr+t%3A1"));
    assert_eq!(
        parse_basic(&header),
        Some(("my client".to_owned(), "s3cr t:1".to_owned()))
    );
    let header = format!("basic {}", STANDARD.encode("id:pass:with:colons"));
    assert_eq!(
        parse_basic(&header),
        Some(("id".to_owned(), "pass:with:colons".to_owned()))
    );
    // Not validly form-encoded: taken as it is.
    let header = format!("Basic {}", STANDARD.encode("id:100%"));
    assert_eq!(parse_basic(&header), Some(("id".into(), "100%".into())));
    assert_eq!(parse_basic("Bearer abc"), None);
    assert_eq!(parse_basic("Basic !!!"), None);
    assert_eq!(
        parse_basic(&format!("Basic {}", STANDARD.encode("nocolon"))),
        None
    );
}

#[test]
fn scopes_are_split_deduplicated_and_checked() {
    assert_eq!(
        parse_scopes(" mcp:tools  mcp:admin mcp:tools "),
        Some(vec!["mcp:tools".to_owned(), "mcp:admin".to_owned()])
    );
    assert_eq!(parse_scopes(""), Some(vec![]));
    assert_eq!(parse_scopes(r#"a"b"#), None);
    assert_eq!(parse_scopes(r"a\b"), None);
}

#[test]
fn only_http_loopback_redirects_are_accepted() {
    assert!(loopback("http://127.0.0.1:8765/callback").is_some());
    assert!(loopback("http://localhost/cb?x=1").is_some());
    assert!(loopback("http://[::1]:9/cb").is_some());
    assert!(loopback("https://127.0.0.1/cb").is_none());
    assert!(loopback("http://example.com/cb").is_none());
    assert!(loopback("http://127.0.0.1.example.com/cb").is_none());
    assert!(loopback("http://user@127.0.0.1/cb").is_none());
    assert!(loopback("http://127.0.0.1/cb#frag").is_none());
    assert!(loopback("not a url").is_none());
}

#[test]
fn loopback_redirects_match_whatever_the_port() {
    let requested = loopback("http://127.0.0.1:5555/cb").unwrap();
    assert!(same_redirect("http://127.0.0.1/cb", &requested));
    assert!(same_redirect("http://127.0.0.1:1234/cb", &requested));
    assert!(!same_redirect("http://127.0.0.1/other", &requested));
    assert!(!same_redirect("http://localhost/cb", &requested));
}

#[test]
fn repeated_parameters_are_refused_and_empty_ones_ignored() {
    let p = params(b"a=1&b=&c=x%20y").unwrap();
    assert_eq!(p.get("a").map(String::as_str), Some("1"));
    assert_eq!(p.get("b"), None);
    assert_eq!(p.get("c").map(String::as_str), Some("x y"));
    assert!(params(b"a=1&a=2").is_err());
}

#[test]
fn tools_call_is_found_in_single_messages_and_batches() {
    assert!(calls_a_tool(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#
    ));
    assert!(calls_a_tool(
        br#"[{"method":"ping"},{"method":"tools/call"}]"#
    ));
    assert!(!calls_a_tool(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
    ));
    assert!(!calls_a_tool(b"not json"));
}

#[test]
fn client_credentials_debug_hides_the_secret() {
    let client: ClientCredentials = "ci:hunter2".parse().unwrap();
    assert_eq!(client.secret, "hunter2");
    assert!(!format!("{client:?}").contains("hunter2"));
    assert!("nocolon".parse::<ClientCredentials>().is_err());
    assert!(":secret".parse::<ClientCredentials>().is_err());
}

fn server(knobs: impl FnOnce(&mut OAuthKnobs)) -> OAuth {
    let mut k = OAuthKnobs {
        scopes: vec!["mcp:tools".to_owned()],
        clients: vec!["ci:s3cret".parse().unwrap()],
        registration: true,
        deny: false,
        refresh_invalid: false,
        token_ttl: Duration::from_secs(60),
        refreshed_token_ttl: None,
        hide_expiry: false,
        call_scope: None,
        authorize_endpoint: None,
        endpoints: Vec::new(),
        authorization_server: None,
        token_scope: None,
        migrate_to: None,
        dpop: None,
        iss: None,
        jwt_bearer: None,
    };
    knobs(&mut k);
    OAuth::new(k, "127.0.0.1:4000".parse().unwrap())
}

fn form_headers(basic: Option<&str>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    if let Some(credentials) = basic {
        let value = format!("Basic {}", STANDARD.encode(credentials));
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&value).unwrap(),
        );
    }
    headers
}

#[test]
fn granted_scopes_default_to_the_configured_ones() {
    let oauth = server(|_| {});
    let headers = form_headers(Some("ci:s3cret"));
    let answer = oauth
        .token(&headers, b"grant_type=client_credentials")
        .unwrap();
    assert_eq!(answer["scope"], "mcp:tools");
    assert!(answer.get("refresh_token").is_none());
    let answer = oauth
        .token(&headers, b"grant_type=client_credentials&scope=a+b+a")
        .unwrap();
    assert_eq!(answer["scope"], "a b");
    let err = oauth
        .token(&headers, b"grant_type=client_credentials&scope=a%22b")
        .unwrap_err();
    assert_eq!(err.error, "invalid_scope");
}

#[test]
fn clients_must_authenticate_the_way_they_registered() {
    let oauth = server(|_| {});
    let basic = oauth
        .register(br#"{"redirect_uris":["http://127.0.0.1/cb"]}"#)
        .unwrap();
    let id = basic["client_id"].as_str().unwrap();
    let secret = basic["client_secret"].as_str().unwrap();
    assert_eq!(basic["token_endpoint_auth_method"], "client_secret_basic");

    let store = oauth.lock();
    let form = |pairs: &[(&str, &str)]| -> Params {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    };
    let with_basic = form_headers(Some(&format!("{id}:{secret}")));
    assert!(authenticate(&store, &with_basic, &form(&[])).is_ok());
    let wrong = form_headers(Some(&format!("{id}:nope")));
    assert_eq!(
        authenticate(&store, &wrong, &form(&[])).unwrap_err().error,
        "invalid_client"
    );
    let plain = form_headers(None);
    let posted = form(&[("client_id", id), ("client_secret", secret)]);
    assert_eq!(
        authenticate(&store, &plain, &posted).unwrap_err().status,
        StatusCode::UNAUTHORIZED
    );
    // Pre-registered clients may use either method.
    assert!(authenticate(&store, &form_headers(Some("ci:s3cret")), &form(&[])).is_ok());
    let posted = form(&[("client_id", "ci"), ("client_secret", "s3cret")]);
    assert!(authenticate(&store, &plain, &posted).is_ok());
    let public = form(&[("client_id", "ci")]);
    assert!(authenticate(&store, &plain, &public).is_err());
    assert!(authenticate(&store, &plain, &form(&[("client_id", "who")])).is_err());
}

#[test]
fn public_registrations_get_no_secret_and_bad_redirects_are_refused() {
    let oauth = server(|_| {});
    let public = oauth
            .register(
                br#"{"redirect_uris":["http://localhost:1/cb"],"token_endpoint_auth_method":"none","client_name":"t"}"#,
            )
            .unwrap();
    assert!(public.get("client_secret").is_none());
    assert_eq!(public["client_name"], "t");
    let err = oauth
        .register(br#"{"redirect_uris":["https://example.com/cb"]}"#)
        .unwrap_err();
    assert_eq!(err.error, "invalid_redirect_uri");
    let err = oauth.register(b"[]").unwrap_err();
    assert_eq!(err.error, "invalid_client_metadata");
    assert_eq!(oauth.stats.json()["registrations"], 1);
}

#[test]
fn the_origin_follows_a_sane_host_header() {
    let oauth = server(|_| {});
    let mut headers = HeaderMap::new();
    assert_eq!(oauth.origin(&headers), "http://127.0.0.1:4000");
    headers.insert(header::HOST, HeaderValue::from_static("localhost:4000"));
    assert_eq!(oauth.origin(&headers), "http://localhost:4000");
    headers.insert(header::HOST, HeaderValue::from_static("evil\"host"));
    assert_eq!(oauth.origin(&headers), "http://127.0.0.1:4000");
    assert!(oauth.is_resource("http://localhost:4000/mcp"));
    assert!(!oauth.is_resource("http://127.0.0.1:4000/"));
    assert!(!oauth.is_resource("http://127.0.0.1:4001/mcp"));
}
