# Seeds IP addresses into the tests' NetBox through its own ORM (bulk_create), for
# tests/benchmarks that need thousands: NetBox's REST API creates about ten a second
# under `runserver`. No change logging and no webhooks fire, which seeding does not
# need. Run by `dnsplane_testing::netbox::NetBox::seed`, as
#   $DNSPLANE_NETBOX_MANAGE shell -c "$(cat tests/tools/netbox-seed.py)"
# with, in the environment:
#   SEED_COUNT  how many addresses
#   SEED_FIRST  the first IPv4 address; address i is SEED_FIRST + i, as /32
#   SEED_NAME   the dns_name, with {i} replaced by i (0-based)
#   SEED_TAG    a tag slug attached to every address (created if missing)
import ipaddress
import os

from extras.models import Tag
from ipam.models import IPAddress

count = int(os.environ["SEED_COUNT"])
first = ipaddress.IPv4Address(os.environ["SEED_FIRST"])
name = os.environ["SEED_NAME"]
slug = os.environ["SEED_TAG"]
tag, _ = Tag.objects.get_or_create(slug=slug, defaults={"name": slug})
made = IPAddress.objects.bulk_create(
    [
        IPAddress(address=f"{first + i}/32", dns_name=name.replace("{i}", str(i)), status="active")
        for i in range(count)
    ],
    batch_size=5000,
)
through = IPAddress.tags.through
through.objects.bulk_create(
    [through(content_object=a, tag=tag) for a in made],
    batch_size=5000,
)
print(f"seeded {len(made)}")
