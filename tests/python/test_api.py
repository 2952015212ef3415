"""The Python module's API beyond the recorded cases: values of every kind, errors as exceptions
with file and line, facts given every way, keys and batch against the hiera command's own output,
many threads on one object (with the GIL released during lookups), Hiera 3."""
import json, os, shutil, subprocess, sys, threading, time

import pytest

import hiera
from conftest import ROOT, run_hiera

REPO = os.path.join(ROOT, "examples", "control-repo")
WEB01 = os.path.join(REPO, "facts", "web01.example.com.yaml")


def repo_args(confdir):
    return ["--confdir", confdir, "--codedir", REPO, "--environmentpath", os.path.join(REPO, "environments")]


@pytest.fixture
def h(tmp_path):
    return hiera.Hiera(codedir=REPO, environmentpath=os.path.join(REPO, "environments"), confdir=str(tmp_path))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


@pytest.fixture
def tree(tmp_path):
    """A small tree of values of every kind, an eyaml-free Sensitive (convert_to), a broken file."""
    root = tmp_path / "code"
    write(str(root / "hiera.yaml"), "version: 5\ndefaults: {datadir: data, data_hash: yaml_data}\nhierarchy:\n"
          "  - {name: node, path: 'nodes/%{trusted.certname}.yaml'}\n  - {name: os, path: 'os/%{facts.os.family}.yaml'}\n"
          "  - {name: common, path: common.yaml}\n")
    write(str(root / "data" / "common.yaml"),
          "big: 123456789012345678901234567890\nneg: -9223372036854775808\nflt: 1.5\nflag: true\nnothing: ~\n"
          "str: \"caf\\u00e9\"\nlist: [1, two, {three: 3}]\nhash: {b: 1, a: 2}\nsecret: hunter2\n"
          "lookup_options:\n  secret: {convert_to: Sensitive}\n  merged: {merge: deep}\n"
          "merged: {common: 1, both: common}\nfam: \"%{facts.os.family}\"\n")
    write(str(root / "data" / "os" / "Debian.yaml"), "merged: {debian: 1, both: debian}\n")
    write(str(root / "data" / "nodes" / "broken.example.com.yaml"), "key: [unclosed\nother: 1\n")
    write(str(root / "environments" / "production" / "hiera.yaml"), "version: 5\nhierarchy: []\n")
    return root


def tree_hiera(tree, tmp_path):
    return hiera.Hiera(codedir=str(tree), environmentpath=str(tree / "environments"),
                       hiera_config=str(tree / "hiera.yaml"), confdir=str(tmp_path))


DEBIAN = {"os": {"family": "Debian"}, "trusted": None}


def test_values_of_every_kind(tree, tmp_path):
    h = tree_hiera(tree, tmp_path)
    kw = dict(node="web01.example.com", facts={"os": {"family": "Debian"}})
    assert h.lookup("big", **kw) == 123456789012345678901234567890
    assert h.lookup("neg", **kw) == -9223372036854775808
    assert h.lookup("flt", **kw) == 1.5
    assert h.lookup("flag", **kw) is True
    assert h.lookup("nothing", **kw) is None
    assert h.lookup("str", **kw) == "caf\u00e9"
    assert h.lookup("list", **kw) == [1, "two", {"three": 3}]
    assert list(h.lookup("hash", **kw)) == ["b", "a"]  # in the data's order
    s = h.lookup("secret", **kw)
    assert isinstance(s, hiera.Sensitive) and s.unwrap() == "hunter2" and "hunter2" not in repr(s)
    assert h.lookup("merged", **kw) == {"debian": 1, "both": "debian", "common": 1}
    assert h.lookup("merged", merge="first", **kw) == {"debian": 1, "both": "debian"}
    assert h.lookup("fam", **kw) == "Debian"
    assert h.lookup(["nope", "flt"], **kw) == 1.5  # the first key found
    assert h.lookup("hash.a", **kw) == 2


def test_not_found_and_default(tree, tmp_path):
    h = tree_hiera(tree, tmp_path)
    with pytest.raises(hiera.NotFound):
        h.lookup("nope", node="n1", facts={})
    with pytest.raises(KeyError):
        h.lookup("nope", node="n1", facts={})
    assert h.lookup("nope", node="n1", facts={}, default=None) is None
    assert h.lookup("nope", node="n1", facts={}, default={"x": [1]}) == {"x": [1]}


def test_errors_carry_file_and_line(tree, tmp_path):
    h = tree_hiera(tree, tmp_path)
    with pytest.raises(hiera.Error) as ei:
        h.lookup("key", node="broken.example.com", facts={"os": {"family": "Debian"}},
                 trusted={"certname": "broken.example.com", "authenticated": "remote", "extensions": {}})
    e = ei.value
    assert "broken.example.com.yaml" in e.message and "line 1 column 6" in e.message, vars(e)
    assert e.file and e.file.endswith("broken.example.com.yaml") and e.line == 1 and e.column == 6, vars(e)
    with pytest.raises(hiera.Error) as ei:
        h.lookup("flt", node="n1", facts={}, type="String")
    assert "String" in str(ei.value)
    with pytest.raises(hiera.Error):
        hiera.Hiera(codedir=str(tree), environment="no_such_env", confdir=str(tmp_path))
    with pytest.raises(ValueError):
        h.lookup("flt", node="n1", facts={}, merge="sideways")


def test_facts_every_way_same_answer(h, tmp_path):
    want = run_hiera("lookup", *repo_args(str(tmp_path)), "--node", "web01.example.com", "--facts", WEB01,
                     "--render-as", "json", "profile::base::motd")[1]
    import yaml
    with open(WEB01) as f:
        facts = yaml.safe_load(f)
    assert h.lookup("profile::base::motd", node="web01.example.com", facts=WEB01) == json.loads(want)
    assert h.lookup("profile::base::motd", node="web01.example.com", facts=facts) == json.loads(want)
    src = hiera.FactsDir(os.path.join(REPO, "facts"))
    assert src.nodes() == ["web01.example.com"]
    assert h.lookup("profile::base::motd", node="web01.example.com", facts=src) == json.loads(want)
    with pytest.raises(hiera.NotFound):
        src.facts("nobody.example.com")


def test_explain_and_keys_as_the_command(h, tmp_path):
    args = repo_args(str(tmp_path)) + ["--node", "web01.example.com", "--facts", WEB01]
    rc, out, _ = run_hiera("lookup", *args, "--explain", "--merge", "deep", "profile::base::users")
    assert rc == 0
    text = h.explain("profile::base::users", node="web01.example.com", facts=WEB01, merge="deep")
    assert text == out or text + "\n" == out
    rc, out, _ = run_hiera("keys", *args, "--render-as", "json")
    listed = json.loads(out)
    keys = h.keys(node="web01.example.com", facts=WEB01)
    assert sorted(keys["keys"]) == sorted(k["key"] for k in listed["keys"])


def make_fleet(folder, n):
    import yaml
    with open(WEB01) as f:
        base = yaml.safe_load(f)
    os.makedirs(folder, exist_ok=True)
    names = []
    for i in range(n):
        name = f"node{i:03d}.example.com"
        facts = json.loads(json.dumps(base))
        for k in ("fqdn", "clientcert", "hostname", "domain"):
            facts.pop(k, None)
        facts["networking"] = {"hostname": f"node{i:03d}", "fqdn": name}
        facts.setdefault("os", {})["family"] = "Debian" if i % 2 else "RedHat"
        with open(os.path.join(folder, name + ".json"), "w") as f:
            json.dump(facts, f)
        names.append(name)
    return names


def test_batch_as_hiera_batch(h, tmp_path):
    folder = str(tmp_path / "facts")
    names = make_fleet(folder, 40)
    keys = ["profile::base::users", "profile::base::motd", "profile::base::ntp_servers", "no::such::key"]
    rc, out, err = run_hiera("batch", *repo_args(str(tmp_path)), "--facts-dir", folder, *keys)
    assert rc in (0, 1), err
    want = json.loads(out)
    got = {}
    for node in h.batch(None, keys, facts=hiera.FactsDir(folder), threads=3):
        assert node.error is None
        assert "no::such::key" in node.missing
        got[node.name] = node.values
    assert list(got) == names  # in node order
    want.pop(".errors", None)
    assert got == want
    # nodes given with their facts; an early stop ends the run
    given = {n: os.path.join(folder, n + ".json") for n in names}
    it = h.batch(given, keys[:1], threads=2)
    first = next(it)
    assert first.name == names[0] and first.values == want[names[0]] | {} if False else first.values["profile::base::users"] == want[names[0]]["profile::base::users"]
    it.close()
    # every key each node can see
    own = next(iter(h.batch({names[0]: given[names[0]]}, None)))
    assert "profile::base::motd" in own.values


def test_threads_share_one_object(h):
    """Many threads on one Hiera object: each answer is the one a single thread gets."""
    keys = ["profile::base::users", "profile::base::motd", "profile::base::ntp_servers", "profile::base::dns_servers"]
    want = {k: h.lookup(k, node="web01.example.com", facts=WEB01) for k in keys}
    errors = []

    def work(i):
        try:
            for r in range(60):
                k = keys[(i + r) % len(keys)]
                facts = WEB01 if r % 3 else {"os": {"family": "Debian"}, "networking": {"hostname": "web01"}}
                v = h.lookup(k, node="web01.example.com", facts=facts, default=None)
                if facts == WEB01 and v != want[k]:
                    errors.append((k, v))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


def test_gil_released_during_lookups(tmp_path):
    """Another Python thread runs while a lookup is in the library: with the switch interval made
    huge, it could not run at all during the call if the GIL were held."""
    root = tmp_path / "big"
    write(str(root / "hiera.yaml"), "version: 5\nhierarchy:\n  - {name: c, path: big.yaml}\n")
    os.makedirs(root / "data")
    with open(os.path.join(root, "data", "big.yaml"), "w") as f:
        for i in range(60000):
            f.write(f"key{i}: [value {i}, {{a: {i}, b: text {i}}}]\n")
    h = hiera.Hiera(codedir=str(root), hiera_config=str(root / "hiera.yaml"), confdir=str(tmp_path),
                    environmentpath=str(tmp_path / "none"))
    count = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            count[0] += 1
            time.sleep(0.0005)  # (gives the GIL back each time: the lookup can take it again)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.05)
        before = count[0]
        v = h.lookup("key59999", node="n", facts={})  # parses the whole file: far longer than 0.5 ms
        during = count[0] - before
    finally:
        done.set()
        t.join()
        sys.setswitchinterval(old)
    assert v == ["value 59999", {"a": 59999, "b": "text 59999"}]
    assert during > 0


def test_hiera3_as_the_command(tmp_path):
    root = tmp_path / "h3"
    write(str(root / "hiera.yaml"), f":backends: [yaml]\n:yaml:\n  :datadir: {root}/data\n:hierarchy: ['%{{fqdn}}', common]\n")
    write(str(root / "data" / "common.yaml"), "a: [1, two, {three: 3}]\nb: text\nh: {x: 1}\n")
    write(str(root / "data" / "web.yaml"), "b: web\nh: {y: 2}\n")
    h3 = hiera.Hiera3(str(root / "hiera.yaml"))
    for key, scope, res in (("a", {}, "priority"), ("b", {"fqdn": "web"}, "priority"), ("h", {"fqdn": "web"}, "hash"),
                            ("nope", {}, "priority")):
        cmd = ["-c", str(root / "hiera.yaml")] + {"hash": ["-h"], "array": ["-a"]}.get(res, []) + [key] + \
              [f"{k}={v}" for k, v in scope.items()]
        rc, out, err = run_hiera(*cmd)
        assert rc == 0, err
        assert h3.render(key, scope=scope, resolution=res) == out
        assert h3.render(key, scope=scope, resolution=res, format="json") == run_hiera("-f", "json", *cmd)[1]
    assert h3.lookup("h", scope={"fqdn": "web"}, resolution="hash") == {"x": 1, "y": 2}
    with pytest.raises(hiera.NotFound):
        h3.lookup("nope")


def fake_puppet(prefix, version):
    """A puppet on PATH whose Ruby library's puppet/version.rb says version (read as text)."""
    write(os.path.join(prefix, "bin", "puppet"), "#!/bin/sh\nexit 3\n")
    os.chmod(os.path.join(prefix, "bin", "puppet"), 0o755)
    write(os.path.join(prefix, "lib", "ruby", "vendor_ruby", "puppet", "version.rb"),
          "module Puppet\n  PUPPETVERSION = '%s'.freeze\nend\n" % version)
    return os.path.join(prefix, "bin")


def test_puppet_version(tmp_path, monkeypatch):
    """puppet_version=7|8 chooses; None follows the installed Puppet (a fake one on PATH), as the
    hiera command does; the messages of facts files read (json 2.6's '859: unexpected token' as
    Puppet 7, json 2.7's without the number as 8) follow the Hiera's Puppet, a FactsDir's own
    when used alone, on any thread (a batch's too)."""
    root = tmp_path / "code"
    write(str(root / "hiera.yaml"), "version: 5\ndefaults: {datadir: data, data_hash: yaml_data}\n"
          "hierarchy: [{name: c, path: common.yaml}]\n")
    write(str(root / "data" / "common.yaml"), "x: 'a%{nosuch}b'\nplain: 1\n")
    folder = tmp_path / "facts"
    write(str(folder / "n1.json"), "{\"a\": 1,\n \"b\": }\n")
    bad = str(folder / "n1.json")
    kw = dict(codedir=str(root), hiera_config=str(root / "hiera.yaml"), confdir=str(tmp_path))

    def json_says(text, v):
        assert "unexpected token at" in text, text
        return ("): 859: unexpected token" in text) == (v == 7)

    monkeypatch.delenv("HIERA_PUPPET_VERSION", raising=False)
    for installed, major in (("8.10.0", 8), ("7.23.0", 7)):
        monkeypatch.setenv("PATH", fake_puppet(str(tmp_path / ("p" + installed)), installed) + ":" + os.environ["PATH"])
        v, why = hiera.installed_puppet_version()
        assert v == major and "the installed Puppet " + installed in why, why
        for chosen in (None, 7, 8):
            want = chosen or major
            h = hiera.Hiera(puppet_version=chosen, **kw)
            assert h.puppet_version == want
            if want == 8:
                with pytest.raises(hiera.Error, match="Undefined variable 'nosuch'"):
                    h.lookup("x", node="n1", facts={})
            else:
                assert h.lookup("x", node="n1", facts={}) == "ab"
            # a facts file named, a FactsDir given, a batch over it (on the batch's own thread)
            with pytest.raises(hiera.Error) as e:
                h.lookup("plain", node="n1", facts=bad)
            assert json_says(str(e.value), want)
            with pytest.raises(hiera.Error) as e:
                h.lookup("plain", node="n1", facts=hiera.FactsDir(str(folder), puppet_version=15 - want))
            assert json_says(str(e.value), want)
            nodes = list(h.batch(None, ["plain"], facts=hiera.FactsDir(str(folder))))
            assert len(nodes) == 1 and nodes[0].error and json_says(nodes[0].error, want), nodes
        # a FactsDir alone: its own puppet_version, else the installed one
        for own in (None, 7, 8):
            with pytest.raises(hiera.Error) as e:
                hiera.FactsDir(str(folder), puppet_version=own).facts("n1")
            assert json_says(str(e.value), own or major)
    monkeypatch.setenv("HIERA_PUPPET_VERSION", "8")
    assert hiera.installed_puppet_version() == (8, "HIERA_PUPPET_VERSION=8")
    assert hiera.Hiera(**kw).puppet_version == 8
    monkeypatch.setenv("HIERA_PUPPET_VERSION", "6")
    with pytest.raises(hiera.Error, match="7 or 8"):
        hiera.installed_puppet_version()
    with pytest.raises(ValueError):
        hiera.Hiera(puppet_version=6, **kw)
