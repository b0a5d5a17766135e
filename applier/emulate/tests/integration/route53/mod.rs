//! The Route 53 emulator against AWS's documented and observed behaviour.
mod auth;
mod changes;
mod config;
mod control;
mod faults;
mod listing;
mod quota;
mod zones;
