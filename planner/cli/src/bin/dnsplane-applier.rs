//! `dnsplane-applier`: parses flags, loads and validates the config (exit 64 when it is
//! unusable), starts the runtime and, inside it, logs and traces
//! (`dnsplane_common::telemetry`), binds gRPC and the admin port and hands over to
//! `dnsplane_applier::run`; flushes the last spans on the way out.
use anyhow::Context;
use clap::Parser;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use dnsplane_cli::EXIT_BAD_CONFIG;

/// dnsplane's applier: owns every DNS provider call.
#[derive(Debug, Parser)]
#[command(name = "dnsplane-applier", version)]
struct Args {
    /// The config file (TOML): provider accounts and their zones.
    #[arg(long, env = "DNSPLANE_APPLIER_CONFIG")]
    config: PathBuf,
    /// Address to serve gRPC on (Applier, health, reflection).
    #[arg(
        long,
        env = "DNSPLANE_APPLIER_LISTEN",
        default_value = "127.0.0.1:50052"
    )]
    listen: SocketAddr,
    /// Admin HTTP address: /metrics (Prometheus), /healthz, /readyz, /status (JSON).
    /// `off` disables it. If the address cannot be bound, the applier logs an error and
    /// serves gRPC without it.
    #[arg(
        long,
        env = "DNSPLANE_APPLIER_ADMIN_LISTEN",
        default_value = "127.0.0.1:9452"
    )]
    admin_listen: String,
}

fn main() -> ExitCode {
    dnsplane_cli::tune_allocator();
    let args = Args::parse();
    let config = match dnsplane_applier::load_config(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dnsplane-applier: {e}");
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    match dnsplane_cli::serve("dnsplane-applier", || run(args, config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dnsplane-applier: {}", dnsplane_cli::describe(&e));
            // An account that cannot be set up (unreadable key file, unresolvable
            // server) is a config problem too.
            match e.downcast_ref::<dnsplane_applier::ApplierError>() {
                Some(
                    dnsplane_applier::ApplierError::Config(_)
                    | dnsplane_applier::ApplierError::Driver { .. }
                    | dnsplane_applier::ApplierError::Tls(_),
                ) => ExitCode::from(EXIT_BAD_CONFIG),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

async fn run(args: Args, config: dnsplane_applier::ApplierConfig) -> anyhow::Result<()> {
    let shutdown = dnsplane_common::runtime::shutdown_on_signal();
    let listen = args.listen;
    let grpc = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen for gRPC on {listen}"))?;
    let admin = dnsplane_cli::admin_listener(&args.admin_listen).await;
    dnsplane_applier::run(
        config,
        dnsplane_applier::Listeners { grpc, admin },
        shutdown,
    )
    .await?;
    Ok(())
}
