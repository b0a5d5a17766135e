//! Files the planner serves with but the engine does not read itself — the tokens
//! file and the planner's TLS files — attached once at startup so that status can say
//! when they cannot be used (rules `tokens_file` and `tls_files`).
use super::Engine;
use crate::auth::Authenticator;
use dnsplane_common::tls::ServerTls;
use std::sync::Arc;

/// What [`Engine::attach_watched`] is given.
#[derive(Debug, Default)]
pub struct Watched {
    /// The API's gatekeeper (its tokens file, with `[auth]`).
    pub auth: Option<Arc<Authenticator>>,
    /// `[tls]`: the planner's own certificate.
    pub server_tls: Option<Arc<ServerTls>>,
}

impl Engine {
    /// Lets status watch these files (set once, at startup).
    pub fn attach_watched(&self, watched: Watched) {
        let _ = self.watched.set(watched);
    }

    /// Why the tokens file cannot be used, while it cannot.
    pub(super) fn tokens_problem(&self) -> Option<String> {
        self.watched.get()?.auth.as_ref()?.problem()
    }

    /// Why TLS files cannot be (re)loaded: the planner's certificate, then its client
    /// certificate towards the appliers.
    pub(super) fn tls_problems(&self) -> Vec<String> {
        let server = self
            .watched
            .get()
            .and_then(|w| w.server_tls.as_ref())
            .and_then(|t| t.problem());
        server.into_iter().chain(self.pool.tls_problem()).collect()
    }
}
