//! `dnsplane-bench-linear` (issue 14, "linear at any size"): the full stack (planner
//! and applier as release processes) against a private PowerDNS and BIND with stock
//! settings, timed phase by phase, with the PowerDNS floor beside each row — the same
//! RRSets written by `curl -X PATCH` into a fresh zone on the same server — and each
//! goal of the issue checked. One markdown table; docs/scale.md says what each column
//! means.
//!
//! ```sh
//! cargo build --release --bins && target/release/dnsplane-bench-linear
//! # quick (10k records, a minute or two):
//! target/release/dnsplane-bench-linear --phases create,change,noop,oneshot,conflict,wrongkey,quota
//! ```
//!
//! It uses the `dnsplane-planner` and `dnsplane-applier` next to its own binary, and
//! `pdns_server`/`named`, `dig` and `curl` as the tests do (tests/run-all.sh installs
//! them).
mod args;
mod dnsq;
mod failures;
mod floor;
mod large;
mod pacing;
mod probe;
mod quick;
mod quota_floor;
mod stats;

use dnsplane_common::pb;
use dnsplane_common::pb::applier_client::ApplierClient;
use dnsplane_common::pb::planner_client::PlannerClient;
use dnsplane_e2e::servers::stack::{Options, RealStack, Tools};
use dnsplane_e2e::servers::{Kind, RealServer};
use std::path::PathBuf;
use std::time::Duration;
use tonic::transport::Channel;

/// One line of the table.
#[derive(Debug, Default)]
pub struct Row {
    pub server: &'static str,
    pub phase: String,
    pub records: usize,
    pub time: String,
    pub floor: String,
    pub ratio: String,
    /// Applier provider calls, `reads / writes`.
    pub calls: String,
    pub goal: String,
    /// `None`: nothing to judge (information).
    pub pass: Option<bool>,
    pub note: String,
}

/// What every phase needs.
#[derive(Debug)]
pub struct Ctx {
    pub args: args::Args,
    pub bin_dir: PathBuf,
    pub tools: Tools,
    pub rows: Vec<Row>,
}

impl Ctx {
    /// The stack options every phase starts from: release binaries next to this one,
    /// quiet logs, admin ports (for `/healthz` and `/metrics`), and no sync but the
    /// benchmark's own `Sync` calls unless a phase says otherwise.
    pub fn options(&self) -> Options {
        Options {
            batch_max_changes: self.args.batch,
            bin_dir: self.bin_dir.clone(),
            log_filter: "warn".into(),
            min_interval: "1h".into(),
            admin_ports: true,
            ..Options::default()
        }
    }

    pub fn server(&self, kind: Kind) -> RealServer {
        RealServer::start(kind).unwrap_or_else(|| {
            args::usage(&format!(
                "{} is not installed (tests/run-all.sh installs it)",
                kind.server()
            ))
        })
    }

    /// As [`server`](Self::server), a cloud at its documented limits and quota, its
    /// zone quota raised to `records` (see `RealServer::start_at_limits`).
    pub fn server_at_limits(&self, kind: Kind, records: usize) -> RealServer {
        RealServer::start_at_limits(kind, records, self.args.cloudflare_plan).unwrap_or_else(|| {
            args::usage(&format!(
                "{} is not installed (tests/run-all.sh installs it)",
                kind.server()
            ))
        })
    }

    pub fn stack(&self, server: RealServer, opts: Options) -> RealStack {
        RealStack::start(server, self.tools.clone(), opts)
    }

    pub fn push(&mut self, row: Row) {
        eprintln!("{row:?}");
        self.rows.push(row);
    }
}

/// gRPC clients on one long-lived connection each, as a real caller holds them (the
/// stack's own helpers connect per call).
#[derive(Debug)]
pub struct Grpc {
    pub rt: tokio::runtime::Runtime,
    pub planner: PlannerClient<Channel>,
    pub applier: ApplierClient<Channel>,
}

impl Grpc {
    pub fn new(s: &RealStack) -> Grpc {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let planner = rt
            .block_on(PlannerClient::connect(s.planner_addr()))
            .expect("connect to the planner")
            .max_encoding_message_size(256 << 20)
            .max_decoding_message_size(256 << 20);
        let applier = rt
            .block_on(ApplierClient::connect(format!(
                "http://127.0.0.1:{}",
                s.applier_port
            )))
            .expect("connect to the applier");
        Grpc {
            rt,
            planner,
            applier,
        }
    }

    /// The applier's status of `account`.
    pub fn account(&mut self, account: &str) -> pb::AccountStatus {
        self.rt
            .block_on(self.applier.get_status(pb::GetApplierStatusRequest {}))
            .expect("applier GetStatus")
            .into_inner()
            .accounts
            .into_iter()
            .find(|a| a.name == account)
            .expect("the account in the applier status")
    }
}

/// Records of the stack's zone in `state` ("converged", "conflict", ...).
pub fn count(s: &RealStack, state: &str) -> u32 {
    s.states_count().get(state).copied().unwrap_or(0)
}

/// Polls (every `every`) until `n` records are converged; `None` after `timeout`.
pub fn wait_converged(s: &RealStack, n: u32, every: Duration, timeout: Duration) -> Option<()> {
    let t0 = std::time::Instant::now();
    loop {
        if count(s, "converged") >= n {
            return Some(());
        }
        if t0.elapsed() > timeout {
            return None;
        }
        std::thread::sleep(every);
    }
}

fn main() {
    let args = args::parse();
    let bin_dir = dnsplane_e2e::servers::own_dir();
    let dig = dnsplane_e2e::tool("DNSPLANE_DIG", "dig")
        .unwrap_or_else(|| args::usage("dig not found (Debian package bind9-dnsutils)"));
    let tools = Tools {
        dig,
        grpcurl: "grpcurl".into(),
    };
    let mut ctx = Ctx {
        args,
        bin_dir,
        tools,
        rows: Vec::new(),
    };
    let started = std::time::Instant::now();
    for kind in ctx.args.kinds.clone() {
        if ["create", "change", "noop"].iter().any(|p| ctx.args.has(p)) {
            quick::bulk(&mut ctx, kind);
        }
        if ctx.args.has("oneshot") {
            quick::oneshot(&mut ctx, kind);
        }
        if ctx.args.has("conflict") {
            failures::conflict(&mut ctx, kind);
        }
        if ctx.args.has("wrongkey") {
            failures::wrong_key(&mut ctx, kind);
        }
        if ctx.args.has("quota") {
            failures::quota(&mut ctx, kind);
        }
        if ctx.args.has("pacing") {
            pacing::run(&mut ctx, kind);
        }
        if ctx.args.has("large") || ctx.args.has("rss") {
            large::run(&mut ctx, kind);
        }
    }
    print_table(&ctx, started.elapsed());
}

fn print_table(ctx: &Ctx, took: Duration) {
    println!(
        "\ndnsplane-bench-linear: {} records (--large {:?}), planner batch.max_changes = {} (0: its default), {} cores, {} in all\n",
        ctx.args.records,
        ctx.args.large,
        ctx.args.batch,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        stats::fmt(took)
    );
    println!(
        "| server | phase | records | time | PowerDNS floor | ratio | provider calls (reads / writes) | goal | result | notes |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---|---|---|");
    for r in &ctx.rows {
        let result = match r.pass {
            Some(true) => "pass",
            Some(false) => "**FAIL**",
            None => "—",
        };
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.server,
            r.phase,
            r.records,
            r.time,
            dash(&r.floor),
            dash(&r.ratio),
            dash(&r.calls),
            dash(&r.goal),
            result,
            r.note
        );
    }
    let failed = ctx.rows.iter().filter(|r| r.pass == Some(false)).count();
    let judged = ctx.rows.iter().filter(|r| r.pass.is_some()).count();
    println!("\n{} of {judged} goals met", judged - failed);
}

fn dash(s: &str) -> &str {
    if s.is_empty() { "—" } else { s }
}
