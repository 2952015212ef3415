# -*- coding: utf-8 -*-
# Hiera lookups in-process through libhiera (the `hiera` Python module), answering as
# community.general.hiera does, without a `hiera` process per term.
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
    name: hiera
    author: Hiera in C
    short_description: get data from Hiera, in-process (libhiera)
    requirements:
      - the hiera Python module (libhiera)
    description:
      - Answers as community.general.hiera does (the text Hiera 3.10's C(hiera -c CONFIG TERM)
        prints, stripped), from the library in the Ansible process; one handle per configuration
        serves the whole play.
      - A term is C(KEY [DEFAULT] [VAR=VALUE...]) with the hiera command's flags C(-a)/C(--array),
        C(-h)/C(--hash) and C(-f)/C(--format FORMAT). As in community.general.hiera, only the first
        term is looked up.
      - With any of the Hiera 5 options (node, environment, merge, codedir, confdir,
        environmentpath, hiera_config, facts) each term is a key looked up as C(puppet lookup)
        does, and the answers are the values themselves.
    options:
      _terms:
        description: The keys to look up.
        type: list
        elements: string
        required: true
      executable:
        description: Accepted for community.general.hiera's playbooks; not used (no process is run).
        default: '/usr/bin/hiera'
        env:
          - name: ANSIBLE_HIERA_BIN
      config_file:
        description: File that describes the hierarchy of Hiera (Hiera 3).
        default: '/etc/hiera.yaml'
        env:
          - name: ANSIBLE_HIERA_CFG
      node:
        description: Hiera 5, the node (its facts from Puppet's facts cache unless facts is given).
        type: string
      environment:
        description: Hiera 5, the Puppet environment.
        type: string
      merge:
        description: Hiera 5, the merge strategy (first, unique, hash, deep).
        type: string
      facts:
        description: Hiera 5, a facts file (YAML or JSON) or a dict of facts.
        type: raw
      codedir:
        description: Hiera 5, Puppet's codedir.
        type: path
      confdir:
        description: Hiera 5, Puppet's confdir.
        type: path
      environmentpath:
        description: Hiera 5, Puppet's environmentpath.
        type: path
      hiera_config:
        description: Hiera 5, the global hiera.yaml.
        type: path
'''

EXAMPLES = r'''
- ansible.builtin.debug:
    msg: "{{ lookup('libhiera.hiera.hiera', 'foo') }}"
- ansible.builtin.debug:
    msg: "{{ lookup('libhiera.hiera.hiera', 'foo fqdn=puppet01.localdomain') }}"
- ansible.builtin.debug:
    msg: "{{ lookup('libhiera.hiera.hiera', 'profile::base::users', node='web01.example.com', merge='deep') }}"
'''

RETURN = r'''
  _raw:
    description: the answer's text (Hiera 3), or the values (Hiera 5 options)
    type: list
'''

import re
import shlex
import threading

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.lookup import LookupBase

try:
    import hiera as libhiera
except ImportError as e:  # reported when the lookup runs
    libhiera = None
    IMPORT_ERROR = e

HIERA5_OPTIONS = ("node", "environment", "merge", "facts", "codedir", "confdir", "environmentpath", "hiera_config")

# one library handle per configuration for the whole process (the play's lookups share it)
_handles = {}
_lock = threading.Lock()


def _handle(key, make):
    with _lock:
        h = _handles.get(key)
        if h is None:
            h = _handles[key] = make()
        return h


_NOT_GIVEN = object()
_SCOPE_ARG = re.compile(r"^([^\n]+?)=([^\n]*)$", re.M)


def parse_term(term):
    """The hiera command's arguments after `-c CONFIG` (bin/hiera): (key, default, scope,
    resolution, format), as community.general.hiera passes the term through a shell split."""
    args = shlex.split(term)
    resolution, fmt, pos = "priority", "ruby", []
    it = iter(args)
    for a in it:
        if a == "--":
            pos.extend(it)
            break
        if a in ("-a", "--array"):
            resolution = "array"
        elif a in ("-h", "--hash"):
            resolution = "hash"
        elif a in ("-f", "--format") or a.startswith("--format=") or (a.startswith("-f") and len(a) > 2):
            val = a.split("=", 1)[1] if a.startswith("--format=") else a[2:] if a.startswith("-f") and len(a) > 2 else next(it, None)
            if val not in ("ruby", "json", "yaml"):
                raise AnsibleError("hiera: -f/--format takes ruby, json or yaml")
            fmt = val
        elif a.startswith("-") and len(a) > 1:
            raise AnsibleError("hiera: the option %s is not supported in-process (libhiera.hiera.hiera)" % a)
        else:
            pos.append(a)
    if not pos:
        raise AnsibleError("Please supply a data item to look up")
    key, default, scope = pos[0], _NOT_GIVEN, {}
    for a in pos[1:]:
        m = _SCOPE_ARG.search(a)
        if m:
            scope[m.group(1)] = m.group(2)
        elif default is _NOT_GIVEN:
            default = a
    return key, default, scope, resolution, fmt


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if libhiera is None:
            raise AnsibleError("libhiera.hiera.hiera needs the hiera Python module (libhiera): %s" % IMPORT_ERROR)
        self.set_options(var_options=variables, direct=kwargs)
        h5 = {k: self.get_option(k) for k in HIERA5_OPTIONS if self.get_option(k) is not None}
        if h5:
            return [self._hiera5(t, h5) for t in terms]
        return [self._hiera3(terms[0])]

    def _hiera3(self, term):
        cfg = self.get_option("config_file")
        key, default, scope, resolution, fmt = parse_term(term)
        try:
            h = _handle(("3", cfg), lambda: libhiera.Hiera3(cfg))
            kw = {} if default is _NOT_GIVEN else {"default": default}
            text = h.render(key, scope=scope, resolution=resolution, format=fmt, **kw)
        except libhiera.Error:
            text = ""  # the command fails: nothing on its standard output
        return to_text(text.strip())

    def _hiera5(self, key, o):
        place = tuple(o.get(k) for k in ("codedir", "confdir", "environmentpath", "hiera_config", "environment"))
        try:
            h = _handle(("5",) + place, lambda: libhiera.Hiera(codedir=o.get("codedir"), confdir=o.get("confdir"),
                                                              environmentpath=o.get("environmentpath"),
                                                              hiera_config=o.get("hiera_config"),
                                                              environment=o.get("environment")))
            return _plain(h.lookup(key, node=o.get("node"), facts=o.get("facts"), merge=o.get("merge")))
        except libhiera.NotFound:
            raise AnsibleError("hiera: no value for %s" % key)
        except libhiera.Error as e:
            raise AnsibleError("hiera: %s" % e)


def _plain(v):
    """Values Ansible templates can take (Sensitive ones unwrapped: Ansible has no such type)."""
    if isinstance(v, libhiera.Sensitive):
        return _plain(v.unwrap())
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return dict((k if isinstance(k, (str, int, float, bool)) or k is None else str(k), _plain(x)) for k, x in v.items())
    return v
