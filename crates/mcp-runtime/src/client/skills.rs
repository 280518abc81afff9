//! Skills a server offers (the `io.modelcontextprotocol/skills` extension): list them, and
//! load one only when the host decides to, verifying every file against its listing.
//!
//! A skill is a directory of files behind `skill://` resources, with a `SKILL.md` at its root
//! whose YAML front matter names and describes it. The server lists each skill with the
//! digest and size of its files; what is read later must match, or it is not used. Listing
//! reads no file: a skill's files are fetched only when the host loads it (no prefetch), and a
//! file that fails verification is an error, never content.

use base64::Engine as _;
use rmcp::model::{ClientRequest, CustomRequest, ServerResult};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest as _, Sha256};

use super::{ClientError, McpClient, SkillRejection};

/// The extension's identifier in `capabilities.extensions`.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// The manifest every skill has at its root.
const MANIFEST: &str = "SKILL.md";

/// Bounds on what a server may list: pages of `skills/list`, and the size of one file (the
/// extension's own ceiling for a whole skill is 16 MiB).
const MAX_PAGES: usize = 100;
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// One skill as the server lists it (`skills/list`, `skills/get`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillEntry {
    /// The skill's `SKILL.md` (`skill://<path>/SKILL.md`).
    pub uri: String,
    /// The front matter of its `SKILL.md`, as the server says it is (at least `name` and
    /// `description`).
    pub frontmatter: Map<String, Value>,
    /// Its files with their digests, or `"dynamic"` when the server cannot list them.
    pub resources: SkillFiles,
}

/// The files of a skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SkillFiles {
    /// Every file, with the digest and size a read must match.
    Listed(Vec<SkillFile>),
    /// The server generates the files; there is nothing to verify them against.
    Dynamic(String),
}

/// One file of a skill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkillFile {
    /// Where to read it (`resources/read`).
    pub uri: String,
    /// `sha256:` and 64 lowercase hex digits, over the file's bytes.
    pub digest: String,
    /// Its length in bytes.
    pub size: u64,
}

impl SkillEntry {
    /// The skill's name, from the listed front matter.
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// What the skill is for, from the listed front matter.
    pub fn description(&self) -> &str {
        self.frontmatter
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    fn listed(&self, uri: &str) -> Option<&SkillFile> {
        match &self.resources {
            SkillFiles::Listed(files) => files.iter().find(|file| file.uri == uri),
            SkillFiles::Dynamic(_) => None,
        }
    }
}

/// A skill whose `SKILL.md` was read and matched its listing.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSkill {
    /// The listing it was verified against.
    pub entry: SkillEntry,
    /// The whole `SKILL.md`, front matter included.
    pub manifest: String,
}

impl McpClient {
    /// Whether the server offers skills (declares the skills extension).
    pub fn offers_skills(&self) -> bool {
        self.peer.peer_info().is_some_and(|info| {
            info.capabilities
                .extensions
                .as_ref()
                .is_some_and(|extensions| extensions.contains_key(SKILLS_EXTENSION))
        })
    }

    /// Every skill the server lists (`skills/list`, all pages). Reads no skill file. A server
    /// that does not offer skills has none, and is not asked.
    pub async fn list_skills(&self) -> Result<Vec<SkillEntry>, ClientError> {
        if !self.offers_skills() {
            return Ok(Vec::new());
        }
        let method = "skills/list";
        let mut skills = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let page = self.custom_request(method, params).await?;
            let entries = page.get("skills").cloned().unwrap_or(Value::Array(vec![]));
            let entries: Vec<SkillEntry> = serde_json::from_value(entries)
                .map_err(|e| self.protocol_error(method, format!("invalid skills: {e}")))?;
            skills.extend(entries);
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() && cursor.as_deref() != Some(next) => {
                    cursor = Some(next.to_owned());
                }
                Some(next) if !next.is_empty() => {
                    return Err(self.protocol_error(method, "the cursor repeats"));
                }
                _ => return Ok(skills),
            }
        }
        Err(self.protocol_error(method, format!("more than {MAX_PAGES} pages")))
    }

    /// One skill's entry by the URI of its `SKILL.md` (`skills/get`).
    pub async fn get_skill(&self, uri: &str) -> Result<SkillEntry, ClientError> {
        let method = "skills/get";
        let result = self.custom_request(method, json!({ "uri": uri })).await?;
        serde_json::from_value(result.get("skill").cloned().unwrap_or_default())
            .map_err(|e| self.protocol_error(method, format!("invalid skill: {e}")))
    }

    /// Load a skill: read its `SKILL.md`, check its size and digest against the listing, and
    /// its front matter against the listed one, field by field. Nothing else is read; the
    /// skill's other files come later through [`read_skill_file`](Self::read_skill_file).
    pub async fn load_skill(&self, entry: &SkillEntry) -> Result<LoadedSkill, ClientError> {
        let reject = |reason: SkillRejection| self.skill_rejected(&entry.uri, reason);
        if !entry.uri.ends_with(&format!("/{MANIFEST}")) {
            return Err(reject(SkillRejection::Content(format!(
                "a skill's entry must name its {MANIFEST}"
            ))));
        }
        let bytes = self.read_skill_file(entry, &entry.uri).await?;
        let manifest = String::from_utf8(bytes)
            .map_err(|_| reject(SkillRejection::Content("SKILL.md is not UTF-8".into())))?;
        let frontmatter = parse_frontmatter(&manifest)
            .ok_or_else(|| reject(SkillRejection::Frontmatter("is missing or not YAML".into())))?;
        if let Some(field) = first_difference(&frontmatter, &entry.frontmatter) {
            return Err(reject(SkillRejection::Frontmatter(format!(
                "differs from the listing in `{field}`"
            ))));
        }
        Ok(LoadedSkill {
            entry: entry.clone(),
            manifest,
        })
    }

    /// Read one file of a skill (`resources/read`) and return its bytes only if they match the
    /// listing's size and digest. A skill whose files are `dynamic` has nothing to check
    /// against, so its files are refused too.
    pub async fn read_skill_file(
        &self,
        entry: &SkillEntry,
        uri: &str,
    ) -> Result<Vec<u8>, ClientError> {
        let reject = |reason: SkillRejection| self.skill_rejected(uri, reason);
        let listed = entry
            .listed(uri)
            .ok_or_else(|| reject(SkillRejection::Unlisted))?;
        if listed.size > MAX_FILE_BYTES {
            return Err(reject(SkillRejection::Content(format!(
                "listed at {} bytes, over the {MAX_FILE_BYTES}-byte bound",
                listed.size
            ))));
        }
        let result = self.read_resource(uri).await?;
        let bytes = resource_bytes(&result, uri).map_err(|e| reject(SkillRejection::Content(e)))?;
        verify(listed, &bytes).map_err(reject)?;
        Ok(bytes)
    }

    async fn custom_request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        match self
            .request(request, method, self.config.request_timeout(), None)
            .await?
        {
            ServerResult::CustomResult(result) => Ok(result.0),
            other => serde_json::to_value(&other)
                .map_err(|e| self.protocol_error(method, format!("invalid result: {e}"))),
        }
    }

    fn skill_rejected(&self, uri: &str, reason: SkillRejection) -> ClientError {
        ClientError::SkillRejected {
            server: self.server.clone(),
            uri: uri.to_owned(),
            reason,
        }
    }
}

/// The bytes of `uri` in a `resources/read` result: its text as UTF-8, or its blob decoded.
fn resource_bytes(result: &Value, uri: &str) -> Result<Vec<u8>, String> {
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or("the read returned no contents")?;
    let content = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
        .or_else(|| contents.first())
        .ok_or("the read returned no contents")?;
    if let Some(text) = content.get("text").and_then(Value::as_str) {
        return Ok(text.as_bytes().to_vec());
    }
    let blob = content
        .get("blob")
        .and_then(Value::as_str)
        .ok_or("the read returned neither text nor blob")?;
    base64::engine::general_purpose::STANDARD
        .decode(blob)
        .map_err(|e| format!("the blob is not base64: {e}"))
}

/// Size first (cheap, and a mismatch is a failure on its own), then the digest.
fn verify(listed: &SkillFile, bytes: &[u8]) -> Result<(), SkillRejection> {
    let actual = bytes.len() as u64;
    if actual != listed.size {
        return Err(SkillRejection::Size {
            listed: listed.size,
            actual,
        });
    }
    let digest = format!("sha256:{}", crate::fsutil::hex(&Sha256::digest(bytes)));
    if !digest.eq_ignore_ascii_case(&listed.digest) {
        return Err(SkillRejection::Digest {
            listed: listed.digest.clone(),
            actual: digest,
        });
    }
    Ok(())
}

/// The YAML front matter at the top of a `SKILL.md` (`---` lines around it), as JSON.
fn parse_frontmatter(text: &str) -> Option<Map<String, Value>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let end = rest.match_indices("\n---").map(|(at, _)| at).find(|&at| {
        let after = &rest[at + 4..];
        let line_end = after.find('\n').unwrap_or(after.len());
        after[..line_end].trim().is_empty()
    })?;
    let yaml = rest[..end].trim_end_matches('\r');
    match serde_yaml_ng::from_str::<Value>(yaml).ok()? {
        Value::Object(map) => Some(map),
        _ => None,
    }
}

/// The first field whose value differs between the file's front matter and the listing's (a
/// field absent on one side counts as `null`).
fn first_difference(file: &Map<String, Value>, listed: &Map<String, Value>) -> Option<String> {
    file.keys()
        .chain(listed.keys())
        .find(|key| {
            file.get(*key).unwrap_or(&Value::Null) != listed.get(*key).unwrap_or(&Value::Null)
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> SkillFile {
        SkillFile {
            uri: "skill://demo/SKILL.md".into(),
            digest: format!(
                "sha256:{}",
                crate::fsutil::hex(&Sha256::digest(text.as_bytes()))
            ),
            size: text.len() as u64,
        }
    }

    #[test]
    fn a_file_must_match_its_size_and_digest() {
        let listed = file("body");
        assert_eq!(verify(&listed, b"body"), Ok(()));
        assert!(matches!(
            verify(&listed, b"body!"),
            Err(SkillRejection::Size {
                listed: 4,
                actual: 5
            })
        ));
        assert!(matches!(
            verify(&listed, b"evil"),
            Err(SkillRejection::Digest { .. })
        ));
    }

    #[test]
    fn front_matter_is_parsed_and_compared_field_by_field() {
        let text = "---\nname: demo\ndescription: Does things\n---\n# Demo\n";
        let parsed = parse_frontmatter(text).expect("front matter");
        let listed: Map<String, Value> =
            serde_json::from_value(json!({"name": "demo", "description": "Does things"}))
                .expect("map");
        assert_eq!(first_difference(&parsed, &listed), None);
        let other: Map<String, Value> =
            serde_json::from_value(json!({"name": "demo", "description": "Steals things"}))
                .expect("map");
        assert_eq!(
            first_difference(&parsed, &other).as_deref(),
            Some("description")
        );
        let extra: Map<String, Value> = serde_json::from_value(
            json!({"name": "demo", "description": "Does things", "license": "MIT"}),
        )
        .expect("map");
        assert_eq!(
            first_difference(&parsed, &extra).as_deref(),
            Some("license")
        );
        assert_eq!(parse_frontmatter("# no front matter"), None);
        assert_eq!(parse_frontmatter("---\nname: [unclosed\n---\n"), None);
    }

    #[test]
    fn listings_parse_both_file_forms() {
        let listed: SkillEntry = serde_json::from_value(json!({
            "uri": "skill://demo/SKILL.md",
            "frontmatter": {"name": "demo", "description": "d"},
            "resources": [{"uri": "skill://demo/SKILL.md", "digest": "sha256:00", "size": 1}]
        }))
        .expect("listed");
        assert_eq!(listed.name(), "demo");
        assert!(listed.listed("skill://demo/SKILL.md").is_some());
        let dynamic: SkillEntry = serde_json::from_value(json!({
            "uri": "skill://gen/SKILL.md",
            "frontmatter": {"name": "gen", "description": "d"},
            "resources": "dynamic"
        }))
        .expect("dynamic");
        assert!(dynamic.listed("skill://gen/SKILL.md").is_none());
    }
}
