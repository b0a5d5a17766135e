//! NetBox's webhooks, received: an event rule on IP addresses (and the plugin's records
//! and zones) POSTs each change here, and the source re-reads that object.
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
    /// Read plugin record `id` again.
    PluginRecord { id: u64, deleted: bool },
    /// A plugin zone or view changed: its records' view, TTL or activity may have, so
    /// everything is read again.
    PluginZone,
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
    #[serde(default)]
    snapshots: Option<Snapshots>,
}

/// The object before and after the change, as NetBox serialises it.
#[derive(Debug, Default, serde::Deserialize)]
struct Snapshots {
    #[serde(default)]
    prechange: Option<serde_json::Value>,
    #[serde(default)]
    postchange: Option<serde_json::Value>,
}

impl Snapshots {
    /// Whether the change touched nothing but `dnsplane_status` (and the time of the
    /// change, and a plugin zone's serial): the write-back's own echo, which has nothing
    /// to read again.
    fn only_status(&self) -> bool {
        let strip = |v: &serde_json::Value| {
            let mut v = v.clone();
            if let Some(o) = v.as_object_mut() {
                o.remove("last_updated");
                // A plugin zone's serial, bumped by each change of its records (the
                // write-back's included): dnsplane never writes the SOA.
                o.remove("soa_serial");
                if let Some(cf) = o.get_mut("custom_fields").and_then(|c| c.as_object_mut()) {
                    cf.remove(super::write_back::FIELD);
                }
            }
            v
        };
        match (&self.prechange, &self.postchange) {
            (Some(pre @ serde_json::Value::Object(_)), Some(post)) => strip(pre) == strip(post),
            _ => false,
        }
    }
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
    let (id, deleted) = (body.data.id, body.event == "deleted");
    let event = match kind {
        "ipam.ipaddress" | "ipaddress" => Event::Address { id, deleted },
        "netbox_dns.record" => Event::PluginRecord { id, deleted },
        "netbox_dns.zone" | "netbox_dns.view" => Event::PluginZone,
        _ => {
            tracing::debug!(source = %r.source, object_type = kind, "A NetBox webhook about an object this source does not read; ignored.");
            return (
                StatusCode::ACCEPTED,
                format!("{kind:?} is not read by this source\n"),
            );
        }
    };
    if body.snapshots.as_ref().is_some_and(Snapshots::only_status) {
        tracing::debug!(source = %r.source, id = body.data.id, "A NetBox webhook for a change of dnsplane_status alone (the write-back's own); nothing to read.");
        return (
            StatusCode::ACCEPTED,
            "only dnsplane_status changed: nothing to read\n".into(),
        );
    }
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
    async fn the_write_backs_own_echo_is_not_read_again_but_any_other_change_is() {
        let (url, mut rx, _flag, stop) = serve().await;
        let change = |pre: serde_json::Value, post: serde_json::Value| {
            serde_json::json!({
                "event": "updated", "object_type": "netbox_dns.record", "data": {"id": 4},
                "snapshots": {"prechange": pre, "postchange": post},
            })
            .to_string()
        };
        let echo = change(
            serde_json::json!({"value": "192.0.2.1", "last_updated": "t1", "custom_fields": {"dnsplane_status": "", "rack": "r1"}}),
            serde_json::json!({"value": "192.0.2.1", "last_updated": "t2", "custom_fields": {"dnsplane_status": "converged", "rack": "r1"}}),
        );
        assert_eq!(
            post(&url, &echo, Some(&sign(b"s3cret", echo.as_bytes()))).await,
            202
        );
        assert!(rx.try_recv().is_err(), "the echo is dropped");
        for b in [
            // Its value, another custom field, or a create (no prechange): read again.
            change(
                serde_json::json!({"value": "192.0.2.1", "custom_fields": {"dnsplane_status": "converged"}}),
                serde_json::json!({"value": "192.0.2.2", "custom_fields": {"dnsplane_status": "converged"}}),
            ),
            change(
                serde_json::json!({"value": "192.0.2.1", "custom_fields": {"rack": "r1"}}),
                serde_json::json!({"value": "192.0.2.1", "custom_fields": {"rack": "r2"}}),
            ),
            change(
                serde_json::Value::Null,
                serde_json::json!({"value": "192.0.2.1"}),
            ),
        ] {
            assert_eq!(
                post(&url, &b, Some(&sign(b"s3cret", b.as_bytes()))).await,
                202
            );
            assert_eq!(
                rx.recv().await,
                Some(Event::PluginRecord {
                    id: 4,
                    deleted: false
                }),
                "{b}"
            );
        }
        let zone = serde_json::json!({"event": "updated", "object_type": "netbox_dns.zone", "data": {"id": 2}}).to_string();
        assert_eq!(
            post(&url, &zone, Some(&sign(b"s3cret", zone.as_bytes()))).await,
            202
        );
        assert_eq!(rx.recv().await, Some(Event::PluginZone));
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
