//! Local emulators of the cloud DNS APIs dnsplane drives, built to their documented
//! semantics (atomicity, limits, error bodies and status codes, pagination, change
//! status, quotas), with opt-in faults. No faithful local server exists for these
//! APIs; see `docs/emulators.md`.
