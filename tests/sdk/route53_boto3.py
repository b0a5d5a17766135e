"""Route 53's own SDKs against `dnsplane emulate route53` (issue 29).

boto3 and the AWS CLI create a zone, list, change, page and delete, and make each
documented error happen. Every answer must parse, every error must reach the SDK as the
typed error it raises against AWS, and every XML answer is walked against botocore's
own description of the API (route53/2013-04-01/service-2.json, loaded from the
installed botocore): an element the description does not know, a required one missing,
a value outside its type or enum fails.

Environment: DNSPLANE_R53_ENDPOINT, DNSPLANE_R53_THROTTLED_ENDPOINT (an emulator with a
quota of one request a second), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
DNSPLANE_AWS_CLI. Prints one line per check; exits non-zero on the first failure.
"""
import datetime
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
import xml.etree.ElementTree as ET

import boto3
import botocore
import botocore.model
from botocore.config import Config
from botocore.exceptions import ClientError

ENDPOINT = os.environ["DNSPLANE_R53_ENDPOINT"]
THROTTLED = os.environ["DNSPLANE_R53_THROTTLED_ENDPOINT"]
AWS_CLI = os.environ["DNSPLANE_AWS_CLI"]
KEY = os.environ["AWS_ACCESS_KEY_ID"]
SECRET = os.environ["AWS_SECRET_ACCESS_KEY"]

DESCRIPTION = os.path.join(
    os.path.dirname(botocore.__file__), "data", "route53", "2013-04-01", "service-2.json.gz"
)
with gzip.open(DESCRIPTION) as f:
    SERVICE = botocore.model.ServiceModel(json.load(f), "route53")

# Errors every AWS query/REST service may answer, beside each operation's own.
COMMON_ERRORS = {"Throttling", "SignatureDoesNotMatch", "InvalidClientTokenId", "AccessDenied"}

checked = {"answers": 0, "errors": 0}
problems = []


def local(tag):
    return tag.split("}", 1)[-1]


def walk(elem, shape, path):
    """Checks `elem` against `shape`; problems are collected with their path."""
    t = shape.type_name
    if t == "structure":
        members = {}
        for name, m in shape.members.items():
            if m.serialization.get("location") in ("header", "headers", "statusCode", "uri", "querystring"):
                continue
            members[m.serialization.get("name", name)] = (name, m)
        seen = set()
        for child in elem:
            tag = local(child.tag)
            if tag not in members:
                problems.append(f"{path}/{tag}: not in {shape.name} (service-2.json)")
                continue
            name, m = members[tag]
            seen.add(name)
            walk(child, m, f"{path}/{tag}")
        for name in shape.required_members:
            m = shape.members[name]
            if m.serialization.get("location"):
                continue
            if name not in seen:
                problems.append(f"{path}: required {name} of {shape.name} missing")
    elif t == "list":
        member = shape.member
        want = member.serialization.get("name", "member")
        for child in elem:
            if local(child.tag) != want:
                problems.append(f"{path}/{local(child.tag)}: a {shape.name} holds {want}")
                continue
            walk(child, member, f"{path}/{want}")
        n = len(list(elem))
        if "min" in shape.metadata and n < shape.metadata["min"]:
            problems.append(f"{path}: {n} items, {shape.name} needs at least {shape.metadata['min']}")
        if "max" in shape.metadata and n > shape.metadata["max"]:
            problems.append(f"{path}: {n} items, {shape.name} allows {shape.metadata['max']}")
    else:
        if len(elem):
            problems.append(f"{path}: a {t} with child elements")
            return
        text = elem.text or ""
        try:
            if t in ("integer", "long"):
                v = int(text)
                if "min" in shape.metadata and v < shape.metadata["min"]:
                    problems.append(f"{path}: {v} < min {shape.metadata['min']}")
                if "max" in shape.metadata and v > shape.metadata["max"]:
                    problems.append(f"{path}: {v} > max {shape.metadata['max']}")
            elif t == "boolean":
                if text not in ("true", "false"):
                    problems.append(f"{path}: {text!r} is no boolean")
            elif t == "timestamp":
                datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
            elif t == "string":
                if shape.enum and text not in shape.enum:
                    problems.append(f"{path}: {text!r} not in {shape.name}'s enum")
                # AWS answers a zone's Id as `/hostedzone/<id>` (its API reference's
                # own examples), past ResourceId's max of 32, which bounds requests.
                if shape.name == "ResourceId" and text.startswith("/hostedzone/"):
                    text = text[len("/hostedzone/"):]
                if "max" in shape.metadata and len(text) > shape.metadata["max"]:
                    problems.append(f"{path}: longer than {shape.metadata['max']}")
                if "min" in shape.metadata and len(text) < shape.metadata["min"]:
                    problems.append(f"{path}: shorter than {shape.metadata['min']}")
        except ValueError as e:
            problems.append(f"{path}: {text!r} is no {t}: {e}")


def validate(operation_model, response_dict, **_):
    """botocore's before-parse hook: the raw answer, against the description."""
    op = SERVICE.operation_model(operation_model.name)
    status = response_dict["status_code"]
    body = response_dict["body"]
    headers = {k.lower(): v for k, v in response_dict["headers"].items()}
    where = f"{op.name} ({status})"
    if status >= 300:
        checked["errors"] += 1
        root = ET.fromstring(body)
        if local(root.tag) != "ErrorResponse":
            problems.append(f"{where}: error root {local(root.tag)}")
            return
        err = root.find("{*}Error")
        code = err.findtext("{*}Code") if err is not None else None
        known = {s.name for s in op.error_shapes} | {
            s.metadata.get("error", {}).get("code", s.name) for s in op.error_shapes
        }
        if code not in known | COMMON_ERRORS and not (status == 501 and code == "NotImplemented"):
            problems.append(f"{where}: error {code} is not one {op.name} documents")
        if root.findtext("{*}RequestId") is None:
            problems.append(f"{where}: no RequestId")
        return
    checked["answers"] += 1
    shape = op.output_shape
    if shape is None:
        return
    for name in shape.required_members:
        m = shape.members[name]
        if m.serialization.get("location") == "header":
            if m.serialization.get("name", name).lower() not in headers:
                problems.append(f"{where}: required header {m.serialization.get('name', name)} missing")
    if not body:
        if any(not shape.members[n].serialization.get("location") for n in shape.required_members):
            problems.append(f"{where}: empty body")
        return
    root = ET.fromstring(body)
    payload = shape.serialization.get("payload")
    if payload:
        walk(root, shape.members[payload], f"{where}/{local(root.tag)}")
    else:
        walk(root, shape, f"{where}/{local(root.tag)}")


def client(endpoint=ENDPOINT, secret=SECRET):
    c = boto3.session.Session(
        aws_access_key_id=KEY, aws_secret_access_key=secret, region_name="us-east-1"
    ).client(
        "route53",
        endpoint_url=endpoint,
        config=Config(retries={"max_attempts": 1, "mode": "standard"}),
    )
    c.meta.events.register("before-parse.route-53", validate)
    return c


def expect_error(what, code, call, typed=None, status=None, words=()):
    """`call` must raise ClientError `code` (as `typed`, the SDK's modelled class)."""
    try:
        call()
    except ClientError as e:
        got = e.response["Error"]["Code"]
        assert got == code, f"{what}: {got} ({e}), wanted {code}"
        if typed is not None:
            assert isinstance(e, typed), f"{what}: {type(e).__name__}, wanted {typed.__name__}"
        if status is not None:
            s = e.response["ResponseMetadata"]["HTTPStatusCode"]
            assert s == status, f"{what}: HTTP {s}, wanted {status}"
        for w in words:
            assert w in str(e), f"{what}: {w!r} not in {e}"
        print(f"ok: {what}: {type(e).__name__} {code}")
        return e
    raise AssertionError(f"{what}: no error, wanted {code}")


def change(action, name, rtype, ttl=300, values=(), **extra):
    rrset = {"Name": name, "Type": rtype, **extra}
    if values:
        rrset["TTL"] = ttl
        rrset["ResourceRecords"] = [{"Value": v} for v in values]
    return {"Action": action, "ResourceRecordSet": rrset}


def aws(*args, check=True):
    out = subprocess.run(
        [AWS_CLI, "route53", *args, "--endpoint-url", ENDPOINT, "--output", "json"],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
            "AWS_MAX_ATTEMPTS": "1",
        },
    )
    if check:
        assert out.returncode == 0, f"aws {' '.join(args)}: {out.stderr}"
        return json.loads(out.stdout) if out.stdout.strip() else None
    return out


def self_check():
    """The walk catches what it must: an unknown element, a missing required one, a
    value outside its enum."""
    op = SERVICE.operation_model("GetChange")
    bad = (
        b'<GetChangeResponse xmlns="https://route53.amazonaws.com/doc/2013-04-01/">'
        b"<ChangeInfo><Id>/change/C1</Id><Status>DONE</Status><Extra>1</Extra></ChangeInfo>"
        b"</GetChangeResponse>"
    )
    validate(op, {"status_code": 200, "body": bad, "headers": {}})
    found = list(problems)
    problems.clear()
    checked["answers"] = 0
    for want in ("Extra: not in ChangeInfo", "required SubmittedAt", "'DONE' not in ChangeStatus"):
        assert any(want in p for p in found), f"the walk missed {want!r}: {found}"
    print("ok: the walk finds an unknown element, a missing one, a value outside its enum")


def main():
    self_check()
    r53 = client()
    ex = r53.exceptions
    zone = f"sdk-{uuid.uuid4().hex[:8]}.test."
    ref = str(uuid.uuid4())

    # Zones.
    created = r53.create_hosted_zone(Name=zone, CallerReference=ref)
    zid = created["HostedZone"]["Id"].split("/")[-1]
    assert created["ResponseMetadata"]["HTTPStatusCode"] == 201, created
    assert created["Location"].endswith(zid), created["Location"]
    assert created["DelegationSet"]["NameServers"], created
    r53.get_hosted_zone(Id=zid)
    assert any(z["Name"] == zone for z in r53.list_hosted_zones()["HostedZones"])
    by_name = r53.list_hosted_zones_by_name(DNSName=zone, MaxItems="1")
    assert by_name["HostedZones"][0]["Name"] == zone, by_name
    assert r53.get_hosted_zone_count()["HostedZoneCount"] >= 1
    print(f"ok: zone {zone} ({zid}) created, got, listed, counted")

    # Records: 250 A sets, a TXT, an MX, a weighted pair and an alias, one batch.
    names = [f"r{i:03}.{zone}" for i in range(250)]
    changes = [change("CREATE", n, "A", values=[f"192.0.2.{i % 250 + 1}"]) for i, n in enumerate(names)]
    changes += [
        change("CREATE", f"txt.{zone}", "TXT", values=['"v=spf1 -all"', '"hello world"']),
        change("CREATE", f"mail.{zone}", "MX", values=["10 mx1.example.net.", "20 mx2.example.net."]),
        change("CREATE", f"api.{zone}", "A", ttl=60, values=["192.0.2.10"], SetIdentifier="eu", Weight=10),
        change("CREATE", f"api.{zone}", "A", ttl=60, values=["192.0.2.20"], SetIdentifier="us", Weight=20),
        {
            "Action": "CREATE",
            "ResourceRecordSet": {
                "Name": f"www.{zone}",
                "Type": "A",
                "AliasTarget": {"HostedZoneId": zid, "DNSName": f"r000.{zone}", "EvaluateTargetHealth": False},
            },
        },
    ]
    answer = r53.change_resource_record_sets(HostedZoneId=zid, ChangeBatch={"Comment": "sdk", "Changes": changes})
    cid = answer["ChangeInfo"]["Id"].split("/")[-1]
    assert r53.get_change(Id=cid)["ChangeInfo"]["Status"] in ("PENDING", "INSYNC")
    print(f"ok: {len(changes)} changes in one batch, GetChange {cid}")

    # Pages by hand: MaxItems with NextRecordName / NextRecordType / NextRecordIdentifier.
    seen, page, start = [], 0, {}
    while True:
        p = r53.list_resource_record_sets(HostedZoneId=zid, MaxItems="100", **start)
        page += 1
        seen += [(s["Name"], s["Type"], s.get("SetIdentifier")) for s in p["ResourceRecordSets"]]
        if not p["IsTruncated"]:
            break
        assert p["MaxItems"] == "100", p["MaxItems"]
        start = {"StartRecordName": p["NextRecordName"], "StartRecordType": p["NextRecordType"]}
        if "NextRecordIdentifier" in p:
            start["StartRecordIdentifier"] = p["NextRecordIdentifier"]
    assert len(seen) == len(set(seen)), "a set listed twice"
    # 255 changes, plus the zone's SOA and NS.
    assert len(seen) == len(changes) + 2, len(seen)
    assert page >= 3, page
    by_paginator = [
        s
        for p in r53.get_paginator("list_resource_record_sets").paginate(
            HostedZoneId=zid, PaginationConfig={"PageSize": 7}
        )
        for s in p["ResourceRecordSets"]
    ]
    assert len(by_paginator) == len(seen), len(by_paginator)
    # The AWS CLI pages with its own NextToken.
    listed = aws("list-resource-record-sets", "--hosted-zone-id", zid, "--max-items", "40")
    assert len(listed["ResourceRecordSets"]) == 40 and listed.get("NextToken"), listed.keys()
    rest = aws(
        "list-resource-record-sets", "--hosted-zone-id", zid, "--starting-token", listed["NextToken"]
    )
    assert len(listed["ResourceRecordSets"]) + len(rest["ResourceRecordSets"]) == len(seen)
    print(f"ok: {len(seen)} sets in {page} pages by hand, by the paginator and by the AWS CLI")

    # Changes: UPSERT, and AWS's own example of a DELETE and a CREATE of one name in
    # one batch (applied in order).
    r53.change_resource_record_sets(
        HostedZoneId=zid,
        ChangeBatch={"Changes": [change("UPSERT", names[0], "A", values=["198.51.100.1"])]},
    )
    r53.change_resource_record_sets(
        HostedZoneId=zid,
        ChangeBatch={
            "Changes": [
                change("DELETE", f"txt.{zone}", "TXT", values=['"v=spf1 -all"', '"hello world"']),
                change("CREATE", f"txt.{zone}", "TXT", values=['"v=spf1 -all"', '"hello world"']),
            ]
        },
    )
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump({"Changes": [change("UPSERT", names[1], "A", ttl=60, values=["198.51.100.2"])]}, f)
        f.flush()
        aws("change-resource-record-sets", "--hosted-zone-id", zid, "--change-batch", f"file://{f.name}")
    one = r53.list_resource_record_sets(
        HostedZoneId=zid, StartRecordName=names[1], StartRecordType="A", MaxItems="1"
    )["ResourceRecordSets"][0]
    assert (one["TTL"], one["ResourceRecords"]) == (60, [{"Value": "198.51.100.2"}]), one
    print("ok: UPSERT, DELETE+CREATE of one set in one batch, the AWS CLI's change")

    # Each documented error, as the SDK's typed exception.
    expect_error(
        "CREATE over an existing set",
        "InvalidChangeBatch",
        lambda: r53.change_resource_record_sets(
            HostedZoneId=zid, ChangeBatch={"Changes": [change("CREATE", names[2], "A", values=["192.0.2.3"])]}
        ),
        ex.InvalidChangeBatch,
        400,
        ["already exists"],
    )
    expect_error(
        "DELETE with other values",
        "InvalidChangeBatch",
        lambda: r53.change_resource_record_sets(
            HostedZoneId=zid, ChangeBatch={"Changes": [change("DELETE", names[2], "A", values=["192.0.2.99"])]}
        ),
        ex.InvalidChangeBatch,
        400,
    )
    expect_error(
        "a value that is not an address",
        "InvalidChangeBatch",
        lambda: r53.change_resource_record_sets(
            HostedZoneId=zid, ChangeBatch={"Changes": [change("CREATE", f"bad.{zone}", "A", values=["1.2.3"])]}
        ),
        ex.InvalidChangeBatch,
        400,
    )
    for what, call in [
        ("GetHostedZone of no zone", lambda: r53.get_hosted_zone(Id="ZNOSUCHZONE000")),
        ("ListResourceRecordSets of no zone", lambda: r53.list_resource_record_sets(HostedZoneId="ZNOSUCHZONE000")),
        (
            "ChangeResourceRecordSets of no zone",
            lambda: r53.change_resource_record_sets(
                HostedZoneId="ZNOSUCHZONE000",
                ChangeBatch={"Changes": [change("CREATE", "a.example.com.", "A", values=["192.0.2.1"])]},
            ),
        ),
        ("DeleteHostedZone of no zone", lambda: r53.delete_hosted_zone(Id="ZNOSUCHZONE000")),
    ]:
        expect_error(what, "NoSuchHostedZone", call, ex.NoSuchHostedZone, 404)
    expect_error("GetChange of no change", "NoSuchChange", lambda: r53.get_change(Id="CNOSUCHCHANGE"), ex.NoSuchChange, 404)
    expect_error(
        "a zone created twice with one CallerReference",
        "HostedZoneAlreadyExists",
        lambda: r53.create_hosted_zone(Name=zone, CallerReference=ref),
        ex.HostedZoneAlreadyExists,
        409,
    )
    expect_error(
        "DeleteHostedZone of a zone with records",
        "HostedZoneNotEmpty",
        lambda: r53.delete_hosted_zone(Id=zid),
        ex.HostedZoneNotEmpty,
        400,
    )
    expect_error(
        "StartRecordType without StartRecordName",
        "InvalidInput",
        lambda: r53.list_resource_record_sets(HostedZoneId=zid, StartRecordType="A"),
        ex.InvalidInput,
        400,
    )
    expect_error(
        "a zone name that is no domain name",
        "InvalidDomainName",
        lambda: r53.create_hosted_zone(Name="bad..name.test.", CallerReference=str(uuid.uuid4())),
        ex.InvalidDomainName,
        400,
    )
    expect_error(
        "a wrong secret",
        "SignatureDoesNotMatch",
        lambda: client(secret="not-the-secret").list_hosted_zones(),
        None,
        403,
    )
    expect_error(
        "a call the emulator does not reproduce",
        "NotImplemented",
        lambda: r53.list_health_checks(),
        None,
        501,
        ["ListHealthChecks"],
    )
    slow = client(THROTTLED)
    def burst():
        for _ in range(20):
            slow.list_hosted_zones()
    expect_error("over the quota", "Throttling", burst, None, 400, ["Rate exceeded"])
    cli = aws("get-hosted-zone", "--id", "ZNOSUCHZONE000", check=False)
    assert cli.returncode != 0 and "(NoSuchHostedZone)" in cli.stderr, cli.stderr
    print("ok: the AWS CLI names NoSuchHostedZone")

    # Delete every set but SOA and NS, then the zone.
    sets = [
        s
        for p in r53.get_paginator("list_resource_record_sets").paginate(HostedZoneId=zid)
        for s in p["ResourceRecordSets"]
        if s["Type"] not in ("SOA", "NS")
    ]
    r53.change_resource_record_sets(
        HostedZoneId=zid, ChangeBatch={"Changes": [{"Action": "DELETE", "ResourceRecordSet": s} for s in sets]}
    )
    deleted = r53.delete_hosted_zone(Id=zid)
    assert deleted["ChangeInfo"]["Status"] in ("PENDING", "INSYNC"), deleted
    expect_error("the deleted zone", "NoSuchHostedZone", lambda: r53.get_hosted_zone(Id=zid), ex.NoSuchHostedZone, 404)

    if problems:
        print("answers the description does not allow:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        sys.exit(1)
    print(f"ok: {checked['answers']} answers and {checked['errors']} errors valid by service-2.json")


if __name__ == "__main__":
    main()
