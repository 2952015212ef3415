#!/usr/bin/env python3
"""Checks `hiera serve` end to end: it starts real servers (plain HTTP, a bearer token, TLS with
client certificates from tests/serve/certs) over a tree written here, and asks them over HTTP.

  - answers: every /v1/lookup (with merge, default, type, explain, provenance) equals what
    `hiera lookup --render-as json` (and --explain, --provenance) prints for the same node and
    key; /v1/batch equals `hiera batch`; /v1/keys and /v1/hierarchy list what the node sees
  - access: secrets (convert_to Sensitive, eyaml blocks) redacted for anonymous callers when no
    authentication is configured; with a token or client certificates: 401 without, a node reads
    its own answers (with secrets) and gets 403 for another's, an admin reads all; a certificate
    from another CA is refused
  - bad requests: invalid node and environment names (path traversal), unknown nodes, malformed
    JSON, huge bodies (413), wrong methods (405), unknown paths (404); the server goes on
  - live reload: a changed data file is answered within seconds; a broken hiera.yaml or data file
    keeps the last good snapshot serving with /healthz "degraded", and it recovers when fixed;
    SIGHUP reloads; many idle connections do not stop others being answered
  - metrics in Prometheus' text format; SIGTERM lets a request in flight finish and exits 0

usage: tests/serve/check.py --hiera build/hiera     Prints "N passed, N failed".
"""
import argparse, calendar, http.client, json, os, re, shutil, signal, socket, ssl, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
CERTS = os.path.join(HERE, "certs")


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what, flush=True)


C = Checker()


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def make_tree(hiera, root):
    env = {**os.environ, "HIERA_CACHE_DIR": "off"}
    keys = os.path.join(root, "keys")
    os.makedirs(keys)
    shutil.copy(os.path.join(HERE, "..", "fuzz", "keys", "private_key.pkcs7.pem"), keys)
    shutil.copy(os.path.join(HERE, "..", "fuzz", "keys", "public_key.pkcs7.pem"), keys)
    enc = subprocess.run([hiera, "eyaml", "encrypt", "-o", "string", "-s", "the db password",
                          "--pkcs7-public-key", os.path.join(keys, "public_key.pkcs7.pem")],
                         capture_output=True, text=True, env=env, check=True).stdout.strip()
    write(root, "environments/production/hiera.yaml", f"""version: 5
defaults: {{datadir: data, data_hash: yaml_data}}
hierarchy:
  - name: Secrets
    lookup_key: eyaml_lookup_key
    path: secrets.eyaml
    options:
      pkcs7_private_key: {keys}/private_key.pkcs7.pem
      pkcs7_public_key: {keys}/public_key.pkcs7.pem
  - {{name: Nodes, path: "nodes/%{{trusted.certname}}.yaml"}}
  - {{name: Roles, path: "role/%{{facts.role}}.yaml"}}
  - {{name: Common, path: common.yaml}}
""")
    write(root, "environments/production/data/secrets.eyaml", f"profile::db::password: {enc}\n")
    write(root, "environments/production/data/nodes/node1.example.com.yaml",
          "profile::users:\n  bob: {shell: /bin/zsh}\nprofile::list: [n1]\n")
    write(root, "environments/production/data/role/web.yaml", "profile::list: [web]\nprofile::port: 8080\n")
    write(root, "environments/production/data/common.yaml", """lookup_options:
  profile::users: {merge: deep}
  profile::list: {merge: unique}
  profile::token: {convert_to: Sensitive}
profile::users:
  bob: {uid: 1002, shell: /bin/bash}
  alice: {uid: 1001}
profile::list: [common]
profile::port: 80
profile::motd: "Welcome to %{facts.hostname}"
profile::token: s3cr3t-token
profile::via_lookup: "%{lookup('profile::port')}"
profile::enabled: yes
""")
    write(root, "environments/staging/hiera.yaml", "version: 5\n")
    write(root, "environments/staging/data/common.yaml", "profile::port: 9090\n")
    facts = os.path.join(root, "facts")
    for n, role in (("node1.example.com", "web"), ("node2.example.com", "db"), ("node3.example.com", "web")):
        host, dom = n.split(".", 1)
        write(root, f"facts/{n}.yaml", json.dumps({"hostname": host, "domain": dom, "fqdn": n, "clientcert": n,
                                                    "role": role}) + "\n")
    write(root, "facts/broken.example.com.yaml", "a: [\n")
    # a file of Puppet's YAML facts cache (as /var/cache/puppet/yaml/facts holds), domain-less
    write(root, "facts/cached.yaml", "--- !ruby/object:Puppet::Node::Facts\nname: cached\nvalues:\n"
                                     "  hostname: cached\n  fqdn: cached\n  clientcert: cached\n  role: web\n"
                                     "  tags: !ruby/sym tagged\ntimestamp: '2024-01-01T10:00:00.123456789+00:00'\n")
    return facts


class Server:
    def __init__(self, hiera, root, facts, extra=(), tls=False):
        self.tls = tls
        # (the log is kept outside the tree: the server watches the tree, and its own log lines
        # would be changes to it)
        logs = os.environ.get("SERVE_LOG_DIR") or root.rstrip("/") + "-logs"
        os.makedirs(logs, exist_ok=True)
        self.log = open(os.path.join(logs, "serve-%d.log" % time.monotonic_ns()), "w+")
        cmd = [hiera, "serve", "--codedir", root, "--facts-dir", facts, "--listen", "127.0.0.1:0",
               "--access-log", os.path.join(root, "access.log")] + list(extra)
        self.p = subprocess.Popen(cmd, stderr=self.log, stdout=subprocess.DEVNULL,
                                  env={**os.environ, "HIERA_CACHE_DIR": "off"})
        self.port = None
        for _ in range(200):
            self.log.seek(0)
            m = re.search(r"port (\d+) \(", self.log.read())
            if m:
                self.port = int(m.group(1))
                break
            if self.p.poll() is not None:
                break
            time.sleep(0.05)
        if not self.port:
            self.log.seek(0)
            raise RuntimeError("hiera serve did not start: " + self.log.read())

    def conn(self, cert=None, ca=True):
        if not self.tls:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        ctx = ssl.create_default_context(cafile=os.path.join(CERTS, "ca.pem"))
        ctx.check_hostname = False
        if cert:
            ctx.load_cert_chain(os.path.join(CERTS, cert + ".pem"), os.path.join(CERTS, cert + ".key"))
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=ctx)

    def req(self, method, path, body=None, headers=None, cert=None, raw=False):
        c = self.conn(cert)
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        c.request(method, path, body=data, headers=headers or {})
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        c.close()
        if raw:
            return r.status, text
        try:
            return r.status, json.loads(text)
        except ValueError:
            return r.status, text

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def stop(self, sig=signal.SIGTERM):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                return self.p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.p.kill()
                return self.p.wait()
        return self.p.returncode

    def output(self):
        self.log.seek(0)
        return self.log.read()


def hiera_lookup(hiera, root, node, key, *flags):
    cmd = [hiera, "lookup", "--codedir", root, "--node", node, "--facts", os.path.join(root, "facts", node + ".yaml")]
    p = subprocess.run(cmd + list(flags) + [key], capture_output=True, text=True, env={**os.environ, "HIERA_CACHE_DIR": "off"})
    return p.returncode, p.stdout


def q(**kw):
    from urllib.parse import urlencode
    return "?" + urlencode(kw)


def check_answers(hiera, root, s):
    # values (secrets included: this server is given the token) against hiera lookup
    tok = {"Authorization": "Bearer " + open(os.path.join(root, "token")).read().strip()}
    cases = [("node1.example.com", "profile::users", []), ("node1.example.com", "profile::list", []),
             ("node3.example.com", "profile::list", []), ("node2.example.com", "profile::port", []),
             ("node1.example.com", "profile::motd", []), ("node1.example.com", "profile::via_lookup", []),
             ("node1.example.com", "profile::users", ["--merge", "hash"]),
             ("node2.example.com", "profile::list", ["--merge", "first"]),
             ("node1.example.com", "profile::db::password", []),
             ("node1.example.com", "profile::token", [])]
    for node, key, flags in cases:
        rc, out = hiera_lookup(hiera, root, node, key, "--render-as", "json", *flags)
        params = {"node": node, "key": key}
        if flags:
            params["merge"] = flags[1]
        st, body = s.get("/v1/lookup" + q(**params), headers=tok)
        want = json.loads(out) if rc == 0 else None
        if key == "profile::token":
            want = "s3cr3t-token"  # hiera lookup prints Sensitive redacted; the admin sees it
        C.check(st == 200 and body.get("found") and body.get("value") == want,
                f"/v1/lookup {node} {key} {flags}: {st} {body} != {want}")
    # not found, default, type
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="nope"), headers=tok)
    C.check(st == 404 and body.get("found") is False, f"not found: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="nope", default="dflt"), headers=tok)
    C.check(st == 200 and body.get("value") == "dflt", f"default: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port", type="String"), headers=tok)
    C.check(st == 422 and "expects a String value, got Integer" in body.get("error", {}).get("message", ""),
            f"type mismatch: {st} {body}")
    # POST with several keys (first found wins), facts given in the body, merge as a hash
    st, body = s.req("POST", "/v1/lookup", body={"node": "node1.example.com", "keys": ["nope", "profile::port"]}, headers=tok)
    C.check(st == 200 and body.get("value") == 8080, f"POST keys: {st} {body}")
    st, body = s.req("POST", "/v1/lookup", headers=tok, body={
        "node": "elsewhere.example.com", "key": "profile::list",
        "facts": {"role": "web", "clientcert": "elsewhere.example.com", "hostname": "elsewhere", "domain": "example.com",
                  "fqdn": "elsewhere.example.com"}})
    C.check(st == 200 and body.get("value") == ["web", "common"], f"POST facts: {st} {body}")
    st, body = s.req("POST", "/v1/lookup", headers=tok, body={"node": "node1.example.com", "key": "profile::users",
                                                             "merge": {"strategy": "deep", "knockout_prefix": "--"}})
    C.check(st == 200 and body["value"]["bob"] == {"uid": 1002, "shell": "/bin/zsh"}, f"POST merge hash: {st} {body}")
    # explanation and provenance as hiera lookup gives them
    rc, out = hiera_lookup(hiera, root, "node1.example.com", "profile::users", "--explain")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::users", explain=1), headers=tok)
    C.check(st == 200 and body.get("explanation", "").strip() == out.strip(), "explanation differs from hiera lookup --explain")
    rc, out = hiera_lookup(hiera, root, "node1.example.com", "profile::users", "--provenance", "--render-as", "json")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::users", provenance=1), headers=tok)
    C.check(st == 200 and body.get("provenance") == json.loads(out)["provenance"], f"provenance: {body.get('provenance')}")
    # another environment
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port", environment="staging"), headers=tok)
    C.check(st == 200 and body.get("value") == 9090, f"staging: {st} {body}")
    # batch against hiera batch
    keys = ["profile::users", "profile::list", "profile::port", "profile::motd", "nope"]
    kf = os.path.join(root, "keys.txt")
    with open(kf, "w") as f:
        f.write("\n".join(keys) + "\n")
    p = subprocess.run([hiera, "batch", "--codedir", root, "--facts-dir", os.path.join(root, "facts"), "--keys-file", kf],
                       capture_output=True, text=True, env={**os.environ, "HIERA_CACHE_DIR": "off"})
    want = json.loads(p.stdout)
    st, body = s.req("POST", "/v1/batch", headers=tok, body={"nodes": ["node1.example.com", "node2.example.com",
                                                                       "node3.example.com"], "keys": keys})
    C.check(st == 200 and all(body["results"][n] == want[n] for n in ("node1.example.com", "node2.example.com",
                                                                      "node3.example.com")),
            f"batch differs from hiera batch: {st} {body}")
    # keys and hierarchy
    st, body = s.get("/v1/keys" + q(node="node1.example.com"), headers=tok)
    C.check(st == 200 and "profile::users" in body["keys"] and body["keys"]["profile::list"][0]["level"] == "Nodes",
            f"keys: {st} {body}")
    st, body = s.get("/v1/node" + q(node="node1.example.com"), headers=tok)
    C.check(st == 200 and body["keys"]["profile::port"]["value"] == 8080 and body["keys"]["profile::port"]["definitions"],
            f"node: {st}")
    st, body = s.get("/v1/hierarchy" + q(node="node1.example.com"), headers=tok)
    env_layer = [l for l in body.get("layers", []) if l["layer"] == "environment"]
    C.check(st == 200 and env_layer and [l["name"] for l in env_layer[0]["levels"]] == ["Secrets", "Nodes", "Roles", "Common"],
            f"hierarchy: {st} {body}")
    st, body = s.get("/v1/nodes" + q(q="node"), headers=tok)
    C.check(st == 200 and body["nodes"] == ["node1.example.com", "node2.example.com", "node3.example.com"]
            and "broken.example.com" in body["unreadable"], f"nodes: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="broken.example.com", key="profile::port"), headers=tok)
    C.check(st == 422 and "cannot be read" in body.get("error", ""), f"unreadable facts: {st} {body}")
    st, body = s.get("/v1/environments", headers=tok)
    C.check(st == 200 and body["environments"] == ["production", "staging"], f"environments: {st} {body}")
    # a facts cache file: its facts as hiera lookup --node reads them from the cache
    vardir = os.path.join(root, "var-cached")
    os.makedirs(os.path.join(vardir, "yaml"), exist_ok=True)
    if not os.path.lexists(os.path.join(vardir, "yaml", "facts")):
        os.symlink(os.path.join(root, "facts"), os.path.join(vardir, "yaml", "facts"))
    for key in ("profile::port", "profile::motd"):
        st, body = s.get("/v1/lookup" + q(node="cached", key=key), headers=tok)
        p = subprocess.run([hiera, "lookup", "--codedir", root, "--vardir", vardir, "--node", "cached", "--render-as", "json", key],
                           capture_output=True, text=True, env={**os.environ, "HIERA_CACHE_DIR": "off"})
        C.check(st == 200 and p.returncode == 0 and body.get("value") == json.loads(p.stdout),
                f"a facts cache file in the facts folder: {key}: {st} {body} vs {p.returncode} {p.stdout} {p.stderr}")


def check_bad_requests(s):
    for path in ["/v1/lookup" + q(node="../../etc/passwd", key="a"), "/v1/lookup" + q(node="a/b", key="a"),
                 "/v1/lookup" + q(node="node1.example.com", key="a", environment="../x"),
                 "/v1/lookup" + q(node="node1.example.com", key="a", environment="Prod"),
                 "/v1/lookup" + q(node="node1.example.com"), "/v1/lookup" + q(key="a"),
                 "/v1/lookup" + q(node="node1.example.com", key="a", merge="sideways")]:
        st, body = s.get(path)
        C.check(st == 400 and "error" in body, f"{path}: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="nobody.example.com", key="a"))
    C.check(st == 404 and "unknown node" in body.get("error", ""), f"unknown node: {st} {body}")
    st, body = s.req("POST", "/v1/lookup", body="{not json")
    C.check(st == 400, f"malformed JSON: {st} {body}")
    st, body = s.req("POST", "/v1/lookup", body="[1,2]")
    C.check(st == 400, f"JSON not an object: {st} {body}")
    st, body = s.req("POST", "/v1/lookup", body="x" * (2 * 1024 * 1024))
    C.check(st == 413, f"huge body: {st}")
    st, body = s.req("DELETE", "/v1/lookup")
    C.check(st == 405, f"DELETE: {st}")
    st, body = s.get("/v1/batch")
    C.check(st == 405, f"GET batch: {st}")
    st, body = s.get("/etc/passwd")
    C.check(st == 404, f"unknown path: {st}")
    # a request line and headers far beyond the bound
    c = s.conn()
    c.putrequest("GET", "/v1/nodes")
    for i in range(3000):
        c.putheader("X-Pad-%d" % i, "y" * 40)
    try:
        c.endheaders()
        r = c.getresponse()
        st = r.status
    except (ConnectionError, http.client.HTTPException):
        st = "closed"
    C.check(st in (413, 431, 400, "closed"), f"header flood: {st}")
    st, body = s.get("/healthz")
    C.check(st == 200 and wait_for(lambda: s.get("/healthz")[1]["status"] == "ok"),
            f"still serving after bad requests: {st} {body}")


def raw(port, data, timeout=5, read_until_close=False):
    """Sends bytes on a new connection; the first answer's status (int), or "closed"."""
    so = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        so.sendall(data)
        got = b""
        while b"\r\n" not in got:
            chunk = so.recv(4096)
            if not chunk:
                break
            got += chunk
    except OSError:
        got = b""
    finally:
        so.close()
    m = re.match(rb"HTTP/1\.\d (\d+)", got)
    return int(m.group(1)) if m else "closed"


def check_hostile(hiera, root, facts, s):
    """Issue 32's hostile input: control characters in names, fields of the wrong JSON type, slow
    requests, Expect: 100-continue beyond --max-body."""
    # a NUL (or any control character) in a name: refused, never cut short and answered as the node
    for path in ["/v1/lookup?node=node1.example.com%00../../etc/passwd&key=profile::port",
                 "/v1/lookup?node=node1.example.com%0a&key=profile::port",
                 "/v1/lookup?node=node1.example.com&key=profile::port&environment=production%00x",
                 "/v1/lookup?node=node1.example.com&key=profile::port%00",
                 "/v1/keys?node=node1.example.com%00x", "/v1/hierarchy?node=node1.example.com%1f",
                 "/v1/lookup%00/x?node=node1.example.com&key=profile::port", "/v1/nod%0as"]:
        st, body = s.get(path)
        C.check(st == 400 and "value" not in body, f"a control character in {path}: {st} {body}")
    for field, value in [("node", "node1.example.com\u0000../../etc/passwd"), ("environment", "production\u0000x"),
                         ("node", "node1.example.com\u0007"), ("key", "profile::port\u0000"),
                         ("keys", ["profile::port\u0000"])]:
        body = {"node": "node1.example.com", "key": "profile::port"}
        body[field] = value
        text = json.dumps(body)  # (a NUL as JSON writes it: \u0000)
        st, got = s.req("POST", "/v1/lookup", body=text)
        C.check(st == 400 and field in got.get("error", "") and "value" not in got,
                f"a control character in the body's {field}: {st} {got}")
    st, got = s.req("POST", "/v1/batch", body=json.dumps({"nodes": ["node1.example.com\u0000x"], "keys": ["profile::port"]}))
    C.check(st == 400 and "nodes" in got.get("error", ""), f"a control character in a batch's nodes: {st} {got}")
    # fields of the wrong type: 400 naming the field
    for field, value in [("merge", 5), ("type", 5), ("explain", "yes"), ("provenance", 1), ("keys", [1, 2]),
                         ("keys", "profile::port"), ("facts", [1]), ("node", 7), ("environment", ["production"]),
                         ("merge", {"strategy": 5}), ("merge", {"strategy": "deep", "knockout_prefix": 1}),
                         ("merge", {"strategy": "deep", "sort_merged_arrays": "yes"}), ("merge", {"knockout_prefix": "--"})]:
        body = {"node": "node1.example.com", "key": "profile::port"}
        body[field] = value
        st, got = s.req("POST", "/v1/lookup", body=body)
        C.check(st == 400 and field in got.get("error", ""), f"\"{field}\": {value!r}: {st} {got}")
    st, got = s.req("POST", "/v1/batch", body={"nodes": "node1.example.com", "keys": ["profile::port"]})
    C.check(st == 400 and "nodes" in got.get("error", ""), f"batch \"nodes\" a string: {st} {got}")
    st, got = s.req("POST", "/v1/batch", body={"nodes": ["node1.example.com"], "keys": ["profile::port"], "merge": []})
    C.check(st == 400 and "merge" in got.get("error", ""), f"batch \"merge\" a list: {st} {got}")
    # Expect: 100-continue with a body over --max-body: 413 at once, not "100 Continue"
    t0 = time.time()
    st = raw(s.port, b"POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 50000000\r\nExpect: 100-continue\r\n\r\n")
    C.check(st == 413 and time.time() - t0 < 3, f"Expect: 100-continue over --max-body: {st} after {time.time() - t0:.1f} s")
    # and under it: 100 Continue, then the answer
    so = socket.create_connection(("127.0.0.1", s.port), timeout=5)
    body = json.dumps({"node": "node1.example.com", "key": "profile::port"}).encode()
    so.sendall(b"POST /v1/lookup HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n" % len(body))
    first = so.recv(100)
    so.sendall(body)
    rest = b""
    while b"8080" not in rest:
        chunk = so.recv(4096)
        if not chunk:
            break
        rest += chunk
    so.close()
    C.check(first.startswith(b"HTTP/1.1 100") and b" 200 " in rest and b"8080" in rest,
            f"Expect: 100-continue within --max-body: {first!r} then {rest[:80]!r}")
    st, body = s.get("/healthz")
    C.check(st == 200, f"alive after the hostile requests: {st}")
    # a slow request: a header byte every 0.3 s is cut off --timeout after the connection opened
    slow = Server(hiera, root, facts, ["--timeout", "2"])
    try:
        so = socket.create_connection(("127.0.0.1", slow.port), timeout=10)
        so.sendall(b"GET /healthz HTTP/1.1\r\n")
        t0, closed = time.time(), None
        try:
            while time.time() - t0 < 12:
                so.sendall(b"X")
                so.settimeout(0.3)
                try:
                    if so.recv(100) == b"":
                        closed = time.time() - t0
                        break
                except socket.timeout:
                    pass
        except OSError:
            closed = time.time() - t0
        so.close()
        C.check(closed is not None and closed < 5, f"--timeout 2: a request sent a byte at a time is still open after "
                                                   f"{'%.1f' % closed if closed else 'more than 12'} s")
        # an idle keep-alive connection the same; one that asks in time is answered
        c = http.client.HTTPConnection("127.0.0.1", slow.port, timeout=10)
        c.request("GET", "/healthz")
        C.check(c.getresponse().read() and True, "--timeout 2: a request in time is answered")
        c.close()
        st, body = slow.get("/healthz")
        C.check(st == 200, f"--timeout 2: alive after the slow request: {st}")
    finally:
        slow.stop()


def check_explain_merges(hiera, root, s):
    """/v1/lookup's explanation with every merge (and deep options) is hiera lookup --explain's."""
    tok = {"Authorization": "Bearer " + open(os.path.join(root, "token")).read().strip()}
    cases = [([], {}), (["--merge", "first"], {"merge": "first"}), (["--merge", "unique"], {"merge": "unique"}),
             (["--merge", "hash"], {"merge": "hash"}), (["--merge", "deep"], {"merge": "deep"}),
             (["--merge", "deep", "--knock-out-prefix", "--"], {"merge": "deep", "knockout_prefix": "--"}),
             (["--merge", "deep", "--sort-merged-arrays", "--merge-hash-arrays"],
              {"merge": "deep", "sort_merged_arrays": "1", "merge_hash_arrays": "1"})]
    for key in ("profile::users", "profile::list", "profile::port"):
        for flags, params in cases:
            rc, out = hiera_lookup(hiera, root, "node1.example.com", key, "--explain", *flags)
            st, body = s.get("/v1/lookup" + q(node="node1.example.com", key=key, explain=1, **params), headers=tok)
            C.check(body.get("explanation", "").strip() == out.strip(),
                    f"/v1/lookup {key} {params} explain: differs from hiera lookup --explain {' '.join(flags)}:\n"
                    f"{body.get('explanation')}\n--- hiera lookup:\n{out}")
            if params.get("merge") == "deep":
                post = {"node": "node1.example.com", "key": key, "explain": True,
                        "merge": {"strategy": "deep", **({"knockout_prefix": "--"} if "knockout_prefix" in params else {}),
                                  **({"sort_merged_arrays": True, "merge_hash_arrays": True} if "sort_merged_arrays" in params else {})}}
                st, body = s.req("POST", "/v1/lookup", body=post, headers=tok)
                C.check(body.get("explanation", "").strip() == out.strip(), f"POST /v1/lookup {post} explain differs")


def check_open_access(s):
    """No authentication configured: anyone reads, secrets redacted."""
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::db::password"))
    C.check(st == 200 and body.get("value") == "Sensitive [value redacted]", f"eyaml redacted: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::token"))
    C.check(st == 200 and body.get("value") == "Sensitive [value redacted]", f"Sensitive redacted: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::db::password", explain=1))
    C.check("the db password" not in json.dumps(body), "the explanation shows a secret")
    st, body = s.get("/v1/facts" + q(node="node1.example.com"))
    C.check(st == 403, f"facts to anyone: {st}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port"))
    C.check(st == 200 and body.get("value") == 8080, f"open read: {st} {body}")


def check_token(s, token):
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port"))
    C.check(st == 401, f"no token: {st}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port"),
                     headers={"Authorization": "Bearer wrong-token-wrong-token"})
    C.check(st == 401, f"wrong token: {st}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::db::password"),
                     headers={"Authorization": "Bearer " + token})
    C.check(st == 200 and body.get("value") == "the db password", f"admin token sees the secret: {st} {body}")
    st, body = s.get("/healthz")
    C.check(st == 200, f"healthz needs no token: {st}")
    st, body = s.get("/v1/check")
    C.check(st == 401, f"check needs a token: {st}")
    st, body = s.get("/v1/check", headers={"Authorization": "Bearer " + token})
    traps = [f for f in body.get("findings", []) if f["rule"] == "yaml-boolean"]
    C.check(st == 200 and len(traps) == 1 and traps[0]["file"].endswith("production/data/common.yaml")
            and traps[0]["line"] == 13 and traps[0]["severity"] == "warning" and body["generation"] >= 1,
            f"/v1/check: hiera check's findings: {st} {body}")
    st2, again = s.get("/v1/check", headers={"Authorization": "Bearer " + token})
    for _ in range(5):
        # (a reload of files the earlier checks wrote may still come, slowly under sanitizers:
        # a new generation has its own answer; the check is of two answers of one generation)
        if st2 != 200 or again.get("generation") == body.get("generation"):
            break
        body = again
        st2, again = s.get("/v1/check", headers={"Authorization": "Bearer " + token})
    C.check(st2 == 200 and again == body,
            "/v1/check answers again from what it made for the generation: %r then %r" % (body, again))
    st, body = s.get("/v1/check?environment=staging", headers={"Authorization": "Bearer " + token})
    C.check(st == 200 and body.get("environment") == "staging" and not any(f["rule"] == "yaml-boolean" for f in body["findings"]),
            f"/v1/check for one environment: {st} {body}")
    st, body = s.get("/v1/nodes")
    C.check(st == 401, f"nodes need a token: {st}")


def check_tls(s):
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::db::password"), cert="node1")
    C.check(st == 200 and body.get("value") == "the db password", f"node reads its own secret: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="node2.example.com", key="profile::port"), cert="node1")
    C.check(st == 403, f"node reads another node: {st}")
    st, body = s.get("/v1/nodes", cert="node1")
    C.check(st == 200 and body.get("nodes") == ["node1.example.com"], f"a node lists itself only: {st} {body}")
    st, body = s.req("POST", "/v1/batch", body={"nodes": ["node1.example.com", "node2.example.com"], "keys": ["profile::port"]},
                     cert="node1")
    C.check(st == 403, f"batch over another node: {st}")
    st, body = s.get("/v1/lookup" + q(node="node2.example.com", key="profile::port"), cert="admin")
    C.check(st == 200 and body.get("value") == 80, f"admin reads all: {st} {body}")
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port"))
    C.check(st == 401, f"no certificate: {st}")
    try:
        st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port"), cert="rogue")
    except (ssl.SSLError, ConnectionError) as e:
        st = "refused"
    C.check(st in (401, "refused"), f"certificate of another CA: {st}")
    # a certificate whose name is node1's, a NUL, and more: not node1
    for node in ("node1.example.com", "node2.example.com"):
        try:
            st, body = s.get("/v1/lookup" + q(node=node, key="profile::port"), cert="nulcn")
        except (ssl.SSLError, ConnectionError):
            st = "refused"
        C.check(st in (401, 403, "refused"), f"a certificate named node1.example.com\\0...: reads {node}: {st} {body}")


def wait_for(pred, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.1)
    return False


def check_reload(root, s):
    common = os.path.join(root, "environments/production/data/common.yaml")
    text = open(common).read()
    port = lambda: s.get("/v1/lookup" + q(node="node2.example.com", key="profile::port"))[1].get("value")
    with open(common, "w") as f:
        f.write(text.replace("profile::port: 80\n", "profile::port: 81\n"))
    C.check(wait_for(lambda: port() == 81), "a changed data file is not answered")
    # a file caught half-written (closed, then completed 150 ms later) is read again before a
    # rebuild is refused: no refusal, and the whole file is served
    refused = lambda: int(re.search(r'^hiera_reloads_total\{result="refused"\} (\d+)', s.get("/metrics", raw=True)[1], re.M).group(1))
    before = refused()
    whole = text.replace("profile::port: 80\n", "profile::port: 82\n")
    with open(common, "w") as f:
        f.write(whole[:whole.index("profile::users:")] + "profile::users: [\n")
    time.sleep(0.15)
    with open(common, "w") as f:
        f.write(whole)
    C.check(wait_for(lambda: port() == 82), "a file completed 150 ms after a broken half is not served")
    C.check(refused() == before and s.get("/healthz")[1]["status"] != "degraded",
            f"a file completed 150 ms after a broken half was refused ({refused()} refusals, {before} before)")
    with open(common, "w") as f:
        f.write(text.replace("profile::port: 80\n", "profile::port: 81\n"))
    C.check(wait_for(lambda: port() == 81), "the changed data file is not answered again")
    # a file open for writing (half of it written): /healthz and /metrics say a change is pending
    # and which generation is served; the old answer stays until the file is closed
    gen0 = s.get("/healthz")[1]["generation"]
    metric = lambda text, name: float(re.search(r"^%s (\S+)$" % name, text, re.M).group(1))
    whole = text.replace("profile::port: 80\n", "profile::port: 83\n")
    half = whole.index("profile::users:")
    f = open(common, "w")
    try:
        f.write(whole[:half])
        f.flush()
        time.sleep(0.3)
        st, h = s.get("/healthz")
        mt = s.get("/metrics", raw=True)[1]
        C.check(h.get("status") == "pending" and h.get("pending_changes", 0) >= 1 and h.get("generation") == gen0
                and metric(mt, "hiera_pending_changes") >= 1 and metric(mt, "hiera_snapshot_generation") == gen0,
                f"a file open for writing: /healthz {h}, /metrics pending {metric(mt, 'hiera_pending_changes')}")
        C.check(port() == 81, f"a file open for writing (half written) is answered: {port()}")
        f.write(whole[half:])
    finally:
        f.close()
    C.check(wait_for(lambda: port() == 83), "a file completed and closed is not answered")
    C.check(wait_for(lambda: s.get("/healthz")[1].get("status") == "ok"), "/healthz not ok once the change is served")
    st, h = s.get("/healthz")
    mt = s.get("/metrics", raw=True)[1]
    built = calendar.timegm(time.strptime(h["built_at"], "%Y-%m-%dT%H:%M:%SZ"))
    C.check(h["generation"] > gen0 and h["pending_changes"] == 0 and abs(built - time.time()) < 30
            and metric(mt, "hiera_snapshot_generation") == h["generation"] and metric(mt, "hiera_pending_changes") == 0
            and metric(mt, "hiera_snapshot_built_timestamp_seconds") == built,
            f"after the change: /healthz {h}; /metrics generation {metric(mt, 'hiera_snapshot_generation')}, "
            f"built {metric(mt, 'hiera_snapshot_built_timestamp_seconds')}")
    with open(common, "w") as f:
        f.write(text.replace("profile::port: 80\n", "profile::port: 81\n"))
    C.check(wait_for(lambda: port() == 81), "the changed data file is not answered again")
    hy = os.path.join(root, "environments/production/hiera.yaml")
    good = open(hy).read()
    with open(hy, "w") as f:
        f.write("version: 5\nhierarchy: [unclosed\n")
    C.check(wait_for(lambda: s.get("/healthz")[1].get("status") == "degraded"), "a broken hiera.yaml: /healthz not degraded")
    C.check(port() == 81, "a broken hiera.yaml: the last good snapshot is not served")
    st, body = s.get("/healthz?strict=1")
    C.check(st == 503 and body.get("refused_reload"), f"strict healthz: {st} {body}")
    C.check("reload refused" in s.output(), "the refusal is not in the log")
    with open(hy, "w") as f:
        f.write(good)
    C.check(wait_for(lambda: s.get("/healthz")[1].get("status") == "ok"), "not recovered once hiera.yaml is fixed")
    with open(common, "w") as f:
        f.write("profile::port: [\n")
    C.check(wait_for(lambda: s.get("/healthz")[1].get("status") == "degraded"), "a broken data file: not degraded")
    C.check(port() == 81, "a broken data file: the last good snapshot is not served")
    with open(common, "w") as f:
        f.write(text)
    C.check(wait_for(lambda: s.get("/healthz")[1].get("status") == "ok" and port() == 80), "not recovered")
    # a new node's facts file
    write(root, "facts/node4.example.com.yaml", json.dumps({"hostname": "node4", "domain": "example.com",
                                                             "fqdn": "node4.example.com", "clientcert": "node4.example.com",
                                                             "role": "web"}))
    C.check(wait_for(lambda: s.get("/v1/lookup" + q(node="node4.example.com", key="profile::port"))[0] == 200),
            "a new facts file is not served")
    os.unlink(os.path.join(root, "facts/node4.example.com.yaml"))
    C.check(wait_for(lambda: s.get("/v1/lookup" + q(node="node4.example.com", key="profile::port"))[0] == 404),
            "a removed facts file is still served")
    # a node's facts file rewritten in place (the facts are read again only when the folder changed)
    n2 = os.path.join(root, "facts/node2.example.com.yaml")
    old = open(n2).read()
    C.check(port() == 80, f"node2 (role db) before the change: {port()}")
    with open(n2, "w") as f:
        f.write(old.replace('"db"', '"web"'))
    C.check(wait_for(lambda: port() == 8080), "a facts file rewritten in place is not served")
    with open(n2, "w") as f:
        f.write(old)
    C.check(wait_for(lambda: port() == 80), "a facts file written back is not served")
    gen = s.get("/healthz")[1]["generation"]
    s.p.send_signal(signal.SIGHUP)
    C.check(wait_for(lambda: s.get("/healthz")[1]["generation"] > gen), "SIGHUP did not reload")
    st, text = s.get("/metrics", raw=True)
    C.check(st == 200 and re.search(r'^hiera_reloads_total\{result="refused"\} [1-9]', text, re.M)
            and re.search(r'^hiera_http_requests_total\{endpoint="lookup",code="200"\} \d+', text, re.M)
            and "hiera_http_request_duration_seconds_bucket{le=\"+Inf\"}" in text
            and re.search(r"^hiera_snapshot_age_seconds \d+", text, re.M), "metrics:\n" + text[:2000])


def check_overflow(root, s):
    """the kernel's queue of events overflowing (IN_Q_OVERFLOW) while the server is stopped: the
    events after it are lost, a change among them too, and only the full walk that the overflow
    starts finds it"""
    try:
        limit = int(open("/proc/sys/fs/inotify/max_queued_events").read())
    except OSError:
        limit = 16384
    if limit > 200000:
        print(f"serve: the inotify overflow not checked: max_queued_events is {limit}")
        return
    data = os.path.join(root, "environments/production/data")
    common = os.path.join(data, "common.yaml")
    text = open(common).read()
    port = lambda: s.get("/v1/lookup" + q(node="node2.example.com", key="profile::port"))[1].get("value")
    C.check(port() == 80, f"before the overflow: {port()}")
    s.p.send_signal(signal.SIGSTOP)
    flood = [os.path.join(data, f"flood-{i}.txt") for i in range(limit + 500)]
    try:
        for name in flood:  # (a distinct name each: the kernel merges only identical events)
            open(name, "w").close()
        with open(common, "w") as f:  # its events come after the queue is full: lost
            f.write(text.replace("profile::port: 80\n", "profile::port: 84\n"))
    finally:
        for name in flood:
            if os.path.exists(name):
                os.unlink(name)
        s.p.send_signal(signal.SIGCONT)
    C.check(wait_for(lambda: port() == 84, 20), "a change made after the kernel's queue overflowed is not served")
    C.check("events were lost" in s.output(), "the overflow is not in the log")
    with open(common, "w") as f:
        f.write(text)
    C.check(wait_for(lambda: port() == 80), "the data file written back after the overflow is not served")


def check_idle_connections(s):
    idle = []
    for _ in range(300):
        so = socket.create_connection(("127.0.0.1", s.port))
        so.send(b"GET /v1/nod")  # a request that never ends (a slow client)
        idle.append(so)
    t0 = time.time()
    st, body = s.get("/v1/lookup" + q(node="node1.example.com", key="profile::port"))
    C.check(st == 200 and time.time() - t0 < 2, f"answered beside 300 idle connections: {st} in {time.time() - t0:.2f}s")
    for so in idle:
        so.close()


def check_eviction(hiera, root, facts):
    """--max-memory: an environment not asked for a second is dropped, and answers again when asked."""
    s = Server(hiera, root, facts, ["--max-memory", "1K"])
    try:
        port = lambda env: s.get("/v1/lookup" + q(node="node2.example.com", key="profile::port", environment=env))
        st, body = port("production")
        C.check(st == 200 and body.get("value") == 80, f"--max-memory: production: {st} {body}")
        time.sleep(1.2)
        st, body = port("staging")
        C.check(st == 200 and body.get("value") == 9090, f"--max-memory: staging: {st} {body}")
        evicted = lambda: re.search(r"^hiera_environment_evictions_total ([1-9]\d*)", s.get("/metrics", raw=True)[1], re.M)
        C.check(wait_for(evicted, 5), "--max-memory: nothing was dropped")
        st, body = port("production")
        C.check(st == 200 and body.get("value") == 80, f"--max-memory: production again: {st} {body}")
        built = re.search(r"^hiera_environment_builds_total (\d+)", s.get("/metrics", raw=True)[1], re.M)
        C.check(built and int(built.group(1)) >= 3, f"--max-memory: production built again: {built and built.group(0)}")
        C.check("dropped from memory" in s.output(), "--max-memory: the log does not say what was dropped")
    finally:
        s.stop()


def check_drain(hiera, root, facts):
    s = Server(hiera, root, facts)
    result = {}

    def slow():
        nodes = ["node1.example.com", "node2.example.com", "node3.example.com"] * 600
        result["answer"] = s.req("POST", "/v1/batch", body={"nodes": nodes, "keys": ["profile::users", "profile::list",
                                                                                   "profile::motd"] * 20})
    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.15)
    rc = s.stop(signal.SIGTERM)
    t.join()
    st, body = result.get("answer", (None, None))
    C.check(rc == 0 and st == 200 and len(body.get("results", {})) == 3, f"SIGTERM: exit {rc}, in-flight answer {st}")
    C.check("stopped" in s.output(), "no 'stopped' in the log")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--make-tree", metavar="DIR", help="only write the test tree into DIR (for tests/web)")
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    if args.make_tree:
        os.makedirs(args.make_tree, exist_ok=True)
        make_tree(hiera, os.path.abspath(args.make_tree))
        return
    root = tempfile.mkdtemp(prefix="hiera-serve-")
    try:
        facts = make_tree(hiera, root)
        with open(os.path.join(root, "token"), "w") as f:
            f.write("a-token-of-more-than-sixteen-chars\n")
        s = Server(hiera, root, facts)
        try:
            check_open_access(s)
            check_bad_requests(s)
            check_hostile(hiera, root, facts, s)
            check_idle_connections(s)
            check_reload(root, s)
            check_overflow(root, s)
        finally:
            s.stop()
        s = Server(hiera, root, facts, ["--token-file", os.path.join(root, "token")])
        try:
            check_token(s, "a-token-of-more-than-sixteen-chars")
            check_answers(hiera, root, s)
            check_explain_merges(hiera, root, s)
        finally:
            s.stop()
        s = Server(hiera, root, facts, ["--tls-cert", os.path.join(CERTS, "server.pem"), "--tls-key",
                                        os.path.join(CERTS, "server.key"), "--tls-ca", os.path.join(CERTS, "ca.pem"),
                                        "--admin", "admin.example.com"], tls=True)
        try:
            check_tls(s)
        finally:
            s.stop()
        check_eviction(hiera, root, facts)
        check_drain(hiera, root, facts)
        access = open(os.path.join(root, "access.log")).read().splitlines()
        C.check(access and all(json.loads(l)["status"] for l in access[:50]), "access log lines are not JSON")
    finally:
        shutil.rmtree(root, ignore_errors=True)
        shutil.rmtree(root + "-logs", ignore_errors=True)
    print(f"serve: {C.passed} passed, {C.failed} failed")
    sys.exit(1 if C.failed else 0)


if __name__ == "__main__":
    main()
