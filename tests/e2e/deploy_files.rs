//! deploy/ is checked with the best validators that run offline here (no Docker engine,
//! no cluster): every Kubernetes manifest against the API schemas
//! (`kubernetes-validate --strict`), the compose file by the docker compose v2 plugin
//! itself (`config --quiet`), and then by what the services would do with them: every
//! config they mount loads with the services' own loaders, the names and ports that
//! tie the pieces together agree, and the Dockerfiles build the workspace's real
//! packages and binaries (the ones these tests run).
//!
//! The tools come from `tests/run-all.sh` (`DNSPLANE_KUBERNETES_VALIDATE`,
//! `DNSPLANE_DOCKER_COMPOSE`); under `DNSPLANE_REQUIRE_SERVERS=1` a missing one fails.
use dnsplane_e2e::tool;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repository root")
        .to_path_buf()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn k8s_files() -> Vec<PathBuf> {
    let dir = root().join("deploy/k8s");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("deploy/k8s")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {}", dir.display());
    files
}

// --- YAML, as JSON values (scalars stay strings) -------------------------------------

fn to_json(node: &marked_yaml::Node) -> Value {
    match node {
        marked_yaml::Node::Scalar(s) => Value::String(s.as_str().to_string()),
        marked_yaml::Node::Sequence(s) => Value::Array(s.iter().map(to_json).collect()),
        marked_yaml::Node::Mapping(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.as_str().to_string(), to_json(v)))
                .collect(),
        ),
    }
}

/// Every document of a multi-document YAML file.
pub(crate) fn yaml_docs(path: &Path) -> Vec<Value> {
    let text = read(path);
    let mut docs = Vec::new();
    let mut current = String::new();
    for line in text.lines().chain(std::iter::once("---")) {
        if line.trim_end() == "---" {
            if current
                .lines()
                .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            {
                let node = marked_yaml::parse_yaml(0, &current)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                docs.push(to_json(&node));
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    docs
}

pub(crate) fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no string at {pointer} in {v}"))
}

/// The port of `http://host:port` or `host:port`.
fn port_of(addr: &str) -> &str {
    addr.rsplit(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/')
}

fn host_of(url: &str) -> &str {
    let rest = url.split("://").nth(1).unwrap_or(url);
    rest.split([':', '/']).next().unwrap_or_default()
}

// --- the workspace -----------------------------------------------------------------

/// Package name → its binary targets, from the Cargo.toml files themselves.
fn workspace_bins() -> BTreeMap<String, BTreeSet<String>> {
    let root_manifest: toml::Table = read(&root().join("Cargo.toml"))
        .parse()
        .expect("root Cargo.toml");
    let members = root_manifest["workspace"]["members"]
        .as_array()
        .expect("workspace.members");
    let mut out = BTreeMap::new();
    for m in members {
        let dir = root().join(m.as_str().expect("member"));
        let manifest: toml::Table = read(&dir.join("Cargo.toml"))
            .parse()
            .expect("member Cargo.toml");
        let package = manifest["package"]["name"]
            .as_str()
            .expect("package.name")
            .to_string();
        let mut bins = BTreeSet::new();
        let autobins = manifest["package"]
            .get("autobins")
            .and_then(toml::Value::as_bool)
            .unwrap_or(true);
        if autobins && dir.join("src/main.rs").exists() {
            bins.insert(package.clone());
        }
        for b in manifest
            .get("bin")
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
        {
            bins.insert(b["name"].as_str().expect("bin name").to_string());
        }
        out.insert(package, bins);
    }
    out
}

/// What a Dockerfile builds: (package, binary, the full cargo command).
fn dockerfile_build(path: &Path) -> (String, String, String) {
    let text = read(path).replace("\\\n", " ");
    let run = text
        .lines()
        .find(|l| l.trim_start().starts_with("RUN") && l.contains("cargo build"))
        .unwrap_or_else(|| panic!("{}: no RUN ... cargo build", path.display()));
    let cmd = &run[run.find("cargo build").expect("cargo build")..];
    let cmd = cmd.split("&&").next().expect("command").trim().to_string();
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let arg = |names: &[&str]| {
        words
            .windows(2)
            .find(|w| names.contains(&w[0]))
            .map(|w| w[1].to_string())
            .unwrap_or_else(|| panic!("{}: `{cmd}` has no {names:?}", path.display()))
    };
    (arg(&["-p", "--package"]), arg(&["--bin"]), cmd)
}

#[test]
fn dockerfiles_build_the_binaries_the_tests_run() {
    let bins = workspace_bins();
    let mut built = BTreeSet::new();
    for name in ["Dockerfile.planner", "Dockerfile.applier"] {
        let path = root().join("deploy").join(name);
        let (package, bin, cmd) = dockerfile_build(&path);
        let words: Vec<&str> = cmd.split_whitespace().collect();
        assert!(
            words.contains(&"--release") && words.contains(&"--locked"),
            "{name}: {cmd}"
        );
        let package_bins = bins.get(&package).unwrap_or_else(|| {
            panic!(
                "{name} builds package {package}, not in the workspace {:?}",
                bins.keys()
            )
        });
        assert!(
            package_bins.contains(&bin),
            "{name} builds --bin {bin}; {package} has {package_bins:?}"
        );
        // The very binaries the cross-service tests start (`cargo build --workspace --bins`).
        assert!(dnsplane_e2e::binary(&bin).is_file());

        let text = read(&path);
        let runtime = text.rsplit("\nFROM ").next().expect("a runtime stage");
        let user = runtime
            .lines()
            .find_map(|l| l.strip_prefix("USER "))
            .unwrap_or_else(|| panic!("{name}: the runtime stage sets no USER"));
        let uid = user.split(':').next().unwrap_or_default().trim();
        assert!(!matches!(uid, "root" | "0" | ""), "{name}: runs as {user}");
        assert!(
            runtime.contains(&format!("/out/{bin} ")),
            "{name}: the runtime stage copies {bin}"
        );
        assert!(
            runtime.contains(&format!("ENTRYPOINT [\"/usr/local/bin/{bin}\"]")),
            "{name}: the entrypoint runs {bin}"
        );
        // The build context is the repository root, cut down by the Dockerfile's own
        // .dockerignore: it must keep every workspace member and the proto files.
        let ignore = read(&root().join("deploy").join(format!("{name}.dockerignore")));
        for needed in [
            "Cargo.toml",
            "Cargo.lock",
            "proto/",
            "common/",
            "planner/",
            "applier/",
            "tests/",
        ] {
            assert!(
                ignore.lines().any(|l| l.trim() == format!("!{needed}")),
                "{name}.dockerignore drops {needed}"
            );
        }
        built.insert(bin);
    }
    let services: BTreeSet<String> = ["dnsplane-planner", "dnsplane-applier"]
        .map(String::from)
        .into();
    assert_eq!(built, services, "one image per service");
}

// --- Kubernetes ----------------------------------------------------------------------

#[test]
fn kubernetes_manifests_pass_strict_schema_validation() {
    let Some(validate) = tool("DNSPLANE_KUBERNETES_VALIDATE", "kubernetes-validate") else {
        return;
    };
    let files = k8s_files();
    let documents: usize = files.iter().map(|f| yaml_docs(f).len()).sum();
    // The newest schemas the tool has, and the oldest release with GA gRPC probes.
    for version in [None, Some("1.27")] {
        let mut cmd = Command::new(&validate);
        cmd.arg("--strict");
        if let Some(v) = version {
            cmd.args(["-k", v]);
        }
        let out = cmd.args(&files).output().expect("run kubernetes-validate");
        let text = crate::stack::combined(&out);
        assert!(
            out.status.success(),
            "kubernetes-validate {version:?} failed:\n{text}"
        );
        assert_eq!(
            text.matches(" passed ").count(),
            documents,
            "every document validated:\n{text}"
        );
    }
    // The validator does reject: a misspelt field under --strict.
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        read(&root().join("deploy/k8s/30-planner.yaml")).replacen("replicas: 1", "replica: 1", 1),
    )
    .expect("write");
    let out = Command::new(&validate)
        .arg("--strict")
        .arg(&bad)
        .output()
        .expect("run");
    assert!(!out.status.success(), "a bogus field must fail --strict");
}

/// Every node of `v` without its `description`: a schema's structure.
fn bare(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), bare(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(bare).collect()),
        other => other.clone(),
    }
}

/// deploy/k8s ships the DNSEndpoint CRD, applied first, that the planner's status
/// needs: a cluster's API server prunes what a CRD does not declare, and external-dns's
/// declares no `conditions`. It must replace external-dns's without breaking it: the
/// same names, scope and version, and external-dns's spec schema field for field and
/// type for type, with no constraint added (every object external-dns's CRD takes, it
/// takes); its status keeps external-dns's `observedGeneration`. And it is structural
/// as the API server requires (kubernetes-validate does not look into the schema).
#[test]
fn the_dnsendpoint_crd_is_external_dns_spec_with_dnsplanes_status() {
    use dnsplane_testing::crd::{Crd, EXTERNAL_DNS_CRD, yaml_to_json};
    let files = k8s_files();
    let crds: Vec<&PathBuf> = files
        .iter()
        .filter(|f| {
            yaml_docs(f)
                .iter()
                .any(|d| d["kind"] == "CustomResourceDefinition")
        })
        .collect();
    assert_eq!(crds.len(), 1, "one CRD file in deploy/k8s: {crds:?}");
    let before: Vec<&PathBuf> = files.iter().take_while(|f| *f != crds[0]).collect();
    assert!(
        before
            .iter()
            .all(|f| yaml_docs(f).iter().all(|d| d["kind"] == "Namespace")),
        "the CRD is applied before the rest (only the namespace before it): {before:?}"
    );
    let text = read(crds[0]);
    assert_eq!(
        text,
        dnsplane_testing::crd::DNSPLANE_CRD,
        "the tests' CRD is this file"
    );
    let ours = Crd::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", crds[0].display()));
    let theirs = Crd::parse(EXTERNAL_DNS_CRD).expect("the fixture");
    let (ours_doc, theirs_doc) = (
        yaml_to_json(&text).expect("yaml"),
        yaml_to_json(EXTERNAL_DNS_CRD).expect("yaml"),
    );
    for pointer in [
        "/metadata/name",
        "/spec/group",
        "/spec/names",
        "/spec/scope",
    ] {
        assert_eq!(
            ours_doc.pointer(pointer),
            theirs_doc.pointer(pointer),
            "{pointer}"
        );
    }
    assert_eq!(
        ours_doc.pointer("/metadata/annotations/api-approved.kubernetes.io"),
        theirs_doc.pointer("/metadata/annotations/api-approved.kubernetes.io"),
        "a group under k8s.io needs the approval annotation"
    );
    assert_eq!(ours.version, theirs.version);
    assert!(ours.status_subresource, "the status subresource");
    for pointer in [
        "/type",
        "/properties/apiVersion",
        "/properties/kind",
        "/properties/metadata",
        "/properties/spec",
        "/properties/status/type",
        "/properties/status/properties/observedGeneration",
    ] {
        assert_eq!(
            ours.schema.pointer(pointer).map(bare),
            theirs.schema.pointer(pointer).map(bare),
            "{pointer} differs from external-dns's"
        );
    }
    let conditions = &ours.schema["properties"]["status"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-list-map-keys"][0], "type");
    for field in [
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    ] {
        assert!(
            conditions["items"]["properties"].get(field).is_some(),
            "conditions[].{field}"
        );
    }
}

/// Every resource, by kind and name.
fn k8s_resources() -> BTreeMap<(String, String), Value> {
    let mut out = BTreeMap::new();
    for f in k8s_files() {
        for doc in yaml_docs(&f) {
            let key = (
                str_of(&doc, "/kind").to_string(),
                str_of(&doc, "/metadata/name").to_string(),
            );
            assert!(
                out.insert(key.clone(), doc).is_none(),
                "{key:?} defined twice"
            );
        }
    }
    out
}

fn env_of<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
}

fn mount_path<'a>(pod: &'a Value, container: &'a Value, source: &str, name: &str) -> &'a str {
    let volume = pod["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v[source]["name"] == name || v[source]["secretName"] == name)
        .unwrap_or_else(|| panic!("no {source} volume {name}"));
    container["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["name"] == volume["name"])
        .map(|m| str_of(m, "/mountPath"))
        .unwrap_or_else(|| panic!("volume {} is not mounted", volume["name"]))
}

#[test]
fn kubernetes_manifests_fit_together_and_their_configs_load() {
    let r = k8s_resources();
    let get = |kind: &str, name: &str| {
        r.get(&(kind.to_string(), name.to_string()))
            .unwrap_or_else(|| panic!("no {kind} {name} in deploy/k8s; have {:?}", r.keys()))
    };
    let cm_data =
        |name: &str, key: &str| str_of(get("ConfigMap", name), &format!("/data/{key}")).to_string();
    let dir = tempfile::tempdir().expect("tempdir");

    for (service, binary) in [
        ("dnsplane-planner", "planner"),
        ("dnsplane-applier", "applier"),
    ] {
        let deployment = get("Deployment", service);
        let pod = &deployment["spec"]["template"]["spec"];
        let labels = &deployment["spec"]["template"]["metadata"]["labels"];
        assert_eq!(
            deployment["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
            service
        );
        assert_eq!(labels["app.kubernetes.io/name"], service);
        assert_eq!(pod["securityContext"]["runAsNonRoot"], "true", "{service}");
        let c = &pod["containers"][0];
        assert!(
            str_of(c, "/image").ends_with(&format!("/{service}:0.1.0")),
            "{service} image"
        );
        assert_eq!(
            c["securityContext"]["readOnlyRootFilesystem"], "true",
            "{service}"
        );
        assert_eq!(
            c["securityContext"]["allowPrivilegeEscalation"], "false",
            "{service}"
        );
        for k in ["requests", "limits"] {
            for res in ["cpu", "memory"] {
                assert!(
                    c["resources"][k][res].is_string(),
                    "{service}: resources.{k}.{res}"
                );
            }
        }
        // The gRPC port is the one the Service and the listen address name.
        let listen =
            env_of(c, &format!("DNSPLANE_{}_LISTEN", binary.to_uppercase())).expect("listen env");
        let grpc_port = c["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .find(|p| p["name"] == "grpc")
            .expect("grpc port");
        assert_eq!(
            str_of(grpc_port, "/containerPort"),
            port_of(listen),
            "{service}"
        );
        // Probes over HTTPS on the admin port (its TLS is the service's [tls]; gRPC
        // probes cannot speak TLS): ready while serving, alive while answering.
        for (probe, path) in [
            ("startupProbe", "/readyz"),
            ("readinessProbe", "/readyz"),
            ("livenessProbe", "/healthz"),
        ] {
            let get = &c[probe]["httpGet"];
            assert_eq!(get["port"], "admin", "{service} {probe}");
            assert_eq!(get["scheme"], "HTTPS", "{service} {probe}");
            assert_eq!(get["path"], path, "{service} {probe}");
        }
        let admin = env_of(
            c,
            &format!("DNSPLANE_{}_ADMIN_LISTEN", binary.to_uppercase()),
        )
        .expect("admin env");
        assert_eq!(
            deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
            port_of(admin),
            "{service}: scrape annotation"
        );
        // The Service selects these pods and points at the named ports.
        let svc = get("Service", service);
        assert_eq!(svc["spec"]["selector"]["app.kubernetes.io/name"], service);
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], "grpc");
        // Config and telemetry come from ConfigMaps defined here.
        let config_dir = mount_path(pod, c, "configMap", &format!("{service}-config"));
        assert_eq!(
            env_of(c, &format!("DNSPLANE_{}_CONFIG", binary.to_uppercase())),
            Some(format!("{config_dir}/{binary}.toml").as_str())
        );
        assert_eq!(c["envFrom"][0]["configMapRef"]["name"], "dnsplane-otel");
        get("ConfigMap", "dnsplane-otel");
    }

    // The applier scales: headless Service, HPA and PDB on its Deployment.
    assert_eq!(
        get("Service", "dnsplane-applier")["spec"]["clusterIP"],
        "None"
    );
    let hpa = get("HorizontalPodAutoscaler", "dnsplane-applier");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "Deployment");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["name"], "dnsplane-applier");
    let pdb = get("PodDisruptionBudget", "dnsplane-applier");
    assert_eq!(
        pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
        "dnsplane-applier"
    );

    // The configs load with the services' own loaders...
    let planner_toml = dir.path().join("planner.toml");
    std::fs::write(
        &planner_toml,
        cm_data("dnsplane-planner-config", "planner.toml"),
    )
    .expect("write");
    let planner = dnsplane_planner::config::PlannerConfig::load(&planner_toml)
        .unwrap_or_else(|e| panic!("{e}"));
    let applier_toml = dir.path().join("applier.toml");
    std::fs::write(
        &applier_toml,
        cm_data("dnsplane-applier-config", "applier.toml"),
    )
    .expect("write");
    let applier = dnsplane_applier::load_config(&applier_toml).unwrap_or_else(|e| panic!("{e}"));
    // ...and agree with the manifests: the planner reads the desired state where it is
    // mounted, reaches the applier's Service, and the key file is the mounted Secret.
    let planner_pod = &get("Deployment", "dnsplane-planner")["spec"]["template"]["spec"];
    let desired_dir = mount_path(
        planner_pod,
        &planner_pod["containers"][0],
        "configMap",
        "dnsplane-desired",
    );
    let paths = file_source(&planner);
    assert_eq!(paths, &[PathBuf::from(desired_dir)]);
    // A Kubernetes source reads DNSEndpoints with the pod's service account: it must
    // be mounted, and bound to a role that can list, watch and write their status.
    if planner
        .sources
        .iter()
        .any(|s| matches!(s, dnsplane_planner::config::SourceConfig::Kubernetes(_)))
    {
        check_dnsendpoint_rbac(&r, planner_pod);
    }
    // The root filesystem is read-only: without a Redis lease, the lease's lock file
    // needs state_dir on a writable volume.
    if planner.lease.redis.is_none() {
        let container = &planner_pod["containers"][0];
        let writable = planner_pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .filter(|v| v.get("emptyDir").is_some() || v.get("persistentVolumeClaim").is_some())
            .any(|v| {
                container["volumeMounts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|m| {
                        m["name"] == v["name"]
                            && m["readOnly"] != true
                            && Path::new(str_of(m, "/mountPath")) == planner.state_dir
                    })
            });
        assert!(
            writable,
            "the planner's state_dir {} is not a writable volume",
            planner.state_dir.display()
        );
    }
    // The planner finds every applier pod through the headless Service (not one
    // address, which would leave the pods the autoscaler adds idle).
    let applier_dns = planner
        .applier_dns
        .as_deref()
        .expect("the planner finds the appliers by applier_dns");
    assert_eq!(
        host_of(applier_dns),
        "dnsplane-applier.dnsplane.svc.cluster.local"
    );
    assert_eq!(
        port_of(applier_dns),
        str_of(get("Service", "dnsplane-applier"), "/spec/ports/0/port")
    );
    assert!(
        planner.appliers.is_empty(),
        "applier_dns and a fixed list of appliers"
    );
    let applier_pod = &get("Deployment", "dnsplane-applier")["spec"]["template"]["spec"];
    let secret_dir = mount_path(
        applier_pod,
        &applier_pod["containers"][0],
        "secret",
        "dnsplane-provider-credentials",
    );
    check_accounts(&planner, &applier, |key_file| {
        assert!(
            key_file.starts_with(secret_dir),
            "{} is not in the mounted Secret",
            key_file.display()
        );
        let item = key_file
            .file_name()
            .expect("file")
            .to_string_lossy()
            .to_string();
        let items = applier_pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .flat_map(|v| {
                v["secret"]["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|i| i["path"].as_str().unwrap_or_default())
            });
        assert!(
            items.clone().any(|p| p == item),
            "Secret item {item} not projected"
        );
    });

    // The desired state is deploy/examples/desired, file for file, and loads cleanly.
    let desired = get("ConfigMap", "dnsplane-desired")["data"]
        .as_object()
        .expect("data")
        .clone();
    let examples = root().join("deploy/examples/desired");
    let mut example_names: Vec<String> = std::fs::read_dir(&examples)
        .expect("examples")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    example_names.sort();
    assert_eq!(desired.keys().cloned().collect::<Vec<_>>(), example_names);
    let desired_copy = dir.path().join("desired");
    std::fs::create_dir(&desired_copy).expect("mkdir");
    for (name, text) in &desired {
        let text = text.as_str().expect("text");
        assert_eq!(
            text,
            read(&examples.join(name)),
            "{name} differs from deploy/examples/desired"
        );
        std::fs::write(desired_copy.join(name), text).expect("write");
    }
    assert_desired_loads(&desired_copy);
}

/// Every zone the planner manages is hosted by an applier account of that name;
/// `key_file` sees each account's API key file.
fn check_accounts(
    planner: &dnsplane_planner::config::PlannerConfig,
    applier: &dnsplane_applier::ApplierConfig,
    mut key_file: impl FnMut(&Path),
) {
    use dnsplane_applier::config::DriverConfig;
    for zone in &planner.zones {
        let account = applier
            .accounts
            .iter()
            .find(|a| a.name == zone.account)
            .unwrap_or_else(|| {
                panic!(
                    "zone {} names account {}, which the applier lacks",
                    zone.name, zone.account
                )
            });
        assert!(
            account.zones.contains(&zone.name),
            "account {} does not host {}",
            zone.account,
            zone.name
        );
        if let DriverConfig::Pdns(p) = &account.driver {
            key_file(
                p.api_key_file
                    .as_deref()
                    .expect("the key comes from a file (a mounted secret)"),
            );
        }
    }
}

fn assert_desired_loads(dir: &Path) {
    let snapshot = dnsplane_planner::source::FileSource::new([dir.to_path_buf()])
        .load()
        .unwrap();
    assert!(snapshot.errors.is_empty(), "{:?}", snapshot.errors);
    assert!(
        snapshot.entries.len() >= 5,
        "{} entries",
        snapshot.entries.len()
    );
}

// --- docker compose ------------------------------------------------------------------

/// `docker compose` through the plugin: the docker client with DOCKER_CONFIG pointing
/// at the plugin's directory when there is a client, else the plugin on its own.
fn compose(plugin: &Path) -> Command {
    let docker = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("docker"))
            .find(|p| p.is_file())
    });
    match docker {
        Some(docker) => {
            let config = plugin
                .parent()
                .and_then(Path::parent)
                .expect("$DOCKER_CONFIG/cli-plugins/docker-compose");
            let mut c = Command::new(docker);
            c.env("DOCKER_CONFIG", config).arg("compose");
            c
        }
        None => Command::new(plugin),
    }
}

fn service_env<'a>(svc: &'a Value, name: &str) -> &'a str {
    str_of(svc, &format!("/environment/{name}"))
}

/// The host path bind-mounted at `target` in `svc`.
fn bind_source(svc: &Value, target: &str) -> PathBuf {
    svc["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["type"] == "bind" && v["target"] == target)
        .map(|v| PathBuf::from(str_of(v, "/source")))
        .unwrap_or_else(|| panic!("nothing is mounted at {target}"))
}

/// The resolved model of `file`, as compose itself sees it (`config --format json`).
fn compose_model(plugin: &Path, file: &Path) -> Value {
    let out = compose(plugin)
        .arg("-f")
        .arg(file)
        .args(["config", "--format", "json"])
        .output()
        .expect("run compose");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("compose JSON")
}

#[test]
fn compose_file_is_valid_and_its_configs_load() {
    let Some(plugin) = tool("DNSPLANE_DOCKER_COMPOSE", "docker-compose") else {
        return;
    };
    let file = root().join("deploy/compose.yaml");
    let out = compose(&plugin)
        .arg("-f")
        .arg(&file)
        .args(["config", "--quiet"])
        .output()
        .expect("run compose");
    assert!(
        out.status.success(),
        "compose config: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The validator does reject: an unknown key.
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("compose.yaml");
    std::fs::write(
        &bad,
        read(&file).replacen(
            "    read_only: true\n",
            "    read_only: true\n    bogus_key: 1\n",
            1,
        ),
    )
    .expect("write");
    let out = compose(&plugin)
        .arg("-f")
        .arg(&bad)
        .args(["config", "--quiet"])
        .output()
        .expect("run compose");
    assert!(!out.status.success(), "an unknown key must fail");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bogus_key"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The resolved model, as compose itself sees it.
    let model = compose_model(&plugin, &file);
    let svc = |name: &str| {
        model["services"]
            .get(name)
            .unwrap_or_else(|| panic!("no service {name} in {}", file.display()))
    };
    let (planner_svc, applier_svc) = (svc("planner"), svc("applier"));
    svc("redis");
    assert!(str_of(svc("pdns"), "/image").starts_with("powerdns/pdns-auth"));
    let jaeger = svc("jaeger");
    assert!(str_of(jaeger, "/image").starts_with("jaegertracing/all-in-one"));
    assert_eq!(service_env(jaeger, "COLLECTOR_OTLP_ENABLED"), "true");
    assert!(
        jaeger["ports"]
            .as_array()
            .expect("ports")
            .iter()
            .any(|p| p["target"] == 16686),
        "Jaeger UI published"
    );
    assert_eq!(applier_svc["deploy"]["replicas"], 3, "three appliers");
    for (s, name, dockerfile) in [
        (planner_svc, "dnsplane-planner", "deploy/Dockerfile.planner"),
        (applier_svc, "dnsplane-applier", "deploy/Dockerfile.applier"),
    ] {
        assert_eq!(
            service_env(s, "OTEL_EXPORTER_OTLP_ENDPOINT"),
            "http://jaeger:4317"
        );
        assert_eq!(service_env(s, "OTEL_SERVICE_NAME"), name);
        assert_eq!(s["read_only"], true, "{name}: read-only root filesystem");
        assert_eq!(s["build"]["dockerfile"], dockerfile);
        assert_eq!(Path::new(str_of(s, "/build/context")), root());
    }

    // The mounted configs load, and agree with the services around them.
    let planner = dnsplane_planner::config::PlannerConfig::load(&bind_source(
        planner_svc,
        service_env(planner_svc, "DNSPLANE_PLANNER_CONFIG"),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let applier = dnsplane_applier::load_config(&bind_source(
        applier_svc,
        service_env(applier_svc, "DNSPLANE_APPLIER_CONFIG"),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let paths = file_source(&planner);
    assert_desired_loads(&bind_source(planner_svc, paths[0].to_str().expect("utf8")));
    assert_eq!(host_of(&planner.applier), "applier");
    assert_eq!(
        port_of(&planner.applier),
        port_of(service_env(applier_svc, "DNSPLANE_APPLIER_LISTEN"))
    );
    // Read-only root filesystem: the planner lease lives in the compose Redis.
    let lease = planner.lease.redis.as_deref().expect("[lease] redis");
    svc(host_of(lease));
    assert!(
        planner_svc["depends_on"].get("redis").is_some(),
        "the planner starts after Redis"
    );
    check_accounts(&planner, &applier, |key_file| {
        let secret = key_file
            .strip_prefix("/run/secrets")
            .expect("a compose secret")
            .to_string_lossy()
            .to_string();
        let mounted = applier_svc["secrets"]
            .as_array()
            .expect("secrets")
            .iter()
            .any(|s| s["source"] == secret);
        assert!(mounted, "the applier does not mount secret {secret}");
        let secret_file = PathBuf::from(str_of(&model, &format!("/secrets/{secret}/file")));
        assert!(
            !read(&secret_file).trim().is_empty(),
            "{} is empty",
            secret_file.display()
        );
    });
    for account in &applier.accounts {
        if let dnsplane_applier::config::DriverConfig::Pdns(p) = &account.driver {
            svc(host_of(&p.api_url));
        }
    }
}

/// The paths of the planner's file source.
fn file_source(planner: &dnsplane_planner::config::PlannerConfig) -> &[PathBuf] {
    planner
        .sources
        .iter()
        .find_map(|s| match s {
            dnsplane_planner::config::SourceConfig::File { paths, .. } => Some(paths.as_slice()),
            _ => None,
        })
        .expect("the planner config has a file source")
}

/// The planner pod's service account is mounted and bound (cluster-wide) to a
/// ClusterRole with get/list/watch on dnsendpoints and patch on dnsendpoints/status.
fn check_dnsendpoint_rbac(r: &BTreeMap<(String, String), Value>, pod: &Value) {
    assert_ne!(
        pod["automountServiceAccountToken"],
        Value::Bool(false),
        "the kubernetes source needs the service account's token"
    );
    let account = str_of(pod, "/serviceAccountName");
    assert!(
        r.contains_key(&("ServiceAccount".to_string(), account.to_string())),
        "no ServiceAccount {account}"
    );
    let binding = r
        .iter()
        .filter(|((kind, _), _)| kind == "ClusterRoleBinding")
        .map(|(_, b)| b)
        .find(|b| {
            b["subjects"].as_array().is_some_and(|subjects| {
                subjects
                    .iter()
                    .any(|s| s["kind"] == "ServiceAccount" && s["name"] == account)
            })
        })
        .unwrap_or_else(|| panic!("no ClusterRoleBinding for {account}"));
    let role = &r[&(
        "ClusterRole".to_string(),
        str_of(binding, "/roleRef/name").to_string(),
    )];
    let allows = |resource: &str, verb: &str| {
        role["rules"].as_array().is_some_and(|rules| {
            rules.iter().any(|rule| {
                let has = |key: &str, want: &str| {
                    rule[key]
                        .as_array()
                        .is_some_and(|v| v.iter().any(|x| x == want))
                };
                has("apiGroups", "externaldns.k8s.io")
                    && has("resources", resource)
                    && has("verbs", verb)
            })
        })
    };
    for verb in ["get", "list", "watch"] {
        assert!(allows("dnsendpoints", verb), "{verb} dnsendpoints");
    }
    assert!(
        allows("dnsendpoints/status", "patch"),
        "patch dnsendpoints/status"
    );
}

/// The NetworkPolicies say what docs/security.md says: nothing enters the namespace
/// unless let in; the appliers' gRPC port only from the planner's pods; the metrics
/// ports only from the monitoring namespace; and every selector and port they name is
/// one the Deployments really have (a policy that selects nothing protects nothing).
#[test]
fn network_policies_let_only_the_planner_reach_the_appliers() {
    let r = k8s_resources();
    let policy = |name: &str| {
        r.get(&("NetworkPolicy".to_string(), name.to_string()))
            .unwrap_or_else(|| panic!("NetworkPolicy {name}"))
    };
    let deny = policy("dnsplane-default-deny");
    assert_eq!(
        deny.pointer("/spec/podSelector"),
        Some(&serde_json::json!({}))
    );
    assert!(deny.pointer("/spec/ingress").is_none(), "no rule: deny all");
    let labels = |deploy: &str| {
        r.get(&("Deployment".to_string(), deploy.to_string()))
            .unwrap_or_else(|| panic!("Deployment {deploy}"))
            .pointer("/spec/template/metadata/labels")
            .cloned()
            .expect("pod labels")
    };
    let ports = |deploy: &str| -> BTreeSet<String> {
        let d = &r[&("Deployment".to_string(), deploy.to_string())];
        d.pointer("/spec/template/spec/containers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
            .map(|p| str_of(&p, "/containerPort").to_string())
            .collect()
    };
    for (name, deploy, grpc, metrics) in [
        ("dnsplane-applier", "dnsplane-applier", "50052", "9452"),
        ("dnsplane-planner", "dnsplane-planner", "50051", "9451"),
    ] {
        let p = policy(name);
        let selected = p
            .pointer("/spec/podSelector/matchLabels")
            .expect("selector");
        let pod = labels(deploy);
        for (k, v) in selected.as_object().expect("labels") {
            assert_eq!(pod.get(k), Some(v), "{name} selects {deploy}'s pods");
        }
        let rules = p
            .pointer("/spec/ingress")
            .and_then(Value::as_array)
            .expect("rules");
        let mut opened = BTreeSet::new();
        for rule in rules {
            for port in rule["ports"].as_array().expect("ports") {
                let port = str_of(port, "/port").to_string();
                assert!(
                    ports(deploy).contains(&port),
                    "{name}: {port} is a port of {deploy}"
                );
                opened.insert(port.clone());
                let from = rule["from"].as_array().expect("from");
                if port == metrics {
                    assert_eq!(
                        from[0]
                            .pointer("/namespaceSelector/matchLabels/kubernetes.io~1metadata.name"),
                        Some(&Value::String("monitoring".into())),
                        "{name}: metrics only from monitoring"
                    );
                }
                if name == "dnsplane-applier" && port == grpc {
                    assert_eq!(from.len(), 1, "one peer");
                    assert_eq!(
                        from[0].pointer("/podSelector/matchLabels"),
                        Some(&serde_json::json!({"app.kubernetes.io/name": "dnsplane-planner"})),
                        "only the planner reaches the appliers"
                    );
                    assert!(
                        from[0].get("namespaceSelector").is_none(),
                        "same namespace only"
                    );
                }
            }
        }
        assert_eq!(
            opened,
            BTreeSet::from([grpc.to_string(), metrics.to_string()])
        );
    }
}

/// TLS and tokens in the Kubernetes deploy fit together: every file `[tls]`,
/// `[applier_tls]` and `[auth]` name lies in a Secret the pod mounts; the cert-manager
/// example issues exactly those Secrets, for the names the planner dials and the
/// appliers allow; the planner dials the appliers over `https://`.
#[test]
fn kubernetes_tls_and_tokens_come_from_the_mounted_secrets() {
    let r = k8s_resources();
    let dir = tempfile::tempdir().expect("tempdir");
    let load = |cm: &str, key: &str| {
        let path = dir.path().join(key);
        let data = &r[&("ConfigMap".to_string(), cm.to_string())];
        std::fs::write(&path, str_of(data, &format!("/data/{key}"))).expect("write");
        path
    };
    let planner = dnsplane_planner::config::PlannerConfig::load(&load(
        "dnsplane-planner-config",
        "planner.toml",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let applier = dnsplane_applier::load_config(&load("dnsplane-applier-config", "applier.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    /// The Secret mounted at the directory holding `file`, in `deploy`'s pod.
    fn secret_of(r: &BTreeMap<(String, String), Value>, deploy: &str, file: &Path) -> String {
        let pod = &r[&("Deployment".to_string(), deploy.to_string())]["spec"]["template"]["spec"];
        let dir = file.parent().expect("dir");
        let mount = pod["containers"][0]["volumeMounts"]
            .as_array()
            .expect("mounts")
            .iter()
            .find(|m| Path::new(str_of(m, "/mountPath")) == dir)
            .unwrap_or_else(|| panic!("{deploy}: nothing mounted at {}", dir.display()));
        let volume = pod["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find(|v| v["name"] == mount["name"])
            .expect("volume");
        str_of(volume, "/secret/secretName").to_string()
    }
    let tls = planner.tls.as_ref().expect("planner [tls]");
    let atls = planner.applier_tls.as_ref().expect("planner [applier_tls]");
    let auth = planner.auth.as_ref().expect("planner [auth]");
    // Every applier found through applier_dns is dialled over TLS ([applier_tls]).
    assert!(
        planner.applier_dns.is_some(),
        "the planner finds the appliers by DNS"
    );
    let mut issued = BTreeSet::new();
    for f in [&tls.cert, &tls.key] {
        issued.insert(secret_of(&r, "dnsplane-planner", f));
    }
    for f in [&atls.ca]
        .into_iter()
        .chain(atls.cert.iter())
        .chain(atls.key.iter())
    {
        issued.insert(secret_of(&r, "dnsplane-planner", f));
    }
    let tokens = secret_of(&r, "dnsplane-planner", &auth.tokens_file);
    let a = applier.tls.as_ref().expect("applier [tls]");
    for f in [&a.cert, &a.key].into_iter().chain(a.client_ca.iter()) {
        issued.insert(secret_of(&r, "dnsplane-applier", f));
    }
    assert_eq!(tokens, "dnsplane-planner-tokens");
    // The cert-manager example issues each of them, for the right names.
    let certs: BTreeMap<String, Value> =
        yaml_docs(&root().join("deploy/k8s/cert-manager/certificates.yaml"))
            .into_iter()
            .filter(|d| d["kind"] == "Certificate")
            .map(|d| (str_of(&d, "/spec/secretName").to_string(), d))
            .collect();
    for secret in &issued {
        assert!(
            certs.contains_key(secret),
            "{secret} is not issued by the example"
        );
    }
    let names = |secret: &str| -> Vec<String> {
        certs[secret]["spec"]["dnsNames"]
            .as_array()
            .expect("dnsNames")
            .iter()
            .map(|n| n.as_str().expect("name").to_string())
            .collect()
    };
    let applier_dns = planner.applier_dns.as_deref().expect("applier_dns");
    assert!(names("dnsplane-applier-tls").contains(&host_of(applier_dns).to_string()));
    assert_eq!(names("dnsplane-planner-client-tls"), a.allowed_names);
    // One CA for all: every leaf is signed by the same issuer.
    let issuers: BTreeSet<&str> = issued
        .iter()
        .map(|s| str_of(&certs[s], "/spec/issuerRef/name"))
        .collect();
    assert_eq!(issuers.len(), 1, "{issuers:?}");
}

/// The compose demo's TLS: the one-shot `certs` service makes, with the real
/// `dnsplane certs` and the very arguments compose gives it, files that the planner's
/// and the applier's configs name where the `tls` volume is mounted; each loads as the
/// services load it; the server certificate names the applier as the planner dials it
/// and the client certificate is the one the applier allows; both services wait for
/// `certs` to complete.
#[test]
fn compose_tls_comes_from_the_certs_service() {
    let Some(plugin) = tool("DNSPLANE_DOCKER_COMPOSE", "docker-compose") else {
        return;
    };
    let Some(openssl) = tool("DNSPLANE_OPENSSL", "openssl") else {
        return;
    };
    let file = root().join("deploy/compose.yaml");
    let model = compose_model(&plugin, &file);
    let certs = &model["services"]["certs"];
    let entry: Vec<String> = certs["entrypoint"]
        .as_array()
        .expect("entrypoint")
        .iter()
        .map(|v| v.as_str().expect("word").to_string())
        .collect();
    assert_eq!(
        entry[..2],
        ["/usr/local/bin/dnsplane", "certs"],
        "{entry:?}"
    );
    let target = entry[2].clone();
    let volume_at = |svc: &Value| {
        svc["volumes"]
            .as_array()
            .expect("volumes")
            .iter()
            .find(|v| v["type"] == "volume" && v["target"] == target.as_str())
            .map(|v| str_of(v, "/source").to_string())
    };
    let tls_volume = volume_at(certs).expect("certs writes into a volume");
    for name in ["planner", "applier"] {
        let svc = &model["services"][name];
        assert_eq!(
            volume_at(svc).as_deref(),
            Some(tls_volume.as_str()),
            "{name} mounts it"
        );
        assert_eq!(
            svc["depends_on"]["certs"]["condition"], "service_completed_successfully",
            "{name} waits for certs"
        );
    }
    // Run it as compose would, into a directory standing for the volume.
    let dir = tempfile::tempdir().expect("tempdir");
    let vol = dir.path().join("tls");
    let status = Command::new(dnsplane_e2e::binary("dnsplane"))
        .arg("certs")
        .arg(&vol)
        .args(&entry[3..])
        .status()
        .expect("dnsplane certs");
    assert!(status.success());
    // The configs, with the volume's path for the mount point.
    let config = |name: &str| {
        let text = read(&root().join("deploy/compose").join(name))
            .replace(&target, vol.to_str().expect("utf8"));
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path
    };
    let planner = dnsplane_planner::config::PlannerConfig::load(&config("planner.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    let applier =
        dnsplane_applier::load_config(&config("applier.toml")).unwrap_or_else(|e| panic!("{e}"));
    let tls = planner.tls.as_ref().expect("planner [tls]");
    dnsplane_common::tls::ServerTls::load_unwatched(&tls.settings()).expect("planner's server TLS");
    let atls = planner.applier_tls.as_ref().expect("planner [applier_tls]");
    dnsplane_common::tls::ClientTls::load_unwatched(&atls.settings())
        .expect("planner's client TLS");
    let a = applier.tls.as_ref().expect("applier [tls]");
    dnsplane_common::tls::ServerTls::load_unwatched(&a.settings()).expect("applier's TLS");
    assert!(planner.auth.as_ref().expect("[auth]").tokens_file.is_file());
    assert!(planner.applier.starts_with("https://"));
    let sans = |cert: &Path| {
        let out = Command::new(&openssl)
            .args(["x509", "-noout", "-ext", "subjectAltName", "-in"])
            .arg(cert)
            .output()
            .expect("openssl");
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let server = sans(&a.cert);
    assert!(
        server.contains(&format!("DNS:{}", host_of(&planner.applier))),
        "the applier's certificate names {}: {server}",
        host_of(&planner.applier)
    );
    // The planner's certificate is let in, and is a writer's (operators' client.pem
    // only reads).
    let client = sans(atls.cert.as_ref().expect("client cert"));
    for names in [&a.allowed_names, &a.writer_names] {
        assert!(
            names.iter().any(|n| client.contains(&format!("DNS:{n}"))),
            "one of {names:?} in {client}"
        );
    }
}

/// deploy/k8s/16-rbac-kinds.yaml grants the planner's account list and watch on every
/// resource a Kubernetes source with every kind watches (taken from the source itself,
/// so a new kind or dependency without its rule fails here), create and patch on
/// events, and nothing more: no get of secrets, no write to any object.
#[test]
fn the_kinds_rbac_grants_what_every_kind_watches_and_nothing_more() {
    use dnsplane_planner::source::kubernetes::{KubernetesSource, kinds::Kind};
    let r = k8s_resources();
    let role = &r[&(
        "ClusterRole".to_string(),
        "dnsplane-planner-kinds".to_string(),
    )];
    let binding = &r[&(
        "ClusterRoleBinding".to_string(),
        "dnsplane-planner-kinds".to_string(),
    )];
    assert_eq!(str_of(binding, "/roleRef/name"), "dnsplane-planner-kinds");
    assert_eq!(str_of(binding, "/subjects/0/name"), "dnsplane-planner");
    let rules = role["rules"].as_array().expect("rules");
    let allows = |group: &str, resource: &str, verb: &str| {
        rules.iter().any(|rule| {
            let has = |key: &str, want: &str| {
                rule[key]
                    .as_array()
                    .is_some_and(|v| v.iter().any(|x| x == want))
            };
            has("apiGroups", group) && has("resources", resource) && has("verbs", verb)
        })
    };
    let config = dnsplane_planner::config::KubernetesSourceConfig {
        kinds: Kind::ALL.iter().map(|k| k.as_str().to_string()).collect(),
        ..Default::default()
    };
    let watches = KubernetesSource::new(config).watches();
    assert!(watches.len() >= 12, "{watches:?}");
    for w in &watches {
        let ar = w.feed.resource();
        if ar.plural == "dnsendpoints" {
            continue; // 15-rbac.yaml
        }
        for verb in ["list", "watch"] {
            assert!(
                allows(&ar.group, &ar.plural, verb),
                "{verb} {} in group {:?}",
                ar.plural,
                ar.group
            );
        }
    }
    for verb in ["create", "patch"] {
        assert!(allows("", "events", verb), "{verb} events");
    }
    for rule in rules {
        for verb in rule["verbs"].as_array().expect("verbs") {
            let verb = verb.as_str().unwrap();
            let events = rule["resources"] == serde_json::json!(["events"]);
            let ok =
                matches!(verb, "list" | "watch") || (events && matches!(verb, "create" | "patch"));
            assert!(
                ok,
                "{verb} on {:?} is more than the source needs",
                rule["resources"]
            );
        }
    }
}
