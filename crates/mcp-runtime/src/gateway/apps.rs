//! MCP Apps (`io.modelcontextprotocol/ui`) through the gateway: every backend's `ui://` URIs
//! namespaced by the server they come from, so that two servers may both serve
//! `ui://dashboard/app.html` and each tool still opens its own server's app.
//!
//! The rule, applied to tool `_meta` (`ui.resourceUri`, and the earlier drafts' flat
//! `ui/resourceUri`) and to resource listings:
//!
//! ```text
//! ui://<rest>   of server S   is presented as   ui://mcpr/<S percent-encoded>/<rest>
//! ```
//!
//! It is reversible (the server's name is percent-encoded, so it never holds a `/`; `<rest>` is
//! kept byte for byte) and depends on nothing but the server's configured name and the URI, so
//! the presented URI is the same after a restart. Every `ui://` URI a backend sends is
//! rewritten, one that already looks like a presented URI too: a server cannot offer a URI that
//! the gateway would read from another server. The scheme is matched regardless of case, as URI
//! schemes are. A `resources/read` of a presented URI goes to the server it names, for the
//! original URI, and only when the view offers `<server>/<original URI>`.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use serde_json::{Map, Value};

use crate::client::{ToolDefinition, UI_META_KEY, UI_RESOURCE_URI_LEGACY_KEY};
use crate::tools::McpTool;

/// The scheme of MCP Apps' UI resources, with its `//`.
const UI_SCHEME: &str = "ui://";

/// What every presented URI starts with, after [`UI_SCHEME`].
const NAMESPACE: &str = "mcpr/";

/// Bytes of a server's name written as they are; every other byte is percent-encoded.
const NAME_KEPT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// What follows `ui://` in `uri`, when its scheme is `ui` (in any case).
fn ui_rest(uri: &str) -> Option<&str> {
    let scheme = uri.get(..UI_SCHEME.len())?;
    scheme
        .eq_ignore_ascii_case(UI_SCHEME)
        .then(|| &uri[UI_SCHEME.len()..])
}

/// Whether `uri` is a UI resource (`ui://`, in any case).
pub(crate) fn is_ui(uri: &str) -> bool {
    ui_rest(uri).is_some()
}

/// The URI the gateway presents for `server`'s `uri`; `None` when `uri` is not a `ui://` URI
/// (those keep their URI).
pub(crate) fn presented(server: &str, uri: &str) -> Option<String> {
    let rest = ui_rest(uri)?;
    let name = utf8_percent_encode(server, NAME_KEPT);
    Some(format!("{UI_SCHEME}{NAMESPACE}{name}/{rest}"))
}

/// The server and original URI behind a presented URI; `None` for a URI the gateway did not
/// present (any other `ui://` URI is not one it offers).
pub(crate) fn original(presented: &str) -> Option<(String, String)> {
    let rest = ui_rest(presented)?;
    let namespaced = rest
        .get(..NAMESPACE.len())
        .filter(|prefix| *prefix == NAMESPACE)
        .map(|_| &rest[NAMESPACE.len()..])?;
    let (name, original) = namespaced.split_once('/')?;
    let server = percent_decode_str(name).decode_utf8().ok()?;
    if server.is_empty() {
        return None;
    }
    Some((server.into_owned(), format!("{UI_SCHEME}{original}")))
}

/// `meta` (a tool's `_meta`) with its UI resource URIs presented for `server`; every other key
/// is kept as sent.
pub(crate) fn rewrite_tool_meta(server: &str, meta: &mut Map<String, Value>) {
    let rewrite = |slot: Option<&mut Value>| {
        if let Some(Value::String(uri)) = slot
            && let Some(shown) = presented(server, uri)
        {
            *uri = shown;
        }
    };
    rewrite(
        meta.get_mut(UI_META_KEY)
            .and_then(Value::as_object_mut)
            .and_then(|ui| ui.get_mut("resourceUri")),
    );
    rewrite(meta.get_mut(UI_RESOURCE_URI_LEGACY_KEY));
}

/// `tool` as a client of the gateway sees it: its app's URI presented (see
/// [`rewrite_tool_meta`]); a tool without an app is returned as it is, sharing its definition.
pub(crate) fn presented_tool(tool: McpTool) -> McpTool {
    let Some(Value::Object(meta)) = tool.definition.meta() else {
        return tool;
    };
    if tool.definition.ui_resource_uri().is_none() {
        return tool;
    }
    let mut meta = meta.clone();
    rewrite_tool_meta(&tool.server, &mut meta);
    let mut definition = ToolDefinition::clone(&tool.definition);
    definition.extra.insert("_meta".into(), Value::Object(meta));
    McpTool {
        definition: definition.into(),
        ..tool
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_presented_uri_gives_back_its_server_and_uri() {
        for (server, uri) in [
            ("weather", "ui://weather/app.html"),
            ("my server/α", "ui://x/a%20b?q=1#f"),
            ("b", "ui://mcpr/a/widgets/app.html"),
            ("e", "ui:///empty-host"),
        ] {
            let shown = presented(server, uri).unwrap();
            assert!(shown.starts_with("ui://mcpr/"), "{shown}");
            assert_eq!(
                original(&shown),
                Some((server.to_owned(), uri.to_owned())),
                "{shown}"
            );
        }
    }

    #[test]
    fn a_lookalike_is_namespaced_again_and_names_its_own_server() {
        let b_app = presented("b", "ui://widgets/app.html").unwrap();
        let lookalike = presented("a", &b_app).unwrap();
        assert_ne!(lookalike, b_app);
        assert_eq!(original(&lookalike).unwrap().0, "a");
        let upper = presented("a", "UI://mcpr/b/widgets/app.html").unwrap();
        assert_eq!(original(&upper).unwrap().0, "a");
    }

    #[test]
    fn other_uris_are_neither_presented_nor_read_back() {
        assert_eq!(presented("a", "file:///x"), None);
        assert_eq!(original("ui://widgets/app.html"), None);
        assert_eq!(original("ui://mcpr//app.html"), None);
        assert_eq!(original("ui://mcpr/%FF/app.html"), None);
        assert_eq!(original("file://mcpr/a/x"), None);
    }

    #[test]
    fn tool_meta_keeps_its_other_keys() {
        let mut meta = json!({
            "ui": {"resourceUri": "ui://w/app.html", "visibility": ["model", "app"]},
            "ui/resourceUri": "ui://w/app.html",
            "anthropic/alwaysLoad": true
        });
        rewrite_tool_meta("s", meta.as_object_mut().unwrap());
        assert_eq!(
            meta,
            json!({
                "ui": {"resourceUri": "ui://mcpr/s/w/app.html", "visibility": ["model", "app"]},
                "ui/resourceUri": "ui://mcpr/s/w/app.html",
                "anthropic/alwaysLoad": true
            })
        );
    }
}
