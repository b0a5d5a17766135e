"""Loads one zone with octoDNS's own YamlProvider and prints every record as JSON.

Usage: load_zone.py DIRECTORY ZONE [--enforce-order]

One JSON object per line: name (absolute), type, ttl, values (each value rendered as
RFC 1035 presentation text by octoDNS's `Record.to_rrset()`), and what octoDNS says
about routing (`geo`, `dynamic`) and `octodns.ignored`. A load octoDNS refuses
prints `{"refused": "<its error>"}` and exits 3.

Used by planner/tests/octodns_reference.rs, which compares these records with what
dnsplane's octoDNS parser reads from the same file.
"""

import json
import logging
import sys

from octodns.provider.yaml import YamlProvider
from octodns.zone import Zone


def main():
    directory, zone_name = sys.argv[1], sys.argv[2]
    enforce_order = '--enforce-order' in sys.argv[3:]
    logging.disable(logging.CRITICAL)
    provider = YamlProvider(
        'reference',
        directory,
        enforce_order=enforce_order,
        escaped_semicolons=True,
    )
    zone = Zone(zone_name, [])
    try:
        provider.populate(zone)
    except Exception as e:  # octoDNS refuses the file: say why, distinctly
        print(json.dumps({'refused': f'{type(e).__name__}: {e}'}))
        sys.exit(3)
    for record in sorted(zone.records, key=lambda r: (r.name, r._type)):
        data = record.data
        print(
            json.dumps(
                {
                    'name': record.fqdn.lower(),
                    'type': record._type,
                    'ttl': record.ttl,
                    'values': list(record.to_rrset().rdatas),
                    'geo': bool(data.get('geo')),
                    'dynamic': bool(data.get('dynamic')),
                    'ignored': bool(record.ignored),
                },
                sort_keys=True,
            )
        )


if __name__ == '__main__':
    main()
