"""What the SDK scripts in tests/sdk/ share: named checks that keep going after a
failure (so one run reports every finding), the emulator's control API, and a
report the Rust test prints.

A script calls `step(name)` around each story and `expect_error(...)` for each
documented error; `finish()` prints the report and exits 1 when anything failed.
"""
import contextlib
import json
import sys
import traceback
import urllib.request

_failures = []
_passed = []


def fail(name, detail):
    _failures.append(f"{name}: {detail}")
    print(f"FAIL {name}: {detail}", flush=True)


def ok(name):
    _passed.append(name)
    print(f"ok   {name}", flush=True)


def check(name, cond, detail=""):
    """One assertion that does not stop the script."""
    if cond:
        ok(name)
    else:
        fail(name, detail or "condition false")
    return cond


@contextlib.contextmanager
def step(name):
    """A story: any exception inside it is a failure of `name`, and the script goes on."""
    try:
        yield
        ok(name)
    except Exception as e:  # noqa: BLE001 - the report names it
        tb = traceback.format_exc(limit=4)
        fail(name, f"{type(e).__name__}: {e}\n{tb}")


def expect_error(name, call, exc_type, check_exc=None):
    """`call()` must raise exactly the SDK's `exc_type` (as the real service's answer
    would make it raise); `check_exc(e)` returns None or what is wrong with it."""
    try:
        got = call()
    except exc_type as e:
        problem = check_exc(e) if check_exc else None
        if problem:
            fail(name, f"{type(e).__name__} raised, but {problem}")
        else:
            ok(name)
        return
    except Exception as e:  # noqa: BLE001 - the wrong type is the finding
        fail(name, f"expected {exc_type.__name__}, got {type(e).__name__}: {e}")
        return
    fail(name, f"expected {exc_type.__name__}, the call returned {got!r}")


def control(endpoint, method, path, body=None):
    """The emulator's unsigned control API (`/_emulator/...`)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        endpoint.rstrip("/") + "/_emulator" + path,
        data=data,
        method=method,
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        text = r.read().decode()
        return json.loads(text) if text else None


def finish():
    print(f"\n{len(_passed)} checks passed, {len(_failures)} failed", flush=True)
    if _failures:
        print("\nFailures:", flush=True)
        for f in _failures:
            print(f"- {f}", flush=True)
        sys.exit(1)
