//! What the ported external-dns tests of Ingresses and Gateway API routes
//! (`ingress_tests.rs`, `route_tests.rs`) share: the checked translation, the
//! annotations they set, and how a case's endpoints are compared with upstream's.
use super::for_hostname::merge_endpoints;
use super::{Cluster, Endpoint, Kind, Options};
use serde_json::Value;

pub(super) const HOSTNAME: &str = "external-dns.kubernetes.io/hostname";
pub(super) const TARGET: &str = "external-dns.kubernetes.io/target";
pub(super) const TTL: &str = "external-dns.kubernetes.io/ttl";
pub(super) const ALIAS: &str = "external-dns.kubernetes.io/alias";
pub(super) const CONTROLLER: &str = "external-dns.kubernetes.io/controller";

/// [`super::translate`], checking that what the source keeps of the object
/// ([`super::kept`]) translates alike: every case checks the trimming too.
pub(super) fn translate(
    kind: Kind,
    object: &Value,
    cluster: &Cluster,
    options: &Options,
) -> super::Translation {
    let t = super::translate(kind, object, cluster, options);
    let kept = super::kept::keep_read(kind, object.clone(), options);
    assert_eq!(
        super::translate(kind, &kept, cluster, options),
        t,
        "what is kept of {object} translates otherwise"
    );
    t
}

/// What a case expects of its objects.
pub(super) enum Want {
    Endpoints(Vec<Endpoint>),
    /// dnsplane refuses an object: a problem at this field.
    Problem(&'static str),
}

/// Endpoints as upstream's `ValidateEndpoints` compares them: order of endpoints and
/// of targets ignored.
pub(super) fn normalised(mut eps: Vec<Endpoint>) -> Vec<Endpoint> {
    for e in &mut eps {
        e.targets.sort();
    }
    eps.sort();
    eps
}

/// Translates each of `objects` as `kind` and compares what they ask for, after
/// external-dns's `MergeEndpoints`, with `want`: `Err` names the case (`upstream`) and
/// what differs. `problem_alone`: a wanted problem must come without any endpoint.
pub(super) fn check(
    upstream: &str,
    kind: Kind,
    objects: &[Value],
    cluster: &Cluster,
    options: &Options,
    want: &Want,
    problem_alone: bool,
) -> Result<(), String> {
    let mut endpoints = Vec::new();
    let mut problems = Vec::new();
    for object in objects {
        let t = translate(kind, object, cluster, options);
        endpoints.extend(t.endpoints);
        problems.extend(t.problems);
    }
    match want {
        Want::Endpoints(want) => {
            let got = normalised(merge_endpoints(endpoints));
            if !problems.is_empty() || got != normalised(want.clone()) {
                return Err(format!(
                    "{upstream}:\n  got  {got:?}\n  problems {problems:?}\n  want {want:?}"
                ));
            }
        }
        Want::Problem(field) => {
            let found = problems.iter().any(|p| p.field == *field);
            if !found || (problem_alone && !endpoints.is_empty()) {
                return Err(format!(
                    "{upstream}: want a problem at {field}, got {problems:?} and {endpoints:?}"
                ));
            }
        }
    }
    Ok(())
}
