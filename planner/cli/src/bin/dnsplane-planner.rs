//! `dnsplane-planner`: the planner server, as deployed.
use clap::Parser;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "dnsplane-planner",
    version,
    about = "dnsplane planner: plans DNS changes and streams them to appliers"
)]
struct Args {
    /// Config file (zones, sources, owner id).
    #[arg(long, env = "DNSPLANE_PLANNER_CONFIG", default_value = "planner.toml")]
    config: PathBuf,
    /// gRPC listen address.
    #[arg(
        long,
        env = "DNSPLANE_PLANNER_LISTEN",
        default_value = "127.0.0.1:50051"
    )]
    listen: String,
    /// Overrides the config's applier address.
    #[arg(long, env = "DNSPLANE_APPLIER_ADDR")]
    applier: Option<String>,
    /// Admin HTTP address: /metrics (Prometheus), /healthz, /readyz, /status (JSON).
    /// `off` disables it. If the address cannot be bound, the planner logs an error and
    /// serves gRPC without it.
    #[arg(
        long,
        env = "DNSPLANE_PLANNER_ADMIN_LISTEN",
        default_value = "127.0.0.1:9451"
    )]
    admin_listen: String,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let mut config = match dnsplane_planner::config::PlannerConfig::load(&args.config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dnsplane-planner: {e}");
            return std::process::ExitCode::from(dnsplane_cli::EXIT_BAD_CONFIG);
        }
    };
    if let Some(a) = args.applier.clone() {
        config.applier = a;
    }
    let runtime = match dnsplane_cli::runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dnsplane-planner: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        // Logs, and traces when OTEL_EXPORTER_OTLP_ENDPOINT is set; inside the runtime,
        // which the OTLP exporter runs on.
        let telemetry = dnsplane_common::telemetry::init("dnsplane-planner");
        let result = serve(args, config).await;
        telemetry.shutdown().await;
        result
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dnsplane-planner: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args, config: dnsplane_planner::config::PlannerConfig) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let admin = if args.admin_listen == "off" {
        None
    } else {
        match dnsplane_common::metrics::bind(&args.admin_listen).await {
            Ok(l) => Some(l),
            Err(e) => {
                // Probes are gRPC; metrics are worth less than DNS: keep serving.
                tracing::error!(error = %e, "No admin HTTP port: /metrics, /readyz and /status are off.");
                None
            }
        }
    };
    let shutdown = dnsplane_common::runtime::shutdown_on_signal();
    dnsplane_planner::run(
        config,
        dnsplane_planner::Listeners {
            grpc: listener,
            admin,
        },
        shutdown,
    )
    .await
    .map_err(Into::into)
}
