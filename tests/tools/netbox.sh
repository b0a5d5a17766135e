#!/usr/bin/env bash
# A real NetBox for the tests (issue 34): NetBox 4.7.3 with netbox-plugin-dns 1.7.3,
# on Debian's PostgreSQL 15 and Redis, following ../shared/design/NETBOX.md.
#
#   tests/tools/netbox.sh install DIR   # once: venv, patches, DIR/migrated.dump (a copy
#                                       # of the committed one when its stamp matches)
#   tests/tools/netbox.sh start DIR     # a fresh database from the dump, the server
#                                       # and the rq worker (webhooks); prints NETBOX_URL=,
#                                       # NETBOX_TOKEN=nbt_<key>.<token> (for
#                                       # `Authorization: Bearer`), NETBOX_MANAGE= and
#                                       # NETBOX_TOKEN_JSON= lines; fails with the log's
#                                       # tail if NetBox does not come up
#   tests/tools/netbox.sh stop DIR
#   tests/tools/netbox.sh dump DIR      # regenerate the committed dump (below)
#
# DIR/manage (written by every command but stop) runs NetBox's management commands for the
# instance, e.g. `DIR/manage nbshell`, `DIR/manage shell -c '...'` (tests/tools/netbox-seed.py).
#
# The committed dump: migrating an empty database takes about 7.5 minutes of CPU, more
# than CI's budget allows, so tests/tools/netbox/migrated.dump is a `pg_dump -Fc` taken
# right after `netbox migrate`, and migrated.stamp holds the VERSIONS it was migrated
# with and its sha256. `install` uses it only when both match (and this pg_restore can
# read it); otherwise it migrates from scratch, as `dump` always does. Never edit the
# dump by hand: after changing VERSIONS, run `netbox.sh dump DIR` and commit both files.
#
# Upstream NetBox wants Python 3.12; Debian 12 has 3.11, so three small patches to
# the installed files are needed (and a fourth: see py312shim below). A test fixture, not a recommendation to users.
set -euo pipefail
cmd=${1:?install, start, stop or dump}
D=$(realpath -m "${2:?a directory}")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PG_PORT=${NETBOX_PG_PORT:-32432}
REDIS_PORT=${NETBOX_REDIS_PORT:-32379}
HTTP_PORT=${NETBOX_HTTP_PORT:-32800}
# runserver takes about 8 s to answer on an idle machine; run-all.sh starts it while
# cargo builds on every core, so allow much longer before calling it a failure.
START_TIMEOUT=${NETBOX_START_TIMEOUT:-240}
PGB=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
VERSIONS="netbox==4.7.3 netbox-plugin-dns==1.7.3"
DUMP="$D/migrated.dump"
STAMP="$D/migrated.stamp"
COMMITTED_DUMP="$HERE/netbox/migrated.dump"
COMMITTED_STAMP="$HERE/netbox/migrated.stamp"
# The PostgreSQL cluster (data, socket, log). As root it runs as the postgres user, who
# cannot get into DIR under a home like /root (mode 700): then it lives in /tmp.
PGH="$D/pg"
if [[ $(id -u) -eq 0 ]]; then
    probe=$D
    while [[ ! -e $probe ]]; do probe=$(dirname "$probe"); done
    su postgres -c "test -x '$probe'" 2>/dev/null || PGH="/tmp/dnsplane-netbox-pg.$PG_PORT"
fi

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
    # Tests get this path (DNSPLANE_NETBOX_MANAGE) and need nothing else to reach the
    # instance's database through NetBox's own code.
    {
        echo '#!/usr/bin/env bash'
        echo '# NetBox management commands for the instance in this directory (tests/tools/netbox.sh).'
        printf 'export NETBOX_ROOT=%q\n' "$D/root"
        printf 'exec %q "$@"\n' "$D/venv/bin/netbox"
    } >"$D/manage"
    chmod +x "$D/manage"
}

netbox() { "$D/manage" "$@"; }

# A dump is usable when its stamp names these VERSIONS and its sha256, and this
# machine's pg_restore can read it (an older pg_restore cannot read a newer pg_dump's).
dump_ok() {
    local dump=$1 stamp=$2
    [[ -s $dump && -f $stamp ]] || return 1
    [[ $(sed -n 's/^versions=//p' "$stamp") == "$VERSIONS" ]] || return 1
    [[ $(sed -n 's/^sha256=//p' "$stamp") == "$(sha256sum "$dump" | cut -d' ' -f1)" ]] || return 1
    "$PGB/pg_restore" -l "$dump" >/dev/null 2>&1
}

write_stamp() {
    {
        echo "# tests/tools/netbox.sh dump: what migrated.dump was migrated with, and its sha256"
        echo "versions=$VERSIONS"
        echo "sha256=$(sha256sum "$1" | cut -d' ' -f1)"
        echo "pg_dump=$("$PGB/pg_dump" --version)"
    } >"$2"
}

# An empty database, migrated, dumped to DIR/migrated.dump (+ stamp).
migrate_dump() {
    stop_all
    trap stop_all EXIT # a failed migration leaves no database server behind
    start_db
    netbox migrate --no-input >"$D/run/migrate.log"
    PGPASSWORD=netbox "$PGB/pg_dump" -Fc -h 127.0.0.1 -p "$PG_PORT" -U netbox netbox >"$DUMP.tmp"
    mv "$DUMP.tmp" "$DUMP"
    write_stamp "$DUMP" "$STAMP"
    stop_all
    trap - EXIT
}

start_db() {
    mkdir -p "$D/run" "$D/redis"
    rm -rf "$PGH"
    mkdir -p "$PGH"
    [[ $(id -u) -eq 0 ]] && chown postgres:postgres "$PGH"
    as_postgres "$PGB/initdb -D $PGH/data -U postgres -A trust -E UTF8 --locale=C.UTF-8 >/dev/null"
    as_postgres "$PGB/pg_ctl -D $PGH/data -l $PGH/pg.log -o '-p $PG_PORT -k $PGH -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off' -w start >/dev/null"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$D/redis" --save '' --appendonly no \
        --daemonize yes --pidfile "$D/run/redis.pid" >/dev/null
    "$PGB/psql" -qh 127.0.0.1 -p "$PG_PORT" -U postgres \
        -c "CREATE USER netbox WITH PASSWORD 'netbox'" -c "CREATE DATABASE netbox OWNER netbox"
}

# Is pid (from one of our pid files) still one of ours? A stale pid file must not make
# us signal an unrelated process that got the same pid; a zombie counts as gone.
ours() {
    local pid=$1 what=$2
    [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$what" &&
        [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]]
}

# Is pid, a child this script just started, still running (a zombie is not)?
alive() {
    [[ -d /proc/$1 && $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]
}

wait_gone() {
    local pid=$1 what=$2
    for _ in $(seq 1 50); do ours "$pid" "$what" || return 0; sleep 0.2; done
    kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
}

stop_all() {
    local p pid
    # runserver and rqworker run in sessions of their own (setsid): signalling the
    # group also ends the rq scheduler, the worker's child.
    for p in runserver rqworker; do
        [[ -f $D/run/$p.pid ]] || continue
        pid=$(cat "$D/run/$p.pid")
        ours "$pid" "$D/venv/bin/netbox" && { kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; }
    done
    # Wait for them before Redis goes: a worker that loses Redis mid-shutdown retries
    # for seconds and fills its log with tracebacks.
    for p in runserver rqworker; do
        [[ -f $D/run/$p.pid ]] || continue
        wait_gone "$(cat "$D/run/$p.pid")" "$D/venv/bin/netbox"
        rm -f "$D/run/$p.pid"
    done
    if [[ -f $D/run/redis.pid ]]; then
        pid=$(cat "$D/run/redis.pid")
        if ours "$pid" "redis-server"; then kill "$pid" 2>/dev/null || true; wait_gone "$pid" redis-server; fi
        rm -f "$D/run/redis.pid"
    fi
    [[ -d $PGH/data ]] && as_postgres "$PGB/pg_ctl -D $PGH/data -m fast stop >/dev/null" 2>/dev/null || true
}

die() { echo "netbox.sh: $*" >&2; exit 1; }

# start could not bring NetBox up: show why and fail (the EXIT trap stops the rest).
fail_start() {
    local log=$2
    echo "netbox.sh: $1; the last lines of $log:" >&2
    tail -n 30 "$log" >&2 || true
    exit 1
}

case $cmd in
install)
    mkdir -p "$D"
    install_venv
    write_config
    if dump_ok "$DUMP" "$STAMP"; then
        :
    elif dump_ok "$COMMITTED_DUMP" "$COMMITTED_STAMP"; then
        cp "$COMMITTED_DUMP" "$DUMP.tmp"
        mv "$DUMP.tmp" "$DUMP"
        cp "$COMMITTED_STAMP" "$STAMP"
    else
        echo "netbox.sh: no usable committed dump for $VERSIONS: migrating from scratch (about 8 minutes)" >&2
        migrate_dump
    fi
    ;;
dump)
    mkdir -p "$D" "$HERE/netbox"
    install_venv
    write_config
    migrate_dump
    cp "$DUMP" "$COMMITTED_DUMP"
    cp "$STAMP" "$COMMITTED_STAMP"
    echo "netbox.sh: wrote $COMMITTED_DUMP and $COMMITTED_STAMP: commit both"
    ;;
start)
    [[ -f $D/venv/.done && $(cat "$D/venv/.done") == "$VERSIONS" ]] && dump_ok "$DUMP" "$STAMP" ||
        die "$D has no install of $VERSIONS: run tests/tools/netbox.sh install $D first"
    stop_all
    # Whatever fails from here on must not leave a half-started NetBox behind.
    trap stop_all EXIT
    write_config
    start_db
    PGPASSWORD=netbox "$PGB/pg_restore" --no-owner -h 127.0.0.1 -p "$PG_PORT" -U netbox -d netbox "$DUMP"
    DJANGO_SUPERUSER_PASSWORD=admin123admin netbox createsuperuser --no-input \
        --username admin --email admin@example.com >/dev/null
    NETBOX_ROOT="$D/root" setsid "$D/venv/bin/netbox" runserver "127.0.0.1:$HTTP_PORT" --noreload \
        >"$D/run/runserver.log" 2>&1 </dev/null &
    echo $! >"$D/run/runserver.pid"
    NETBOX_ROOT="$D/root" setsid "$D/venv/bin/netbox" rqworker high default low \
        >"$D/run/rqworker.log" 2>&1 </dev/null &
    echo $! >"$D/run/rqworker.pid"
    url="http://127.0.0.1:$HTTP_PORT"
    deadline=$((SECONDS + START_TIMEOUT))
    while :; do
        # Alive, not "ours": until it has exec'd, a child's command line is still this
        # script's (a busy machine showed that window as "rqworker exited").
        alive "$(cat "$D/run/runserver.pid")" || fail_start "runserver exited" "$D/run/runserver.log"
        alive "$(cat "$D/run/rqworker.pid")" || fail_start "rqworker exited" "$D/run/rqworker.log"
        code=$(curl -s -m 10 -o /dev/null -w '%{http_code}' "$url/api/status/" || true)
        # 403: up, and login required (the default).
        if [[ $code == 403 || $code == 200 ]]; then
            grep -q 'Listening on' "$D/run/rqworker.log" && break
            ((SECONDS < deadline)) || fail_start "rqworker not listening after ${START_TIMEOUT} s" "$D/run/rqworker.log"
        fi
        ((SECONDS < deadline)) || fail_start "no answer from $url/api/status/ after ${START_TIMEOUT} s (last: ${code:-none})" "$D/run/runserver.log"
        sleep 0.5
    done
    token_json=$(curl -sS -f -m 30 -X POST -H 'Content-Type: application/json' \
        -d '{"username": "admin", "password": "admin123admin"}' \
        "$url/api/users/tokens/provision/") || fail_start "provisioning a token failed" "$D/run/runserver.log"
    # v2 token: `Authorization: Bearer nbt_<key>.<token>`.
    token=$(printf '%s' "$token_json" | "$D/venv/bin/python" -c \
        'import json, sys; t = json.load(sys.stdin); print("nbt_%s.%s" % (t["key"], t["token"]))') ||
        fail_start "unexpected token answer: $token_json" "$D/run/runserver.log"
    echo "NETBOX_URL=$url"
    echo "NETBOX_TOKEN=$token"
    echo "NETBOX_MANAGE=$D/manage"
    echo "NETBOX_TOKEN_JSON=$token_json"
    trap - EXIT
    ;;
stop) stop_all ;;
*) echo "netbox.sh: install, start, stop or dump" >&2; exit 64 ;;
esac
