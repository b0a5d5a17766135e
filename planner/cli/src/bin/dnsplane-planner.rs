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
    dnsplane_cli::tune_allocator();
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
        // The address must agree with `[applier_tls]` as the file's would.
        if let Err(e) = config.validate() {
            eprintln!(
                "dnsplane-planner: {}: --applier: {e}",
                args.config.display()
            );
            return std::process::ExitCode::from(dnsplane_cli::EXIT_BAD_CONFIG);
        }
    }
    let shown = args.config.display().to_string();
    match dnsplane_cli::serve("dnsplane-planner", || serve(args, config)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A source path that is missing or empty, or a state_dir that cannot be
        // written, is a configuration error (`run` checks before it plans anything):
        // refuse to start rather than plan against "no records".
        Err(e)
            if e.downcast_ref::<dnsplane_planner::PlannerError>()
                .is_some_and(dnsplane_planner::PlannerError::is_config) =>
        {
            eprintln!("dnsplane-planner: {shown}: {}", dnsplane_cli::describe(&e));
            std::process::ExitCode::from(dnsplane_cli::EXIT_BAD_CONFIG)
        }
        Err(e) => {
            eprintln!("dnsplane-planner: {}", dnsplane_cli::describe(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args, config: dnsplane_planner::config::PlannerConfig) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", args.listen))?;
    let admin = dnsplane_cli::admin_listener(&args.admin_listen).await;
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
