//! Route 53 calls the emulator does not answer, by name: a client calling one gets 501
//! `NotImplemented` naming it, which it cannot mistake for "no such zone" (a 404).
//!
//! The table lists the 2013-04-01 API's other operations, each as its HTTP method, its
//! request URI under `/2013-04-01/` (`{…}`: one path segment) and its name, as AWS's
//! API reference (and botocore's `route53/2013-04-01/service-2.json`) give them.
const OTHERS: &[(&str, &str, &str)] = &[
    (
        "POST",
        "keysigningkey/{HostedZoneId}/{Name}/activate",
        "ActivateKeySigningKey",
    ),
    (
        "POST",
        "hostedzone/{Id}/associatevpc",
        "AssociateVPCWithHostedZone",
    ),
    (
        "POST",
        "cidrcollection/{CidrCollectionId}",
        "ChangeCidrCollection",
    ),
    (
        "POST",
        "tags/{ResourceType}/{ResourceId}",
        "ChangeTagsForResource",
    ),
    ("POST", "cidrcollection", "CreateCidrCollection"),
    ("POST", "healthcheck", "CreateHealthCheck"),
    ("POST", "healthchecksource", "CreateHealthCheckSource"),
    ("POST", "keysigningkey", "CreateKeySigningKey"),
    ("POST", "queryloggingconfig", "CreateQueryLoggingConfig"),
    (
        "POST",
        "hostedzone/{Id}/rrsetprotection",
        "CreateResourceRecordSetProtections",
    ),
    ("POST", "delegationset", "CreateReusableDelegationSet"),
    ("POST", "trafficpolicy", "CreateTrafficPolicy"),
    (
        "POST",
        "trafficpolicyinstance",
        "CreateTrafficPolicyInstance",
    ),
    ("POST", "trafficpolicy/{Id}", "CreateTrafficPolicyVersion"),
    (
        "POST",
        "hostedzone/{Id}/authorizevpcassociation",
        "CreateVPCAssociationAuthorization",
    ),
    (
        "POST",
        "keysigningkey/{HostedZoneId}/{Name}/deactivate",
        "DeactivateKeySigningKey",
    ),
    (
        "DELETE",
        "cidrcollection/{CidrCollectionId}",
        "DeleteCidrCollection",
    ),
    ("DELETE", "healthcheck/{HealthCheckId}", "DeleteHealthCheck"),
    (
        "DELETE",
        "healthchecksource/{HealthCheckSourceId}",
        "DeleteHealthCheckSource",
    ),
    (
        "DELETE",
        "keysigningkey/{HostedZoneId}/{Name}",
        "DeleteKeySigningKey",
    ),
    (
        "DELETE",
        "queryloggingconfig/{Id}",
        "DeleteQueryLoggingConfig",
    ),
    (
        "POST",
        "hostedzone/{Id}/rrsetprotection/delete",
        "DeleteResourceRecordSetProtections",
    ),
    (
        "DELETE",
        "delegationset/{Id}",
        "DeleteReusableDelegationSet",
    ),
    (
        "DELETE",
        "trafficpolicy/{Id}/{Version}",
        "DeleteTrafficPolicy",
    ),
    (
        "DELETE",
        "trafficpolicyinstance/{Id}",
        "DeleteTrafficPolicyInstance",
    ),
    (
        "POST",
        "hostedzone/{Id}/deauthorizevpcassociation",
        "DeleteVPCAssociationAuthorization",
    ),
    (
        "POST",
        "hostedzone/{Id}/disable-dnssec",
        "DisableHostedZoneDNSSEC",
    ),
    (
        "POST",
        "hostedzone/{Id}/disassociatevpc",
        "DisassociateVPCFromHostedZone",
    ),
    (
        "POST",
        "hostedzone/{Id}/enable-dnssec",
        "EnableHostedZoneDNSSEC",
    ),
    ("GET", "accountlimit/{Type}", "GetAccountLimit"),
    ("GET", "checkeripranges", "GetCheckerIpRanges"),
    ("GET", "hostedzone/{Id}/dnssec", "GetDNSSEC"),
    ("GET", "geolocation", "GetGeoLocation"),
    ("GET", "healthcheck/{HealthCheckId}", "GetHealthCheck"),
    ("GET", "healthcheckcount", "GetHealthCheckCount"),
    (
        "GET",
        "healthcheck/{HealthCheckId}/lastfailurereason",
        "GetHealthCheckLastFailureReason",
    ),
    (
        "GET",
        "healthchecksource/{HealthCheckSourceId}",
        "GetHealthCheckSource",
    ),
    (
        "GET",
        "healthcheck/{HealthCheckId}/status",
        "GetHealthCheckStatus",
    ),
    (
        "GET",
        "hostedzone/{Id}/changebatches/{ChangeId}",
        "GetHostedZoneChangeBatch",
    ),
    ("GET", "hostedzonelimit/{Id}/{Type}", "GetHostedZoneLimit"),
    ("GET", "queryloggingconfig/{Id}", "GetQueryLoggingConfig"),
    ("GET", "delegationset/{Id}", "GetReusableDelegationSet"),
    (
        "GET",
        "reusabledelegationsetlimit/{Id}/{Type}",
        "GetReusableDelegationSetLimit",
    ),
    ("GET", "trafficpolicy/{Id}/{Version}", "GetTrafficPolicy"),
    (
        "GET",
        "trafficpolicyinstance/{Id}",
        "GetTrafficPolicyInstance",
    ),
    (
        "GET",
        "trafficpolicyinstancecount",
        "GetTrafficPolicyInstanceCount",
    ),
    (
        "GET",
        "cidrcollection/{CidrCollectionId}/cidrblocks",
        "ListCidrBlocks",
    ),
    ("GET", "cidrcollection", "ListCidrCollections"),
    (
        "GET",
        "cidrcollection/{CidrCollectionId}",
        "ListCidrLocations",
    ),
    ("GET", "geolocations", "ListGeoLocations"),
    ("GET", "healthchecksource", "ListHealthCheckSources"),
    ("GET", "healthcheck", "ListHealthChecks"),
    (
        "GET",
        "healthchecks/source/{HealthCheckSourceId}",
        "ListHealthChecksBySource",
    ),
    (
        "GET",
        "hostedzone/{Id}/changebatches",
        "ListHostedZoneChangeBatches",
    ),
    ("GET", "hostedzonesbyvpc", "ListHostedZonesByVPC"),
    ("GET", "queryloggingconfig", "ListQueryLoggingConfigs"),
    (
        "GET",
        "hostedzone/{Id}/rrsetchanges",
        "ListResourceRecordSetChanges",
    ),
    (
        "GET",
        "hostedzone/{Id}/rrsetprotection",
        "ListResourceRecordSetProtections",
    ),
    ("GET", "delegationset", "ListReusableDelegationSets"),
    (
        "GET",
        "tags/{ResourceType}/{ResourceId}",
        "ListTagsForResource",
    ),
    ("POST", "tags/{ResourceType}", "ListTagsForResources"),
    ("GET", "trafficpolicies", "ListTrafficPolicies"),
    (
        "GET",
        "trafficpolicyinstances",
        "ListTrafficPolicyInstances",
    ),
    (
        "GET",
        "trafficpolicyinstances/hostedzone",
        "ListTrafficPolicyInstancesByHostedZone",
    ),
    (
        "GET",
        "trafficpolicyinstances/trafficpolicy",
        "ListTrafficPolicyInstancesByPolicy",
    ),
    (
        "GET",
        "trafficpolicies/{Id}/versions",
        "ListTrafficPolicyVersions",
    ),
    (
        "GET",
        "hostedzone/{Id}/authorizevpcassociation",
        "ListVPCAssociationAuthorizations",
    ),
    ("GET", "testdnsanswer", "TestDNSAnswer"),
    ("POST", "healthcheck/{HealthCheckId}", "UpdateHealthCheck"),
    ("POST", "hostedzone/{Id}", "UpdateHostedZoneComment"),
    (
        "POST",
        "hostedzone/{Id}/features",
        "UpdateHostedZoneFeatures",
    ),
    ("POST", "hostedzone/{Id}/tier", "UpdateHostedZoneTier"),
    (
        "POST",
        "trafficpolicy/{Id}/{Version}",
        "UpdateTrafficPolicyComment",
    ),
    (
        "POST",
        "trafficpolicyinstance/{Id}",
        "UpdateTrafficPolicyInstance",
    ),
];

/// The name of the Route 53 call `method` `/2013-04-01/<segs>` is, if the emulator
/// does not answer it.
pub(crate) fn operation(method: &str, segs: &[&str]) -> Option<&'static str> {
    OTHERS.iter().find_map(|(m, template, name)| {
        let parts: Vec<&str> = template.split('/').collect();
        let fits = *m == method
            && parts.len() == segs.len()
            && parts
                .iter()
                .zip(segs)
                .all(|(p, s)| (p.starts_with('{') && !s.is_empty()) || p == s);
        fits.then_some(*name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_calls_are_named() {
        assert_eq!(operation("GET", &["healthcheck"]), Some("ListHealthChecks"));
        assert_eq!(
            operation("GET", &["tags", "hostedzone", "Z1"]),
            Some("ListTagsForResource")
        );
        assert_eq!(
            operation("POST", &["hostedzone", "Z1", "associatevpc"]),
            Some("AssociateVPCWithHostedZone")
        );
        assert_eq!(operation("GET", &["hostedzone", "Z1", "nothing"]), None);
        assert_eq!(operation("GET", &["hostedzone"]), None, "answered");
    }
}
