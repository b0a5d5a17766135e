//! `dnsplane up`: planner and applier in one process, on loopback, with the embedded
//! provider; everything a first try needs and nothing else. With `--route53-emulator`
//! the zones live in a Route 53 emulator in the same process instead, written through
//! the `route53` driver as a real AWS account would be; with `--azure-emulator`, in an
//! Azure DNS emulator written through the `azure` driver ([`azure`]).
//!
//! Secure by default ([`crate::secure`]): the planner serves TLS and asks for the
//! admin token, the applier takes only clients with a certificate of the state
//! directory's CA; `--insecure` serves everything in plaintext and unauthenticated.
use anyhow::Context;
use dnsplane_common::Name;
use dnsplane_planner::config::{
    ApplierTlsConfig, AuthConfig, PlannerConfig, SourceConfig, SyncConfig, TlsConfig, ZoneConfig,
};
use std::path::PathBuf;
use tokio_util::sync::CancellationToken;

mod azure;

#[derive(Debug, clap::Args)]
pub struct UpArgs {
    /// Desired state: DNSEndpoint manifests (file or directory).
    #[arg(long, default_value = "deploy/examples/desired")]
    desired: Vec<PathBuf>,
    /// What the desired-state files are: `dnsendpoint`, `zone` (RFC 1035 zone files),
    /// `octodns` (octoDNS YAML), or `auto` (`*.zone` a zone file, `*.yaml` a
    /// DNSEndpoint manifest).
    #[arg(long, value_enum, default_value_t = crate::files::FormatArg::Auto)]
    format: crate::files::FormatArg,
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
    /// Planner admin address: the status page (/), /metrics, /healthz, /readyz,
    /// /status; `off` for none. Taken by another process: logged, and `up` runs on
    /// without it.
    #[arg(
        long,
        env = "DNSPLANE_PLANNER_ADMIN_LISTEN",
        default_value = "127.0.0.1:9451"
    )]
    admin_listen: String,
    /// Keep the zones in a Route 53 emulator served from this process (the one
    /// `dnsplane emulate route53` serves) instead of the embedded provider, written
    /// through the `route53` driver. It answers no DNS: read the zones with Route 53's
    /// API (e.g. the AWS CLI with `--endpoint-url`).
    #[arg(long)]
    route53_emulator: bool,
    /// Keep the zones in an Azure DNS emulator served from this process (the one
    /// `dnsplane emulate azure` serves), written through the `azure` driver. It
    /// answers no DNS: read the zones with Azure's REST API (ARM) and the token the
    /// banner shows.
    #[arg(long, conflicts_with = "route53_emulator")]
    azure_emulator: bool,
    /// Where that emulator serves Route 53's (or Azure's) API.
    #[arg(long, default_value = "127.0.0.1:4566")]
    emulator_listen: String,
    /// Plaintext and no authentication on every port, as before 0.2: anyone who
    /// reaches a port may use it. For trying things on a machine of your own only.
    #[arg(long)]
    insecure: bool,
}

/// The hosted zone id `up` gives its `i`-th zone in the Route 53 emulator, so that
/// commands can name it.
fn emulated_zone_id(i: usize) -> String {
    format!("ZDNSPLANE{:012}", i + 1)
}

/// Starts the Route 53 emulator with the zones, and returns it with the applier account
/// that writes to it (the emulator's default keys in a credentials file of its own).
async fn route53_emulator(
    args: &UpArgs,
) -> anyhow::Result<(
    dnsplane_emulate::Route53Emulator,
    dnsplane_applier::config::AccountConfig,
)> {
    use dnsplane_applier::config::{AccountConfig, DriverConfig};
    use dnsplane_applier::provider::route53::Route53Config;
    let listener = tokio::net::TcpListener::bind(&args.emulator_listen)
        .await
        .with_context(|| {
            format!(
                "cannot listen on {} (the Route 53 emulator; --emulator-listen)",
                args.emulator_listen
            )
        })?;
    let zones: Vec<dnsplane_emulate::route53::ZoneSeed> = args
        .zone
        .iter()
        .enumerate()
        .map(|(i, z)| dnsplane_emulate::route53::ZoneSeed {
            name: z.to_string(),
            private: false,
            id: Some(emulated_zone_id(i)),
        })
        .collect();
    let emulator = dnsplane_emulate::Route53Emulator::start(
        listener,
        dnsplane_emulate::Route53Options {
            // Whatever keys the environment holds sign the requests (the chain reads
            // the environment first); the emulator then takes any.
            verify_signatures: false,
            zones,
            ..Default::default()
        },
    )
    .await
    .context("the Route 53 emulator")?;
    std::fs::create_dir_all(&args.state_dir)
        .with_context(|| format!("cannot create {}", args.state_dir.display()))?;
    let credentials = args.state_dir.join("route53-emulator-credentials");
    std::fs::write(
        &credentials,
        format!(
            "[default]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            dnsplane_emulate::DEFAULT_ACCESS_KEY_ID,
            dnsplane_emulate::DEFAULT_SECRET_ACCESS_KEY
        ),
    )
    .with_context(|| format!("cannot write {}", credentials.display()))?;
    let account = AccountConfig {
        name: "route53-emulator".into(),
        zones: args.zone.clone(),
        circuit: Default::default(),
        faults: Vec::new(),
        quota: None,
        pacing: Default::default(),
        driver: DriverConfig::Route53(Route53Config {
            endpoint: emulator.endpoint(),
            profile: Some("default".into()),
            credentials_file: Some(credentials),
            zone_ids: args
                .zone
                .iter()
                .enumerate()
                .map(|(i, z)| (z.clone(), emulated_zone_id(i)))
                .collect(),
            ..Route53Config::default()
        }),
    };
    Ok((emulator, account))
}

/// Tells the person running `up` something: a line on stderr, or, when logs are JSON
/// lines (`DNSPLANE_LOG_FORMAT=json`), a log event like every other line there.
fn say(text: &str) {
    if dnsplane_common::telemetry::json_logs() {
        tracing::info!(target: "dnsplane::up", "{text}");
    } else {
        eprintln!("{text}");
    }
}

pub async fn up(args: UpArgs) -> anyhow::Result<std::process::ExitCode> {
    for p in &args.desired {
        if !p.exists() {
            say(&format!(
                "dnsplane up: desired state {} does not exist (run from the repository root, or pass --desired PATH)",
                p.display()
            ));
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
    let admin = match args.admin_listen.as_str() {
        "off" => None,
        addr => match dnsplane_common::metrics::bind(addr).await {
            Ok(l) => {
                let scheme = if args.insecure { "http" } else { "https" };
                tracing::info!(
                    "dnsplane up: the status page is at {scheme}://{addr}/ (it asks for the token in the state directory)."
                );
                Some(l)
            }
            // The page and metrics are worth less than the zone: run on without them.
            Err(e) => {
                tracing::error!(error = %e, "--admin-listen {addr}: no status page, metrics or /status (`--admin-listen ADDR` for another address).");
                None
            }
        },
    };
    let dns_listen: std::net::SocketAddr = args.dns_listen.parse().with_context(|| {
        format!(
            "--dns-listen {:?} is not an address like 127.0.0.1:10053",
            args.dns_listen
        )
    })?;
    let mut applier_config = dnsplane_applier::ApplierConfig::embedded(
        args.state_dir.join("embedded"),
        Some(dns_listen),
        args.zone.clone(),
    );
    let emulator = if args.route53_emulator {
        let (emulator, account) = route53_emulator(&args).await?;
        applier_config.accounts = vec![account];
        Some(emulator)
    } else {
        None
    };
    let azure = if args.azure_emulator {
        let (emulator, account) = azure::start(&args).await?;
        applier_config.accounts = vec![account];
        Some(emulator)
    } else {
        None
    };
    let account = applier_config.accounts[0].name.clone();
    let zones = args
        .zone
        .iter()
        .map(|z| ZoneConfig::new(z.clone(), account.clone()))
        .collect();
    let applier_addr = loopback_if_unspecified(applier_listener.local_addr()?);
    let secured = if args.insecure {
        say(
            "dnsplane up: --insecure: every port is plaintext and unauthenticated; anyone who can reach them can change your zones",
        );
        None
    } else {
        let ips = [
            applier_listener.local_addr()?.ip(),
            planner_listener.local_addr()?.ip(),
        ];
        Some(crate::secure::Secured::ensure(&args.state_dir, &ips)?)
    };
    if let Some(s) = &secured {
        applier_config.tls = Some(dnsplane_applier::config::ApplierTlsConfig {
            cert: s.server_cert.clone(),
            key: s.server_key.clone(),
            client_ca: Some(s.ca.clone()),
            allowed_names: vec![
                crate::secure::PLANNER_NAME.into(),
                crate::secure::CLIENT_NAME.into(),
            ],
            // Operators read with client.pem; only the planner writes batches.
            writer_names: vec![crate::secure::PLANNER_NAME.into()],
        });
    }
    let planner_config = PlannerConfig {
        owner_id: "dnsplane".into(),
        applier: match secured {
            Some(_) => format!("https://{applier_addr}"),
            None => format!("http://{applier_addr}"),
        },
        tls: secured.as_ref().map(|s| TlsConfig {
            cert: s.server_cert.clone(),
            key: s.server_key.clone(),
            client_ca: None,
        }),
        applier_tls: secured.as_ref().map(|s| ApplierTlsConfig {
            ca: s.ca.clone(),
            cert: Some(s.planner_cert.clone()),
            key: Some(s.planner_key.clone()),
            server_name: None,
        }),
        auth: secured.as_ref().map(|s| AuthConfig {
            tokens_file: s.tokens_file.clone(),
            metrics_open: true,
            // One person and their scripts: room for polling loops.
            rate_per_second: 100,
            burst: 200,
        }),
        sync: SyncConfig {
            interval: args.interval,
            ..SyncConfig::default()
        },
        sources: vec![SourceConfig::File {
            paths: args.desired.clone(),
            outside_zones: Default::default(),
            format: args.format.into(),
            views: Vec::new(),
        }],
        state_dir: args.state_dir.join("planner"),
        // A second `dnsplane up` on the same state directory stands by.
        lease: Default::default(),
        // `dnsplane history` works from the first command: `up` has no config file
        // in which a user could turn the audit trail on.
        audit: Some(dnsplane_planner::config::AuditConfig {
            file: args.state_dir.join("audit.jsonl"),
            max_bytes: 64 << 20,
            keep: 5,
        }),
        ..PlannerConfig::with_zones(zones)
    };
    planner_config
        .validate()
        .map_err(|e| anyhow::anyhow!("invalid settings: {e}"))?;
    let shutdown: CancellationToken = dnsplane_common::runtime::shutdown_on_signal();
    if let Some(s) = &secured {
        say(&format!(
            "dnsplane up: TLS with the CA {ca} and an admin token in {token}; `dnsplane status` finds both in {dir} (--state-dir). grpcurl -cacert {ca} -H \"authorization: Bearer $(cat {token})\" {planner} list",
            ca = s.ca.display(),
            token = s.token.display(),
            dir = args.state_dir.display(),
            planner = args.planner_listen,
        ));
    }
    match &emulator {
        None if azure.is_some() => {}
        None => say(&format!(
            "dnsplane up: planner gRPC {}, applier gRPC {}, DNS {} (UDP+TCP), state in {}. Ctrl-C to stop.",
            args.planner_listen,
            args.applier_listen,
            args.dns_listen,
            args.state_dir.display()
        )),
        Some(emulator) => say(&format!(
            "dnsplane up: planner gRPC {}, applier gRPC {}, Route 53 emulator {} (keys {} / {}; hosted zones {}), state in {}. Ctrl-C to stop.",
            args.planner_listen,
            args.applier_listen,
            emulator.endpoint(),
            dnsplane_emulate::DEFAULT_ACCESS_KEY_ID,
            dnsplane_emulate::DEFAULT_SECRET_ACCESS_KEY,
            args.zone
                .iter()
                .enumerate()
                .map(|(i, z)| format!("{z} {}", emulated_zone_id(i)))
                .collect::<Vec<_>>()
                .join(", "),
            args.state_dir.display()
        )),
    }
    if let Some(emulator) = &azure {
        say(&azure::banner(&args, emulator));
    }
    let mut applier = tokio::spawn(dnsplane_applier::run(
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
    );
    tokio::pin!(planner);
    // An applier that ends on its own could not start (its store held by another
    // `up` on the same state directory): the planner must not run on without it.
    let (planner, applier) = tokio::select! {
        p = &mut planner => {
            shutdown.cancel();
            (p, applier.await)
        }
        a = &mut applier => {
            shutdown.cancel();
            (planner.await, a)
        }
    };
    let applier = applier.context("applier task")?;
    if let Some(emulator) = emulator {
        emulator.stop().await;
    }
    if let Some(emulator) = azure {
        emulator.stop().await;
    }
    applier.context("applier")?;
    planner.context("planner")?;
    Ok(std::process::ExitCode::SUCCESS)
}

/// `addr`, with an unspecified IP (`0.0.0.0`, `::`) made loopback: the address the
/// planner dials.
fn loopback_if_unspecified(addr: std::net::SocketAddr) -> std::net::SocketAddr {
    match addr.ip() {
        std::net::IpAddr::V4(ip) if ip.is_unspecified() => {
            (std::net::Ipv4Addr::LOCALHOST, addr.port()).into()
        }
        std::net::IpAddr::V6(ip) if ip.is_unspecified() => {
            (std::net::Ipv6Addr::LOCALHOST, addr.port()).into()
        }
        _ => addr,
    }
}
