//! The mimalloc options every long-running dnsplane process runs with. They live here,
//! not beside the `#[global_allocator]` in `dnsplane-cli`, so that a benchmark running
//! the planner in its own process (`tests/bench/kubernetes_kinds.rs`) measures it with
//! the settings the deployed binary has, not mimalloc's defaults.
//!
//! - `MIMALLOC_PURGE_DELAY=50`: return freed memory within 50 ms. Its default delay
//!   (1 s) only runs out when the thread that freed the pages allocates again, so what
//!   a large load's worker and blocking threads freed stayed resident: a planner that
//!   had taken in 200,000 records held 1.9 KB per record; with 50 ms, 0.9 KB. (0
//!   returns a little more, but every large push then faults its pages in again:
//!   `PutDesired` of 10,000 records took 8 ms longer.)
//! - `MIMALLOC_ALLOW_THP=0`: no transparent huge pages. A 2 MiB huge page is resident
//!   whole however little of it is in use: an idle planner stood at 27 MiB with them
//!   and 11 MiB without, and one holding a million records at 284-325 bytes a record
//!   over runs, 260-277 without.

/// The options [`apply_settings`] sets, and their values.
pub const SETTINGS: [(&str, &str); 2] =
    [("MIMALLOC_PURGE_DELAY", "50"), ("MIMALLOC_ALLOW_THP", "0")];

/// Sets [`SETTINGS`], each unless the environment already says otherwise. mimalloc
/// reads its options from the environment before `main` runs, so the process
/// re-executes itself once with them (same process id; `exec` only returns on
/// failure, and then the process runs on without them). Call it first thing in
/// `main`, before any thread starts.
pub fn apply_settings() {
    #[cfg(unix)]
    {
        let unset: Vec<_> = SETTINGS
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
