"""PuppetDB through the Python module, against the project's fake PuppetDB (tests/puppetdb/fake.py):
the nodes and their facts, lookups and a batch over them (the same answers as with the facts as
files), a failing server failed over with a diagnostic, a down PuppetDB as an exception."""
import json, os, sys

import pytest

import hiera
from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "tests", "puppetdb"))
from fake import FakePuppetDB  # noqa: E402

REPO = os.path.join(ROOT, "examples", "control-repo")


def facts(name, family):
    return {"networking": {"hostname": name.split(".")[0], "fqdn": name}, "os": {"family": family}}


@pytest.fixture
def fake():
    nodes = {f"web{i:02d}.example.com": facts(f"web{i:02d}.example.com", "Debian" if i % 2 else "RedHat")
             for i in range(1, 8)}
    f = FakePuppetDB(nodes, inactive=["web07.example.com"], misbehave=True)
    yield f
    f.stop()


def test_puppetdb_source(fake, tmp_path):
    h = hiera.Hiera(codedir=REPO, environmentpath=os.path.join(REPO, "environments"), confdir=str(tmp_path))
    got = []
    pdb = hiera.PuppetDB(urls=[fake.url()], on_diagnostic=got.append, page_size=3)
    names = pdb.nodes()
    assert names == [f"web{i:02d}.example.com" for i in range(1, 7)]  # active ones
    assert pdb.facts("web02.example.com")["os"]["family"] == "RedHat"
    want = {}
    folder = tmp_path / "facts"
    folder.mkdir()
    for n in names:
        with open(folder / (n + ".json"), "w") as f:
            json.dump(fake.nodes[n], f)
    for n in names:
        want[n] = h.lookup("profile::base::motd", node=n, facts=str(folder / (n + ".json")), default=None)
        assert h.lookup("profile::base::motd", node=n, facts=pdb, default=None) == want[n]
    batch = {b.name: b.values.get("profile::base::motd") for b in h.batch(None, ["profile::base::motd"], facts=pdb)}
    assert batch == want
    with pytest.raises(hiera.NotFound):
        pdb.facts("nobody.example.com")
    # a failing server, then a good one: Puppet's failover warning, then the answer
    bad = hiera.PuppetDB(urls=["http://127.0.0.1:1", fake.url()], on_diagnostic=got.append)
    assert bad.facts("web01.example.com")["os"]["family"] == "Debian"
    assert any(d.code == "puppetdb-failover" for d in got), got
    down = hiera.PuppetDB(urls=["http://127.0.0.1:1"], on_diagnostic=got.append, timeout=5)
    with pytest.raises(hiera.Error) as ei:
        down.nodes()
    assert "127.0.0.1:1" in str(ei.value)
