//! The pieces of one HTTP exchange that every driver of an HTTP API shares; what a
//! request carries and what an answer means stay in each driver's `wire.rs`.
use crate::provider::call::Pacer;
use crate::provider::{Operation, ProviderError};
use reqwest::header::{HeaderMap, RETRY_AFTER};
use reqwest::{Method, RequestBuilder, Url};
use std::time::Duration;

/// Whether a request by `method` writes: anything but a GET (or HEAD).
pub fn is_write(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD)
}

/// Takes the call's quota token for one request by `method`, right before it is sent
/// (a write's token for a write, a read's for anything else); whether it writes.
pub async fn admit(pacer: &Pacer, method: &Method) -> Result<bool, ProviderError> {
    let write = is_write(method);
    pacer
        .request(if write {
            Operation::Apply
        } else {
            Operation::List
        })
        .await?;
    Ok(write)
}

/// `req` with the W3C trace context of the current span (nothing while tracing is
/// off), so the provider call shows in the trace of the batch that made it.
pub fn traced(req: RequestBuilder) -> RequestBuilder {
    let mut trace = HeaderMap::new();
    dnsplane_common::telemetry::inject_http_headers(&mut trace);
    if trace.is_empty() {
        req
    } else {
        req.headers(trace)
    }
}

/// An answer's `Retry-After` in seconds (the HTTP-date form is not sent by the
/// providers dnsplane drives, and is ignored).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// `base` with `segments` appended (each percent-encoded as one segment) and `query`.
pub fn url(base: &Url, segments: &[&str], query: &[(&str, &str)]) -> Url {
    let mut url = base.clone();
    if let Ok(mut path) = url.path_segments_mut() {
        path.pop_if_empty().extend(segments);
    }
    if !query.is_empty() {
        url.query_pairs_mut().extend_pairs(query);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_encode_each_segment_and_keep_the_base_path() {
        let base = Url::parse("http://127.0.0.1:1/client/v4").unwrap();
        assert_eq!(
            url(&base, &["zones", "a/b"], &[("name", "x y")]).as_str(),
            "http://127.0.0.1:1/client/v4/zones/a%2Fb?name=x+y"
        );
        let root = Url::parse("http://127.0.0.1:1/").unwrap();
        assert_eq!(url(&root, &["z"], &[]).as_str(), "http://127.0.0.1:1/z");
    }

    #[test]
    fn retry_after_reads_seconds_only() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert(RETRY_AFTER, " 7 ".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(7)));
        h.insert(
            RETRY_AFTER,
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&h), None);
        assert!(is_write(&Method::PATCH) && !is_write(&Method::GET));
    }
}
