//! The gateway's `requestState`: what it needs to take a 2026-07-28 client's retry back to
//! its call, sealed with AES-256-GCM under the gateway's state key (see `state_key`). The
//! client can neither forge nor alter it, nor read it: a backend's own state, carried inside,
//! is opaque and may be sensitive.
//!
//! A state reads `v1.<key id>.<sealed>`: the format, the id of the key that sealed it (8 hex
//! digits; both authenticated as the cipher's associated data), and the base64url of a random
//! 96-bit nonce followed by the ciphertext and its tag. Inside, as JSON, are the time it
//! expires and what it resumes: a call parked in one gateway's memory (see `input`), or a
//! 2026-07-28 backend's call carried whole ([`Carried`], resumed by `resume`).

use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::aead::{Aad, NONCE_LEN, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rmcp::model::{InputRequests, InputResponses};
use serde::{Deserialize, Serialize};

use crate::gateway::state_key::Keyring;

/// The longest state a client may send back, and the longest one the gateway hands out (a
/// backend's state too large to carry keeps its call parked instead).
pub(crate) const MAX_STATE_CHARS: usize = 256 * 1024;

/// The format of the states this code seals.
const VERSION: &str = "v1";

/// What a state resumes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Resumes {
    /// A call parked in the memory of one gateway instance.
    Parked {
        /// Its name in that instance's memory.
        call: String,
        /// The instance (see `Inputs`).
        gateway: String,
    },
    /// A 2026-07-28 backend's call, carried whole.
    Carried(Carried),
}

/// A 2026-07-28 backend's call, as its client's `requestState` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Carried {
    /// The tool as the client called it.
    pub(super) tool: String,
    /// Its server, and its name there: the retry goes to the same tool or nowhere.
    pub(super) server: String,
    pub(super) server_tool: String,
    /// The backend's own state, echoed to it unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) backend_state: Option<String>,
    /// The backend's requests the client was asked.
    pub(super) asked: InputRequests,
    /// The gateway's own answers to the backend's other requests.
    #[serde(default, skip_serializing_if = "InputResponses::is_empty")]
    pub(super) answered: InputResponses,
    /// Names the state among those spent (random).
    pub(super) once: String,
}

/// The sealed content.
#[derive(Serialize, Deserialize)]
struct Envelope {
    /// Seconds since the Unix epoch.
    expires: u64,
    resumes: Resumes,
}

/// Why a state is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not a state this gateway sealed, or altered since.
    Forged,
    /// Sealed under a key this gateway does not hold (another process's, or a retired one).
    ForeignKey,
    /// Its time is over.
    Expired,
}

impl Refused {
    /// What the client is told.
    pub(crate) fn message(self) -> &'static str {
        match self {
            Refused::Forged => "requestState integrity check failed",
            Refused::ForeignKey => {
                "requestState integrity check failed: it was sealed under a key this gateway \
                 does not hold (gateway replicas behind one load balancer must share one \
                 state key)"
            }
            Refused::Expired => "requestState has expired: call the tool again",
        }
    }
}

/// Seals and opens states under a gateway's keys.
pub(crate) struct Sealer {
    keys: Keyring,
}

impl Sealer {
    pub(crate) fn new(keys: Keyring) -> Sealer {
        Sealer { keys }
    }

    /// `resumes`, sealed until `expires`; `None` when it would be longer than
    /// [`MAX_STATE_CHARS`] or no nonce could be drawn.
    pub(crate) fn seal(&self, resumes: &Resumes, expires: SystemTime) -> Option<String> {
        let expires = expires
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let envelope = Envelope {
            expires,
            resumes: resumes.clone(),
        };
        let mut sealed = vec![0u8; NONCE_LEN];
        getrandom::fill(&mut sealed).ok()?;
        let nonce = Nonce::try_assume_unique_for_key(&sealed).ok()?;
        serde_json::to_writer(&mut sealed, &envelope).ok()?;
        let keys = self.keys.sealing();
        let id = crate::fsutil::hex(&keys.current.id);
        let aad = format!("{VERSION}.{id}");
        let mut text = sealed.split_off(NONCE_LEN);
        keys.current
            .aead
            .seal_in_place_append_tag(nonce, Aad::from(aad.as_bytes()), &mut text)
            .ok()?;
        sealed.extend_from_slice(&text);
        let state = format!("{aad}.{}", URL_SAFE_NO_PAD.encode(&sealed));
        (state.len() <= MAX_STATE_CHARS).then_some(state)
    }

    /// What `state` resumes, and when it expires (seconds since the Unix epoch), if this
    /// gateway sealed it and its time is not over.
    pub(crate) fn open(&self, state: &str) -> Result<(Resumes, u64), Refused> {
        if state.len() > MAX_STATE_CHARS {
            return Err(Refused::Forged);
        }
        let mut parts = state.splitn(3, '.');
        let (Some(VERSION), Some(id_text), Some(sealed)) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(Refused::Forged);
        };
        let id: [u8; 4] = unhex(id_text)
            .and_then(|id| id.try_into().ok())
            .ok_or(Refused::Forged)?;
        let keys = self.keys.holding(&id).ok_or(Refused::ForeignKey)?;
        let key = keys.get(&id).ok_or(Refused::ForeignKey)?;
        let mut sealed = URL_SAFE_NO_PAD
            .decode(sealed)
            .map_err(|_| Refused::Forged)?;
        if sealed.len() < NONCE_LEN {
            return Err(Refused::Forged);
        }
        let mut text = sealed.split_off(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(&sealed).map_err(|_| Refused::Forged)?;
        let aad = format!("{VERSION}.{id_text}");
        let plain = key
            .aead
            .open_in_place(nonce, Aad::from(aad.as_bytes()), &mut text)
            .map_err(|_| Refused::Forged)?;
        let envelope: Envelope = serde_json::from_slice(plain).map_err(|_| Refused::Forged)?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        if envelope.expires < now {
            return Err(Refused::Expired);
        }
        Ok((envelope.resumes, envelope.expires))
    }
}

/// Lower-case hex only (the text is authenticated as it is, so there is one spelling).
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2)
        || !text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn fresh_sealer() -> Sealer {
        Sealer::new(Keyring::new(None, Duration::from_secs(60)))
    }

    fn parked(call: &str) -> Resumes {
        Resumes::Parked {
            call: call.into(),
            gateway: "g".into(),
        }
    }

    #[test]
    fn states_open_as_sealed_and_tampering_is_caught() {
        let sealer = fresh_sealer();
        let later = SystemTime::now() + Duration::from_secs(60);
        let state = sealer.seal(&parked("abc"), later).unwrap();
        assert_eq!(sealer.open(&state).unwrap().0, parked("abc"));
        // Nothing of the content shows.
        assert!(!state.contains("abc"), "{state}");
        let forged = Err(Refused::Forged);
        let (head, sealed) = state.rsplit_once('.').unwrap();
        for position in [0, sealed.len() / 2, sealed.len() - 1] {
            let mut altered = sealed.as_bytes().to_vec();
            altered[position] = if altered[position] == b'A' {
                b'B'
            } else {
                b'A'
            };
            let altered = format!("{head}.{}", String::from_utf8(altered).unwrap());
            assert_eq!(sealer.open(&altered), forged, "byte {position}");
        }
        assert_eq!(sealer.open(&state.to_uppercase()), forged);
        assert_eq!(sealer.open(&format!("v2{}", &state[2..])), forged);
        assert_eq!(sealer.open("not a state"), forged);
        assert_eq!(sealer.open("v1.00000000."), Err(Refused::ForeignKey));
        assert_eq!(sealer.open(&"v1.".repeat(MAX_STATE_CHARS)), forged);
        // Another process's key.
        assert_eq!(fresh_sealer().open(&state), Err(Refused::ForeignKey));
        let expired = sealer
            .seal(&parked("abc"), SystemTime::now() - Duration::from_secs(5))
            .unwrap();
        assert_eq!(sealer.open(&expired), Err(Refused::Expired));
    }

    #[test]
    fn two_seals_of_the_same_content_differ() {
        let sealer = fresh_sealer();
        let later = SystemTime::now() + Duration::from_secs(60);
        let one = sealer.seal(&parked("abc"), later).unwrap();
        let two = sealer.seal(&parked("abc"), later).unwrap();
        assert_ne!(one, two, "a fresh nonce each time");
    }
}
