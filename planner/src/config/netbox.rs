//! `[[sources]] type = "netbox"` checked when the config is loaded: a setting that
//! cannot work is a start-up error naming it, not a source that quietly reads nothing.
use super::NetboxSourceConfig;
use std::time::Duration;

/// The least `full_read_interval`: a full read of 50,000 addresses is 50 requests.
pub const MIN_FULL_READ_INTERVAL: Duration = Duration::from_secs(10);

impl NetboxSourceConfig {
    /// The first setting that cannot work, as `key: why`.
    pub fn check(&self) -> Result<(), String> {
        let c = self;
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
        if !c.ipam && !c.plugin {
            return Err(
                "ipam = false without plugin = true leaves this source nothing to read".into(),
            );
        }
        if !c.plugin && !c.plugin_views.is_empty() {
            return Err("plugin_views goes with plugin = true".into());
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
                    "webhook_listen needs webhook_secret_file: an unsigned webhook is refused"
                        .into(),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: serde_json::Value) -> NetboxSourceConfig {
        let mut base = serde_json::json!({"url": "https://netbox.example.com", "token_file": "t"});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn settings_that_cannot_work_are_named() {
        assert_eq!(config(serde_json::json!({})).check(), Ok(()));
        for (extra, want) in [
            (serde_json::json!({"url": "netbox.example.com"}), "url"),
            (
                serde_json::json!({"url": "ftp://netbox"}),
                "http:// or https://",
            ),
            (
                serde_json::json!({"url": "https://nb/?limit=5"}),
                "without a query",
            ),
            (serde_json::json!({"ipam": false}), "nothing to read"),
            (
                serde_json::json!({"webhook_listen": "127.0.0.1:8090"}),
                "needs webhook_secret_file",
            ),
            (
                serde_json::json!({"webhook_secret_file": "s"}),
                "goes with webhook_listen",
            ),
            (
                serde_json::json!({"full_read_interval": "5s"}),
                "at least 10s",
            ),
            (serde_json::json!({"tags": [" "]}), "tags"),
            (serde_json::json!({"name": "a b"}), "name"),
        ] {
            let got = config(extra.clone()).check().unwrap_err();
            assert!(got.contains(want), "{extra}: {got}");
        }
    }
}
