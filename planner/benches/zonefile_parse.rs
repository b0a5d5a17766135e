//! What parsing a zone file costs: a generated zone of N records (A with two values,
//! AAAA, CNAME, TXT with quotes and escapes, MX, SRV in parentheses, CAA, PTR, HTTPS)
//! built in memory, then parsed once. Printed: the seconds, the entries, and the
//! resident memory per record (`/proc/self/status`) at the parse's peak (`VmHWM`, reset
//! before it) and held after it by the entries (`VmRSS`), above what the process held
//! with the text in memory before the parse.
//!
//! `cargo bench -p dnsplane-planner --bench zonefile_parse -- 100000 1000000`
use dnsplane_common::Name;
use dnsplane_planner::source::zonefile;
use std::time::Instant;

#[path = "../tests/common/generated_zone.rs"]
mod generated_zone;

/// `VmRSS` and `VmHWM` (the peak since the last reset) of this process, in bytes.
fn memory() -> (usize, usize) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
            .map_or(0, |k| k * 1024)
    };
    (kb("VmRSS:"), kb("VmHWM:"))
}

/// Starts a new peak: Linux resets `VmHWM` to the current RSS on writing 5 to
/// `clear_refs`.
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100_000, 1_000_000]
    } else {
        sizes
    };
    let origin = Name::parse("gen.test.").expect("origin");
    println!(
        "| records | text | entries | parse | records/s | peak RSS during the parse, per record | RSS held by the entries, per record |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for n in sizes {
        let text = generated_zone::generated_zone(n);
        reset_peak();
        let (before, _) = memory();
        let t = Instant::now();
        let parsed = zonefile::parse("gen.test.zone", &text, Some(&origin));
        let secs = t.elapsed().as_secs_f64();
        let (now, peak) = memory();
        let (peak, held) = (peak.saturating_sub(before), now.saturating_sub(before));
        assert!(parsed.errors.is_empty(), "{:?}", parsed.errors.first());
        println!(
            "| {n} | {:.1} MiB | {} | {secs:.2} s | {:.0} | {} B | {} B |",
            text.len() as f64 / (1 << 20) as f64,
            parsed.entries.len(),
            n as f64 / secs,
            peak / n,
            held / n,
        );
        drop(parsed);
        drop(text);
    }
}
