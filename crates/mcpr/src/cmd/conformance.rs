//! `mcpr conformance URL` (hidden): the client under test of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance client --command "mcpr conformance"`).
//!
//! The suite starts a test server, runs this command with its URL and names the scenario in
//! `MCP_CONFORMANCE_SCENARIO`; it scores the client from what it sees on the wire, and wants
//! exit status 0 when the client believes it succeeded. Everything goes through the same
//! `McpClient` that every other command uses: this file only decides what to call.

use std::sync::Arc;

use mcp_runtime::auth;
use mcp_runtime::client::{
    CallOptions, ConnectOptions, ElicitationHandler, ElicitationResponse, McpClient, SkillFiles,
    ToolOutput,
};
use mcp_runtime::config::server_from_json;
use serde_json::{Map, Value, json};

use crate::exit::{self, Failure, Outcome};

/// Arguments of `mcpr conformance`.
#[derive(Debug, clap::Args)]
pub(crate) struct ConformanceArgs {
    /// The test server's URL, as the suite passes it.
    pub url: String,
    /// The scenario to play.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO", value_name = "NAME")]
    pub scenario: String,
}

/// The client scenarios this command plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// Handshake (then list tools, which the test server answers with none).
    Initialize,
    /// Call `add_numbers {a, b}`.
    ToolsCall,
    /// Declare elicitation and accept the server's request with the schema's defaults
    /// (SEP-1034).
    ElicitationDefaults,
    /// Call a tool whose SSE response stream the server closes early: the result must arrive
    /// after reconnecting with GET + `Last-Event-ID`, no sooner than the server's `retry:`.
    SseRetry,
    /// List tools whose input schema `$ref`s a network URI, which must not be fetched.
    SchemaRefNoDeref,
    /// List tools, then pass one tool's input schema back verbatim to an echo tool: the suite
    /// checks that every JSON Schema 2020-12 keyword survived.
    SchemaPreservation,
    /// Use every feature the server offers: list and call its tools (with the arguments the
    /// suite names, else placeholders for the required ones), list and read its resources,
    /// list and get its prompts. What the suite checks is on the wire (headers, `_meta`,
    /// multi round-trip requests, which tools a client keeps).
    Exercise,
    /// Any `auth/*` scenario: an OAuth-protected server. The client logs in headlessly when
    /// challenged (the authorization endpoint approves by itself), lists the tools and calls
    /// each one; what it proves is in the OAuth traffic the suite records.
    Auth,
    /// List the server's skills, as `mcpr skills` does: no skill file is read.
    SkillsList,
    /// Load every listed skill and read its files, as a host that uses them does: a file that
    /// does not match the listing is refused, and the rest of that skill is left unread.
    SkillsLoad,
}

impl Scenario {
    const ALL: [(&'static str, Scenario); 15] = [
        ("initialize", Scenario::Initialize),
        ("tools_call", Scenario::ToolsCall),
        (
            "elicitation-sep1034-client-defaults",
            Scenario::ElicitationDefaults,
        ),
        ("sse-retry", Scenario::SseRetry),
        ("json-schema-ref-no-deref", Scenario::SchemaRefNoDeref),
        (
            "json-schema-2020-12-preservation",
            Scenario::SchemaPreservation,
        ),
        ("request-metadata", Scenario::Exercise),
        ("sep-2322-client-request-state", Scenario::Exercise),
        ("http-standard-headers", Scenario::Exercise),
        ("http-custom-headers", Scenario::Exercise),
        ("http-invalid-tool-headers", Scenario::Exercise),
        ("sep-2640-client-no-prefetch", Scenario::SkillsList),
        ("sep-2640-client-verify-digest", Scenario::SkillsLoad),
        ("sep-2640-client-verify-size", Scenario::SkillsLoad),
        ("sep-2640-client-verify-frontmatter", Scenario::SkillsLoad),
    ];

    fn parse(name: &str) -> Option<Scenario> {
        if name.starts_with("auth/") {
            return Some(Scenario::Auth);
        }
        Self::ALL
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, scenario)| *scenario)
    }
}

/// The tool whose input schema carries the JSON Schema 2020-12 keywords, and the tool that
/// echoes a schema back to the suite.
const SCHEMA_TOOL: &str = "json_schema_2020_12_tool";
const SCHEMA_ECHO: &str = "json_schema_echo";

/// What the suite passes in `MCP_CONFORMANCE_CONTEXT` for the scenarios that need
/// credentials arranged out of band.
#[derive(Debug, Default, serde::Deserialize)]
struct Context {
    client_id: Option<String>,
    client_secret: Option<String>,
    /// `private_key_jwt` (client-credentials-jwt).
    private_key_pem: Option<String>,
    signing_algorithm: Option<String>,
    /// Enterprise-managed authorization (cross-app access).
    idp_client_id: Option<String>,
    idp_id_token: Option<String>,
    idp_issuer: Option<String>,
    idp_token_endpoint: Option<String>,
    /// Workload identity federation: the workload's JWT from its identity provider.
    valid_jwt: Option<String>,
    /// Tool calls the scenario wants made, with their arguments.
    #[serde(default, rename = "toolCalls")]
    tool_calls: Vec<ToolCall>,
}

/// One entry of the context's `toolCalls`.
#[derive(Debug, serde::Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// The client ID metadata document URL the suite's authorization servers expect (SEP-991);
/// used only where the server advertises support.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The server config a person would write for the scenario's server.
fn auth_config(scenario: &str, url: &str, context: &Context) -> Value {
    let mut oauth = Map::new();
    oauth.insert("clientMetadataUrl".into(), json!(CLIENT_METADATA_URL));
    if let Some(id) = &context.client_id {
        oauth.insert("clientId".into(), json!(id));
    }
    if let Some(secret) = &context.client_secret {
        oauth.insert("clientSecret".into(), json!(secret));
    }
    if let Some(pem) = &context.private_key_pem {
        oauth.insert("privateKey".into(), json!(pem));
        oauth.insert(
            "signingAlgorithm".into(),
            json!(context.signing_algorithm.as_deref().unwrap_or("ES256")),
        );
    }
    // Machine-to-machine servers are configured so, as their users would.
    if scenario.starts_with("auth/client-credentials") {
        oauth.insert("grantType".into(), json!("client_credentials"));
    }
    json!({"type": "http", "url": url, "oauth": oauth})
}

pub(crate) async fn run(args: ConformanceArgs) -> Outcome {
    let scenario = Scenario::parse(&args.scenario).ok_or_else(|| {
        let known: Vec<&str> = Scenario::ALL.iter().map(|(name, _)| *name).collect();
        Failure::usage(format!(
            "unsupported conformance scenario `{}` (supported: {}, auth/*)",
            args.scenario,
            known.join(", ")
        ))
    })?;
    let context: Context = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| Failure::usage(format!("MCP_CONFORMANCE_CONTEXT: {e}")))?,
        Err(_) => Context::default(),
    };
    let mut entry = if scenario == Scenario::Auth {
        auth_config(&args.scenario, &args.url, &context)
    } else {
        json!({"type": "http", "url": args.url})
    };
    // Enterprise-managed authorization: the token comes from the identity provider, not a
    // login, and is sent as a configured header.
    if let (Some(id_token), Some(issuer), Some(endpoint), Some(idp_client_id), Some(client_id)) = (
        &context.idp_id_token,
        &context.idp_issuer,
        &context.idp_token_endpoint,
        &context.idp_client_id,
        &context.client_id,
    ) {
        let login = auth::EnterpriseLogin {
            idp_issuer: issuer.clone(),
            idp_token_endpoint: endpoint.clone(),
            idp_client_id: idp_client_id.clone(),
            id_token: id_token.clone(),
            client_id: client_id.clone(),
            client_secret: context.client_secret.clone(),
        };
        let token = auth::enterprise_access_token("conformance", &args.url, &login)
            .await
            .map_err(Failure::connection)?;
        entry = json!({"type": "http", "url": args.url, "headers": {"Authorization": format!("Bearer {token}")}});
    }
    // Workload identity federation: the workload's JWT is exchanged for the token (JWT-bearer
    // grant), which is sent as a configured header.
    if let (Some(assertion), Some(client_id)) = (&context.valid_jwt, &context.client_id) {
        let login = auth::WorkloadLogin {
            client_id: client_id.clone(),
            assertion: assertion.clone(),
            scopes: Vec::new(),
        };
        let token = auth::workload_access_token("conformance", &args.url, &login)
            .await
            .map_err(Failure::connection)?;
        entry = json!({"type": "http", "url": args.url, "headers": {"Authorization": format!("Bearer {token}")}});
    }
    let config = server_from_json("conformance", &entry).map_err(Failure::usage)?;
    // Credentials live in a store of this run only; the login is headless.
    let store_dir =
        RunDir(std::env::temp_dir().join(format!("mcpr-conformance-{}", std::process::id())));
    let store = auth::CredentialStore::new(store_dir.0.join(auth::CREDENTIALS_FILE));
    let options = ConnectOptions::default()
        .with_elicitation(
            matches!(scenario, Scenario::ElicitationDefaults | Scenario::Exercise)
                .then(accept_defaults),
        )
        .with_auth(Some(auth::AuthContext::interactive(
            store,
            Arc::new(auth::Headless),
        )));
    let client =
        crate::shutdown::until_signal(McpClient::connect("conformance", &config, &options))
            .await?
            .map_err(Failure::connection)?;
    eprintln!(
        "connected over {} to {} {} (protocol {})",
        client.transport(),
        client.info().name,
        client.info().version,
        client.info().protocol_version
    );
    let outcome = match scenario {
        Scenario::Exercise => {
            crate::shutdown::until_signal(exercise(&client, &context.tool_calls)).await
        }
        Scenario::SkillsList | Scenario::SkillsLoad => {
            crate::shutdown::until_signal(skills(&client, scenario == Scenario::SkillsLoad)).await
        }
        _ => crate::shutdown::until_signal(play(scenario, &client)).await,
    };
    client.close().await;
    outcome?
}

/// A directory of this run only, removed however the run ends.
struct RunDir(std::path::PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Accept every elicitation with the defaults its schema declares.
fn accept_defaults() -> ElicitationHandler {
    Arc::new(|request| {
        Box::pin(async move {
            let defaults = request.defaults();
            eprintln!(
                "elicitation from {}: {:?}; accepting with {}",
                request.server,
                request.message,
                Value::Object(defaults.clone())
            );
            ElicitationResponse::accept(defaults)
        })
    })
}

/// List the server's skills; with `load`, load each one and read its other files. A skill
/// that fails verification is reported and makes the run fail.
async fn skills(client: &McpClient, load: bool) -> Outcome {
    let skills = client.list_skills().await.map_err(Failure::connection)?;
    for skill in &skills {
        eprintln!(
            "skill {}: {} ({})",
            skill.name(),
            skill.description(),
            skill.uri
        );
    }
    if !load {
        return Ok(exit::OK);
    }
    let mut failed = None;
    for skill in &skills {
        match client.load_skill(skill).await {
            Ok(_) => {
                if let SkillFiles::Listed(files) = &skill.resources {
                    for file in files.iter().filter(|f| f.uri != skill.uri) {
                        if let Err(e) = client.read_skill_file(skill, &file.uri).await {
                            eprintln!("{e}");
                            failed = Some(e);
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                eprintln!("{e}");
                failed = Some(e);
            }
        }
    }
    match failed {
        Some(e) => Err(Failure::connection(e)),
        None => Ok(exit::OK),
    }
}

async fn play(scenario: Scenario, client: &McpClient) -> Outcome {
    let tools = client.list_tools().await.map_err(Failure::connection)?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    eprintln!("tools: {}", names.join(", "));
    let (tool, arguments) = match scenario {
        Scenario::Initialize
        | Scenario::SchemaRefNoDeref
        | Scenario::Exercise
        | Scenario::SkillsList
        | Scenario::SkillsLoad => {
            return Ok(exit::OK);
        }
        Scenario::SchemaPreservation => {
            let focal = tools
                .iter()
                .find(|t| t.name == SCHEMA_TOOL)
                .ok_or_else(|| {
                    Failure::connection(format!("the server does not offer `{SCHEMA_TOOL}`"))
                })?;
            (SCHEMA_ECHO, json!({"schema": focal.input_schema}))
        }
        Scenario::Auth => {
            let mut code = exit::OK;
            for tool in &names {
                let output = call(client, tool, json!({})).await?;
                eprintln!("{tool}: {}", output.text());
                if output.is_error {
                    code = exit::TOOL_ERROR;
                }
            }
            return Ok(code);
        }
        Scenario::ToolsCall => ("add_numbers", json!({"a": 5, "b": 3})),
        Scenario::ElicitationDefaults => ("test_client_elicitation_defaults", json!({})),
        Scenario::SseRetry => ("test_reconnection", json!({})),
    };
    if !names.contains(&tool) {
        return Err(Failure::connection(format!(
            "the server does not offer `{tool}`"
        )));
    }
    let output = call(client, tool, arguments).await?;
    eprintln!("{tool}: {}", output.text());
    Ok(if output.is_error {
        exit::TOOL_ERROR
    } else {
        exit::OK
    })
}

/// [`Scenario::Exercise`]: every tool, resource and prompt the server offers, once. A
/// failure of one is reported and the rest still run; the exit status says whether all went
/// through.
async fn exercise(client: &McpClient, wanted: &[ToolCall]) -> Outcome {
    let mut code = exit::OK;
    let tools = client.list_tools().await.map_err(Failure::connection)?;
    for tool in &tools {
        let arguments = match wanted.iter().find(|c| c.name == tool.name) {
            Some(call) => call.arguments.clone(),
            None => placeholders(&tool.input_schema.to_value()),
        };
        match call(client, &tool.name, Value::Object(arguments)).await {
            Ok(output) if !output.is_error => eprintln!("{}: {}", tool.name, output.text()),
            Ok(output) => {
                eprintln!("{}: error: {}", tool.name, output.text());
                code = exit::TOOL_ERROR;
            }
            Err(e) => {
                eprintln!("{}: {e:?}", tool.name);
                code = exit::TOOL_ERROR;
            }
        }
    }
    // The suite's calls the server did not list are made too: they are what it checks.
    for wanted in wanted
        .iter()
        .filter(|c| !tools.iter().any(|t| t.name == c.name))
    {
        if let Err(e) = call(
            client,
            &wanted.name,
            Value::Object(wanted.arguments.clone()),
        )
        .await
        {
            eprintln!("{}: {e:?}", wanted.name);
            code = exit::TOOL_ERROR;
        }
    }
    // A server without resources or prompts answers their lists with an error: nothing to use.
    if let Ok(resources) = client.list_resources().await {
        for resource in resources {
            if let Err(e) = client.read_resource(&resource.uri).await {
                eprintln!("{}: {e}", resource.uri);
                code = exit::TOOL_ERROR;
            }
        }
    }
    if let Ok(prompts) = client.list_prompts().await {
        for prompt in prompts {
            if let Err(e) = client.get_prompt(&prompt.name, None).await {
                eprintln!("{}: {e}", prompt.name);
                code = exit::TOOL_ERROR;
            }
        }
    }
    Ok(code)
}

/// Arguments that satisfy the required properties of `schema` by type (a placeholder of each).
fn placeholders(schema: &Value) -> Map<String, Value> {
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    required
        .iter()
        .filter_map(Value::as_str)
        .map(|name| {
            let value = match schema["properties"][name]["type"].as_str() {
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(true),
                Some("object") => json!({}),
                Some("array") => json!([]),
                Some("null") => Value::Null,
                _ => json!("x"),
            };
            (name.to_owned(), value)
        })
        .collect()
}

async fn call(client: &McpClient, tool: &str, arguments: Value) -> Result<ToolOutput, Failure> {
    let arguments: Option<Map<String, Value>> = arguments.as_object().cloned();
    client
        .call_tool(tool, arguments, CallOptions::default())
        .await
        .map_err(Failure::connection)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_are_the_suites() {
        assert_eq!(Scenario::parse("sse-retry"), Some(Scenario::SseRetry));
        assert_eq!(
            Scenario::parse("elicitation-sep1034-client-defaults"),
            Some(Scenario::ElicitationDefaults)
        );
        assert_eq!(Scenario::parse("auth/basic-cimd"), Some(Scenario::Auth));
        assert_eq!(Scenario::parse("unknown"), None);
        assert_eq!(
            Scenario::parse("http-custom-headers"),
            Some(Scenario::Exercise)
        );
    }

    #[test]
    fn placeholders_fill_the_required_properties_by_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "region": {"type": "string"},
                "count": {"type": "integer"},
                "flag": {"type": "boolean"},
                "optional": {"type": "string"}
            },
            "required": ["region", "count", "flag"]
        });
        assert_eq!(
            Value::Object(placeholders(&schema)),
            json!({"region": "x", "count": 1, "flag": true})
        );
        assert!(placeholders(&json!({"type": "object"})).is_empty());
    }
}
