//! `[[sources]]`: where desired records come from.
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, tag = "type", rename_all = "kebab-case")]
pub enum SourceConfig {
    /// external-dns `DNSEndpoint` manifests in files or directories (polled).
    File {
        /// Files or directories (relative paths are relative to the config file).
        paths: Vec<PathBuf>,
        /// An endpoint whose name falls in no configured zone: `error` (its object
        /// keeps its last accepted version) or `ignore` (left out: one source fed to
        /// several planners of different zones).
        #[serde(default)]
        outside_zones: OutsideZones,
        /// What the files are: `dnsendpoint`, `zone` (RFC 1035 zone files), `octodns`
        /// (octoDNS YAML zone files) or `auto` (the default: `*.zone` a zone file,
        /// `*.yaml`/`*.yml` a DNSEndpoint manifest).
        #[serde(default)]
        format: FileFormat,
        /// The views this source feeds (empty: every view); see `[[zones]] view`.
        #[serde(default)]
        views: Vec<String>,
    },
    /// external-dns `DNSEndpoint` objects read from the Kubernetes API (list, then
    /// watch), each object's result written back to its status.
    Kubernetes(Box<KubernetesSourceConfig>),
    /// IPAM's IP addresses in a NetBox, read whole every `full_read_interval` and
    /// object by object on NetBox's webhooks.
    Netbox(Box<NetboxSourceConfig>),
}

impl SourceConfig {
    /// The views the source feeds (`views`; empty: every view).
    pub fn views(&self) -> &[String] {
        match self {
            SourceConfig::File { views, .. } => views,
            SourceConfig::Kubernetes(k) => &k.views,
            SourceConfig::Netbox(n) => &n.views,
        }
    }
}

/// `[[sources]] type = "kubernetes"`: which DNSEndpoints, and how to reach the API.
/// With neither `kubeconfig` nor `api_server`, the in-cluster service account is used
/// (`KUBERNETES_SERVICE_HOST`/`PORT`, token and CA under
/// `/var/run/secrets/kubernetes.io/serviceaccount`).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct KubernetesSourceConfig {
    /// The cluster's name, needed when several Kubernetes sources read the same
    /// namespaces and kinds (several clusters feeding one planner): each source's
    /// records and state go under their own name, `kubernetes@<name>:…`.
    #[serde(default)]
    pub name: Option<String>,
    /// The views this source feeds (empty: every view); see `[[zones]] view`.
    #[serde(default)]
    pub views: Vec<String>,
    /// Namespaces to read; empty: all (a cluster-wide list and watch).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// Only objects matching this label selector (`app=web,tier!=test`).
    #[serde(default)]
    pub label_selector: Option<String>,
    /// A kubeconfig file (its current context) instead of the in-cluster account.
    #[serde(default)]
    pub kubeconfig: Option<PathBuf>,
    /// The API server's URL (`https://10.0.0.1:6443`, `http://127.0.0.1:8001` for a
    /// `kubectl proxy`), with `token_file` and `ca_file`: an explicit connection.
    #[serde(default)]
    pub api_server: Option<String>,
    /// A bearer token, re-read as it rotates (with `api_server`).
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// The CA bundle (PEM) the API server's certificate is checked against (with
    /// `api_server`).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Least time between two status writes of one object (only changes are written).
    #[serde(with = "humantime_serde", default = "default_status_interval")]
    pub status_interval: Duration,
    /// Write `status` (conditions, observedGeneration) back to the objects; off for a
    /// read-only account.
    #[serde(default = "default_true")]
    pub write_status: bool,
    /// An endpoint whose name falls in no configured zone: `error` (its object keeps
    /// its last accepted version) or `ignore` (left out: one source fed to several
    /// planners of different zones).
    #[serde(default)]
    pub outside_zones: OutsideZones,
    /// What objects to read: `DNSEndpoint` (the default), `Service`, `Ingress`,
    /// `HTTPRoute`, `GRPCRoute`, `TLSRoute`, `TCPRoute`, `UDPRoute`.
    #[serde(default = "default_kinds")]
    pub kinds: Vec<String>,
    /// A Service or Ingress whose load balancer loses its address keeps its last
    /// targets this long before its records go (a controller restart empties
    /// `status.loadBalancer` for a moment).
    #[serde(with = "humantime_serde", default = "default_target_loss_grace")]
    pub target_loss_grace: Duration,
    /// Write Kubernetes Events to the Services, Ingresses and routes that produce
    /// records (Published, Conflict, Invalid, …); off for a read-only account.
    #[serde(default = "default_true")]
    pub write_events: bool,
    /// external-dns's flags of the same meaning, for the translated kinds.
    #[serde(default)]
    pub annotation_filter: Option<String>,
    #[serde(default)]
    pub fqdn_template: Option<String>,
    #[serde(default)]
    pub combine_fqdn_annotation: bool,
    #[serde(default)]
    pub ignore_hostname_annotation: bool,
    #[serde(default)]
    pub publish_internal_services: bool,
    #[serde(default)]
    pub publish_host_ip: bool,
    #[serde(default)]
    pub always_publish_not_ready_addresses: bool,
    #[serde(default)]
    pub service_types: Vec<String>,
    #[serde(default)]
    pub expose_internal_ipv6: bool,
    #[serde(default)]
    pub exclude_unschedulable: bool,
    #[serde(default)]
    pub ingress_classes: Vec<String>,
    #[serde(default)]
    pub ignore_ingress_tls_spec: bool,
    #[serde(default)]
    pub ignore_ingress_rules_spec: bool,
    #[serde(default)]
    pub gateway_name: Option<String>,
    #[serde(default)]
    pub gateway_namespace: Option<String>,
    #[serde(default)]
    pub gateway_label_filter: Option<String>,
}

impl Default for KubernetesSourceConfig {
    /// Every key at its default, as an empty `[[sources]]` table reads.
    fn default() -> KubernetesSourceConfig {
        serde_json::from_value(serde_json::json!({})).expect("every key has a default")
    }
}

fn default_kinds() -> Vec<String> {
    vec!["DNSEndpoint".to_string()]
}
fn default_target_loss_grace() -> Duration {
    Duration::from_secs(300)
}

fn default_status_interval() -> Duration {
    Duration::from_secs(3)
}
fn default_true() -> bool {
    true
}

/// `[[sources]] type = "netbox"`: which NetBox, which addresses, and where its
/// webhooks arrive.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NetboxSourceConfig {
    /// The source's name, needed when several NetBox sources feed one planner: each
    /// source's records and status go under `netbox@<name>`.
    #[serde(default)]
    pub name: Option<String>,
    /// The views this source feeds (empty: every view); see `[[zones]] view`.
    #[serde(default)]
    pub views: Vec<String>,
    /// NetBox's URL (`https://netbox.example.com`).
    pub url: String,
    /// An API token allowed to read IPAM (a v2 `nbt_…` token or a v1 one), re-read as
    /// it rotates.
    pub token_file: PathBuf,
    /// The CA bundle (PEM) NetBox's certificate is checked against.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// Read IPAM's IP addresses: each with a `dns_name` gives an A or AAAA record.
    #[serde(default = "default_true")]
    pub ipam: bool,
    /// Read netbox-plugin-dns's zones and records (`/api/plugins/netbox-dns/`): the
    /// records of the plugin zones that configured zones hold. SOA and apex NS are
    /// never taken: they stay the plugin's and the provider's.
    #[serde(default)]
    pub plugin: bool,
    /// The plugin's views, renamed to the views of `[[zones]] view`: a record in a
    /// plugin view that is not the plugin's default view is fed to the view of that
    /// name (or of the name given here). The default view's records feed `views`.
    #[serde(default)]
    pub plugin_views: std::collections::BTreeMap<String, String>,
    /// Write each record's outcome back to NetBox, into the custom field
    /// `dnsplane_status` of its IP address or plugin record (`converged`,
    /// `conflict: …`, `invalid: …`): the token must be allowed to write them. Only the
    /// leader writes, in bulk, at most 500 objects a second (less when NetBox is slower).
    #[serde(default)]
    pub write_back: bool,
    /// Also a PTR record for each address, in the configured reverse zone that holds
    /// its reverse name (`10.2.0.192.in-addr.arpa.`); none where no zone does.
    #[serde(default)]
    pub ptr: bool,
    /// The statuses of the addresses taken.
    #[serde(default = "default_statuses")]
    pub statuses: Vec<String>,
    /// Only addresses in these VRFs (by name; `global` for none). Empty: every VRF.
    #[serde(default)]
    pub vrfs: Vec<String>,
    /// Only addresses of these tenants (by slug). Empty: every tenant and none.
    #[serde(default)]
    pub tenants: Vec<String>,
    /// Only addresses with at least one of these tags (by slug). Empty: every address.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Where NetBox's webhooks are received (`127.0.0.1:8090`); none: full reads only.
    #[serde(default)]
    pub webhook_listen: Option<std::net::SocketAddr>,
    /// The webhooks' secret: a webhook whose `X-Hook-Signature` is not its HMAC is
    /// refused (401). Needed with `webhook_listen`.
    #[serde(default)]
    pub webhook_secret_file: Option<PathBuf>,
    /// How often everything is read again, whatever webhooks came: a webhook that
    /// never arrives costs this much freshness, never correctness.
    #[serde(with = "humantime_serde", default = "default_full_read_interval")]
    pub full_read_interval: Duration,
    /// How long one request to NetBox may take.
    #[serde(with = "humantime_serde", default = "default_request_timeout")]
    pub request_timeout: Duration,
    /// An address whose name falls in no configured zone: `error` (reported) or
    /// `ignore` (left out: one NetBox fed to several planners of different zones).
    #[serde(default)]
    pub outside_zones: OutsideZones,
}

fn default_statuses() -> Vec<String> {
    vec!["active".to_string()]
}
fn default_full_read_interval() -> Duration {
    Duration::from_secs(600)
}
fn default_request_timeout() -> Duration {
    Duration::from_secs(30)
}

/// `[[sources]] outside_zones`: what a name in no configured zone means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutsideZones {
    /// An error: the object keeps its last accepted version.
    #[default]
    Error,
    /// Left out without an error (a source shared by planners of different zones).
    Ignore,
}

/// `[[sources]] type = "file"`, `format`: what the files are (read as
/// `crate::source::file::format` says).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    #[default]
    Auto,
    Dnsendpoint,
    Zone,
    Octodns,
}
