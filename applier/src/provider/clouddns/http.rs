//! One request to Cloud DNS: its URL, the bearer token, the answer classified where
//! it is read, and the one retry a read just after a write earns (Google's listing
//! lags its own changes).
use super::*;
use crate::provider::kit::http::{retry_after, traced};

impl CloudDnsProvider {
    pub(super) fn url(&self, segments: &[&str], query: &[(&str, &str)]) -> Url {
        crate::provider::kit::http::url(&self.api, segments, query)
    }

    /// One authorised HTTP exchange, the request under the call's quota (`op`); a
    /// non-2xx answer classified (`sent`: what a Change carried, to name records). A
    /// read answered 404 right after a successful call on its zone (Cloud DNS's
    /// read-after-write lag) is asked once more, [`LAG_RETRY`] later.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn call(
        &self,
        method: Method,
        url: Url,
        body: Option<String>,
        zone: Option<&Name>,
        op: Operation,
        pacer: &Pacer,
        sent: Option<&Sent>,
    ) -> Result<String, ProviderError> {
        let first = self
            .call_once(
                method.clone(),
                url.clone(),
                body.clone(),
                zone,
                op,
                pacer,
                sent,
            )
            .await;
        match first {
            Ok(text) => Ok(text),
            Err(Failed::Lag(e)) => {
                tracing::debug!(zone = ?zone, error = %e, "A read right after a write answered 404; asking once more.");
                tokio::time::sleep(LAG_RETRY).await;
                self.call_once(method, url, body, zone, op, pacer, sent)
                    .await
                    .map_err(Failed::into_error)
            }
            Err(Failed::Other(e)) => Err(e),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn call_once(
        &self,
        method: Method,
        url: Url,
        body: Option<String>,
        zone: Option<&Name>,
        op: Operation,
        pacer: &Pacer,
        sent: Option<&Sent>,
    ) -> Result<String, Failed> {
        let write = method == Method::POST;
        pacer.request(op).await.map_err(Failed::Other)?;
        let token = self.credentials.get().await.map_err(Failed::Other)?;
        let what = format!("{method} {}", url.path());
        let mut req = traced(self.http.request(method, url).bearer_auth(&token.secret));
        if let Some(body) = body {
            req = req.header("content-type", "application/json").body(body);
        }
        let transport =
            |e: reqwest::Error| Failed::Other(crate::provider::transport_error(&what, &e, write));
        let resp = req.send().await.map_err(transport)?;
        let status = resp.status().as_u16();
        let retry_after = retry_after(resp.headers());
        let text = resp.text().await.map_err(transport)?;
        if (200..300).contains(&status) {
            if let Some(z) = zone {
                lock(&self.last_ok).insert(z.clone(), Instant::now());
            }
            return Ok(text);
        }
        let mut err = wire::classify(status, &text, &what, write, sent, zone);
        if let Some(after) = retry_after {
            err = err.with_retry_after(after);
        }
        if status == 401 || (status == 403 && err.class == ErrorClass::Permanent) {
            // A renewed token or key file is read on the next request.
            self.credentials.forget().await;
        }
        if status == 404
            && err.class == ErrorClass::Permanent
            && err.key.is_none()
            && let Some(z) = zone
        {
            let recent = lock(&self.last_ok)
                .get(z)
                .is_some_and(|t| t.elapsed() < READ_AFTER_WRITE_LAG);
            if !write && recent {
                err.class = ErrorClass::Transient;
                err.message.push_str(LAG_NOTE);
                return Err(Failed::Lag(err));
            }
            lock(&self.found).remove(z);
        }
        Err(Failed::Other(err))
    }
}
