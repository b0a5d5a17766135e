//! Process plumbing: logging and the one shutdown story (SIGTERM/SIGINT cancel a token;
//! a second signal exits at once).
use tokio_util::sync::CancellationToken;

/// Installs the global tracing subscriber, logs only (the CLI's client commands).
/// `DNSPLANE_LOG` (or `RUST_LOG`) filters; `DNSPLANE_LOG_FORMAT=json` gives one JSON
/// object per line for log shippers. The services use [`crate::telemetry::init`], which
/// adds traces to the same log layer.
pub fn init_logging() {
    crate::telemetry::init_logs_only();
}

/// A token cancelled on the first SIGTERM or SIGINT; the second one exits the process.
pub fn shutdown_on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("Shutdown signal received; draining. Send it again to exit at once.");
        t.cancel();
        wait_for_signal().await;
        tracing::warn!("Second shutdown signal; exiting without draining.");
        std::process::exit(130);
    });
    token
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
