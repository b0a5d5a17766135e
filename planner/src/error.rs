//! Why the planner could not start or stopped early. The binary maps these to exit
//! codes; nothing in the library formats them into `anyhow`.

/// A planner that cannot run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlannerError {
    /// An applier address that tonic cannot use (checked by the config too), or
    /// `[applier_tls]` files that cannot be used.
    #[error(transparent)]
    ApplierAddress(#[from] crate::pool::PoolError),
    /// `[tls]` files that cannot be used (named in the message).
    #[error("tls: {0}")]
    Tls(#[source] dnsplane_common::tls::TlsError),
    #[error("gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error("the gRPC listener has no local address: {0}")]
    Listener(#[source] std::io::Error),
    /// The lease backend cannot be set up (a Redis URL, the state directory). Its
    /// text is whole; not a `source`, so that an error chain does not repeat it.
    #[error("lease: {0}")]
    Lease(crate::lease::LeaseError),
    #[error("gRPC server: {0}")]
    Serve(#[source] tonic::transport::Error),
    /// A configured source path that is missing, unreadable or holds no manifest.
    /// A key the config loader cannot judge alone (a Kubernetes source's kinds,
    /// selectors, template), named with its table.
    #[error("config: {0}")]
    Config(String),
    #[error("source not ready: {0}")]
    SourceNotReady(String),
    /// `[webhook] listen` cannot be bound (in use, not this host's).
    #[error("webhook listen {addr}: {source}")]
    WebhookListen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// `[auth] tokens_file` cannot be read or holds a mistake (file and line named).
    #[error("auth: {0}")]
    Tokens(#[from] crate::auth::TokensError),
    /// `[audit] file` cannot be opened for appending (its directory missing or not
    /// writable).
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditFileError),
    /// The state directory cannot hold the durable desired state.
    #[error("state_dir: {0}")]
    Store(#[from] crate::store::StoreError),
}

impl PlannerError {
    /// True for errors of the configuration or its paths (the binaries exit 64).
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            PlannerError::SourceNotReady(_)
                | PlannerError::Store(_)
                | PlannerError::Tokens(_)
                | PlannerError::Tls(_)
                | PlannerError::ApplierAddress(_)
                | PlannerError::Audit(_)
        )
    }
}
