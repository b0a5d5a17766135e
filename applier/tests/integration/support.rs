//! Test harness: an applier started in-process on 127.0.0.1:0 with a memory account,
//! a gRPC client for it, and record builders.
use dnsplane_applier::provider::route53::credentials::EnvReader;
use dnsplane_applier::provider::route53::{Route53Config, Route53Provider};
use dnsplane_applier::{Applier, ApplierConfig, MemoryStore};
use dnsplane_common::pb::applier_client::ApplierClient;
use dnsplane_common::{Change, Name, RRSet, RRSetOp, pb};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tonic::transport::Channel;

pub const ACCOUNT: &str = "embedded";

pub use dnsplane_testing::records::{a, create, other_zone, rrset, zone};

/// An `Apply` request of the test account.
pub fn batch(id: &str, zone: &Name, changes: &[Change]) -> pb::ApplyRequest {
    dnsplane_testing::records::batch(id, ACCOUNT, zone, changes)
}

/// Writes records as "another writer" would: straight into the store, while no
/// applier has it open.
pub fn seed(dir: &Path, zone: &Name, rrsets: &[RRSet]) {
    let store = MemoryStore::open(dir).unwrap();
    store.ensure_zones(std::slice::from_ref(zone)).unwrap();
    let ops: Vec<RRSetOp> = rrsets.iter().cloned().map(RRSetOp::create).collect();
    store.apply(zone, &ops).unwrap();
}

pub struct Running {
    pub grpc: SocketAddr,
    pub dns: SocketAddr,
    pub shutdown: CancellationToken,
    pub task: JoinHandle<Result<(), dnsplane_applier::ApplierError>>,
}

impl Running {
    /// [`Running::start`] in a new temporary state directory (kept as long as the
    /// returned `TempDir`).
    pub async fn fresh() -> (tempfile::TempDir, Running) {
        let dir = tempfile::tempdir().unwrap();
        let app = Running::start(dir.path()).await;
        (dir, app)
    }

    pub async fn start(state_dir: &Path) -> Running {
        let dns_listen = Some("127.0.0.1:0".parse().unwrap());
        let config = ApplierConfig::embedded(
            PathBuf::from(state_dir),
            dns_listen,
            vec![zone(), other_zone()],
        );
        let applier = Applier::new(config).await.unwrap();
        let dns = applier.dns_addrs()[0].1;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let grpc = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(applier.serve(
            dnsplane_applier::Listeners {
                grpc: listener,
                admin: None,
            },
            shutdown.clone(),
        ));
        Running {
            grpc,
            dns,
            shutdown,
            task,
        }
    }

    pub async fn client(&self) -> ApplierClient<Channel> {
        ApplierClient::connect(format!("http://{}", self.grpc))
            .await
            .unwrap()
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(format!("http://{}", self.grpc))
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    /// Cancels and waits for `run` to return.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.unwrap().unwrap();
    }
}

/// Every RRSet of `zone`, fresh, all pages joined.
pub async fn list(client: &mut ApplierClient<Channel>, zone: &Name) -> (Vec<pb::RrSet>, u64) {
    let req = pb::ListRecordsRequest {
        account: ACCOUNT.into(),
        zone: zone.to_string(),
        fresh: true,
        ..Default::default()
    };
    let mut stream = client.list_records(req).await.unwrap().into_inner();
    let mut out = Vec::new();
    let mut serial = 0;
    while let Some(page) = stream.message().await.unwrap() {
        out.extend(page.rrsets);
        serial = page.serial;
        if page.last {
            break;
        }
    }
    (out, serial)
}

/// A Route 53 emulator (`options`, without its quota) holding `zone`: the emulator,
/// the zone's hosted zone id, and a driver config for it.
pub async fn route53_with_zone(
    zone: &Name,
    options: dnsplane_emulate::Route53Options,
) -> (dnsplane_emulate::Route53Emulator, String, Route53Config) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let options = dnsplane_emulate::Route53Options {
        rate: 0.0,
        ..options
    };
    let emulator = dnsplane_emulate::Route53Emulator::start(listener, options)
        .await
        .unwrap();
    let id = emulator.create_zone(zone.as_str(), false);
    let cfg = Route53Config {
        endpoint: emulator.endpoint(),
        ..Route53Config::default()
    };
    (emulator, id, cfg)
}

/// A Route 53 driver for `cfg` with the emulator's default credentials.
pub fn route53_driver(cfg: &Route53Config) -> Route53Provider {
    let env: EnvReader = std::sync::Arc::new(|k| match k {
        "AWS_ACCESS_KEY_ID" => Some(dnsplane_emulate::DEFAULT_ACCESS_KEY_ID.into()),
        "AWS_SECRET_ACCESS_KEY" => Some(dnsplane_emulate::DEFAULT_SECRET_ACCESS_KEY.into()),
        _ => None,
    });
    Route53Provider::with_env(cfg, env).unwrap()
}

/// An `Apply` stream on `client`: the sender of its requests (`capacity` of them
/// buffered) and the stream of its responses.
pub async fn apply_stream(
    client: &mut ApplierClient<Channel>,
    capacity: usize,
) -> (
    tokio::sync::mpsc::Sender<pb::ApplyRequest>,
    tonic::Streaming<pb::ApplyResponse>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel(capacity);
    let stream = tokio_stream::wrappers::ReceiverStream::new(rx);
    let responses = client.apply(stream).await.unwrap().into_inner();
    (tx, responses)
}
