//! The applier over real gRPC and DNS sockets, started in-process. One test binary
//! with modules, to save link time.
mod apply;
mod azure;
mod dns;
mod lifecycle;
mod list;
mod recorded;
mod route53_order;
mod routing;
mod support;
