//! The HTTP side of the webhook protocol, as external-dns's `provider/webhook/webhook.go`
//! speaks it: negotiation (once, lazily, retried with bounded backoff, the domain
//! filter remembered), `GET /records`, `POST /records`. Every answer is classified
//! here, where it is read, by its status and the moment of the failure (never by its
//! text):
//!
//! | answer | negotiation, `GET /records` | `POST /records` |
//! |---|---|---|
//! | cannot connect | transient | transient (nothing was sent) |
//! | timeout or transport error after sending | transient | ambiguous (read back, never resend blind) |
//! | 2xx | negotiation: the exact media type required; records: 200 exactly, an array | 204 exactly; any other 2xx (200 included) is ambiguous: external-dns calls it a failure, yet the server may have applied the changes |
//! | 3xx | permanent (a wrong URL) | permanent |
//! | 401, 403, 404 | permanent | permanent |
//! | 408, 429 | transient (429: throttled) | transient (429: throttled) |
//! | other 4xx | permanent (external-dns exits on it) | invalid, the server's body in the message |
//! | 5xx | transient (a read commits nothing) | ambiguous |
use super::filter::{DomainFilter, WireFilter};
use super::wire::{Changes, Endpoint, MEDIA_TYPE};
use crate::provider::call::Pacer;
use crate::provider::{ErrorClass, ProviderError, transport_error};
use dnsplane_common::secret::redact_url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use reqwest::{Method, Url};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Longest server text kept in an error message (a server is asked to keep error
/// bodies small; this keeps a page of HTML out of a record's status).
pub const MAX_ERROR_TEXT: usize = 300;
/// Negotiation tries, as external-dns (`cenkalti/backoff` defaults, 5 tries, ~4s).
const NEGOTIATION_TRIES: u32 = 5;
/// The first pause between negotiation tries; each next one is ×1.5, ±50% jitter.
const NEGOTIATION_FIRST_PAUSE: Duration = Duration::from_millis(500);

/// The webhook server of one account.
#[derive(Clone)]
pub(super) struct Client {
    http: reqwest::Client,
    /// The base URL: negotiation is `GET` on it.
    base: Url,
    /// `…/records`.
    records: Url,
    /// The filter of the last successful negotiation; `None` until there is one. A
    /// failed negotiation is not remembered: the next call tries again.
    filter: Arc<tokio::sync::Mutex<Option<Arc<DomainFilter>>>>,
    /// Negotiations made (tries included), for tests.
    negotiations: Arc<AtomicU64>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("base", &redact_url(self.base.as_str()))
            .finish_non_exhaustive()
    }
}

/// The server's text, cut to [`MAX_ERROR_TEXT`] on a character boundary.
fn excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.len() <= MAX_ERROR_TEXT {
        return text.to_string();
    }
    let mut end = MAX_ERROR_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// A status that no call of the protocol accepts, classified for `write`.
fn status_error(status: u16, body: &[u8], what: &str, write: bool) -> ProviderError {
    let class = match status {
        401 | 403 | 404 | 300..=399 => ErrorClass::Permanent,
        408 | 429 => ErrorClass::Transient,
        500..=599 if write => ErrorClass::Ambiguous,
        500..=599 => ErrorClass::Transient,
        _ if write => ErrorClass::Invalid,
        _ => ErrorClass::Permanent,
    };
    let text = excerpt(body);
    let mut message = format!("{what} answered HTTP {status}");
    if !text.is_empty() {
        message.push_str(": ");
        message.push_str(&text);
    }
    let e = ProviderError::new(class, message);
    if status == 429 { e.throttle() } else { e }
}

impl Client {
    pub(super) fn new(base: Url, timeout: Duration) -> Result<Client, String> {
        let mut records = base.clone();
        records
            .path_segments_mut()
            .map_err(|()| "cannot be a base URL".to_string())?
            .pop_if_empty()
            .push("records");
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(5)))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Client {
            http,
            base,
            records,
            filter: Arc::default(),
            negotiations: Arc::default(),
        })
    }

    /// Negotiation requests made so far.
    pub(super) fn negotiations(&self) -> u64 {
        self.negotiations.load(Ordering::Relaxed)
    }

    /// One exchange; `Err` only below HTTP. Returns the status, the headers and body.
    async fn exchange(
        &self,
        method: Method,
        url: Url,
        headers: HeaderMap,
        body: Option<Vec<u8>>,
        pacer: &Pacer,
    ) -> Result<(u16, HeaderMap, Vec<u8>), ProviderError> {
        let write = crate::provider::kit::http::admit(pacer, &method).await?;
        let what = format!("{method} {}", url.path());
        let mut req =
            crate::provider::kit::http::traced(self.http.request(method, url).headers(headers));
        if let Some(body) = body {
            req = req.body(body);
        }
        let failed = |e: reqwest::Error| transport_error(&what, &e, write);
        let resp = req.send().await.map_err(failed)?;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp.bytes().await.map_err(failed)?.to_vec();
        Ok((status, headers, body))
    }

    /// The domain filter, negotiating first if no negotiation has succeeded yet.
    pub(super) async fn filter(&self) -> Result<Arc<DomainFilter>, ProviderError> {
        let mut slot = self.filter.lock().await;
        if let Some(f) = slot.as_ref() {
            return Ok(f.clone());
        }
        let mut pause = NEGOTIATION_FIRST_PAUSE;
        let mut tries = 0;
        let filter = loop {
            tries += 1;
            match self.negotiate().await {
                Ok(f) => break Arc::new(f),
                Err(e) if e.class == ErrorClass::Transient && tries < NEGOTIATION_TRIES => {
                    let jitter = rand::random_range(0.5..1.5);
                    tokio::time::sleep(pause.mul_f64(jitter)).await;
                    pause = pause.mul_f64(1.5);
                }
                Err(mut e) => {
                    if e.class == ErrorClass::Transient {
                        e.message = format!("{} (after {tries} tries)", e.message);
                    }
                    return Err(e);
                }
            }
        };
        tracing::info!(url = %redact_url(self.base.as_str()), filter = %filter.describe(), "Negotiated with the webhook server.");
        *slot = Some(filter.clone());
        Ok(filter)
    }

    /// One negotiation request: `GET /` with the media type, which the answer must
    /// carry exactly; its body is the domain filter.
    async fn negotiate(&self) -> Result<DomainFilter, ProviderError> {
        self.negotiations.fetch_add(1, Ordering::Relaxed);
        let what = format!(
            "webhook negotiation (GET {})",
            redact_url(self.base.as_str())
        );
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, MEDIA_TYPE.parse().expect("a valid header value"));
        let (status, got, body) = self
            .exchange(
                Method::GET,
                self.base.clone(),
                headers,
                None,
                &Pacer::default(),
            )
            .await?;
        if status >= 300 {
            return Err(status_error(status, &body, &what, false));
        }
        let content_type = got
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if content_type.as_deref() != Some(MEDIA_TYPE) {
            return Err(ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "{what}: the answer's Content-Type is {}, not {MEDIA_TYPE:?}: the server does not speak version 1 of the external-dns webhook protocol",
                    content_type.map_or_else(|| "missing".to_string(), |c| format!("{c:?}"))
                ),
            ));
        }
        let wire: WireFilter = serde_json::from_slice(&body).map_err(|e| {
            ProviderError::new(
                ErrorClass::Permanent,
                format!(
                    "{what}: the domain filter cannot be decoded ({e}): {}",
                    excerpt(&body)
                ),
            )
        })?;
        DomainFilter::compile(&wire)
            .map_err(|m| ProviderError::new(ErrorClass::Permanent, format!("{what}: {m}")))
    }

    /// `GET /records`: every endpoint the server holds. Anything but 200 with a JSON
    /// array (Go's `null` for an empty slice included) is an error, never an empty zone.
    pub(super) async fn records(&self, pacer: &Pacer) -> Result<Vec<Endpoint>, ProviderError> {
        let what = format!("GET {}", self.records.path());
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, MEDIA_TYPE.parse().expect("a valid header value"));
        let (status, got, body) = self
            .exchange(Method::GET, self.records.clone(), headers, None, pacer)
            .await?;
        if status != 200 {
            let e = if (200..300).contains(&status) {
                ProviderError::new(
                    ErrorClass::Permanent,
                    format!(
                        "{what} answered HTTP {status}; the protocol's answer is 200 with the records"
                    ),
                )
            } else {
                status_error(status, &body, &what, false)
            };
            return Err(with_retry_after(e, &got));
        }
        let records: Option<Vec<Endpoint>> = serde_json::from_slice(&body).map_err(|e| {
            ProviderError::new(
                ErrorClass::Transient,
                format!(
                    "{what}: the records cannot be decoded ({e}); nothing is taken as the zone's content: {}",
                    excerpt(&body)
                ),
            )
        })?;
        Ok(records.unwrap_or_default())
    }

    /// `POST /records` with `changes`: 204 exactly is success.
    pub(super) async fn apply(
        &self,
        changes: &Changes,
        pacer: &Pacer,
    ) -> Result<(), ProviderError> {
        let what = format!("POST {}", self.records.path());
        let body = serde_json::to_vec(changes).map_err(|e| {
            ProviderError::new(
                ErrorClass::Invalid,
                format!("cannot encode the changes: {e}"),
            )
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(
            CONTENT_TYPE,
            MEDIA_TYPE.parse().expect("a valid header value"),
        );
        let (status, got, answer) = self
            .exchange(
                Method::POST,
                self.records.clone(),
                headers,
                Some(body),
                pacer,
            )
            .await?;
        match status {
            204 => Ok(()),
            200..=299 => Err(ProviderError::new(
                ErrorClass::Ambiguous,
                format!(
                    "{what} answered HTTP {status}, not 204 (the protocol's only success): the changes may or may not have been applied{}",
                    match excerpt(&answer) {
                        t if t.is_empty() => String::new(),
                        t => format!(": {t}"),
                    }
                ),
            )),
            _ => Err(with_retry_after(
                status_error(status, &answer, &what, true),
                &got,
            )),
        }
    }
}

/// Keeps the server's `Retry-After` (seconds) on `e`.
fn with_retry_after(e: ProviderError, headers: &HeaderMap) -> ProviderError {
    match crate::provider::kit::http::retry_after(headers) {
        Some(after) => e.with_retry_after(after),
        None => e,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified_by_call() {
        use ErrorClass::*;
        for (status, read, write) in [
            (301, Permanent, Permanent),
            (400, Permanent, Invalid),
            (401, Permanent, Permanent),
            (404, Permanent, Permanent),
            (413, Permanent, Invalid),
            (422, Permanent, Invalid),
            (429, Transient, Transient),
            (500, Transient, Ambiguous),
            (502, Transient, Ambiguous),
            (504, Transient, Ambiguous),
        ] {
            assert_eq!(
                status_error(status, b"", "x", false).class,
                read,
                "GET {status}"
            );
            assert_eq!(
                status_error(status, b"", "x", true).class,
                write,
                "POST {status}"
            );
        }
        assert!(status_error(429, b"", "x", true).throttled);
        let long = "é".repeat(400);
        let m = status_error(400, long.as_bytes(), "POST /records", true).message;
        assert!(m.starts_with("POST /records answered HTTP 400: é"));
        assert!(m.len() < MAX_ERROR_TEXT + 50 && m.ends_with('…'), "{m}");
    }
}
