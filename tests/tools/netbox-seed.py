# Many IPAM IP addresses in a test NetBox, fast (issue 34). NetBox's REST bulk create
# runs at about 10 addresses/s under runserver; this goes through the Django ORM's
# bulk_create inside the NetBox process instead:
#
#   SEED_COUNT=50000 SEED_FIRST=10.1.0.0 SEED_NAME='h{i}.nb1.test' SEED_TAG=nb1 \
#       "$DNSPLANE_NETBOX_MANAGE" shell --no-imports -c "$(cat tests/tools/netbox-seed.py)"
#
# ($DNSPLANE_NETBOX_MANAGE is DIR/manage, written by tests/tools/netbox.sh; --no-imports
# keeps Django's shell from announcing its automatic imports, so the output is the one
# line below.) `shell -c` rather than `nbshell < file`: no prompts in the output, and no
# race with Django's check for input on stdin. The arguments are environment variables
# because `shell -c` passes none to the code:
#   SEED_COUNT   how many addresses (required)
#   SEED_FIRST   the first address, IPv4 or IPv6 (required); address i is SEED_FIRST + i
#                for i = 0..SEED_COUNT-1
#   SEED_MASK    prefix length on every address (default 32 for IPv4, 128 for IPv6)
#   SEED_NAME    dns_name, a str.format pattern with {i} (0..SEED_COUNT-1) and {ip}
#                (the address without mask, as written), e.g. 'h{i}.nb1.test' (required)
#   SEED_TAG     tag slug, created if missing, attached to every address (required):
#                the tests share one NetBox and find their own addresses by tag
#   SEED_STATUS  status (default active)
# Prints `seeded N` at the end. All in one transaction: all or nothing.
#
# bulk_create skips save(), signals, change logging, the search cache and webhooks, which
# is what makes it fast; the REST API lists the rows all the same (?tag=, dns_name).
# Only for seeding: a test of dnsplane's reaction to a change must make that change
# through the REST API so NetBox behaves as it does for users.
#
# Measured 2026-11-30 on the 2-core dev VM, NetBox running (runserver + rqworker), wall
# clock of the whole command (the range is the machine's load): 1,000 addresses
# 3.6-5.2 s, nearly all of it the Django start (an empty `shell -c` takes 3.9 s);
# 50,000 addresses 17.5-18.7 s. The REST API then lists them at once (?tag=<slug>:
# count, dns_name and tag as seeded).
import ipaddress
import os

from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from extras.models import Tag, TaggedItem
from ipam.models import IPAddress


def _seed():
    env = os.environ
    count = int(env["SEED_COUNT"])
    base = ipaddress.ip_address(env["SEED_FIRST"])
    mask = int(env.get("SEED_MASK", "32" if base.version == 4 else "128"))
    name = env["SEED_NAME"]
    slug = env["SEED_TAG"]
    status = env.get("SEED_STATUS", "active")

    batch = 5000
    with transaction.atomic():
        tag, _ = Tag.objects.get_or_create(slug=slug, defaults={"name": slug})
        ct = ContentType.objects.get_for_model(IPAddress)
        for start in range(0, count, batch):
            rows = []
            for i in range(start, min(start + batch, count)):
                ip = base + i
                rows.append(IPAddress(
                    address=f"{ip}/{mask}",
                    # save() would lowercase it; bulk_create does not call save().
                    dns_name=name.format(i=i, ip=ip).lower(),
                    status=status,
                ))
            # On PostgreSQL bulk_create fills in the ids, which the tags need.
            IPAddress.objects.bulk_create(rows)
            TaggedItem.objects.bulk_create(
                TaggedItem(tag=tag, content_type=ct, object_id=r.pk) for r in rows
            )
    print(f"seeded {count}")


_seed()
