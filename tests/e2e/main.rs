//! Cross-service tests: `dnsplane-planner` and `dnsplane-applier` run as separate
//! processes over real TCP; DNS is checked with the real `dig`, gRPC with the real
//! `grpcurl`. One test binary (modules below) to save link time.
mod stack;
mod slice;
mod up;
mod real_servers;
mod real_providers;
mod requeue;
mod reliability;
mod cookbook;
mod deploy_files;
mod failing_zone;
mod failover;
mod quota;
mod cli;
mod metrics;
mod otlp_trace;
