//! Percentiles and the formatting of times.
use std::time::Duration;

/// The `q` quantile (0..=1) of `samples` by nearest rank; zero when empty.
pub fn quantile(samples: &[Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let mut s = samples.to_vec();
    s.sort();
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

pub fn mean(samples: &[Duration]) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.iter().sum::<Duration>() / samples.len() as u32
}

/// `1.23 s` above a second, `12.3 ms` below.
pub fn fmt(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

/// `p50 / p99 / max` of `samples`.
pub fn spread(samples: &[Duration]) -> String {
    format!(
        "{} / {} / {}",
        fmt(quantile(samples, 0.5)),
        fmt(quantile(samples, 0.99)),
        fmt(quantile(samples, 1.0))
    )
}
