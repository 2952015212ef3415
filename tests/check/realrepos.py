#!/usr/bin/env python3
"""`hiera check` on what real control repositories do: no false alarm, no silent misread.

Every class of false alarm found on real public control repositories (issue 37: psick, lsst-control,
mergwyn, jenkins-infra, puppetlabs-seteam, dylanratcliffe, voxpupuli, wikimedia/operations-puppet,
mozilla ronin_puppet, kscherer, Enucatl, joeypiccola), and every true finding of the same kind
beside it, reproduced in a small tree written here (none of those repositories' files: each tree is
the pattern, written anew): the findings must be exactly the expected ones, and the notes must say
what the check could not know. Runs without Puppet, the network or ../shared (make check).

  realrepos.py --hiera build/hiera                     the generated cases
  realrepos.py --hiera build/hiera --trees DIR         also the real trees laid out under DIR
                                                      (tests/check/realrepos/README.md; make
                                                      check-realrepos)

With --trees, each repository of tests/check/realrepos/expected/*.txt is checked when DIR holds it:
its findings must be exactly the lines triaged true there ("rule path:line"), and none of the lines
triaged false ("# FALSE rule path:line  why") may come back. A tree that is not laid out (build.sh's
layout.txt says why), has no facts or lacks a file its "# needs:" line names is skipped, and the
lines beside the closing count say so ("N of M real trees NOT CHECKED"); with --require-trees
(make check-realrepos REALREPOS_REQUIRE=1) it is a failure.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

HERE = os.path.dirname(os.path.abspath(__file__))
T = Tally("hiera check real-repository cases", print_limit=0)  # the failures are printed at the end
check = T.check
failures = T.failures


def facts(certname, family="Debian", osname="Debian", major="12", ext=None, **extra):
    host, _, dom = certname.partition(".")
    f = {"clientcert": certname, "fqdn": certname, "hostname": host, "domain": dom, "kernel": "Linux",
         "networking": {"fqdn": certname, "hostname": host, "domain": dom},
         "os": {"family": family, "name": osname, "release": {"major": major, "full": major}},
         "trusted": {"authenticated": "remote", "certname": certname, "hostname": host, "domain": dom,
                     "extensions": ext or {}, "external": {}}}
    f.update(extra)
    return f


HIERA_STD = """version: 5
defaults: {datadir: data, data_hash: yaml_data}
hierarchy:
%s
  - name: common
    path: common.yaml
"""

# ------------------------------------------------------------------ the cases
#
# files: path -> text; facts: node -> facts; args: extra arguments (the tree is the last one unless
# "codedir"); expected: "rule path:line" (relative to the tree); notes: substrings that some note
# must hold; severities: "rule path:line" -> severity.

CASES = {}

# psick: site.pp sets $role and $zone at top scope from $trusted (only when no fact of that name),
# hiera.yaml reads role/%{::role}.yaml: the role and zone files nodes read are reached; the one no
# node has is not.
CASES["sitepp-trusted-role"] = {
    "files": {
        "hiera.yaml": HIERA_STD % """  - name: nodes
    path: "nodes/%{trusted.certname}.yaml"
  - name: role and zone
    paths: ["role/%{::role}.yaml", "zone/%{::zone}.yaml"]""",
        "manifests/site.pp": """# top-scope variables for hiera.yaml, from the certificate's extensions
if defined('$facts') and defined('$trusted') {
  if $trusted['extensions']['pp_role'] and ! getvar('facts.role') {
    $role = $trusted['extensions']['pp_role']
  }
  $zone = $trusted['extensions']['pp_zone'] ? {
    undef   => 'default',
    default => downcase($trusted['extensions']['pp_zone']),
  }
}
$noop_mode = lookup('noop_mode', Boolean, 'first', false)
if $noop_mode == true {
  noop()
}
node default {
  include profile::base
}
""",
        "modules/profile/manifests/base.pp": "class profile::base (String $motd = 'hi') {\n}\n",
        "data/common.yaml": "profile::base::motd: welcome\n",
        "data/role/web.yaml": "profile::base::motd: web\n",
        "data/role/db.yaml": "profile::base::motd: db\n",
        "data/role/retired.yaml": "profile::base::motd: retired\n",
        "data/zone/lab.yaml": "profile::base::motd: lab\n",
        "data/zone/default.yaml": "profile::base::motd: default\n",
    },
    "facts": {"web1.example.com": facts("web1.example.com", ext={"pp_role": "web", "pp_zone": "LAB"}),
              "db1.example.com": facts("db1.example.com", ext={"pp_role": "db"})},
    "expected": ["unreached-file data/role/retired.yaml:1",
                 # every node has a role, whose file is higher than the zone's and common.yaml
                 "shadowed-key data/common.yaml:1", "shadowed-key data/zone/default.yaml:1",
                 "shadowed-key data/zone/lab.yaml:1"],
}

# wikimedia: node definitions call role(), a Ruby function that sets $_role in the node's scope;
# hiera.yaml reads role/%{::_role}.yaml: no role file can be claimed unreached (a note says why).
CASES["role-function"] = {
    "files": {
        "hiera.yaml": HIERA_STD % """  - name: role
    path: "role/%{::_role}.yaml"
  - name: site
    path: "site/%{::site}.yaml\"""",
        "manifests/site.pp": """$site = $facts['networking']['ip'] ? {
    /^10\\.64\\./  => 'eqiad',
    /^10\\.192\\./ => 'codfw',
    default       => '(undefined)',
}
node /^web\\d+\\./ {
    role(webserver)
}
node 'db1.eqiad.wmnet' {
    role('database')
}
node default {
}
""",
        "modules/wmflib/lib/puppet/functions/role.rb": """Puppet::Functions.create_function(:role) do
  dispatch :main do
    param 'String', :name
  end
  def main(name)
    scope = closure_scope
    scope['_role'] = name.gsub(/::/, '/')
    call_function('include', 'role::' + name)
  end
end
""",
        "data/common.yaml": "x::y: 1\n",
        "data/role/webserver.yaml": "x::y: 2\n",
        "data/role/database.yaml": "x::y: 3\n",
        "data/role/retired.yaml": "x::y: 4\n",
        "data/site/eqiad.yaml": "x::y: 5\n",
        "data/site/codfw.yaml": "x::y: 6\n",
        "data/site/esams.yaml": "x::y: 7\n",
    },
    "facts": {"web1.eqiad.wmnet": facts("web1.eqiad.wmnet", networking={"ip": "10.64.0.5", "fqdn": "web1.eqiad.wmnet",
                                                                        "hostname": "web1", "domain": "eqiad.wmnet"}),
              "db1.eqiad.wmnet": facts("db1.eqiad.wmnet", networking={"ip": "10.64.0.6", "fqdn": "db1.eqiad.wmnet",
                                                                      "hostname": "db1", "domain": "eqiad.wmnet"}),
              "web2.codfw.wmnet": facts("web2.codfw.wmnet", networking={"ip": "10.192.0.5", "fqdn": "web2.codfw.wmnet",
                                                                        "hostname": "web2", "domain": "codfw.wmnet"})},
    # esams: no node's address is there ($site is computed for every node); every node has a site
    # file, higher than common.yaml
    "expected": ["unreached-file data/site/esams.yaml:1", "shadowed-key data/common.yaml:1"] +
                ["unknown-class data/%s.yaml:1" % f for f in ("common", "role/webserver", "role/database", "role/retired",
                                                             "site/eqiad", "site/codfw", "site/esams")],
    "notes": ["sets $_role for some nodes with code hiera check cannot evaluate (role() at"],
}

# jenkins-infra: the role level reads %{hiera_role}, which no node has and no manifest sets (an
# ENC's, or Vagrant's): one finding for the variable, a note, no unreached-file per role file.
CASES["enc-variable"] = {
    "files": {
        "hiera.yaml": HIERA_STD % """  - name: role
    path: "roles/%{hiera_role}.yaml\"""",
        "data/common.yaml": "x::y: 1\n",
        "data/roles/jenkins::agent.yaml": "x::y: 2\n",
        "data/roles/jenkins::controller.yaml": "x::y: 3\n",
    },
    "facts": {"a.example.com": facts("a.example.com")},
    "expected": ["interpolation-variable hiera.yaml:5", "unknown-class data/common.yaml:1",
                 "unknown-class data/roles/jenkins::agent.yaml:1", "unknown-class data/roles/jenkins::controller.yaml:1"],
    "notes": ["no node of the facts folder has a value for %{hiera_role}"],
}

# lsst: the datadir names Puppet's environmentpath (/etc/puppetlabs/code/environments/%{environment})
# and a private folder outside the repository: the first is the environment checked (its rspec
# fixtures, which %{environment} matched across '/', are not its data), the second cannot be seen, so
# a parameter whose value may be there is not claimed missing; orphans are found.
CASES["environment-datadir"] = {
    "files": {
        "hiera.yaml": """version: 5
defaults: {data_hash: yaml_data}
hierarchy:
  - name: private
    datadir: "/etc/puppetlabs/code/hieradata/private/%{environment}"
    path: "node/%{facts.networking.fqdn}.yaml"
  - name: public
    datadir: "/etc/puppetlabs/code/environments/%{environment}/hieradata"
    paths: ["node/%{facts.networking.fqdn}.yaml", "common.yaml"]
  - name: anywhere
    datadir: "/%{facts.site}/hieradata"
    path: "common.yaml"
""",
        "manifests/site.pp": "node default {\n  include profile::ldap\n}\n",
        "modules/profile/manifests/ldap.pp": "class profile::ldap (String $bind_user, String $bind_pass) {\n}\n",
        "hieradata/common.yaml": "profile::ldap::bind_user: cn=puppet\n",
        "hieradata/node/web1.example.com.yaml": "profile::ldap::bind_user: cn=web\n",
        "hieradata/nodes/web2.example.com.yaml": "profile::ldap::bind_user: cn=typo\n",
        "spec/fixtures/hieradata/node/fixture.example.com.yaml": "profile::ldap::bind_user: 1\n",
    },
    "facts": {"web1.example.com": facts("web1.example.com")},
    "expected": ["orphan-file hieradata/nodes/web2.example.com.yaml:1", "shadowed-key hieradata/common.yaml:1",
                 "interpolation-variable hiera.yaml:11"],
    "notes": ["in Puppet's environmentpath /etc/puppetlabs/code/environments",
              "reads data outside what is checked (/etc/puppetlabs/code/hieradata/private/production)"],
}

# jenkins-infra: the global hiera.yaml of a code directory names environments/%{environment}/
# hieradata: the files of that data folder no level reads (rspec/, vagrant/) are orphans; another
# environment's file (env/staging.yaml) is not.
CASES["templated-datadir"] = {
    "codedir": True,
    "files": {
        "hiera.yaml": """version: 5
defaults:
  datadir: "environments/%{environment}/hieradata"
  data_hash: yaml_data
hierarchy:
  - name: clients
    path: "clients/%{clientcert}.yaml"
  - name: env
    path: "env/%{environment}.yaml"
  - name: common
    path: common.yaml
""",
        "environments/production/hieradata/common.yaml": "x::y: 1\nx::z: 1\n",
        "environments/production/hieradata/env/production.yaml": "x::y: 2\n",
        # another environment's file (mergwyn's development.yaml): read when that one is checked
        "environments/production/hieradata/env/staging.yaml": "x::y: 9\n",
        "environments/production/hieradata/clients/a.example.com.yaml": "x::z: 3\n",
        "environments/production/hieradata/rspec/spec.yaml": "x::y: 4\n",
        "environments/production/hieradata/vagrant/box.yaml": "x::y: 5\n",
        "environments/production/manifests/site.pp": "node default {\n}\n",
    },
    "facts": {"a.example.com": facts("a.example.com"), "b.example.com": facts("b.example.com")},
    "expected": ["orphan-file environments/production/hieradata/rspec/spec.yaml:1",
                 "orphan-file environments/production/hieradata/vagrant/box.yaml:1",
                 "unknown-class environments/production/hieradata/common.yaml:1",
                 "unknown-class environments/production/hieradata/common.yaml:2",
                 "unknown-class environments/production/hieradata/env/production.yaml:1",
                 "unknown-class environments/production/hieradata/clients/a.example.com.yaml:1",
                 "shadowed-key environments/production/hieradata/common.yaml:1"],
    "messages": {"shadowed-key environments/production/hieradata/common.yaml:1": "never used in environment production"},
}

# Enucatl/operations-puppet: a level whose data function is Ruby (a vault backend, a lookup_key
# function) comes first: what a node gets cannot be known, so no lookup-error, parameter-type or
# parameter-missing is claimed for nodes; the data file's own wrong value still is.
CASES["ruby-data-function"] = {
    "files": {
        "hiera.yaml": """version: 5
defaults: {datadir: data, data_hash: yaml_data}
hierarchy:
  - name: vault
    lookup_key: secrets::vault_lookup
    options: {url: "https://vault.example.com"}
  - name: nodes
    path: "nodes/%{trusted.certname}.yaml"
  - name: common
    path: common.yaml
""",
        "modules/secrets/lib/puppet/functions/secrets/vault_lookup.rb":
            "Puppet::Functions.create_function(:'secrets::vault_lookup') do\n"
            "  def vault_lookup(key, options, context)\n    context.not_found\n  end\nend\n",
        "manifests/site.pp": "node default {\n  include app\n}\n",
        "modules/app/manifests/init.pp": "class app (Integer $port, String $password, Array[String] $list) {\n}\n",
        "data/common.yaml": "app::port: '8080'\napp::list: [a]\nlookup_options:\n  app::list:\n    merge: unique\n",
        "data/nodes/a.example.com.yaml": "app::list: b\n",
    },
    "facts": {"a.example.com": facts("a.example.com")},
    "expected": ["parameter-type data/common.yaml:1"],
    "notes": ["reads its data with 'secrets::vault_lookup', which hiera check cannot read"],
}

# Every form of key use Puppet accepts: lookup(bare::word) (in code, in a string's "${...}" as
# ocf/puppet's ocf_docker does, in an EPP template), lookup($var) (a parameter's default, a
# value a resource-like declaration passes, a parameter's data), hiera_include(classes) and
# hiera_array/hash, a lookup with a merge (every level is read: none shadows another), alias() in a
# file read before the key's own.
CASES["key-use"] = {
    "files": {
        "hiera.yaml": HIERA_STD % """  - name: nodes
    path: "nodes/%{trusted.certname}.yaml\"""",
        "manifests/site.pp": """node default {
  include app
  class { 'app::client': conf_key => 'app::client_conf' }
  hiera_include(classes)
}
""",
        "modules/app/manifests/init.pp": """class app (
  String $key_name = 'app::extra_settings',
) {
  $a = lookup(app::bare_key)
  $b = lookup($key_name)
  $c = hiera_array('app::servers')
  $d = lookup('app::users', Hash, 'deep', {})
  $e = "user:${lookup(app::interp_key)}\n"
  $f = epp('app/t.epp')
}
""",
        "modules/app/templates/t.epp": "<%= lookup(app::epp_key) %>\n",
        "modules/other/manifests/init.pp": "class other (String $which) {\n  $v = lookup($which)\n}\n",
        "modules/app/manifests/client.pp": "class app::client (String $conf_key) {\n  $v = lookup($conf_key)\n}\n",
        "modules/dns/manifests/init.pp": "class dns (Array $servers = []) {\n}\n",
        "data/nodes/a.example.com.yaml": """app::servers: [c]
app::users: {bob: {uid: 2}}
app::unused_key: 1
profile::advertise: "%{alias('dns::anycast_a')}"
other::thing: 1
""",
        "data/common.yaml": """classes: [dns]
app::bare_key: 1
app::interp_key: hash
app::epp_key: 2
app::extra_settings: {}
app::servers: [a, b]
app::users: {alice: {uid: 1}}
app::client_conf: x
dns::anycast_a: [10.0.0.1]
""",
    },
    "facts": {"a.example.com": facts("a.example.com")},
    "expected": ["unknown-parameter data/nodes/a.example.com.yaml:3",
                 "unknown-class data/nodes/a.example.com.yaml:4"],
    "notes": ["lookup() of a variable at"],
}

# hostname/<node> without the level's extension: no level can ever read it.
CASES["misnamed-file"] = {
    "files": {
        "hiera.yaml": HIERA_STD % """  - name: hosts
    path: "hostname/%{facts.networking.hostname}.yaml\"""",
        "data/common.yaml": "{}\n",
        "data/hostname/web1.yaml": "{}\n",
        "data/hostname/web2": "x: 1\n",
        "data/hostname/README.md": "the hosts\n",
    },
    "facts": {"web1.example.com": facts("web1.example.com"), "web2.example.com": facts("web2.example.com")},
    "expected": ["orphan-file data/hostname/web2:1"],
    "messages": {"orphan-file data/hostname/web2:1": "and a file it reads ends in '.yaml'"},
}

# Severities: yes/no for a Boolean parameter is style (a note); for a String parameter it is a
# trap (a warning, and the parameter-type error says which trap it fell in); an empty value is a note.
CASES["severities"] = {
    "files": {
        "hiera.yaml": HIERA_STD % "",
        "modules/ntp/manifests/init.pp": "class ntp (Boolean $enable = true, String $mode = 'x', Optional[String] $extra = undef) {\n}\n",
        "data/common.yaml": "ntp::enable: yes\nntp::mode: no\nntp::extra:\n",
    },
    "facts": {"a.example.com": facts("a.example.com")},
    "expected": ["yaml-boolean data/common.yaml:1", "yaml-boolean data/common.yaml:2",
                 "parameter-type data/common.yaml:2", "empty-value data/common.yaml:3"],
    "severities": {"yaml-boolean data/common.yaml:1": "note", "yaml-boolean data/common.yaml:2": "warning",
                   "parameter-type data/common.yaml:2": "error", "empty-value data/common.yaml:3": "note"},
}

# seteam: declarations under a condition (case $facts['kernel']) and parameters a resource-like
# declaration gives are not parameters a node is missing; one included for sure without its data is.
CASES["declarations"] = {
    "files": {
        "hiera.yaml": HIERA_STD % "",
        "manifests/site.pp": """node default {
  if !empty( $trusted['extensions']['pp_role'] ) {
    $role = $trusted['extensions']['pp_role']
    if defined("role::${role}") {
      include "role::${role}"
    }
  }
}
""",
        "modules/role/manifests/app.pp": "class role::app {\n  include profile::app\n  include profile::tomcat\n}\n",
        "modules/profile/manifests/app.pp": """class profile::app {
  case $facts['kernel'] {
    'windows': { include profile::app::win }
    default:   { }
  }
}
""",
        "modules/profile/manifests/app/win.pp": "class profile::app::win (String $pass) {\n}\n",
        "modules/profile/manifests/tomcat.pp": """class profile::tomcat (String $major = '8') {
  class { 'profile::tomcat::linux':
    version => $major,
    dir     => '/opt/tomcat',
  }
  include profile::tomcat::logs
}
""",
        "modules/profile/manifests/tomcat/linux.pp": "class profile::tomcat::linux (String $version, String $dir) {\n}\n",
        "modules/profile/manifests/tomcat/logs.pp": "class profile::tomcat::logs (String $path) {\n}\n",
        "data/common.yaml": "{}\n",
    },
    "facts": {"app1.example.com": facts("app1.example.com", ext={"pp_role": "app"})},
    "expected": ["parameter-missing modules/profile/manifests/tomcat/logs.pp:1"],
}

# A node definition's regexp (a '/' after 'node' starts one) and the variables its body sets.
CASES["node-scope"] = {
    "files": {
        "hiera.yaml": HIERA_STD % """  - name: tier
    path: "tier/%{tier}.yaml\"""",
        "manifests/site.pp": "node /^web\\d+\\./ {\n  $tier = 'front'\n}\nnode default {\n  $tier = 'back'\n}\n",
        "data/common.yaml": "{}\n",
        "data/tier/front.yaml": "{}\n",
        "data/tier/back.yaml": "{}\n",
        "data/tier/middle.yaml": "{}\n",
    },
    "facts": {"web1.example.com": facts("web1.example.com"), "db1.example.com": facts("db1.example.com")},
    "expected": ["unreached-file data/tier/middle.yaml:1"],
}

# tvories/control-repo: mapped_paths [teams, team, "role/%{team}/%{role}.yaml"]: %{team} is each
# element of the fact 'teams', not a variable a node must have; a file no element names is unreached.
CASES["mapped-paths-name"] = {
    "files": {
        "hiera.yaml": HIERA_STD % """  - name: team data
    mapped_paths: [teams, team, "team/%{team}.yaml"]
  - name: team roles
    mapped_paths: [teams, "::team", "role/%{::team}/%{facts.role}.yaml"]""",
        "data/common.yaml": "{}\n",
        "data/team/ops.yaml": "{}\n",
        "data/team/dev.yaml": "{}\n",
        "data/team/qa.yaml": "{}\n",
        "data/role/ops/web.yaml": "{}\n",
    },
    "facts": {"a.example.com": facts("a.example.com", teams=["ops", "dev"], role="web"),
              "b.example.com": facts("b.example.com", teams=["dev"], role="db")},
    "expected": ["unreached-file data/team/qa.yaml:1"],
}

# wikimedia: a level's options interpolate a legacy fact (regex_data's node: "%{::fqdn}"), and a
# level's datadir another: Puppet 8.10 interpolates options and datadir without the shield it gives
# paths, so with strict = error every lookup fails ("Undefined variable '::fqdn'", checked with Puppet
# 8.10), where a path only gets '' with a warning: an error as Puppet 8, the path a warning.
LEGACY_OPTIONS_HIERA = """version: 5
defaults: {datadir: data, data_hash: yaml_data}
hierarchy:
  - name: host
    path: "hosts/%{::hostname}.yaml"
  - name: site
    datadir: "sites/%{::domain}"
    path: common.yaml
  - name: secrets
    lookup_key: eyaml_lookup_key
    path: secrets.eyaml
    options:
      pkcs7_private_key: "/etc/keys/%{::fqdn}.pem"
      pkcs7_public_key: /etc/keys/public.pem
  - name: common
    path: common.yaml
"""
for _v, _sev in ((7, "warning"), (8, "error")):
    CASES["legacy-fact-options-puppet%d" % _v] = {
        "args": ["--puppet-version", str(_v)],
        "files": {"hiera.yaml": LEGACY_OPTIONS_HIERA, "data/common.yaml": "x: 1\n", "data/hosts/a.yaml": "y: 2\n"},
        "facts": {"a.example.com": facts("a.example.com")},
        "expected": ["puppet8-undefined-variable hiera.yaml:5", "puppet8-undefined-variable hiera.yaml:7",
                     "puppet8-undefined-variable hiera.yaml:13"],
        "severities": {"puppet8-undefined-variable hiera.yaml:5": "warning",
                       "puppet8-undefined-variable hiera.yaml:7": _sev,
                       "puppet8-undefined-variable hiera.yaml:13": _sev},
        "messages": {"puppet8-undefined-variable hiera.yaml:5": "the location becomes ''",
                     "puppet8-undefined-variable hiera.yaml:13": "every lookup through this hiera.yaml fails"},
    }

# wikimedia: modules a Puppetfile.* lists (vendored by another tool) are reference, not reported.
CASES["vendored-modules"] = {
    "files": {
        "hiera.yaml": HIERA_STD % "",
        "Puppetfile.vendor": "mod 'vendor/thing', '1.0.0'\n",
        "modules/thing/hiera.yaml": "version: 5\nhierarchy:\n  - name: common\n    path: common.yaml\n",
        "modules/thing/data/common.yaml": "",
        "modules/thing/manifests/init.pp": "class thing (Integer $n = 1) {\n}\n",
        "data/common.yaml": "thing::n: 2\n",
    },
    "facts": {"a.example.com": facts("a.example.com")},
    "expected": [],
}


# ------------------------------------------------------------------ running a case

def run_check(hiera, tree, fdir, args, codedir):
    env = dict(os.environ, HIERA_CACHE_DIR="off", NO_COLOR="1")
    cmd = [hiera, "check", "--format", "json", "--facts-dir", fdir] + args
    cmd += ["--codedir", tree] if codedir else [tree]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        return p, json.loads(p.stdout)
    except ValueError:
        return p, None


def rel_lines(doc, root):
    out = {}
    for f in doc["findings"]:
        path = os.path.relpath(f["file"], root) if f["file"].startswith("/") else f["file"]
        out.setdefault("%s %s:%d" % (f["rule"], path, f["line"]), []).append(f)
    return out


def test_case(hiera, name, case, scratch):
    tree = os.path.join(scratch, name, "tree")
    fdir = os.path.join(scratch, name, "facts")
    for path, text in case["files"].items():
        full = os.path.join(tree, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as fh:
            fh.write(text)
    os.makedirs(fdir, exist_ok=True)
    for node, f in case["facts"].items():
        with open(os.path.join(fdir, node + ".json"), "w") as fh:
            json.dump(f, fh)
    p, doc = run_check(hiera, tree, fdir, case.get("args", []), case.get("codedir"))
    if doc is None:
        check(False, "%s: not JSON: %s %s" % (name, p.stdout[:300], p.stderr[:300]))
        return
    got = rel_lines(doc, os.path.realpath(tree))
    for w in case["expected"]:
        n = len(got.get(w, []))
        check(n == 1, "%s: expected once, reported %d times: %s" % (name, n, w))
    for g, fs in got.items():
        check(g in case["expected"], "%s: not expected: %s (%s)" % (name, g, fs[0]["message"]))
    for n in case.get("notes", []):
        check(any(n in x for x in doc["notes"]), "%s: no note says %r (notes: %s)" % (name, n, doc["notes"]))
    for w, sev in case.get("severities", {}).items():
        fs = got.get(w, [])
        check(fs and fs[0]["severity"] == sev, "%s: %s should be a %s (%s)" % (name, w, sev,
                                                                          fs[0]["severity"] if fs else "absent"))
    for w, text in case.get("messages", {}).items():
        fs = got.get(w, [])
        check(fs and text in fs[0]["message"], "%s: %s should say %r (%s)" % (name, w, text,
                                                                          fs[0]["message"] if fs else "absent"))


def test_sarif(hiera, scratch):
    """SARIF names files relative to the folder checked (originalUriBaseIds SRCROOT)."""
    tree = os.path.join(scratch, "misnamed-file", "tree")
    env = dict(os.environ, HIERA_CACHE_DIR="off")
    p = subprocess.run([hiera, "check", "--format", "sarif", tree], capture_output=True, text=True, env=env)
    try:
        s = json.loads(p.stdout)
        run = s["runs"][0]
        base = run["originalUriBaseIds"]["SRCROOT"]["uri"]
        check(base == "file://" + os.path.realpath(tree) + "/", "sarif: SRCROOT is the folder checked (%s)" % base)
        locs = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
        check(locs and all(l.get("uriBaseId") == "SRCROOT" and not l["uri"].startswith("/") for l in locs),
              "sarif: locations relative to SRCROOT: %s" % locs[:2])
        check(any(l["uri"] == "data/hostname/web2" for l in locs), "sarif: the file's relative uri")
        levels = {r["ruleId"]: r["level"] for r in run["results"]}
        check(set(levels.values()) <= {"error", "warning", "note"}, "sarif: levels")
    except (ValueError, KeyError, IndexError) as e:
        check(False, "sarif: %s: %s" % (e, p.stdout[:200]))


# ------------------------------------------------------------------ the real trees (optional)

def read_expected(path):
    true, false = [], []
    meta = {}
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            m = re.match(r"^# (\w+): (.*)$", line)
            if m and m.group(1) in ("tree", "facts", "args", "needs"):
                meta[m.group(1)] = m.group(2)
                continue
            m = re.match(r"^# FALSE (\S+ \S+)", line)
            if m:
                false.append(m.group(1))
                continue
            if line.strip() and not line.startswith("#"):
                true.append(line.split("  ")[0].strip())
    return meta, true, false


def read_layout(trees):
    """what build.sh laid out: tree -> its line of layout.txt ("ok ..." or "missing: why")"""
    out = {}
    try:
        with open(os.path.join(trees, "layout.txt")) as fh:
            for line in fh:
                name, _, rest = line.strip().partition(" ")
                out[name] = rest
    except OSError:
        pass
    return out


def not_checkable(trees, layout, meta, tree, fdir):
    """why a real tree cannot be checked (None: it can)"""
    name = meta["tree"].split("/")[0]
    if not os.path.isdir(tree):
        if layout.get(name, "").startswith("missing"):
            return "not laid out: " + layout[name][len("missing: "):]
        if not layout:
            return "not laid out (nothing under %s: make check-realrepos REALREPOS_MIRROR=DIR lays the trees out)" % trees
        return "not laid out (no %s%s)" % (tree, "" if name in layout else "; build.sh's layout.txt does not name it")
    if not os.path.isdir(fdir) or not any(f.endswith((".json", ".yaml")) for f in os.listdir(fdir)):
        return "no facts in %s" % fdir
    # what "# needs:" names (jenkins: its global hiera.yaml), and the files the arguments name
    for need in meta.get("needs", "").split() + [a for a in meta.get("args", "").split() if "{tree}/" in a]:
        need = need.replace("{tree}", tree)
        if not os.path.exists(need):
            return "no %s" % need
    return None


def test_real(hiera, trees):
    """checks every real tree laid out under trees; returns (the trees checked, [(tree, why not)])"""
    import glob
    n, skipped = 0, []
    layout = read_layout(trees)
    for path in sorted(glob.glob(os.path.join(HERE, "realrepos", "expected", "*.txt"))):
        name = os.path.basename(path)[:-4]
        meta, true, false = read_expected(path)
        tree = os.path.join(trees, "trees", meta["tree"])
        fdir = os.path.join(trees, "facts", meta["facts"])
        why = not_checkable(trees, layout, meta, tree, fdir)
        if why:
            print("realrepos: %s skipped: %s" % (name, why))
            skipped.append((name, why))
            continue
        n += 1
        args = [a.replace("{tree}", tree) for a in meta.get("args", "").split()]
        codedir = "--codedir" in args
        env = dict(os.environ, HIERA_CACHE_DIR="off")
        cmd = [hiera, "check", "--format", "json", "--facts-dir", fdir] + args + ([] if codedir else [tree])
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            check(False, "%s: not JSON: %s" % (name, p.stderr[:300]))
            continue
        root = os.path.realpath(tree if not codedir else args[args.index("--codedir") + 1])
        got = rel_lines(doc, root)
        for w in true:
            check(w in got, "%s: a finding triaged true is gone: %s" % (name, w))
        for w in false:
            check(w not in got, "%s: a finding triaged false is back: %s" % (name, w))
        for g in got:
            check(g in true, "%s: not triaged: %s (%s)" % (name, g, got[g][0]["message"][:160]))
    return n, skipped


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--trees", help="the real trees (trees/, facts/) laid out by realrepos/build.sh")
    ap.add_argument("--require-trees", action="store_true",
                    help="a real tree that cannot be checked (not laid out, no facts) is a failure")
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    scratch = tempfile.mkdtemp(prefix="hiera-check-realrepos-")
    n, skipped = 0, []
    try:
        for name, case in CASES.items():
            test_case(hiera, name, case, scratch)
        test_sarif(hiera, scratch)
        if a.trees:
            n, skipped = test_real(hiera, a.trees)
            print("realrepos: %d real trees checked" % n)
            for name, why in skipped if a.require_trees else []:
                check(False, "%s: not checked (--require-trees): %s" % (name, why))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for f in failures:
        print("FAIL", f)
    if skipped:
        # said last, beside the count: a run that checked nothing must not look like one that passed
        print("realrepos: %d of %d real trees NOT CHECKED (their findings are not compared):" % (len(skipped), n + len(skipped)))
        for name, why in skipped:
            print("  %s: %s" % (name, why))
    print("hiera check real-repository cases: %d passed, %d failed" % (T.passed, T.failed))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
