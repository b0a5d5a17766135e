//! NetBox's webhooks, received: an event rule on IP addresses POSTs each change here,
//! and the source re-reads that address.
//!
//! A webhook is only a hint. Its body names an object; what the object holds is read
//! from NetBox's API with the source's own token, never taken from the body. So a
//! forged or replayed webhook can at most cause a read. It is still refused unless
//! `X-Hook-Signature` is the hex HMAC-SHA512 of the body under the configured secret
//! (401, nothing read): a listener that anyone can make read is a listener anyone can
//! keep busy.
//!
//! A webhook that is never sent (a misconfigured rule, NetBox's rq worker down) costs
//! freshness only: the full read every `full_read_interval` finds the change.
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, KeyInit, Mac};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// NetBox sends one object with its pre- and post-change snapshots: a few kB.
const MAX_BODY: usize = 1 << 20;

/// What a webhook asks the source to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Read IP address `id` again (`deleted`: NetBox says it is gone).
    Address { id: u64, deleted: bool },
}

/// The receiver's state.
#[derive(Debug)]
pub struct Receiver {
    secret: Vec<u8>,
    events: mpsc::Sender<Event>,
    /// Set when an event could not be queued: the source then reads everything.
    overflowed: Arc<AtomicBool>,
    source: String,
}

/// The parts of NetBox's webhook body used (NetBox 4: `object_type`; 3: `model`).
#[derive(Debug, serde::Deserialize)]
struct Body {
    event: String,
    #[serde(default)]
    object_type: Option<String>,
    #[serde(default)]
    model: Option<String>,
    data: Data,
}

#[derive(Debug, serde::Deserialize)]
struct Data {
    id: u64,
}

impl Receiver {
    /// `secret` is the webhook's secret, as the file holds it (trimmed).
    pub fn new(
        secret: Vec<u8>,
        events: mpsc::Sender<Event>,
        overflowed: Arc<AtomicBool>,
        source: &str,
    ) -> Receiver {
        Receiver {
            secret,
            events,
            overflowed,
            source: source.to_string(),
        }
    }

    pub fn router(self: Arc<Self>) -> Router {
        Router::new()
            .fallback(axum::routing::post(receive))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(self)
    }

    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        tracing::info!(addr = %listener.local_addr()?, source = %self.source, "Receiving NetBox's webhooks.");
        axum::serve(listener, self.router())
            .with_graceful_shutdown(shutdown.cancelled_owned())
            .await
    }

    /// Whether `signature` (hex) is the HMAC-SHA512 of `body` (compared in constant
    /// time).
    fn signed(&self, body: &[u8], signature: &str) -> bool {
        let Ok(sig) = hex::decode(signature.trim()) else {
            return false;
        };
        let Ok(mut mac) = Hmac::<sha2::Sha512>::new_from_slice(&self.secret) else {
            return false;
        };
        mac.update(body);
        mac.verify_slice(&sig).is_ok()
    }
}

async fn receive(
    State(r): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let signature = headers
        .get("x-hook-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !r.signed(&body, signature) {
        tracing::warn!(source = %r.source, signed = !signature.is_empty(), "A NetBox webhook was refused: X-Hook-Signature is not the HMAC-SHA512 of its body under webhook_secret_file.");
        return (
            StatusCode::UNAUTHORIZED,
            "X-Hook-Signature is not the HMAC-SHA512 of the body under this source's secret\n"
                .into(),
        );
    }
    let body: Body = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("not a NetBox webhook body: {e}\n"),
            );
        }
    };
    let kind = body
        .object_type
        .as_deref()
        .or(body.model.as_deref())
        .unwrap_or_default();
    if !matches!(kind, "ipam.ipaddress" | "ipaddress") {
        tracing::debug!(source = %r.source, object_type = kind, "A NetBox webhook about an object this source does not read; ignored.");
        return (
            StatusCode::ACCEPTED,
            format!("{kind:?} is not read by this source\n"),
        );
    }
    let event = Event::Address {
        id: body.data.id,
        deleted: body.event == "deleted",
    };
    tracing::debug!(source = %r.source, event = %body.event, id = body.data.id, "NetBox webhook received.");
    if r.events.try_send(event).is_err() {
        // Too many at once (or the source stopping): a full read covers them all.
        r.overflowed.store(true, Ordering::Release);
    }
    (StatusCode::ACCEPTED, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &[u8], body: &[u8]) -> String {
        let mut mac = Hmac::<sha2::Sha512>::new_from_slice(secret).unwrap();
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    }

    /// A webhook served on loopback, posted to as NetBox posts.
    async fn serve() -> (
        String,
        mpsc::Receiver<Event>,
        Arc<AtomicBool>,
        CancellationToken,
    ) {
        let (tx, rx) = mpsc::channel(2);
        let flag = Arc::new(AtomicBool::new(false));
        let r = Arc::new(Receiver::new(
            b"s3cret".to_vec(),
            tx,
            flag.clone(),
            "netbox:test",
        ));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/netbox", listener.local_addr().unwrap());
        let stop = CancellationToken::new();
        tokio::spawn(r.serve(listener, stop.clone()));
        (url, rx, flag, stop)
    }

    async fn post(url: &str, body: &str, signature: Option<&str>) -> u16 {
        let mut req = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(s) = signature {
            req = req.header("X-Hook-Signature", s);
        }
        req.send().await.unwrap().status().as_u16()
    }

    /// NetBox 4.7's body for an IP address (trimmed), as its rq worker posts it.
    fn body(event: &str, id: u64) -> String {
        serde_json::json!({
            "event": event,
            "timestamp": "2026-11-30T13:00:00.000000+00:00",
            "object_type": "ipam.ipaddress",
            "username": "admin",
            "request_id": "5c1f0cf6-4b51-4c39-bd1b-0c0a2f0f3a1e",
            "data": {"id": id, "address": "192.0.2.10/24", "dns_name": "web.example.com"},
            "snapshots": {"prechange": null, "postchange": {"dns_name": "web.example.com"}}
        })
        .to_string()
    }

    #[tokio::test]
    async fn only_a_body_signed_with_the_secret_is_taken() {
        let (url, mut rx, _flag, stop) = serve().await;
        let b = body("updated", 7);
        assert_eq!(post(&url, &b, None).await, 401, "unsigned");
        assert_eq!(
            post(&url, &b, Some(&sign(b"other", b.as_bytes()))).await,
            401,
            "another secret"
        );
        assert_eq!(post(&url, &b, Some("zz-not-hex")).await, 401, "not hex");
        let other_body = body("updated", 8);
        assert_eq!(
            post(&url, &other_body, Some(&sign(b"s3cret", b.as_bytes()))).await,
            401,
            "a signature of another body"
        );
        assert!(rx.try_recv().is_err(), "nothing refused reaches the source");
        assert_eq!(
            post(&url, &b, Some(&sign(b"s3cret", b.as_bytes()))).await,
            202
        );
        assert_eq!(
            rx.recv().await,
            Some(Event::Address {
                id: 7,
                deleted: false
            })
        );
        let d = body("deleted", 9);
        assert_eq!(
            post(&url, &d, Some(&sign(b"s3cret", d.as_bytes()))).await,
            202
        );
        assert_eq!(
            rx.recv().await,
            Some(Event::Address {
                id: 9,
                deleted: true
            })
        );
        stop.cancel();
    }

    #[tokio::test]
    async fn other_objects_are_ignored_and_a_flood_asks_for_a_full_read() {
        let (url, mut rx, flag, stop) = serve().await;
        let prefix = serde_json::json!({"event": "created", "object_type": "ipam.prefix", "data": {"id": 1}}).to_string();
        assert_eq!(
            post(&url, &prefix, Some(&sign(b"s3cret", prefix.as_bytes()))).await,
            202
        );
        let junk = "{\"event\": 1}";
        assert_eq!(
            post(&url, junk, Some(&sign(b"s3cret", junk.as_bytes()))).await,
            400
        );
        assert!(rx.try_recv().is_err());
        assert!(!flag.load(Ordering::Acquire));
        // The queue holds two: the third asks for a full read instead.
        for id in 1..=3 {
            let b = body("updated", id);
            assert_eq!(
                post(&url, &b, Some(&sign(b"s3cret", b.as_bytes()))).await,
                202
            );
        }
        assert!(
            flag.load(Ordering::Acquire),
            "an event dropped is a full read owed"
        );
        stop.cancel();
    }
}
