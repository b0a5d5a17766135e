//! `dnsplane-planner`: the planner server, as deployed.
use clap::Parser;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "dnsplane-planner", version, about = "dnsplane planner: plans DNS changes and streams them to appliers")]
struct Args {
    /// Config file (zones, sources, owner id).
    #[arg(long, env = "DNSPLANE_PLANNER_CONFIG", default_value = "planner.toml")]
    config: PathBuf,
    /// gRPC listen address.
    #[arg(long, env = "DNSPLANE_PLANNER_LISTEN", default_value = "127.0.0.1:50051")]
    listen: String,
    /// Overrides the config's applier address.
    #[arg(long, env = "DNSPLANE_APPLIER_ADDR")]
    applier: Option<String>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    dnsplane_common::runtime::init_logging();
    let mut config = match dnsplane_planner::config::PlannerConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dnsplane-planner: {e}");
            return std::process::ExitCode::from(64);
        }
    };
    if let Some(a) = args.applier {
        config.applier = a;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dnsplane-planner: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
        let shutdown = dnsplane_common::runtime::shutdown_on_signal();
        dnsplane_planner::run(config, listener, shutdown).await
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dnsplane-planner: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
