#!/usr/bin/env bash
# A real NetBox for the tests (issue 34): NetBox 4.7.3 with netbox-plugin-dns 1.7.3,
# on Debian's PostgreSQL 15 and Redis, following ../shared/design/NETBOX.md.
#
#   tests/tools/netbox.sh install DIR   # once: venv, patches, migrated database dump
#   tests/tools/netbox.sh start DIR     # a fresh database from the dump, the server
#                                       # and the rq worker; prints NETBOX_URL= and
#                                       # NETBOX_TOKEN= lines
#   tests/tools/netbox.sh stop DIR
#
# Upstream NetBox wants Python 3.12; Debian 12 has 3.11, so three small patches to
# the installed files are needed (and a fourth: see py312shim below). A test fixture, not a recommendation to users.
set -euo pipefail
cmd=${1:?install, start or stop}
D=$(realpath -m "${2:?a directory}")
PG_PORT=${NETBOX_PG_PORT:-32432}
REDIS_PORT=${NETBOX_REDIS_PORT:-32379}
HTTP_PORT=${NETBOX_HTTP_PORT:-32800}
PGB=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
VERSIONS="netbox==4.7.3 netbox-plugin-dns==1.7.3"
DUMP="$D/migrated.dump"

as_postgres() { if [[ $(id -u) -eq 0 ]]; then su postgres -c "$*"; else bash -c "$*"; fi; }

install_venv() {
    [[ -f $D/venv/.done && $(cat "$D/venv/.done") == "$VERSIONS" ]] && return
    rm -rf "$D/venv"
    python3 -m venv "$D/venv"
    "$D/venv/bin/pip" install -q --disable-pip-version-check --ignore-requires-python $VERSIONS
    local SP
    SP=$("$D/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    # 1. the one file 3.11 cannot parse (nested quotes in an f-string)
    sed -i "s/{f'site__{self.fields\['\(side_[ab]_site\)'\].to_field_name}': /{f\"site__{self.fields['\1'].to_field_name}\": /" "$SP/dcim/forms/bulk_import.py"
    # 2. the version gate
    sed -i 's/^if sys.version_info < (3, 12):  # noqa: UP036$/if sys.version_info < (3, 11):/' "$SP/netbox/settings.py"
    # 3. two 3.12 library functions, loaded at start through a .pth file
    cat >"$SP/py312shim.py" <<'PY'
import sys
if sys.version_info < (3, 12):
    import functools, inspect, itertools
    if not hasattr(itertools, "batched"):
        def batched(iterable, n):
            it = iter(iterable)
            while b := tuple(itertools.islice(it, n)):
                yield b
        itertools.batched = batched
    if not hasattr(inspect, "markcoroutinefunction"):
        _orig = inspect.iscoroutinefunction
        def markcoroutinefunction(func):
            import asyncio.coroutines
            func = getattr(func, "__func__", func)
            func._is_coroutine = asyncio.coroutines._is_coroutine
            return func
        def iscoroutinefunction(obj):
            if _orig(obj):
                return True
            while inspect.ismethod(obj):
                obj = obj.__func__
            while isinstance(obj, functools.partial):
                obj = obj.func
            import asyncio.coroutines
            return getattr(obj, "_is_coroutine", None) is asyncio.coroutines._is_coroutine
        inspect.markcoroutinefunction = markcoroutinefunction
        inspect.iscoroutinefunction = iscoroutinefunction
    # warnings.warn's skip_file_prefixes is 3.12's (listing with `ordering=` hits it).
    import warnings
    _warn = warnings.warn
    def warn(*args, skip_file_prefixes=(), **kwargs):
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        return _warn(*args, **kwargs)
    warnings.warn = warn
PY
    echo 'import py312shim' >"$SP/py312shim.pth"
    echo "$VERSIONS" >"$D/venv/.done"
}

write_config() {
    mkdir -p "$D/root/conf"
    touch "$D/root/conf/__init__.py"
    cat >"$D/root/conf/configuration.py" <<PY
ALLOWED_HOSTS = ['*']
DATABASE = {'NAME': 'netbox', 'USER': 'netbox', 'PASSWORD': 'netbox', 'HOST': '127.0.0.1', 'PORT': '$PG_PORT'}
_R = {'HOST': '127.0.0.1', 'PORT': $REDIS_PORT, 'USERNAME': '', 'PASSWORD': '', 'SSL': False}
REDIS = {'tasks': {**_R, 'DATABASE': 0}, 'caching': {**_R, 'DATABASE': 1}}
SECRET_KEY = 'insecure-test-secret-key-0123456789abcdefghijklmnopqrstuvwxyz'
API_TOKEN_PEPPERS = {1: 'insecure-test-pepper-0123456789abcdefghijklmnopqrstuvwxyz'}
CENSUS_REPORTING_ENABLED = False
PLUGINS = ['netbox_dns']
PY
}

start_db() {
    mkdir -p "$D/run" "$D/redis"
    rm -rf "$D/pg"
    mkdir -p "$D/pg"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$D/pg" "$D/run"
    as_postgres "$PGB/initdb -D $D/pg/data -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null"
    as_postgres "$PGB/pg_ctl -D $D/pg/data -l $D/run/pg.log -o '-p $PG_PORT -k $D/run -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off' -w start >/dev/null"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$D/redis" --save '' --appendonly no \
        --daemonize yes --pidfile "$D/run/redis.pid" >/dev/null
    psql -qh 127.0.0.1 -p "$PG_PORT" -U postgres \
        -c "CREATE USER netbox WITH PASSWORD 'netbox'" -c "CREATE DATABASE netbox OWNER netbox"
}

stop_all() {
    for p in runserver rqworker; do
        [[ -f $D/run/$p.pid ]] && kill "$(cat "$D/run/$p.pid")" 2>/dev/null || true
        rm -f "$D/run/$p.pid"
    done
    [[ -f $D/run/redis.pid ]] && kill "$(cat "$D/run/redis.pid")" 2>/dev/null || true
    [[ -d $D/pg/data ]] && as_postgres "$PGB/pg_ctl -D $D/pg/data -m fast stop >/dev/null" 2>/dev/null || true
}

netbox() { NETBOX_ROOT="$D/root" "$D/venv/bin/netbox" "$@"; }

case $cmd in
install)
    mkdir -p "$D"
    install_venv
    write_config
    if [[ ! -s $DUMP || $DUMP -ot $D/venv/.done ]]; then
        stop_all
        start_db
        netbox migrate --no-input >"$D/run/migrate.log"
        PGPASSWORD=netbox pg_dump -Fc -h 127.0.0.1 -p "$PG_PORT" -U netbox netbox >"$DUMP.tmp"
        mv "$DUMP.tmp" "$DUMP"
        stop_all
    fi
    ;;
start)
    stop_all
    write_config
    start_db
    PGPASSWORD=netbox pg_restore --no-owner -h 127.0.0.1 -p "$PG_PORT" -U netbox -d netbox "$DUMP"
    DJANGO_SUPERUSER_PASSWORD=admin123admin netbox createsuperuser --no-input \
        --username admin --email admin@example.com >/dev/null
    NETBOX_ROOT="$D/root" setsid "$D/venv/bin/netbox" runserver "127.0.0.1:$HTTP_PORT" --noreload \
        >"$D/run/runserver.log" 2>&1 </dev/null &
    echo $! >"$D/run/runserver.pid"
    NETBOX_ROOT="$D/root" setsid "$D/venv/bin/netbox" rqworker high default low \
        >"$D/run/rqworker.log" 2>&1 </dev/null &
    echo $! >"$D/run/rqworker.pid"
    for _ in $(seq 1 120); do
        code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$HTTP_PORT/api/status/" || true)
        [[ $code == 403 || $code == 200 ]] && break
        sleep 0.5
    done
    token=$(curl -sf -X POST -H 'Content-Type: application/json' \
        -d '{"username": "admin", "password": "admin123admin"}' \
        "http://127.0.0.1:$HTTP_PORT/api/users/tokens/provision/")
    echo "NETBOX_URL=http://127.0.0.1:$HTTP_PORT"
    echo "NETBOX_TOKEN_JSON=$token"
    ;;
stop) stop_all ;;
*) echo "netbox.sh: install, start or stop" >&2; exit 64 ;;
esac
