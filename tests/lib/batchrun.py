"""hiera batch run by a test: its JSON answer, or {"<failed>": the end of its stderr} when it
printed none (tests/batch/answer-memo.py and memo-compare.py)."""
import json
import subprocess


def batch_json(hiera, args, cwd, env=None):
    p = subprocess.run([hiera, "batch"] + args, capture_output=True, text=True, cwd=cwd, env=env)
    try:
        return json.loads(p.stdout)
    except ValueError:
        return {"<failed>": p.stderr[-400:]}
