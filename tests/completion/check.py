#!/usr/bin/env python3
"""Checks the bash completion (completion/hiera) in a plain bash: each case sets COMP_LINE and
COMP_POINT as bash does, calls _hiera, and compares COMPREPLY.

  - subcommands: every one the dispatcher knows (tests/docs/check.py finds them), and each one's
    options from its --help (eyaml: its commands and theirs), Hiera 3's options without one
  - values: environments from --codedir or --environmentpath (also --environment=VALUE), nodes
    from --facts-dir, keys for the node and facts the line gives (a "::" word completes after
    the last ":", as bash splits it), --merge, --render-as, --format per subcommand, --rule NAME=
    and its severities, files and folders

usage: tests/completion/check.py --hiera build/hiera     Prints "completion: N passed, N failed".
"""
import argparse, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "docs"))
from check import subcommands_of_dispatcher  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

T = Tally("completion", fail_prefix="FAIL completion: ")
check = T.check


def complete(lines, cwd):
    """COMPREPLY for each line (the cursor at its end), in one bash."""
    script = ["source %s" % os.path.join(ROOT, "completion", "hiera"),
              'comp() { COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _hiera; '
              'printf "%s\\037" "${COMPREPLY[@]}"; printf "\\036"; }']
    for l in lines:
        script.append("comp %s" % shlex_quote(l))
    env = {**os.environ, "HIERA_CACHE_DIR": "off", "HIERA_RESULT_CACHE": "off", "COMP_WORDBREAKS": "\"'><=;|&(:"}
    p = subprocess.run(["bash", "--norc", "--noprofile", "-c", "\n".join(script)], capture_output=True, text=True,
                       cwd=cwd, env=env, timeout=120)
    check(p.stderr == "", "bash said: " + p.stderr[:500])
    out = p.stdout.split("\036")[:-1]
    return [[w for w in o.split("\037") if w] for o in out]


def shlex_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    scratch = tempfile.mkdtemp(prefix="hiera-completion-")
    try:
        repo = os.path.join(scratch, "repo")
        shutil.copytree(os.path.join(ROOT, "examples", "control-repo"), repo)
        os.makedirs(os.path.join(repo, "environments", "staging"))
        facts = os.path.join(repo, "facts")
        shutil.copy(os.path.join(facts, "web01.example.com.yaml"), os.path.join(facts, "db01.example.com.json"))
        H = hiera
        envs = f"--codedir {repo} --environmentpath {repo}/environments"
        node = f"--node web01.example.com --facts {facts}/web01.example.com.yaml"
        subs = sorted(subcommands_of_dispatcher())
        cases = [
            (f"{H} ", lambda r: set(r) == set(subs), f"the subcommands {subs}"),
            (f"{H} l", lambda r: set(r) == {"lookup", "lsp"}, "lookup, lsp"),
            (f"{H} ls", lambda r: r == ["lsp"], "lsp"),
            (f"{H} lsp --log {facts}/web", lambda r: r == [f"{facts}/web01.example.com.yaml"], "lsp's log file"),
            (f"{H} lsp --jobs ", lambda r: r == [], "no value for --jobs"),
            (f"{H} lookup --me", lambda r: set(r) == {"--merge", "--merge-hash-arrays"}, "--merge, --merge-hash-arrays"),
            (f"{H} lookup --merge ", lambda r: r == ["first", "unique", "hash", "deep"], "the merges"),
            (f"{H} lookup --merge=d", lambda r: r == ["deep"], "deep"),
            (f"{H} keys --render-as ", lambda r: r == ["s", "json", "yaml"], "the forms"),
            (f"{H} serve --tls-", lambda r: set(r) == {"--tls-ca", "--tls-cert", "--tls-key"}, "the TLS options"),
            (f"{H} lookup --codedir {repo} --environment ", lambda r: set(r) == {"production", "staging"},
             "the environments of --codedir"),
            (f"{H} lookup --environmentpath {repo}/environments -E p", lambda r: r == ["production"],
             "the environments of --environmentpath"),
            (f"{H} batch --codedir {repo} --environment=st", lambda r: r == ["staging"], "--environment=VALUE"),
            (f"{H} batch --facts-dir {facts} --node ", lambda r: set(r) == {"web01.example.com", "db01.example.com"},
             "the nodes of --facts-dir"),
            (f"{H} diff a b --facts-dir {facts} --node d", lambda r: r == ["db01.example.com"], "a node of --facts-dir"),
            (f"{H} lookup {envs} {node} profile::base::", lambda r: set(r) == {"motd", "users", "dns_servers", "ntp_servers"},
             "the node's keys after profile::base:: (bash completes after the last ':')"),
            (f"{H} lookup {envs} {node} ", lambda r: "profile::base::motd" in r, "the node's keys"),
            (f"{H} lookup {envs} pro", lambda r: r == [], "no keys without a node or facts (no facter run)"),
            (f"{H} eyaml ", lambda r: r == ["createkeys", "encrypt", "decrypt", "version"], "eyaml's commands"),
            (f"{H} eyaml encrypt --pkcs7-pu", lambda r: set(r) == {"--pkcs7-public-key", "--pkcs7-public-key-env-var"},
             "eyaml encrypt's options"),
            (f"{H} eyaml encrypt -o ", lambda r: r == ["examples", "block", "string"], "eyaml's output forms"),
            (f"{H} check --rule yaml-b", lambda r: r == ["yaml-boolean="], "a rule's name"),
            (f"{H} check --rule yaml-boolean=", lambda r: r == ["off", "warning", "error"], "a rule's severities"),
            (f"{H} check --format ", lambda r: r == ["text", "json", "junit", "sarif", "github"], "check's formats"),
            (f"{H} diff --format ", lambda r: r == ["text", "json", "markdown"], "diff's formats"),
            (f"{H} -f ", lambda r: r == ["ruby", "yaml", "json"], "Hiera 3's formats"),
            (f"{H} --", lambda r: {"--config", "--array", "--hash", "--format", "--help"} <= set(r) and "--node" not in r,
             "Hiera 3's options"),
            (f"{H} lookup --facts {facts}/web", lambda r: r == [f"{facts}/web01.example.com.yaml"], "a file"),
            (f"{H} batch --facts-dir {repo}/fa", lambda r: r == [facts], "a folder"),
        ]
        for s in subs:
            cases.append((f"{H} {s} -" if s != "eyaml" else f"{H} eyaml decrypt -",
                          lambda r: len(r) >= 1 and all(w.startswith("-") for w in r), f"{s}'s options"))
        got = complete([c[0] for c in cases], scratch)
        check(len(got) == len(cases), f"{len(got)} answers to {len(cases)} lines")
        for (line, ok, what), reply in zip(cases, got):
            check(ok(reply), f"`{line.replace(H, 'hiera').replace(scratch, '$SCRATCH')}` completes {reply}, "
                             f"expected {what}")
        # every option of each subcommand's help is offered
        for s in subs:
            if s == "eyaml":
                continue
            help_text = subprocess.run([hiera, s, "--help"], capture_output=True, text=True).stdout
            from check import options_in
            want = {o for o in options_in(help_text) if o.startswith("--")}
            reply = complete([f"{H} {s} --"], scratch)[0]
            missing = sorted(want - set(reply))
            check(not missing, f"`hiera {s} --` does not offer {missing}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
