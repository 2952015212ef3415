"""What a silent lookup error was: `hiera lookup` ends a lookup error (Puppet's
DataBinding::LookupError) with status 1 and not a word, as `puppet lookup` does, and tells it as
the last line of its --explain (Puppet's report_text of the error)."""
import subprocess

NOT_FOUND = "Function lookup() did not find a value"


def explained_error(cmd, cwd=None):
    """cmd: the hiera lookup command line, the key last; the error's text from its --explain (as
    text: a later --render-as wins), or None when the key was simply not found"""
    p = subprocess.run(list(cmd[:-1]) + ["--explain", "--render-as", "s", cmd[-1]], capture_output=True, cwd=cwd,
                       timeout=120)
    lines = p.stdout.decode("utf-8", "replace").rstrip("\n").split("\n")
    last = lines[-1] if lines else ""
    if not last or last.startswith((" ", NOT_FOUND)):
        return None
    return last
