//! Google Cloud DNS for the full-stack stories: dnsplane's emulator
//! (`dnsplane_emulate::clouddns`, Google's `dns/v1` semantics, bearer tokens checked)
//! in a runtime of its own, as for Route 53 ([`super::route53`]).
//!
//! The applier's credentials come from its account only: a `credentials_file` of type
//! `authorized_user`, as `gcloud auth application-default login` writes it, whose
//! `token_uri` is a stub OAuth token endpoint served here; it exchanges the file's
//! refresh token for the emulator's token. (The driver reads no credentials file
//! holding a token as it is; `GOOGLE_OAUTH_ACCESS_TOKEN` would be the test process's
//! environment.)
//!
//! The emulator's defaults stay (no request quota: Google publishes none, and the
//! driver sets none), but for one: a zone may hold 50,000 record sets instead of
//! 10,000 (Google raises that quota on request), because every dnsplane record has an
//! ownership record beside it and the large-zone story keeps 10,000 records.
use super::emulated::{self, Writer};
use dnsplane_applier::provider::clouddns::credentials::EnvReader;
use dnsplane_applier::provider::clouddns::{CloudDnsConfig, CloudDnsProvider};
use dnsplane_common::Name;
use dnsplane_emulate::FaultRule;
use dnsplane_emulate::clouddns::{CloudDnsEmulator, CloudDnsOptions, DEFAULT_TOKEN};
use std::path::PathBuf;
use std::sync::Arc;

/// The refresh token of the credentials file; the token endpoint takes no other.
const REFRESH_TOKEN: &str = "emulator-refresh-token";

/// A Cloud DNS emulator with one public managed zone, `clouddns-test` for
/// `clouddns.test.`, and the token endpoint the applier's credentials file names.
#[derive(Debug)]
pub struct EmulatedCloudDns {
    pub emulator: CloudDnsEmulator,
    pub zone: Name,
    /// The managed zone's name.
    pub managed_zone: String,
    /// The `authorized_user` credentials file of the applier's account.
    pub credentials_file: PathBuf,
    /// `http://127.0.0.1:PORT/token`: the OAuth token endpoint.
    pub token_uri: String,
    _dir: tempfile::TempDir,
    writer: Writer,
}

/// The emulator's token, as an environment would hold it (the writer's only).
fn emulator_env() -> EnvReader {
    Arc::new(|k| (k == "GOOGLE_OAUTH_ACCESS_TOKEN").then(|| DEFAULT_TOKEN.to_string()))
}

impl EmulatedCloudDns {
    pub fn start() -> EmulatedCloudDns {
        EmulatedCloudDns::start_with_zone_quota(50_000)
    }

    /// As [`start`](Self::start), a zone holding at most `rrsets` record sets.
    pub fn start_with_zone_quota(rrsets: usize) -> EmulatedCloudDns {
        let rt = emulated::runtime();
        let mut opts = CloudDnsOptions::default();
        opts.limits.rrsets_per_zone = rrsets;
        let emulator = rt
            .block_on(CloudDnsEmulator::start(emulated::listener(&rt), opts))
            .expect("emulator");
        let zone = Name::parse("clouddns.test").expect("zone");
        let managed_zone = emulator.create_zone("clouddns-test", zone.as_str());
        let token_uri = format!(
            "http://{}/token",
            token_endpoint(&rt, emulated::listener(&rt))
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let credentials_file = dir.path().join("application_default_credentials.json");
        std::fs::write(
            &credentials_file,
            serde_json::json!({
                "type": "authorized_user",
                "client_id": "dnsplane-e2e.apps.googleusercontent.com",
                "client_secret": "emulator-client-secret",
                "refresh_token": REFRESH_TOKEN,
                "token_uri": token_uri,
            })
            .to_string(),
        )
        .expect("write credentials");
        let mut cfg = CloudDnsConfig::new(emulator.project());
        cfg.endpoint = emulator.endpoint();
        let provider = CloudDnsProvider::with_env(&cfg, emulator_env()).expect("writer");
        EmulatedCloudDns {
            emulator,
            zone: zone.clone(),
            managed_zone,
            credentials_file,
            token_uri,
            _dir: dir,
            writer: Writer::new(rt, zone, Box::new(provider)),
        }
    }

    /// The applier's account for it, as docs/providers.md tells users.
    pub fn account_toml(&self, account: &str) -> String {
        format!(
            "[[accounts]]\nname = \"{account}\"\ndriver = \"clouddns\"\nzones = [\"{}\"]\n\
             project = \"{}\"\nendpoint = \"{}\"\ncredentials_file = \"{}\"\n",
            self.zone,
            self.emulator.project(),
            self.emulator.endpoint(),
            self.credentials_file.display()
        )
    }

    /// Arms a fault rule.
    pub fn add_fault(&self, rule: FaultRule) {
        self.emulator.add_fault(rule);
    }

    /// Changes the emulator committed (`changes.create` calls that went through).
    pub fn writes(&self) -> u64 {
        self.emulator.stats().changes_committed
    }
}

impl emulated::EmulatedCloud for EmulatedCloudDns {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    fn listing(&self) -> Vec<emulated::Line> {
        self.emulator
            .rrsets(&self.managed_zone)
            .into_iter()
            .flat_map(|s| {
                let name = emulated::absolute(&s.name);
                s.rrdatas
                    .into_iter()
                    .map(move |v| (name.clone(), s.ttl, s.rtype.clone(), v))
            })
            .collect()
    }
}

/// Serves a stub of Google's OAuth token endpoint on `listener`: the refresh-token
/// grant of the credentials file gets the emulator's token for an hour; anything else
/// is `invalid_grant`, as Google answers it.
fn token_endpoint(
    rt: &tokio::runtime::Runtime,
    listener: tokio::net::TcpListener,
) -> std::net::SocketAddr {
    use axum::http::StatusCode;
    use axum::routing::post;
    let addr = listener.local_addr().expect("token endpoint address");
    let app = axum::Router::new().route(
        "/token",
        post(|body: String| async move {
            let form: std::collections::BTreeMap<String, String> =
                url_form(&body).into_iter().collect();
            let ok = form.get("grant_type").map(String::as_str) == Some("refresh_token")
                && form.get("refresh_token").map(String::as_str) == Some(REFRESH_TOKEN);
            if ok {
                (
                    StatusCode::OK,
                    serde_json::json!({
                        "access_token": DEFAULT_TOKEN,
                        "expires_in": 3599,
                        "scope": "https://www.googleapis.com/auth/ndev.clouddns.readwrite",
                        "token_type": "Bearer",
                    })
                    .to_string(),
                )
            } else {
                (
                    StatusCode::BAD_REQUEST,
                    serde_json::json!({
                        "error": "invalid_grant",
                        "error_description": "Bad Request",
                    })
                    .to_string(),
                )
            }
        }),
    );
    rt.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    addr
}

/// An `application/x-www-form-urlencoded` body's pairs.
fn url_form(body: &str) -> Vec<(String, String)> {
    reqwest::Url::parse(&format!("http://form.invalid/?{body}"))
        .map(|u| u.query_pairs().into_owned().collect())
        .unwrap_or_default()
}
