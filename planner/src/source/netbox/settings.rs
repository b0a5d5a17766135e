//! `[[sources]] type = "netbox"` checked before the planner starts: a setting that
//! cannot work is a start-up error naming it, not a source that quietly reads nothing.
use crate::config::NetboxSourceConfig;
use std::time::Duration;

/// The least `full_read_interval`: a full read of 50,000 addresses is 50 requests.
pub const MIN_FULL_READ_INTERVAL: Duration = Duration::from_secs(10);

/// The first setting that cannot work, as `key: why`.
pub fn check(c: &NetboxSourceConfig) -> Result<(), String> {
    match reqwest::Url::parse(&c.url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.query().is_none() => {}
        Ok(_) => {
            return Err(format!(
                "url {:?}: NetBox's http:// or https:// URL, without a query",
                c.url
            ));
        }
        Err(e) => return Err(format!("url {:?}: {e}", c.url)),
    }
    if !c.ipam {
        return Err("ipam = false leaves this source nothing to read".into());
    }
    if let Some(name) = &c.name
        && (name.is_empty()
            || !name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '.' | '_' | '-')))
    {
        return Err(format!(
            "name {name:?}: letters, digits, '.', '_' and '-' only"
        ));
    }
    match (&c.webhook_listen, &c.webhook_secret_file) {
        (Some(_), None) => {
            return Err(
                "webhook_listen needs webhook_secret_file: an unsigned webhook is refused".into(),
            );
        }
        (None, Some(_)) => return Err("webhook_secret_file goes with webhook_listen".into()),
        _ => {}
    }
    if c.full_read_interval < MIN_FULL_READ_INTERVAL {
        return Err(format!(
            "full_read_interval must be at least {}",
            humantime::format_duration(MIN_FULL_READ_INTERVAL)
        ));
    }
    if c.request_timeout < Duration::from_secs(1) {
        return Err("request_timeout must be at least 1s".into());
    }
    for (key, list) in [
        ("statuses", &c.statuses),
        ("vrfs", &c.vrfs),
        ("tenants", &c.tenants),
        ("tags", &c.tags),
    ] {
        if let Some(v) = list.iter().find(|v| v.trim().is_empty()) {
            return Err(format!("{key}: {v:?} is empty"));
        }
    }
    Ok(())
}
