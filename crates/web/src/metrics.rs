//! Prometheus metrics: what the service counts ([`Metrics`]), the middleware that counts
//! each request under its route template ([`count`]), and `GET /metrics` in the
//! Prometheus text format, version 0.0.4 ([`route`], and [`listener_router`] for an
//! address of its own).
//!
//! Every label value is chosen by the server, never by a client: the route template
//! (`/api/admin/programs/{id}`, or `unmatched`), the method (`other` beyond the usual
//! ones), the status code, the limit, the pool. So the exposition holds no token, email,
//! customer key or id, and its size stays bounded whatever clients send.
//!
//! The labels of a request are the route's shared template (a reference count, no
//! copy), a static method name and the status number: counting a request allocates
//! nothing once its series exists.

use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::LabelValueEncoder;
use prometheus_client::encoding::{prometheus_text, EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

use super::error::Error;
use reftrack_service::metrics::Readings;

/// The path the metrics are served on.
pub const PATH: &str = "/metrics";

/// How long a scrape waits for the webhook backlog before answering without it.
const BACKLOG_READ_LIMIT: Duration = Duration::from_secs(1);

/// The route label of a request that matched no route.
pub const UNMATCHED: &str = "unmatched";

/// Everything the service counts, and the registry that writes it out.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    durations: Family<RouteLabels, Histogram, fn() -> Histogram>,
    rate_limited: Family<LimitLabels, Counter>,
    connections: Family<ConnectionLabels, Gauge>,
    max_connections: Family<PoolLabels, Gauge>,
    webhook_backlog: Gauge,
    database_up: Gauge,
    readings: Readings,
}

/// A request's route template; `None` when it matched no route.
#[derive(Debug, Clone)]
struct Route(Option<MatchedPath>);

impl Route {
    fn as_str(&self) -> &str {
        self.0.as_ref().map_or(UNMATCHED, MatchedPath::as_str)
    }
}

impl PartialEq for Route {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Route {}

impl Hash for Route {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl EncodeLabelValue for Route {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> std::fmt::Result {
        encoder.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouteLabels {
    method: &'static str,
    route: Route,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    method: &'static str,
    route: Route,
    status: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LimitLabels {
    limit: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct PoolLabels {
    pool: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ConnectionLabels {
    pool: &'static str,
    state: &'static str,
}

/// Request durations: 250 µs to about 16 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.00025, 2.0, 17))
}

/// The method as a label: the usual ones by name, any other as `other` (a client may
/// send any token as a method).
fn method_label(method: &Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}

impl Metrics {
    /// The metrics of a service, which also reports what `readings` reads of its store:
    /// its pools, its group committer's batches and the webhook backlog.
    pub fn new(readings: Readings) -> Self {
        let mut registry = Registry::with_prefix("reftrack");
        registry.register(
            "build",
            "The running version",
            Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]),
        );
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "Requests answered, by method, route template and status",
            requests.clone(),
        );
        let durations = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram,
        );
        registry.register_with_unit(
            "http_request_duration",
            "Time to answer a request (until its headers), by method and route template",
            Unit::Seconds,
            durations.clone(),
        );
        let rate_limited = Family::<LimitLabels, Counter>::default();
        registry.register(
            "rate_limited",
            "Requests refused with 429, by limit: click, lead and login per client IP, \
             login_account for an account locked out after failed logins",
            rate_limited.clone(),
        );
        let commits = readings.commit_stats();
        registry.register(
            "commit_batch_size",
            "Writes per group-commit batch",
            commits.batch_size,
        );
        registry.register_with_unit(
            "commit_queue_wait",
            "Time the oldest write of each group-commit batch waited in the queue",
            Unit::Seconds,
            commits.queue_wait,
        );
        registry.register_with_unit(
            "commit_batch_duration",
            "Time a group-commit batch ran, from taking its connection to its commit",
            Unit::Seconds,
            commits.batch_duration,
        );
        let connections = Family::<ConnectionLabels, Gauge>::default();
        registry.register(
            "db_connections",
            "Open database connections by pool, in_use (checked out) or idle",
            connections.clone(),
        );
        let max_connections = Family::<PoolLabels, Gauge>::default();
        registry.register(
            "db_connections_max",
            "The most connections each database pool opens",
            max_connections.clone(),
        );
        let database_up = Gauge::default();
        registry.register(
            "database_up",
            "Whether the database answered the scrape's read (1) or not within 1 s (0)",
            database_up.clone(),
        );
        let webhook_backlog = Gauge::default();
        registry.register(
            "webhook_deliveries_pending",
            "Outbound webhook deliveries waiting to be sent (due now or retrying later)",
            webhook_backlog.clone(),
        );
        Metrics {
            registry,
            requests,
            durations,
            rate_limited,
            connections,
            max_connections,
            webhook_backlog,
            database_up,
            readings,
        }
    }

    /// Counts one answered request.
    fn answered(&self, method: &'static str, route: Route, status: StatusCode, took: Duration) {
        let labels = RouteLabels { method, route };
        self.durations
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        let labels = RequestLabels {
            method,
            route: labels.route,
            status: status.as_u16(),
        };
        self.requests.get_or_create(&labels).inc();
    }

    /// Counts one request refused by `limit` (`click`, `lead`, `login`, `login_account`).
    pub fn rate_limited(&self, limit: &'static str) {
        self.rate_limited
            .get_or_create(&LimitLabels { limit })
            .inc();
    }

    /// The exposition in the Prometheus text format, with the pools read now.
    pub async fn render(&self) -> String {
        // The gauges that read the present state are set at scrape time: the pools and the
        // webhook outbox's backlog (kept at its last value when the database is out: a
        // scrape must answer during an outage, not wait out the pool's acquire timeout).
        // That read is also the database's health as the scrape sees it, traffic or none.
        let backlog = self.readings.pending_deliveries();
        let up = match tokio::time::timeout(BACKLOG_READ_LIMIT, backlog).await {
            Ok(Ok(n)) => {
                self.webhook_backlog.set(n);
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "reading the webhook backlog for the metrics");
                false
            }
            Err(_) => {
                tracing::warn!("reading the webhook backlog for the metrics timed out");
                false
            }
        };
        self.database_up.set(i64::from(up));
        for pool in self.readings.pool_use() {
            let count = |state, n: u32| {
                self.connections
                    .get_or_create(&ConnectionLabels {
                        pool: pool.pool,
                        state,
                    })
                    .set(i64::from(n));
            };
            count("in_use", pool.in_use);
            count("idle", pool.open.saturating_sub(pool.in_use));
            self.max_connections
                .get_or_create(&PoolLabels { pool: pool.pool })
                .set(i64::from(pool.max));
        }
        let mut text = String::new();
        prometheus_text::encode(&mut text, &self.registry).expect("writing to a String");
        text
    }
}

/// Middleware around every route (and the fallback): counts the request under its route
/// template, method and status, and its duration.
pub async fn count(State(metrics): State<Arc<Metrics>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = method_label(req.method());
    let route = Route(req.extensions().get::<MatchedPath>().cloned());
    let response = next.run(req).await;
    metrics.answered(method, route, response.status(), started.elapsed());
    response
}

/// `GET /metrics`.
async fn scrape(State(metrics): State<Arc<Metrics>>) -> Response {
    (
        [(CONTENT_TYPE, prometheus_text::CONTENT_TYPE)],
        metrics.render().await,
    )
        .into_response()
}

/// `GET /metrics` alone, to merge into a router of any state.
pub fn route<S: Clone + Send + Sync + 'static>(metrics: Arc<Metrics>) -> Router<S> {
    Router::new().route(PATH, get(scrape)).with_state(metrics)
}

/// The router of a listener of the metrics' own (`REFTRACK_METRICS_LISTEN`): `/metrics`,
/// and 404 for anything else.
pub fn listener_router(metrics: Arc<Metrics>) -> Router {
    route(metrics).fallback(|| async { Error::not_found("Not found") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_outside_the_usual_ones_share_one_label() {
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::OPTIONS), "OPTIONS");
        assert_eq!(
            method_label(&Method::from_bytes(b"PROPFIND").unwrap()),
            "other"
        );
        assert_eq!(
            method_label(&Method::from_bytes(b"rt_secret").unwrap()),
            "other"
        );
    }
}
