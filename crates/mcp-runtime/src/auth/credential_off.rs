//! A connection's credentials when OAuth is not built in (the `oauth` feature is off): there
//! are none. [`ServerAuth`] has no value, so a connection's `auth` is always `None` and requests
//! carry only the headers of their config; these methods exist so that the HTTP client reads the
//! same either way.

use super::AuthFailure;
pub(crate) use super::challenge::is_insufficient_scope;

/// No credentials: a type without values.
#[derive(Debug)]
pub(crate) enum ServerAuth {}

impl ServerAuth {
    pub(crate) fn authorize_request(
        &self,
        _request: reqwest::RequestBuilder,
        _method: &str,
        _url: &str,
        _token: &str,
    ) -> reqwest::RequestBuilder {
        match *self {}
    }

    pub(crate) fn dpop_nonce_retry(
        &self,
        _url: &str,
        _sent: Option<&str>,
        _status: u16,
        _challenge: Option<&str>,
        _nonce: Option<&[u8]>,
    ) -> bool {
        match *self {}
    }

    pub(crate) fn in_use(&self) -> bool {
        match *self {}
    }

    pub(crate) async fn bearer(&self) -> Result<Option<String>, AuthFailure> {
        match *self {}
    }

    pub(crate) async fn on_unauthorized(
        &self,
        _sent: Option<&str>,
        _challenge: Option<&str>,
    ) -> Result<String, AuthFailure> {
        match *self {}
    }

    pub(crate) async fn on_insufficient_scope(
        &self,
        _sent: Option<&str>,
        _challenge: &str,
    ) -> Result<String, AuthFailure> {
        match *self {}
    }
}
