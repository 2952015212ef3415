#!/usr/bin/env python3
"""hiera lsp over its pipes (tests/lsp/client.py): every method, the answers checked against
`hiera lookup`, `hiera check` and the files of the fixture (tests/lsp/repo, copied to a scratch
folder), unsaved text, syntax errors, malformed input, unknown methods, cancellation, a huge file,
a client that goes away, and the shutdown sequence.

usage: check.py --hiera build/hiera [--only GROUP ...]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client as client_module  # noqa: E402
from client import Client, Timeout, uri_of  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NODE = "web01.example.com"
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL %s %s" % (what, detail))


def start(hiera, repo, options=None, jobs=None, utf8=False):
    argv = [hiera, "lsp"] + (["--jobs", str(jobs)] if jobs else [])
    c = Client(argv)
    opts = {"node": NODE, "factsDir": os.path.join(repo, "facts")} if options is None else options
    c.initialize(repo, opts, utf8=utf8)
    return c


def hiera_lookup(hiera, repo, key, tmp):
    """`hiera lookup` of key for NODE, the repository linked as an environment (as hiera check does)."""
    code = os.path.join(tmp, "code")
    envs = os.path.join(tmp, "envs")
    os.makedirs(code, exist_ok=True)
    os.makedirs(envs, exist_ok=True)
    link = os.path.join(envs, "production")
    if not os.path.islink(link):
        os.symlink(repo, link)
    r = subprocess.run([hiera, "lookup", "--codedir", code, "--confdir", code, "--environmentpath", envs,
                        "--node", NODE, "--facts", os.path.join(repo, "facts", NODE + ".json"),
                        "--render-as", "json", key], capture_output=True, text=True)
    return json.loads(r.stdout) if r.returncode == 0 else None


def hiera_check(hiera, repo, *args):
    r = subprocess.run([hiera, "check", "--format", "json", "--facts-dir", os.path.join(repo, "facts"), *args, repo],
                       capture_output=True, text=True)
    return json.loads(r.stdout)


def lookup_with(hiera, args, key, node=NODE):
    """`hiera lookup` of key for node with the options args (a code directory, facts...), as JSON,
    or None when it fails or finds nothing."""
    r = subprocess.run([hiera, "lookup", *args, "--node", node, "--render-as", "json", key],
                       capture_output=True, text=True, env=dict(os.environ, HIERA_CACHE_DIR="off"))
    return json.loads(r.stdout) if r.returncode == 0 else None


def line_of(path, needle):
    """The first line that holds needle (a top-level key: a line that starts with it)."""
    with open(path) as f:
        lines = f.read().split("\n")
    for i, l in enumerate(lines):
        if l.startswith(needle):
            return i, 0
    for i, l in enumerate(lines):
        if needle in l:
            return i, l.index(needle)
    raise KeyError(needle)


def test_protocol(hiera, repo):
    # requests before initialize, and initialize itself
    c = Client([hiera, "lsp"])
    r = c.response(c.request_async("textDocument/hover", {}))
    check(r.get("error", {}).get("code") == -32002, "request before initialize: ServerNotInitialized", r)
    init = c.request("initialize", {"rootUri": uri_of(repo), "capabilities": {},
                                    "initializationOptions": {"node": NODE, "factsDir": os.path.join(repo, "facts")}})
    caps = init["capabilities"]
    for cap in ("hoverProvider", "definitionProvider", "referencesProvider", "completionProvider",
                "codeActionProvider", "documentSymbolProvider"):
        check(caps.get(cap), "capability " + cap)
    check(caps["textDocumentSync"]["change"] == 2, "incremental sync")
    r = c.response(c.request_async("initialize", {}))
    check(r.get("error", {}).get("code") == -32600, "second initialize refused", r)

    # malformed input: the server answers and stays alive
    c.send_raw(b"Content-Length: 9\r\n\r\n{not json")
    r = c.response(("null", 0), 10) if False else None
    t0 = time.monotonic()
    while time.monotonic() - t0 < 10:
        errs = [m for k, m in list(c.responses.items()) if isinstance(k, tuple)]
        if errs:
            break
        time.sleep(0.05)
    check(any(m["error"]["code"] == -32700 for m in errs), "bad JSON: ParseError", errs)
    c.send_raw(b"X-Whatever: 1\r\n\r\n")
    c.send({"jsonrpc": "2.0", "id": 900, "params": {}})  # no method
    r = c.response(900)
    check(r.get("error", {}).get("code") == -32600, "no method: InvalidRequest", r)
    c.send_raw(b"Content-Length: 2\r\n\r\n[]")
    r = c.response(c.request_async("no/such/method", {}))
    check(r.get("error", {}).get("code") == -32601, "unknown method: MethodNotFound", r)
    c.notify("no/such/notification", {"x": 1})
    c.notify("$/setTrace", {"value": "off"})
    c.notify("$/cancelRequest", {"id": 12345})
    r = c.response(c.request_async("textDocument/hover", [1, 2]))
    check(r.get("error", {}).get("code") == -32602, "params not an object: InvalidParams", r)
    r = c.response(c.request_async("textDocument/hover", {"textDocument": {"uri": "file:///nonexistent/x.yaml"},
                                                          "position": {"line": 0, "character": 0}}))
    check("error" in r, "hover on a file that is neither open nor readable: an error", r)
    r = c.response(c.request_async("textDocument/hover", {"textDocument": {"uri": uri_of(os.path.join(repo, "data/common.yaml"))},
                                                          "position": {"line": -5, "character": 99999}}))
    check("result" in r, "a position out of range is clamped", r)
    # still alive: a lookup answers
    res = c.request("hiera/lookup", {"key": "profile::base::port"})
    check(res["nodes"][0]["value"] == 2222, "alive after malformed input", res)
    # shutdown: requests refused, exit 0
    c.request("shutdown", None)
    r = c.response(c.request_async("textDocument/hover", {}))
    check(r.get("error", {}).get("code") == -32600, "request after shutdown refused", r)
    c.notify("exit", None)
    check(c.proc.wait(10) == 0, "exit after shutdown: status 0")
    c.close()


def test_features(hiera, repo, tmp):
    c = start(hiera, repo)
    common = os.path.join(repo, "data/common.yaml")
    web = os.path.join(repo, "data/role/web.yaml")
    node = os.path.join(repo, "data/nodes/%s.yaml" % NODE)
    base_pp = os.path.join(repo, "site-modules/profile/manifests/base.pp")
    site_pp = os.path.join(repo, "manifests/site.pp")
    u = c.open(common)

    # diagnostics: hiera check's findings for the file, rule as code, a link to the README
    expected = [f for f in hiera_check(hiera, repo)["findings"] if f["file"].endswith("data/common.yaml")]
    diags = c.diagnostics(u)
    got = sorted((d["range"]["start"]["line"] + 1, d["code"]) for d in diags)
    want = sorted((f["line"], f["rule"]) for f in expected)
    check(got == want and got, "diagnostics are hiera check's", (got, want))
    check(all(d["codeDescription"]["href"].startswith("file://") and "#the-rules" in d["codeDescription"]["href"]
              for d in diags), "diagnostics link to the README's rules")

    # unsaved text: a trap and an unknown parameter appear without saving
    with open(common) as f:
        text = f.read()
    nlines = text.count("\n")
    c.change(u, "profile::base::userz: {}\nprofile::base::mode: 0755\n", ((nlines, 0), (nlines, 0)))
    diags = c.diagnostics(u)
    codes = {(d["range"]["start"]["line"], d["code"]) for d in diags}
    check((nlines, "unknown-parameter") in codes and (nlines + 1, "yaml-octal") in codes,
          "diagnostics of the unsaved text", codes)
    with open(common) as f:
        check(f.read() == text, "the file on disk is untouched")
    # the quick fix of "did you mean"
    dym = [d for d in diags if "did you mean 'users'" in d["message"]]
    check(dym, "a did-you-mean finding", diags)
    if dym:
        acts = c.request("textDocument/codeAction", {"textDocument": {"uri": u}, "range": dym[0]["range"],
                                                     "context": {"diagnostics": dym, "only": ["quickfix"]}})
        edits = [e for a in acts for dc in a["edit"]["documentChanges"] for e in dc["edits"]]
        check(len(acts) == 1 and acts[0]["kind"] == "quickfix" and edits[0]["newText"] == "users"
              and edits[0]["range"]["start"] == {"line": nlines, "character": 15}
              and edits[0]["range"]["end"] == {"line": nlines, "character": 20}, "quick fix replaces userz by users", acts)

    # a syntax error: that alone, and the rest of the workspace still answers
    v = c.change(u, "  bad: [unclosed\n", ((nlines, 0), (nlines, 0)))
    diags = c.diagnostics(u)
    check(len(diags) == 1 and diags[0]["code"] == "data-syntax" and diags[0]["severity"] == 1,
          "a file that does not parse gives its syntax error only", diags)
    with open(web) as f:
        web_text = f.read()
    uw = c.open(web, web_text + "profile::base::flag: yes\n")
    wd = c.diagnostics(uw)
    check(any(d["code"] == "yaml-boolean" for d in wd) and not any(d["code"] == "data-syntax" for d in wd),
          "another file's diagnostics while one does not parse", wd)
    h = c.request("textDocument/hover", c.pos(uw, *line_of(web, "profile::base::role_name")))
    check(h and "web" in h["contents"]["value"], "hover in another file while one does not parse", h)
    c.change(u, text)  # back to the saved text (whole-document change)
    diags = c.diagnostics(u)
    check(sorted((d["range"]["start"]["line"] + 1, d["code"]) for d in diags) == want, "diagnostics back", diags)

    # hover: the value for the node (as hiera lookup), each merged part's level and file:line,
    # lookup_options, the class parameter's type and whether the value matches
    l, ch = line_of(common, "profile::base::users:")
    h = c.request("textDocument/hover", c.pos(u, l, ch + 3))
    md = h["contents"]["value"]
    want_users = hiera_lookup(hiera, repo, "profile::base::users", tmp)
    check(want_users and all(k in md for k in want_users), "hover shows the merged value", md)
    for f, level in ((common, "Common data"), (web, "Per-role data"), (node, "Per-node data")):
        check("%s (Environment) — %s:" % (level, f) in md, "hover names the merged part " + level, md)
    check("merge: deep" in md, "hover shows lookup_options", md)
    check("type `Hash`" in md and "the value matches `Hash`" in md, "hover shows the parameter type and match", md)
    l, ch = line_of(common, "profile::base::port")
    h = c.request("textDocument/hover", c.pos(u, l, ch + 1))
    check("2222" in h["contents"]["value"] and "nodes/%s.yaml:" % NODE in h["contents"]["value"],
          "hover: the node level wins", h)
    # a fact in an interpolation
    l, ch = line_of(common, "facts.networking.fqdn")
    h = c.request("textDocument/hover", c.pos(u, l, ch + 3))
    check("web01.example.com" in h["contents"]["value"], "hover on a fact", h)
    # hover in a manifest: lookup('key') and a class parameter
    up = c.open(site_pp, lang="puppet")
    l, ch = line_of(site_pp, "profile::base::role_name")
    h = c.request("textDocument/hover", c.pos(up, l, ch + 5))
    check(h and "web" in h["contents"]["value"], "hover on lookup() in a manifest", h)
    ub = c.open(base_pp, lang="puppet")
    l, ch = line_of(base_pp, "$port")
    h = c.request("textDocument/hover", c.pos(ub, l, ch + 2))
    check(h and "2222" in h["contents"]["value"] and "Integer" in h["contents"]["value"]
          and "matches" in h["contents"]["value"], "hover on a class parameter", h)

    # definition: every level in hierarchy order, then the class parameter
    l, ch = line_of(common, "profile::base::users:")
    defs = c.request("textDocument/definition", c.pos(u, l, ch + 1))
    uris = [d["uri"] for d in defs]
    check(uris == [uri_of(node), uri_of(web), uri_of(common), uri_of(base_pp)], "definition: levels then parameter", uris)
    check(defs[2]["range"]["start"] == {"line": l, "character": 0}, "definition: the key's position", defs[2])
    # from %{lookup('k')}
    l, ch = line_of(common, "lookup('profile::base::role_name')")
    defs = c.request("textDocument/definition", c.pos(u, l, ch + 10))
    check([d["uri"] for d in defs][:2] == [uri_of(web), uri_of(common)], "definition from %{lookup()}", defs)
    # from %{alias('k')} and %{hiera('k')} (an unsaved document): k's levels, then its parameter
    nu = uri_of(os.path.join(repo, "data/nodes/other.yaml"))
    c.open(os.path.join(repo, "data/nodes/other.yaml"),
           "---\nx: \"%{alias('profile::base::admins')}\"\ny: \"%{hiera('profile::base::port')}\"\n")
    defs = c.request("textDocument/definition", c.pos(nu, 1, 14))
    check([(d["uri"], d["range"]["start"]["line"]) for d in defs] == [(uri_of(web), line_of(web, "profile::base::admins:")[0])],
          "definition from %{alias()}: the only level that defines it", defs)
    defs = c.request("textDocument/definition", c.pos(nu, 2, 14))
    check([d["uri"] for d in defs] == [uri_of(node), uri_of(common), uri_of(base_pp)]
          and defs[0]["range"]["start"]["line"] == line_of(node, "profile::base::port:")[0]
          and defs[1]["range"]["start"]["line"] == line_of(common, "profile::base::port:")[0],
          "definition from %{hiera()}: the levels in hierarchy order, then the parameter", defs)
    # from lookup('k') in a manifest, k defined in data only
    ub_defs = c.request("textDocument/definition", c.pos(ub, *line_of(base_pp, "profile::base::admins")))
    check([d["uri"] for d in ub_defs] == [uri_of(web)], "definition from lookup() in a manifest", ub_defs)
    # from a hiera.yaml path to the node's data file
    hy = os.path.join(repo, "hiera.yaml")
    uh = c.open(hy)
    l, ch = line_of(hy, "role/%{facts.role}.yaml")
    defs = c.request("textDocument/definition", c.pos(uh, l, ch + 3))
    check([d["uri"] for d in defs] == [uri_of(web)], "definition from a hiera.yaml path", defs)

    # references: manifests' lookup(), the parameter's binding, interpolations in data
    l, ch = line_of(common, "profile::base::role_name:")
    refs = c.request("textDocument/references", dict(c.pos(u, l, 2), context={"includeDeclaration": False}))
    ruris = sorted(set(r["uri"] for r in refs))
    check(ruris == sorted([uri_of(site_pp), uri_of(base_pp), uri_of(common)]), "references", refs)

    # completion: class parameters (type, default), keys of other levels, facts, merge strategies
    cu = uri_of(os.path.join(repo, "data/nodes/new.yaml"))
    c.open(os.path.join(repo, "data/nodes/new.yaml"), "---\nprofile::base::\n")
    items = c.request("textDocument/completion", c.pos(cu, 1, 15))["items"]
    by = {i["label"]: i for i in items}
    check(by.get("profile::base::port", {}).get("detail") == "Integer"
          and "default: `22`" in by["profile::base::port"]["documentation"]["value"], "completion: a parameter", by.get("profile::base::port"))
    check("profile::base::ntp_servers" in by and "no default" in by["profile::base::ntp_servers"]["documentation"]["value"],
          "completion: a parameter without default")
    # a key only data defines (no class parameter): offered with the files that define it
    adm = by.get("profile::base::admins", {})
    check(adm.get("detail") == "key (1 file)" and adm.get("insertText") == "profile::base::admins: "
          and "Per-role data — %s" % web in adm.get("documentation", {}).get("value", ""),
          "completion: a key defined at another level only (no parameter)", adm)
    c.change(cu, "---\nx: \"%{facts.networking.\"\n")
    items = c.request("textDocument/completion", c.pos(cu, 1, 25))["items"]
    check({"fqdn", "hostname", "ip"} <= {i["label"] for i in items}, "completion: facts", items)
    c.change(cu, "---\nx: \"%{trusted.\"\n")
    items = c.request("textDocument/completion", c.pos(cu, 1, 14))["items"]
    check("certname" in {i["label"] for i in items}, "completion: trusted", items)
    c.change(cu, "---\nlookup_options:\n  a:\n    merge: \n")
    items = c.request("textDocument/completion", c.pos(cu, 3, 11))["items"]
    check({i["label"] for i in items} == {"first", "unique", "hash", "deep"}, "completion: merge strategies", items)
    c.change(cu, "---\nx: \"%{lookup('profile::base::r\"\n")
    items = c.request("textDocument/completion", c.pos(cu, 1, 30))["items"]
    check("profile::base::role_name" in {i["label"] for i in items}, "completion: keys in lookup()", items)

    # code action: move a key to another level
    l, ch = line_of(common, "profile::base::port")
    acts = c.request("textDocument/codeAction", {"textDocument": {"uri": u},
                                                 "range": {"start": {"line": l, "character": 1}, "end": {"line": l, "character": 1}},
                                                 "context": {"diagnostics": []}})
    moves = [a for a in acts if a["kind"] == "refactor.move"]
    to_web = [a for a in moves if "Per-role data" in a["title"]]
    check(to_web, "move action to the role level", [a["title"] for a in acts])
    if to_web:
        dc = {d["textDocument"]["uri"]: d["edits"] for d in to_web[0]["edit"]["documentChanges"]}
        check(dc[u][0]["newText"] == "" and dc[u][0]["range"]["start"]["line"] == l
              and dc[uri_of(web)][0]["newText"].strip() == "profile::base::port: 22", "move: the edits", dc)
    check(not [a for a in moves if "Per-node data" in a["title"]], "no move to a level that defines the key", moves)

    # document symbols: keys and nested keys
    syms = c.request("textDocument/documentSymbol", {"textDocument": {"uri": u}})
    names = [s["name"] for s in syms]
    check(names[:2] == ["lookup_options", "profile::base::ntp_servers"], "symbols: top-level keys", names)
    users = [s for s in syms if s["name"] == "profile::base::users"][0]
    check([k["name"] for k in users.get("children", [])] == ["alice"] and users["children"][0]["children"][0]["name"] == "uid",
          "symbols: nested keys", users)

    # hiera/lookup: as hiera lookup answers
    for key in ("profile::base::users", "profile::base::motd", "profile::base::port", "profile::base::ntp_servers"):
        res = c.request("hiera/lookup", {"key": key, "explain": True})
        n = res["nodes"][0]
        check(n["found"] and n["value"] == hiera_lookup(hiera, repo, key, tmp), "hiera/lookup " + key, n)
    check("Searching for" in res["nodes"][0].get("explanation", ""), "hiera/lookup explains")
    r = c.response(c.request_async("hiera/lookup", {"key": "x", "node": "nobody"}))
    check(r.get("error", {}).get("code") == -32602, "hiera/lookup of a node not configured", r)
    r = c.response(c.request_async("hiera/lookup", {}))
    check(r.get("error", {}).get("code") == -32602, "hiera/lookup without a key", r)

    # settings: another node (none: no facts) changes the answers
    c.notify("workspace/didChangeConfiguration", {"settings": {"hiera": {"node": [], "factsDir": None}}})
    deadline = time.monotonic() + 30
    val = None
    while time.monotonic() < deadline:
        res = c.request("hiera/lookup", {"key": "profile::base::port"})
        val = res["nodes"][0].get("value")
        if res["nodes"][0]["node"] is None:
            break
        time.sleep(0.1)
    check(val == 22, "didChangeConfiguration: without a node the common value", val)

    # didClose clears the document's diagnostics
    since = len(c.notes)
    c.notify("textDocument/didClose", {"textDocument": {"uri": uw}})
    _, m = c.wait_note(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uw
                       and m["params"]["diagnostics"] == [], 10, since)
    check(m is not None, "didClose clears the diagnostics")
    # ... and none come back for it: a check of its text running when it closed does not publish
    # (the configuration change above may have started one)
    c.request("hiera/lookup", {"key": "profile::base::port"})
    time.sleep(1.0)
    later = [n for _, n in c.notes[since:] if n.get("method") == "textDocument/publishDiagnostics"
             and n["params"]["uri"] == uw]
    check(later and later[-1]["params"]["diagnostics"] == [], "a closed document's diagnostics stay cleared",
          [len(n["params"]["diagnostics"]) for n in later])
    check(c.shutdown() == 0, "shutdown")


def check_findings(hiera, args):
    """hiera check's findings (JSON) with the options args, their files absolute."""
    r = subprocess.run([hiera, "check", "--format", "json", *args], capture_output=True, text=True,
                       env=dict(os.environ, HIERA_CACHE_DIR="off"), cwd="/")
    if not r.stdout.startswith("{"):
        return None
    fs = json.loads(r.stdout)["findings"]
    for f in fs:
        f["file"] = os.path.join("/", f["file"])
    return fs


def wait_lookup(c, key, want, node=None, timeout=30):
    """hiera/lookup of key (for node, or the first node) until it answers want (the workspace is
    read again in the background after a change of settings): the last answer's node entry."""
    end = time.monotonic() + timeout
    while True:
        res = c.request("hiera/lookup", dict({"key": key}, **({"node": node} if node else {})))
        n = res["nodes"][0] if res.get("nodes") else {}
        if n.get("value") == want or time.monotonic() > end:
            return n
        time.sleep(0.1)


def replace_in(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text, (path, old)
    with open(path, "w") as f:
        f.write(text.replace(old, new))


def test_settings(hiera, repo, tmp):
    """The settings puppetdb, environment, codedir and confdir, and a workspace that is a code
    directory: each changes hover, diagnostics and hiera/lookup as the same options change
    `hiera lookup` and `hiera check`."""
    facts = os.path.join(repo, "facts")
    facts_file = os.path.join(facts, NODE + ".json")
    # a code directory: production and staging, copies of the repository that differ from it and
    # from each other (the node's port, the role's name, a trap in staging's common.yaml)
    code = os.path.join(tmp, "settings-code")
    envs = {}
    for env, port, role in (("production", 2301, "web-prod"), ("staging", 2302, "web-staging")):
        d = os.path.join(code, "environments", env)
        shutil.copytree(repo, d, ignore=shutil.ignore_patterns("huge.yaml"))
        replace_in(os.path.join(d, "data/nodes/%s.yaml" % NODE), "profile::base::port: 2222", "profile::base::port: %d" % port)
        replace_in(os.path.join(d, "data/role/web.yaml"), "profile::base::role_name: web", "profile::base::role_name: " + role)
        envs[env] = d
    with open(os.path.join(envs["staging"], "data/common.yaml"), "a") as f:
        f.write("profile::base::flag: yes\n")
    keys = ("profile::base::port", "profile::base::role_name", "profile::base::motd", "profile::base::users")

    def same_as_lookup(c, what, args, nodes=(NODE,)):
        for node in nodes:
            for key in keys:
                want = lookup_with(hiera, args, key, node)
                got = wait_lookup(c, key, want, node if len(nodes) > 1 else None)
                check(want is not None and got.get("found") and got.get("value") == want,
                      "%s: hiera/lookup %s for %s as hiera lookup %s" % (what, key, node, " ".join(args)), (got, want))

    def hover_of(c, path, key):
        u = c.open(path) if uri_of(path) not in c.versions else uri_of(path)
        l, ch = line_of(path, key + ":")
        h = c.request("textDocument/hover", c.pos(u, l, ch + 2))
        return h["contents"]["value"] if h else ""

    def same_diagnostics(c, what, path, args):
        u = c.open(path) if uri_of(path) not in c.versions else uri_of(path)
        got = sorted((d["range"]["start"]["line"] + 1, d["code"]) for d in c.diagnostics(u))
        fs = check_findings(hiera, args)
        want = sorted((f["line"], f["rule"]) for f in fs or [] if f["file"] == path)
        check(fs is not None and got == want and got, "%s: diagnostics of %s as hiera check %s" % (what, os.path.relpath(path, tmp), " ".join(args)),
              (got, want))
        return got

    # ---- the workspace folder is a code directory: its production environment
    c = start(hiera, code, {"node": NODE, "factsDir": facts})
    args = ["--codedir", code, "--confdir", code, "--facts", facts_file]
    same_as_lookup(c, "a code directory", args)
    prod_node = os.path.join(envs["production"], "data/nodes/%s.yaml" % NODE)
    prod_common = os.path.join(envs["production"], "data/common.yaml")
    md = hover_of(c, prod_common, "profile::base::port")
    check("2301" in md and "Per-node data (Environment) — %s:" % prod_node in md, "a code directory: hover", md)
    same_diagnostics(c, "a code directory", prod_common, ["--codedir", code, "--facts-dir", facts])
    defs = c.request("textDocument/definition", c.pos(uri_of(prod_common), *line_of(prod_common, "profile::base::port")))
    check([d["uri"] for d in defs] == [uri_of(prod_node), uri_of(prod_common),
                                       uri_of(os.path.join(envs["production"], "site-modules/profile/manifests/base.pp"))],
          "a code directory: definition in the environment's files", defs)

    # ---- environment: another environment of the code directory (didChangeConfiguration, then back)
    c.notify("workspace/didChangeConfiguration", {"settings": {"hiera": {"environment": "staging"}}})
    args_st = args + ["--environment", "staging"]
    same_as_lookup(c, "environment staging", args_st)
    st_common = os.path.join(envs["staging"], "data/common.yaml")
    md = hover_of(c, st_common, "profile::base::role_name")
    check("web-staging" in md and "Per-role data (Environment) — %s:" % os.path.join(envs["staging"], "data/role/web.yaml") in md,
          "environment staging: hover", md)
    got = same_diagnostics(c, "environment staging", st_common, ["--codedir", code, "--environment", "staging", "--facts-dir", facts])
    check(any(r == "yaml-boolean" for _, r in got), "environment staging: its own findings", got)
    c.notify("workspace/didChangeConfiguration", {"settings": {"hiera": {"environment": None}}})
    n = wait_lookup(c, "profile::base::port", 2301)
    check(n.get("value") == 2301, "environment cleared: production again", n)
    # an environment the code directory does not have: requests fail cleanly
    c.notify("workspace/didChangeConfiguration", {"settings": {"hiera": {"environment": "nosuch"}}})
    end = time.monotonic() + 30
    while True:
        r = c.response(c.request_async("hiera/lookup", {"key": "profile::base::port"}))
        if "error" in r or time.monotonic() > end:
            break
        time.sleep(0.1)
    check(r.get("error", {}).get("code") == -32803 and "nosuch" in r["error"].get("message", ""),
          "an environment that does not exist: the request fails and says why", r)
    check(c.shutdown() == 0, "shutdown (code directory)")

    # ---- environment from initializationOptions
    c = start(hiera, code, {"node": NODE, "factsDir": facts, "environment": "staging"})
    same_as_lookup(c, "environment staging (initializationOptions)", args_st)
    check(c.shutdown() == 0, "shutdown (environment)")

    # ---- environment of a control repository: the name it is read as (%{environment})
    crepo = os.path.join(tmp, "settings-repo")
    shutil.copytree(repo, crepo, ignore=shutil.ignore_patterns("huge.yaml"))
    with open(os.path.join(crepo, "data/common.yaml"), "a") as f:
        f.write('site::env_name: "in %{environment}"\n')
    lk_env = os.path.join(tmp, "settings-lk-env")
    os.makedirs(os.path.join(lk_env, "code"))
    os.makedirs(os.path.join(lk_env, "envs"))
    os.symlink(crepo, os.path.join(lk_env, "envs", "staging"))
    c = start(hiera, crepo, {"node": NODE, "factsDir": facts, "environment": "staging"})
    args_env = ["--codedir", os.path.join(lk_env, "code"), "--confdir", os.path.join(lk_env, "code"),
                "--environmentpath", os.path.join(lk_env, "envs"), "--environment", "staging", "--facts", facts_file]
    want = lookup_with(hiera, args_env, "site::env_name")
    n = wait_lookup(c, "site::env_name", want)
    check(want == "in staging" and n.get("value") == want, "environment of a control repository: %{environment} is its name", (n, want))
    check(c.shutdown() == 0, "shutdown (environment of a control repository)")
    shutil.rmtree(crepo, ignore_errors=True)

    # ---- codedir: the workspace folder is a control repository, the code directory given
    c = start(hiera, repo, {"node": NODE, "factsDir": facts, "codedir": code})
    same_as_lookup(c, "codedir", args)
    md = hover_of(c, prod_common, "profile::base::port")
    check("2301" in md and prod_node in md, "codedir: hover", md)
    c.notify("workspace/didChangeConfiguration", {"settings": {"codedir": None}})
    n = wait_lookup(c, "profile::base::port", 2222)
    check(n.get("value") == 2222, "codedir cleared: the workspace folder's data again", n)
    check(c.shutdown() == 0, "shutdown (codedir)")

    # ---- confdir: its hiera.yaml (the global layer) and puppet.conf
    conf = os.path.join(tmp, "settings-conf")
    os.makedirs(os.path.join(conf, "data"))
    with open(os.path.join(conf, "hiera.yaml"), "w") as f:
        f.write('---\nversion: 5\nhierarchy:\n  - name: "Global data"\n    path: "global.yaml"\n')
    global_data = os.path.join(conf, "data", "global.yaml")
    with open(global_data, "w") as f:
        f.write('---\nprofile::base::motd: "global motd on %{facts.networking.hostname}"\n'
                "profile::base::users:\n  carol:\n    uid: 1003\n")
    c = start(hiera, repo, {"node": NODE, "factsDir": facts, "confdir": conf})
    # (hiera lookup of the repository linked as an environment, as hiera_lookup does)
    lk = os.path.join(tmp, "settings-lk")
    os.makedirs(os.path.join(lk, "code"))
    os.makedirs(os.path.join(lk, "envs"))
    os.symlink(repo, os.path.join(lk, "envs", "production"))
    args_conf = ["--codedir", os.path.join(lk, "code"), "--environmentpath", os.path.join(lk, "envs"), "--confdir", conf,
                 "--facts", facts_file]
    same_as_lookup(c, "confdir", args_conf)
    common = os.path.join(repo, "data/common.yaml")
    md = hover_of(c, common, "profile::base::motd")
    check("global motd on web01" in md and "Global data (Global) — %s:2" % global_data in md, "confdir: hover", md)
    md = hover_of(c, common, "profile::base::users")
    check("carol" in md and "alice" in md and "Global data (Global) — %s:4" % global_data in md,
          "confdir: hover on a key merged across layers", md)
    same_diagnostics(c, "confdir", common, ["--confdir", conf, "--facts-dir", facts, repo])
    check(c.shutdown() == 0, "shutdown (confdir)")
    # its puppet.conf naming another hiera_config
    with open(os.path.join(conf, "puppet.conf"), "w") as f:
        f.write("[main]\nhiera_config = $confdir/alt/hiera.yaml\n")
    os.makedirs(os.path.join(conf, "alt", "data"))
    with open(os.path.join(conf, "alt", "hiera.yaml"), "w") as f:
        f.write('---\nversion: 5\nhierarchy:\n  - name: "Alternative global data"\n    path: "alt.yaml"\n')
    alt_data = os.path.join(conf, "alt", "data", "alt.yaml")
    with open(alt_data, "w") as f:
        f.write("---\nprofile::base::port: 7777\n")
    c = start(hiera, repo, {"node": NODE, "factsDir": facts, "confdir": conf})
    same_as_lookup(c, "confdir with puppet.conf's hiera_config", args_conf)
    md = hover_of(c, common, "profile::base::port")
    check("7777" in md and "Alternative global data (Global) — %s:2" % alt_data in md, "confdir with puppet.conf's hiera_config: hover", md)
    check(c.shutdown() == 0, "shutdown (confdir with puppet.conf)")

    # ---- puppetdb: the nodes' facts from PuppetDB (tests/puppetdb/fake.py), no facts folder
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "puppetdb"))
    from fake import FakePuppetDB
    with open(facts_file) as f:
        web = json.load(f)
    web["networking"]["hostname"] = "web01-pdb"
    web["networking"]["fqdn"] = "web01-pdb.example.com"
    app = dict(web, clientcert="app01.example.com", fqdn="app01.example.com", hostname="app01", role="app",
               networking={"fqdn": "app01.example.com", "hostname": "app01", "ip": "10.0.0.6"})
    fake = FakePuppetDB({NODE: web, "app01.example.com": app}, misbehave=False)
    try:
        nodes = [NODE, "app01.example.com"]
        c = start(hiera, repo, {"node": nodes, "puppetdb": fake.url()})
        args_pdb = ["--codedir", os.path.join(lk, "code"), "--environmentpath", os.path.join(lk, "envs"),
                    "--confdir", os.path.join(lk, "code"), "--puppetdb", fake.url()]
        same_as_lookup(c, "puppetdb", args_pdb, nodes)
        md = hover_of(c, common, "profile::base::motd")
        check("Welcome to web01-pdb.example.com, role web" in md and "Welcome to app01.example.com, role generic" in md,
              "puppetdb: hover shows each node's value from PuppetDB's facts", md)
        l, ch = line_of(common, "facts.networking.fqdn")
        h = c.request("textDocument/hover", c.pos(uri_of(common), l, ch + 3))
        check(h and "web01-pdb.example.com" in h["contents"]["value"], "puppetdb: hover on a fact", h)
        asked = [r for r in fake.requests if NODE in r]
        check(asked, "puppetdb: PuppetDB was asked for the node's facts", fake.requests)
        check(c.shutdown() == 0, "shutdown (puppetdb)")
        # diagnostics: check's per-node rules over the node's PuppetDB facts (its role makes the
        # role's value shadow common.yaml's), as hiera check --puppetdb over PuppetDB's one active node
        fake.inactive.add("app01.example.com")
        c = start(hiera, repo, {"node": NODE, "puppetdb": fake.url()})
        got = same_diagnostics(c, "puppetdb", common, ["--puppetdb", fake.url(), repo])
        check((12, "shadowed-key") in got, "puppetdb: a per-node finding from PuppetDB's facts", got)
        check(c.shutdown() == 0, "shutdown (puppetdb diagnostics)")
    finally:
        fake.stop()
    shutil.rmtree(code, ignore_errors=True)


def test_cancel(hiera, repo):
    c = start(hiera, repo, jobs=1)
    u = c.open(os.path.join(repo, "data/common.yaml"))
    c.diagnostics(u)
    # many requests and the cancellation of the last in one write: one thread answers them in
    # order, so the last is still queued when the cancellation arrives
    msgs = []
    for i in range(1000, 1040):
        msgs.append({"jsonrpc": "2.0", "id": i, "method": "hiera/lookup", "params": {"key": "profile::base::users", "explain": True}})
    msgs.append({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1039}})
    data = b"".join(b"Content-Length: %d\r\n\r\n" % len(json.dumps(m)) + json.dumps(m).encode() for m in msgs)
    c.send_raw(data)
    last = c.response(1039)
    check(last.get("error", {}).get("code") == -32800, "a cancelled request: RequestCancelled", last)
    first = c.response(1000)
    check("result" in first, "the others are answered")
    # a running request's cancellation, and an unknown id's, leave the server alive
    i = c.request_async("textDocument/references", dict(c.pos(u, 9, 2), context={}))
    c.notify("$/cancelRequest", {"id": i})
    r = c.response(i)
    check("result" in r or r["error"]["code"] == -32800, "a cancelled running request is answered", r)
    check(c.shutdown() == 0, "shutdown after cancellations")


def test_huge_and_dying(hiera, repo, tmp):
    c = start(hiera, repo)
    # (outside the data folders: hiera check's rules are quadratic in a file's keys)
    big = os.path.join(repo, "huge.yaml")
    lines = ["---"] + ["profile::big::key_%06d: value %d" % (i, i) for i in range(40000)]
    text = "\n".join(lines) + "\n"
    with open(big, "w") as f:
        f.write(text)
    u = c.open(big, text)
    t0 = time.monotonic()
    d = c.diagnostics(u, timeout=300)
    check(len(d) == 1 and d[0]["severity"] == 3, "a huge file (%d bytes) gets its diagnostics in %.1fs" % (len(text), time.monotonic() - t0))
    syms = c.request("textDocument/documentSymbol", {"textDocument": {"uri": u}}, timeout=300)
    check(len(syms) == 20000, "symbols of a huge file are bounded", len(syms))
    h = c.request("hiera/lookup", {"key": "profile::base::port"})
    check(h["nodes"][0]["value"] == 2222, "answers next to a huge file")
    os.unlink(big)
    # the client goes away without shutdown: the server exits, status 1
    c.proc.stdin.close()
    try:
        rc = c.proc.wait(20)
    except subprocess.TimeoutExpired:
        rc = None
        c.proc.kill()
    check(rc == 1, "end of input without shutdown: status 1", rc)
    # a client that stops reading and dies mid-request: no hang
    p = subprocess.Popen([hiera, "lsp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"rootUri": uri_of(repo), "capabilities": {}}},
            {"jsonrpc": "2.0", "id": 2, "method": "hiera/lookup", "params": {"key": "profile::base::users", "explain": True}}]
    p.stdout.close()  # nobody reads the answers: writing them fails
    for m in msgs:
        body = json.dumps(m).encode()
        p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()
    try:
        rc = p.wait(20)
    except subprocess.TimeoutExpired:
        rc = None
        p.kill()
        p.wait()
    p.stdin.close()
    check(rc is not None, "a client that dies mid-request: the server ends", rc)
    # a workspace that cannot be read: requests still answer
    c = Client([hiera, "lsp"])
    c.initialize(os.path.join(tmp, "does-not-exist"), {})
    r = c.response(c.request_async("hiera/lookup", {"key": "a"}))
    check(r.get("error", {}).get("code") == -32803, "a workspace that cannot be read: the request fails cleanly", r)
    check(c.shutdown() == 0, "shutdown with a broken workspace")


def test_utf8(hiera, repo):
    c = start(hiera, repo, utf8=True)
    p = os.path.join(repo, "data/role/web.yaml")
    text = "---\n# ünïcødé 😀\nprofile::base::role_name: \"😀 %{facts.role}\"\n"
    u = c.open(p, text)
    c.diagnostics(u)
    pos = text.split("\n")[2].index("facts.role")  # bytes == characters before it? no: count bytes
    byte_col = len(text.split("\n")[2][:pos].encode())
    h = c.request("textDocument/hover", c.pos(u, 2, byte_col + 2))
    check(h and "`web`" in h["contents"]["value"], "utf-8 positions", h)
    c.shutdown()
    c = start(hiera, repo)
    u = c.open(p, text)
    c.diagnostics(u)
    utf16_col = len(text.split("\n")[2][:pos].encode("utf-16-le")) // 2
    h = c.request("textDocument/hover", c.pos(u, 2, utf16_col + 2))
    check(h and "`web`" in h["contents"]["value"], "utf-16 positions", h)
    c.shutdown()


def check_as_saved(hiera, repo, tmp, texts):
    """hiera check's findings with texts (path -> text) saved, over a copy of repo: per file of repo,
    [(line, column, rule, severity, message with its nodes)] as the server should publish them."""
    copy = os.path.join(tmp, "saved")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(repo, copy)
    for path, text in texts.items():
        with open(os.path.join(copy, os.path.relpath(path, repo)), "w") as f:
            f.write(text)
    r = subprocess.run([hiera, "check", "--format", "json", "--facts-dir", os.path.join(copy, "facts"), copy],
                       capture_output=True, text=True)
    out = {}
    for f in json.loads(r.stdout)["findings"]:
        m = f["message"].replace(copy + "/", repo + "/")
        if f.get("nodes"):
            m += " (nodes: %s%s)" % (", ".join(f["nodes"][:10]),
                                      " and %d more" % (len(f["nodes"]) - 10) if len(f["nodes"]) > 10 else "")
        path = os.path.join(repo, os.path.relpath(f["file"], copy))
        out.setdefault(path, []).append((f["line"] - 1, f["column"] - 1, f["rule"],
                                         1 if f["severity"] == "error" else 2, m))
    return {p: sorted(v) for p, v in out.items()}


def published(diags):
    return sorted((d["range"]["start"]["line"], d["range"]["start"]["character"], d["code"], d["severity"],
                   d["message"]) for d in diags)


def test_incremental(hiera, repo, tmp):
    """Diagnostics after each change equal hiera check's with the texts saved, when the server reuses
    what it read (data files changed) and when it must read again (hiera.yaml, a manifest): edits that
    move lines, change what the nodes look up, what another open file refers to, lookup_options."""
    c = start(hiera, repo)
    common = os.path.join(repo, "data/common.yaml")
    web = os.path.join(repo, "data/role/web.yaml")
    hy = os.path.join(repo, "hiera.yaml")
    base_pp = os.path.join(repo, "site-modules/profile/manifests/base.pp")
    saved = {}
    for p in (common, web, hy, base_pp):
        with open(p) as f:
            saved[p] = f.read()
    texts = {common: saved[common], web: saved[web]}
    uris = {common: c.open(common), web: c.open(web)}
    for u in uris.values():
        c.diagnostics(u)

    def edit(what, path, text):
        since = len(c.notes)
        texts[path] = text
        if path not in uris:
            uris[path] = c.open(path, text, lang="puppet" if path.endswith(".pp") else "yaml")
        else:
            c.change(uris[path], text)
        want = check_as_saved(hiera, repo, tmp, texts)
        for p, u in uris.items():
            got = published(c.diagnostics(u, since=since))
            check(got == want.get(p, []), "incremental: %s: %s" % (what, os.path.basename(p)), (got, want.get(p, [])))

    edit("lines inserted above every key (the nodes' findings move with them)", common,
         "# a comment\n# another\n" + saved[common].replace("---\n", "", 1))
    edit("a class parameter's value the wrong type (the nodes look the unsaved text up)", common,
         texts[common].replace("profile::base::ntp_servers:\n  - 0.pool.ntp.org\n  - 1.pool.ntp.org\n",
                               "profile::base::ntp_servers: 5\n"))
    edit("another open file stops defining a key (its shadowed definition here is used again)", web,
         saved[web].replace("profile::base::role_name: web\n", ""))
    edit("lookup_options removed (merged keys are judged as shadowed)", common,
         texts[common].replace("lookup_options:\n  profile::base::users:\n    merge: deep\n", ""))
    edit("a key that an interpolation refers to removed", common,
         texts[common].replace("profile::base::role_name: generic\n", ""))
    edit("the same key in another file again", web, saved[web])
    edit("a duplicate key and a trap", common, texts[common] + "profile::base::port: 0755\nprofile::base::port: 23\n")
    edit("hiera.yaml changed (a level removed: read again)", hy,
         saved[hy].replace('  - name: "Per-role data"\n    path: "role/%{facts.role}.yaml"\n', ""))
    edit("hiera.yaml back", hy, saved[hy])
    edit("a manifest's parameter type changed (read again)", base_pp,
         saved[base_pp].replace("Array[String] $ntp_servers", "Array[Integer] $ntp_servers"))
    edit("a data change after the manifest's", common, texts[common].replace("profile::base::ntp_servers: 5\n",
                                                                             "profile::base::ntp_servers: [1, 2]\n"))
    edit("the manifest back", base_pp, saved[base_pp])
    edit("common.yaml back", common, saved[common])
    c.shutdown()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--only", action="append", help="run only these groups of tests (protocol, features, ...)")
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    tmp = tempfile.mkdtemp(prefix="hiera-lsp-test-")
    try:
        repo = os.path.join(tmp, "repo")
        shutil.copytree(os.path.join(HERE, "repo"), repo)
        for name, t in (("protocol", lambda: test_protocol(hiera, repo)),
                        ("features", lambda: test_features(hiera, repo, tmp)),
                        ("incremental", lambda: test_incremental(hiera, repo, tmp)),
                        ("settings", lambda: test_settings(hiera, repo, tmp)),
                        ("cancel", lambda: test_cancel(hiera, repo)),
                        ("huge and dying", lambda: test_huge_and_dying(hiera, repo, tmp)),
                        ("utf8", lambda: test_utf8(hiera, repo))):
            if a.only and name not in a.only:
                continue
            try:
                t()
            except (Timeout, RuntimeError, KeyError, TypeError, IndexError) as e:
                check(False, "exception in the %s tests" % name, repr(e))
        for c in client_module.ALL:
            c.close()
            reports = c.sanitizer_reports()
            check(not reports, "no sanitizer report", "".join(c.err_lines)[-3000:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("hiera lsp tests: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
