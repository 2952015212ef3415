#!/usr/bin/env python3
"""Saves through `hiera serve`'s /v1/edit racing the server's own rebuilds: state_rebuild_now (a
save into the environment's data, and into the global layer, $confdir/hiera.yaml's data, which
rebuilds every environment built) runs on request threads while the watcher sees the test's own
writes and the builder thread rebuilds and publishes generations, and other clients look up,
ask /healthz and /metrics all along.

It checks that every request is answered (no 5xx), that each save lands (200, or 409 and again),
that once the writes stop the last save and the last write are what every environment serves, and
that the server stops cleanly with nothing on its standard error from a sanitizer. make check runs
it on the plain build; make check-tsan on the ThreadSanitizer build (build-tsan/hiera), where any
report of a race fails it.

usage: tests/edit/race.py --hiera build/hiera [--seconds 4]   Prints "edit race: N passed, N failed".
RACE_KEEP_LOG=FILE copies the server's log there.
"""
import argparse, os, re, shutil, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "serve"))
from check import Server, make_tree, write  # noqa: E402  (tests/serve/check.py: the tree, the server)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

T = Tally("edit race")
check = T.check
TOKEN = "race-token-0123456789abcdef"
AUTH = {"Authorization": "Bearer " + TOKEN}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    ap.add_argument("--seconds", type=float, default=4.0)
    a = ap.parse_args()
    hiera = os.path.abspath(a.hiera)
    tmp = tempfile.mkdtemp(prefix="hiera-edit-race-")
    s = None
    try:
        root = os.path.join(tmp, "tree")
        facts = make_tree(hiera, root)
        write(root, "hiera.yaml", "version: 5\nhierarchy:\n  - {name: Global, datadir: global, path: common.yaml}\n")
        write(root, "global/common.yaml", "race::global: 0\n")
        write(root, "environments/production/data/role/db.yaml", "race::written: 0\n")
        write(root, "environments/staging/data/common.yaml", "profile::port: 9090\nrace::written: 0\n")
        with open(os.path.join(root, "environments/production/data/common.yaml"), "a") as f:
            f.write("race::env: 0\n")
        token_file = os.path.join(tmp, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        os.environ["SERVE_LOG_DIR"] = tmp  # (its log outside the watched tree)
        s = Server(hiera, root, facts, ["--token-file", token_file, "--allow-edits"])
        stop = threading.Event()
        problems = []
        landed = {}

        def record(what):
            if len(problems) < 20:
                problems.append(what)

        def saver(name, level, key):
            try:
                save_loop(name, level, key)
            except OSError as e:
                record(f"{name}: {e}")

        def save_loop(name, level, key):
            i = 0
            while not stop.is_set():
                i += 1
                for _ in range(100):
                    st, cur = s.req("GET", f"/v1/edit?node=node1.example.com&key={key}", headers=AUTH)
                    lv = [l for l in cur.get("levels", []) if l["level"] == level] if st == 200 else []
                    if not lv:
                        record(f"{name}: the levels: {st} {cur}")
                        return
                    st, body = s.req("POST", "/v1/edit", {"node": "node1.example.com", "level": level, "key": key,
                                                          "value": i, "base": lv[0]["digest"]}, headers=AUTH)
                    if st == 200:
                        landed[name] = i
                        break
                    if st != 409:  # (409: the watcher's rebuild or another save came first: again)
                        record(f"{name}: save {i}: {st} {body}")
                        return

        def writer():
            i = 0
            branch = None
            while not stop.is_set():
                i += 1
                write(root, "environments/staging/data/common.yaml", f"profile::port: 9090\nrace::written: {i}\n")
                write(root, "environments/production/data/role/db.yaml", f"race::written: {i}\n")
                landed["written"] = i
                if i % 4 == 1:
                    # a new environment, the one before removed: the builder lists them again and
                    # publishes while saves publish theirs (neither may undo the other's)
                    write(root, f"environments/br{i}/data/common.yaml", f"race::branch: {i}\n")
                    if branch:
                        shutil.rmtree(os.path.join(root, "environments", branch))
                    branch = landed["branch"] = f"br{i}"
                # bursts, and quiet beyond the server's settling time between them: the builder
                # rebuilds what was written while the saves go on
                time.sleep(0.05 if i % 4 else 0.3)

        def reader(k):
            paths = ["/v1/lookup?node=node1.example.com&key=race::global",
                     "/v1/lookup?node=node2.example.com&key=race::written",
                     "/v1/lookup?node=node1.example.com&key=race::global&environment=staging",
                     "/v1/lookup?node=node1.example.com&key=race::env",
                     "/healthz", "/metrics"]
            n = 0
            while not stop.is_set():
                p = paths[(n + k) % len(paths)]
                n += 1
                try:
                    st, body = s.req("GET", p, headers=AUTH)
                except OSError as e:
                    record(f"{p}: {e}")
                    return
                if st >= 500 or (p.startswith("/v1/lookup") and st not in (200, 404)):
                    record(f"{p}: {st} {body}")

        def lister():
            # the newest environment listed never goes back to an older one: a generation made from
            # an older one must not be published after the builder's list of the environments
            newest = 0
            while not stop.is_set():
                try:
                    st, body = s.req("GET", "/v1/environments", headers=AUTH)
                except OSError as e:
                    record(f"/v1/environments: {e}")
                    return
                nums = [int(e[2:]) for e in body.get("environments", []) if e.startswith("br")] if st == 200 else []
                if st != 200:
                    record(f"/v1/environments: {st} {body}")
                elif nums and max(nums) < newest:
                    record(f"the environments listed went back: br{max(nums)} after br{newest}")
                elif nums:
                    newest = max(nums)

        # every environment built before the race (the global save rebuilds each one built)
        for e in ("production", "staging"):
            st, body = s.req("GET", f"/v1/lookup?node=node1.example.com&key=race::global&environment={e}", headers=AUTH)
            check(st == 200 and body.get("value") == 0, f"{e} before the race: {st} {body}")
        threads = [threading.Thread(target=saver, args=("global", "Global", "race::global")),
                   threading.Thread(target=saver, args=("env", "Common", "race::env")),
                   threading.Thread(target=writer), threading.Thread(target=lister)] + [threading.Thread(target=reader, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        time.sleep(a.seconds)
        stop.set()
        for t in threads:
            t.join()
        check(not problems, f"requests during the race: {problems}")
        check(landed.get("global", 0) > 0 and landed.get("env", 0) > 0, f"saves landed: {landed}")
        # the last of everything served, once the writes settle
        want = [("production", "race::global", landed.get("global")), ("staging", "race::global", landed.get("global")),
                ("production", "race::env", landed.get("env")), ("staging", "race::written", landed.get("written"))]
        got = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and s.p.poll() is None:
            for e, k, v in want:
                st, body = s.req("GET", f"/v1/lookup?node=node2.example.com&key={k}&environment={e}", headers=AUTH)
                got[(e, k)] = body.get("value") if isinstance(body, dict) else body
            if all(got[(e, k)] == v for e, k, v in want):
                break
            time.sleep(0.2)
        check(all(got[(e, k)] == v for e, k, v in want), f"the last saves and writes served: {got}, want {want}")
        envs = want_envs = sorted(["production", "staging", landed.get("branch", "")])
        while time.monotonic() < deadline and s.p.poll() is None:
            envs = s.req("GET", "/v1/environments", headers=AUTH)[1].get("environments")
            if envs == want_envs:
                break
            time.sleep(0.2)
        check(envs == want_envs, f"the environments listed at the end: {envs}, want {want_envs}")
        st, health = s.req("GET", "/healthz", headers=AUTH) if s.p.poll() is None else (None, {})
        check(st == 200 and health.get("status") in ("ok", "pending"), f"healthz after the race: {st} {health}")
        rc = s.stop()
        out = s.output()
        if os.environ.get("RACE_KEEP_LOG"):
            shutil.copy(s.log.name, os.environ["RACE_KEEP_LOG"])
        by_edit = len(re.findall(r"environment \w+ rebuilt \(edit\)", out))
        by_builder = len(re.findall(r"environment \w+ rebuilt in|reloaded \(environments changed\)", out))
        check(by_edit >= 2 and by_builder >= 2, f"rebuilds for saves ({by_edit}) and by the builder ({by_builder}) both ran")
        print(f"edit race: {landed.get('global', 0)} global and {landed.get('env', 0)} environment saves, "
              f"{landed.get('written', 0)} writes; {by_edit} rebuilds for saves, {by_builder} rebuilds and "
              "environment lists by the builder", flush=True)
        check(rc == 0, f"the server's exit status: {rc}")
        bad = [l for l in out.splitlines() if "Sanitizer" in l or "runtime error" in l]
        check(not bad, "sanitizer reports:\n" + "\n".join(out.splitlines()[:200]) if bad else "")
    finally:
        if s:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(T.summary())


if __name__ == "__main__":
    main()
