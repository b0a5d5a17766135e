"""Google's own Cloud DNS clients against `dnsplane emulate clouddns`.

Run by tests/e2e/sdk_clouddns.rs with the emulator's endpoint in EMULATOR_ENDPOINT
(its config: page_size 2, so every listing pages). Two clients, as users hold them:

- `google-cloud-dns` (google.cloud.dns.Client, the hand-written library): it sends
  integers the proto3 JSON way, as strings ("ttl": "300");
- `google-api-python-client` built from the dns v1 discovery document it ships, with
  the emulator as its root URL.

Each creates a zone, lists, changes, pages and deletes, and makes each documented
error happen; every error must reach the SDK as the exception the real service's
answer raises. Every answer is then checked against the discovery document
(tests/sdk/discovery.py).
"""
import json
import os
import time

import google.api_core.exceptions as gexc
import httplib2
import requests
from google.auth.credentials import AnonymousCredentials
from google.cloud import dns
from googleapiclient import discovery as gdiscovery
from googleapiclient.errors import HttpError

import discovery
import sdkcheck
from sdkcheck import check, control, expect_error, step

ENDPOINT = os.environ["EMULATOR_ENDPOINT"].rstrip("/")
PROJECT = os.environ.get("EMULATOR_PROJECT", "emulator-project")
TOKEN = os.environ.get("EMULATOR_TOKEN", "emulator-token")
# A token the emulator's config gives another project only.
OTHER_PROJECT_TOKEN = os.environ.get("EMULATOR_OTHER_PROJECT_TOKEN", "other-project-token")

recorder = discovery.Recorder()


# --- google-cloud-dns ----------------------------------------------------------------


class RecordingSession(requests.Session):
    """The `_http` google-cloud-dns sends through: the bearer token on every request
    (as its authorized session would add it), every answer recorded."""

    def __init__(self, token):
        super().__init__()
        self.headers["Authorization"] = f"Bearer {token}"
        self.hooks["response"].append(self._record)

    def _record(self, r, *args, **kwargs):
        recorder.add(r.request.method, r.url, r.status_code, r.text)


def cloud_dns_client(token=TOKEN):
    return dns.Client(
        project=PROJECT,
        credentials=AnonymousCredentials(),
        _http=RecordingSession(token),
        client_options={"api_endpoint": ENDPOINT},
    )


def reason_is(want):
    """A google.api_core exception whose first `errors[].reason` is `want`."""

    def check_exc(e):
        reasons = [x.get("reason") for x in (e.errors or []) if isinstance(x, dict)]
        return None if want in reasons else f"its reasons are {reasons}, not {want!r}"

    return check_exc


def wait_done(change):
    for _ in range(20):
        change.reload()
        if change.status == "done":
            return True
        time.sleep(0.05)
    return False


def google_cloud_dns():
    client = cloud_dns_client()
    zone = client.zone("sdk-zone", "sdk.example.com.", description="made by google-cloud-dns")

    with step("cloud-dns: quotas (projects.get) parse"):
        q = client.quotas()
        assert q["rrsetsPerManagedZone"] > 0, q

    with step("cloud-dns: managedZones.create"):
        zone.create()
        assert zone.zone_id, zone.zone_id
        assert zone.name_servers, zone.name_servers
        assert zone.exists()

    expect_error(
        "cloud-dns: a second zone of the same name is Conflict (409 alreadyExists)",
        lambda: client.zone("sdk-zone", "sdk.example.com.").create(),
        gexc.Conflict,
        reason_is("alreadyExists"),
    )
    expect_error(
        "cloud-dns: a bad dnsName is BadRequest (400 invalid)",
        lambda: client.zone("sdk-bad", "no trailing dot").create(),
        gexc.BadRequest,
        reason_is("invalid"),
    )

    with step("cloud-dns: managedZones.list pages through every zone"):
        for i in range(3):
            client.zone(f"sdk-extra-{i}", f"extra{i}.example.com.").create()
        names = [z.name for z in client.list_zones()]
        for want in ["sdk-zone", "sdk-extra-0", "sdk-extra-1", "sdk-extra-2"]:
            assert want in names, names
        assert len(names) == len(set(names)), names

    www = zone.resource_record_set("www.sdk.example.com.", "A", 300, ["192.0.2.1", "192.0.2.2"])
    with step("cloud-dns: changes.create with the ttl sent as a string, polled to done"):
        c = zone.changes()
        c.add_record_set(www)
        c.add_record_set(zone.resource_record_set("mail.sdk.example.com.", "MX", 3600, ["10 mx.example.net."]))
        c.add_record_set(zone.resource_record_set("txt.sdk.example.com.", "TXT", 60, ['"v=spf1 -all"']))
        c.create()
        assert c.status in ("pending", "done"), c.status
        assert wait_done(c), c.status

    with step("cloud-dns: rrsets.list pages through every set"):
        sets = {(r.name, r.record_type): r for r in zone.list_resource_record_sets()}
        assert ("www.sdk.example.com.", "A") in sets, sorted(sets)
        assert sets[("www.sdk.example.com.", "A")].ttl == 300
        assert sorted(sets[("www.sdk.example.com.", "A")].rrdatas) == ["192.0.2.1", "192.0.2.2"]
        assert len(sets) == 5, sorted(sets)  # SOA, NS, www, mail, txt

    with step("cloud-dns: an update (delete + add of www in one change)"):
        c = zone.changes()
        c.delete_record_set(www)
        c.add_record_set(zone.resource_record_set("www.sdk.example.com.", "A", 600, ["192.0.2.9"]))
        c.create()
        assert wait_done(c)
        got = [r for r in zone.list_resource_record_sets() if r.name == "www.sdk.example.com."]
        assert [(r.ttl, r.rrdatas) for r in got] == [(600, ["192.0.2.9"])], got

    def change(adds=(), dels=()):
        c = zone.changes()
        for a in adds:
            c.add_record_set(a)
        for d in dels:
            c.delete_record_set(d)
        c.create()
        return c

    expect_error(
        "cloud-dns: adding an existing set is Conflict (409 alreadyExists)",
        lambda: change(adds=[zone.resource_record_set("www.sdk.example.com.", "A", 600, ["192.0.2.9"])]),
        gexc.Conflict,
        reason_is("alreadyExists"),
    )
    expect_error(
        "cloud-dns: deleting with a stale ttl is PreconditionFailed (412 conditionNotMet)",
        lambda: change(dels=[zone.resource_record_set("www.sdk.example.com.", "A", 300, ["192.0.2.9"])]),
        gexc.PreconditionFailed,
        reason_is("conditionNotMet"),
    )
    expect_error(
        "cloud-dns: deleting a set that is not there is NotFound (404 notFound)",
        lambda: change(dels=[zone.resource_record_set("gone.sdk.example.com.", "A", 300, ["192.0.2.1"])]),
        gexc.NotFound,
        reason_is("notFound"),
    )
    expect_error(
        "cloud-dns: a bad rrdata is BadRequest (400 invalid)",
        lambda: change(adds=[zone.resource_record_set("bad.sdk.example.com.", "A", 300, ["1.2.3"])]),
        gexc.BadRequest,
        reason_is("invalid"),
    )
    expect_error(
        "cloud-dns: a CNAME beside other data is BadRequest (400 cnameResourceRecordSetConflict)",
        lambda: change(adds=[zone.resource_record_set("www.sdk.example.com.", "CNAME", 300, ["x.example.net."])]),
        gexc.BadRequest,
        reason_is("cnameResourceRecordSetConflict"),
    )
    expect_error(
        "cloud-dns: a zone that does not exist is NotFound (404 notFound)",
        lambda: list(client.zone("no-such-zone", "nope.example.com.").list_resource_record_sets()),
        gexc.NotFound,
        reason_is("notFound"),
    )
    check(
        "cloud-dns: Zone.exists() of an unknown zone is False",
        client.zone("no-such-zone").exists() is False,
    )
    expect_error(
        "cloud-dns: an unknown token is Unauthorized (401 authError)",
        lambda: cloud_dns_client("not-a-token").quotas(),
        gexc.Unauthorized,
        reason_is("authError"),
    )
    expect_error(
        "cloud-dns: a token of another project is Forbidden (403 forbidden)",
        lambda: cloud_dns_client(OTHER_PROJECT_TOKEN).quotas(),
        gexc.Forbidden,
        reason_is("forbidden"),
    )

    control(ENDPOINT, "POST", "/faults", {"action": "throttle", "op": "change", "times": 1})
    expect_error(
        "cloud-dns: the quota is TooManyRequests (429 rateLimitExceeded)",
        lambda: change(adds=[zone.resource_record_set("late.sdk.example.com.", "A", 300, ["192.0.2.3"])]),
        gexc.TooManyRequests,
        reason_is("rateLimitExceeded"),
    )

    with step("cloud-dns: changes.list pages through every change"):
        ids = [c.name for c in zone.list_changes()]
        assert ids[:3] == ["0", "1", "2"], ids
        assert len(ids) == len(set(ids)), ids

    expect_error(
        "cloud-dns: deleting a zone that holds records is BadRequest (400 containerNotEmpty)",
        lambda: zone.delete(),
        gexc.BadRequest,
        reason_is("containerNotEmpty"),
    )
    with step("cloud-dns: managedZones.delete once only SOA and NS are left"):
        left = [r for r in zone.list_resource_record_sets() if r.record_type not in ("SOA", "NS")]
        if left:
            change(dels=left)
        zone.delete()
        assert not zone.exists()
    expect_error(
        "cloud-dns: deleting it again is NotFound (404 notFound)",
        lambda: zone.delete(),
        gexc.NotFound,
        reason_is("notFound"),
    )


# --- google-api-python-client ----------------------------------------------------------


class RecordingHttp:
    """The httplib2 object the discovery client sends through: the bearer token on
    every request, every answer recorded."""

    def __init__(self, token):
        self.inner = httplib2.Http(timeout=10)
        self.token = token

    def request(self, uri, method="GET", body=None, headers=None, **kwargs):
        headers = dict(headers or {})
        if self.token is not None:
            headers["authorization"] = f"Bearer {self.token}"
        resp, content = self.inner.request(uri, method=method, body=body, headers=headers, **kwargs)
        recorder.add(method, uri, resp.status, content.decode("utf-8", "replace"))
        return resp, content


def api_client(token=TOKEN):
    return gdiscovery.build_from_document(
        discovery.load(),
        http=RecordingHttp(token),
        client_options={"api_endpoint": ENDPOINT + "/"},
    )


def http_error(status, reason, mentions=None):
    def check_exc(e):
        if e.status_code != status:
            return f"its status is {e.status_code}, not {status}"
        body = json.loads(e.content)
        reasons = [x.get("reason") for x in body["error"].get("errors", [])]
        if reason not in reasons:
            return f"its reasons are {reasons}, not {reason!r}"
        if mentions and mentions not in e.reason:
            return f"its message {e.reason!r} does not name {mentions!r}"
        return None

    return check_exc


def api_python_client():
    svc = api_client()
    mz, ch, rr = svc.managedZones(), svc.changes(), svc.resourceRecordSets()
    P, Z = PROJECT, "api-zone"

    with step("api-client: projects.get"):
        p = svc.projects().get(project=P).execute()
        assert p["quota"]["rrsetAdditionsPerChange"] > 0, p

    with step("api-client: managedZones.create and get"):
        z = mz.create(project=P, body={"name": Z, "dnsName": "api.example.com.", "description": "x"}).execute()
        assert z["dnsName"] == "api.example.com.", z
        assert mz.get(project=P, managedZone=Z).execute()["id"] == z["id"]

    expect_error(
        "api-client: a second zone of the same name is HttpError 409 alreadyExists",
        lambda: mz.create(project=P, body={"name": Z, "dnsName": "api.example.com."}).execute(),
        HttpError,
        http_error(409, "alreadyExists"),
    )

    def create_change(body):
        return ch.create(project=P, managedZone=Z, body=body).execute()

    def rrset(name, rtype, ttl, rrdatas):
        return {"name": f"{name}.api.example.com.", "type": rtype, "ttl": ttl, "rrdatas": rrdatas}

    with step("api-client: changes.create (integer ttl) and changes.get to done"):
        adds = [rrset(f"h{i}", "A", 300, [f"192.0.2.{i}"]) for i in range(5)]
        c = create_change({"additions": adds})
        for _ in range(20):
            c = ch.get(project=P, managedZone=Z, changeId=c["id"]).execute()
            if c["status"] == "done":
                break
        assert c["status"] == "done", c

    with step("api-client: changes.create with the ttl as a string (proto3 JSON)"):
        create_change({"additions": [rrset("s", "A", "300", ["192.0.2.50"])]})

    with step("api-client: resourceRecordSets.list pages with list_next"):
        req = rr.list(project=P, managedZone=Z, maxResults=2)
        names, pages = [], 0
        while req is not None:
            resp = req.execute()
            pages += 1
            names += [s["name"] for s in resp.get("rrsets", [])]
            req = rr.list_next(req, resp)
        assert pages >= 4, pages
        assert len(names) == 8, names  # SOA, NS, h0..h4, s

    with step("api-client: fields= answers only the fields asked for (a partial response)"):
        resp = rr.list(project=P, managedZone=Z, maxResults=2, fields="rrsets(name,type),nextPageToken").execute()
        assert set(resp) == {"rrsets", "nextPageToken"}, resp
        assert all(set(x) == {"name", "type"} for x in resp["rrsets"]), resp
        z = mz.get(project=P, managedZone=Z, fields="id").execute()
        assert set(z) == {"id"}, z

    expect_error(
        "api-client: a malformed fields= is HttpError 400 invalidParameter",
        lambda: rr.list(project=P, managedZone=Z, fields="rrsets(name").execute(),
        HttpError,
        http_error(400, "invalidParameter"),
    )

    with step("api-client: resourceRecordSets.list by name and type"):
        resp = rr.list(project=P, managedZone=Z, name="h1.api.example.com.", type="A").execute()
        assert [s["rrdatas"] for s in resp["rrsets"]] == [["192.0.2.1"]], resp

    expect_error(
        "api-client: adding an existing set is HttpError 409 alreadyExists",
        lambda: create_change({"additions": [rrset("h0", "A", 300, ["192.0.2.0"])]}),
        HttpError,
        http_error(409, "alreadyExists"),
    )
    expect_error(
        "api-client: deleting with stale data is HttpError 412 conditionNotMet",
        lambda: create_change({"deletions": [rrset("h0", "A", 300, ["192.0.2.99"])]}),
        HttpError,
        http_error(412, "conditionNotMet"),
    )
    expect_error(
        "api-client: deleting a set that is not there is HttpError 404 notFound",
        lambda: create_change({"deletions": [rrset("nope", "A", 300, ["192.0.2.1"])]}),
        HttpError,
        http_error(404, "notFound"),
    )
    expect_error(
        "api-client: a ttl that is no integer is HttpError 400 invalid",
        lambda: create_change({"additions": [rrset("t", "A", "soon", ["192.0.2.1"])]}),
        HttpError,
        http_error(400, "invalid"),
    )
    expect_error(
        "api-client: an unknown zone is HttpError 404 notFound",
        lambda: mz.get(project=P, managedZone="no-such-zone").execute(),
        HttpError,
        http_error(404, "notFound"),
    )
    expect_error(
        "api-client: a bad page token is HttpError 400 invalid",
        lambda: rr.list(project=P, managedZone=Z, pageToken="zz-not-ours").execute(),
        HttpError,
        http_error(400, "invalid"),
    )
    control(ENDPOINT, "POST", "/faults", {"action": "throttle", "op": "list_rrsets", "times": 1})
    expect_error(
        "api-client: the quota is HttpError 429 rateLimitExceeded",
        lambda: rr.list(project=P, managedZone=Z).execute(num_retries=0),
        HttpError,
        http_error(429, "rateLimitExceeded"),
    )
    expect_error(
        "api-client: an unknown token is HttpError 401 authError",
        lambda: api_client("not-a-token").projects().get(project=P).execute(),
        HttpError,
        http_error(401, "authError"),
    )
    expect_error(
        "api-client: no credentials at all is HttpError 401 required",
        lambda: api_client(None).projects().get(project=P).execute(),
        HttpError,
        http_error(401, "required"),
    )
    expect_error(
        "api-client: a token of another project is HttpError 403 forbidden",
        lambda: api_client(OTHER_PROJECT_TOKEN).projects().get(project=P).execute(),
        HttpError,
        http_error(403, "forbidden"),
    )
    # Methods the emulator does not reproduce: 501 naming the method, never a 404 a
    # client would take for "zone gone".
    for name, call in [
        ("dns.resourceRecordSets.create", lambda: rr.create(project=P, managedZone=Z, body=rrset("n", "A", 300, ["192.0.2.1"])).execute()),
        ("dns.resourceRecordSets.get", lambda: rr.get(project=P, managedZone=Z, name="h0.api.example.com.", type="A").execute()),
        ("dns.managedZones.patch", lambda: mz.patch(project=P, managedZone=Z, body={"description": "y"}).execute()),
        ("dns.policies.list", lambda: svc.policies().list(project=P).execute()),
    ]:
        expect_error(
            f"api-client: {name} is HttpError 501 notImplemented naming it",
            call,
            HttpError,
            http_error(501, "notImplemented", mentions=name),
        )

    with step("api-client: changes.list pages, newest first"):
        req = ch.list(project=P, managedZone=Z, maxResults=1, sortOrder="descending")
        ids = []
        while req is not None:
            resp = req.execute()
            ids += [c["id"] for c in resp.get("changes", [])]
            req = ch.list_next(req, resp)
        assert ids == ["2", "1", "0"], ids

    with step("api-client: managedZones.delete of an emptied zone"):
        sets, req = [], rr.list(project=P, managedZone=Z)
        while req is not None:
            resp = req.execute()
            sets += resp.get("rrsets", [])
            req = rr.list_next(req, resp)
        dels = [s for s in sets if s["type"] not in ("SOA", "NS")]
        if dels:
            create_change({"deletions": dels})
        out = mz.delete(project=P, managedZone=Z).execute()
        assert out in ("", None, {}), out
    expect_error(
        "api-client: the deleted zone is HttpError 404 notFound",
        lambda: mz.get(project=P, managedZone=Z).execute(),
        HttpError,
        http_error(404, "notFound"),
    )


def main():
    google_cloud_dns()
    api_python_client()
    desc = discovery.Description()
    checked, errs = recorder.validate_all(desc)
    check(
        f"discovery document: {checked} answers match dns.v1.json",
        checked > 40 and not errs,
        f"{len(errs)} problems:\n" + "\n".join(errs[:40]),
    )
    sdkcheck.finish()


if __name__ == "__main__":
    main()
