//! A real headless Chromium driven over the W3C WebDriver HTTP API of a real
//! `chromedriver` (Debian packages `chromium` and `chromium-driver`), with reqwest:
//! just the commands the status page test needs.
use crate::{Proc, free_port, tool, wait_for};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The W3C element reference key.
const ELEMENT: &str = "element-6066-11e4-a5ae-4a4b7a1d0d2";

/// `chromedriver` and a browser session; both end when dropped.
pub struct Browser {
    _driver: Proc,
    _profile: tempfile::TempDir,
    base: String,
    session: String,
    rt: tokio::runtime::Runtime,
    http: reqwest::Client,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser").field("base", &self.base).finish()
    }
}

/// The tools; `None`: skip (a failure under `DNSPLANE_REQUIRE_SERVERS=1`).
pub fn find() -> Option<(PathBuf, PathBuf)> {
    let chromium = tool("DNSPLANE_CHROMIUM", "chromium");
    let driver = tool("DNSPLANE_CHROMEDRIVER", "chromedriver");
    Some((chromium?, driver?))
}

impl Browser {
    /// Starts chromedriver on a free loopback port and a headless Chromium session.
    pub fn start(chromium: &std::path::Path, driver: &std::path::Path, log: PathBuf) -> Browser {
        let port = free_port();
        let p = Proc::spawn(
            "chromedriver",
            driver,
            &[&format!("--port={port}"), "--allowed-ips=127.0.0.1"],
            log,
        );
        let profile = tempfile::tempdir().expect("profile dir");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .expect("client");
        let base = format!("http://127.0.0.1:{port}");
        let up = wait_for(Duration::from_secs(20), || {
            rt.block_on(async { http.get(format!("{base}/status")).send().await })
                .ok()
                .filter(|r| r.status().is_success())
        });
        assert!(
            up.is_some(),
            "chromedriver did not answer on {base}: {}",
            p.log_text()
        );
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium.display().to_string(),
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1400,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        }}});
        let mut b = Browser {
            _driver: p,
            _profile: profile,
            base,
            session: String::new(),
            rt,
            http,
        };
        let v = b.call("POST", "/session", Some(caps));
        b.session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_string();
        b
    }

    /// One WebDriver command; panics with the driver's error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.try_call(method, path, body)
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"))
    }

    /// The answer, or the WebDriver error it carries.
    fn try_call(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value, Value> {
        let url = format!("{}{path}", self.base);
        let req = match method {
            "POST" => self.http.post(&url).json(&body.unwrap_or(json!({}))),
            "DELETE" => self.http.delete(&url),
            _ => self.http.get(&url),
        };
        let r = self
            .rt
            .block_on(async { req.send().await?.json::<Value>().await })
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        if r["value"]["error"].is_string() {
            return Err(r["value"].clone());
        }
        Ok(r)
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({"url": url})));
    }

    /// Runs `script` (a function body) with `args`; its return value.
    pub fn exec(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Runs `script` whose last argument is a callback to call with the result.
    pub fn exec_async(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/async",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// The element matching the CSS `selector` (its reference), if any.
    pub fn find(&self, selector: &str) -> Option<String> {
        let v = self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": selector})),
        );
        // The reference is the only value of the W3C element object.
        let e = v.as_array()?.first()?.as_object()?;
        e.get(ELEMENT)
            .or_else(|| e.values().next())?
            .as_str()
            .map(str::to_string)
    }

    /// The rendered text of the element matching `selector` ("" when there is none).
    /// Found and read in one script: the page replaces its live sections every two
    /// seconds, so an element found by one call can be gone by the next (a stale
    /// element reference).
    pub fn text(&self, selector: &str) -> String {
        self.exec(
            "const e = document.querySelector(arguments[0]); return e ? e.innerText : '';",
            json!([selector]),
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    /// Clicks the element matching `selector`; found again if the page replaced it
    /// between finding and clicking (its live sections are re-rendered every 2 s).
    pub fn click(&self, selector: &str) {
        for _ in 0..5 {
            let e = self
                .find(selector)
                .unwrap_or_else(|| panic!("no element {selector}"));
            let path = format!("/session/{}/element/{e}/click", self.session);
            match self.try_call("POST", &path, Some(json!({}))) {
                Ok(_) => return,
                Err(err) if err["error"] == "stale element reference" => continue,
                Err(err) => panic!("WebDriver POST {path}: {err}"),
            }
        }
        panic!("{selector} was replaced before every click");
    }

    pub fn type_into(&self, selector: &str, text: &str) {
        let e = self
            .find(selector)
            .unwrap_or_else(|| panic!("no element {selector}"));
        self.cmd(
            "POST",
            &format!("/element/{e}/value"),
            Some(json!({"text": text})),
        );
    }

    /// Waits (bounded) until the text of `selector` satisfies `ok`; returns it.
    pub fn wait_text(&self, selector: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        let found = wait_for(Duration::from_secs(60), || {
            last = self.text(selector);
            ok(&last).then(|| last.clone())
        });
        found.unwrap_or_else(|| panic!("waiting for {what} in {selector}; last text: {last:?}"))
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        use base64::Engine as _;
        let v = self.cmd("GET", "/screenshot", None);
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("base64 screenshot"))
            .expect("screenshot is base64")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let url = format!("{}/session/{}", self.base, self.session);
            let _ = self
                .rt
                .block_on(async { self.http.delete(&url).send().await });
        }
    }
}
