#!/usr/bin/env python3
"""Builds the project's recorded cases from their sources and asks the reference for the answers.

A source is tests/case-src/NAME.yaml:
    description: what the case is about
    engine: puppet | puppet-cli | hiera3   (default puppet)
    node: web01.example.com          (puppet)
    environment: production          (puppet)
    scope: {var: value}              (hiera3: default VAR=VALUE arguments)
    facts: {...}                     (puppet; written to facts.yaml)
    files: {relative/path: text}     (the code directory: hiera.yaml, environments/..., data)
    queries: [{key, merge, default, type, explain, render, resolution, scope, environment, args}, ...]
             (puppet: a query's own environment overrides the case's)
    args: [--flag, value, ...]       (puppet: the lookup flags instead of the default --codedir
                                      --environmentpath --hiera_config --environment --node --facts;
                                      "{case}" stands for the case folder)
    puppet_args / hiera_args: [...]  (puppet: more flags for Puppet only / for hiera only, e.g.
                                      a flag of hiera's that gives what Puppet takes elsewhere)
    needs: [facter]                  (commands the replay needs: the case is skipped, saying so,
                                      where one is missing)
A query may have args, puppet_args and hiera_args of its own (after the case's); the queries are
recorded in one Puppet process per distinct set of flags. Without args, a case's flags start with
--confdir CASE (no puppet.conf there), so that the machine's puppet.conf never decides.

files: a file's text, or {mode: '755', text: ...} for its permissions (an executable script).

A puppet-cli case (engine: puppet-cli) runs the real `puppet lookup <case args> <query args>` once
per query, in the case folder, with the query's `env` variables, and records its exit status,
standard output and standard error (colours dropped): the command-line behaviours a lookup API
cannot show (settings, puppet.conf and environment.conf errors, option parsing, config_version).
Its queries are {args: [...], env: {VAR: value}, stderr_has: [text...], hiera: {status, stdout,
stderr_has, why}}; each stderr_has text must be in Puppet's standard error (the recording fails
otherwise) and, replayed, in hiera's; a `hiera` entry records where hiera differs from Puppet by
design (a flag it refuses), with why; every query must give --confdir (or --config). Whatever Puppet creates in the case
folder while recording (a --vardir inside it gets its state folders) is removed afterwards.

For each source this writes tests/cases/NAME/ (the files, facts.yaml, case.json) and
expected.json with the answers of Puppet 7 (tests/tools/puppet-record.rb, in one process per
case) or of the Hiera 3 `hiera` command. Needs `apt-get install puppet hiera python3-yaml`.

With --puppet-version 8 the same questions are asked of Debian 13's Puppet 8.10 and Hiera 3.12
(the root ../shared/tools/puppet8 makes, through tests/tools/in-puppet8-root; install Hiera 3.12
there with `chroot /var/tmp/puppet8-root apt-get install -y hiera`), for cases already written
(the tree is not rewritten): the answers that differ from expected.json go to
expected-puppet8.json, {"<query index>": answer}, which run-cases.py --puppet-version 8 takes
over expected.json's; the file is removed when none differs. A puppet-cli query's stderr_has
texts are then only reported when Puppet 8's stderr lacks them (a "puppet8" entry of the query
gives Puppet 8's own).

usage: record-cases.py [--puppet-version 7|8] [NAME...]     (default: 7, every source)
"""
import json, os, re, shutil, subprocess, sys, yaml

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
SRC = os.path.join(TESTS, "case-src")
OUT = os.path.join(TESTS, "cases")

def write_tree(case, spec):
    if os.path.isdir(case):
        shutil.rmtree(case)
    os.makedirs(case)
    for rel, text in (spec.get("files") or {}).items():
        path = os.path.join(case, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if text is None:          # a directory (with a .gitkeep: git keeps no empty folder)
            os.makedirs(path, exist_ok=True)
            open(os.path.join(path, ".gitkeep"), "w").close()
            continue
        mode = None
        if isinstance(text, dict):  # {mode: '755', text: ...}
            mode, text = text.get("mode"), text.get("text", "")
        with open(path, "wb") as f:
            f.write(text.encode("utf-8") if isinstance(text, str) else bytes(text))
        if mode is not None:  # an octal text ("755") or a YAML integer
            os.chmod(path, int(str(mode).replace("0o", ""), 8) if isinstance(mode, str) else mode)
    if spec.get("engine", "puppet") in ("puppet", "puppet-cli"):
        facts = spec.get("facts")
        if facts is not None and not os.path.exists(os.path.join(case, "facts.yaml")):
            with open(os.path.join(case, "facts.yaml"), "w") as f:
                yaml.safe_dump(facts, f, sort_keys=False, allow_unicode=True)
        envs = set() if spec.get("engine") == "puppet-cli" else \
            {spec.get("environment", "production")} | {q["environment"] for q in spec["queries"] if "environment" in q}
        for env in envs:
            d = os.path.join(case, "environments", env)
            os.makedirs(d, exist_ok=True)
            if not os.listdir(d):  # git keeps no empty folder, and the environment must exist
                open(os.path.join(d, ".gitkeep"), "w").close()

def case_args(case, flags):
    for a in flags or []:
        if isinstance(a, bool):
            sys.exit(f"{case}: argument {a!r} is a YAML boolean: quote it")
    return [str(a).replace("{case}", case) for a in (flags or [])]

def puppet_flags(case, spec, q):
    """the flags Puppet gets for query q (run-cases.py gives hiera the same, with hiera_args for
    puppet_args)"""
    if "args" in spec:
        flags = case_args(case, spec["args"])
    else:
        flags = ["--confdir", case, "--codedir", case, "--environmentpath", os.path.join(case, "environments"),
                 "--hiera_config", os.path.join(case, "hiera.yaml"),
                 "--environment", q.get("environment", spec.get("environment", "production")),
                 "--node", spec.get("node", "node1.example.com"),
                 "--facts", os.path.join(case, spec.get("facts_file", "facts.yaml"))]
    return flags + case_args(case, spec.get("puppet_args")) + case_args(case, q.get("args")) + \
        case_args(case, q.get("puppet_args"))

PREFIX = []  # the command that runs the reference's commands: [] for Puppet 7, in-puppet8-root for 8


def record_puppet(case, spec):
    groups = {}  # flags -> indexes of the queries, in order
    for i, q in enumerate(spec["queries"]):
        groups.setdefault(tuple(puppet_flags(case, spec, q)), []).append(i)
    answers = [None] * len(spec["queries"])
    for flags, idx in groups.items():
        qfile = os.path.join(case, ".queries.json")
        with open(qfile, "w") as f:
            json.dump([spec["queries"][i] for i in idx], f)
        cmd = PREFIX + ["ruby", os.path.join(HERE, "puppet-record.rb"), qfile] + list(flags)
        p = subprocess.run(cmd, cwd=case, capture_output=True, text=True)
        os.unlink(qfile)
        lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
        if p.returncode != 0 or not lines:
            sys.exit(f"{case}: the reference failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        for i, a in zip(idx, json.loads(lines[-1])):
            answers[i] = a
    for a in answers:
        if "output" in a:
            a["output"] = a["output"].replace(case, "<CASE>")
        if "message" in a:
            # Ruby 3.3 (Puppet 8) names an object by its address (#<Puppet::Parser::Scope:0x00007f...>),
            # another at each run: kept as 0x... so that a recording is the same each time
            a["message"] = re.sub(r"(#<[A-Za-z0-9_:]+:)0x[0-9a-f]+>", r"\g<1>0x...>", a["message"].replace(case, "<CASE>"))
    return answers

def strip_colours(text):
    return re.sub(r"\x1b\[[0-9;]*m", "", text)

def record_puppet_cli(case, spec):
    answers = []
    for q in spec["queries"]:
        if not any(a in ("--confdir", "--config") for a in spec.get("args", []) + q.get("args", [])):
            sys.exit(f"{case}: {q.get('args')}: give --confdir (or --config): the machine's puppet.conf must not decide")
        cmd = PREFIX + ["puppet", "lookup"] + case_args(case, spec.get("args", [])) + case_args(case, q.get("args", []))
        env = dict(os.environ)
        env.update({k: v.replace("{case}", case) for k, v in (q.get("env") or {}).items()})
        p = subprocess.run(cmd, cwd=case, capture_output=True, text=True, env=env)
        err = strip_colours(p.stderr).replace(case, "<CASE>")
        frags = (q.get("puppet8") or {}).get("stderr_has", q.get("stderr_has", [])) if PREFIX else q.get("stderr_has", [])
        for frag in frags:
            if frag not in err:
                if PREFIX:
                    print(f"{case}: {q['args']}: Puppet 8's stderr lacks {frag!r} (give the query a puppet8: "
                          f"{{stderr_has: [...]}}):\n{err[-1000:]}")
                else:
                    sys.exit(f"{case}: {q['args']}: Puppet's stderr lacks {frag!r}:\n{err[-2000:]}")
        answers.append({"status": p.returncode, "stdout": p.stdout.replace(case, "<CASE>"), "stderr": err})
    return answers

def record_hiera3(case, spec):
    answers = []
    for q in spec["queries"]:
        cmd = PREFIX + ["hiera", "-c", os.path.join(case, "hiera.yaml"), "-f", q.get("format", "json")]
        cmd += {"array": ["-a"], "hash": ["-h"]}.get(q.get("resolution", "priority"), [])
        cmd += q["key"] if isinstance(q["key"], list) else [q["key"]]
        if "default" in q:
            cmd.append(str(q["default"]))
        for k, v in (q.get("scope") or spec.get("scope") or {}).items():
            cmd.append(f"{k}={v}")
        p = subprocess.run(cmd, cwd=case, capture_output=True, text=True)
        if p.returncode != 0:
            answers.append({"error": True, "message": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""})
        elif q.get("format", "json") == "json":
            answers.append({"value": json.loads(p.stdout)})
        else:
            answers.append({"output": p.stdout, "status": 0})
    return answers

def tree_paths(case):
    out = set()
    for d, dirs, files in os.walk(case):
        out.update(os.path.join(d, x) for x in dirs + files)
    return out

def remove_new_paths(case, before):
    """drops what the recording created in the case folder (deepest first)"""
    for path in sorted(tree_paths(case) - before, key=len, reverse=True):
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)

def record_answers(case, spec):
    engine = spec.get("engine", "puppet")
    return (record_hiera3(case, spec) if engine == "hiera3" else
            record_puppet_cli(case, spec) if engine == "puppet-cli" else record_puppet(case, spec))


def record_version8(name):
    """Puppet 8's (and Hiera 3.12's) answers where they differ from expected.json"""
    case = os.path.join(OUT, name)
    with open(os.path.join(case, "case.json")) as f:
        spec = json.load(f)
    with open(os.path.join(case, "expected.json")) as f:
        old = json.load(f)
    before = tree_paths(case)
    answers = record_answers(case, spec)
    remove_new_paths(case, before)
    differ = {str(i): a for i, (o, a) in enumerate(zip(old, answers)) if o != a}
    path = os.path.join(case, "expected-puppet8.json")
    if differ:
        with open(path, "w") as f:
            json.dump(differ, f, indent=1, ensure_ascii=False)
            f.write("\n")
    elif os.path.exists(path):
        os.unlink(path)
    print(f"{name}: {len(answers)} answers, {len(differ)} differ under Puppet 8")


def main(argv):
    global PREFIX
    version = 7
    if argv[:1] == ["--puppet-version"]:
        version = int(argv[1])
        argv = argv[2:]
    if version not in (7, 8):
        sys.exit("--puppet-version: 7 or 8")
    names = argv
    sources = sorted(f[:-5] for f in os.listdir(SRC) if f.endswith(".yaml"))
    if version == 8:
        PREFIX = [os.path.join(HERE, "in-puppet8-root")]
        for name in names or sources:
            record_version8(name)
        return
    for name in names or sources:
        with open(os.path.join(SRC, name + ".yaml")) as f:
            spec = yaml.safe_load(f)
        case = os.path.join(OUT, name)
        write_tree(case, spec)
        before = tree_paths(case)
        meta = {k: v for k, v in spec.items() if k not in ("files", "facts")}
        with open(os.path.join(case, "case.json"), "w") as f:
            json.dump(meta, f, indent=1, ensure_ascii=False)
            f.write("\n")
        answers = record_answers(case, spec)
        remove_new_paths(case, before | {os.path.join(case, "case.json")})
        with open(os.path.join(case, "expected.json"), "w") as f:
            json.dump(answers, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"{name}: {len(answers)} answers")

if __name__ == "__main__":
    main(sys.argv[1:])
