"""Cloud DNS's own API description: the discovery document `dns.v1.json` that
google-api-python-client ships (loaded from the installed package, not vendored).

`Recorder` keeps every HTTP answer an SDK got; `validate_all` finds each one's method
in the document by HTTP method and path, and checks the body against the method's
response schema: a field the schema does not declare, a value of the wrong JSON type
(an `int64`/`uint64` must be a decimal string, an `int32` a number), or a value
outside an enum is a failure. Error answers (no schema in the document) are checked
against the googleapis v1 error format instead.
"""
import json
import os
import re

import googleapiclient

DOC_PATH = os.path.join(
    os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents", "dns.v1.json"
)


def load():
    with open(DOC_PATH) as f:
        return json.load(f)


def _methods(doc):
    out = []

    def walk(resources):
        for r in resources.values():
            for m in r.get("methods", {}).values():
                out.append(m)
            walk(r.get("resources", {}))

    walk(doc["resources"])
    return out


def _pattern(path):
    rx = re.sub(r"\{\+[^}]+\}", "(.+)", path)
    rx = re.sub(r"\{[^}]+\}", "([^/]+)", rx)
    return re.compile("^" + rx + "$")


class Description:
    def __init__(self):
        self.doc = load()
        self.schemas = self.doc["schemas"]
        ms = _methods(self.doc)
        # Most specific first: templates without `{+name}` and with more literal text.
        ms.sort(key=lambda m: ("{+" in m["path"], -len(re.sub(r"\{[^}]+\}", "", m["path"]))))
        self.methods = [(m, _pattern(m["path"])) for m in ms]

    def method_for(self, http_method, path):
        """The discovery method serving `http_method path` (path from `dns/v1/...`)."""
        for m, rx in self.methods:
            if m["httpMethod"] == http_method and rx.match(path):
                return m
        return None

    def validate(self, value, schema, where, errs):
        if "$ref" in schema:
            name = schema["$ref"]
            schema = self.schemas[name]
        else:
            name = where
        t = schema.get("type")
        if t == "object" or "properties" in schema:
            if not isinstance(value, dict):
                errs.append(f"{where}: expected an object, got {json.dumps(value)}")
                return
            props = schema.get("properties", {})
            extra = schema.get("additionalProperties")
            for k, v in value.items():
                if k in props:
                    self.validate(v, props[k], f"{where}.{k}", errs)
                elif extra is not None:
                    self.validate(v, extra, f"{where}.{k}", errs)
                else:
                    errs.append(f"{where}.{k}: a field the description ({name}) does not declare")
        elif t == "array":
            if not isinstance(value, list):
                errs.append(f"{where}: expected an array, got {json.dumps(value)}")
                return
            for i, v in enumerate(value):
                self.validate(v, schema.get("items", {}), f"{where}[{i}]", errs)
        elif t == "string":
            if not isinstance(value, str):
                errs.append(f"{where}: expected a string, got {json.dumps(value)}")
                return
            fmt = schema.get("format")
            if fmt in ("int64", "uint64") and not re.fullmatch(r"-?[0-9]+", value):
                errs.append(f"{where}: {fmt} {value!r} is not a decimal string")
            if "enum" in schema and value not in schema["enum"]:
                errs.append(f"{where}: {value!r} is not one of {schema['enum']}")
        elif t == "integer":
            if not isinstance(value, int) or isinstance(value, bool):
                errs.append(f"{where}: expected an integer, got {json.dumps(value)}")
            elif schema.get("format") == "int32" and not -(2**31) <= value < 2**31:
                errs.append(f"{where}: {value} does not fit int32")
            elif schema.get("format") == "uint32" and not 0 <= value < 2**32:
                errs.append(f"{where}: {value} does not fit uint32")
        elif t == "boolean":
            if not isinstance(value, bool):
                errs.append(f"{where}: expected a boolean, got {json.dumps(value)}")
        elif t == "number":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                errs.append(f"{where}: expected a number, got {json.dumps(value)}")

    def validate_error(self, body, where, errs):
        """googleapis v1 errors: {"error": {code, message, errors: [{message, domain,
        reason, location?, locationType?}], status}}."""
        try:
            v = json.loads(body)
        except ValueError:
            errs.append(f"{where}: the error body is not JSON: {body[:200]!r}")
            return
        e = v.get("error") if isinstance(v, dict) else None
        if not isinstance(e, dict) or set(v) != {"error"}:
            errs.append(f"{where}: not a googleapis error: {body[:200]}")
            return
        allowed = {"code", "message", "errors", "status", "details"}
        for k in e:
            if k not in allowed:
                errs.append(f"{where}.error.{k}: not a googleapis error field")
        if not isinstance(e.get("code"), int) or not isinstance(e.get("message"), str):
            errs.append(f"{where}: code/message missing or mistyped")
        for i, item in enumerate(e.get("errors", [])):
            for k in item:
                if k not in {"message", "domain", "reason", "location", "locationType"}:
                    errs.append(f"{where}.error.errors[{i}].{k}: not a googleapis error field")
            if not isinstance(item.get("reason"), str):
                errs.append(f"{where}.error.errors[{i}].reason missing")


class Recorder:
    """Every (HTTP method, path, status, body) an SDK received."""

    def __init__(self):
        self.seen = []

    def add(self, method, url, status, body):
        path = re.sub(r"^https?://[^/]+/", "", url).split("?")[0]
        self.seen.append((method, path, status, body))

    def validate_all(self, desc):
        """`(answers checked, problems)`."""
        errs = []
        checked = 0
        for method, path, status, body in self.seen:
            if path.startswith("_emulator"):
                continue
            where = f"{method} /{path} -> {status}"
            checked += 1
            if status >= 400:
                if status == 502 and body.lstrip().startswith("<"):
                    continue  # Google's front end answers 502 with an HTML page.
                desc.validate_error(body, where, errs)
                continue
            m = desc.method_for(method, path)
            if m is None:
                errs.append(f"{where}: no method of the discovery document serves it")
                continue
            ref = m.get("response", {}).get("$ref")
            if ref is None:
                if body.strip():
                    errs.append(f"{where}: {m['id']} answers no body, the emulator sent {body[:200]!r}")
                continue
            try:
                value = json.loads(body)
            except ValueError:
                errs.append(f"{where}: {m['id']}'s answer is not JSON: {body[:200]!r}")
                continue
            self.validate_one(desc, value, ref, f"{m['id']}:{ref}", errs)
        return checked, errs

    @staticmethod
    def validate_one(desc, value, ref, where, errs):
        desc.validate(value, {"$ref": ref}, where, errs)
