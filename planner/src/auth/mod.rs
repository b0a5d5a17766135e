//! Who may call the planner's gRPC API, what they may do, and how often. A caller shows
//! a bearer token (`authorization: Bearer <token>`); the tokens file ([`tokens`]) gives
//! each token a name, a [`Role`] and a [`Scope`]; each caller has its own rate limit
//! (GCRA, governor). Without `[auth]` everything is open, as before, and every call is
//! `anonymous`. The gRPC service asks [`Authenticator::admit`] at the start of every
//! call and checks scopes against the request; the admin port asks
//! [`Authenticator::admits_admin`].
use crate::config::AuthConfig;
use dnsplane_common::Name;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::Deserialize;
use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};
use tokio_util::sync::CancellationToken;

mod scope;
pub mod tokens;

pub use scope::Scope;
pub use tokens::{ANONYMOUS, TokenSet, TokensError};

/// How often the tokens file's modification time is looked at.
pub const RELOAD_POLL: Duration = Duration::from_secs(1);

/// What a token may do; each role includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// GetStatus, ListRecordStates, Plan.
    Read,
    /// And PutDesired, PutDesiredStream, PatchDesired, Sync.
    Write,
    /// And Approve, Release, Resume.
    Approve,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::Write => "write",
            Role::Approve => "approve",
        }
    }
}

/// A method of `dnsplane.v1.Planner`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    GetStatus,
    ListRecordStates,
    Plan,
    Sync,
    PutDesired,
    PutDesiredStream,
    PatchDesired,
    Approve,
    Release,
    Resume,
    History,
    PlanProposed,
    ReadZone,
    Adopt,
}

impl Call {
    pub fn as_str(self) -> &'static str {
        match self {
            Call::GetStatus => "GetStatus",
            Call::ListRecordStates => "ListRecordStates",
            Call::Plan => "Plan",
            Call::Sync => "Sync",
            Call::PutDesired => "PutDesired",
            Call::PutDesiredStream => "PutDesiredStream",
            Call::PatchDesired => "PatchDesired",
            Call::Approve => "Approve",
            Call::Release => "Release",
            Call::Resume => "Resume",
            Call::History => "History",
            Call::PlanProposed => "PlanProposed",
            Call::ReadZone => "ReadZone",
            Call::Adopt => "Adopt",
        }
    }

    /// The least role that may make this call.
    pub fn role(self) -> Role {
        match self {
            Call::GetStatus
            | Call::ListRecordStates
            | Call::Plan
            | Call::History
            | Call::PlanProposed
            | Call::ReadZone => Role::Read,
            Call::Sync | Call::PutDesired | Call::PutDesiredStream | Call::PatchDesired => {
                Role::Write
            }
            Call::Approve | Call::Release | Call::Resume | Call::Adopt => Role::Approve,
        }
    }
}

/// Who is calling: a token of the tokens file, or `anonymous` without `[auth]`.
#[derive(Debug, Clone)]
pub struct Caller {
    pub name: Arc<str>,
    pub role: Role,
    pub scope: Scope,
}

impl Caller {
    /// Every call is allowed: the API without `[auth]`.
    pub fn anonymous() -> Caller {
        Caller {
            name: Arc::from(ANONYMOUS),
            role: Role::Approve,
            scope: Scope::default(),
        }
    }
}

/// A call refused before it did anything. The token itself is never part of one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    #[error(
        "no bearer token: send the metadata `authorization: Bearer <token>` (dnsplane: --token-file or DNSPLANE_TOKEN; grpcurl: -H 'authorization: Bearer <token>')"
    )]
    Missing,
    #[error(
        "the authorization metadata is not `Bearer <token>`: send `authorization: Bearer <token>`"
    )]
    Malformed,
    #[error(
        "the bearer token is not one of the planner's tokens (its [auth] tokens_file); send `authorization: Bearer <token>` with a token it lists"
    )]
    Unknown,
    /// The tokens file was deleted: every token is revoked until it is back.
    #[error(
        "every token is revoked: the planner's tokens file {file} was deleted; restore it (or remove [auth] to open the API)"
    )]
    Revoked { file: String },
    #[error("{call} needs the {needs} role; caller {caller:?} has {has}", needs = .needs.as_str(), has = .has.as_str())]
    Forbidden {
        caller: Arc<str>,
        call: &'static str,
        needs: Role,
        has: Role,
    },
    #[error("caller {caller:?} may only touch {scope}: {what}")]
    OutOfScope {
        caller: Arc<str>,
        scope: String,
        what: String,
    },
    #[error(
        "caller {caller:?} is over its rate limit ({rate}/s, burst {burst}); retry in {} ms",
        .retry_after.as_millis()
    )]
    Limited {
        caller: Arc<str>,
        rate: u32,
        burst: u32,
        retry_after: Duration,
    },
}

impl AuthError {
    /// The caller to count the refusal under (`anonymous` when there is no token).
    pub fn caller(&self) -> &str {
        match self {
            AuthError::Missing
            | AuthError::Malformed
            | AuthError::Unknown
            | AuthError::Revoked { .. } => ANONYMOUS,
            AuthError::Forbidden { caller, .. }
            | AuthError::OutOfScope { caller, .. }
            | AuthError::Limited { caller, .. } => caller,
        }
    }

    /// `caller` may only touch its scope; `what` names the first thing outside it.
    pub fn out_of_scope(caller: &Caller, what: String) -> AuthError {
        AuthError::OutOfScope {
            caller: caller.name.clone(),
            scope: caller.scope.describe(),
            what,
        }
    }
}

/// The tokens in force, and the file version they came from.
#[derive(Debug)]
struct Loaded {
    tokens: Arc<TokenSet>,
    /// (modification time, length) of the file last read, good or not.
    stamp: Option<(SystemTime, u64)>,
    /// Why the file's last version cannot be used (status shows it), until one can.
    problem: Option<String>,
    /// The file was deleted: every token is revoked (fail closed).
    revoked: bool,
}

/// The API's gatekeeper: the tokens (re-read when their file changes) and the
/// per-caller limiter. Shared by the gRPC service and the admin port.
pub struct Authenticator {
    /// `None`: no `[auth]`, everything open.
    config: Option<AuthConfig>,
    zones: Vec<Name>,
    loaded: RwLock<Loaded>,
    limiter: Option<DefaultKeyedRateLimiter<Arc<str>>>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("open", &self.is_open())
            .field("tokens", &self.tokens().len())
            .finish()
    }
}

impl Authenticator {
    /// No `[auth]`: every call is admitted as `anonymous`, without limits.
    pub fn open() -> Authenticator {
        Authenticator {
            config: None,
            zones: Vec::new(),
            loaded: RwLock::new(Loaded {
                tokens: Arc::default(),
                stamp: None,
                problem: None,
                revoked: false,
            }),
            limiter: None,
        }
    }

    /// From `[auth]` (`None`: [`Authenticator::open`]); reads the tokens file, whose
    /// scopes may name the configured `zones`.
    pub fn new(
        config: Option<&AuthConfig>,
        zones: Vec<Name>,
    ) -> Result<Authenticator, TokensError> {
        let Some(config) = config else {
            return Ok(Authenticator::open());
        };
        let stamp = stamp(&config.tokens_file);
        let tokens = TokenSet::load(&config.tokens_file, &zones)?;
        let (rate, burst) = (
            NonZeroU32::new(config.rate_per_second).unwrap_or(NonZeroU32::MIN),
            NonZeroU32::new(config.burst).unwrap_or(NonZeroU32::MIN),
        );
        Ok(Authenticator {
            config: Some(config.clone()),
            zones,
            loaded: RwLock::new(Loaded {
                tokens: Arc::new(tokens),
                stamp,
                problem: None,
                revoked: false,
            }),
            limiter: Some(RateLimiter::keyed(
                Quota::per_second(rate).allow_burst(burst),
            )),
        })
    }

    /// True without `[auth]`.
    pub fn is_open(&self) -> bool {
        self.config.is_none()
    }

    /// The tokens in force.
    pub fn tokens(&self) -> Arc<TokenSet> {
        self.read().tokens.clone()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Loaded> {
        self.loaded
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Loaded> {
        self.loaded
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Why the tokens file cannot be used now, for status (`tokens_file` rule):
    /// unreadable or invalid (the tokens read before stay in force), or deleted
    /// (every token is revoked).
    pub fn problem(&self) -> Option<String> {
        self.read().problem.clone()
    }

    /// Who calls with the `authorization` value given, if they may make `call` now:
    /// the token is known (UNAUTHENTICATED otherwise), within its rate (counted
    /// whatever the call, so refused calls cost too), and its role covers the call.
    pub fn admit(&self, authorization: Option<&[u8]>, call: Call) -> Result<Caller, AuthError> {
        let Some(config) = &self.config else {
            return Ok(Caller::anonymous());
        };
        let presented = bearer(authorization.ok_or(AuthError::Missing)?)?;
        let (tokens, revoked) = {
            let loaded = self.read();
            (loaded.tokens.clone(), loaded.revoked)
        };
        let token = tokens.find(presented).ok_or_else(|| {
            if revoked {
                AuthError::Revoked {
                    file: config.tokens_file.display().to_string(),
                }
            } else {
                AuthError::Unknown
            }
        })?;
        if let Some(limiter) = &self.limiter
            && let Err(not_until) = limiter.check_key(&token.name)
        {
            return Err(AuthError::Limited {
                caller: token.name.clone(),
                rate: config.rate_per_second,
                burst: config.burst,
                retry_after: not_until.wait_time_from(DefaultClock::default().now()),
            });
        }
        if token.role < call.role() {
            return Err(AuthError::Forbidden {
                caller: token.name.clone(),
                call: call.as_str(),
                needs: call.role(),
                has: token.role,
            });
        }
        Ok(Caller {
            name: token.name.clone(),
            role: token.role,
            scope: token.scope.clone(),
        })
    }

    /// May a request with these headers read `path` of the admin port? `/status`
    /// needs a `read` token, `/metrics` too unless `metrics_open`; the probes and
    /// everything without `[auth]` are open.
    pub fn admits_admin(&self, path: &str, authorization: Option<&[u8]>) -> bool {
        let Some(config) = &self.config else {
            return true;
        };
        match path {
            "/status" => {}
            "/metrics" if !config.metrics_open => {}
            _ => return true,
        }
        let Some(Ok(presented)) = authorization.map(bearer) else {
            return false;
        };
        self.tokens()
            .find(presented)
            .is_some_and(|t| t.role >= Role::Read)
    }

    /// Re-reads the tokens file if its modification time or length changed. A file
    /// that cannot be read or parsed leaves the tokens in force as they were; a
    /// deleted file revokes them all (fail closed: deleting the file is how a leaked
    /// token list is withdrawn in a hurry). `Err` says why, once per version of the
    /// file, and [`Authenticator::problem`] until a good version is read.
    pub fn reload_if_changed(&self) -> Result<Option<usize>, TokensError> {
        let Some(config) = &self.config else {
            return Ok(None);
        };
        let now = stamp(&config.tokens_file);
        {
            let mut loaded = self.write();
            if loaded.stamp == now {
                return Ok(None);
            }
            loaded.stamp = now;
        }
        let file = config.tokens_file.display();
        let tokens = match TokenSet::load(&config.tokens_file, &self.zones) {
            Ok(tokens) => tokens,
            Err(TokensError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                let mut loaded = self.write();
                loaded.tokens = Arc::default();
                loaded.revoked = true;
                loaded.problem = Some(format!(
                    "tokens file {file} was deleted: every token is revoked until it is back (remove [auth] to open the API)"
                ));
                return Err(TokensError::Deleted {
                    path: file.to_string(),
                });
            }
            Err(e) => {
                let mut loaded = self.write();
                let revoked = loaded.revoked;
                loaded.problem = Some(if revoked {
                    format!("tokens file {e}; every token stays revoked")
                } else {
                    format!("tokens file {e}; the tokens read before stay in force")
                });
                return Err(e);
            }
        };
        let n = tokens.len();
        {
            let mut loaded = self.write();
            loaded.tokens = Arc::new(tokens);
            loaded.problem = None;
            loaded.revoked = false;
        }
        if let Some(l) = &self.limiter {
            // Forget the buckets of callers that are gone.
            l.retain_recent();
        }
        Ok(Some(n))
    }

    /// Polls the tokens file every [`RELOAD_POLL`] until `stop`, logging each reload.
    pub fn watch(self: Arc<Self>, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let Some(file) = self.config.as_ref().map(|c| c.tokens_file.clone()) else {
                return;
            };
            let mut tick = tokio::time::interval(RELOAD_POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let me = self.clone();
                let result = tokio::task::spawn_blocking(move || me.reload_if_changed()).await;
                crate::events::TokensReloaded {
                    file: &file,
                    result: result
                        .unwrap_or(Ok(None))
                        .map_err(|e| crate::events::TokensRefused {
                            deleted: matches!(e, TokensError::Deleted { .. }),
                            error: e.to_string(),
                        }),
                }
                .emit();
            }
        })
    }

    /// The tokens file, when there is `[auth]`.
    pub fn tokens_file(&self) -> Option<&PathBuf> {
        self.config.as_ref().map(|c| &c.tokens_file)
    }
}

/// The token of `Bearer <token>` (the scheme in any case, RFC 7235).
fn bearer(value: &[u8]) -> Result<&[u8], AuthError> {
    let value = value.trim_ascii();
    match value.split_at_checked(7) {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case(b"bearer ") => {
            let token = token.trim_ascii();
            if token.is_empty() {
                Err(AuthError::Malformed)
            } else {
                Ok(token)
            }
        }
        _ => Err(AuthError::Malformed),
    }
}

fn stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

#[cfg(test)]
mod tests;
