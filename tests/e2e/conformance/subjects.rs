//! Each driver on its server, as a conformance [`Subject`].
use super::Subject;
use dnsplane_applier::provider::azure::{AzureConfig, AzureProvider};
use dnsplane_applier::provider::clouddns::{CloudDnsConfig, CloudDnsProvider};
use dnsplane_applier::provider::cloudflare::{CloudflareConfig, CloudflareProvider};
use dnsplane_applier::provider::memory::MemoryProvider;
use dnsplane_applier::provider::memory::store::MemoryStore;
use dnsplane_applier::provider::pdns::PdnsProvider;
use dnsplane_applier::provider::rfc2136::Rfc2136Provider;
use dnsplane_applier::provider::route53::credentials::EnvReader;
use dnsplane_applier::provider::route53::{Route53Config, Route53Provider};
use dnsplane_applier::provider::webhook::{WebhookConfig, WebhookProvider};
use dnsplane_common::Name;
use dnsplane_e2e::moto::Moto;
use dnsplane_e2e::servers::{Bind, PowerDns};
use dnsplane_e2e::webhook_reference::WebhookReference;
use dnsplane_emulate::clouddns::{CloudDnsEmulator, CloudDnsOptions, DEFAULT_TOKEN};
use dnsplane_emulate::cloudflare::{
    CloudflareEmulator, CloudflareOptions, DEFAULT_TOKEN as CLOUDFLARE_TOKEN,
};
use dnsplane_emulate::{
    DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY, Route53Emulator, Route53Options,
};
use std::collections::BTreeMap;
use std::sync::Arc;

pub fn memory() -> Subject {
    let dir = tempfile::tempdir().expect("temp dir");
    let zone = Name::parse("memory.test").expect("zone");
    let store = Arc::new(MemoryStore::open(dir.path()).expect("store"));
    let provider = MemoryProvider::new(store, vec![zone.clone()]).expect("provider");
    Subject::new("memory", provider, zone, dir)
}

pub fn pdns() -> Option<Subject> {
    let srv = PowerDns::start()?;
    let provider = PdnsProvider::new(&srv.config()).expect("provider");
    Some(Subject::new("pdns", provider, srv.zone.clone(), srv))
}

pub fn rfc2136() -> Option<Subject> {
    let srv = Bind::start()?;
    let provider = Rfc2136Provider::new(&srv.config(), &srv.zones()).expect("provider");
    Some(Subject::new("rfc2136", provider, srv.zone.clone(), srv))
}

/// Route 53 on dnsplane's emulator (faithful: atomic batches, exact DELETEs, AWS's
/// error texts, signatures checked), without its request quota: the cases call the
/// driver straight, without the applier's pacing (tested with the stack elsewhere).
pub async fn route53_emulated() -> Subject {
    let listener = dnsplane_e2e::loopback().await;
    let options = Route53Options {
        rate: 0.0,
        ..Route53Options::default()
    };
    let emulator = Route53Emulator::start(listener, options)
        .await
        .expect("emulator");
    let zone = Name::parse("route53.test").expect("zone");
    emulator.create_zone(zone.as_str(), false);
    let cfg = Route53Config {
        endpoint: emulator.endpoint(),
        ..Route53Config::default()
    };
    let provider = Route53Provider::with_env(&cfg, emulator_env()).expect("provider");
    Subject::new("route53 on its emulator", provider, zone, emulator)
}

/// The emulator's default keys, as the environment would hold them.
pub fn emulator_env() -> EnvReader {
    Arc::new(|k| match k {
        "AWS_ACCESS_KEY_ID" => Some(DEFAULT_ACCESS_KEY_ID.into()),
        "AWS_SECRET_ACCESS_KEY" => Some(DEFAULT_SECRET_ACCESS_KEY.into()),
        _ => None,
    })
}

/// Route 53 on moto, with a public and a private hosted zone of the same name: the
/// driver must pick the one `zone_ids` names.
pub fn route53_moto() -> Option<Subject> {
    let moto = Moto::start()?;
    let zone = Name::parse("route53.test").expect("zone");
    let _public = moto.create_zone(&zone, false);
    let private = moto.create_zone(&zone, true);
    let cfg = Route53Config {
        zone_ids: BTreeMap::from([(zone.clone(), private)]),
        ..moto.config()
    };
    let provider = Route53Provider::with_env(&cfg, Moto::env()).expect("provider");
    let subject = Subject::new("route53 on moto", provider, zone, moto);
    Some(Subject {
        faithful: false,
        ..subject
    })
}

/// Cloud DNS on its emulator (in-process, 127.0.0.1:0): atomic Changes, exact
/// deletions and Google's error bodies, so it runs every case.
pub async fn clouddns() -> Subject {
    let listener = dnsplane_e2e::loopback().await;
    let emu = CloudDnsEmulator::start(listener, CloudDnsOptions::default())
        .await
        .expect("emulator");
    let zone = Name::parse("clouddns.test").expect("zone");
    emu.create_zone("clouddns-test", "clouddns.test.");
    let cfg = CloudDnsConfig {
        endpoint: emu.endpoint(),
        ..CloudDnsConfig::new(emu.project())
    };
    let env: dnsplane_applier::provider::clouddns::credentials::EnvReader =
        Arc::new(|k| (k == "GOOGLE_OAUTH_ACCESS_TOKEN").then(|| DEFAULT_TOKEN.to_string()));
    let provider = CloudDnsProvider::with_env(&cfg, env).expect("provider");
    Subject::new("clouddns on its emulator", provider, zone, emu)
}

/// Cloudflare on its emulator (in-process on 127.0.0.1:0, Cloudflare's defaults: a
/// paid plan, the rate limits on), the token read from a file.
pub async fn cloudflare() -> Subject {
    let listener = dnsplane_e2e::loopback().await;
    let emu = CloudflareEmulator::start(listener, CloudflareOptions::default())
        .await
        .expect("emulator");
    let zone = Name::parse("cloudflare.test").expect("zone");
    emu.create_zone("cloudflare.test");
    let dir = tempfile::tempdir().expect("temp dir");
    let token = dir.path().join("token");
    std::fs::write(&token, CLOUDFLARE_TOKEN).expect("token file");
    let provider = CloudflareProvider::new(&CloudflareConfig {
        endpoint: emu.endpoint(),
        api_token_file: Some(token),
        ..CloudflareConfig::default()
    })
    .expect("provider");
    Subject::new("cloudflare on its emulator", provider, zone, (emu, dir))
}

/// The `azure` driver on dnsplane's Azure DNS emulator (in-process, 127.0.0.1:0),
/// public zones. Not atomic across changes (Azure has no multi-record-set batch):
/// the suite checks each change's own outcome.
pub async fn azure() -> Subject {
    use dnsplane_emulate::azure::{
        AzureEmulator, AzureOptions, DEFAULT_RESOURCE_GROUP, DEFAULT_SUBSCRIPTION,
        DEFAULT_TOKEN as AZURE_TOKEN,
    };
    let listener = dnsplane_e2e::loopback().await;
    // The cases call the driver directly, without the account's pacing, and write
    // more record sets than ARM's 200-write (and delete) burst: the subscription quota is off
    // here (its 429s are the integration tests' subject).
    let mut options = AzureOptions::default();
    let quota = &mut options.throttle;
    quota.reads_per_second = 0.0;
    quota.writes_per_second = 0.0;
    quota.deletes_per_second = 0.0;
    let emu = AzureEmulator::start(listener, options)
        .await
        .expect("emulator");
    emu.create_zone("azure.test");
    let zone = Name::parse("azure.test").expect("zone");
    let dir = tempfile::tempdir().expect("temp dir");
    let token = dir.path().join("token");
    std::fs::write(&token, AZURE_TOKEN).expect("token file");
    let mut cfg = AzureConfig::new(DEFAULT_SUBSCRIPTION, DEFAULT_RESOURCE_GROUP);
    cfg.endpoint = emu.endpoint();
    cfg.authority_host = emu.endpoint();
    cfg.token_file = Some(token);
    let provider = AzureProvider::new(&cfg).expect("provider");
    Subject::new("azure on its emulator", provider, zone, (emu, dir))
}

/// An external-dns webhook server: the test tree's reference server (in-process,
/// 127.0.0.1:0, written from the protocol text), managing the zone by its domain
/// filter. Not atomic, as no webhook server is: the suite checks the conflict cases'
/// outcomes but not that a failed batch committed nothing.
pub async fn webhook() -> Subject {
    let zone = Name::parse("webhook.test").expect("zone");
    let server = WebhookReference::start(serde_json::json!({"include": ["webhook.test"]})).await;
    let provider = WebhookProvider::new(
        &WebhookConfig {
            url: server.url(),
            ..WebhookConfig::default()
        },
        std::slice::from_ref(&zone),
    )
    .expect("provider");
    Subject::new("webhook on the reference server", provider, zone, server)
}

/// The `webhook` driver against dnsplane's own webhook server (the planner's
/// `[webhook]`, in-process on 127.0.0.1:0, with a durable store in a temp dir): the
/// round trip of external-dns's protocol through both of dnsplane's sides. What the
/// driver writes is the server's pushed desired state, read back by `GET /records`.
pub async fn webhook_dnsplane() -> Subject {
    use dnsplane_planner::config::{PlannerConfig, ZoneConfig};
    use dnsplane_planner::engine::Engine;
    use dnsplane_planner::metrics::PlannerMetrics;
    let zone = Name::parse("webhook.test").expect("zone");
    let dir = tempfile::tempdir().expect("temp dir");
    let engine = Engine::new(
        PlannerConfig::with_zones(vec![ZoneConfig::new(zone.clone(), "webhook")]),
        PlannerMetrics::unregistered(),
        dnsplane_planner::lease::LeaseHandle::sole_writer(),
    )
    .expect("engine");
    engine.set_store(dnsplane_planner::store::DesiredStore::open(dir.path()).expect("store"));
    let hook = dnsplane_planner::webhook::Webhook::new(
        engine,
        PlannerMetrics::unregistered(),
        &dnsplane_planner::config::WebhookConfig {
            listen: "127.0.0.1:0".parse().expect("addr"),
            source: "external-dns".into(),
        },
    );
    let listener = dnsplane_e2e::loopback().await;
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(hook.serve(listener, None, stop.clone()));
    let provider = WebhookProvider::new(
        &WebhookConfig {
            url,
            ..WebhookConfig::default()
        },
        std::slice::from_ref(&zone),
    )
    .expect("provider");
    Subject::new(
        "webhook on dnsplane's own webhook server",
        provider,
        zone,
        (dir, stop.drop_guard()),
    )
}
