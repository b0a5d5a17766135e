//! NetBox as a source (issue 34; groundwork on this branch): the addresses and names
//! network teams keep in NetBox, read through its REST API.
//!
//! - [`client`]: the REST client: token, pagination (`limit`, `offset`, the `next`
//!   links), and errors that say which request failed. A read is whole or it is an
//!   error: a page that fails halfway fails the read, so the caller keeps its last
//!   complete read (never delete on doubt).
//! - [`ipam`]: IPAM's IP addresses with a `dns_name`, as A and AAAA records, filtered
//!   by status, VRF, tenant and tag; an address that cannot be a record is reported
//!   with the reason, and its neighbours are taken.
pub mod client;
pub mod ipam;

#[cfg(test)]
mod tests;
