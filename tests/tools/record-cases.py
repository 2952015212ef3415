#!/usr/bin/env python3
"""Builds the project's recorded cases from their sources and asks the reference for the answers.

A source is tests/case-src/NAME.yaml:
    description: what the case is about
    engine: puppet | puppet-cli | hiera3   (default puppet)
    node: web01.example.com          (puppet)
    environment: production          (puppet)
    args: [--confdir, '{case}/etc']  (puppet, puppet-cli: the command line's first arguments; for
                                      puppet they replace the default --confdir CASE --codedir CASE
                                      --environmentpath CASE/environments --hiera_config
                                      CASE/hiera.yaml --environment ENV --node NODE --facts
                                      CASE/facts.yaml; {case} is the case folder)
    scope: {var: value}              (hiera3: default VAR=VALUE arguments)
    facts: {...}                     (puppet; written to facts.yaml)
    files: {relative/path: text}     (the code directory: hiera.yaml, environments/..., data);
                                      {mode: '755', text: ...} for an executable file
    queries: [{key, merge, default, type, explain, render, resolution, scope}, ...]
             puppet-cli: [{args: [...], env: {VAR: value}, stderr_has: [text...],
                           hiera: {status, stdout, stderr_has, why}}, ...]

A puppet-cli case runs the real `puppet lookup <case args> <query args>` once per query (in the case
folder, with the query's environment variables) and records its exit status, standard output and
standard error (colours dropped): the command-line behaviours a lookup API cannot show (settings,
puppet.conf and environment.conf errors, option parsing, config_version). Each stderr_has text must
be in Puppet's standard error (the recording fails otherwise) and, replayed, in hiera's. A query's
`hiera` entry records where hiera differs from Puppet by design (a flag it refuses), with why.

For each source this writes tests/cases/NAME/ (the files, facts.yaml, case.json) and
expected.json with the answers of Puppet 7 (tests/tools/puppet-record.rb, in one process per
case; puppet-cli: `puppet lookup`) or of the Hiera 3 `hiera` command. Needs `apt-get install puppet
hiera python3-yaml`.

usage: record-cases.py [NAME...]     (default: every source)
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
        if isinstance(text, dict):  # {mode: 0755, text: ...}
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
        if "args" not in spec:
            os.makedirs(os.path.join(case, "environments", spec.get("environment", "production")), exist_ok=True)

def case_args(case, args):
    for a in args:
        if not isinstance(a, str):
            sys.exit(f"{case}: argument {a!r} is not a string (quote it in the YAML)")
    return [a.replace("{case}", case) for a in args]

def record_puppet(case, spec):
    qfile = os.path.join("/tmp", ".queries-%d.json" % os.getpid())
    with open(qfile, "w") as f:
        json.dump(spec["queries"], f)
    if "args" in spec:
        flags = case_args(case, spec["args"])
    else:
        flags = ["--confdir", case, "--codedir", case, "--environmentpath", os.path.join(case, "environments"),
                 "--hiera_config", os.path.join(case, "hiera.yaml"),
                 "--environment", spec.get("environment", "production"),
                 "--node", spec.get("node", "node1.example.com"),
                 "--facts", os.path.join(case, spec.get("facts_file", "facts.yaml"))]
    cmd = ["ruby", os.path.join(HERE, "puppet-record.rb"), qfile] + flags
    p = subprocess.run(cmd, cwd=case, capture_output=True, text=True)
    os.unlink(qfile)
    lines = [l for l in p.stdout.splitlines() if l.startswith("[")]
    if p.returncode != 0 or not lines:
        sys.exit(f"{case}: the reference failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    answers = json.loads(lines[-1])
    for a in answers:
        if "output" in a:
            a["output"] = a["output"].replace(case, "<CASE>")
        if "message" in a:
            a["message"] = a["message"].replace(case, "<CASE>")
    return answers

def strip_colours(text):
    return re.sub(r"\x1b\[[0-9;]*m", "", text)

def record_puppet_cli(case, spec):
    answers = []
    for q in spec["queries"]:
        if not any(a in ("--confdir", "--config") for a in spec.get("args", []) + q.get("args", [])):
            sys.exit(f"{case}: {q.get('args')}: give --confdir (or --config): the machine's puppet.conf must not decide")
        cmd = ["puppet", "lookup"] + case_args(case, spec.get("args", [])) + case_args(case, q.get("args", []))
        env = dict(os.environ)
        env.update({k: v.replace("{case}", case) for k, v in (q.get("env") or {}).items()})
        p = subprocess.run(cmd, cwd=case, capture_output=True, text=True, env=env)
        err = strip_colours(p.stderr).replace(case, "<CASE>")
        for frag in q.get("stderr_has", []):
            if frag not in err:
                sys.exit(f"{case}: {q['args']}: Puppet's stderr lacks {frag!r}:\n{err[-2000:]}")
        answers.append({"status": p.returncode, "stdout": p.stdout.replace(case, "<CASE>"), "stderr": err})
    return answers

def record_hiera3(case, spec):
    answers = []
    for q in spec["queries"]:
        cmd = ["hiera", "-c", os.path.join(case, "hiera.yaml"), "-f", q.get("format", "json")]
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

def main(names):
    sources = sorted(f[:-5] for f in os.listdir(SRC) if f.endswith(".yaml"))
    for name in names or sources:
        with open(os.path.join(SRC, name + ".yaml")) as f:
            spec = yaml.safe_load(f)
        case = os.path.join(OUT, name)
        write_tree(case, spec)
        meta = {k: v for k, v in spec.items() if k not in ("files", "facts")}
        with open(os.path.join(case, "case.json"), "w") as f:
            json.dump(meta, f, indent=1, ensure_ascii=False)
            f.write("\n")
        engine = spec.get("engine", "puppet")
        answers = (record_hiera3(case, spec) if engine == "hiera3" else
                   record_puppet_cli(case, spec) if engine == "puppet-cli" else record_puppet(case, spec))
        with open(os.path.join(case, "expected.json"), "w") as f:
            json.dump(answers, f, indent=1, ensure_ascii=False)
            f.write("\n")
        print(f"{name}: {len(answers)} answers")

if __name__ == "__main__":
    main(sys.argv[1:])
