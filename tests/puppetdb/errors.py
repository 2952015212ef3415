#!/usr/bin/env python3
"""Checks hiera's PuppetDB client against a fake PuppetDB (tests/puppetdb/fake.py), for what a real
one will not do on demand (make check; tests/puppetdb/real.py checks against a real PuppetDB):

  - hiera lookup --node with PuppetDB as the facts terminus: the answer from the node's facts and
    trusted data; an unknown or deactivated node ("No facts available"); 500s, HTML 404s,
    truncated answers and refused connections fail over to the next server with Puppet's warning
    naming the server and the cause; a slow server times out after --puppetdb-timeout (no hang);
    bad JSON, too deep JSON, a 403 or an answer that is not an array end the request (no other
    server asked); an answer dribbled a few bytes at a time reads the same
  - TLS: Puppet's ssldir (hostcert, hostprivkey, localcacert, hostcrl) with a puppetdb.conf; a
    missing CRL, a server certificate from another CA, a server certificate for another name,
    no client certificate: each a clear error naming the server
  - puppetdb.conf read as Puppet reads it (https only, no paths, unparseable lines, booleans) and
    sticky_read_failover
  - the route puppet lookup --node takes: routes.yaml's lookup: section (not server:),
    facts_terminus, storeconfigs (PuppetDB as a cache before Puppet's YAML facts cache; a failure
    reported and the cache file used), termini hiera cannot read
  - hiera batch over PuppetDB: active nodes, --include-inactive, --nodes-query (PQL errors as
    PuppetDB words them), pages of 50 nodes, a failing page's nodes under .errors while the rest
    go on, three failing pages in a row and the rest are not asked, parallel workers, the same
    document as hiera batch over the same facts as files
  - hiera serve over PuppetDB: answers, a refetch on SIGHUP, a refetch that fails keeps the facts,
    a PuppetDB that is down at start stops the server
  - the hiera command does not load libcurl unless it talks to PuppetDB

usage: tests/puppetdb/errors.py --hiera build/hiera     Prints "N passed, N failed".
"""
import argparse, json, os, re, shutil, signal, subprocess, sys, tempfile, time, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from fake import FakePuppetDB  # noqa: E402

CERTS = os.path.join(HERE, "..", "serve", "certs")


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what + (("\n  " + detail.replace("\n", "\n  ")) if detail else ""), flush=True)


C = Checker()
HIERA = None
ROOT = None


def write(rel, text):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


def run(*args, timeout=60):
    env = {**os.environ, "HIERA_CACHE_DIR": "off"}
    t0 = time.monotonic()
    p = subprocess.run([HIERA, *args], capture_output=True, text=True, env=env, timeout=timeout)
    p.elapsed = time.monotonic() - t0
    return p


def facts_of(name, role="web", extra=None):
    host, _, domain = name.partition(".")
    f = {"hostname": host, "domain": domain, "fqdn": name, "clientcert": name, "role": role,
         "os": {"family": "Debian", "release": {"major": "12"}},
         "trusted": {"authenticated": "remote", "certname": name, "extensions": {"pp_role": role + "server"},
                     "hostname": host, "domain": domain, "external": {}}}
    f.update(extra or {})
    return f


def make_tree():
    write("code/environments/production/hiera.yaml", """version: 5
defaults: {datadir: data, data_hash: yaml_data}
hierarchy:
  - {name: Nodes, path: "nodes/%{trusted.certname}.yaml"}
  - {name: Roles, path: "role/%{facts.role}.yaml"}
  - {name: Common, path: common.yaml}
""")
    write("code/environments/production/data/role/web.yaml", "msg: 'web %{facts.os.family} %{trusted.extensions.pp_role}'\n")
    write("code/environments/production/data/role/db.yaml", "msg: 'db %{facts.os.release.major}'\n")
    write("code/environments/production/data/nodes/web01.example.com.yaml", "special: 'only web01 (%{trusted.authenticated})'\n")
    write("code/environments/production/data/common.yaml",
          "msg: common\nwho: '%{facts.clientcert} %{::role} %{trusted.certname}'\n")


def lookup(*args, node="web01.example.com", key="msg"):
    return run("lookup", "--codedir", os.path.join(ROOT, "code"), "--node", node, *args, key)


# ------------------------------------------------------------------ lookup: misbehaving servers

def check_lookup(good, other):
    url = good.url()
    p = lookup("--puppetdb", url)
    C.check(p.returncode == 0 and p.stdout == "--- web Debian webserver\n", "lookup from PuppetDB", p.stdout + p.stderr)
    p = lookup("--puppetdb", url, key="special")
    C.check(p.stdout == "--- only web01 (remote)\n", "trusted data from PuppetDB's trusted fact", p.stdout + p.stderr)
    p = lookup("--puppetdb", url, key="who")
    C.check(p.stdout == "--- web01.example.com web web01.example.com\n", "facts as top-scope variables", p.stdout + p.stderr)
    for node in ("nobody.example.com", "db01.example.com"):
        p = lookup("--puppetdb", url, node=node)
        C.check(p.returncode == 1 and p.stderr.strip() == "Error: Could not run: No facts available for target node: " + node,
                "no facts for an unknown or deactivated node: " + node, p.stderr)

    def failover(node, cause, what):
        n_before = len(other.requests)
        p = lookup("--puppetdb", url + "," + other.url(), node=node)
        warn = ("Warning: Error connecting to 127.0.0.1 on %d at route %s/pdb/query/v4/nodes/%s/facts, error message "
                "received was '%s'. Failing over to the next PuppetDB server_url in the 'server_urls' list"
                % (good.port, url, node, cause))
        C.check(p.returncode == 0 and p.stdout == "--- web Debian webserver\n" and warn in p.stderr
                and len(other.requests) == n_before + 1, what + ": failover to the next server", p.stdout + p.stderr)
        p = lookup("--puppetdb", url, node=node)
        C.check(p.returncode == 1 and warn in p.stderr and
                ("Error: Could not run: Failed to find facts from PuppetDB at  Failed to execute '/pdb/query/v4/nodes/%s/facts' "
                 "on at least 1 of the following 'server_urls': %s (%s: " % (node, url, url)) in p.stderr,
                what + ": the error names the server and cause", p.stderr)

    other.nodes.update({n: facts_of("web01.example.com") for n in
                        ("err500-a", "html404-a", "trunc-a", "badjson-a", "forbidden-a", "notarray-a", "deep-a", "slow-a")})
    failover("err500-a", "Internal Server Error", "500")
    failover("html404-a", "Not Found", "a 404 that is not PuppetDB's")

    p = lookup("--puppetdb", url + "," + other.url(), node="trunc-a")
    C.check(p.returncode == 0 and "Warning: Error connecting to 127.0.0.1 on %d" % good.port in p.stderr
            and "transfer closed" in p.stderr, "a truncated answer fails over", p.stderr)

    def final(node, text, what):
        n_before = len(other.requests)
        p = lookup("--puppetdb", url + "," + other.url(), node=node)
        C.check(p.returncode == 1 and text in p.stderr and len(other.requests) == n_before and "Warning" not in p.stderr,
                what + ": a final error, no other server asked", p.stderr)

    final("badjson-a", "Error: Could not run: Failed to find facts from PuppetDB at  Unable to parse (PuppetDB's answer from "
          "/pdb/query/v4/nodes/badjson-a/facts): 859: unexpected token at '", "bad JSON")
    final("deep-a", "nesting of 101 is too deep", "JSON nested too deep (Ruby's JSON.parse limit)")
    final("forbidden-a", "Error: Could not run: Failed to find facts from PuppetDB at  [403 Forbidden] Forbidden: you shall not pass",
          "403")
    final("notarray-a", "is not a JSON array", "an answer that is not an array")

    p = lookup("--puppetdb", url + "," + other.url(), "--puppetdb-timeout", "1", node="slow-a")
    C.check(p.returncode == 0 and p.elapsed < 2.8 and
            ("Warning: Request to 127.0.0.1 on %d at route %s/pdb/query/v4/nodes/slow-a/facts timed out after 1 seconds"
             % (good.port, url)) in p.stderr, "a slow server times out and the next is asked (%.1f s)" % p.elapsed, p.stderr)

    p = lookup("--puppetdb", url, node="dribble-web01")
    good.nodes["dribble-web01"] = facts_of("web01.example.com")
    p = lookup("--puppetdb", url, node="dribble-web01")
    C.check(p.returncode == 0 and p.stdout == "--- web Debian webserver\n", "an answer dribbled in tiny chunks", p.stdout + p.stderr)

    closed = FakePuppetDB({})
    dead = closed.url()
    closed.stop()
    p = lookup("--puppetdb", dead + "," + url)
    C.check(p.returncode == 0 and "Warning: Error connecting to 127.0.0.1 on %d" % closed.port in p.stderr and
            "Couldn't connect to server" in p.stderr, "a refused connection fails over", p.stderr)
    p = lookup("--puppetdb", dead + ",http://127.0.0.1:%d" % closed.port)
    C.check(p.returncode == 1 and p.stderr.count("Warning: Error connecting") == 2 and
            "on at least 1 of the following 'server_urls': %s, %s (" % (dead, dead) in p.stderr,
            "every server down: the error lists them", p.stderr)
    # the node name in the route as CGI.escape writes it
    good.nodes["odd name+x"] = facts_of("web01.example.com")
    p = lookup("--puppetdb", url, node="odd name+x")
    C.check(p.returncode == 0 and any(r.startswith("/pdb/query/v4/nodes/odd+name%2Bx/facts") for r in good.requests),
            "node names escaped as Puppet's CGI.escape", p.stderr)
    p = lookup("--puppetdb", "ftp://x")
    C.check(p.returncode == 1 and "only http:// and https://" in p.stderr, "a URL that is not http(s)", p.stderr)


# ------------------------------------------------------------------ TLS and puppetdb.conf

def make_crl(dest):
    d = tempfile.mkdtemp(dir=ROOT)
    open(os.path.join(d, "index.txt"), "w").close()
    with open(os.path.join(d, "crlnumber"), "w") as f:
        f.write("1000\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca = t\n[t]\ndatabase = %s/index.txt\ncrlnumber = %s/crlnumber\ndefault_md = sha256\n"
                "default_crl_days = 3650\n" % (d, d))
    subprocess.run(["openssl", "ca", "-config", os.path.join(d, "ca.cnf"), "-gencrl", "-keyfile", os.path.join(CERTS, "ca.key"),
                    "-cert", os.path.join(CERTS, "ca.pem"), "-out", dest], check=True, capture_output=True)


def puppet_dirs(name):
    """A confdir and ssldir as Puppet's: certname node1.example.com."""
    confdir = os.path.join(ROOT, name)
    ssldir = os.path.join(confdir, "ssl")
    os.makedirs(os.path.join(ssldir, "certs"))
    os.makedirs(os.path.join(ssldir, "private_keys"))
    shutil.copy(os.path.join(CERTS, "ca.pem"), os.path.join(ssldir, "certs", "ca.pem"))
    shutil.copy(os.path.join(CERTS, "node1.pem"), os.path.join(ssldir, "certs", "node1.example.com.pem"))
    shutil.copy(os.path.join(CERTS, "node1.key"), os.path.join(ssldir, "private_keys", "node1.example.com.pem"))
    make_crl(os.path.join(ssldir, "crl.pem"))
    return confdir, ssldir


def conf_args(confdir, ssldir):
    return ["--confdir", confdir, "--ssldir", ssldir, "--certname", "node1.example.com"]


def check_tls(nodes):
    tls = {"cert": os.path.join(CERTS, "server.pem"), "key": os.path.join(CERTS, "server.key"), "ca": os.path.join(CERTS, "ca.pem")}
    good = FakePuppetDB(nodes, inactive={"db01.example.com"}, tls=tls)
    down = FakePuppetDB(nodes, tls=tls, mode="down503")
    wrongname = FakePuppetDB(nodes, tls={"cert": os.path.join(CERTS, "node1.pem"), "key": os.path.join(CERTS, "node1.key"),
                                         "ca": os.path.join(CERTS, "ca.pem")})
    confdir, ssldir = puppet_dirs("etc")
    write("etc/puppetdb.conf", "# PuppetDB\n[main]\nserver_urls = %s\nserver_url_timeout = 5\n" % good.url("https", "localhost"))
    args = conf_args(confdir, ssldir)
    p = lookup(*args, "--facts_terminus", "puppetdb")
    C.check(p.returncode == 0 and p.stdout == "--- web Debian webserver\n", "puppetdb.conf and Puppet's ssldir (client certificate, CA, CRL)",
            p.stdout + p.stderr)
    p = lookup(*args, "--from-puppetdb")
    C.check(p.returncode == 0 and p.stdout == "--- web Debian webserver\n", "--from-puppetdb", p.stdout + p.stderr)
    os.rename(os.path.join(ssldir, "crl.pem"), os.path.join(ssldir, "crl.off"))
    p = lookup(*args, "--facts_terminus", "puppetdb")
    C.check(p.returncode == 1 and "The CRL is missing from '%s/crl.pem'" % ssldir in p.stderr, "a missing CRL", p.stderr)
    p = lookup(*args, "--facts_terminus", "puppetdb", "--certificate_revocation", "false")
    C.check(p.returncode == 0, "certificate_revocation = false needs no CRL", p.stderr)
    os.rename(os.path.join(ssldir, "crl.off"), os.path.join(ssldir, "crl.pem"))
    # TLS failures: each fails over with the server and the cause
    p = lookup("--puppetdb", good.url("https", "localhost"), "--cacert", os.path.join(CERTS, "rogue.pem"))
    C.check(p.returncode == 1 and "Warning: Error connecting to localhost on %d" % good.port in p.stderr and
            "SSL certificate problem" in p.stderr, "a server certificate from another CA", p.stderr)
    p = lookup("--puppetdb", wrongname.url("https", "localhost"), "--cacert", os.path.join(CERTS, "ca.pem"),
               "--cert", os.path.join(CERTS, "node2.pem"), "--key", os.path.join(CERTS, "node2.key"))
    C.check(p.returncode == 1 and "Warning: Error connecting to localhost on %d" % wrongname.port in p.stderr and
            "localhost" in p.stderr and ("subject name" in p.stderr or "does not match" in p.stderr),
            "a server certificate for another name", p.stderr)
    p = lookup("--puppetdb", good.url("https", "localhost"), "--cacert", os.path.join(CERTS, "ca.pem"),
               "--ssldir", os.path.join(ROOT, "nossl"))
    C.check(p.returncode == 1 and "Warning: Error connecting to localhost on %d" % good.port in p.stderr and
            "Failed to execute '/pdb/query/v4/nodes/web01.example.com/facts'" in p.stderr,
            "no client certificate: the server refuses", p.stderr)
    p = lookup("--puppetdb", good.url("https", "localhost"), "--cacert", os.path.join(CERTS, "ca.pem"),
               "--cert", os.path.join(CERTS, "node2.pem"), "--key", os.path.join(CERTS, "node2.key"))
    C.check(p.returncode == 0 and p.stdout == "--- web Debian webserver\n", "--cert/--key/--cacert", p.stdout + p.stderr)
    p = lookup("--puppetdb", good.url("https", "localhost"), "--cert", os.path.join(CERTS, "node2.pem"))
    C.check(p.returncode == 1 and "--cert and --key go together" in p.stderr, "--cert without --key", p.stderr)

    # puppetdb.conf as Config.load reads it
    def conf_error(text, message, what):
        write("etc/puppetdb.conf", text)
        p = lookup(*args, "--facts_terminus", "puppetdb")
        C.check(p.returncode == 1 and message in p.stderr, "puppetdb.conf: " + what, p.stderr)

    conf_error("[main]\nserver_urls = http://localhost:8080\n", "PuppetDB 'server_urls' must be https, found 'http://localhost:8080'",
               "https only")
    conf_error("[main]\nserver_urls = https://localhost:8081/pdb\n", "PuppetDB 'server_urls' cannot contain URL paths", "no path")
    conf_error("[main]\nserver_urls = https://localhost:8081\nwhat is this\n",
               "Unparseable line 'what is this' in PuppetDB config %s/puppetdb.conf:3" % confdir, "an unparseable line")
    conf_error("server_urls = https://localhost:8081\n", "is illegal outside of section in PuppetDB config", "outside a section")
    conf_error("[main]\nserver_urls = https://localhost:8081\nsticky_read_failover = yes\n", "invalid value for Boolean: \"yes\"",
               "a bad boolean")
    # the servers in turn; sticky_read_failover keeps asking the one that answered
    urls = "%s, %s" % (down.url("https", "localhost"), good.url("https", "localhost"))
    for sticky, expected in (("false", 2), ("true", 1)):
        write("etc/puppetdb.conf", "[main]\nserver_urls = %s\nsticky_read_failover = %s\n" % (urls, sticky))
        before = len(down.requests)
        p = run("batch", "--codedir", os.path.join(ROOT, "code"), *args, "--from-puppetdb", "--jobs", "1", "msg")
        asked = len(down.requests) - before
        C.check(p.returncode == 0 and asked == expected, "sticky_read_failover = %s: the failed server asked %d times (%d)"
                % (sticky, expected, asked), p.stderr[-2000:])
    # the route puppet lookup --node takes (lookup application, Puppet 7)
    write("etc/puppetdb.conf", "[main]\nserver_urls = %s\n" % good.url("https", "localhost"))
    write("var/yaml/facts/web01.example.com.yaml", "--- !ruby/object:Puppet::Node::Facts\nname: web01.example.com\nvalues:\n"
          "  role: db\n  os: {release: {major: '11'}}\n")
    write("var/yaml/facts/db01.example.com.yaml", "--- !ruby/object:Puppet::Node::Facts\nname: db01.example.com\nvalues:\n"
          "  role: db\n  os: {release: {major: '11'}}\n")
    vardir = ["--vardir", os.path.join(ROOT, "var")]
    p = lookup(*args, *vardir)
    C.check(p.stdout == "--- db 11\n", "no route: Puppet's YAML facts cache", p.stdout + p.stderr)
    for routes, out, what in (("lookup:\n  facts:\n    terminus: puppetdb\n", "--- web Debian webserver\n", "routes.yaml lookup: facts terminus"),
                              ("server:\n  facts:\n    terminus: puppetdb\n", "--- db 11\n", "routes.yaml server: is not lookup's"),
                              ("lookup:\n  facts:\n    terminus: :puppetdb\n", "--- web Debian webserver\n", "routes.yaml with a Symbol"),
                              ("lookup:\n  facts:\n    terminus: yaml\n    cache: puppetdb\n", "--- web Debian webserver\n",
                               "routes.yaml: PuppetDB as the cache")):
        write("etc/routes.yaml", routes)
        p = lookup(*args, *vardir)
        C.check(p.stdout == out, what, p.stdout + p.stderr)
    write("etc/routes.yaml", "lookup:\n  facts:\n    terminus: nosuch\n")
    p = lookup(*args, *vardir)
    C.check(p.returncode == 1 and "Could not find terminus nosuch for indirection facts" in p.stderr, "an unknown terminus", p.stderr)
    os.unlink(os.path.join(confdir, "routes.yaml"))
    p = lookup(*args, *vardir, "--facts_terminus", "json")
    C.check(p.returncode == 1 and "hiera cannot read facts from Puppet's 'json' facts terminus" in p.stderr, "a terminus hiera cannot read",
            p.stderr)
    p = lookup(*args, *vardir, "--storeconfigs")
    C.check(p.stdout == "--- web Debian webserver\n", "storeconfigs: PuppetDB first", p.stdout + p.stderr)
    p = lookup(*args, *vardir, "--storeconfigs", node="db01.example.com")
    C.check(p.returncode == 1 and "No facts available for target node: db01.example.com" in p.stderr,
            "storeconfigs: PuppetDB's empty answer for a deactivated node is taken (as Puppet's cache)", p.stdout + p.stderr)
    p = lookup(*args, *vardir, "--storeconfigs", node="newnode.example.com")
    C.check(p.returncode == 1 and "No facts available for target node: newnode.example.com" in p.stderr and "Error: Cached" not in p.stderr,
            "storeconfigs: a node PuppetDB does not know", p.stderr)
    write("etc/puppetdb.conf", "[main]\nserver_urls = %s\n" % down.url("https", "localhost"))
    p = lookup(*args, *vardir, "--storeconfigs")
    C.check(p.returncode == 0 and p.stdout == "--- db 11\n" and "Error: Cached facts for web01.example.com failed: Failed to find facts "
            "from PuppetDB at  Failed to execute" in p.stderr, "storeconfigs: PuppetDB down, Puppet's facts cache used", p.stdout + p.stderr)
    for f in (good, down, wrongname):
        f.stop()


# ------------------------------------------------------------------ batch

def batch(*args):
    return run("batch", "--codedir", os.path.join(ROOT, "code"), *args)


def check_batch(nodes, inactive):
    fake = FakePuppetDB(nodes, inactive=inactive)
    url = fake.url()
    p = batch("--puppetdb", url, "msg", "special", "who")
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    active = sorted(n for n in nodes if n not in inactive)
    C.check(list(doc) == active, "batch over PuppetDB: the active nodes, sorted", p.stdout[:500] + p.stderr)
    # the same facts as files
    d = os.path.join(ROOT, "factsdir")
    os.makedirs(d, exist_ok=True)
    for n in active:
        with open(os.path.join(d, n + ".json"), "w") as f:
            json.dump(nodes[n], f)
    q = batch("--facts-dir", d, "msg", "special", "who")
    C.check(p.stdout == q.stdout and p.returncode == q.returncode == 0, "batch over PuppetDB equals batch over the same facts as files",
            p.stdout[:300] + "\n---\n" + q.stdout[:300])
    p2 = batch("--puppetdb", url, "--jobs", "2", "msg", "special", "who")
    C.check(p2.stdout == p.stdout, "two worker processes give the same document", p2.stderr)
    p = batch("--puppetdb", url, "--include-inactive", "msg")
    C.check(p.returncode == 0 and sorted(json.loads(p.stdout)) == sorted(nodes) and
            json.loads(p.stdout)["db01.example.com"]["msg"] == "db 12", "--include-inactive", p.stdout[:300] + p.stderr)
    fake.pql_answer = [{"certname": "web01.example.com"}, {"certname": "db01.example.com"}, {"certname": "web01.example.com"}]
    p = batch("--puppetdb", url, "--nodes-query", 'inventory[certname] { facts.os.family = "Debian" }', "msg")
    C.check(p.returncode == 0 and list(json.loads(p.stdout)) == ["db01.example.com", "web01.example.com"],
            "--nodes-query: the certnames it selects, each once", p.stdout + p.stderr)
    C.check(any('"query": "inventory[certname] { facts.os.family = \\"Debian\\" }"' in r for r in fake.requests),
            "--nodes-query sends the PQL as given", "\n".join(fake.requests[-3:]))
    fake.pql_answer = [{"name": "x"}]
    p = batch("--puppetdb", url, "--nodes-query", "facts[name] {}", "msg")
    C.check(p.returncode == 1 and "the nodes query must give rows with a certname" in p.stderr, "--nodes-query rows without certname",
            p.stderr)
    p = batch("--puppetdb", url, "--nodes-query", "nodes syntax", "msg")
    C.check(p.returncode == 1 and "Error: Could not run: cannot list the nodes of PuppetDB: [400 Bad Request] PQL parse error at line 1, "
            "column 5: nodes syntax ^ Expected one of: [ {" in p.stderr, "a PQL error as PuppetDB words it", p.stderr)
    p = batch("--puppetdb", url, "--nodes-query", '["from", "nodes"', "msg")
    C.check(p.returncode == 1 and "the query is neither PQL nor a JSON array" in p.stderr, "a broken AST", p.stderr)
    p = batch("--puppetdb", url, "--facts-dir", d, "msg")
    C.check(p.returncode == 1 and "not both" in p.stderr, "PuppetDB and --facts-dir together", p.stderr)
    check_check_and_diff(fake, active)
    fake.stop()

    # pages: 50 nodes a request; a failing page's nodes are reported and the rest go on
    many = {}
    for i in range(50):
        many["a%03d.example.com" % i] = facts_of("a%03d.example.com" % i)
    for i in range(150):
        many["pagefail%03d.example.com" % i] = facts_of("pagefail%03d.example.com" % i)
    for i in range(100):
        many["z%03d.example.com" % i] = facts_of("z%03d.example.com" % i, role="db")
    fake = FakePuppetDB(many)
    p = batch("--puppetdb", fake.url(), "--jobs", "1", "msg")
    pages = [r for r in fake.requests if "inventory" in r]
    doc = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    errors = doc.get(".errors", {})
    C.check(p.returncode == 2 and len(pages) == 4 and len([n for n in doc if n.startswith("a")]) == 50 and
            all(errors.get("pagefail%03d.example.com" % i, "").startswith("cannot fetch the facts from PuppetDB: Failed to execute "
                "'/pdb/query/v4' on at least 1 of the following 'server_urls': %s (%s: 500 Internal Server Error)" % (fake.url(), fake.url()))
                for i in range(150)) and
            all(errors.get("z%03d.example.com" % i, "").startswith("not fetched: PuppetDB failed 3 times in a row") for i in range(100)),
            "pages of 50: the good page answered, three failing pages reported, the rest not asked (%d requests)" % len(pages),
            p.stderr[-1500:])
    C.check("nodes" in p.stderr and "failed" in p.stderr, "the summary on stderr names the failures", p.stderr[-600:])
    fake.stop()
    some = {**{k: v for k, v in many.items() if not k.startswith("pagefail")},
            **{"pagefail000.example.com": facts_of("pagefail000.example.com")}}
    fake = FakePuppetDB(some)
    p = batch("--puppetdb", fake.url(), "--jobs", "1", "msg")
    doc = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    errs = doc.get(".errors", {})
    C.check(p.returncode == 2 and len(errs) == 50 and len([n for n in doc if n != ".errors"]) == 101,
            "one failing page: its 50 nodes under .errors, the other 101 answered", p.stderr[-800:])
    fake.stop()
    slow = {**{k: v for k, v in list(many.items())[:60]}, "slow-x.example.com": facts_of("slow-x.example.com"),
            "dribble-y.example.com": facts_of("dribble-y.example.com")}
    fake = FakePuppetDB({k: v for k, v in slow.items() if not k.startswith("pagefail")}, slow=4)
    t0 = time.monotonic()
    p = batch("--puppetdb", fake.url(), "--jobs", "1", "--puppetdb-timeout", "1", "msg")
    took = time.monotonic() - t0
    doc = json.loads(p.stdout) if p.stdout.startswith("{") else {}
    errs = doc.get(".errors", {})
    C.check(p.returncode == 2 and took < 4 and "timed out after 1 seconds" in errs.get("slow-x.example.com", "") and
            "dribble-y.example.com" in errs and doc.get("a000.example.com") == {"msg": "web Debian webserver"},
            "a page that times out: its nodes reported, no hang (%.1f s)" % took, p.stdout[-800:] + p.stderr[-800:])
    fake.stop()
    fake = FakePuppetDB({"dribble-y.example.com": facts_of("dribble-y.example.com"), "b.example.com": facts_of("b.example.com")})
    p = batch("--puppetdb", fake.url(), "msg")
    C.check(p.returncode == 0 and json.loads(p.stdout).get("dribble-y.example.com") == {"msg": "web Debian webserver"},
            "a page dribbled in tiny chunks", p.stdout + p.stderr)
    fake.stop()


# ------------------------------------------------------------------ check and diff

def check_check_and_diff(fake, active):
    """hiera check and hiera diff over PuppetDB's nodes answer as over the same facts as files of
    Puppet's facts cache (the node's stored facts, as PuppetDB's are)."""
    cache = os.path.join(ROOT, "cachedir")
    os.makedirs(cache, exist_ok=True)
    for n in active:
        write("cachedir/%s.yaml" % n, "--- !ruby/object:Puppet::Node::Facts\nname: %s\nvalues: %s\n" % (n, json.dumps(fake.nodes[n])))
    code = os.path.join(ROOT, "code")
    env = os.path.join(code, "environments", "production")
    write("code/environments/production/data/role/unused.yaml", "msg: nobody reads this\n")
    for fmt in ("json", "text"):
        p = run("check", env, "--puppetdb", fake.url(), "--format", fmt)
        q = run("check", env, "--facts-dir", cache, "--format", fmt)
        C.check(p.stdout == q.stdout and p.returncode == q.returncode and "unreached-file" in p.stdout,
                "hiera check over PuppetDB equals hiera check over the same facts as files (%s)" % fmt,
                p.stdout[-800:] + p.stderr + "\n---\n" + q.stdout[-800:])
    p = run("check", env, "--puppetdb", fake.url(), "--facts-dir", cache)
    C.check(p.returncode == 2 and "not both" in p.stderr, "hiera check: PuppetDB and --facts-dir together", p.stderr)
    old = os.path.join(ROOT, "old")
    shutil.copytree(code, old)
    write("code/environments/production/data/role/web.yaml", "msg: 'web changed %{facts.os.family}'\n")
    for fmt in ("json", "text"):
        p = run("diff", old, code, "--puppetdb", fake.url(), "--format", fmt, "--color", "never")
        q = run("diff", old, code, "--facts-dir", cache, "--format", fmt, "--color", "never")
        C.check(p.stdout == q.stdout and p.returncode == q.returncode == 1 and "web changed" in p.stdout,
                "hiera diff over PuppetDB equals hiera diff over the same facts as files (%s)" % fmt,
                p.stdout[-800:] + p.stderr + "\n---\n" + q.stdout[-800:] + q.stderr)
    p = run("diff", old, code, "--puppetdb", fake.url(), "--explain", "msg", "--node", "web01.example.com", "--color", "never")
    q = run("diff", old, code, "--facts-dir", cache, "--explain", "msg", "--node", "web01.example.com", "--color", "never")
    C.check(p.stdout == q.stdout and "web changed" in p.stdout, "hiera diff --explain over PuppetDB", p.stdout + p.stderr)
    write("code/environments/production/data/role/web.yaml", "msg: 'web %{facts.os.family} %{trusted.extensions.pp_role}'\n")
    os.unlink(os.path.join(env, "data", "role", "unused.yaml"))
    shutil.rmtree(old)


# ------------------------------------------------------------------ serve

def get(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def start_serve(*args):
    env = {**os.environ, "HIERA_CACHE_DIR": "off"}
    log = open(os.path.join(ROOT, "serve.log"), "a+")
    p = subprocess.Popen([HIERA, "serve", "--codedir", os.path.join(ROOT, "code"), "--listen", "127.0.0.1:0", "--threads", "2",
                          "--no-watch", *args], stdout=log, stderr=log, env=env)
    port = None
    for _ in range(200):
        log.seek(0)
        m = re.search(r"port (\d+) \(", log.read())
        if m:
            port = int(m.group(1))
            break
        if p.poll() is not None:
            break
        time.sleep(0.05)
    return p, port, log


def log_wait(log, text, n=1, limit=10):
    for _ in range(int(limit / 0.05)):
        log.seek(0)
        if log.read().count(text) >= n:
            return True
        time.sleep(0.05)
    return False


def check_serve(nodes, inactive):
    fake = FakePuppetDB(dict(nodes), inactive=inactive)
    if os.path.exists(os.path.join(ROOT, "serve.log")):
        os.unlink(os.path.join(ROOT, "serve.log"))
    p, port, log = start_serve("--puppetdb", fake.url(), "--puppetdb-refresh", "0")
    C.check(port is not None, "hiera serve over PuppetDB starts")
    if port is None:
        p.kill()
        return
    st, body = get(port, "/v1/lookup?node=web01.example.com&key=msg")
    C.check(st == 200 and body.get("value") == "web Debian webserver", "serve: an answer from PuppetDB's facts", str(body))
    st, body = get(port, "/v1/nodes")
    C.check(body.get("nodes") == sorted(n for n in nodes if n not in inactive), "serve: PuppetDB's active nodes", str(body))
    st, body = get(port, "/v1/lookup?node=db01.example.com&key=msg")
    C.check(st == 404 and "in PuppetDB" in body.get("error", ""), "serve: an unknown node", str(body))
    fake.nodes["web09.example.com"] = facts_of("web09.example.com")
    p.send_signal(signal.SIGHUP)
    ok = log_wait(log, "reloaded (SIGHUP)")
    st, body = get(port, "/v1/lookup?node=web09.example.com&key=msg")
    C.check(ok and st == 200 and body.get("value") == "web Debian webserver", "serve: SIGHUP fetches PuppetDB's nodes again", str(body))
    fake.mode = "down503"
    p.send_signal(signal.SIGHUP)
    ok = log_wait(log, "reloaded (SIGHUP)", 2) and log_wait(log, "the facts fetched before are kept")
    st, body = get(port, "/v1/lookup?node=web09.example.com&key=msg")
    C.check(ok and st == 200 and body.get("value") == "web Debian webserver", "serve: PuppetDB down at a refetch keeps the facts", str(body))
    p.send_signal(signal.SIGTERM)
    C.check(p.wait(timeout=20) == 0, "serve stops on SIGTERM")
    p, port, log = start_serve("--puppetdb", fake.url())
    rc = p.wait(timeout=30)
    log.seek(0)
    text = log.read()
    C.check(rc == 1 and "hiera serve: cannot fetch the nodes from PuppetDB at %s" % fake.url() in text,
            "serve: PuppetDB down at start stops the server", text[-600:])
    fake.stop()


# ------------------------------------------------------------------ libcurl only when needed

def check_lazy(url):
    ldd = subprocess.run(["ldd", HIERA], capture_output=True, text=True).stdout
    C.check("libcurl" not in ldd, "the hiera command is not linked with libcurl", ldd)
    facts = write("lazy.yaml", json.dumps(facts_of("web01.example.com")))
    env = {**os.environ, "HIERA_CACHE_DIR": "off", "LD_DEBUG": "files"}
    p = subprocess.run([HIERA, "lookup", "--codedir", os.path.join(ROOT, "code"), "--node", "web01.example.com", "--facts", facts, "msg"],
                       capture_output=True, text=True, env=env)
    C.check(p.stdout == "--- web Debian webserver\n" and "libcurl" not in p.stderr, "a lookup without PuppetDB does not load libcurl",
            p.stdout + p.stderr[-300:])
    p = subprocess.run([HIERA, "lookup", "--codedir", os.path.join(ROOT, "code"), "--node", "web01.example.com", "--puppetdb", url, "msg"],
                       capture_output=True, text=True, env=env)
    C.check(p.stdout == "--- web Debian webserver\n" and "libcurl.so" in p.stderr, "a lookup from PuppetDB loads libcurl", p.stdout)


def main():
    global HIERA, ROOT
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    HIERA = os.path.abspath(ap.parse_args().hiera)
    ROOT = tempfile.mkdtemp(prefix="hiera-pdb-errors-")
    try:
        make_tree()
        nodes = {n: facts_of(n) for n in ("web01.example.com", "web02.example.com")}
        nodes["db01.example.com"] = facts_of("db01.example.com", role="db")
        inactive = {"db01.example.com"}
        good = FakePuppetDB(nodes, inactive=inactive)
        other = FakePuppetDB(nodes, misbehave=False)
        check_lookup(good, other)
        check_lazy(good.url())
        good.stop()
        other.stop()
        check_tls(nodes)
        check_batch(nodes, inactive)
        check_serve(nodes, inactive)
    finally:
        shutil.rmtree(ROOT, ignore_errors=True)
    print("puppetdb client (fake PuppetDB): %d passed, %d failed" % (C.passed, C.failed))
    sys.exit(1 if C.failed else 0)


if __name__ == "__main__":
    main()
