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
/// already says otherwise (`dnsplane_common::allocator`, which says why each is set:
/// freed pages back within 50 ms, no transparent huge pages). The service re-executes
/// itself once with them. Called first thing in each binary's `main`.
pub fn tune_allocator() {
    #[cfg(feature = "mimalloc")]
    dnsplane_common::allocator::apply_settings();
}

/// The mimalloc options [`tune_allocator`] sets, and their values.
#[cfg(feature = "mimalloc")]
pub use dnsplane_common::allocator::SETTINGS as ALLOCATOR_SETTINGS;

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

/// An error and its causes, each said once: `error: cause: …`. A cause whose words the
/// text already holds is left out: an error that writes its source into its own
/// message and also names it as its source (`#[error("auth: {0}")]` with `#[from]`)
/// was printed twice by `{:#}` ("auth: tokens.toml:4: …: tokens.toml:4: …").
pub fn describe(e: &anyhow::Error) -> String {
    let mut text = e.to_string();
    for cause in e.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::describe;

    #[derive(Debug, thiserror::Error)]
    #[error("tokens.toml:4: unknown variant `admin`")]
    struct Tokens;

    /// Writes its cause into its message and names it as its source.
    #[derive(Debug, thiserror::Error)]
    #[error("auth: {0}")]
    struct Auth(#[from] Tokens);

    /// Names its cause without writing it.
    #[derive(Debug, thiserror::Error)]
    #[error("cannot start")]
    struct Start(#[source] Tokens);

    #[test]
    fn each_cause_is_said_once() {
        let e = anyhow::Error::from(Auth(Tokens)).context("pt.toml");
        assert_eq!(
            describe(&e),
            "pt.toml: auth: tokens.toml:4: unknown variant `admin`"
        );
        let e = anyhow::Error::from(Start(Tokens));
        assert_eq!(
            describe(&e),
            "cannot start: tokens.toml:4: unknown variant `admin`"
        );
    }
}
