//! The driver kit: what every driver of an HTTP API would otherwise write again, so
//! that a new driver writes only its wire format (what its requests and answers look
//! like, and what each answer means). See `docs/ARCHITECTURE.md`, "Writing a driver".
//!
//! - [`secret`]: a secret from a file or an environment variable, held as a sensitive
//!   HTTP header and read again when the provider refuses it (rotation);
//! - [`http`]: the pieces of one HTTP exchange every driver shares: trace context,
//!   `Retry-After`, and a request's quota token by its method;
//! - [`renew`]: expiring credentials kept until shortly before they expire, and the
//!   environment credential chains read.
pub mod counted;
pub mod http;
pub mod renew;
pub mod secret;
pub mod zones;
