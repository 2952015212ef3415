"""A tiny stand-in for PuppetDB's query API (v4), for the error paths of hiera's PuppetDB client that
a real PuppetDB will not show on demand: servers that fail (5xx, HTML 404s, refused TLS), answer
slowly, send bad or truncated JSON, or dribble their answer a few bytes at a time.

It answers what hiera asks (the requests Puppet's puppetdb terminus and PuppetDB's documentation
describe), from a dict of nodes:

  GET  /pdb/query/v4/nodes/<certname>/facts   the facts terminus' request: [{certname, environment,
                                             name, value}...], a JSON 404 for an unknown node
  POST /pdb/query/v4  {"query": AST}          ["from", "factsets", ["extract", ["certname"], ...]]:
                                             the nodes (active ones unless node_state = "any");
                                             ["from", "inventory", ["extract", ["certname", "facts"],
                                             ["and", ["in", "certname", ["array", [...]]], ...]]]:
                                             those nodes' facts
  POST /pdb/query/v4  {"query": "PQL"}        the answer set with pql_answer (a list of rows), or a
                                             400 with a multi-line parse error when it holds "syntax"

A node's name chooses a misbehaviour: err500-*, html404-*, slow-* (sleeps `slow` seconds),
badjson-*, trunc-* (closes the connection in the middle), deep-* (101 levels of nesting),
forbidden-* (403), dribble-* (the answer 1 to 7 bytes per chunk), notarray-*; a page of facts
that names a pagefail-* node answers 500. mode "down503" answers 503 to everything. Every
request is counted in `requests` (path list).
"""
import http.server, json, socketserver, ssl, threading, time, urllib.parse


class FakePuppetDB:
    def __init__(self, nodes, inactive=(), tls=None, mode=None, slow=3.0, misbehave=True):
        self.nodes = dict(nodes)      # name -> facts (in order); a copy: tests change it
        self.inactive = set(inactive)
        self.mode = mode
        self.misbehaves = misbehave  # False: the names that choose a misbehaviour are plain nodes
        self.slow = slow
        self.pql_answer = []
        self.requests = []
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, status, body, ctype="application/json;charset=utf-8", reason=None):
                data = body if isinstance(body, bytes) else body.encode()
                self.send_response(status, reason)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def misbehave(self, name, rows):
                if not fake.misbehaves:
                    return False
                if name.startswith("err500-"):
                    self.send(500, "Internal Server Error", "text/plain")
                elif name.startswith("html404-"):
                    self.send(404, "<html><body>Not Found</body></html>", "text/html")
                elif name.startswith("slow-"):
                    time.sleep(fake.slow)
                    self.send(200, json.dumps(rows))
                elif name.startswith("badjson-"):
                    self.send(200, '[{"certname": "x", "name": "a", "value": 1}, {"name": "b", "value": }]')
                elif name.startswith("trunc-"):
                    data = json.dumps(rows).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data) + 1000))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                elif name.startswith("deep-"):
                    v = "x"
                    for _ in range(99):
                        v = [v]
                    self.send(200, json.dumps([{"certname": name, "name": "deep", "value": v}]))
                elif name.startswith("forbidden-"):
                    self.send(403, "Forbidden:\nyou shall not pass\n", "text/plain")
                elif name.startswith("notarray-"):
                    self.send(200, '{"error": "not an array"}')
                elif name.startswith("dribble-"):
                    data = json.dumps(rows, indent=1).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    i, step = 0, 1
                    while i < len(data):
                        part = data[i:i + step]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                        self.wfile.flush()
                        i += step
                        step = step % 7 + 1
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    return False
                return True

            def do_GET(self):
                with fake.lock:
                    fake.requests.append(self.path)
                if fake.mode == "down503":
                    return self.send(503, "Service Unavailable", "text/plain")
                path = urllib.parse.urlsplit(self.path).path
                prefix, suffix = "/pdb/query/v4/nodes/", "/facts"
                if not (path.startswith(prefix) and path.endswith(suffix)):
                    return self.send(404, "<html>no such route</html>", "text/html")
                name = urllib.parse.unquote_plus(path[len(prefix):-len(suffix)])
                facts = fake.nodes.get(name, {"a": 1})
                rows = [{"certname": name, "environment": "production", "name": k, "value": v} for k, v in facts.items()]
                if self.misbehave(name, rows):
                    return
                if name not in fake.nodes:
                    return self.send(404, json.dumps({"error": "No information is known about node " + name}, indent=2))
                if name in fake.inactive:
                    return self.send(200, "[]")
                self.send(200, json.dumps(rows))

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with fake.lock:
                    fake.requests.append(self.path + " " + body.decode("utf-8", "replace"))
                if fake.mode == "down503":
                    return self.send(503, "Service Unavailable", "text/plain")
                if urllib.parse.urlsplit(self.path).path != "/pdb/query/v4":
                    return self.send(404, "<html>no such route</html>", "text/html")
                try:
                    q = json.loads(body)["query"]
                except Exception:
                    return self.send(400, "bad request body", "text/plain")
                if isinstance(q, str):
                    if "syntax" in q:
                        return self.send(400, "PQL parse error at line 1, column 5:\n\nnodes syntax\n    ^\n\nExpected one of:\n\n[\n{\n",
                                         "text/plain")
                    return self.send(200, json.dumps(fake.pql_answer))
                text = json.dumps(q)
                if q[:2] == ["from", "factsets"]:
                    anystate = '"node_state", "any"' in text
                    names = [n for n in fake.nodes if anystate or n not in fake.inactive]
                    return self.send(200, json.dumps([{"certname": n} for n in names]))
                if q[:2] == ["from", "inventory"]:
                    wanted = q[2][2][1][2][1]
                    if any(n.startswith("pagefail") for n in wanted):
                        return self.send(500, "Internal Server Error", "text/plain")
                    rows = [{"certname": n, "facts": fake.nodes[n]} for n in wanted if n in fake.nodes]
                    for kind in ("slow-", "trunc-", "dribble-"):
                        for n in wanted:
                            if n.startswith(kind):
                                return self.misbehave(n, rows)
                    return self.send(200, json.dumps(rows))
                self.send(400, "unknown query " + text, "text/plain")

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request, client_address):
                pass  # (clients that gave up on a slow answer)

        self.httpd = Server(("127.0.0.1", 0), Handler)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls["cert"], tls["key"])
            if tls.get("ca"):
                ctx.verify_mode = ssl.CERT_REQUIRED
                ctx.load_verify_locations(tls["ca"])
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, scheme="http", host="127.0.0.1"):
        return "%s://%s:%d" % (scheme, host, self.port)

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
