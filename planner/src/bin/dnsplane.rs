//! `dnsplane`: the CLI for people. `up` runs planner and applier on loopback with the
//! embedded provider; `plan`, `status`, `records` and `sync` talk to a running planner.
use anyhow::Context;
use clap::{Parser, Subcommand};
use dnsplane_common::Name;
use dnsplane_common::pb::{self, planner_client::PlannerClient};
use dnsplane_planner::config::{
    BatchConfig, ConflictPolicy, PlannerConfig, Policy, SourceConfig, SyncConfig, ZoneConfig,
};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Parser)]
#[command(
    name = "dnsplane",
    version,
    about = "Keep DNS zones equal to a declared desired state"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run planner and applier on loopback with the embedded provider.
    Up(UpArgs),
    /// Print the changes a sync would make now (a dry run).
    Plan {
        #[command(flatten)]
        conn: Conn,
        /// Only these zones.
        #[arg(long)]
        zone: Vec<String>,
    },
    /// Print the planner's status per zone.
    Status {
        #[command(flatten)]
        conn: Conn,
    },
    /// List records that are not converged (conflicts, invalid, failed, ...).
    Records {
        #[command(flatten)]
        conn: Conn,
        #[arg(long, default_value = "")]
        zone: String,
        /// Include converged records.
        #[arg(long)]
        all: bool,
    },
    /// Trigger a sync now and follow its progress.
    Sync {
        #[command(flatten)]
        conn: Conn,
        #[arg(long)]
        zone: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
struct Conn {
    /// Planner gRPC address.
    #[arg(
        long,
        env = "DNSPLANE_PLANNER_ADDR",
        default_value = "http://127.0.0.1:50051"
    )]
    addr: String,
}

#[derive(Debug, clap::Args)]
struct UpArgs {
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

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dnsplane: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let run = async {
        // `up` runs the services: logs plus traces when OTEL_EXPORTER_OTLP_ENDPOINT is
        // set, flushed at the end. The other commands are clients: logs only.
        if matches!(cli.command, Command::Up(_)) {
            let telemetry = dnsplane_common::telemetry::init("dnsplane");
            let result = dispatch(cli.command).await;
            telemetry.shutdown().await;
            result
        } else {
            dnsplane_common::runtime::init_logging();
            dispatch(cli.command).await
        }
    };
    match runtime.block_on(run) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("dnsplane: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn dispatch(command: Command) -> anyhow::Result<std::process::ExitCode> {
    match command {
        Command::Up(args) => up(args).await,
        Command::Plan { conn, zone } => plan(conn, zone).await,
        Command::Status { conn } => status(conn).await,
        Command::Records { conn, zone, all } => records(conn, zone, all).await,
        Command::Sync { conn, zone } => sync(conn, zone).await,
    }
}

async fn up(args: UpArgs) -> anyhow::Result<std::process::ExitCode> {
    for p in &args.desired {
        if !p.exists() {
            eprintln!(
                "dnsplane up: desired state {} does not exist (run from the repository root, or pass --desired PATH)",
                p.display()
            );
            return Ok(std::process::ExitCode::from(64));
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
    let planner_config = PlannerConfig {
        owner_id: "dnsplane".into(),
        applier: format!("http://{}", applier_listener.local_addr()?),
        appliers: vec![],
        applier_dns: None,
        pool: Default::default(),
        sync: SyncConfig {
            interval: args.interval,
            ..SyncConfig::default()
        },
        batch: BatchConfig::default(),
        zones: args
            .zone
            .iter()
            .map(|z| ZoneConfig {
                name: z.clone(),
                account: "embedded".into(),
                policy: Policy::Sync,
                conflict: ConflictPolicy::Report,
                default_ttl: 300,
            })
            .collect(),
        sources: vec![SourceConfig::File {
            paths: args.desired.clone(),
        }],
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
        applier_listener,
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

async fn connect(conn: &Conn) -> anyhow::Result<PlannerClient<tonic::transport::Channel>> {
    PlannerClient::connect(conn.addr.clone())
        .await
        .with_context(|| {
            format!(
                "cannot reach the planner at {} (is `dnsplane up` running? --addr)",
                conn.addr
            )
        })
}

fn status_err(s: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("{}: {}", s.code(), s.message())
}

fn show(r: Option<&pb::RrSet>) -> String {
    match r {
        None => "nothing".into(),
        Some(r) => format!("{} {}", r.ttl, r.values.join(" | ")),
    }
}

async fn plan(conn: Conn, zones: Vec<String>) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let mut total = 0;
    let mut held = 0;
    let mut token = String::new();
    let mut last_zone = String::new();
    loop {
        let resp = client
            .plan(pb::PlanRequest {
                zones: zones.clone(),
                fresh: true,
                page_size: 1000,
                page_token: token.clone(),
            })
            .await
            .map_err(status_err)?
            .into_inner();
        for z in resp.zones {
            // A zone spread over several pages gets one header.
            if z.zone != last_zone {
                println!("zone {}", z.zone);
                if z.changes.is_empty() && z.blocked.is_empty() && z.error.is_empty() {
                    println!("  in sync");
                }
                last_zone = z.zone.clone();
            }
            if !z.error.is_empty() {
                println!("  error: {}", z.error);
                continue;
            }
            for c in &z.changes {
                total += 1;
                let Some(change) = &c.change else { continue };
                let Some(op) = change.ops.first() else {
                    continue;
                };
                let key = op.key.clone().unwrap_or_default();
                let kind = pb::ChangeKind::try_from(change.kind).unwrap_or_default();
                let (sign, body) = match kind {
                    pb::ChangeKind::Create => ("+", show(op.after.as_ref())),
                    pb::ChangeKind::Delete => ("-", show(op.before.as_ref())),
                    pb::ChangeKind::Update => (
                        "~",
                        format!("{} → {}", show(op.before.as_ref()), show(op.after.as_ref())),
                    ),
                    pb::ChangeKind::Adopt => ("=", format!("{} (adopt)", show(op.after.as_ref()))),
                    pb::ChangeKind::Unspecified => ("?", String::new()),
                };
                println!(
                    "  {sign} {} {} {body}    # {}",
                    key.name, key.r#type, c.reason
                );
            }
            for b in &z.blocked {
                held += 1;
                let key = b.key.clone().unwrap_or_default();
                let retry = b
                    .next_retry
                    .and_then(|t| std::time::SystemTime::try_from(t).ok())
                    .map(|t| {
                        let left = t
                            .duration_since(std::time::SystemTime::now())
                            .unwrap_or_default();
                        format!(", next try in {}s", left.as_secs())
                    })
                    .unwrap_or_default();
                println!(
                    "  ! {} {} held back: {} (observed: {}{}{retry})",
                    key.name,
                    key.r#type,
                    b.reason,
                    show(b.observed.as_ref()),
                    if b.observed_owner.is_empty() {
                        String::new()
                    } else {
                        format!(", owner {}", b.observed_owner)
                    }
                );
            }
        }
        if resp.next_page_token.is_empty() {
            break;
        }
        token = resp.next_page_token;
    }
    if held > 0 {
        println!("{total} change(s), {held} held back");
    } else {
        println!("{total} change(s)");
    }
    Ok(std::process::ExitCode::SUCCESS)
}

async fn status(conn: Conn) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await
        .map_err(status_err)?
        .into_inner();
    println!(
        "planner: {}{}",
        s.level,
        if s.reason.is_empty() {
            String::new()
        } else {
            format!(" ({})", s.reason)
        }
    );
    for z in &s.zones {
        let states: Vec<String> = z
            .records_by_state
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!(
            "zone {} [{} via {}]: desired {}, observed {}, {}{}",
            z.zone,
            z.policy,
            z.account,
            z.desired_records,
            z.observed_records,
            states.join(" "),
            if z.last_error.is_empty() {
                String::new()
            } else {
                format!(", error: {}", z.last_error)
            }
        );
    }
    for e in &s.source_errors {
        println!("source error: {}: {}: {}", e.location, e.record, e.message);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

async fn records(conn: Conn, zone: String, all: bool) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let mut token = String::new();
    let mut n = 0;
    loop {
        let page = client
            .list_record_states(pb::ListRecordStatesRequest {
                zone: zone.clone(),
                states: vec![],
                include_converged: all,
                page_size: 1000,
                page_token: token.clone(),
            })
            .await
            .map_err(status_err)?
            .into_inner();
        for r in &page.records {
            n += 1;
            let key = r.key.clone().unwrap_or_default();
            println!(
                "{} {} {}: {} (observed: {}{}, attempts {})",
                key.name,
                key.r#type,
                dnsplane_planner::service::kind_name(r.state),
                if r.reason.is_empty() { "-" } else { &r.reason },
                show(r.observed.as_ref()),
                if r.observed_owner.is_empty() {
                    String::new()
                } else {
                    format!(", owner {}", r.observed_owner)
                },
                r.attempts
            );
        }
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    println!("{n} record(s)");
    Ok(std::process::ExitCode::SUCCESS)
}

async fn sync(conn: Conn, zones: Vec<String>) -> anyhow::Result<std::process::ExitCode> {
    let mut client = connect(&conn).await?;
    let mut stream = client
        .sync(pb::SyncRequest { zones, fresh: true })
        .await
        .map_err(status_err)?
        .into_inner();
    let mut failed = false;
    while let Some(p) = stream.message().await.map_err(status_err)? {
        let outcomes: Vec<String> = p.outcomes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        println!(
            "{} {}: {}/{} {}{}",
            p.zone,
            p.phase,
            p.changes_done,
            p.changes_planned,
            outcomes.join(" "),
            if p.error.is_empty() {
                String::new()
            } else {
                format!(" error: {}", p.error)
            }
        );
        failed |= p.phase == "failed";
    }
    Ok(if failed {
        std::process::ExitCode::FAILURE
    } else {
        std::process::ExitCode::SUCCESS
    })
}
