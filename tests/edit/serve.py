#!/usr/bin/env python3
"""Editing through `hiera serve` (POST /v1/edit), end to end over HTTP:

  - off without --allow-edits (403), and for anybody but an admin (403; the probe says "edits": false);
  - GET /v1/edit?node&key: the node's levels, each with its file, whether it exists, the key's value
    there and the file's digest;
  - a dry run: the diff, the nodes whose answers change (hiera diff's document), hiera check's new
    findings, nothing written;
  - a save from the digest the editor started from: written, the served answers show it at once
    (the next request), the audit log has a line (values left out for a Sensitive key and eyaml);
    a stale digest gets 409 with the current one; a refused edit 422 with file and line;
  - --edits-commit: the save is a git commit with the editor as author and the key in the message;
  - many clients saving into one file at once, each retrying on 409: every edit lands once, none is
    lost, and the file always parses;
  - a save into the global layer ($confdir/hiera.yaml's data, outside every environment): served at
    once by every environment built (the server runs without its watcher: only the save's own
    rebuild can show it).

usage: tests/edit/serve.py --hiera build/hiera     Prints "edit serve: N passed, N failed".
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, threading

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
from check import Server as ServeServer, make_tree  # noqa: E402  (tests/serve/check.py: the tree, the server)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

T = Tally("edit serve")
check = T.check
TOKEN = "edit-token-0123456789abcdef"


class Server(ServeServer):
    """tests/serve/check.py's server, its logs beside the tree (the tree is a git work tree), asked
    with the admin's token (or none)"""

    def __init__(self, hiera, root, facts, extra=()):
        os.environ["SERVE_LOG_DIR"] = os.path.dirname(root)
        super().__init__(hiera, root, facts, list(extra) + ["--no-watch"])

    def req(self, method, path, body=None, token=TOKEN):
        return super().req(method, path, body=body, headers={"Authorization": "Bearer " + token} if token else {})


def git(tree, *args):
    return subprocess.run(["git", "-C", tree] + list(args), capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    tmp = tempfile.mkdtemp(prefix="hiera-edit-serve-")
    servers = []
    try:
        root = os.path.join(tmp, "tree")
        facts = make_tree(hiera, root)
        env = os.path.join(root, "environments", "production")
        common = os.path.join(env, "data", "common.yaml")
        # the global layer: $confdir/hiera.yaml (the code directory's, as the server reads it)
        os.makedirs(os.path.join(root, "global"))
        with open(os.path.join(root, "hiera.yaml"), "w") as f:
            f.write("version: 5\nhierarchy:\n  - {name: Global, datadir: global, path: common.yaml}\n")
        global_common = os.path.join(root, "global", "common.yaml")
        with open(global_common, "w") as f:
            f.write("# the site's own\nglobal::motd: hello\n")
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        has_git = shutil.which("git") is not None
        if has_git:
            git(root, "init", "-q")
            git(root, "-c", "user.name=t", "-c", "user.email=t@x", "add", "-A")
            git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "the tree")
        audit = os.path.join(tmp, "audit.log")

        # ---- off, and admins only
        plain = Server(hiera, root, facts, ["--token-file", token_file])
        servers.append(plain)
        st, body = plain.req("GET", "/v1/edit")
        check(st == 200 and body["edits"] is False and "allow-edits" in body["why"], f"probe, edits off: {st} {body}")
        st, body = plain.req("POST", "/v1/edit", {"file": "data/common.yaml", "key": "k", "value": 1, "dry_run": True})
        check(st == 403, f"edits off: {st} {body}")
        plain.stop()
        servers.remove(plain)

        s = Server(hiera, root, facts, ["--token-file", token_file, "--allow-edits", "--audit-log", audit]
                   + (["--edits-commit"] if has_git else []))
        servers.append(s)
        st, body = s.req("GET", "/v1/edit")
        check(st == 200 and body == {"edits": True, "who": "token"}, f"probe, admin: {st} {body}")
        st, body = s.req("GET", "/v1/edit", token=None)
        check(st == 200 and body["edits"] is False, f"probe, anonymous: {st} {body}")
        st, body = s.req("POST", "/v1/edit", {"file": "data/common.yaml", "key": "k", "value": 1, "dry_run": True}, token=None)
        check(st == 403, f"an anonymous edit: {st} {body}")
        st, body = s.req("GET", "/v1/edit?node=node1.example.com&key=profile::port", token=None)
        check(st == 403, f"an anonymous look at the levels: {st} {body}")

        # ---- the levels of a key for a node
        st, body = s.req("GET", "/v1/edit?node=node1.example.com&key=profile::port")
        lv = {l["level"]: l for l in body.get("levels", [])} if st == 200 else {}
        check(st == 200 and lv.get("Roles", {}).get("value") == 8080 and lv.get("Common", {}).get("value") == 80
              and lv.get("Nodes", {}).get("found") is False and lv.get("Secrets", {}).get("eyaml") is True
              and lv["Common"]["digest"].startswith("sha256:") and lv["Common"]["path"] == common, f"levels: {st} {body}")
        st, body = s.req("GET", "/v1/edit?node=node1.example.com&key=profile::db::password")
        sec = [l for l in body.get("levels", []) if l["level"] == "Secrets"]
        check(sec and sec[0].get("encrypted") and "value" not in sec[0], f"an encrypted value is not shown: {sec}")

        # ---- a dry run
        before = open(common).read()
        st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": "Common", "key": "profile::list",
                                              "yaml": "[x, y]", "dry_run": True})
        nodes = sorted(n for k in (body.get("impact") or {}).get("keys", []) for c in k["changes"] for n in c["nodes"])
        check(st == 200 and "-profile::list: [common]\n+profile::list: [x, y]\n" in body.get("diff", "")
              and body["written"] is False and open(common).read() == before, f"dry run: {st} {body}")
        check(nodes == ["cached", "node1.example.com", "node2.example.com", "node3.example.com"], f"dry run's nodes: {nodes}")
        st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": "Common", "key": "profile::motd",
                                              "yaml": "'%{lookup(x)}'", "dry_run": True})
        check(st == 200 and "interpolation-syntax" in [f["rule"] for f in body.get("findings", [])], f"findings: {body}")

        # ---- a save, seen at once; a stale base; a refusal
        digest = lv["Common"]["digest"]
        st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": "Common", "key": "profile::port",
                                              "value": 81, "base": digest})
        check(st == 200 and body.get("written") and "profile::port: 81\n" in open(common).read(), f"save: {st} {body}")
        st2, look = s.req("GET", "/v1/lookup?node=node2.example.com&key=profile::port")
        check(look.get("value") == 81, f"the served answer after the save: {look}")
        st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": "Common", "key": "profile::port",
                                              "value": 82, "base": digest})
        check(st == 409 and body.get("current", "").startswith("sha256:") and body["current"] != digest
              and "profile::port: 81\n" in open(common).read(), f"stale base: {st} {body}")
        st, body = s.req("POST", "/v1/edit", {"file": "data/common.yaml", "key": "profile::users.bob.x", "value": 1,
                                              "base": body.get("current")})
        check(st == 422 and "flow mapping" in body["error"]["message"] and body["error"]["line"] == 6
              and body["error"]["file"] == common, f"refused: {st} {body}")
        st, body = s.req("POST", "/v1/edit", {"file": "../../../../etc/passwd", "key": "k", "value": 1, "dry_run": True})
        check(st == 400, f"a file out of the tree: {st} {body}")
        st, body = s.req("POST", "/v1/edit", {"file": "data/common.yaml", "key": "k", "value": 1})
        check(st == 400 and "base" in body["error"], f"a save without base: {st} {body}")
        # hostile bodies: a control character in a name (a NUL would cut it short and edit another
        # node, file or key) and fields of the wrong type are refused, naming the field
        for field, bad in (("node", "node1.example.com\x00../../etc/passwd"), ("key", "profile::port\x00x"),
                           ("environment", "production\x00x"), ("level", "Common\x01"), ("base", "sha256:\x00")):
            req = {"node": "node1.example.com", "level": "Common", "key": "profile::port", "value": 1, "dry_run": True}
            req[field] = bad
            st, body = s.req("POST", "/v1/edit", req)
            check(st == 400 and f'"{field}" holds a control character' in body.get("error", ""), f"{field} with a control character: {st} {body}")
        st, body = s.req("POST", "/v1/edit", {"file": "data/common.yaml\x00.x", "key": "k", "value": 1, "dry_run": True})
        check(st == 400 and '"file" holds a control character' in body.get("error", ""), f"file with a NUL: {st} {body}")
        for field, bad, words in (("environment", 5, "a string, not a number"), ("dry_run", "yes", "true or false, not a string"),
                                  ("unset", 1, "true or false, not a number"), ("key", ["k"], "a string, not a list"),
                                  ("yaml", {"a": 1}, "a string, not an object")):
            req = {"file": "data/common.yaml", "key": "k", "value": 1, "dry_run": True}
            req[field] = bad
            st, body = s.req("POST", "/v1/edit", req)
            check(st == 400 and body.get("error") == f'"{field}" must be {words}', f"{field} of the wrong type: {st} {body}")
        check(open(common).read().count("profile::port: 81\n") == 1, "the hostile bodies changed nothing")
        # a Sensitive key: its values are not in the audit log
        cur = s.req("GET", "/v1/edit?node=node1.example.com&key=profile::token")[1]
        d = [l for l in cur["levels"] if l["level"] == "Common"][0]["digest"]
        st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": "Common", "key": "profile::token",
                                              "yaml": "new-token", "base": d})
        check(st == 200, f"save of a Sensitive key: {st} {body}")
        lines = [json.loads(l) for l in open(audit)]
        check(len(lines) == 2 and lines[0]["key"] == "profile::port" and lines[0]["old"] == 80 and lines[0]["new"] == 81
              and lines[0]["who"] == "token" and lines[0]["before"] == digest and lines[0]["environment"] == "production",
              f"the audit log: {lines}")
        check("old" not in lines[1] and "new" not in lines[1] and "new-token" not in open(audit).read(),
              f"a Sensitive value in the audit log: {lines[1]}")
        if has_git:
            log = git(root, "log", "-2", "--format=%an <%ae>|%s").stdout.strip().splitlines()
            check(log == ["token <token@hiera-serve>|hiera serve: set profile::token",
                          "token <token@hiera-serve>|hiera serve: set profile::port"], f"the commits: {log}")
            check(git(root, "status", "--porcelain", "--", "environments").stdout.strip() == "",
                  "the environment is committed after the saves")

        # ---- many clients at once into one file: each lands, after 409s, none lost
        target = os.path.join(env, "data", "role", "web.yaml")
        n_clients = 12
        outcome = {}
        broken = []
        stop = threading.Event()

        def reader():
            while not stop.is_set():
                try:
                    doc = yaml.safe_load(open(target))
                    if not isinstance(doc, dict):
                        broken.append(repr(doc))
                except Exception as e:  # noqa: BLE001
                    broken.append(str(e))

        def client(i):
            conflicts = 0
            for _ in range(200):
                cur = s.req("GET", "/v1/edit?node=node1.example.com&key=profile::port")[1]
                d = [l for l in cur["levels"] if l["level"] == "Roles"][0]["digest"]
                st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": "Roles", "key": f"k{i}",
                                                      "value": i, "base": d})
                if st == 200:
                    outcome[i] = conflicts
                    return
                if st != 409:
                    outcome[i] = f"status {st}: {body}"
                    return
                conflicts += 1
            outcome[i] = "never landed"

        rt = threading.Thread(target=reader)
        rt.start()
        ts = [threading.Thread(target=client, args=(i,)) for i in range(n_clients)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        stop.set()
        rt.join()
        doc = yaml.safe_load(open(target))
        check(all(isinstance(v, int) for v in outcome.values()), f"concurrent saves: {outcome}")
        check(all(doc.get(f"k{i}") == i for i in range(n_clients)), f"an edit lost: {doc}")
        check(sum(outcome.values()) > 0 if all(isinstance(v, int) for v in outcome.values()) else False,
              "no client met a conflict: the saves did not overlap")
        check(not broken, f"the file did not parse while written: {broken[:3]}")
        st, look = s.req("GET", f"/v1/lookup?node=node1.example.com&key=k{n_clients - 1}")
        check(look.get("value") == n_clients - 1, f"the served answer after the concurrent saves: {look}")
        lines = [json.loads(l) for l in open(audit)]
        check(len([l for l in lines if l["key"].startswith("k")]) == n_clients, "one audit line per concurrent save")

        # ---- a save into the global layer: every environment built serves it at once
        for e in ("production", "staging"):
            st, look = s.req("GET", f"/v1/lookup?node=node1.example.com&key=global::motd&environment={e}")
            check(st == 200 and look.get("value") == "hello", f"the global value in {e} before the save: {st} {look}")
        st, body = s.req("GET", "/v1/edit?node=node1.example.com&key=global::motd")
        gl = [l for l in body.get("levels", []) if l["level"] == "Global"] if st == 200 else []
        check(len(gl) == 1 and gl[0]["path"] == global_common and gl[0].get("value") == "hello",
              f"the global level of a key: {st} {body}")
        gen0 = s.req("GET", "/healthz")[1].get("generation")
        st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": "Global", "key": "global::motd",
                                              "value": "changed", "base": gl[0]["digest"] if gl else ""})
        check(st == 200 and body.get("written") and open(global_common).read() == "# the site's own\nglobal::motd: changed\n",
              f"a save into the global layer: {st} {body}")
        check(isinstance(gen0, int) and isinstance(body.get("generation"), int) and body["generation"] > gen0,
              f"a new generation after the global save: {gen0} -> {body.get('generation')}")
        for e in ("production", "staging"):
            st, look = s.req("GET", f"/v1/lookup?node=node1.example.com&key=global::motd&environment={e}")
            check(st == 200 and look.get("value") == "changed", f"the global save served at once in {e}: {st} {look}")
        lines = [json.loads(l) for l in open(audit)]
        check(lines and lines[-1]["key"] == "global::motd" and lines[-1]["file"] == global_common
              and lines[-1]["old"] == "hello" and lines[-1]["new"] == "changed", f"the global save's audit line: {lines[-1:]}")
        st, health = s.req("GET", "/healthz")
        check(st == 200 and health.get("status") == "ok", f"healthz after the global save: {st} {health}")
    finally:
        for sv in servers:
            sv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(T.summary())


if __name__ == "__main__":
    main()
