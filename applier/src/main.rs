//! `dnsplane-applier`: parses flags, loads and validates the config (exit 64 when it is
//! unusable), starts logging and the runtime, and hands over to `dnsplane_applier::run`.
use anyhow::Context;
use clap::Parser;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// sysexits.h EX_CONFIG-style "usage/config" code: the config cannot be used.
const EXIT_BAD_CONFIG: u8 = 64;

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
}

fn main() -> ExitCode {
    let args = Args::parse();
    dnsplane_common::runtime::init_logging();
    let config = match dnsplane_applier::load_config(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dnsplane-applier: {e}");
            return ExitCode::from(EXIT_BAD_CONFIG);
        }
    };
    match serve(args.listen, config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dnsplane-applier: {e:#}");
            // An account that cannot be set up (unreadable key file, unresolvable
            // server) is a config problem too.
            match e.downcast_ref::<dnsplane_applier::ApplierError>() {
                Some(
                    dnsplane_applier::ApplierError::Config(_)
                    | dnsplane_applier::ApplierError::Driver { .. },
                ) => ExitCode::from(EXIT_BAD_CONFIG),
                _ => ExitCode::FAILURE,
            }
        }
    }
}

fn serve(listen: SocketAddr, config: dnsplane_applier::ApplierConfig) -> anyhow::Result<()> {
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .max(2);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let shutdown = dnsplane_common::runtime::shutdown_on_signal();
        let grpc = tokio::net::TcpListener::bind(listen)
            .await
            .with_context(|| format!("cannot listen for gRPC on {listen}"))?;
        dnsplane_applier::run(config, grpc, shutdown).await?;
        Ok(())
    })
}
