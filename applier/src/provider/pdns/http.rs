//! One request to PowerDNS's API: its URL, the API key (re-read when refused), the
//! deadline that follows PowerDNS's own time per PATCH, and the answer classified
//! where it is read.
use super::*;

/// A request that failed below HTTP; `timed_out` when it hit its deadline.
pub(super) struct Failed {
    pub(super) error: ProviderError,
    pub(super) timed_out: bool,
}

impl PdnsProvider {
    pub(super) fn url(&self, segments: &[&str]) -> Url {
        crate::provider::kit::http::url(&self.server_url, segments, &[])
    }

    /// One HTTP exchange, classified. A failure after sending a write is ambiguous,
    /// after sending a read transient. The request first takes its quota token from
    /// `pacer`, and gets `zone`'s deadline ([`timing`]); a whole-zone read or a write
    /// tells the deadline how long it took.
    pub(super) async fn call(
        &self,
        method: Method,
        url: Url,
        body: Option<Vec<u8>>,
        kind: Kind,
        zone: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<Answer, ProviderError> {
        let write = kind == Kind::Write;
        pacer
            .request(if write {
                Operation::Apply
            } else {
                Operation::List
            })
            .await?;
        let deadline = self.deadlines.for_zone(zone);
        let started = std::time::Instant::now();
        let answer = self.exchange(method, url, body, write, deadline).await;
        if let (Some(zone), true) = (zone, kind != Kind::Read) {
            match &answer {
                Ok(_) => self.deadlines.heavy(zone, started.elapsed()),
                Err(e) if e.timed_out => self.deadlines.heavy(zone, deadline),
                Err(_) => {}
            }
        }
        answer.map_err(|e| e.error)
    }

    pub(super) async fn exchange(
        &self,
        method: Method,
        url: Url,
        body: Option<Vec<u8>>,
        write: bool,
        deadline: Duration,
    ) -> Result<Answer, Failed> {
        let what = format!("{method} {}", url.path());
        let mut req = traced(
            self.http
                .request(method, url)
                .timeout(deadline)
                .header("x-api-key", self.key.value()),
        );
        if let Some(body) = body {
            req = req.header(CONTENT_TYPE, "application/json").body(body);
        }
        let failed = |e: reqwest::Error| Failed {
            timed_out: e.is_timeout(),
            error: transport_error(&what, &e, write),
        };
        let resp = req.send().await.map_err(failed)?;
        let status = resp.status();
        if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
            self.key.reload();
        }
        let retry_after = retry_after(resp.headers());
        let body = resp.bytes().await.map_err(failed)?;
        Ok(Answer {
            what,
            status,
            retry_after,
            body: body.to_vec(),
        })
    }

    /// GET and decode a JSON document; any non-2xx answer is classified.
    pub(super) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        url: Url,
        kind: Kind,
        zone: Option<&Name>,
        pacer: &Pacer,
    ) -> Result<T, ProviderError> {
        let answer = self.call(Method::GET, url, None, kind, zone, pacer).await?;
        if !answer.status.is_success() {
            return Err(answer.classify(zone, false));
        }
        serde_json::from_slice(&answer.body).map_err(|e| {
            ProviderError::new(
                ErrorClass::Transient,
                format!("{}: cannot decode the PowerDNS answer: {e}", answer.what),
            )
        })
    }
}
