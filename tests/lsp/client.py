"""A Language Server Protocol test client: JSON-RPC 2.0 with Content-Length framing over the pipes
of a `hiera lsp` process. Used by tests/lsp/check.py and bench/lsp.py.

    c = Client([hiera, "lsp"], cwd=...)
    c.initialize(root, {"node": "web01.example.com", "factsDir": ...})
    c.open(path, text)
    diags = c.diagnostics(uri)          # waits for publishDiagnostics of the current version
    r = c.request("textDocument/hover", {...})
"""
import json
import os
import queue
import subprocess
import threading
import time
import urllib.parse


def uri_of(path):
    return "file://" + urllib.parse.quote(os.path.abspath(path))


class Timeout(Exception):
    pass


ALL = []  # every client made: their servers' stderr is checked for sanitizer reports


class Client:
    def __init__(self, argv, cwd=None, env=None):
        ALL.append(self)
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=cwd, env=env)
        self.next_id = 1
        self.responses = {}
        self.notes = []             # (time, message) of every notification received
        self.cond = threading.Condition()
        self.versions = {}
        self.eof = False
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.err_lines = []
        threading.Thread(target=self._read_err, daemon=True).start()

    # ------------------------------------------------------------ wire
    def send_raw(self, data):
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def send(self, msg):
        body = json.dumps(msg).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _read_err(self):
        for line in self.proc.stderr:
            self.err_lines.append(line.decode(errors="replace"))

    def _read(self):
        try:
            self._read_messages()
        except (ValueError, OSError):  # the test closed the pipe
            with self.cond:
                self.eof = True
                self.cond.notify_all()

    def _read_messages(self):
        f = self.proc.stdout
        while True:
            length = None
            while True:
                line = f.readline()
                if not line:
                    with self.cond:
                        self.eof = True
                        self.cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.partition(b":")
                if k.lower() == b"content-length":
                    length = int(v)
            body = f.read(length)
            msg = json.loads(body)
            with self.cond:
                if "id" in msg and "method" not in msg:
                    self.responses[msg["id"] if msg["id"] is not None else ("null", len(self.responses))] = msg
                else:
                    self.notes.append((time.monotonic(), msg))
                self.cond.notify_all()

    # ------------------------------------------------------------ requests
    def request_async(self, method, params):
        i = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return i

    def response(self, i, timeout=30):
        end = time.monotonic() + timeout
        with self.cond:
            while i not in self.responses:
                left = end - time.monotonic()
                if left <= 0 or self.eof:
                    raise Timeout("no response to request %r" % i)
                self.cond.wait(left)
            return self.responses.pop(i)

    def request(self, method, params, timeout=30):
        r = self.response(self.request_async(method, params), timeout)
        if "error" in r:
            raise RuntimeError("%s: %s" % (method, r["error"]))
        return r["result"]

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_note(self, pred, timeout=30, since=0):
        """The first notification (after index `since`) for which pred is true."""
        end = time.monotonic() + timeout
        with self.cond:
            while True:
                for t, m in self.notes[since:]:
                    if pred(m):
                        return t, m
                left = end - time.monotonic()
                if left <= 0 or self.eof:
                    raise Timeout("no such notification")
                self.cond.wait(left)

    # ------------------------------------------------------------ LSP
    def initialize(self, root, options=None, utf8=False):
        caps = {"general": {"positionEncodings": ["utf-8", "utf-16"]}} if utf8 else {}
        r = self.request("initialize", {"processId": os.getpid(), "rootUri": uri_of(root),
                                        "capabilities": caps, "initializationOptions": options or {}})
        self.notify("initialized", {})
        return r

    def open(self, path, text=None, lang="yaml"):
        if text is None:
            with open(path) as f:
                text = f.read()
        uri = uri_of(path)
        self.versions[uri] = 1
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": lang, "version": 1, "text": text}})
        return uri

    def change(self, uri, text=None, range_=None):
        """The whole text, or text replacing range_ ((l1, c1), (l2, c2))."""
        self.versions[uri] += 1
        ch = {"text": text}
        if range_:
            (a, b), (c, d) = range_
            ch["range"] = {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}}
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": self.versions[uri]},
                                               "contentChanges": [ch]})
        return self.versions[uri]

    def diagnostics(self, uri, version=None, timeout=60, since=0):
        """The diagnostics published for uri at its current version (or the one given)."""
        v = self.versions.get(uri) if version is None else version
        t, m = self.wait_note(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] == uri and m["params"].get("version") == v,
                              timeout, since)
        return m["params"]["diagnostics"]

    def pos(self, uri, line, ch):
        return {"textDocument": {"uri": uri}, "position": {"line": line, "character": ch}}

    def shutdown(self, timeout=30):
        self.request("shutdown", None, timeout)
        self.notify("exit", None)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def sanitizer_reports(self):
        """What AddressSanitizer, UBSan or LeakSanitizer printed on the server's stderr."""
        text = "".join(self.err_lines)
        return [l for l in text.split("\n") if "Sanitizer" in l or "runtime error:" in l]

    def close(self):
        for f in (self.proc.stdin,):
            try:
                f.close()
            except Exception:
                pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
