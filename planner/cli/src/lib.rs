//! dnsplane-cli: the binaries, kept thin. Each main parses flags, loads and validates
//! its config (exit [`EXIT_BAD_CONFIG`] when it cannot be used), starts the runtime and
//! telemetry, and hands over to a library's `run`:
//!
//! - `dnsplane` (`src/bin/dnsplane/`): the CLI for people; `up` runs planner and applier
//!   in one process on the embedded provider, the other commands talk to a planner;
//! - `dnsplane-planner`, `dnsplane-applier`: the two services as deployed.
//!
//! The libraries stay free of each other: only this crate depends on both, so the
//! planner never compiles provider code.

/// Every dnsplane binary allocates through mimalloc. glibc's malloc kept what a large
/// load had freed (decoded pushes, listing pages, the first sync's creates): a
/// planner holding a million records stood at 2.8 KB of resident memory per record of
/// which 0.9 KB was live. mimalloc returns freed pages to the system on its own.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Sets mimalloc's options for a long-running service, each unless the environment
/// already says otherwise ([`ALLOCATOR_SETTINGS`]):
///
/// - `MIMALLOC_PURGE_DELAY=50`: return freed memory within 50 ms. Its default delay
///   (1 s) only runs out when the thread that freed the pages allocates again, so what
///   a large load's worker and blocking threads freed stayed resident: a planner that
///   had taken in 200,000 records held 1.9 KB per record; with 50 ms, 0.9 KB. (0
///   returns a little more, but every large push then faults its pages in again:
///   `PutDesired` of 10,000 records took 8 ms longer.)
/// - `MIMALLOC_ALLOW_THP=0`: no transparent huge pages. A 2 MiB huge page is resident
///   whole however little of it is in use: an idle planner stood at 27 MiB with them
///   and 11 MiB without, and one holding a million records at 284-325 bytes a record
///   over runs, 260-277 without.
///
/// mimalloc reads its options from the environment before `main` runs, so the service
/// re-executes itself once with the settings (same process id; `exec` only returns on
/// failure, and then the service runs on without them). Called first thing in each
/// binary's `main`.
pub fn tune_allocator() {
    #[cfg(all(feature = "mimalloc", unix))]
    {
        let unset: Vec<_> = ALLOCATOR_SETTINGS
            .iter()
            .filter(|(name, _)| std::env::var_os(name).is_none())
            .collect();
        if unset.is_empty() {
            return;
        }
        if let Ok(exe) = std::env::current_exe() {
            use std::os::unix::process::CommandExt;
            let err = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .envs(unset.iter().map(|(name, value)| (name, value)))
                .exec();
            eprintln!(
                "note: could not re-execute with the allocator settings {unset:?} ({err}); memory is returned to the system more slowly"
            );
        }
    }
}

/// The mimalloc options [`tune_allocator`] sets, and their values.
#[cfg(all(feature = "mimalloc", unix))]
pub const ALLOCATOR_SETTINGS: [(&str, &str); 2] =
    [("MIMALLOC_PURGE_DELAY", "50"), ("MIMALLOC_ALLOW_THP", "0")];

/// sysexits.h `EX_USAGE`-style code: the config or the flags cannot be used.
pub const EXIT_BAD_CONFIG: u8 = 64;
/// `dnsplane status` and friends: the planner answered, but something is degraded
/// (a source error, a held plan, a failing zone, no healthy applier).
pub const EXIT_NOT_CONVERGED: u8 = 2;
/// `dnsplane status`: the planner answered and is healthy, but it is a standby: another
/// planner with the same `owner_id` holds the lease and does the writing.
pub const EXIT_STANDBY: u8 = 3;

/// The multi-threaded runtime every binary runs on (at least two workers, so that a
/// busy sync never starves the health and admin endpoints on a one-core container).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    let workers = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .max(2);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
}

/// Runs `work` on [`runtime`] with logs, and traces when `OTEL_EXPORTER_OTLP_ENDPOINT`
/// is set (started inside the runtime, which the OTLP exporter runs on; the last
/// spans are flushed on the way out). `service` names the process in its traces.
pub fn serve<F>(service: &str, work: impl FnOnce() -> F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>>,
{
    let runtime = runtime().map_err(|e| anyhow::anyhow!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let telemetry = dnsplane_common::telemetry::init(service);
        let result = work().await;
        telemetry.shutdown().await;
        result
    })
}

/// The admin HTTP listener at `addr`; `off` disables it. An address that cannot be
/// bound is logged and the service runs without it: probes are gRPC, and metrics are
/// worth less than DNS changes.
pub async fn admin_listener(addr: &str) -> Option<tokio::net::TcpListener> {
    if addr == "off" {
        return None;
    }
    match dnsplane_common::metrics::bind(addr).await {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::error!(error = %e, "No admin HTTP port: /metrics, /readyz and /status are off.");
            None
        }
    }
}
