#!/usr/bin/env python3
"""Triages `hiera check`'s puppet8-undefined-variable findings on a real tree against Puppet 8.10.

The rule says: data (or a version 5 hierarchy path) interpolates a legacy fact (%{domain},
%{::fqdn}...), which a Puppet 8 agent does not send (include_legacy_facts is false), so that with
Puppet 8's strict = error the lookup fails ("Undefined variable 'domain'"), and a hierarchy path
gets '' instead ("Interpolation failed with 'fqdn', but compilation continuing"). For each finding
this asks Puppet 8.10 (../shared/tools/puppet8, the Debian 13 root, through in-puppet8-root) the
same question twice, for a node whose lookup reads the finding's file:
  - with the node's facts as a Puppet 7 agent sends them (legacy facts included): the control;
  - with the facts a Puppet 8 agent sends under its defaults: the same facts without Facter 4.10's
    legacy facts (the names Facter's own fact classes declare legacy on Linux: their ALIASES and
    the facts of TYPE :legacy, read from the root's Facter), Puppet 8's own defaults otherwise;
and prints one line per finding: true when the control answers and the second fails (a data
finding) or names '' where the control names the fact's value (a hierarchy path), else false,
with Puppet's words. The node is the first of the facts folder whose `hiera lookup --explain` (as
Puppet 7) finds the key in the finding's file; for a hierarchy path any node does, and the key
asked is one no file defines. --var NAME=trusted.extensions.X gives a top-scope variable a value
of the node's trusted data, as a main manifest does (psick's site.pp sets $role from pp_role):
`puppet lookup` without --compile does not evaluate the manifest, so the value is given as a fact.

usage: puppet8-legacy-triage.py --hiera build/hiera --facts-dir F [--var NAME=trusted.extensions.X]...
                                [--codedir] TREE
  TREE: the environment folder (its parent's parent is the code dir), or with --codedir the code dir
Needs root (the root's mounts) and ../shared/tools/puppet8's root at /var/tmp/puppet8-root.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
IN_ROOT = os.path.join(HERE, "in-puppet8-root")

LEGACY_RB = r"""
require 'facter'
require 'json'
names = []
Facter::ClassDiscoverer.instance.discover_classes('Linux').each do |k|
  names.concat([*k::ALIASES]) if k.const_defined?(:ALIASES)
  names << k::FACT_NAME if k.const_defined?(:TYPE) && k::TYPE == :legacy
end
puts JSON.generate(names.uniq.sort)
"""


# Many lookups in one Puppet process (as ../shared/tools/puppet-bulk-lookup asks them): each query
# names its node, the yamldir holding that node's facts (the server's cached facts), its key and
# whether to explain; the answer holds the value or the error, the explanation and the warnings.
BATCH_RB = r"""
require 'json'
require 'puppet'
require 'puppet/application/lookup'

class Triage < Puppet::Application::Lookup
  attr_accessor :qfile
  def main
    renderer = Puppet::Network::FormatHandler.format(:json)
    out = JSON.parse(File.read(@qfile)).map do |q|
      Puppet[:yamldir] = Puppet[:clientyamldir] = q['yamldir']
      Puppet::Node::Facts.indirection.terminus_class = :yaml
      options[:node] = q['node']
      logs = []
      collector = Puppet::Test::LogCollector.new(logs)
      Puppet::Util::Log.newdestination(collector)
      Puppet::Util::Warnings.clear_warnings
      ans = {}
      begin
        generate_scope do |scope|
          explainer = q['explain'] ? Puppet::Pops::Lookup::Explainer.new(false, false) : nil
          inv = Puppet::Pops::Lookup::Invocation.new(scope, {}, {}, explainer)
          begin
            v = Puppet::Pops::Lookup.lookup(q['key'], nil, nil, false, nil, inv)
            ans['value'] = JSON.parse(renderer.render(v), quirks_mode: true)
          rescue Puppet::DataBinding::LookupError, Puppet::Error, StandardError => e
            ans['error'] = e.message
          end
          ans['explain'] = explainer.explain if explainer
        end
      rescue StandardError, Puppet::Error => e
        ans['error'] = e.message
      end
      Puppet::Util::Log.close(collector)
      ans['warnings'] = logs.select { |l| l.level == :warning }.map(&:message)
      ans
    end
    puts JSON.generate(out)
    exit(0)
  end
end

qfile = ARGV.shift
args = ARGV + ['unused']
Puppet.initialize_settings(args, true)
app = Triage.new(Puppet::Util::CommandLine.new('lookup', args))
app.qfile = qfile
app.run
"""


def legacy_patterns(work):
    rb = os.path.join(work, "legacy.rb")
    with open(rb, "w") as f:
        f.write(LEGACY_RB)
    p = subprocess.run([IN_ROOT, "ruby", rb], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("cannot read Facter's legacy facts in the Puppet 8 root: " + p.stderr[-400:])
    return [re.compile("^(%s)$" % n) for n in json.loads(p.stdout)]


def top_key(path, line):
    """the top-level key whose entry holds line (1-based)"""
    with open(path) as f:
        root = yaml.compose(f)
    if not isinstance(root, yaml.MappingNode):
        return None
    for k, v in root.value:
        if k.start_mark.line + 1 <= line <= max(v.end_mark.line + (0 if v.end_mark.column else -1) + 1,
                                                k.start_mark.line + 1):
            return k.value
    return None


def explained_reads(text, key, path):
    """whether an explanation (hiera's or Puppet's) finds key in the file path"""
    cur, searching = None, None
    for l in text.splitlines():
        s = l.strip()
        m = re.match(r'^Searching for "(.*)"$', s)
        if m:
            searching = m.group(1)
        m = re.match(r'^Path "(.*)"$', s)
        if m:
            cur = m.group(1)
        if s.startswith('Found key: "%s"' % key) and searching == key and cur and os.path.realpath(cur) == path:
            return True
    return False


def hiera_reads(hiera, base, node, facts, key, path):
    """whether `hiera lookup --explain` (as Puppet 7) finds key in path for this node; None when hiera
    cannot tell (a level's data function is Ruby code it does not run)"""
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1", HIERA_PUPPET_VERSION="7")
    p = subprocess.run([hiera, "lookup"] + base + ["--node", node, "--facts", facts, "--explain", key],
                       capture_output=True, text=True, env=env)
    if "hiera runs no such functions" in p.stderr:
        return None
    return explained_reads(p.stdout, key, path)


def puppet8_batch(base, queries, work, tag):
    """asks Puppet 8.10 every query (node, facts: the node's facts, key, explain) in one process"""
    for i, q in enumerate(queries):
        q["yamldir"] = os.path.join(work, "%s-%d.yamldir" % (tag, i))
        os.makedirs(os.path.join(q["yamldir"], "facts"), exist_ok=True)
        with open(os.path.join(q["yamldir"], "facts", q["node"] + ".yaml"), "w") as fh:
            fh.write("--- !ruby/object:Puppet::Node::Facts\nname: %s\nvalues: %s\n" % (json.dumps(q["node"]),
                                                                                      json.dumps(q.pop("facts"))))
    qf, rb = os.path.join(work, tag + "-queries.json"), os.path.join(work, "batch.rb")
    with open(qf, "w") as fh:
        json.dump(queries, fh)
    with open(rb, "w") as fh:
        fh.write(BATCH_RB)
    p = subprocess.run([IN_ROOT, "ruby", rb, qf] + base, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("Puppet 8.10 failed: " + p.stderr[-800:])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--facts-dir", required=True)
    ap.add_argument("--codedir", action="store_true", help="TREE is the code dir (its global hiera.yaml)")
    ap.add_argument("--hiera-config", help="the global hiera.yaml, as hiera check --hiera_config takes it")
    ap.add_argument("--var", action="append", default=[], help="NAME=trusted.extensions.X: a variable the main "
                    "manifest sets from the node's data, given as a fact")
    ap.add_argument("--var-from-path", action="append", default=[], help="REGEX with named groups: for a data file "
                    "whose path (from the data folder) matches, each group is a variable given as a fact (the "
                    "main manifest's $_role of wikimedia's role() for role/common/<role>.yaml)")
    ap.add_argument("--nodes", type=int, default=40, help="nodes tried for each finding (the first that reads it)")
    ap.add_argument("tree")
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    tree = os.path.realpath(a.tree)
    code = tree if a.codedir else os.path.dirname(os.path.dirname(tree))
    base = ["--codedir", code, "--environmentpath", os.path.join(code, "environments"), "--environment", "production"]
    if a.codedir:
        base += ["--hiera_config", os.path.join(code, "hiera.yaml")]
    if a.hiera_config:
        base += ["--hiera_config", os.path.realpath(a.hiera_config)]
    env = dict(os.environ, HIERA_CACHE_DIR="off", HIERA_PUPPET_VERSION="7")
    cmd = [hiera, "check", "--format", "json", "--facts-dir", a.facts_dir]
    cmd += (["--hiera_config", a.hiera_config] if a.hiera_config else []) + (["--codedir", tree] if a.codedir else [tree])
    doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, env=env).stdout)
    found = [f for f in doc["findings"] if f["rule"] == "puppet8-undefined-variable"]
    work = tempfile.mkdtemp(prefix="p8-triage-", dir="/tmp")
    pats = legacy_patterns(work)
    nodes = sorted(f for f in os.listdir(a.facts_dir) if f.endswith(".json"))[:a.nodes]
    variables = [v.split("=", 1) for v in a.var]
    from_path = [re.compile(r) for r in a.var_from_path]

    def facts_of(n, extra, strip, only=None):
        with open(os.path.join(a.facts_dir, n + ".json")) as fh:
            f = json.load(fh)
        for name, src in variables:
            val = f
            for part in src.split("."):
                val = val.get(part) if isinstance(val, dict) else None
            if val is not None and name not in f:
                f[name] = val
        f.update({k: v for k, v in extra.items() if not k.startswith("(")})
        gone = []
        if strip:
            gone = [k for k in f if any(p.match(k) for p in pats) and (only is None or k == only)]
            for k in gone:
                del f[k]
        return f, gone

    plan = []  # (label, name, node, key, extra)
    for fd in found:
        path = os.path.abspath(fd["file"])  # (hiera check names files from the current folder when it can)
        if not os.path.exists(path):
            path = os.path.join(tree, fd["file"])
        path = os.path.realpath(path)
        rel = os.path.relpath(path, code if a.codedir else tree)
        name = re.match(r"^%\{([^}]*)\}", fd["message"]).group(1).lstrip(":")
        label = "puppet8-undefined-variable %s:%d" % (rel, fd["line"])
        extra = {}
        for r in from_path:
            m = r.search(rel)
            if m:
                extra.update(m.groupdict())
        if os.path.basename(path) == "hiera.yaml":
            plan.append((label, name, nodes[0][:-5], "hiera_check::triage_absent_key", extra))
            continue
        key = top_key(path, fd["line"])
        node = None
        for n in nodes:
            fn = os.path.join(work, "h-" + n)
            with open(fn, "w") as fh:
                json.dump(facts_of(n[:-5], extra, False)[0], fh)
            reads = hiera_reads(hiera, base, n[:-5], fn, key, path)
            if reads is None:
                # hiera cannot say: Puppet's own explanation (the control's) must find it there
                node, extra = n[:-5], dict(extra, **{"(puppet explains)": path})
                break
            if reads:
                node = n[:-5]
                break
        if not node:
            print("%s  UNREACHED: none of %d nodes of %s reads %s from this file" % (label, len(nodes), a.facts_dir, key),
                  flush=True)
            continue
        plan.append((label, name, node, key, extra))

    def queries(strip, only=False):
        return [{"node": node, "key": key, "explain": key.startswith("hiera_check::") or "(puppet explains)" in extra,
                 "facts": facts_of(node, extra, strip, name if only else None)[0]} for _, name, node, key, extra in plan]
    ctl = puppet8_batch(base, queries(False), work, "p7facts")
    p8 = puppet8_batch(base, queries(True), work, "p8facts")
    # the finding's own fact alone left out: which variable fails when a value interpolates several
    alone = puppet8_batch(base, queries(True, True), work, "p8alone")
    warned = set()  # (Puppet warns once a process of a variable a hierarchy lacks)
    for (label, name, node, key, extra), c, e, e1 in zip(plan, ctl, p8, alone):
        gone = facts_of(node, extra, True)[1]
        if name not in gone:
            print("%s  ?? %s is not among the legacy facts stripped" % (label, name))
        vars_ = ", ".join("$%s = %s" % kv for kv in sorted(extra.items()) if not kv[0].startswith("("))
        if "(puppet explains)" in extra and not explained_reads(c.get("explain", ""), key, extra["(puppet explains)"]):
            print("%s  UNREACHED: Puppet 8.10 with the legacy facts does not find %s in this file for %s (%s)" %
                  (label, key, node, c.get("error", "found elsewhere")[:200]), flush=True)
            continue
        if key.startswith("hiera_check::"):
            # a hierarchy path: the location Puppet 8 names without the fact, and the warning
            value = facts_of(node, extra, False)[0].get(name)
            warn = "Interpolation failed with '%s', but compilation continuing" % name
            # (Puppet names the variable as written: '::hostname' for %{::hostname})
            warn_top = "Interpolation failed with '::%s', but compilation continuing" % name

            def located(out):
                """the locations of the levels whose path interpolates the variable"""
                pairs = re.findall(r'Path "([^"]*)"\n\s*Original path: "([^"]*)"', out or "")
                return sorted({p for p, orig in pairs if re.search(r"%%\{(::)?%s\}" % re.escape(name), orig)})
            hit7, hit8 = located(c.get("explain")), located(e.get("explain"))
            w8 = any(warn in w or warn_top in w for w in e["warnings"])
            w7 = any(warn in w or warn_top in w for w in c["warnings"])
            w8, _ = w8 or name in warned, warned.add(name) if w8 else None
            named = bool(hit7) and all(str(value) in h for h in hit7) and not any(str(value) in h for h in hit8)
            print("%s  %s node %s: Puppet 8.10 with the legacy facts reads %s; without them (a Puppet 8 agent's) %s, "
                  "warning %r: %s" % (label, "TRUE" if w8 and not w7 and named else "FALSE?", node, hit7, hit8, warn, w8),
                  flush=True)
        else:
            def names(ans):
                return any(("Undefined variable '%s%s'" % (c_, name)) in ans.get("error", "") for c_ in ("", "::"))
            ok = "value" in c and "error" not in c and "error" in e and (names(e) or names(e1))
            print("%s  %s node %s%s key %s: Puppet 8.10 with the legacy facts: %s; without: %s" %
                  (label, "TRUE" if ok else "FALSE?", node, " (%s)" % vars_ if vars_ else "", key,
                   json.dumps(c.get("value"))[:100] if "value" in c else "error " + c.get("error", "")[:150],
                   (("error " + e["error"][:150]) if "error" in e else "value " + json.dumps(e.get("value"))[:100]) +
                   ("" if names(e) else "; without %s alone: %s" % (name, e1.get("error", "no error")[:150]))),
                  flush=True)


if __name__ == "__main__":
    main()
