//! What a large load does to the planner's other answers: a prober hitting its admin
//! `/healthz` and its gRPC `GetStatus` every ~50 ms while the load runs (one after the
//! other: an answer that takes seconds delays the next probe, so its max says more
//! than its p99), and the process's resident memory afterwards.
use dnsplane_common::pb;
use dnsplane_common::pb::planner_client::PlannerClient;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Latencies seen by the prober.
#[derive(Debug, Default)]
pub struct Latencies {
    pub healthz: Vec<Duration>,
    pub status: Vec<Duration>,
    /// Probes that failed (no answer, an error status): counted, and as slow as the
    /// time they took.
    pub errors: u64,
}

pub struct Prober {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Latencies>,
}

const EVERY: Duration = Duration::from_millis(50);

impl Prober {
    pub fn start(admin_port: u16, grpc_port: u16) -> Prober {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("prober runtime");
            let mut client = rt
                .block_on(PlannerClient::connect(format!(
                    "http://127.0.0.1:{grpc_port}"
                )))
                .expect("connect to the planner");
            let mut l = Latencies::default();
            while !flag.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                if !healthz(admin_port) {
                    l.errors += 1;
                }
                l.healthz.push(t0.elapsed());
                let t1 = Instant::now();
                if rt
                    .block_on(client.get_status(pb::GetStatusRequest {}))
                    .is_err()
                {
                    l.errors += 1;
                }
                l.status.push(t1.elapsed());
                std::thread::sleep(EVERY.saturating_sub(t0.elapsed()));
            }
            l
        });
        Prober { stop, handle }
    }

    pub fn stop(self) -> Latencies {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("the prober thread")
    }
}

/// One `GET /healthz`; `true` on 200.
fn healthz(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    if write!(
        s,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    text.starts_with("HTTP/1.1 200")
}

pub use dnsplane_testing::rss;

/// Provider calls the applier made, by kind, from its `/metrics`
/// (`dnsplane_applier_provider_requests_total`): reads (`zones`, `serial`, `list`) and
/// writes (`apply`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ops {
    pub reads: u64,
    pub writes: u64,
}

impl Ops {
    pub fn of(applier_admin_port: u16) -> Ops {
        let (code, text) = dnsplane_e2e::http_get(applier_admin_port, "/metrics");
        assert_eq!(code, 200, "applier /metrics: {text}");
        let mut ops = Ops::default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("dnsplane_applier_provider_requests_total{") else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let n = value.trim().parse::<f64>().unwrap_or(0.0) as u64;
            if labels.contains("operation=\"apply\"") {
                ops.writes += n;
            } else {
                ops.reads += n;
            }
        }
        ops
    }

    pub fn since(self, before: Ops) -> Ops {
        Ops {
            reads: self.reads - before.reads,
            writes: self.writes - before.writes,
        }
    }
}
