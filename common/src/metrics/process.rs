//! The process's own resources as metrics, read from `/proc/self` (by the `procfs`
//! crate) at each scrape: CPU time, resident and virtual memory, file descriptors
//! against their limit, threads. Named `dnsplane_process_*` and labelled by
//! `service`, like `dnsplane_process_start_time_seconds`, so one scrape job over both
//! services keeps them apart. Where `/proc` cannot be read (not Linux), the families
//! are simply absent.
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Reads `/proc/self` when encoded.
#[derive(Debug)]
pub struct ProcessCollector {
    service: String,
}

impl ProcessCollector {
    pub fn new(service: &str) -> Self {
        ProcessCollector {
            service: service.to_string(),
        }
    }
}

/// One reading of the process.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessReading {
    pub cpu_seconds: f64,
    pub resident_bytes: u64,
    pub virtual_bytes: u64,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    pub threads: i64,
}

/// Reads `/proc/self`; `None` where there is no procfs.
pub fn read() -> Option<ProcessReading> {
    let me = procfs::process::Process::myself().ok()?;
    let stat = me.stat().ok()?;
    let ticks = procfs::ticks_per_second() as f64;
    let page = procfs::page_size();
    let max_fds = me
        .limits()
        .ok()
        .and_then(|l| match l.max_open_files.soft_limit {
            procfs::process::LimitValue::Value(v) => Some(v),
            procfs::process::LimitValue::Unlimited => None,
        });
    Some(ProcessReading {
        cpu_seconds: (stat.utime + stat.stime) as f64 / ticks,
        resident_bytes: stat.rss * page,
        virtual_bytes: stat.vsize,
        open_fds: me.fd_count().ok().map(|n| n as u64),
        max_fds,
        threads: stat.num_threads,
    })
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(r) = read() else { return Ok(()) };
        let labels = [("service", self.service.as_str())];
        let cpu = ConstCounter::new(r.cpu_seconds);
        cpu.encode(
            encoder
                .encode_descriptor(
                    "dnsplane_process_cpu_seconds",
                    "User and system CPU time this process has used",
                    None,
                    cpu.metric_type(),
                )?
                .encode_family(&labels)?,
        )?;
        let gauges: [(&str, &str, Option<i64>); 5] = [
            (
                "dnsplane_process_resident_memory_bytes",
                "Resident memory of this process",
                i64::try_from(r.resident_bytes).ok(),
            ),
            (
                "dnsplane_process_virtual_memory_bytes",
                "Virtual memory of this process",
                i64::try_from(r.virtual_bytes).ok(),
            ),
            (
                "dnsplane_process_open_fds",
                "File descriptors this process has open",
                r.open_fds.and_then(|v| i64::try_from(v).ok()),
            ),
            (
                "dnsplane_process_max_fds",
                "The soft limit of open file descriptors (absent when unlimited)",
                r.max_fds.and_then(|v| i64::try_from(v).ok()),
            ),
            (
                "dnsplane_process_threads",
                "Threads of this process",
                Some(r.threads),
            ),
        ];
        for (name, help, value) in gauges {
            let Some(v) = value else { continue };
            let g = ConstGauge::new(v);
            g.encode(
                encoder
                    .encode_descriptor(name, help, None, MetricType::Gauge)?
                    .encode_family(&labels)?,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::registry::Registry;

    #[test]
    fn a_scrape_shows_this_process() {
        let before = read().expect("/proc/self");
        // Burn some CPU and hold some memory, and see both move.
        let held: Vec<u8> = vec![1; 32 << 20];
        let mut x = 0u64;
        for i in 0..30_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box((&held, x));
        let f = std::fs::File::open("/proc/self/stat").expect("open");
        let after = read().expect("/proc/self");
        assert!(
            after.cpu_seconds > before.cpu_seconds,
            "{before:?} {after:?}"
        );
        assert!(after.resident_bytes >= 32 << 20, "{after:?}");
        assert!(after.open_fds.expect("fds") >= 1);
        assert!(after.threads >= 1);
        drop(f);

        let mut registry = Registry::default();
        registry.register_collector(Box::new(ProcessCollector::new("dnsplane-test")));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
        for line in [
            "# TYPE dnsplane_process_cpu_seconds counter",
            "dnsplane_process_cpu_seconds_total{service=\"dnsplane-test\"} ",
            "dnsplane_process_resident_memory_bytes{service=\"dnsplane-test\"} ",
            "dnsplane_process_open_fds{service=\"dnsplane-test\"} ",
            "dnsplane_process_threads{service=\"dnsplane-test\"} ",
        ] {
            assert!(text.contains(line), "{line} missing:\n{text}");
        }
    }
}
