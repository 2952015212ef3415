"""The recorded cases (tests/cases: Puppet 7.23's and Hiera 3.10's answers) through the Python
module: every Hiera 5 query that `hiera lookup` answers with the case's default flags (values, keys
not found, lookup errors, other errors, --explain texts) and every Hiera 3 query (values through
Hiera3.lookup, the command's printed text through Hiera3.render)."""
import json, os

import pytest

import hiera
from conftest import CASES


def _load(case):
    with open(os.path.join(CASES, case, "case.json")) as f:
        spec = json.load(f)
    with open(os.path.join(CASES, case, "expected.json")) as f:
        return spec, json.load(f)


def _queries(engine):
    out = []
    for case in sorted(os.listdir(CASES)):
        spec, exp = _load(case)
        if spec.get("engine", "puppet") != engine or "args" in spec or spec.get("hiera_args") or spec.get("needs"):
            continue
        for i, (q, e) in enumerate(zip(spec["queries"], exp)):
            if q.get("args") or q.get("hiera_args"):
                continue
            if engine == "hiera3" and isinstance(q["key"], list):
                continue  # the command's own flags (-y FILE, -m, ...) after the key
            if engine == "puppet" and "output" in e and not (q.get("explain") or q.get("explain_options")):
                continue  # --render-as yaml / s: the command's text forms, not the module's
            if engine == "puppet" and (q.get("explain") or q.get("explain_options")) and q.get("render"):
                continue
            out.append(pytest.param(case, i, id=f"{case}#{i}"))
    return out


_handles = {}


def _hiera5(case, spec, q):
    d = os.path.join(CASES, case)
    env = q.get("environment", spec.get("environment", "production"))
    key = (case, env)
    if key not in _handles:
        _handles[key] = hiera.Hiera(confdir=d, codedir=d, environmentpath=os.path.join(d, "environments"),
                                    hiera_config=os.path.join(d, "hiera.yaml"), environment=env)
    return _handles[key]


def _plain(v):
    """A value as `--render-as json` shows it (Sensitive redacted)."""
    if isinstance(v, hiera.Sensitive):
        return "Sensitive [value redacted]"
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {(k if isinstance(k, str) else json.dumps(_plain(list(k)) if isinstance(k, tuple) else k)): _plain(x)
                for k, x in v.items()}
    return v


@pytest.mark.parametrize("case,i", _queries("puppet"))
def test_hiera5_case(case, i, monkeypatch):
    spec, exp = _load(case)
    q, e = spec["queries"][i], exp[i]
    d = os.path.join(CASES, case)
    monkeypatch.chdir(d)
    merge = q.get("merge")
    if isinstance(merge, dict):  # as `hiera lookup --merge deep --knock-out-prefix ...` makes it
        m = {"strategy": merge["strategy"]}
        if merge["strategy"] == "deep":
            m["sort_merged_arrays"] = bool(merge.get("sort_merged_arrays"))
            m["merge_hash_arrays"] = bool(merge.get("merge_hash_arrays"))
            if merge.get("knockout_prefix") is not None:
                m["knockout_prefix"] = merge["knockout_prefix"]
        merge = m
    kw = dict(node=spec.get("node", "node1.example.com"), facts=os.path.join(d, spec.get("facts", "facts.yaml")),
              merge=merge, type=q.get("type"))
    if "default" in q:
        kw["default"] = str(q["default"])
    keys = q["key"] if isinstance(q["key"], list) else [q["key"]]
    try:
        h = _hiera5(case, spec, q)
    except hiera.Error as err:
        assert "error" in e, f"{err}"
        return
    if "error" in e and e.get("message") in ("source sequence is illegal/malformed utf-8",
                                             "partial character in source, but hit end") or \
            "error" in e and "not allowed in JSON" in (e.get("message") or ""):
        # what `--render-as json` cannot print: the module gives the value (Python holds it)
        v = h.lookup(keys, **kw)
        with pytest.raises((ValueError, UnicodeError)):
            json.dumps(v, allow_nan=False, ensure_ascii=False).encode("utf-8")
        return
    if (q.get("explain") or q.get("explain_options")) and "error" in e:
        with pytest.raises(hiera.Error):
            h.explain(keys, options=bool(q.get("explain_options")) and not q.get("explain"), **kw)
        return
    if q.get("explain") or q.get("explain_options"):
        text = h.explain(keys, options=bool(q.get("explain_options")) and not q.get("explain"), **kw)
        want = e["output"].replace("<CASE>", d)
        assert text == want or text + "\n" == want
        return
    if "value" in e:
        v = h.lookup(keys, **kw)
        assert json.dumps(_plain(v)) == json.dumps(e["value"])
    elif "not_found" in e:
        with pytest.raises(hiera.NotFound):
            h.lookup(keys, **kw)
    elif "lookup_error" in e:
        with pytest.raises(hiera.LookupError):
            h.lookup(keys, **kw)
    elif "error" in e:
        with pytest.raises(hiera.Error) as ei:
            h.lookup(keys, **kw)
        assert not isinstance(ei.value, hiera.NotFound)
        if q.get("match_message", spec.get("match_messages")) and e.get("message") is not None:
            assert ei.value.message == e["message"].replace("<CASE>", d)
    else:
        pytest.fail(f"unknown expectation {e}")


@pytest.mark.parametrize("case,i", _queries("hiera3"))
def test_hiera3_case(case, i, monkeypatch):
    spec, exp = _load(case)
    q, e = spec["queries"][i], exp[i]
    d = os.path.join(CASES, case)
    monkeypatch.chdir(d)  # relative datadirs are relative to the working directory, as in Ruby
    scope = {k: str(v) for k, v in (q.get("scope") or spec.get("scope") or {}).items()}
    res = q.get("resolution", "priority")
    kw = {"default": str(q["default"])} if "default" in q else {}
    keys = q["key"] if isinstance(q["key"], list) else [q["key"]]
    try:
        h = hiera.Hiera3(os.path.join(d, "hiera.yaml"))
        if "output" in e:
            text = h.render(keys[0], scope=scope, resolution=res, format=q.get("format", "ruby"), **kw)
            got = text.replace(d, "<CASE>")
            assert got == e["output"] or (q.get("help_prefix") and got.endswith(e["output"]))
            assert e.get("status", 0) == 0
            return
        text = h.render(keys[0], scope=scope, resolution=res, format="json", **kw)
    except hiera.Error as err:
        assert "error" in e or e.get("status", 0) != 0, f"{err}"
        return
    assert "error" not in e, f"expected an error, got {text!r}"
    assert json.loads(text) == e["value"]
    # the value as Python data: the same as the command's JSON (nil: not found)
    if isinstance(e["value"], dict) and "1" in e["value"] and "true" in e["value"]:
        return  # keys 1 and true are one key in a Python dict (1 == True): the JSON text above is checked
    try:
        v = h.lookup(keys[0], scope=scope, resolution=res, **kw)
    except hiera.NotFound:
        v = None
    assert json.dumps(_plain(v)) == json.dumps(json.loads(text))
