#!/usr/bin/env python3
"""hiera against a real PuppetDB (make check-puppetdb; CI runs it): starts Debian's PuppetDB with
its own PostgreSQL cluster in a scratch folder, loads facts into it through its command API, and
compares hiera with Puppet asking the same PuppetDB.

  1. installs what is missing (as root): puppetdb, puppet-terminus-puppetdb, postgresql, puppet
  2. PostgreSQL: initdb (as the postgres user when run as root), on a free port and a private
     socket folder; a puppetdb role and database with pg_trgm
  3. certificates made with openssl: a CA ("Puppet CA: hiera-test"), PuppetDB's server
     certificate for localhost, the client's (certname hiera-client.example.com), a CRL; laid out
     as Puppet's ssldir
  4. PuppetDB from /usr/share/puppetdb/puppetdb.jar with a config folder written here: jetty on
     127.0.0.1 only, plain HTTP and TLS on free ports; started, and its status endpoint polled
     until it says running (its start-up time is printed)
  5. facts loaded with `replace facts` (v5) through POST /pdb/cmd/v1: a few hand-made nodes
     (structured facts, numbers, booleans, unicode, trusted data with extensions) and a fleet of
     generated ones; one node deactivated (`deactivate node` v3)
  6. a confdir as Puppet's on a server with PuppetDB: puppet.conf, puppetdb.conf
     (server_urls = https://localhost:PORT), routes.yaml (lookup: facts: terminus: puppetdb), so
     that `puppet lookup --node` (Debian's puppet-terminus-puppetdb) reads facts from PuppetDB
  7. checks: for several nodes and keys, `hiera lookup --node` (same confdir) answers what Puppet
     answers (puppet lookup itself, and tests/tools/puppet-record.rb for many keys in one Puppet
     process); unknown and deactivated nodes; plain HTTP; hiera batch over PuppetDB equals hiera
     batch over the same facts as files and hiera lookup per node; --include-inactive;
     --nodes-query in PQL and AST; hiera serve over PuppetDB
  8. stops PuppetDB and PostgreSQL and removes the scratch folder (also on failure)

usage: tests/puppetdb/real.py --hiera build/hiera [--keep]     Prints "N passed, N failed".
"""
import argparse, glob, json, os, pwd, random, re, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.error, urllib.parse, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
CERTNAME = "hiera-client.example.com"
FLEET = 120


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: " + what + (("\n  " + str(detail).replace("\n", "\n  ")) if detail else ""), flush=True)


C = Checker()


def say(msg):
    print("check-puppetdb: " + msg, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


# ------------------------------------------------------------------ packages

def install_packages():
    need = []
    if not os.path.exists("/usr/share/puppetdb/puppetdb.jar"):
        need.append("puppetdb")
    if not os.path.exists("/usr/lib/ruby/vendor_ruby/puppet/indirector/facts/puppetdb.rb"):
        need.append("puppet-terminus-puppetdb")
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        need.append("postgresql")
    if not shutil.which("puppet"):
        need.append("puppet")
    if not shutil.which("openssl"):
        need.append("openssl")
    if not need:
        return
    if os.geteuid() != 0:
        sys.exit("check-puppetdb: missing packages: %s (install them as root: apt-get install %s)" % (" ".join(need), " ".join(need)))
    say("installing " + " ".join(need))
    subprocess.run(["apt-get", "update", "-qq"], check=False, stdout=subprocess.DEVNULL)
    # (the packages' own services are not started: policy-rc.d or no systemd in a container;
    # this script runs its own)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-qq", *need], check=True, env=env, stdout=subprocess.DEVNULL)


# ------------------------------------------------------------------ PostgreSQL

class Postgres:
    def __init__(self, root):
        self.bindir = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))[-1]
        self.data = os.path.join(root, "pg")
        self.sock = os.path.join(root, "pgsock")
        self.port = free_port()
        self.started = False
        self.as_postgres = os.geteuid() == 0
        for d in (self.data, self.sock):
            os.makedirs(d)
            if self.as_postgres:
                pw = pwd.getpwnam("postgres")
                os.chown(d, pw.pw_uid, pw.pw_gid)

    def cmd(self, *args, **kw):
        argv = [os.path.join(self.bindir, args[0]), *args[1:]]
        if self.as_postgres:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        return subprocess.run(argv, capture_output=True, text=True, **kw)

    def start(self):
        p = self.cmd("initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8")
        if p.returncode:
            raise RuntimeError("initdb failed: " + p.stdout + p.stderr)
        p = self.cmd("pg_ctl", "-D", self.data, "-l", os.path.join(self.data, "server.log"), "-w", "-t", "120", "-o",
                     "-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
                     % (self.port, self.sock), "start")
        if p.returncode:
            raise RuntimeError("pg_ctl start failed: " + p.stdout + p.stderr + self.log())
        self.started = True
        for sql in ("CREATE ROLE puppetdb LOGIN PASSWORD 'hiera-test'",
                    "CREATE DATABASE puppetdb OWNER puppetdb ENCODING 'UTF8' TEMPLATE template0"):
            self.psql("postgres", sql)
        self.psql("puppetdb", "CREATE EXTENSION pg_trgm")

    def psql(self, db, sql):
        p = self.cmd("psql", "-h", self.sock, "-p", str(self.port), "-U", "postgres", "-d", db, "-v", "ON_ERROR_STOP=1", "-c", sql)
        if p.returncode:
            raise RuntimeError("psql: %s: %s" % (sql, p.stderr))

    def log(self):
        try:
            with open(os.path.join(self.data, "server.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""

    def stop(self):
        if self.started:
            self.cmd("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
            self.started = False


# ------------------------------------------------------------------ certificates

def make_certs(d, ssldir):
    """A CA, PuppetDB's certificate (localhost) and the client's, a CRL; the client's laid out as
    Puppet's ssldir (certs/ca.pem, certs/CERTNAME.pem, private_keys/CERTNAME.pem, crl.pem)."""
    os.makedirs(d)

    def ossl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=d)

    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
         "-subj", "/CN=Puppet CA: hiera-test", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, cn, san in (("server", "localhost", "DNS:localhost,IP:127.0.0.1"), ("client", CERTNAME, "DNS:" + CERTNAME)):
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn)
        write(os.path.join(d, name + ".ext"),
              "basicConstraints=CA:FALSE\nsubjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n" % san)
        ossl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", name + ".pem",
             "-days", "30", "-extfile", name + ".ext")
    write(os.path.join(d, "index.txt"), "")
    write(os.path.join(d, "crlnumber"), "1000\n")
    write(os.path.join(d, "ca.cnf"), "[ca]\ndefault_ca = t\n[t]\ndatabase = %s/index.txt\ncrlnumber = %s/crlnumber\n"
          "default_md = sha256\ndefault_crl_days = 30\n" % (d, d))
    ossl("ca", "-config", "ca.cnf", "-gencrl", "-keyfile", "ca.key", "-cert", "ca.pem", "-out", "crl.pem")
    os.makedirs(os.path.join(ssldir, "certs"))
    os.makedirs(os.path.join(ssldir, "private_keys"))
    shutil.copy(os.path.join(d, "ca.pem"), os.path.join(ssldir, "certs", "ca.pem"))
    shutil.copy(os.path.join(d, "client.pem"), os.path.join(ssldir, "certs", CERTNAME + ".pem"))
    shutil.copy(os.path.join(d, "client.key"), os.path.join(ssldir, "private_keys", CERTNAME + ".pem"))
    shutil.copy(os.path.join(d, "crl.pem"), os.path.join(ssldir, "crl.pem"))


# ------------------------------------------------------------------ PuppetDB

class PuppetDB:
    def __init__(self, root, pg, certs):
        self.dir = os.path.join(root, "puppetdb")
        self.http = free_port()
        self.https = free_port()
        self.proc = None
        conf = os.path.join(self.dir, "conf.d")
        write(os.path.join(conf, "config.ini"), """[global]
vardir = {d}/var
logging-config = {d}/logback.xml

[database]
subname = //127.0.0.1:{pgport}/puppetdb
username = puppetdb
password = hiera-test

[puppetdb]
disable-update-checking = true

[jetty]
host = 127.0.0.1
port = {http}
ssl-host = 127.0.0.1
ssl-port = {https}
ssl-key = {certs}/server.key
ssl-cert = {certs}/server.pem
ssl-ca-cert = {certs}/ca.pem
""".format(d=self.dir, pgport=pg.port, http=self.http, https=self.https, certs=certs))
        shutil.copy("/etc/puppetdb/conf.d/auth.conf", conf)
        shutil.copy("/etc/puppetdb/bootstrap.cfg", self.dir)
        os.makedirs(os.path.join(self.dir, "var"))
        write(os.path.join(self.dir, "logback.xml"), """<configuration>
  <appender name="F" class="ch.qos.logback.core.FileAppender">
    <file>{d}/puppetdb.log</file>
    <encoder><pattern>%d %-5p [%c{{2}}] %m%n</pattern></encoder>
  </appender>
  <root level="info"><appender-ref ref="F"/></root>
</configuration>
""".format(d=self.dir))

    def url(self, path=""):
        return "http://127.0.0.1:%d%s" % (self.http, path)

    def start(self, budget=420):
        self.out = open(os.path.join(self.dir, "stdout.log"), "w")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(["java", "-Xmx256m", "-Djava.security.egd=/dev/urandom", "-cp",
                                      "/usr/share/puppetdb/puppetdb.jar", "clojure.main", "-m", "puppetlabs.puppetdb.core",
                                      "services", "--config", os.path.join(self.dir, "conf.d"),
                                      "--bootstrap-config", os.path.join(self.dir, "bootstrap.cfg")],
                                     stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        while time.monotonic() - t0 < budget:
            if self.proc.poll() is not None:
                raise RuntimeError("PuppetDB exited (%d) while starting:\n%s" % (self.proc.returncode, self.log()))
            try:
                with urllib.request.urlopen(self.url("/status/v1/services/puppetdb-status"), timeout=5) as r:
                    if json.loads(r.read()).get("state") == "running":
                        return time.monotonic() - t0
            except (urllib.error.URLError, OSError, ValueError):
                pass
            time.sleep(0.5)
        raise RuntimeError("PuppetDB did not start within %d s:\n%s" % (budget, self.log()))

    def log(self):
        text = ""
        for f in ("stdout.log", "puppetdb.log"):
            try:
                with open(os.path.join(self.dir, f)) as fh:
                    text += fh.read()[-3000:]
            except OSError:
                pass
        return text

    def command(self, certname, command, version, payload):
        q = urllib.parse.urlencode({"certname": certname, "command": command, "version": version})
        req = urllib.request.Request(self.url("/pdb/cmd/v1?" + q), data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def query(self, q):
        req = urllib.request.Request(self.url("/pdb/query/v4"), data=json.dumps({"query": q}).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ------------------------------------------------------------------ the facts and the code

def node_facts(name, role, n):
    host, _, domain = name.partition(".")
    rnd = random.Random(name)
    return {
        "hostname": host, "domain": domain, "fqdn": name, "clientcert": name,
        "role": role, "datacenter": ["dc1", "dc2", "dc3"][n % 3],
        "os": {"family": "Debian" if n % 4 else "RedHat", "name": "Debian" if n % 4 else "Rocky",
               "release": {"major": "12" if n % 4 else "9", "minor": str(n % 10), "full": "12.%d" % (n % 10)},
               "architecture": "amd64"},
        "processors": {"count": 2 + n % 6, "models": ["Intel Xeon"] * (1 + n % 2)},
        "memory": {"system": {"total_bytes": 2 ** 30 * (4 + n % 8), "used": "%.2f GiB" % (rnd.random() * 4)}},
        "load_averages": {"1m": round(rnd.random() * 2, 2), "5m": 0.25, "15m": 0.1},
        "is_virtual": n % 2 == 0,
        "uptime_seconds": 1000 * n + 7,
        "big": 12345678901234567890 + n,
        "zero_padded": "007",
        "note": "caf\u00e9 \u2603 %d" % n,
        "networking": {"interfaces": {"eth0": {"ip": "10.0.%d.%d" % (n // 250, n % 250 + 1), "mtu": 1500},
                                      "lo": {"ip": "127.0.0.1", "mtu": 65536}},
                       "primary": "eth0"},
        "ssh": {"ecdsa": {"key": "AAAA" + "x" * 40, "type": "ecdsa-sha2-nistp256"}},
        "trusted": {"authenticated": "remote", "certname": name, "hostname": host, "domain": domain, "external": {},
                    "extensions": {"pp_role": role, "pp_environment": "production", "1.3.6.1.4.1.34380.1.2.1": "tier%d" % (n % 2)}},
    }


def make_code(code):
    env = os.path.join(code, "environments", "production")
    write(os.path.join(env, "hiera.yaml"), """version: 5
defaults: {datadir: data, data_hash: yaml_data}
hierarchy:
  - {name: Nodes, path: "nodes/%{trusted.certname}.yaml"}
  - {name: Roles, path: "roles/%{trusted.extensions.pp_role}.yaml"}
  - {name: OS, path: "os/%{facts.os.family}/%{facts.os.release.major}.yaml"}
  - {name: Datacenter, path: "dc/%{facts.datacenter}.yaml"}
  - {name: Common, path: common.yaml}
""")
    write(os.path.join(env, "data", "common.yaml"), """lookup_options:
  profile::packages: {merge: unique}
  profile::users: {merge: deep}
profile::motd: "%{facts.hostname} in %{facts.datacenter}: %{facts.os.name} %{facts.os.release.full}, %{facts.processors.count} CPUs, %{facts.note}"
profile::packages: [vim]
profile::users: {root: {shell: /bin/bash}}
profile::numbers: "%{facts.uptime_seconds} %{facts.big} %{facts.load_averages.1m} %{facts.is_virtual} %{facts.zero_padded}"
profile::os: "%{alias('facts.os')}"
profile::eth0: "%{alias('facts.networking.interfaces.eth0')}"
profile::trusted: "%{trusted.authenticated} %{trusted.certname} %{trusted.extensions.pp_environment} %{trusted.hostname}"
profile::memory: "%{facts.memory.system.total_bytes}"
profile::oid: "%{trusted.extensions.1.3.6.1.4.1.34380.1.2.1}"
""")
    write(os.path.join(env, "data", "roles", "web.yaml"),
          "profile::packages: [nginx]\nprofile::users: {www: {uid: 33}}\nprofile::port: 443\n")
    write(os.path.join(env, "data", "roles", "db.yaml"),
          "profile::packages: [postgresql]\nprofile::users: {postgres: {uid: 111}}\nprofile::port: 5432\n")
    write(os.path.join(env, "data", "os", "Debian", "12.yaml"), "profile::packages: [apt-transport-https]\nprofile::repo: bookworm\n")
    write(os.path.join(env, "data", "os", "RedHat", "9.yaml"), "profile::packages: [dnf-automatic]\nprofile::repo: el9\n")
    write(os.path.join(env, "data", "dc", "dc2.yaml"), "profile::ntp: [ntp.dc2.example.com]\nprofile::users: {ops: {uid: 2000}}\n")
    write(os.path.join(env, "data", "nodes", "web01.example.com.yaml"),
          "profile::port: 8443\nprofile::users: {root: {shell: /bin/zsh}}\n")


KEYS = ["profile::motd", "profile::packages", "profile::users", "profile::numbers", "profile::os", "profile::eth0",
        "profile::trusted", "profile::port", "profile::repo", "profile::ntp", "profile::memory", "profile::oid"]


# ------------------------------------------------------------------ the checks

def hiera_env():
    return {**os.environ, "HIERA_CACHE_DIR": "off"}


def hiera_answer(hiera, args, key):
    p = subprocess.run([hiera, "lookup", *args, "--render-as", "json", key], capture_output=True, text=True, env=hiera_env())
    if p.returncode == 0:
        return {"value": json.loads(p.stdout)}
    if p.stdout == "" and p.stderr == "":
        return {"not_found": True}
    return {"error": True, "message": p.stderr.strip()}


def puppet_answers_start(confdir, code, node, keys):
    """Puppet's answers for one node (tests/tools/puppet-record.rb: one Puppet process, a fresh
    compiler per key), started in the background; puppet_answers_wait gives them."""
    qfile = os.path.join(os.path.dirname(confdir), "queries-%s.json" % node)
    write(qfile, json.dumps([{"key": k} for k in keys]))
    # (puppet-record.rb is an application of its own name, which routes.yaml's lookup: section does not
    # reach: the facts terminus is given as the route gives it to `puppet lookup`)
    return subprocess.Popen(["ruby", os.path.join(REPO, "tests", "tools", "puppet-record.rb"), qfile, "--confdir", confdir,
                             "--codedir", code, "--node", node, "--facts_terminus", "puppetdb"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def puppet_answers_wait(p):
    out, err = p.communicate()
    if p.returncode != 0 or not out.strip():
        return None, err
    return json.loads(out.strip().splitlines()[-1]), err


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--keep", action="store_true", help="leave the scratch folder (and say where)")
    ap.add_argument("--fleet", type=int, default=FLEET, help="generated nodes (default %d)" % FLEET)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    install_packages()
    root = tempfile.mkdtemp(prefix="hiera-check-puppetdb-")
    os.chmod(root, 0o755)  # (the postgres user reads its folders in it)
    pg = pdb = None
    t_all = time.monotonic()
    try:
        certs = os.path.join(root, "certs")
        confdir = os.path.join(root, "etc")
        ssldir = os.path.join(confdir, "ssl")
        code = os.path.join(root, "code")
        make_certs(certs, ssldir)
        pg = Postgres(root)
        t0 = time.monotonic()
        pg.start()
        say("PostgreSQL %s started in %.1f s" % (os.path.basename(os.path.dirname(pg.bindir)), time.monotonic() - t0))
        pdb = PuppetDB(root, pg, certs)
        took = pdb.start()
        say("PuppetDB started in %.1f s (http %d, https %d)" % (took, pdb.http, pdb.https))
        run_checks(hiera, root, pdb, confdir, ssldir, code, args.fleet)
    finally:
        if pdb:
            pdb.stop()
        if pg:
            pg.stop()
        if args.keep:
            say("scratch folder kept: " + root)
        else:
            shutil.rmtree(root, ignore_errors=True)
    say("%.0f s in all" % (time.monotonic() - t_all))
    print("puppetdb (real PuppetDB): %d passed, %d failed" % (C.passed, C.failed))
    sys.exit(1 if C.failed else 0)


def run_checks(hiera, root, pdb, confdir, ssldir, code, fleet):
    make_code(code)
    # the nodes: a few by hand, a fleet, one deactivated
    nodes = {"web01.example.com": node_facts("web01.example.com", "web", 1),
             "web02.example.com": node_facts("web02.example.com", "web", 2),
             "db01.example.com": node_facts("db01.example.com", "db", 4),
             "old01.example.com": node_facts("old01.example.com", "web", 5)}
    for i in range(fleet):
        n = "fleet%03d.example.com" % i
        nodes[n] = node_facts(n, "web" if i % 3 else "db", i)
    t0 = time.monotonic()
    stamp = "2024-05-01T12:00:00.000Z"
    for name, facts in nodes.items():
        pdb.command(name, "replace_facts", 5, {"certname": name, "environment": "production", "producer_timestamp": stamp,
                                               "producer": "puppet.example.com", "values": facts})
    pdb.command("old01.example.com", "deactivate_node", 3, {"certname": "old01.example.com",
                                                           "producer_timestamp": "2024-05-02T12:00:00.000Z"})
    active = sorted(n for n in nodes if n != "old01.example.com")
    for _ in range(600):
        got = pdb.query(["from", "nodes", ["extract", ["certname", "deactivated"], ["=", "node_state", "any"]]])
        if len(got) == len(nodes) and any(r["certname"] == "old01.example.com" and r["deactivated"] for r in got):
            break
        time.sleep(0.2)
    C.check(len(got) == len(nodes), "PuppetDB took the facts of %d nodes (%.1f s)" % (len(nodes), time.monotonic() - t0))

    write(os.path.join(confdir, "puppet.conf"), "[main]\ncertname = %s\nssldir = %s\nvardir = %s\ncodedir = %s\n"
          % (CERTNAME, ssldir, os.path.join(root, "var"), code))
    write(os.path.join(confdir, "puppetdb.conf"), "[main]\nserver_urls = https://localhost:%d\nserver_url_timeout = 60\n" % pdb.https)
    write(os.path.join(confdir, "routes.yaml"), "---\nlookup:\n  facts:\n    terminus: puppetdb\n")
    # hiera reads the same settings: puppet.conf (certname, ssldir, codedir), puppetdb.conf, routes.yaml
    base = ["--confdir", confdir]

    # 1. hiera lookup --node against puppet lookup --node, through routes.yaml
    t0 = time.monotonic()
    compare_nodes = ["web01.example.com", "db01.example.com", "fleet000.example.com", "fleet002.example.com"]
    # (the first Puppet alone: it makes its vardir's folders, which Puppets started together race for)
    answers = {compare_nodes[0]: puppet_answers_wait(puppet_answers_start(confdir, code, compare_nodes[0], KEYS))}
    running = {node: puppet_answers_start(confdir, code, node, KEYS) for node in compare_nodes[1:]}
    for node in compare_nodes:
        want, err = answers[node] if node in answers else puppet_answers_wait(running[node])
        C.check(want is not None, "Puppet answers for " + node, err[-1500:])
        if want is None:
            continue
        for key, w in zip(KEYS, want):
            got = hiera_answer(hiera, base + ["--node", node], key)
            C.check(json.dumps(got) == json.dumps(w), "hiera lookup --node %s %s equals Puppet's" % (node, key),
                    "hiera:  %s\npuppet: %s" % (json.dumps(got)[:600], json.dumps(w)[:600]))
    say("lookups compared for %d nodes x %d keys (%.0f s)" % (len(compare_nodes), len(KEYS), time.monotonic() - t0))
    # puppet lookup itself, and the nodes without facts
    for node, key in (("web02.example.com", "profile::motd"), ("web01.example.com", "profile::users")):
        p = subprocess.run(["puppet", "lookup", "--confdir", confdir, "--codedir", code, "--node", node, "--render-as", "json",
                            "--merge", "deep", key], capture_output=True, text=True)
        q = subprocess.run([hiera, "lookup", *base, "--node", node, "--render-as", "json", "--merge", "deep", key],
                           capture_output=True, text=True, env=hiera_env())
        C.check(p.returncode == q.returncode == 0 and p.stdout == q.stdout, "puppet lookup --node %s %s: same output" % (node, key),
                "puppet: %s%s\nhiera: %s%s" % (p.stdout, p.stderr[-500:], q.stdout, q.stderr))
    for node in ("old01.example.com", "nosuch.example.com"):
        p = subprocess.run(["puppet", "lookup", "--confdir", confdir, "--codedir", code, "--node", node, "profile::motd"],
                           capture_output=True, text=True)
        q = subprocess.run([hiera, "lookup", *base, "--node", node, "profile::motd"], capture_output=True, text=True, env=hiera_env())
        msg = "Error: Could not run: No facts available for target node: " + node
        C.check(p.returncode == q.returncode == 1 and msg in p.stderr and q.stderr.strip() == msg,
                "%s: no facts, as Puppet says" % node, "puppet: %s\nhiera: %s" % (p.stderr, q.stderr))
    # the same over plain HTTP, and with facts_terminus instead of routes.yaml
    got = hiera_answer(hiera, ["--codedir", code, "--node", "web01.example.com", "--puppetdb", pdb.url()], "profile::motd")
    want = hiera_answer(hiera, base + ["--node", "web01.example.com"], "profile::motd")
    C.check("value" in got and got == want, "plain HTTP (--puppetdb http://127.0.0.1:PORT)", str(got))
    os.rename(os.path.join(confdir, "routes.yaml"), os.path.join(confdir, "routes.off"))
    got = hiera_answer(hiera, base + ["--node", "web01.example.com", "--facts_terminus", "puppetdb"], "profile::motd")
    C.check(got == want, "facts_terminus = puppetdb", str(got))
    # Puppet's settings on the command line win over puppet.conf's
    got = hiera_answer(hiera, base + ["--node", "web01.example.com", "--facts_terminus", "puppetdb", "--ssldir",
                                      os.path.join(root, "nossl")], "profile::motd")
    C.check(got.get("error") and "The CA certificates are missing from '%s/certs/ca.pem'" % os.path.join(root, "nossl")
            in got["message"],
            "--ssldir on the command line over puppet.conf's", str(got))
    got = hiera_answer(hiera, base + ["--node", "web01.example.com"], "profile::motd")
    C.check(got.get("error") and "No facts available" in got["message"], "without routes.yaml: Puppet's YAML facts cache", str(got))
    os.rename(os.path.join(confdir, "routes.off"), os.path.join(confdir, "routes.yaml"))

    # 2. hiera batch over PuppetDB
    t0 = time.monotonic()
    p = subprocess.run([hiera, "batch", *base, "--from-puppetdb", *KEYS], capture_output=True, text=True, env=hiera_env())
    took = time.monotonic() - t0
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    C.check(p.returncode == 0 and list(doc) == active, "batch --from-puppetdb: the %d active nodes (%.1f s)" % (len(active), took),
            p.stderr[-1500:])
    factsdir = os.path.join(root, "facts")
    os.makedirs(factsdir)
    for n in active:
        write(os.path.join(factsdir, n + ".json"), json.dumps(nodes[n]))
    q = subprocess.run([hiera, "batch", "--codedir", code, "--facts-dir", factsdir, *KEYS], capture_output=True, text=True,
                       env=hiera_env())
    C.check(q.returncode == 0 and json.loads(q.stdout) == doc, "batch over PuppetDB equals batch over the same facts as files",
            q.stderr[-800:])
    t1 = time.monotonic()
    q = subprocess.run([hiera, "batch", "--codedir", code, "--facts-dir", factsdir, *KEYS], capture_output=True, text=True,
                       env=hiera_env())
    say("batch of %d nodes x %d keys: %.2f s from PuppetDB (TLS, pages of 50), %.2f s from files" % (len(active), len(KEYS), took,
                                                                                                  time.monotonic() - t1))
    # and each node's answers are what hiera lookup --node (PuppetDB's own per-node answer) gives
    for node in ("web01.example.com", "fleet007.example.com", "fleet099.example.com"):
        for key in KEYS:
            a = hiera_answer(hiera, base + ["--node", node], key)
            C.check(a.get("value", "(none)") == doc.get(node, {}).get(key, "(none)"),
                    "batch's %s %s equals hiera lookup --node's" % (node, key))
    p = subprocess.run([hiera, "batch", *base, "--from-puppetdb", "--jobs", "2", *KEYS], capture_output=True, text=True,
                       env=hiera_env())
    C.check(p.returncode == 0 and json.loads(p.stdout) == doc, "batch over PuppetDB with two worker processes", p.stderr[-500:])
    p = subprocess.run([hiera, "batch", *base, "--from-puppetdb", "--include-inactive", "profile::repo"], capture_output=True,
                       text=True, env=hiera_env())
    C.check(p.returncode == 0 and sorted(json.loads(p.stdout)) == sorted(nodes), "--include-inactive adds the deactivated node",
            p.stderr[-500:])
    pql = 'inventory[certname] { facts.os.family = "RedHat" and trusted.extensions.pp_role = "db" }'
    want_nodes = sorted(n for n, f in nodes.items() if n != "old01.example.com" and f["os"]["family"] == "RedHat"
                        and f["trusted"]["extensions"]["pp_role"] == "db")
    p = subprocess.run([hiera, "batch", *base, "--from-puppetdb", "--nodes-query", pql, "profile::repo"], capture_output=True,
                       text=True, env=hiera_env())
    got = json.loads(p.stdout) if p.returncode == 0 else {}
    C.check(list(got) == want_nodes and all(v == {"profile::repo": "el9"} for v in got.values()),
            "--nodes-query (PQL): %d nodes" % len(want_nodes), p.stdout[:300] + p.stderr[-500:])
    ast = json.dumps(["from", "nodes", ["extract", ["certname"], ["~", "certname", "^web"]]])
    p = subprocess.run([hiera, "batch", "--codedir", code, "--puppetdb", pdb.url(), "--nodes-query", ast, "profile::port"],
                       capture_output=True, text=True, env=hiera_env())
    got = json.loads(p.stdout) if p.returncode == 0 else {}
    C.check(got == {"web01.example.com": {"profile::port": 8443}, "web02.example.com": {"profile::port": 443}},
            "--nodes-query (AST) over plain HTTP", p.stdout + p.stderr)
    p = subprocess.run([hiera, "batch", *base, "--from-puppetdb", "--nodes-query", "nodes[certname] { bogus = 1 }", "profile::port"],
                       capture_output=True, text=True, env=hiera_env())
    C.check(p.returncode == 1 and "cannot list the nodes of PuppetDB: [400 Bad Request] 'bogus' is not a queryable object for nodes"
            in p.stderr, "a bad query: PuppetDB's message", p.stderr)

    # hiera check and hiera diff over PuppetDB, against the same facts as files of Puppet's facts cache
    cachedir = os.path.join(root, "facts-cache")
    os.makedirs(cachedir)
    for n in active:
        write(os.path.join(cachedir, n + ".yaml"), "--- !ruby/object:Puppet::Node::Facts\nname: %s\nvalues: %s\n"
              % (n, json.dumps(nodes[n])))
    envdir = os.path.join(code, "environments", "production")
    p = subprocess.run([hiera, "check", envdir, "--confdir", confdir, "--from-puppetdb", "--format", "json"],
                       capture_output=True, text=True, env=hiera_env())
    q = subprocess.run([hiera, "check", envdir, "--facts-dir", cachedir, "--format", "json"], capture_output=True, text=True,
                       env=hiera_env())
    C.check(p.stdout == q.stdout and p.returncode == q.returncode and '"nodes": %d' % len(active) in p.stdout,
            "hiera check over PuppetDB equals hiera check over the same facts as files", p.stdout[-600:] + p.stderr[-600:])
    old = os.path.join(root, "code-old")
    shutil.copytree(code, old)
    write(os.path.join(envdir, "data", "dc", "dc2.yaml"), "profile::ntp: [ntp1.dc2.example.com]\nprofile::users: {ops: {uid: 2001}}\n")
    p = subprocess.run([hiera, "diff", old, code, "--confdir", confdir, "--from-puppetdb", "--format", "json"],
                       capture_output=True, text=True, env=hiera_env())
    q = subprocess.run([hiera, "diff", old, code, "--facts-dir", cachedir, "--format", "json"], capture_output=True, text=True,
                       env=hiera_env())
    C.check(p.returncode == q.returncode == 1 and p.stdout == q.stdout and "ntp1.dc2.example.com" in p.stdout,
            "hiera diff over PuppetDB equals hiera diff over the same facts as files", p.stdout[-600:] + p.stderr[-600:])
    shutil.copy(os.path.join(old, "environments", "production", "data", "dc", "dc2.yaml"), os.path.join(envdir, "data", "dc", "dc2.yaml"))

    # 3. hiera serve over PuppetDB
    env = hiera_env()
    log = open(os.path.join(root, "serve.log"), "w+")
    sp = subprocess.Popen([hiera, "serve", *base, "--from-puppetdb", "--listen", "127.0.0.1:0", "--threads", "2", "--no-watch"],
                          stdout=log, stderr=log, env=env)
    port = None
    for _ in range(600):
        log.seek(0)
        m = re.search(r"port (\d+) \(", log.read())
        if m or sp.poll() is not None:
            port = int(m.group(1)) if m else None
            break
        time.sleep(0.05)
    C.check(port is not None, "hiera serve --from-puppetdb starts", log.read()[-800:] if port is None else "")
    if port:
        for node in ("web01.example.com", "fleet011.example.com"):
            for key in ("profile::motd", "profile::users", "profile::os"):
                with urllib.request.urlopen("http://127.0.0.1:%d/v1/lookup?%s" % (port, urllib.parse.urlencode(
                        {"node": node, "key": key})), timeout=30) as r:
                    body = json.loads(r.read())
                C.check(body.get("value") == doc[node].get(key), "serve %s %s equals batch" % (node, key), str(body)[:300])
        with urllib.request.urlopen("http://127.0.0.1:%d/v1/nodes?limit=100000" % port, timeout=30) as r:
            got = json.loads(r.read())
            C.check(got.get("nodes") == active and got.get("total") == len(active), "serve lists PuppetDB's active nodes",
                    str(got)[:300])
    sp.send_signal(signal.SIGTERM)
    C.check(sp.wait(timeout=30) == 0, "hiera serve stops")


if __name__ == "__main__":
    main()
