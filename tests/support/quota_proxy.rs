//! A quota-enforcing provider for the scaling tests and benchmark: an HTTP reverse
//! proxy in front of a real PowerDNS API that
//!
//! - adds a fixed latency to every request (a cloud API is not on loopback), and
//! - enforces a write quota the way cloud providers do: a token bucket of
//!   `write_burst` PATCH requests refilled at `write_rate` per second; a PATCH that
//!   finds it empty is answered `429 Too Many Requests` with `Retry-After` and never
//!   reaches PowerDNS; with `all_requests`, every request (reads too) takes from the
//!   same bucket, as at a provider that limits requests, not writes.
//!
//! It records when each PATCH was let through and how many were refused: the
//! test-side truth about the write rate, whatever the appliers believe; and each
//! forwarded PATCH whole (when it was sent, when PowerDNS answered, its body): the
//! provider's own log of who wrote what and when.
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::Response;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How the proxy behaves.
#[derive(Clone, Debug)]
pub struct ProxyOptions {
    /// PATCH requests per second let through; 0: no quota.
    pub write_rate: f64,
    /// PATCH requests that may go at once (the bucket's size).
    pub write_burst: f64,
    /// Added to every request before it is forwarded.
    pub latency: Duration,
    /// `Retry-After` of a 429, in seconds.
    pub retry_after_secs: u64,
    /// Every request takes a token, reads included (a provider that limits requests,
    /// like one behind a rate-limiting gateway); `false`: only PATCH.
    pub all_requests: bool,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        ProxyOptions {
            write_rate: 0.0,
            write_burst: 1.0,
            latency: Duration::ZERO,
            retry_after_secs: 1,
            all_requests: false,
        }
    }
}

/// What the proxy saw.
#[derive(Clone, Debug, Default)]
pub struct ProxyCounts {
    /// When each PATCH was let through, in order.
    pub writes: Vec<Instant>,
    /// Requests answered 429 (PATCH only, unless `all_requests`).
    pub rejected: u64,
    /// Every request, of any method.
    pub requests: u64,
}

impl ProxyCounts {
    /// Writes let through since `since`.
    pub fn writes_since(&self, since: Instant) -> Vec<Instant> {
        self.writes
            .iter()
            .copied()
            .filter(|t| *t >= since)
            .collect()
    }
}

/// One PATCH that reached PowerDNS, on the test's clock.
#[derive(Clone, Debug)]
pub struct Patch {
    /// When it was forwarded to PowerDNS.
    pub sent: Instant,
    /// When PowerDNS's answer came back.
    pub answered: Instant,
    pub status: u16,
    pub body: String,
}

/// Write rate over `writes` (sorted): (n − 1) / (last − first), per second.
pub fn rate(writes: &[Instant]) -> f64 {
    match (writes.first(), writes.last()) {
        (Some(a), Some(b)) if writes.len() > 1 && b > a => {
            (writes.len() - 1) as f64 / (*b - *a).as_secs_f64()
        }
        _ => 0.0,
    }
}

/// The most writes in any window of `window` (sorted input).
pub fn max_in_window(writes: &[Instant], window: Duration) -> usize {
    let mut lo = 0;
    let mut best = 0;
    for hi in 0..writes.len() {
        while writes[hi] - writes[lo] >= window {
            lo += 1;
        }
        best = best.max(hi - lo + 1);
    }
    best
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

#[derive(Debug)]
struct Shared {
    upstream: String,
    opts: ProxyOptions,
    http: reqwest::Client,
    bucket: Mutex<Bucket>,
    counts: Mutex<ProxyCounts>,
    patches: Mutex<Vec<Patch>>,
}

impl Shared {
    /// Takes a token for a request (`write`: a PATCH, which `writes` records);
    /// `false`: over the quota.
    fn admit(&self, write: bool) -> bool {
        if self.opts.write_rate <= 0.0 {
            if write {
                self.counts
                    .lock()
                    .expect("counts")
                    .writes
                    .push(Instant::now());
            }
            return true;
        }
        let mut b = self.bucket.lock().expect("bucket");
        let now = Instant::now();
        let refill = (now - b.last).as_secs_f64() * self.opts.write_rate;
        b.tokens = (b.tokens + refill).min(self.opts.write_burst);
        b.last = now;
        let mut c = self.counts.lock().expect("counts");
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            if write {
                c.writes.push(now);
            }
            true
        } else {
            c.rejected += 1;
            false
        }
    }
}

/// A running proxy; stops when dropped.
#[derive(Debug)]
pub struct QuotaProxy {
    pub port: u16,
    shared: Arc<Shared>,
    rt: Option<tokio::runtime::Runtime>,
}

impl QuotaProxy {
    /// Proxies `http://127.0.0.1:PORT/` to `upstream` (e.g. `http://127.0.0.1:8081`).
    pub fn start(upstream: &str, opts: ProxyOptions) -> QuotaProxy {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("proxy runtime");
        let shared = Arc::new(Shared {
            upstream: upstream.trim_end_matches('/').to_string(),
            bucket: Mutex::new(Bucket {
                tokens: opts.write_burst,
                last: Instant::now(),
            }),
            opts,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .expect("proxy HTTP client"),
            counts: Mutex::default(),
            patches: Mutex::default(),
        });
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind the proxy");
        let port = listener.local_addr().expect("proxy addr").port();
        let app = Router::new().fallback(forward).with_state(shared.clone());
        rt.spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                eprintln!("quota proxy stopped: {e}");
            }
        });
        QuotaProxy {
            port,
            shared,
            rt: Some(rt),
        }
    }

    /// `http://127.0.0.1:PORT`: the `api_url` for the appliers' `pdns` accounts.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn counts(&self) -> ProxyCounts {
        self.shared.counts.lock().expect("counts").clone()
    }

    /// Every PATCH forwarded to PowerDNS so far, in the order they were answered.
    pub fn patches(&self) -> Vec<Patch> {
        self.shared.patches.lock().expect("patches").clone()
    }
}

impl Drop for QuotaProxy {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

async fn forward(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    shared.counts.lock().expect("counts").requests += 1;
    let write = req.method() == Method::PATCH;
    if (write || shared.opts.all_requests) && !shared.admit(write) {
        return Response::builder()
            .status(StatusCode::TOO_MANY_REQUESTS)
            .header(
                header::RETRY_AFTER,
                shared.opts.retry_after_secs.to_string(),
            )
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(r#"{"error": "Rate limit exceeded"}"#))
            .expect("429 response");
    }
    if !shared.opts.latency.is_zero() {
        tokio::time::sleep(shared.opts.latency).await;
    }
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let is_patch = parts.method == Method::PATCH;
    let logged = is_patch.then(|| String::from_utf8_lossy(&body).into_owned());
    let mut headers = HeaderMap::new();
    for (k, v) in &parts.headers {
        if k != header::HOST && k != header::CONTENT_LENGTH && k != header::CONNECTION {
            headers.append(k, v.clone());
        }
    }
    let sent = Instant::now();
    let resp = shared
        .http
        .request(parts.method, format!("{}{path}", shared.upstream))
        .headers(headers)
        .body(body)
        .send()
        .await;
    if let Some(body) = logged {
        shared.patches.lock().expect("patches").push(Patch {
            sent,
            answered: Instant::now(),
            status: resp.as_ref().map_or(0, |r| r.status().as_u16()),
            body,
        });
    }
    let resp = match resp {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_GATEWAY, &e.to_string()),
    };
    let mut out = Response::builder().status(resp.status());
    for (k, v) in resp.headers() {
        if k != header::CONTENT_LENGTH && k != header::CONNECTION && k != header::TRANSFER_ENCODING
        {
            out = out.header(k, v);
        }
    }
    match resp.bytes().await {
        Ok(b) => out.body(Body::from(b)).expect("response"),
        Err(e) => error(StatusCode::BAD_GATEWAY, &e.to_string()),
    }
}

fn error(status: StatusCode, text: &str) -> Response {
    Response::builder()
        .status(status)
        .body(Body::from(text.to_string()))
        .expect("error response")
}
