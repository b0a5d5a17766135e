//! The real `kubectl` against the fake API server ([`crate::kube_api`]): a kubeconfig
//! naming it, and `kubectl` runs with that kubeconfig only (its own HOME and cache
//! directory, so nothing of the machine's `~/.kube` is read or written).
//!
//! `kubectl` comes from `$DNSPLANE_KUBECTL`, else PATH (`tests/run-all.sh` installs
//! Debian's `kubectl` package when it can); missing, a test skips, or fails under
//! `DNSPLANE_REQUIRE_SERVERS=1` ([`crate::tool`]).
use crate::kube_api::FakeKubeApi;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A kubeconfig whose only context is the API server at `url` (`http://…`), in the
/// `default` namespace, without credentials.
pub fn kubeconfig(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {url}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\ncurrent-context: fake\nusers:\n- name: fake\n  user: {{}}\npreferences: {{}}\n"
    )
}

/// `kubectl` pointed at one fake API server.
#[derive(Debug)]
pub struct Kubectl {
    bin: PathBuf,
    dir: tempfile::TempDir,
}

/// What one `kubectl` run gave.
#[derive(Debug, Clone)]
pub struct KubectlOutput {
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Kubectl {
    /// `kubectl` for `api`, or `None` (the test skips) when there is no kubectl.
    pub fn for_fake(api: &FakeKubeApi) -> Option<Kubectl> {
        let bin = crate::tool("DNSPLANE_KUBECTL", "kubectl")?;
        let dir = tempfile::tempdir().expect("a temporary directory for kubectl");
        std::fs::write(dir.path().join("kubeconfig"), kubeconfig(&api.url()))
            .expect("write the kubeconfig");
        Some(Kubectl { bin, dir })
    }

    /// The kubeconfig's path (a planner under test may read it too).
    pub fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.bin);
        let home: &Path = self.dir.path();
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home)
            .env("KUBECONFIG", self.kubeconfig())
            .arg("--cache-dir")
            .arg(home.join("cache"))
            .args(args);
        c
    }

    /// Runs `kubectl ARGS…` (blocking: from an async test, use [`run`](Self::run)).
    pub fn run_blocking(&self, args: &[&str]) -> KubectlOutput {
        let out = self
            .command(args)
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.bin.display()));
        KubectlOutput {
            success: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs `kubectl ARGS…` off the runtime's threads, so that the fake (in the same
    /// runtime) keeps answering it.
    pub async fn run(&self, args: &[&str]) -> KubectlOutput {
        let mut c = self.command(args);
        let bin = self.bin.display().to_string();
        tokio::task::spawn_blocking(move || {
            let out = c.output().unwrap_or_else(|e| panic!("run {bin}: {e}"));
            KubectlOutput {
                success: out.status.success(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        })
        .await
        .expect("kubectl's thread")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube_api::Resource;
    use serde_json::json;

    /// The promise, against the real kubectl: an Event posted for a Service
    /// (as kube-rs's Recorder posts it, events.k8s.io/v1) shows in
    /// `kubectl describe service web`, and in `kubectl get events`.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn kubectl_describe_shows_an_event_posted_to_the_fake() {
        let api = FakeKubeApi::start().await;
        let Some(kubectl) = Kubectl::for_fake(&api) else {
            return;
        };
        let svc = api.apply_object(
            Resource::Service,
            json!({"metadata": {"name": "web", "namespace": "default"},
                   "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}],
                            "selector": {"app": "web"}},
                   "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
        );
        let note = "web.example.com. A 192.0.2.1: published";
        let uid = svc["metadata"]["uid"].clone();
        let event = crate::kube_api::fixtures::recorder_event("dnsplane", note, uid);
        let config = kube::Config::new(api.url().parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let events: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            client,
            "default",
            &kube::api::ApiResource {
                group: "events.k8s.io".into(),
                version: "v1".into(),
                api_version: "events.k8s.io/v1".into(),
                kind: "Event".into(),
                plural: "events".into(),
            },
        );
        events
            .create(&Default::default(), &serde_json::from_value(event).unwrap())
            .await
            .unwrap();

        let out = kubectl.run(&["describe", "service", "web"]).await;
        assert!(out.success, "{out:?}");
        assert!(
            out.stdout
                .lines()
                .any(|l| l.starts_with("LoadBalancer Ingress:") && l.ends_with("192.0.2.1")),
            "{}",
            out.stdout
        );
        let events_section = out.stdout.split("Events:").nth(1).unwrap_or("");
        for want in [
            "Normal",
            "Published",
            "dnsplane",
            "web.example.com. A 192.0.2.1: published",
        ] {
            assert!(events_section.contains(want), "{want} in:\n{}", out.stdout);
        }

        let out = kubectl.run(&["get", "events"]).await;
        assert!(out.success, "{out:?}");
        let header: Vec<&str> = out
            .stdout
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        assert_eq!(
            header,
            ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
            "{}",
            out.stdout
        );
        assert!(out.stdout.contains("service/web"), "{}", out.stdout);

        let out = kubectl.run(&["get", "events", "-o", "json"]).await;
        assert!(out.success, "{out:?}");
        let list: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(list["items"][0]["reason"], "Published");
        let out = kubectl.run(&["get", "services"]).await;
        assert!(out.success && out.stdout.contains("web"), "{out:?}");

        // An Ingress and an HTTPRoute (a CRD's generic describer), each with a Warning
        // posted as client-go's old recorder posts it (core v1, count and timestamps).
        use crate::kube_api::fixtures;
        let ing = api.apply_object(
            Resource::Ingress,
            fixtures::ingress(
                "default",
                "web",
                &[],
                Some("nginx"),
                &["web.example.com"],
                &[],
                &["192.0.2.1"],
            ),
        );
        let route = api.apply_object(
            Resource::HttpRoute,
            fixtures::web_route(&["web.example.com"]),
        );
        for (i, (kind, api_version, uid)) in [
            ("Ingress", "networking.k8s.io/v1", &ing["metadata"]["uid"]),
            (
                "HTTPRoute",
                "gateway.networking.k8s.io/v1",
                &route["metadata"]["uid"],
            ),
        ]
        .into_iter()
        .enumerate()
        {
            api.apply_object(
                Resource::Event,
                json!({"metadata": {"name": format!("web.{i}"), "namespace": "default"},
                       "involvedObject": {"apiVersion": api_version, "kind": kind, "name": "web",
                                          "namespace": "default", "uid": uid},
                       "reason": "Conflict", "type": "Warning", "count": 3,
                       "message": format!("web.example.com. A: owned by another {kind}"),
                       "firstTimestamp": "2026-11-29T03:00:00Z", "lastTimestamp": "2026-11-29T03:00:00Z",
                       "source": {"component": "dnsplane"}}),
            );
        }
        for what in ["ingress", "httproute"] {
            let out = kubectl.run(&["describe", what, "web"]).await;
            assert!(out.success, "{out:?}");
            let events_section = out.stdout.split("Events:").nth(1).unwrap_or("");
            assert!(
                events_section.contains("Warning")
                    && events_section.contains("Conflict")
                    && events_section.contains("owned by another"),
                "{what}:\n{}",
                out.stdout
            );
        }
    }
}
