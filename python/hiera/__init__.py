"""hiera: Hiera 5 lookups as Puppet 7 or Puppet 8 answers them (and Hiera 3 ones), in-process, over libhiera.

    import hiera
    h = hiera.Hiera(codedir="/etc/puppetlabs/code", environment="production")
    h.lookup("ntp::servers", node="web01.example.com", facts={"os": {"family": "Debian"}})
    h.lookup("profile::users", node="web01", facts="facts/web01.yaml", merge="deep")
    h.lookup("nope", node="web01", facts={}, default=None)       # a key not found: the default
    h.explain("ntp::servers", node="web01", facts=...)           # the text `puppet lookup --explain` prints
    h.keys(node="web01", facts=...)                              # what `hiera keys` lists
    for node in h.batch(["web01", "web02"], ["ntp::servers"], facts=hiera.FactsDir("facts/")):
        print(node.name, node.values, node.errors)

Values come back as Python values: Puppet's undef as None, integers beyond 64 bits as int,
Sensitive values as hiera.Sensitive (the value behind .unwrap()), hashes as dicts in their order.
A key not found raises hiera.NotFound (a KeyError) unless default= is given; every other failure
raises hiera.Error (hiera.LookupError for what Puppet calls a lookup error) with .file, .line
and .column when the library knows them.

Which Puppet: the installed one (the puppet on PATH, its library's puppet/version.rb; the
environment variable HIERA_PUPPET_VERSION=7|8 over it; Puppet 7 when none is installed), or
puppet_version=7|8 of Hiera, FactsDir and PuppetDB (Hiera.puppet_version says which is in force,
installed_puppet_version() which is installed and why). Messages follow it too (a facts file
that does not parse is worded by Puppet 8's json 2.7 as Puppet 8).

Threads: one Hiera object may be used from any number of threads at once. Each thread gets its own
cache and contexts (the library's rule: a context belongs to one thread at a time); the settings
and environment are read once and shared. The GIL is released during every call into the library,
so lookups on several threads run in parallel.
"""
import json as _json
import logging as _logging
import os as _os
import queue as _queue
import threading as _threading
from collections import OrderedDict as _OrderedDict

from ._hiera import ffi as _ffi, lib as _lib

__all__ = ["Hiera", "Hiera3", "Error", "LookupError", "NotFound", "Sensitive", "Symbol", "FactsDir", "PuppetDB",
           "Diagnostic", "BatchNode", "version", "installed_puppet_version"]

_log = _logging.getLogger("hiera")
_NOT_GIVEN = object()


def version():
    """The library's version."""
    return _ffi.string(_lib.hiera_version()).decode()


def installed_puppet_version():
    """(7 or 8, why): the Puppet answered as when none is chosen, and where that comes from
    ("HIERA_PUPPET_VERSION=8", "the installed Puppet 8.10.0: /usr/bin/puppet, ..."). Raises
    hiera.Error when HIERA_PUPPET_VERSION is neither 7 nor 8."""
    why = _ffi.new("char **")
    v = int(_lib.hiera_puppet_version_find(why))
    text = _take_string(why[0]) if why[0] != _ffi.NULL else None
    if not v:
        raise Error(text or "HIERA_PUPPET_VERSION must be 7 or 8")
    return v, text


def _version_arg(v):
    """puppet_version= as the library takes it (None: the installed Puppet)"""
    if v is None:
        return _lib.HIERA_PUPPET_AUTO
    if v in (7, 8) or v in ("7", "8"):
        return int(v)
    raise ValueError("puppet_version must be 7, 8 or None (the installed Puppet)")


class _AsPuppet:
    """The calling thread words what the library reads outside a context (facts files) as this
    Puppet while it lasts (hiera_thread_puppet_version)."""
    __slots__ = ("v", "was")

    def __init__(self, v):
        self.v = v

    def __enter__(self):
        self.was = _lib.hiera_thread_puppet_version(self.v)

    def __exit__(self, *a):
        _lib.hiera_thread_puppet_version(self.was)


# ------------------------------------------------------------------ errors

class Error(Exception):
    """A failure, with what the library says of it: message, file, line and column (0 when
    unknown) and kind ("lookup", "fatal", "config", "interpolation")."""

    def __init__(self, message, file=None, line=0, column=0, kind="fatal"):
        super().__init__(message)
        self.message, self.file, self.line, self.column, self.kind = message, file, line, column, kind

    def __str__(self):
        if self.file and self.line and self.file not in self.message:
            where = f"{self.file}:{self.line}" + (f":{self.column}" if self.column else "")
            return f"{self.message} ({where})"
        return self.message


class LookupError(Error):
    """Puppet's LookupError: a merge of incompatible values, a recursive interpolation, a data file
    that does not parse... (`puppet lookup` exits 1 for these)."""


class NotFound(Error, KeyError):
    """No value for the key(s) and no default."""

    def __str__(self):
        return self.message


_KINDS = {1: "lookup", 2: "fatal", 3: "config", 4: "interpolation"}


def _text(p):
    return _ffi.string(p).decode("utf-8", "surrogateescape") if p != _ffi.NULL else None


def _raise(err, default="failed"):
    """Raises the exception for a filled hiera_error (and clears it)."""
    kind = _KINDS.get(int(err.kind), "fatal")
    e = (LookupError if kind == "lookup" else Error)(_text(err.message) or default, _text(err.file),
                                                    int(err.line), int(err.column), kind)
    _lib.hiera_error_clear(err)
    raise e


# ------------------------------------------------------------------ values

class Sensitive:
    """Puppet's Sensitive: a value that must not be shown (str() and repr() redact it)."""
    __slots__ = ("_value",)

    def __init__(self, value):
        self._value = value

    def unwrap(self):
        return self._value

    def __repr__(self):
        return "Sensitive [value redacted]"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, Sensitive) and other._value == self._value

    def __hash__(self):
        return hash(("Sensitive", _json.dumps(self._value, sort_keys=True, default=repr)))


class Symbol(str):
    """A Ruby symbol read from YAML (not Puppet data; Hiera 3 data may hold them)."""

    def __repr__(self):
        return ":" + str.__str__(self)


def _hashable(k):
    if isinstance(k, list):
        return tuple(_hashable(x) for x in k)
    if isinstance(k, dict):
        return tuple((_hashable(a), _hashable(b)) for a, b in k.items())
    return k


def _py(v):
    """The Python value of a hiera_value (read while its owner lives)."""
    k = _lib.hiera_value_kind(v)
    if k == _lib.HIERA_STRING:
        return _ffi.unpack(_lib.hiera_value_string(v), _lib.hiera_value_string_length(v)).decode("utf-8", "surrogateescape")
    if k == _lib.HIERA_HASH:
        n = _lib.hiera_value_hash_size(v)
        out = {}
        for i in range(n):
            out[_hashable(_py(_lib.hiera_value_hash_key(v, i)))] = _py(_lib.hiera_value_hash_value(v, i))
        return out
    if k == _lib.HIERA_ARRAY:
        return [_py(_lib.hiera_value_array_get(v, i)) for i in range(_lib.hiera_value_array_size(v))]
    if k == _lib.HIERA_INTEGER:
        return int(_lib.hiera_value_int(v))
    if k == _lib.HIERA_BOOLEAN:
        return bool(_lib.hiera_value_bool(v))
    if k == _lib.HIERA_UNDEF:
        return None
    if k == _lib.HIERA_FLOAT:
        return float(_lib.hiera_value_float(v))
    if k == _lib.HIERA_BIGINT:
        return int(_ffi.string(_lib.hiera_value_bigint(v)))
    if k == _lib.HIERA_SENSITIVE:
        return Sensitive(_py(_lib.hiera_value_sensitive_unwrap(v)))
    if k == _lib.HIERA_SYMBOL:
        return Symbol(_ffi.string(_lib.hiera_value_string(v)).decode("utf-8", "surrogateescape"))
    raise Error(f"a value of an unknown kind ({k})")


def _json_default(o):
    if isinstance(o, Sensitive):
        raise TypeError("a Sensitive value cannot be given to a lookup")
    if isinstance(o, (tuple, set, frozenset)):
        return list(o)
    raise TypeError(f"{type(o).__name__} is not data Hiera can take")


def _to_json(value):
    return _json.dumps(value, default=_json_default, allow_nan=True, ensure_ascii=False)


class _Value:
    """A hiera_value made from Python data (its JSON text): owns one reference."""
    __slots__ = ("ptr",)

    def __init__(self, value=None, text=None):
        self.ptr = _ffi.NULL
        err = _ffi.new("hiera_error *")
        p = _lib.hiera_value_from_json((text if text is not None else _to_json(value)).encode("utf-8", "surrogatepass"), err)
        if p == _ffi.NULL:
            _raise(err, "the value cannot be given to the library")
        self.ptr = p

    def __del__(self):
        if self.ptr != _ffi.NULL:
            _lib.hiera_value_decref(self.ptr)
            self.ptr = _ffi.NULL


def _take(p):
    """The Python value of a new reference, released."""
    try:
        return _py(p)
    finally:
        _lib.hiera_value_decref(p)


def _take_string(p):
    try:
        return _text(p)
    finally:
        _lib.free(p)


# ------------------------------------------------------------------ diagnostics

class Diagnostic:
    """A warning the library met (Puppet would log it and go on)."""
    __slots__ = ("severity", "code", "file", "line", "column", "message")

    def __init__(self, severity, code, file, line, column, message):
        self.severity, self.code, self.file, self.line, self.column, self.message = \
            severity, code, file, line, column, message

    def __repr__(self):
        return f"Diagnostic({self.severity!r}, {self.code!r}, {self.message!r})"


_SEVERITIES = {1: "warning", 2: "error", 3: "critical"}


def _default_diagnostic(d):
    level = {"warning": _logging.WARNING, "error": _logging.ERROR}.get(d.severity, _logging.CRITICAL)
    _log.log(level, "%s", d.message if not d.file else f"{d.message} ({d.file}" + (f":{d.line})" if d.line else ")"))


@_ffi.def_extern()
def _py_diagnostic(d, userdata):
    sink = _ffi.from_handle(userdata)
    try:
        sink(Diagnostic(_SEVERITIES.get(int(d.severity), "warning"), _text(d.code), _text(d.file), int(d.line),
                        int(d.column), _text(d.message)))
    except Exception:  # a callback must not unwind through C
        _log.exception("the diagnostics callback failed")


# ------------------------------------------------------------------ facts sources

class _Source:
    """A facts source (a library object of one thread at a time: guarded by a lock)."""

    def __init__(self, ptr, what, puppet_version=None):
        self._ptr = ptr
        self._lock = _threading.Lock()
        self.what = what
        self._version = _version_arg(puppet_version)

    def nodes(self):
        """The node names, sorted."""
        err = _ffi.new("hiera_error *")
        with self._lock, _AsPuppet(self._version):
            p = _lib.hiera_facts_source_nodes(self._ptr, err)
        if p == _ffi.NULL:
            _raise(err)
        return _take(p)

    def facts(self, node):
        """The node's facts: a dict of given facts, or of stored facts (a facts cache file, PuppetDB)."""
        base, given, _ = self._get(node)
        out = dict(base or {})
        out.update(given or {})
        return out

    def _get(self, node, puppet_version=None):
        """(puppet_version: the Puppet whose words the messages take, a Hiera's; None: the source's)"""
        err = _ffi.new("hiera_error *")
        nf = _ffi.new("hiera_node_facts *")
        with self._lock, _AsPuppet(self._version if puppet_version is None else puppet_version):
            st = _lib.hiera_facts_source_get(self._ptr, node.encode(), _ffi.NULL, nf, err)
        if st != _lib.HIERA_OK:
            if st == _lib.HIERA_NOT_FOUND:
                msg = _text(err.message) or f"No facts available for target node: {node}"
                _lib.hiera_error_clear(err)
                raise NotFound(msg)
            _raise(err)
        try:
            return (_py(nf.base) if nf.base != _ffi.NULL else None, _py(nf.given) if nf.given != _ffi.NULL else None,
                    _text(nf.path))
        finally:
            _lib.hiera_node_facts_clear(nf)

    def __str__(self):
        return _text(_lib.hiera_facts_source_describe(self._ptr))

    def close(self):
        if self._ptr is not None and self._ptr != _ffi.NULL:
            _lib.hiera_facts_source_free(self._ptr)
        self._ptr = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()


class FactsDir(_Source):
    """A folder of facts files, one per node (NAME.yaml, NAME.yml or NAME.json: a hash of facts or
    a file of Puppet's YAML facts cache), as `hiera batch --facts-dir` reads it. puppet_version:
    whose words its errors take when it is used alone (7, 8; None: the installed Puppet); given
    to a Hiera, the Hiera's."""

    def __init__(self, path, puppet_version=None):
        err = _ffi.new("hiera_error *")
        p = _lib.hiera_facts_source_dir(_os.fsencode(path), err)
        if p == _ffi.NULL:
            _raise(err)
        super().__init__(p, ("dir", _os.fspath(path)), puppet_version)


class PuppetDB(_Source):
    """PuppetDB's nodes and facts, as Puppet's puppetdb terminus finds them: urls (comma-separated
    or a list; None: puppetdb.conf's), TLS files, timeout (seconds), a PQL query selecting the
    nodes, page_size (nodes whose facts one request fetches), puppet_version (as FactsDir's)."""

    def __init__(self, urls=None, conf_file=None, cert=None, key=None, cacert=None, timeout=0, query=None,
                 include_inactive=False, page_size=0, on_diagnostic=None, puppet_version=None):
        if isinstance(urls, (list, tuple)):
            urls = ",".join(urls)
        self._keep = []
        o = _ffi.new("hiera_puppetdb_options *")
        o.size = _ffi.sizeof("hiera_puppetdb_options")
        for name, val in (("urls", urls), ("conf_file", conf_file), ("cert", cert), ("key", key), ("cacert", cacert),
                          ("nodes_query", query)):
            if val is not None:
                b = _ffi.new("char[]", _os.fsencode(val))
                self._keep.append(b)
                setattr(o, name, b)
        o.timeout = int(timeout)
        o.include_inactive = bool(include_inactive)
        o.page_size = int(page_size)
        self._sink = _ffi.new_handle(on_diagnostic or _default_diagnostic)
        o.diagnostics = _lib._py_diagnostic
        o.diagnostics_data = self._sink
        err = _ffi.new("hiera_error *")
        p = _lib.hiera_facts_source_puppetdb(o, err)
        if p == _ffi.NULL:
            _raise(err)
        self._options = o
        super().__init__(p, ("puppetdb", urls, conf_file, cert, key, cacert, timeout, query, include_inactive,
                             page_size), puppet_version)


# ------------------------------------------------------------------ Hiera 5

class _Core:
    """What every thread shares: Puppet's settings and the environment (immutable in the library)."""

    def __init__(self, settings_ptr, env_ptr):
        self.settings, self.env = settings_ptr, env_ptr

    def __del__(self):
        if self.env != _ffi.NULL:
            _lib.hiera_environment_free(self.env)
        if self.settings != _ffi.NULL:
            _lib.hiera_settings_free(self.settings)


class _Context:
    """One library context (a node with its facts) and the values it was made from."""
    __slots__ = ("ptr", "keep", "base", "given")

    def __init__(self, ptr, keep, base=None, given=None):
        self.ptr, self.keep, self.base, self.given = ptr, keep, base, given

    def __del__(self):
        self.free()

    def free(self):
        if self.ptr != _ffi.NULL:
            _lib.hiera_free(self.ptr)
            self.ptr = _ffi.NULL


class _ThreadState:
    """A thread's cache and its recent contexts (freed with the thread's state, cache last)."""

    def __init__(self, core, cache_dir, max_contexts):
        self.core = core  # keeps the settings and environment alive while the contexts are
        self.cache = _lib.hiera_cache_new()
        if cache_dir is not None:
            _lib.hiera_cache_use_disk(self.cache, _os.fsencode(cache_dir) if cache_dir else _ffi.NULL)
        self.contexts = _OrderedDict()
        self.max_contexts = max_contexts

    def forget(self):
        for c in self.contexts.values():
            c.free()
        self.contexts.clear()

    def __del__(self):
        self.forget()
        if self.cache != _ffi.NULL:
            _lib.hiera_cache_free(self.cache)
            self.cache = _ffi.NULL


def _merge_json(merge):
    """merge= as `puppet lookup --merge NAME` gives it (a hash: deep with its two options false), or
    a dict of Puppet's merge options as given."""
    if merge is None:
        return None
    if isinstance(merge, str):
        if merge not in ("first", "unique", "hash", "deep"):
            raise ValueError("merge must be 'first', 'unique', 'hash' or 'deep' (or a dict of merge options)")
        m = {"strategy": merge}
        if merge == "deep":
            m.update(sort_merged_arrays=False, merge_hash_arrays=False)
        return _to_json(m)
    if isinstance(merge, dict):
        return _to_json(merge)
    raise TypeError("merge must be a strategy name ('first', 'unique', 'hash', 'deep') or a dict with 'strategy'")


class Hiera:
    """Hiera 5 lookups as `puppet lookup` (Puppet 7 or 8) makes them.

    codedir, confdir, environmentpath, hiera_config and environment are Puppet's settings of the
    same names (None: Puppet's defaults; puppet.conf in confdir is read as `puppet lookup` reads
    it). settings: more Puppet settings as {name: value}. unsafe_fact_paths: follow hierarchy
    paths that facts make escape their folder (as Puppet does; refused by default).
    on_diagnostic: a callable given each hiera.Diagnostic (default: the "hiera" logger).
    cache_dir: keep parsed data files on disk between processes ("" for the default folder,
    ~/.cache/hiera; None: in memory only).
    puppet_version: answer as Puppet 7 (7.23) or 8 (8.10); None: the installed Puppet (see
    installed_puppet_version()). The attribute puppet_version says which is in force.
    """

    def __init__(self, codedir=None, environment=None, confdir=None, environmentpath=None, hiera_config=None,
                 settings=None, unsafe_fact_paths=False, on_diagnostic=None, cache_dir=None, max_contexts=64,
                 puppet_version=None):
        given = [("confdir", confdir), ("codedir", codedir), ("environmentpath", environmentpath),
                 ("hiera_config", hiera_config), ("environment", environment)]
        given += list((settings or {}).items())
        given = [(k, _os.fspath(v) if isinstance(v, _os.PathLike) else str(v)) for k, v in given if v is not None]
        keep = []
        arr = _ffi.new("hiera_setting[]", max(1, len(given)))
        for i, (k, v) in enumerate(given):
            kb, vb = _ffi.new("char[]", k.encode()), _ffi.new("char[]", v.encode("utf-8", "surrogateescape"))
            keep += [kb, vb]
            arr[i].name, arr[i].value = kb, vb
        self._sink = _ffi.new_handle(on_diagnostic or _default_diagnostic)
        so = _ffi.new("hiera_settings_options *")
        so.size = _ffi.sizeof("hiera_settings_options")
        so.cli, so.ncli = arr, len(given)
        so.diagnostics, so.diagnostics_data = _lib._py_diagnostic, self._sink
        so.puppet_version = _version_arg(puppet_version)
        err = _ffi.new("hiera_error *")
        s = _lib.hiera_settings_load(so, err)
        if s == _ffi.NULL:
            _raise(err, "the settings cannot be read")
        self.puppet_version = int(_lib.hiera_settings_puppet_version(s))
        e = _lib.hiera_environment_load(s, _ffi.NULL, err)
        if e == _ffi.NULL:
            _lib.hiera_settings_free(s)
            _raise(err, "the environment cannot be read")
        self._core = _Core(s, e)
        self.environment = _text(_lib.hiera_environment_name(e))
        self._unsafe = bool(unsafe_fact_paths)
        self._cache_dir = cache_dir
        self._max_contexts = max(1, int(max_contexts))
        self._local = _threading.local()

    # -- per thread

    def _state(self):
        st = getattr(self._local, "state", None)
        if st is None:
            st = self._local.state = _ThreadState(self._core, self._cache_dir, self._max_contexts)
        return st

    def forget(self):
        """Drops the calling thread's remembered contexts (facts found by node name are read again)."""
        st = getattr(self._local, "state", None)
        if st is not None:
            st.forget()

    def _facts_of(self, node, facts, st):
        """(base, given) JSON texts of a node's facts and the key its context is remembered by."""
        if isinstance(facts, _Source):
            if node is None:
                raise TypeError("a facts source needs node=")
            base, given, _ = facts._get(node, self.puppet_version)
            return (_to_json(base) if base is not None else None, _to_json(given) if given is not None else None,
                    ("source", id(facts), node, _to_json([base, given])))
        if isinstance(facts, dict):
            text = _to_json(facts)
            return None, text, ("dict", node, text)
        if facts is None or isinstance(facts, (str, bytes, _os.PathLike)):
            path = _os.fsencode(facts) if facts is not None else None
            if path is not None:
                try:
                    stt = _os.stat(path)
                    stamp = (stt.st_dev, stt.st_ino, stt.st_size, stt.st_mtime_ns, stt.st_ctime_ns)
                except OSError:
                    stamp = None
            else:
                stamp = None
            key = ("find", node, path, stamp)
            if key in st.contexts:
                return None, None, key
            o = _ffi.new("hiera_node_facts_options *")
            o.size = _ffi.sizeof("hiera_node_facts_options")
            o.settings, o.env = self._core.settings, self._core.env
            nb = _ffi.new("char[]", node.encode()) if node is not None else _ffi.NULL
            pb = _ffi.new("char[]", path) if path is not None else _ffi.NULL
            o.node, o.facts_file = nb, pb
            o.diagnostics, o.diagnostics_data = _lib._py_diagnostic, self._sink
            nf = _ffi.new("hiera_node_facts *")
            err = _ffi.new("hiera_error *")
            if _lib.hiera_node_facts_find(o, nf, err) != _lib.HIERA_OK:
                _raise(err)
            try:
                base = _to_json(_py(nf.base)) if nf.base != _ffi.NULL else None
                given = _to_json(_py(nf.given)) if nf.given != _ffi.NULL else None
            finally:
                _lib.hiera_node_facts_clear(nf)
            return base, given, key
        raise TypeError("facts must be a dict, a file name, hiera.FactsDir or hiera.PuppetDB")

    def _context(self, node, facts, trusted=None, fresh=False):
        st = self._state()
        base, given, key = self._facts_of(node, facts, st)
        if trusted is not None:
            key = key + ("trusted", _to_json(trusted))
        c = st.contexts.get(key)
        if c is not None and not fresh:
            st.contexts.move_to_end(key)
            return c
        if c is not None and base is None and given is None and key[0] == "find":
            base, given = c.base, c.given  # (what was found for a remembered context)
        keep = []
        o = _ffi.new("hiera_options *")
        o.size = _ffi.sizeof("hiera_options")
        o.settings, o.env, o.cache = self._core.settings, self._core.env, st.cache
        if node is not None:
            nb = _ffi.new("char[]", node.encode("utf-8", "surrogateescape"))
            keep.append(nb)
            o.node = nb
        for field, text in (("facts", given), ("base_facts", base), ("trusted", _to_json(trusted) if trusted is not None else None)):
            if text is not None:
                v = _Value(text=text)
                keep.append(v)
                setattr(o, field, v.ptr)
        o.unsafe_fact_paths = self._unsafe
        o.diagnostics, o.diagnostics_data = _lib._py_diagnostic, self._sink
        err = _ffi.new("hiera_error *")
        p = _lib.hiera_new(o, err)
        if p == _ffi.NULL:
            _raise(err, "the lookup context cannot be made")
        c = _Context(p, keep, base, given)
        if fresh:
            return c
        st.contexts[key] = c
        while len(st.contexts) > st.max_contexts:
            _, old = st.contexts.popitem(last=False)
            old.free()
        return c

    @staticmethod
    def _request(keys, merge, default, type, explain, keep):
        if isinstance(keys, str):
            keys = [keys]
        keys = list(keys)
        if not keys:
            raise ValueError("no key to look up")
        r = _ffi.new("hiera_request *")
        r.size = _ffi.sizeof("hiera_request")
        kb = [_ffi.new("char[]", k.encode("utf-8", "surrogateescape")) for k in keys]
        ka = _ffi.new("const char *[]", kb)
        keep += [kb, ka]
        r.keys, r.nkeys = ka, len(keys)
        mj = _merge_json(merge)
        if mj is not None:
            mv = _Value(text=mj)
            keep.append(mv)
            r.merge = mv.ptr
        if default is not _NOT_GIVEN:
            dv = _Value(default)
            keep.append(dv)
            r.default_value = dv.ptr
        if type is not None:
            tb = _ffi.new("char[]", type.encode())
            keep.append(tb)
            r.type = tb
        r.explain = explain
        return r, keys

    # -- the API

    def lookup(self, key, node=None, facts=None, merge=None, default=_NOT_GIVEN, type=None, trusted=None):
        """The value of key (a name, or a list of names tried in order) for the node, as
        `puppet lookup KEY --node NODE --facts FACTS` answers it. facts: a dict, a facts file
        (YAML or JSON, given facts over the node's stored ones), hiera.FactsDir or hiera.PuppetDB,
        or None (the node's facts from Puppet's facts terminus; the local machine's from Facter
        without node). merge: "first", "unique", "hash", "deep" or a dict of deep-merge options.
        type: a Puppet type the value must match. Raises NotFound when nothing is found and no
        default is given."""
        ctx = self._context(node, facts, trusted)
        keep = []
        req, keys = self._request(key, merge, default, type, 0, keep)
        out = _ffi.new("hiera_value **")
        err = _ffi.new("hiera_error *")
        st = _lib.hiera_lookup(ctx.ptr, req, out, err)
        if st == _lib.HIERA_OK:
            return _take(out[0])
        if st == _lib.HIERA_NOT_FOUND:
            raise NotFound("no value for " + ", ".join(repr(k) for k in keys), kind="not_found")
        _raise(err)

    def explain(self, key, node=None, facts=None, merge=None, default=_NOT_GIVEN, type=None, trusted=None,
                options=False, tree=False):
        """How the lookup goes, as `puppet lookup --explain` prints it (options=True:
        --explain-options), or as a tree of dicts (tree=True). Never raises for a key not found;
        a lookup error is the explanation's last line, as Puppet prints it. Made on a context of
        its own (what earlier lookups remembered would shorten it), so it is what one `puppet
        lookup --explain` prints."""
        ctx = self._context(node, facts, trusted, fresh=True)
        keep = []
        req, _ = self._request(key, merge, default, type,
                               _lib.HIERA_EXPLAIN_OPTIONS if options else _lib.HIERA_EXPLAIN_DATA, keep)
        res = _ffi.new("hiera_result **")
        err = _ffi.new("hiera_error *")
        st = _lib.hiera_lookup_result(ctx.ptr, req, res, err)
        try:
            if res[0] == _ffi.NULL or (st == _lib.HIERA_ERROR and err.kind == _lib.HIERA_ERR_FATAL):
                _raise(err)
            _lib.hiera_error_clear(err)
            if tree:
                p = _lib.hiera_result_explanation_tree(res[0])
                return _take(p) if p != _ffi.NULL else None
            p = _lib.hiera_result_explanation_text(res[0])
            return _take_string(p) if p != _ffi.NULL else ""
        finally:
            if res[0] != _ffi.NULL:
                _lib.hiera_result_free(res[0])

    def provenance(self, key, node=None, facts=None, merge=None, trusted=None):
        """Where each part of the value came from (`hiera lookup --provenance`) as a tree of dicts."""
        ctx = self._context(node, facts, trusted)
        keep = []
        req, keys = self._request(key, merge, _NOT_GIVEN, None, _lib.HIERA_EXPLAIN_PROVENANCE, keep)
        res = _ffi.new("hiera_result **")
        err = _ffi.new("hiera_error *")
        st = _lib.hiera_lookup_result(ctx.ptr, req, res, err)
        try:
            if st == _lib.HIERA_ERROR:
                _raise(err)
            if st == _lib.HIERA_NOT_FOUND:
                raise NotFound("no value for " + ", ".join(repr(k) for k in keys), kind="not_found")
            return _take(_lib.hiera_result_provenance_tree(res[0]))
        finally:
            if res[0] != _ffi.NULL:
                _lib.hiera_result_free(res[0])

    def keys(self, node=None, facts=None, trusted=None):
        """Every key the node can see, as `hiera keys` lists them: {"keys": {key: [definitions]},
        "lookup_options": [...], "errors": [...]}."""
        return _take(_lib.hiera_keys(self._context(node, facts, trusted).ptr))

    def hierarchy(self, node=None, facts=None, trusted=None):
        """The layers and levels a lookup walks for the node (their locations resolved)."""
        return _take(_lib.hiera_hierarchy(self._context(node, facts, trusted).ptr))

    def batch(self, nodes=None, keys=None, facts=None, merge=None, default=_NOT_GIVEN, type=None, threads=0,
              ordered=True, trusted_dir=None):
        """Every key for every node on a pool of threads (what `hiera batch` prints), as an
        iterator of hiera.BatchNode, one per node (in the nodes' order unless ordered=False).

        nodes: names (their facts from facts=, a hiera.FactsDir or hiera.PuppetDB; None: every
        node it has), or a dict {name: facts} where facts is a dict or a facts file name.
        keys: the keys (None: each node's own, every key it can see). The run goes on in the
        background while the iterator is read; leaving the loop early stops it."""
        return _Batch(self, nodes, keys, facts, merge, default, type, threads, ordered, trusted_dir)


class BatchNode:
    """A node's answers in a batch: name, values ({key: value} of the keys found), missing (keys
    not found), errors ({key: hiera.Error}), error (why the node could not be looked up at all,
    or None)."""
    __slots__ = ("name", "index", "values", "missing", "errors", "error")

    def __init__(self, name, index, values, missing, errors, error):
        self.name, self.index, self.values, self.missing, self.errors, self.error = \
            name, index, values, missing, errors, error

    def __repr__(self):
        return f"BatchNode({self.name!r}, values={len(self.values)}, missing={len(self.missing)}, " \
               f"errors={len(self.errors)}, error={self.error!r})"


_END = object()


@_ffi.def_extern()
def _py_fleet_node(node, userdata):
    run = _ffi.from_handle(userdata)
    try:
        values, missing, errors = {}, [], {}
        for i in range(node.nanswers):
            a = node.answers[i]
            key = _text(a.key)
            if a.status == _lib.HIERA_OK:
                values[key] = _py(a.value)
            elif a.status == _lib.HIERA_NOT_FOUND:
                missing.append(key)
            else:
                errors[key] = LookupError(_text(a.error) or "failed", kind="lookup")
        item = BatchNode(_text(node.name), int(node.index), values, missing, errors, _text(node.error))
    except BaseException as e:  # handed to the reader, which raises it
        item = e
    return run.put(item)


class _Batch:
    def __init__(self, h, nodes, keys, facts, merge, default, type, threads, ordered, trusted_dir):
        self._q = _queue.Queue(maxsize=256)
        self._stop = _threading.Event()
        self._keep = keep = []
        o = _ffi.new("hiera_fleet_options *")
        o.size = _ffi.sizeof("hiera_fleet_options")
        ctx = _ffi.new("hiera_options *")
        ctx.size = _ffi.sizeof("hiera_options")
        ctx.settings, ctx.env = h._core.settings, h._core.env
        ctx.unsafe_fact_paths = h._unsafe
        ctx.diagnostics, ctx.diagnostics_data = _lib._py_diagnostic, h._sink
        keep += [ctx, h._core, h._sink]
        o.context = ctx
        if merge is not None or default is not _NOT_GIVEN or type is not None:
            req, _ = Hiera._request(["-"], merge, default, type, 0, keep)
            keep.append(req)
            o.request = req
        if keys is not None:
            kb = [_ffi.new("char[]", k.encode("utf-8", "surrogateescape")) for k in keys]
            ka = _ffi.new("const char *[]", kb) if kb else _ffi.NULL
            keep += [kb, ka]
            if not kb:
                raise ValueError("no key to look up")
            o.keys, o.nkeys = ka, len(kb)
        if isinstance(nodes, dict):
            inputs = _ffi.new("hiera_fleet_input[]", max(1, len(nodes)))
            for i, (name, f) in enumerate(nodes.items()):
                nb = _ffi.new("char[]", name.encode("utf-8", "surrogateescape"))
                keep.append(nb)
                inputs[i].name = nb
                if isinstance(f, dict):
                    v = _Value(f)
                    keep.append(v)
                    inputs[i].facts = v.ptr
                elif f is not None:
                    fb = _ffi.new("char[]", _os.fsencode(f))
                    keep.append(fb)
                    inputs[i].facts_file = fb
            keep.append(inputs)
            o.nodes, o.nnodes = inputs, len(nodes)
        else:
            if not isinstance(facts, _Source):
                raise TypeError("batch: give nodes as {name: facts}, or facts=hiera.FactsDir(...) or hiera.PuppetDB(...)")
            self._source = facts
            o.source = facts._ptr
            if nodes is not None:
                nb = [_ffi.new("char[]", n.encode("utf-8", "surrogateescape")) for n in nodes]
                na = _ffi.new("const char *[]", nb) if nb else _ffi.NULL
                keep += [nb, na]
                o.names, o.nnames = na, len(nb)
                if not nb:
                    self._q.put(_END)
                    self._thread = None
                    return
        if trusted_dir is not None:
            tb = _ffi.new("char[]", _os.fsencode(trusted_dir))
            keep.append(tb)
            o.trusted_dir = tb
        o.threads = int(threads)
        o.ordered = bool(ordered)
        self._handle = _ffi.new_handle(self)
        o.callback, o.userdata = _lib._py_fleet_node, self._handle
        self._o = o
        self.stats = None
        self._error = None
        self._thread = _threading.Thread(target=self._run, name="hiera-batch", daemon=True)
        if isinstance(facts, _Source):
            facts._lock.acquire()  # the source is the run's while it lasts
        self._thread.start()

    def _run(self):
        stats = _ffi.new("hiera_fleet_stats *")
        err = _ffi.new("hiera_error *")
        try:
            st = _lib.hiera_fleet_run(self._o, stats, err)
            if st != _lib.HIERA_OK and not self._stop.is_set():
                try:
                    _raise(err, "the batch could not run")
                except Error as e:
                    self._error = e
            else:
                _lib.hiera_error_clear(err)
            self.stats = {"nodes": stats.nodes, "failed_nodes": stats.failed_nodes, "lookups": stats.lookups,
                          "failed_lookups": stats.failed_lookups, "threads": stats.threads}
        finally:
            src = getattr(self, "_source", None)
            if src is not None:
                src._lock.release()
            self._put_end()

    def _put_end(self):
        while True:
            try:
                self._q.put(_END, timeout=0.1)
                return
            except _queue.Full:
                if self._stop.is_set():
                    try:
                        self._q.get_nowait()
                    except _queue.Empty:
                        pass

    def put(self, item):
        """(the fleet's callback) 0 goes on, 1 stops the run."""
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return 0
            except _queue.Full:
                continue
        return 1

    def __iter__(self):
        return self

    def __next__(self):
        item = self._q.get()
        if item is _END:
            self._q.put(_END)
            if self._thread is not None:
                self._thread.join()
            if self._error is not None:
                e, self._error = self._error, None
                raise e
            raise StopIteration
        if isinstance(item, BaseException):
            self.close()
            raise item
        return item

    def close(self):
        """Stops the run (the nodes not yet started are not looked up) and waits for it."""
        self._stop.set()
        if self._thread is not None:
            while self._thread.is_alive():
                try:
                    self._q.get(timeout=0.1)
                except _queue.Empty:
                    pass
            self._thread.join()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# ------------------------------------------------------------------ Hiera 3

_RESOLUTIONS = {"priority": 0, "array": 1, "hash": 2}


class Hiera3:
    """Lookups as the Hiera 3.10 gem (and its `hiera` command) answers them, over a v3
    hiera.yaml. Like Hiera objects, usable from any number of threads (one library object per
    thread)."""

    def __init__(self, config="/etc/puppet/hiera.yaml"):
        self._config = _os.fsencode(config) if config is not None else None
        self._local = _threading.local()
        self._h()  # the configuration's errors now

    def _h(self):
        h = getattr(self._local, "h", None)
        if h is None:
            err = _ffi.new("hiera_error *")
            p = _lib.hiera3_new(self._config if self._config is not None else _ffi.NULL, err)
            if p == _ffi.NULL:
                _raise(err)
            _lib.hiera3_set_logger(p, b"noop")
            h = self._local.h = _ffi.gc(p, _lib.hiera3_free)
        return h

    def _lookup(self, key, scope, default, resolution, order_override):
        r = _ffi.new("hiera3_resolution *")
        r.size = _ffi.sizeof("hiera3_resolution")
        r.kind = _RESOLUTIONS[resolution]
        r.preserve_unmergeables = -1
        sv = _Value(scope or {})
        dv = _Value(default) if default is not _NOT_GIVEN else None
        ob = _ffi.new("char[]", order_override.encode()) if order_override else _ffi.NULL
        out = _ffi.new("hiera_value **")
        err = _ffi.new("hiera_error *")
        st = _lib.hiera3_lookup(self._h(), key.encode("utf-8", "surrogateescape"), dv.ptr if dv else _ffi.NULL,
                                sv.ptr, ob, r, out, err)
        if st == _lib.HIERA_ERROR:
            _raise(err)
        return out[0] if st == _lib.HIERA_OK else None

    def lookup(self, key, scope=None, default=_NOT_GIVEN, resolution="priority", order_override=None):
        """Hiera#lookup: the value, or default (NotFound without one; Ruby's nil is None)."""
        p = self._lookup(key, scope, default, resolution, order_override)
        if p is None:
            raise NotFound(f"no value for {key!r}", kind="not_found")
        return _take(p)

    def render(self, key, scope=None, default=_NOT_GIVEN, resolution="priority", format="ruby", width=0):
        """What `hiera -c CONFIG [-a|-h] KEY [DEFAULT] [VAR=VALUE...]` prints (final newline
        included): format "ruby" (Ruby's puts/pp), "json" or "yaml"; "nil" for a key not found."""
        p = self._lookup(key, scope, default, resolution, None)
        fmt = {"ruby": 0, "json": 1, "yaml": 2}[format]
        err = _ffi.new("hiera_error *")
        try:
            t = _lib.hiera3_render(p if p is not None else _ffi.NULL, fmt, int(width), err)
        finally:
            if p is not None:
                _lib.hiera_value_decref(p)
        if t == _ffi.NULL:
            _raise(err)
        return _take_string(t)
