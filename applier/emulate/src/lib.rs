//! Local emulators of the cloud DNS APIs dnsplane drives, built to their documented
//! semantics (atomicity, limits, error bodies and status codes, pagination, change
//! status, quotas), with opt-in faults. No faithful local server exists for these
//! APIs (moto, for one, is not atomic and lets a CREATE duplicate a set); see
//! `docs/emulators.md` for what each emulator reproduces and what it does not.
//!
//! Layout:
//! - [`route53`]: AWS Route 53 (REST-XML, SigV4), one folder split by concept;
//! - [`clouddns`]: Google Cloud DNS (JSON `dns/v1`, OAuth bearer tokens), likewise;
//! - [`cloudflare`]: Cloudflare's DNS API (JSON, API tokens, the batch endpoint,
//!   the rate limit), one folder split by concept;
//! - [`azure`]: Azure DNS's ARM API (public and private zones, record-set ETags and
//!   412s, bearer tokens and a token endpoint, the subscription quota), likewise;
//! - shared, provider-neutral pieces every emulator builds on: [`control`] (the
//!   `/_emulator/` control API, each emulator plugging in its zones through
//!   [`control::ControlPlane`]), [`fault`] (opt-in fault rules), [`quota`] (a
//!   token-bucket request quota), [`server`] (serving a router on an injected
//!   listener, connections that a fault can drop without an answer, graceful stop,
//!   and `dnsplane emulate`'s start and stop) and [`timefmt`] (UTC timestamps without
//!   a date crate);
//! - [`EmulateError`]: what starting an emulator from the command line can fail with.
//!
//! Every emulator serves on a `tokio::net::TcpListener` the caller binds (tests bind
//! `127.0.0.1:0`), keeps its state in memory, and offers an unsigned control API under
//! `/_emulator/` on the same port for tests that run it as a separate process.
pub mod azure;
pub mod clouddns;
pub mod cloudflare;
pub mod control;
pub mod fault;
pub mod quota;
pub mod route53;
pub mod running;
pub mod server;
pub mod stats;
pub mod timefmt;

mod error;

pub use azure::{AzureEmulator, AzureOptions, run_azure};
pub use clouddns::{CloudDnsEmulator, CloudDnsOptions, run_clouddns};
pub use cloudflare::{CloudflareEmulator, CloudflareOptions, DEFAULT_TOKEN, run_cloudflare};
pub use error::EmulateError;
pub use fault::{FaultAction, FaultRule};
pub use route53::{
    Credential, DEFAULT_ACCESS_KEY_ID, DEFAULT_SECRET_ACCESS_KEY, RRSetView, Route53Emulator,
    Route53Options, Stats, run_route53,
};

/// The Rust examples of `docs/emulators.md`, run as doc tests so that they keep working.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/emulators.md")]
pub struct EmulatorsDoc;
