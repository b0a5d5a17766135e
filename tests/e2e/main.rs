//! Cross-service tests: `dnsplane-planner` and `dnsplane-applier` run as separate
//! processes over real TCP; DNS is checked with the real `dig`, gRPC with the real
//! `grpcurl`. One test binary (modules below) to save link time.
mod cli;
mod clouddns;
mod cloudflare;
mod conformance;
mod cookbook;
mod credentials;
mod deploy_files;
mod embedded_dns;
mod external_dns_takeover;
mod failing_zone;
mod failover;
mod hostile;
mod incremental;
mod kubernetes;
mod layering;
mod lease;
mod message_limits;
mod metrics;
mod otlp_trace;
mod push;
mod quota;
mod real_providers;
mod real_servers;
mod record_cache;
mod reliability;
mod requeue;
mod route53;
mod routing_sets;
mod safety;
mod secret_scan;
mod slice;
mod stack;
mod up;
mod webhook;
mod webhook_server;
