//! `dnsplane up`: planner and applier in one process, on loopback, with the embedded
//! provider; everything a first try needs and nothing else.
use anyhow::Context;
use dnsplane_common::Name;
use dnsplane_planner::config::{
    ConflictPolicy, PlannerConfig, Policy, SourceConfig, SyncConfig, ZoneConfig,
};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// Desired state: DNSEndpoint manifests (file or directory).
    #[arg(long, default_value = "deploy/examples/desired")]
    desired: Vec<PathBuf>,
    /// Zones to host in the embedded provider and keep in sync.
    #[arg(long, default_value = "example.com.")]
    zone: Vec<Name>,
    #[arg(
        long,
        env = "DNSPLANE_PLANNER_LISTEN",
        default_value = "127.0.0.1:50051"
    )]
    planner_listen: String,
    #[arg(
        long,
        env = "DNSPLANE_APPLIER_LISTEN",
        default_value = "127.0.0.1:50052"
    )]
    applier_listen: String,
    /// Where the embedded provider answers DNS (UDP and TCP).
    #[arg(long, env = "DNSPLANE_DNS_LISTEN", default_value = "127.0.0.1:10053")]
    dns_listen: String,
    /// Where the embedded provider keeps its zones across restarts.
    #[arg(long, env = "DNSPLANE_STATE_DIR", default_value = ".dnsplane-state")]
    state_dir: PathBuf,
    /// Full re-read of every zone this often.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    interval: std::time::Duration,
    /// Planner admin HTTP address (/metrics, /healthz, /readyz, /status); off unless given.
    #[arg(long, env = "DNSPLANE_PLANNER_ADMIN_LISTEN")]
    admin_listen: Option<String>,
}

pub async fn up(args: UpArgs) -> anyhow::Result<std::process::ExitCode> {
    for p in &args.desired {
        if !p.exists() {
            eprintln!(
                "dnsplane up: desired state {} does not exist (run from the repository root, or pass --desired PATH)",
                p.display()
            );
            return Ok(std::process::ExitCode::from(dnsplane_cli::EXIT_BAD_CONFIG));
        }
    }
    let applier_listener = tokio::net::TcpListener::bind(&args.applier_listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (applier gRPC; --applier-listen)",
                args.applier_listen
            )
        })?;
    let planner_listener = tokio::net::TcpListener::bind(&args.planner_listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (planner gRPC; --planner-listen)",
                args.planner_listen
            )
        })?;
    let admin = match &args.admin_listen {
        Some(addr) => Some(
            dnsplane_common::metrics::bind(addr)
                .await
                .context("--admin-listen")?,
        ),
        None => None,
    };
    let dns_listen: std::net::SocketAddr = args.dns_listen.parse().with_context(|| {
        format!(
            "--dns-listen {:?} is not an address like 127.0.0.1:10053",
            args.dns_listen
        )
    })?;
    let applier_config = dnsplane_applier::ApplierConfig::embedded(
        args.state_dir.join("embedded"),
        Some(dns_listen),
        args.zone.clone(),
    );
    let zones = args
        .zone
        .iter()
        .map(|z| ZoneConfig {
            name: z.clone(),
            account: "embedded".into(),
            policy: Policy::Sync,
            conflict: ConflictPolicy::Report,
            default_ttl: 300,
        })
        .collect();
    let planner_config = PlannerConfig {
        owner_id: "dnsplane".into(),
        applier: format!("http://{}", applier_listener.local_addr()?),
        sync: SyncConfig {
            interval: args.interval,
            ..SyncConfig::default()
        },
        sources: vec![SourceConfig::File {
            paths: args.desired.clone(),
        }],
        state_dir: args.state_dir.join("planner"),
        // A second `dnsplane up` on the same state directory stands by.
        lease: Default::default(),
        ..PlannerConfig::with_zones(zones)
    };
    planner_config
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid settings: {e}"))?;
    let shutdown: CancellationToken = dnsplane_common::runtime::shutdown_on_signal();
    eprintln!(
        "dnsplane up: planner gRPC {}, applier gRPC {}, DNS {} (UDP+TCP), state in {}. Ctrl-C to stop.",
        args.planner_listen,
        args.applier_listen,
        args.dns_listen,
        args.state_dir.display()
    );
    let applier = tokio::spawn(dnsplane_applier::run(
        applier_config,
        dnsplane_applier::Listeners {
            grpc: applier_listener,
            admin: None,
        },
        shutdown.clone(),
    ));
    let planner = dnsplane_planner::run(
        planner_config,
        dnsplane_planner::Listeners {
            grpc: planner_listener,
            admin,
        },
        shutdown.clone(),
    )
    .await;
    shutdown.cancel();
    let applier = applier.await.context("applier task")?;
    planner.context("planner")?;
    applier.context("applier")?;
    Ok(std::process::ExitCode::SUCCESS)
}
