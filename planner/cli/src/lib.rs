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

/// sysexits.h `EX_USAGE`-style code: the config or the flags cannot be used.
pub const EXIT_BAD_CONFIG: u8 = 64;

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
