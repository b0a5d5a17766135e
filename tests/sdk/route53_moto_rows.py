"""docs/emulators.md's table of where moto differs from AWS, checked row by row with
boto3: run with `aws` against `dnsplane emulate route53` (each row as AWS documents
it) and with `moto` against moto_server (each row as the table says moto answers). A
moto release that changes a row fails here, so the table stays true.

Environment: DNSPLANE_R53_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY.
"""
import concurrent.futures
import os
import sys
import uuid

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

SERVER = sys.argv[1]
assert SERVER in ("aws", "moto"), SERVER
AWS = SERVER == "aws"


def client(secret=None, attempts=1):
    return boto3.session.Session(
        aws_access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=secret or os.environ["AWS_SECRET_ACCESS_KEY"],
        region_name="us-east-1",
    ).client(
        "route53",
        endpoint_url=os.environ["DNSPLANE_R53_ENDPOINT"],
        config=Config(retries={"max_attempts": attempts, "mode": "standard"}),
    )


# The rows' own calls ride out the emulator's quota (boto3 retries Throttling);
# row 7 asks for it with a client that does not.
r53 = client(attempts=10)
zone = f"rows-{uuid.uuid4().hex[:8]}.test."
zid = r53.create_hosted_zone(Name=zone, CallerReference=str(uuid.uuid4()))["HostedZone"]["Id"].split("/")[-1]


def rr(action, label, values, ttl=300, rtype="A", name=None):
    return {
        "Action": action,
        "ResourceRecordSet": {
            "Name": name or f"{label}.{zone}",
            "Type": rtype,
            "TTL": ttl,
            "ResourceRecords": [{"Value": v} for v in values],
        },
    }


def batch(*changes):
    """None when applied, else the error code and message."""
    try:
        r53.change_resource_record_sets(HostedZoneId=zid, ChangeBatch={"Changes": list(changes)})
        return None
    except ClientError as e:
        return (e.response["Error"]["Code"], e.response["Error"]["Message"])


def sets(label, rtype="A"):
    return [
        s
        for s in r53.list_resource_record_sets(HostedZoneId=zid)["ResourceRecordSets"]
        if s["Name"] == f"{label}.{zone}" and s["Type"] == rtype
    ]


def row(what, ok):
    assert ok, f"{SERVER}: {what}: not as docs/emulators.md says"
    print(f"ok ({SERVER}): {what}")


# 1. A DELETE then a CREATE of one set in one batch.
assert batch(rr("CREATE", "a", ["192.0.2.1"])) is None
got = batch(rr("DELETE", "a", ["192.0.2.1"]), rr("CREATE", "a", ["192.0.2.1"]))
row(
    "DELETE then CREATE of one set in one batch",
    got is None if AWS else (got[0] == "InvalidChangeBatch" and "already exists" in got[1]),
)

# 2. A batch with a failing change: all or none.
got = batch(rr("CREATE", "b", ["192.0.2.2"]), rr("CREATE", "x", ["192.0.2.3"], name="x.elsewhere.test."))
row("a batch with a failing change fails", got is not None)
row("… and leaves nothing applied" if AWS else "… and leaves the change before it applied", (sets("b") == []) == AWS)

# 3. A CREATE of a set deleted since, created again as it was (another set after it).
assert batch(rr("CREATE", "e0", ["192.0.2.6"]), rr("CREATE", "e1", ["192.0.2.7"])) is None
assert batch(rr("DELETE", "e0", ["192.0.2.6"])) is None
got = batch(rr("CREATE", "e0", ["192.0.2.6"]))
row(
    "CREATE of a set deleted since, as it was",
    got is None if AWS else (got is not None and "already exists" in got[1] and sets("e0") == []),
)

# 4. A CREATE of a set that exists with other values.
got = batch(rr("CREATE", "a", ["192.0.2.9"]))
row(
    "CREATE over a set with other values",
    (got is not None and "already exists" in got[1]) if AWS else (got is None and len(sets("a")) == 2),
)

# 5. A DELETE with values the set held before, not now.
assert batch(rr("CREATE", "c", ["192.0.2.4"])) is None
assert batch(rr("UPSERT", "c", ["192.0.2.5"])) is None
got = batch(rr("DELETE", "c", ["192.0.2.4"]))
row("DELETE with the values of an earlier state", (got is not None) if AWS else (got is None and sets("c") == []))

# 6. Record values.
got = batch(rr("CREATE", "d", ["1.2.3"]))
row("an A value that is no address", (got is not None and got[0] == "InvalidChangeBatch") if AWS else got is None)

# 7. Signatures.
try:
    client(secret="not-the-secret").list_hosted_zones()
    signed = None
except ClientError as e:
    signed = e.response["Error"]["Code"]
row("a wrong secret", signed == "SignatureDoesNotMatch" if AWS else signed is None)

# 8. Request rate (the emulator at AWS's five a second): 30 requests at once.
once = client()


def count(_):
    try:
        once.get_hosted_zone_count()
        return None
    except ClientError as e:
        return e.response["Error"]["Code"]


with concurrent.futures.ThreadPoolExecutor(10) as pool:
    codes = set(pool.map(count, range(30))) - {None}
row("30 requests at once", codes == {"Throttling"} if AWS else codes == set())
