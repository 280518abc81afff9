//! `mcpr resource SERVER URI`, `mcpr prompt SERVER NAME [key=value...]` and
//! `mcpr skill SERVER NAME`: read one resource, get one prompt filled with its arguments, or
//! load one skill, from one server, and print it. Without the URI or the name, they list what
//! the server offers (for resources, its resource templates too).

use mcp_runtime::client::McpClient;
use serde_json::{Map, Value, json};

use crate::advice::Advise as _;
use crate::connect::OneShot;
use crate::exit::{self, Failure, Outcome};
use crate::flags::GlobalArgs;
use crate::inline::{INLINE_NAME, InlineArgs};
use crate::term;

/// Arguments of `mcpr resource`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mcpr resource everything demo://resource/static/document/architecture.md\n  \
mcpr resource demo://resource/static/document/architecture.md -- npx -y @modelcontextprotocol/server-everything"
)]
pub(crate) struct ResourceArgs {
    /// `SERVER URI`, or `URI` with a server given inline; without the URI, the server's
    /// resources and resource templates are listed.
    #[arg(num_args = 0..=2, value_name = "SERVER URI", add = clap_complete::engine::ArgValueCompleter::new(crate::complete::server_names))]
    pub target: Vec<String>,
    /// Print the result as JSON, as the server sent it.
    #[arg(long, conflicts_with = "output")]
    pub json: bool,
    /// Save the resource's content to FILE, byte for byte (text as sent, a blob decoded),
    /// instead of printing it: an MCP App's `ui://` HTML, an image.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: InlineArgs,
}

/// Arguments of `mcpr prompt`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  mcpr prompt everything simple-prompt\n  mcpr prompt everything args-prompt city=Paris state=France"
)]
pub(crate) struct PromptArgs {
    /// `SERVER NAME [key=value...]`, or `NAME [key=value...]` with a server given inline;
    /// without the name, the server's prompts are listed.
    #[arg(num_args = 0.., value_name = "SERVER NAME [ARGS]", add = clap_complete::engine::ArgValueCompleter::new(crate::complete::server_names))]
    pub target: Vec<String>,
    /// Print the result as JSON, as the server sent it.
    #[arg(long)]
    pub json: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: InlineArgs,
}

/// Arguments of `mcpr skill`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  mcpr skill docs\n  mcpr skill docs pdf-processing")]
pub(crate) struct SkillArgs {
    /// `SERVER [NAME]`, or `[NAME]` with a server given inline. Without the name, the server's
    /// skills are listed and none of their files is read; with it, the skill's SKILL.md is read,
    /// checked against the server's listing (size, digest, front matter) and printed.
    #[arg(num_args = 0..=2, value_name = "SERVER NAME")]
    pub target: Vec<String>,
    /// Print the listing (or the skill's entry and SKILL.md) as JSON.
    #[arg(long)]
    pub json: bool,
    /// A server to try instead of the configured ones.
    #[command(flatten)]
    pub inline: InlineArgs,
}

/// `mcpr skill`.
pub(crate) async fn skill(global: &GlobalArgs, args: SkillArgs) -> Outcome {
    let (server, rest) = split_server(&args.target, &args.inline)?;
    let name = rest.first().cloned();
    let wanted = name.clone();
    let shown = server.clone();
    let result = with_server(global, &args.inline, &server, |client| async move {
        let skills = client.list_skills().await.map_err(|e| e.explained())?;
        let Some(name) = wanted else {
            return serde_json::to_value(&skills).map_err(|e| e.to_string());
        };
        let entry = skills.iter().find(|s| s.name() == name).ok_or_else(|| {
            let names: Vec<&str> = skills.iter().map(|s| s.name()).collect();
            format!(
                "`{shown}` offers no skill named `{name}` (it offers: {})",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            )
        })?;
        let loaded = client.load_skill(entry).await.map_err(|e| e.explained())?;
        Ok(json!({"skill": entry, "manifest": loaded.manifest}))
    })
    .await?;
    if args.json {
        print_json(&result)?;
        return Ok(exit::OK);
    }
    if name.is_some() {
        let manifest = result.get("manifest").and_then(Value::as_str).unwrap_or("");
        println!("{}", term::text(manifest));
        return Ok(exit::OK);
    }
    let skills = result.as_array().cloned().unwrap_or_default();
    if skills.is_empty() {
        eprintln!("`{}` offers no skills", term::line(&server));
    }
    for skill in &skills {
        let field = |key: &str| {
            skill
                .pointer(&format!("/frontmatter/{key}"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        let uri = skill.get("uri").and_then(Value::as_str).unwrap_or("");
        println!(
            "{}  {}  ({})",
            term::line(&field("name")),
            term::line(field("description").lines().next().unwrap_or("")),
            term::line(uri)
        );
    }
    Ok(exit::OK)
}

/// `mcpr resource`.
pub(crate) async fn resource(global: &GlobalArgs, args: ResourceArgs) -> Outcome {
    let (server, rest) = split_server(&args.target, &args.inline)?;
    let [uri] = rest else {
        return list(global, &args.inline, &server, args.json, Listed::Resources).await;
    };
    let result = with_server(global, &args.inline, &server, |client| async move {
        client.read_resource(uri).await.map_err(|e| e.to_string())
    })
    .await?;
    if args.json {
        print_json(&result)?;
        return Ok(exit::OK);
    }
    if let Some(path) = &args.output {
        save(&result, uri, path)?;
        return Ok(exit::OK);
    }
    let contents = result.get("contents").and_then(Value::as_array);
    for content in contents.into_iter().flatten() {
        let uri = content.get("uri").and_then(Value::as_str).unwrap_or("?");
        let mime = content.get("mimeType").and_then(Value::as_str);
        match (
            content.get("text").and_then(Value::as_str),
            content.get("blob"),
        ) {
            (Some(text), _) => println!("{}", term::text(text)),
            (None, Some(Value::String(blob))) => println!(
                "[{} {}, {} bytes base64]",
                term::line(uri),
                term::line(mime.unwrap_or("binary")),
                blob.len()
            ),
            _ => println!("[{}: no content]", term::line(uri)),
        }
    }
    Ok(exit::OK)
}

/// Write the one content of a read of `uri` to `path`: its text as sent, or its blob decoded.
fn save(result: &Value, uri: &str, path: &std::path::Path) -> Result<(), Failure> {
    use base64::Engine as _;
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let [content] = contents else {
        return Err(Failure::usage(format!(
            "{} has {} contents; --output saves a resource with exactly one (see --json)",
            term::line(uri),
            contents.len()
        )));
    };
    let bytes = match (content.get("text"), content.get("blob")) {
        (Some(Value::String(text)), _) => text.as_bytes().to_vec(),
        (None, Some(Value::String(blob))) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|e| {
                Failure::usage(format!(
                    "{}: the server's blob is not valid base64: {e}",
                    term::line(uri)
                ))
            })?,
        _ => {
            return Err(Failure::usage(format!(
                "{}: the content has neither text nor blob",
                term::line(uri)
            )));
        }
    };
    std::fs::write(path, bytes)
        .map_err(|e| Failure::usage(format!("cannot write {}: {e}", path.display())))
}

/// `mcpr prompt`.
pub(crate) async fn prompt(global: &GlobalArgs, args: PromptArgs) -> Outcome {
    let (server, rest) = split_server(&args.target, &args.inline)?;
    let Some((name, words)) = rest.split_first() else {
        return list(global, &args.inline, &server, args.json, Listed::Prompts).await;
    };
    let result = with_server(global, &args.inline, &server, |client| async move {
        // The prompt's declared arguments type the `key=value` words (all strings).
        let prompts = client.list_prompts().await.map_err(|e| e.to_string())?;
        let schema = prompts.iter().find(|p| &p.name == name).map(|p| {
            let properties: Map<String, Value> = p
                .arguments
                .iter()
                .map(|a| {
                    let mut property = json!({"type": "string"});
                    if let Some(description) = &a.description {
                        property["description"] = json!(description);
                    }
                    (a.name.clone(), property)
                })
                .collect();
            let required: Vec<&str> = p
                .arguments
                .iter()
                .filter(|a| a.required)
                .map(|a| a.name.as_str())
                .collect();
            json!({"type": "object", "properties": properties, "required": required})
        });
        let arguments = if words.is_empty() {
            None
        } else {
            let parsed = crate::cmd::arguments::from_pairs(words, schema.as_ref());
            Some(parsed.map_err(|e| match &schema {
                Some(schema) => format!(
                    "{e}\nthe prompt's arguments:\n{}",
                    crate::cmd::arguments::parameter_lines(schema, "  ").join("\n")
                ),
                None => e,
            })?)
        };
        client
            .get_prompt(name, arguments)
            .await
            .map_err(|e| e.to_string())
    })
    .await?;
    if args.json {
        print_json(&result)?;
        return Ok(exit::OK);
    }
    if let Some(description) = result.get("description").and_then(Value::as_str) {
        println!("{}\n", term::text(description));
    }
    let messages = result.get("messages").and_then(Value::as_array);
    for message in messages.into_iter().flatten() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("?");
        let content = message.get("content").unwrap_or(&Value::Null);
        let text = match content.get("text").and_then(Value::as_str) {
            Some(text) => term::text(text).into_owned(),
            None => format!(
                "[{} content]",
                term::line(
                    content
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("other")
                )
            ),
        };
        println!("{}: {text}", term::line(role));
    }
    Ok(exit::OK)
}

/// What [`list`] lists.
#[derive(Clone, Copy)]
enum Listed {
    Resources,
    Prompts,
}

/// List the resources or prompts of `server`: one line each (`uri  name (mime): description`,
/// `name(required*, optional): description`), or JSON.
async fn list(
    global: &GlobalArgs,
    inline: &InlineArgs,
    server: &str,
    json: bool,
    listed: Listed,
) -> Outcome {
    let items = with_server(global, inline, server, |client| async move {
        let as_json = |value: Result<Value, serde_json::Error>| value.map_err(|e| e.to_string());
        match listed {
            Listed::Resources => {
                let items = client.list_resources().await.map_err(|e| e.to_string())?;
                let templates = client
                    .list_resource_templates()
                    .await
                    .map_err(|e| e.to_string())?;
                // Templates follow the resources in the same list, told apart by their
                // `uriTemplate` (a resource has a `uri`).
                let mut items = as_json(serde_json::to_value(items))?;
                let templates = as_json(serde_json::to_value(templates))?;
                if let (Value::Array(items), Value::Array(templates)) = (&mut items, templates) {
                    items.extend(templates);
                }
                Ok(items)
            }
            Listed::Prompts => {
                let items = client.list_prompts().await.map_err(|e| e.to_string())?;
                as_json(serde_json::to_value(items))
            }
        }
    })
    .await?;
    if json {
        print_json(&items)?;
        return Ok(exit::OK);
    }
    let items = items.as_array().cloned().unwrap_or_default();
    if items.is_empty() {
        let noun = match listed {
            Listed::Resources => "resources",
            Listed::Prompts => "prompts",
        };
        eprintln!("`{}` offers no {noun}", term::line(server));
    }
    let text = |item: &Value, key: &str| item.get(key).and_then(Value::as_str).map(str::to_owned);
    for item in &items {
        let mut line = match listed {
            Listed::Resources => {
                let template = text(item, "uriTemplate");
                let mut line = format!(
                    "{}  {}",
                    template
                        .clone()
                        .or_else(|| text(item, "uri"))
                        .unwrap_or_default(),
                    text(item, "name").unwrap_or_default()
                );
                if let Some(mime) = text(item, "mimeType") {
                    line.push_str(&format!(" ({mime})"));
                }
                if template.is_some() {
                    line.push_str(" [template]");
                }
                line
            }
            Listed::Prompts => {
                let arguments: Vec<String> = item
                    .get("arguments")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|a| {
                        let required = a.get("required").and_then(Value::as_bool) == Some(true);
                        format!(
                            "{}{}",
                            text(a, "name").unwrap_or_default(),
                            if required { "*" } else { "" }
                        )
                    })
                    .collect();
                format!(
                    "{}({})",
                    text(item, "name").unwrap_or_default(),
                    arguments.join(", ")
                )
            }
        };
        if let Some(description) = text(item, "description")
            .as_deref()
            .and_then(|d| d.lines().next())
            .filter(|d| !d.is_empty())
        {
            line.push_str(&format!(": {description}"));
        }
        println!("{}", term::line(&line));
    }
    Ok(exit::OK)
}

/// The server named first (or the inline one) and the words after it.
fn split_server<'a>(
    target: &'a [String],
    inline: &InlineArgs,
) -> Result<(String, &'a [String]), Failure> {
    if inline.is_set() {
        let rest = match target {
            [first, rest @ ..] if first == INLINE_NAME => rest,
            all => all,
        };
        return Ok((INLINE_NAME.to_owned(), rest));
    }
    match target {
        [server, rest @ ..] => Ok((server.clone(), rest)),
        [] => Err(Failure::usage(
            "which server? (see `mcpr list`, or give one inline after `--`)",
        )),
    }
}

/// Start `server` alone, run `work` on its connection, and shut it down.
async fn with_server<F, Fut>(
    global: &GlobalArgs,
    inline: &InlineArgs,
    server: &str,
    work: F,
) -> Result<Value, Failure>
where
    F: FnOnce(std::sync::Arc<McpClient>) -> Fut,
    Fut: std::future::Future<Output = Result<Value, String>>,
{
    let mut discovery = crate::inline::discover_some(global, inline)?;
    if !discovery.configs.contains_key(server) {
        return Err(crate::discovery::not_enabled(&discovery, server));
    }
    // One server, opened alone (no tool list) and stopped as every one-shot command does.
    let config = discovery
        .configs
        .swap_remove(server)
        .expect("checked above");
    let open = OneShot::open(discovery.cwd.clone(), server, &config);
    let servers = crate::shutdown::until_signal(open)
        .await?
        .map_err(|e| Failure::connection(e.explained()))?;
    let result = match servers.client() {
        Some(client) => work(client).await.map_err(Failure::usage),
        None => Err(Failure::connection(format!(
            "server `{server}`: not connected"
        ))),
    };
    servers.stop().await;
    result
}

fn print_json(value: &Value) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(Failure::internal)?;
    println!("{text}");
    Ok(())
}
