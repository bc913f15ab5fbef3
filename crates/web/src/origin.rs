//! Where a request comes from, as the audit log records it: the client's IP address (as
//! [`crate::client_ip`] resolves it, trusted proxies included) and the request id (as
//! [`crate::request_id`] set it). [`RequestOrigin`] is the one extractor of both; the
//! management extractor ([`crate::admin::Manager`]) and the dashboard's signed-in user
//! hand it to the service layer with the caller ([`reftrack_service::Caller::through`]).

use std::convert::Infallible;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use tower_http::request_id::RequestId;

use crate::AppState;
use reftrack_domain::audit::{Actor, Origin};
use reftrack_service::Caller;

/// The client IP and request id of a request.
#[derive(Debug, Clone, Default)]
pub struct RequestOrigin {
    pub ip: Option<String>,
    pub request_id: Option<String>,
}

impl RequestOrigin {
    /// The origin of the request of `parts`.
    pub fn of(parts: &Parts, state: &AppState) -> RequestOrigin {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(a)| a.ip());
        RequestOrigin {
            ip: state
                .clients
                .client_ip(peer, &parts.headers)
                .map(|ip| ip.to_string()),
            request_id: parts
                .extensions
                .get::<RequestId>()
                .and_then(|id| id.header_value().to_str().ok())
                .map(str::to_string),
        }
    }

    /// `caller`, calling through this request.
    pub fn caller(&self, caller: Caller) -> Caller {
        caller.through(self.ip.clone(), self.request_id.clone())
    }

    /// `actor`, acting through this request.
    pub fn of_actor(&self, actor: Actor) -> Origin {
        Origin {
            actor,
            ip: self.ip.clone(),
            request_id: self.request_id.clone(),
        }
    }
}

impl FromRequestParts<AppState> for RequestOrigin {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        Ok(RequestOrigin::of(parts, state))
    }
}
