//! Process plumbing: logging and the one shutdown story (SIGTERM/SIGINT cancel a token;
//! a second signal exits at once).
use tokio_util::sync::CancellationToken;

/// Installs the global tracing subscriber. `DNSPLANE_LOG` (or `RUST_LOG`) filters;
/// `DNSPLANE_LOG_FORMAT=json` gives one JSON object per line for log shippers.
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = std::env::var("DNSPLANE_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| "info".into());
    let filter = EnvFilter::try_new(&filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let json = std::env::var("DNSPLANE_LOG_FORMAT").is_ok_and(|v| v == "json");
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let result = if json {
        builder.json().try_init()
    } else {
        builder.compact().try_init()
    };
    // A second init (tests, `dnsplane up`) keeps the first subscriber.
    drop(result);
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
