"""Azure's official Python SDKs (`azure-mgmt-dns` 9.0.0, `azure-mgmt-privatedns` 2.0.0)
against `dnsplane emulate azure`.

Run by tests/e2e/sdk_azure.rs with the emulator's endpoint in EMULATOR_ENDPOINT. The
script gets a token from the emulator's token endpoint with the client-credentials
form AAD takes, then creates, updates, lists (page by page, through `nextLink`) and
deletes record sets of a public and a private zone; a stale ETag must reach the SDK
as an HttpResponseError carrying ARM's `PreconditionFailed`, a create-only PUT of an
existing set likewise, and ARM's other errors as the exceptions the SDK maps them to.

The description: the SDKs are generated from the REST API descriptions (dns.json
2018-05-01, privatedns.json), so they stand for them. Every raw answer is also walked
for fields the SDK's models do not declare (the generated deserializers drop or park
them silently).

azure-identity's ClientSecretCredential is tried against the emulator's token
endpoint first: it refuses any authority that is not https
(`azure.identity._internal.utils.normalize_authority`), so the script brings its own
TokenCredential that posts the same form to the same endpoint; and azure-core's
bearer policy refuses plain http unless `enforce_https` is off, which the
authentication policy below turns off for the emulator only.
"""
import json
import os
import time
import urllib.parse
import urllib.request

from azure.core import MatchConditions
from azure.core.credentials import AccessToken
from azure.core.exceptions import (
    ClientAuthenticationError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ResponseNotReadError,
)
from azure.mgmt.core.policies import ARMChallengeAuthenticationPolicy
from azure.mgmt.dns import DnsManagementClient
from azure.mgmt.dns import models as dns_models
from azure.mgmt.privatedns import PrivateDnsManagementClient
from azure.mgmt.privatedns import models as private_models

import sdkcheck
from sdkcheck import check, control, expect_error, step

ENDPOINT = os.environ["EMULATOR_ENDPOINT"].rstrip("/")
SUB = "00000000-0000-0000-0000-000000000000"
RG = "dnsplane"
TENANT = "11111111-2222-3333-4444-555555555555"
CLIENT_ID = "emulator-client"
CLIENT_SECRET = "emulator-secret"
SCOPE = "https://management.azure.com/.default"

raw_bodies = []  # every JSON answer, as sent


def keep_raw(response):
    try:
        body = response.http_response.text()
    except ResponseNotReadError:
        return  # a long-running operation's first answer, streamed: not read yet
    if body:
        raw_bodies.append((response.http_request.url, json.loads(body)))


class EmulatorCredential:
    """A TokenCredential posting the client-credentials form AAD takes to the
    emulator's token endpoint (what MSAL posts for a ClientSecretCredential)."""

    def __init__(self, secret=CLIENT_SECRET):
        self.secret = secret
        self.fetched = 0
        self.scopes = []

    def get_token(self, *scopes, **_kwargs):
        self.scopes.extend(scopes)
        form = urllib.parse.urlencode({
            "grant_type": "client_credentials",
            "client_id": CLIENT_ID,
            "client_secret": self.secret,
            "scope": " ".join(scopes),
        }).encode()
        req = urllib.request.Request(
            f"{ENDPOINT}/{TENANT}/oauth2/v2.0/token", data=form, method="POST",
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                t = json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise ClientAuthenticationError(message=e.read().decode()) from None
        self.fetched += 1
        return AccessToken(t["access_token"], int(time.time()) + int(t["expires_in"]))


class HttpChallengePolicy(ARMChallengeAuthenticationPolicy):
    """ARM's own bearer policy, with its https check off for the local emulator."""

    def on_request(self, request):
        request.context.options["enforce_https"] = False
        return super().on_request(request)


def clients(credential, retries=0):
    kw = dict(
        base_url=ENDPOINT,
        authentication_policy=HttpChallengePolicy(credential, SCOPE),
        raw_response_hook=keep_raw,
        retry_total=retries,
        retry_backoff_factor=0.1,
    )
    return (
        DnsManagementClient(credential, SUB, **kw),
        # privatedns 2.0.0 defaults to 2024-06-01; ask for the 2020-06-01 the driver speaks.
        PrivateDnsManagementClient(credential, SUB, api_version="2020-06-01", **kw),
    )


def arm_error(code, status):
    def check_exc(e):
        got = getattr(getattr(e, "error", None), "code", None)
        if e.status_code != status:
            return f"its status is {e.status_code}, not {status}"
        if got != code:
            return f"its ARM code is {got!r}, not {code!r} ({e.message})"
        return None

    return check_exc


def declared_dns(model):
    """The JSON keys a msrest model declares: top level, and under `properties.`."""
    top, props = set(), set()
    for spec in model._attribute_map.values():
        key = spec["key"].replace("\\.", ".")
        if key.startswith("properties."):
            props.add(key.split(".", 1)[1])
        else:
            top.add(key)
    return top, props


def undeclared(url, body, out):
    """Fields of a record set or zone answer the SDK's models do not declare."""
    items = body.get("value", [body]) if isinstance(body, dict) else []
    for item in items:
        t = str(item.get("type", ""))
        private = "privateDnsZones" in t
        if t.count("/") == 2:
            model = private_models.RecordSet if private else dns_models.RecordSet
        elif t.count("/") == 1:
            model = private_models.PrivateZone if private else dns_models.Zone
        else:
            continue
        if private:
            top = {f._rest_name for f in model._attr_to_rest_field.values()}
            pm = private_models.RecordSetProperties if model is private_models.RecordSet else private_models.PrivateZoneProperties
            props = {f._rest_name for f in pm._attr_to_rest_field.values()}
            top |= {"location", "tags"} if model is private_models.PrivateZone else set()
        else:
            top, props = declared_dns(model)
            top.add("properties")
        for k in item:
            if k not in top:
                out.append(f"{url}: {t} .{k}")
        for k in (item.get("properties") or {}):
            if k not in props:
                out.append(f"{url}: {t} .properties.{k}")


def main():
    with step("azure-identity's ClientSecretCredential refuses an http authority (why the script brings its own credential)"):
        from azure.identity import ClientSecretCredential
        try:
            ClientSecretCredential(TENANT, CLIENT_ID, CLIENT_SECRET, authority=ENDPOINT)
            raise AssertionError("it accepted an http authority: use it instead of EmulatorCredential")
        except ValueError as e:
            assert "https" in str(e), e

    cred = EmulatorCredential()
    dns, private = clients(cred)
    control(ENDPOINT, "POST", "/zones", {"name": "corp.internal", "private": True})
    rs = dns.record_sets
    zone = "sdk.example.com"

    with step("zones.create_or_update, get and list (public)"):
        z = dns.zones.create_or_update(RG, zone, dns_models.Zone(location="global", tags={"team": "dns"}), if_none_match="*")
        assert z.name == zone and z.etag, z
        assert len(z.name_servers) == 4, z.name_servers
        assert dns.zones.get(RG, zone).number_of_record_sets == 2
        assert zone in [x.name for x in dns.zones.list_by_resource_group(RG)]
        assert zone in [x.name for x in dns.zones.list()]
    check("the SDK asked the token endpoint for ARM's scope", cred.scopes[:1] == [SCOPE], str(cred.scopes))

    with step("record_sets.create_or_update of A, AAAA, CNAME, MX, TXT, SRV, CAA, NS, PTR (public)"):
        a = rs.create_or_update(RG, zone, "www", "A", dns_models.RecordSet(ttl=300, a_records=[dns_models.ARecord(ipv4_address="192.0.2.1")], metadata={"owner": "dnsplane"}), if_none_match="*")
        assert a.fqdn == f"www.{zone}." and a.etag and a.provisioning_state == "Succeeded", a
        rs.create_or_update(RG, zone, "www", "AAAA", dns_models.RecordSet(ttl=300, aaaa_records=[dns_models.AaaaRecord(ipv6_address="2001:db8::1")]))
        rs.create_or_update(RG, zone, "alias", "CNAME", dns_models.RecordSet(ttl=60, cname_record=dns_models.CnameRecord(cname="www.sdk.example.com")))
        rs.create_or_update(RG, zone, "@", "MX", dns_models.RecordSet(ttl=3600, mx_records=[dns_models.MxRecord(preference=10, exchange="mx.example.net")]))
        t = rs.create_or_update(RG, zone, "txt", "TXT", dns_models.RecordSet(ttl=60, txt_records=[dns_models.TxtRecord(value=["a" * 255, "b"]), dns_models.TxtRecord(value=["v=spf1 -all"])]))
        assert [r.value for r in t.txt_records] == [["a" * 255, "b"], ["v=spf1 -all"]], t.txt_records
        rs.create_or_update(RG, zone, "_sip._tcp", "SRV", dns_models.RecordSet(ttl=60, srv_records=[dns_models.SrvRecord(priority=1, weight=2, port=5060, target="sip.example.net")]))
        c = rs.create_or_update(RG, zone, "@", "CAA", dns_models.RecordSet(ttl=60, caa_records=[dns_models.CaaRecord(flags=0, tag="issue", value="letsencrypt.org")]))
        assert c.caa_records[0].tag == "issue", c
        rs.create_or_update(RG, zone, "sub", "NS", dns_models.RecordSet(ttl=60, ns_records=[dns_models.NsRecord(nsdname="ns1.example.net")]))
        rs.create_or_update(RG, zone, "1", "PTR", dns_models.RecordSet(ttl=60, ptr_records=[dns_models.PtrRecord(ptrdname="host.example.net")]))
        soa = rs.get(RG, zone, "@", "SOA")
        assert soa.soa_record.host == "ns1-01.azure-dns.com." and soa.soa_record.minimum_ttl == 300, soa.soa_record

    etag = rs.get(RG, zone, "www", "A").etag
    with step("update with If-Match (PATCH) and create_or_update with If-Match (PUT) change the ETag"):
        u = rs.update(RG, zone, "www", "A", dns_models.RecordSet(ttl=600), if_match=etag)
        assert u.ttl == 600 and u.a_records[0].ipv4_address == "192.0.2.1" and u.etag != etag, u
        p = rs.create_or_update(RG, zone, "www", "A", dns_models.RecordSet(ttl=120, a_records=[dns_models.ARecord(ipv4_address="192.0.2.2")]), if_match=u.etag)
        assert p.etag not in (etag, u.etag), p
        fresh = p.etag

    expect_error(
        "a stale If-Match on PUT is HttpResponseError 412 PreconditionFailed",
        lambda: rs.create_or_update(RG, zone, "www", "A", dns_models.RecordSet(ttl=1, a_records=[dns_models.ARecord(ipv4_address="192.0.2.9")]), if_match=etag),
        HttpResponseError,
        arm_error("PreconditionFailed", 412),
    )
    expect_error(
        "a stale If-Match on PATCH is HttpResponseError 412 PreconditionFailed",
        lambda: rs.update(RG, zone, "www", "A", dns_models.RecordSet(ttl=1), if_match=etag),
        HttpResponseError,
        arm_error("PreconditionFailed", 412),
    )
    expect_error(
        "a stale If-Match on DELETE is HttpResponseError 412 PreconditionFailed",
        lambda: rs.delete(RG, zone, "www", "A", if_match=etag),
        HttpResponseError,
        arm_error("PreconditionFailed", 412),
    )
    expect_error(
        "a create-only PUT (If-None-Match: *) of an existing set is 412 PreconditionFailed",
        lambda: rs.create_or_update(RG, zone, "www", "A", dns_models.RecordSet(ttl=1, a_records=[dns_models.ARecord(ipv4_address="192.0.2.9")]), if_none_match="*"),
        HttpResponseError,
        arm_error("PreconditionFailed", 412),
    )
    check("the refused writes left the set as it was", rs.get(RG, zone, "www", "A").etag == fresh)
    expect_error(
        "a missing record set is ResourceNotFoundError NotFound",
        lambda: rs.get(RG, zone, "nope", "A"),
        ResourceNotFoundError,
        arm_error("NotFound", 404),
    )
    expect_error(
        "a record set of a missing zone is ResourceNotFoundError ParentResourceNotFound",
        lambda: rs.get(RG, "missing.example", "www", "A"),
        ResourceNotFoundError,
        arm_error("ParentResourceNotFound", 404),
    )
    expect_error(
        "a CNAME beside other data is HttpResponseError 409 Conflict",
        lambda: rs.create_or_update(RG, zone, "www", "CNAME", dns_models.RecordSet(ttl=60, cname_record=dns_models.CnameRecord(cname="x.example.net"))),
        HttpResponseError,
        arm_error("Conflict", 409),
    )
    expect_error(
        "21 records in a set is HttpResponseError 400 BadRequest",
        lambda: rs.create_or_update(RG, zone, "big", "A", dns_models.RecordSet(ttl=60, a_records=[dns_models.ARecord(ipv4_address=f"192.0.2.{i}") for i in range(21)])),
        HttpResponseError,
        arm_error("BadRequest", 400),
    )
    expect_error(
        "a refused client secret fails the credential (ClientAuthenticationError)",
        lambda: clients(EmulatorCredential(secret="wrong"))[0].zones.get(RG, zone),
        ClientAuthenticationError,
    )

    with step("list_all_by_dns_zone pages through 250 record sets with top=100 (nextLink)"):
        control(ENDPOINT, "POST", f"/zones/{zone}/recordsets", [
            {"type": "A", "name": f"n{i:03}", "properties": {"TTL": 60, "ARecords": [{"ipv4Address": "192.0.2.1"}]}}
            for i in range(250)
        ])
        pages = rs.list_all_by_dns_zone(RG, zone, top=100).by_page()
        sizes = [len(list(p)) for p in pages]
        assert len(sizes) >= 3 and max(sizes) <= 100 and sum(sizes) == 250 + 11, sizes
        names = [r.name for r in rs.list_by_type(RG, zone, "A", top=40)]
        assert len(names) == 251 and len(set(names)) == 251, len(names)
        assert len(list(rs.list_by_dns_zone(RG, zone, recordsetnamesuffix="_tcp"))) == 1

    with step("retries of a 429 honour Retry-After and then succeed"):
        control(ENDPOINT, "POST", "/faults", {"action": "throttle", "op": "get_record_set", "times": 1, "retry_after": "1s"})
        patient, _ = clients(cred, retries=2)
        before = control(ENDPOINT, "GET", "/stats")["throttled"]
        started = time.monotonic()
        assert patient.record_sets.get(RG, zone, "www", "A").ttl == 120
        assert time.monotonic() - started >= 0.9
        assert control(ENDPOINT, "GET", "/stats")["throttled"] == before + 1

    with step("delete with If-Match, then the set is gone"):
        rs.delete(RG, zone, "www", "A", if_match=fresh)
        assert "www" not in [r.name for r in rs.list_by_type(RG, zone, "A")]

    prs = private.record_sets
    with step("private zone: create (If-None-Match), get, update (If-Match), list, delete"):
        pz = private.private_zones.get(RG, "corp.internal")
        assert pz.name == "corp.internal", pz
        body = private_models.RecordSet(properties=private_models.RecordSetProperties(ttl=10, a_records=[private_models.ARecord(ipv4_address="10.0.0.4")]))
        s = prs.create_or_update(RG, "corp.internal", "A", "db", body, match_condition=MatchConditions.IfMissing)
        assert s.properties.ttl == 10 and s.properties.fqdn == "db.corp.internal." and s.etag, s
        assert s.type == "Microsoft.Network/privateDnsZones/A", s.type
        u = prs.update(RG, "corp.internal", "A", "db", private_models.RecordSet(properties=private_models.RecordSetProperties(ttl=20)), etag=s.etag, match_condition=MatchConditions.IfNotModified)
        assert u.properties.ttl == 20 and u.etag != s.etag, u
        assert sorted(r.name for r in prs.list(RG, "corp.internal")) == ["@", "db"]
        assert [r.name for r in prs.list_by_type(RG, "corp.internal", "A")] == ["db"]
        stale = s.etag
    expect_error(
        "private: a stale ETag (IfNotModified) is ResourceModifiedError 412 PreconditionFailed",
        lambda: prs.delete(RG, "corp.internal", "A", "db", etag=stale, match_condition=MatchConditions.IfNotModified),
        ResourceModifiedError,
        arm_error("PreconditionFailed", 412),
    )
    expect_error(
        "private: a create-only PUT (IfMissing) of an existing set is ResourceExistsError 412",
        lambda: prs.create_or_update(RG, "corp.internal", "A", "db", body, match_condition=MatchConditions.IfMissing),
        ResourceExistsError,
        arm_error("PreconditionFailed", 412),
    )
    with step("private: delete with the current ETag"):
        current = prs.get(RG, "corp.internal", "A", "db").etag
        prs.delete(RG, "corp.internal", "A", "db", etag=current, match_condition=MatchConditions.IfNotModified)
        assert [r.name for r in prs.list(RG, "corp.internal")] == ["@"]

    with step("zones.begin_delete of the public zone"):
        dns.zones.begin_delete(RG, zone).result()
        assert zone not in [x.name for x in dns.zones.list_by_resource_group(RG)]

    problems = []
    for url, body in raw_bodies:
        undeclared(url, body, problems)
    check(
        f"the SDKs' models declare every field of {len(raw_bodies)} answers",
        len(raw_bodies) > 20 and not problems,
        f"{len(problems)} undeclared fields:\n" + "\n".join(sorted(set(problems))[:40]),
    )
    sdkcheck.finish()


if __name__ == "__main__":
    main()
