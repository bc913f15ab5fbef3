//! Who calls the tracking API: the client's address and headers ([`Caller`]), and the
//! program of a bearer API key ([`ApiKey`]).

use axum::http::header::ORIGIN;
use axum::http::{HeaderMap, HeaderName};

use crate::bearer::{bearer, Bearer};
use crate::error::{Error, Result};
use crate::fields::{truncate, MAX_ID_LEN};
use crate::AppState;
use reftrack_store::{ClickDetails, Program};

/// The client's peer address and headers, for enrichment and origin checks.
pub struct Caller {
    peer: Option<std::net::IpAddr>,
    headers: HeaderMap,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> std::result::Result<Self, Self::Rejection> {
        let peer = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        Ok(Caller {
            peer,
            headers: parts.headers.clone(),
        })
    }
}

impl Caller {
    pub(super) fn origin(&self) -> Option<String> {
        self.headers
            .get(ORIGIN)
            .and_then(|v| v.to_str().ok())
            .map(|s| truncate(s, MAX_ID_LEN))
    }

    /// The credentials of the `Authorization` header.
    pub(super) fn bearer(&self) -> Bearer<'_> {
        bearer(&self.headers)
    }

    /// A header's value as text, cut to `max` bytes.
    pub(crate) fn header(&self, name: HeaderName, max: usize) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(|s| truncate(s, max))
    }

    /// The client's IP: the peer, or what a trusted proxy says it forwards for.
    pub(crate) fn client_ip(&self, state: &AppState) -> Option<std::net::IpAddr> {
        state.clients.client_ip(self.peer, &self.headers)
    }

    /// What the server derives of a visit: device, OS and browser of `user_agent`, and
    /// the client's geo.
    pub(crate) fn derived_details(&self, state: &AppState, user_agent: &str) -> ClickDetails {
        let device = state.app.device_info(user_agent);
        let geo = state.clients.geo(self.peer, &self.headers);
        ClickDetails {
            ip: self.client_ip(state).map(|ip| ip.to_string()),
            geo_country: geo.country,
            geo_region: geo.region,
            geo_city: geo.city,
            device_type: device.device_type,
            device_os: device.device_os,
            browser_name: device.browser_name,
            ..ClickDetails::default()
        }
    }
}

/// Longest user agent read from a header.
pub(crate) const MAX_USER_AGENT_LEN: usize = 1024;

pub(super) fn forbidden_origin() -> Error {
    Error::Forbidden("Origin not allowed".into())
}

/// The program a bearer token belongs to; 401 otherwise.
pub(super) async fn program_from_token(state: &AppState, token: &str) -> Result<Program> {
    state
        .app
        .program_by_token(token)
        .await?
        .ok_or_else(|| Error::Unauthorized("Invalid API key".into()))
}

/// The program of a required bearer API key (sale, refund): 401 otherwise. As an
/// extractor it runs before the body is read, so a bad key is a 401 whatever the body.
pub struct ApiKey(pub Program);

impl axum::extract::FromRequestParts<AppState> for ApiKey {
    type Rejection = Error;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self> {
        match bearer(&parts.headers) {
            Bearer::Token(t) => program_from_token(state, t).await.map(ApiKey),
            _ => Err(Error::Unauthorized(
                "Missing or invalid Authorization header. Expected: Bearer <API key>".into(),
            )),
        }
    }
}
