//! Pacing by default: every account slows down when its provider answers 429, with or
//! without an `[accounts.quota]` (PowerDNS, a webhook, anything behind a rate-limiting
//! gateway has no documented limit to configure).
//!
//! AIMD, per account:
//!
//! - **Not paced** until the first throttle answer (an error its driver marked
//!   `throttled`: HTTP 429, Route 53's `Throttling`): requests go as they come.
//! - **A throttle halves the rate.** The first one halves what the account sent in the
//!   last second; later ones halve the rate in force (at most once per `Retry-After`,
//!   at least one second: requests in flight together see the same overload). Never
//!   below `floor`. The next request waits out the `Retry-After`.
//! - **Then the rate creeps back up** linearly (from the end of the `Retry-After`), to
//!   the rate before the halving over `recover`. After `recover` without a 429 the account is not paced any more.
//! - **A unit is one call** ([`Pacer::unit`]): while paced, one provider call at a time
//!   per account holds the turn, so a precondition read and the write that follows it
//!   (PowerDNS: the serial GET, then the PATCH) take consecutive slots, and no other
//!   call's read (or retry) can take the slot the write was waiting for.
//!
//! Throttled without a pause longer than `recover` for more than `degraded_after`, the
//! account makes the applier degraded ([`PacingStatus::reason`]): the provider's limit,
//! not dnsplane, decides how fast records converge.
//!
//! ```toml
//! [accounts.pacing]
//! enabled = true            # default
//! floor = 0.1               # requests per second at the lowest (default 0.1)
//! recover = "30s"           # climb back after a halving; end of pacing after a quiet one
//! degraded_after = "1m"     # throttled longer than this: the applier is degraded
//! ```
use serde::Deserialize;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};
use tokio::time::Instant;

/// `[accounts.pacing]` as written; every key has a default, so every account paces.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PacingConfig {
    /// `false`: a 429 is only retried (the retry policy), the account never slows
    /// down. Default true.
    pub enabled: bool,
    /// The lowest rate a run of throttles brings the account to, requests per second.
    /// Default 0.1 (a request every 10 s).
    pub floor: f64,
    /// After a throttle, how long the rate takes to climb back to what it was before
    /// the halving; after this long without a 429 the account is not paced any more.
    /// Default 30s.
    #[serde(with = "humantime_serde")]
    pub recover: Duration,
    /// Throttled for longer than this (429s keep coming, each within `recover` of the
    /// last), the applier's status is degraded with the reason. Default 1m.
    #[serde(with = "humantime_serde")]
    pub degraded_after: Duration,
}

impl Default for PacingConfig {
    fn default() -> Self {
        PacingConfig {
            enabled: true,
            floor: 0.1,
            recover: Duration::from_secs(30),
            degraded_after: Duration::from_secs(60),
        }
    }
}

impl PacingConfig {
    /// Problems with the keys, each naming its key under `at` (`accounts[0].pacing`).
    pub fn problems(&self, at: &str) -> Vec<String> {
        let mut p = Vec::new();
        if !(self.floor.is_finite() && self.floor > 0.0) {
            p.push(format!(
                "{at}.floor must be a number of requests per second above 0 (got {})",
                self.floor
            ));
        }
        if self.recover < Duration::from_secs(1) {
            p.push(format!("{at}.recover must be at least 1s"));
        }
        if self.degraded_after.is_zero() {
            p.push(format!("{at}.degraded_after must be above 0s"));
        }
        p
    }
}

/// How far back the first throttle looks to estimate the rate it halves.
const WINDOW: Duration = Duration::from_secs(1);
/// A throttle within this long (or the `Retry-After`, when longer) of the last halving
/// does not halve again.
const HOLD: Duration = Duration::from_secs(1);

/// The pacing of one throttled episode.
#[derive(Debug, Clone)]
struct Episode {
    /// The rate before the last halving, the rate it was halved to, and when.
    from: f64,
    to: f64,
    halved_at: Instant,
    /// When the climb back starts: once the `Retry-After` of the halving has run out.
    climbs_at: Instant,
    /// The earliest time the next request may go (slots are handed out in order).
    next: Instant,
    last_throttle: Instant,
    /// When the episode began, on both clocks.
    since: Instant,
    since_wall: SystemTime,
}

impl Episode {
    /// The rate in force at `now`: `to`, climbing linearly back to `from` over
    /// `recover` once the `Retry-After` has run out.
    fn rate(&self, now: Instant, recover: Duration) -> f64 {
        let k = (now.saturating_duration_since(self.climbs_at).as_secs_f64()
            / recover.as_secs_f64().max(1e-3))
        .min(1.0);
        self.to + (self.from - self.to) * k
    }
}

#[derive(Debug, Default)]
struct State {
    episode: Option<Episode>,
    /// When the last requests went (within [`WINDOW`]), for the first halving.
    recent: VecDeque<Instant>,
    throttles: u64,
    denied: u64,
}

impl State {
    fn note(&mut self, at: Instant) {
        while self
            .recent
            .front()
            .is_some_and(|t| at.saturating_duration_since(*t) >= WINDOW)
        {
            self.recent.pop_front();
        }
        if self.recent.len() < 10_000 {
            self.recent.push_back(at);
        }
    }
}

/// One account's pacer. Cheap when not paced: a request takes a short lock to note
/// when it went.
#[derive(Debug)]
pub struct Pacer {
    account: String,
    config: PacingConfig,
    state: Mutex<State>,
    /// Held by one call at a time while paced ([`Pacer::unit`]).
    turn: Arc<tokio::sync::Mutex<()>>,
}

/// One call's turn at the account while paced (nothing while not paced); dropping it
/// hands the turn on.
#[derive(Debug)]
pub struct Unit {
    _turn: Option<tokio::sync::OwnedMutexGuard<()>>,
}

/// What a [`Pacer`] says of itself (`GetStatus`, `/metrics`).
#[derive(Debug, Clone, PartialEq)]
pub struct PacingStatus {
    pub enabled: bool,
    /// Requests per second in force; `None` while not paced.
    pub current_rate: Option<f64>,
    /// Since when the provider keeps throttling; `None` while not paced.
    pub throttled_since: Option<SystemTime>,
    /// How long that is.
    pub throttled_for: Duration,
    /// Throttle answers seen.
    pub throttles: u64,
    /// Requests not made because no slot came before their deadline.
    pub denied: u64,
    pub degraded_after: Duration,
}

impl PacingStatus {
    /// Why the applier is degraded because of this account (`account`), with what to
    /// do; `None` unless throttled for longer than `degraded_after`.
    pub fn reason(&self, account: &str) -> Option<String> {
        let rate = self.current_rate?;
        (self.throttled_for > self.degraded_after).then(|| {
            format!(
                "account {account}: throttled by its provider (429) for {}s, paced at {rate:.2} requests/s; records converge at the provider's pace: set [accounts.quota] rate to its limit, or ask the provider for a higher one",
                self.throttled_for.as_secs()
            )
        })
    }
}

impl Pacer {
    pub fn new(account: impl Into<String>, config: PacingConfig) -> Pacer {
        Pacer {
            account: account.into(),
            config,
            state: Mutex::default(),
            turn: Arc::default(),
        }
    }

    pub fn account(&self) -> &str {
        &self.account
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The episode at `now`, ended when `recover` has passed without a throttle.
    fn episode(&self, st: &mut State, now: Instant) -> Option<Episode> {
        let recover = self.config.recover;
        if let Some(e) = st
            .episode
            .take_if(|e| now.saturating_duration_since(e.last_throttle) >= recover)
        {
            crate::events::PacingEnded {
                account: &self.account,
                lasted: now.saturating_duration_since(e.since),
            }
            .emit();
        }
        st.episode.clone()
    }

    /// Whether the account is paced now.
    pub fn paced(&self) -> bool {
        let mut st = self.state();
        self.episode(&mut st, Instant::now()).is_some()
    }

    /// The turn of one call (a precondition read and its write, a listing): at once
    /// while not paced; while paced, when the call before it is done. `Err(hint)`
    /// when the turn does not come before `deadline`.
    pub async fn unit(&self, deadline: Instant) -> Result<Unit, Duration> {
        if !self.config.enabled || !self.paced() {
            return Ok(Unit { _turn: None });
        }
        match tokio::time::timeout_at(deadline, self.turn.clone().lock_owned()).await {
            Ok(guard) => Ok(Unit { _turn: Some(guard) }),
            Err(_) => {
                let mut st = self.state();
                st.denied += 1;
                let now = Instant::now();
                let hint = self.episode(&mut st, now).map_or(Duration::ZERO, |e| {
                    Duration::from_secs_f64(1.0 / e.rate(now, self.config.recover))
                });
                Err(hint)
            }
        }
    }

    /// Waits for the slot of one request: at once while not paced; while paced, `1 /
    /// rate` after the previous one (and not before a `Retry-After` runs out).
    /// `Err(retry_after)` when the slot would come after `deadline` (nothing is
    /// reserved then).
    pub async fn slot(&self, deadline: Instant) -> Result<Duration, Duration> {
        let wait = {
            let mut st = self.state();
            let now = Instant::now();
            let episode = if self.config.enabled {
                self.episode(&mut st, now)
            } else {
                None
            };
            let Some(e) = episode else {
                st.note(now);
                return Ok(Duration::ZERO);
            };
            let at = e.next.max(now);
            if at > deadline {
                st.denied += 1;
                return Err(at - now);
            }
            let rate = e.rate(at, self.config.recover);
            if let Some(e) = st.episode.as_mut() {
                e.next = at + Duration::from_secs_f64(1.0 / rate);
            }
            st.note(at);
            at - now
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok(wait)
    }

    /// The provider answered a throttle (`retry_after`: its `Retry-After`): halve the
    /// rate (see the module) and hold the next request until the `Retry-After` runs
    /// out.
    pub fn throttle(&self, retry_after: Option<Duration>) {
        let now = Instant::now();
        let mut st = self.state();
        st.throttles += 1;
        if !self.config.enabled {
            return;
        }
        let floor = self.config.floor;
        let hold = retry_after.unwrap_or(HOLD).max(HOLD);
        let halved = match self.episode(&mut st, now) {
            None => {
                // What went in the last second, this request included.
                let sent = st.recent.len().max(1) as f64 / WINDOW.as_secs_f64();
                let to = (sent / 2.0).max(floor);
                st.episode = Some(Episode {
                    from: sent.max(to),
                    to,
                    halved_at: now,
                    climbs_at: now,
                    next: now,
                    last_throttle: now,
                    since: now,
                    since_wall: SystemTime::now(),
                });
                Some(to)
            }
            Some(e) if now.saturating_duration_since(e.halved_at) >= hold => {
                let from = e.rate(now, self.config.recover);
                let to = (from / 2.0).max(floor);
                if let Some(e) = st.episode.as_mut() {
                    (e.from, e.to, e.halved_at, e.climbs_at) = (from.max(to), to, now, now);
                }
                Some(to)
            }
            Some(_) => None,
        };
        if let Some(e) = st.episode.as_mut() {
            e.last_throttle = now;
            let pause = retry_after.unwrap_or_else(|| Duration::from_secs_f64(1.0 / e.to));
            e.next = e.next.max(now + pause);
            if e.halved_at == now {
                e.climbs_at = now + pause;
            }
        }
        if let Some(rate) = halved {
            crate::events::PacingHalved {
                account: &self.account,
                rate,
                retry_after,
            }
            .emit();
        }
    }

    pub fn status(&self) -> PacingStatus {
        let now = Instant::now();
        let mut st = self.state();
        let episode = self.episode(&mut st, now);
        PacingStatus {
            enabled: self.config.enabled,
            current_rate: episode.as_ref().map(|e| e.rate(now, self.config.recover)),
            throttled_since: episode.as_ref().map(|e| e.since_wall),
            throttled_for: episode
                .as_ref()
                .map_or(Duration::ZERO, |e| now.saturating_duration_since(e.since)),
            throttles: st.throttles,
            denied: st.denied,
            degraded_after: self.config.degraded_after,
        }
    }
}

#[cfg(test)]
#[path = "pacer_tests.rs"]
mod tests;
