#!/usr/bin/env python3
"""Keeps `hiera --help` and the man pages (docs/) true to the command.

  - the subcommands are those the dispatcher in src/cli/main.c knows (every
    `strcmp(argv[1], "NAME")`, or a table entry {"NAME", NAME_main...}), so a subcommand added there
    is caught here until it is documented
  - `hiera --help` lists every one of them, each with a line of text, and nothing else
  - each has a man page docs/hiera-NAME.1 (hiera-serve: section 8) whose .TH names it, its section
    and this hiera's version (include/hiera.h), and that groff renders without a warning
  - options: every option `hiera NAME --help` names (--long or -x) is named in the page, and every
    option the page defines (its SYNOPSIS, and the tags of its .TP/.IP items) is named in --help;
    (a command whose help names `--<puppet setting>` may have an item for any of Puppet's settings,
    src/engine/settings_table.h); for eyaml, the help of `hiera eyaml` and of each of its commands;
    hiera(1) against `hiera --help` (the Hiera 3 command line and the list of subcommands)

usage: tests/docs/check.py --hiera build/hiera     Prints "docs: N passed, N failed".
"""
import argparse, glob, os, re, shutil, subprocess, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tally import Tally  # noqa: E402  (tests/lib/tally.py: the count of checks)

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOCS = os.path.join(ROOT, "docs")

T = Tally("docs", fail_prefix="FAIL docs: ")
check = T.check


def subcommands_of_dispatcher():
    src = open(os.path.join(ROOT, "src", "cli", "main.c")).read()
    main = src[src.index("int main("):]
    names = set(re.findall(r'strcmp\(argv\[1\],\s*"([a-z][a-z0-9-]*)"\)', main))
    names |= set(re.findall(r'\{\s*"([a-z][a-z0-9-]*)",\s*&?[a-z_0-9]+_main\b', src))
    return names


# Puppet's settings (src/engine/settings_table.h), as options
PUPPET_SETTINGS = {"--" + n for n in re.findall(r'^SETTING\("([a-z_0-9]+)"',
                                                  open(os.path.join(ROOT, "src", "engine", "settings_table.h")).read(), re.M)}


def run_help(hiera, args):
    env = {**os.environ, "HIERA_CACHE_DIR": "off", "HIERA_RESULT_CACHE": "off", "LC_ALL": "C"}
    p = subprocess.run([hiera] + args, capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 0, f"`hiera {' '.join(args)}` exits {p.returncode}: {p.stderr.strip()[:200]}")
    check(p.stdout.strip() != "", f"`hiera {' '.join(args)}` prints nothing")
    return p.stdout


# an option: --long (not --<placeholder>) or -x, not inside a word (read-only, x-y) nor a number
OPTION = re.compile(r"(?<![\w\-/.<])(--[A-Za-z][A-Za-z0-9_\-]*|-[A-Za-z])(?![A-Za-z0-9])")


def options_in(text):
    return {o.rstrip("-") for o in OPTION.findall(text)}


def subcommands_in_help(text):
    """The subcommands `hiera --help` lists: `    NAME    text` lines after "Subcommands:"."""
    found = {}
    lines = text.split("\n")
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == "Subcommands:")
    except StopIteration:
        return found
    for l in lines[start + 1:]:
        if not l.strip():
            break
        m = re.match(r"^ {2,6}([a-z][a-z0-9-]*)\s{2,}(\S.*)$", l)
        if m:
            found[m.group(1)] = m.group(2)
    return found


def man_text(src):
    """The page's text with the escapes that matter for options undone (\\- is -, fonts dropped)."""
    t = re.sub(r'^\.\\".*$', "", src, flags=re.M)           # comments
    t = re.sub(r"\\-\\-(\\f[RP])?\\fI", "--<", t)           # --\fIsetting: a placeholder
    t = re.sub(r"\\f(\[[^]]*\]|\(..|.)", "", t)              # font changes
    t = t.replace("\\-", "-").replace("\\(en", "-").replace("\\(em", "-")
    t = t.replace("\\&", "").replace("\\e", "\\").replace("\\ ", " ").replace("\\~", " ")
    return t


def man_sections(text):
    """{SECTION NAME: its lines} (the lines of the .SH line up to the next .SH)."""
    secs, cur = {}, None
    for line in text.split("\n"):
        m = re.match(r'^\.SH\s+"?([^"]*)"?\s*$', line)
        if m:
            cur = m.group(1).strip().upper()
            secs[cur] = []
        elif cur is not None:
            secs[cur].append(line)
    return secs


def defined_options(text):
    """The options a page defines: in its SYNOPSIS, and in the tag lines of .TP and .IP items."""
    secs = man_sections(text)
    opts = options_in("\n".join(secs.get("SYNOPSIS", [])))
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(".TP") and i + 1 < len(lines):
            opts |= options_in(lines[i + 1])
        elif line.startswith(".IP "):
            opts |= options_in(line[4:])
    return opts


def all_options(text):
    """Every option the page names, outside SEE ALSO."""
    secs = man_sections(text)
    body = "\n".join(l for name, ls in secs.items() if name != "SEE ALSO" for l in ls)
    return options_in(body)


def check_page(path, name, section, version, help_text, what):
    src = open(path).read()
    text = man_text(src)
    th = re.search(r"^\.TH\s+(\S+)\s+(\S+)\s+\"[^\"]*\"\s+\"([^\"]*)\"", src, re.M)
    check(th is not None, f"{path}: no .TH line")
    if th:
        check(th.group(1) == name.upper(), f"{path}: .TH names {th.group(1)}, not {name.upper()}")
        check(th.group(2) == section, f"{path}: .TH section {th.group(2)}, the file's is {section}")
        check(th.group(3) == f"hiera {version}", f"{path}: .TH says \"{th.group(3)}\", not \"hiera {version}\"")
    check(re.search(r"^\.SH\s+NAME\s*\n" + re.escape(name.replace("-", "\\-")) + r"\s+\\-", src, re.M) is not None,
          f"{path}: NAME does not start with \"{name} \\-\"")
    h = options_in(help_text)
    named, defined = all_options(text), defined_options(text)
    missing = sorted(h - named)
    check(not missing, f"{path}: options {what} names but the page does not: {' '.join(missing)}")
    if "--<puppet setting>" in help_text:
        # a command that takes any of Puppet's settings: a page may give one of them an item
        h |= PUPPET_SETTINGS
    stale = sorted(defined - h)
    check(not stale, f"{path}: options the page defines but {what} does not name: {' '.join(stale)}")
    if shutil.which("groff"):
        p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path], capture_output=True, text=True)
        check(p.returncode == 0 and not p.stderr.strip(), f"{path}: groff warns: {p.stderr.strip()[:300]}")
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hiera", required=True)
    args = ap.parse_args()
    hiera = os.path.abspath(args.hiera)
    version = re.search(r'#define HIERA_VERSION "([^"]+)"', open(os.path.join(ROOT, "include", "hiera.h")).read()).group(1)

    subs = subcommands_of_dispatcher()
    check(len(subs) >= 8, f"the dispatcher in src/cli/main.c has {len(subs)} subcommands (found: {sorted(subs)})")
    top = run_help(hiera, ["--help"])
    listed = subcommands_in_help(top)
    for s in sorted(subs):
        check(s in listed, f"`hiera --help` does not list the subcommand {s}")
        check(len(listed.get(s, "").strip()) >= 10, f"`hiera --help`: {s} has no line of its own")
    for s in sorted(set(listed) - subs):
        check(False, f"`hiera --help` lists {s}, which src/cli/main.c does not dispatch")

    pages = {}
    for s in sorted(subs):
        found = [p for sec in "18" for p in [os.path.join(DOCS, f"hiera-{s}.{sec}")] if os.path.exists(p)]
        if not check(len(found) == 1, f"the subcommand {s} has {len(found)} man pages docs/hiera-{s}.1 or .8"):
            continue
        path = found[0]
        pages[path] = s
        if s == "eyaml":
            text = run_help(hiera, ["eyaml", "--help"])
            cmds = re.findall(r"^\s+([a-z]+): ", text.split("Available subcommands:")[-1], re.M)
            check(len(cmds) >= 4, f"`hiera eyaml --help` lists {cmds}")
            for c in cmds:
                text += run_help(hiera, ["eyaml", c, "--help"])
                check(re.search(r"^\.(SS|SH)\s+.*\b" + c + r"\b", open(path).read(), re.M | re.I) is not None,
                      f"{path}: no section for `hiera eyaml {c}`")
        else:
            text = run_help(hiera, [s, "--help"])
        check_page(path, f"hiera-{s}", path[-1], version, text, f"`hiera {s} --help`")

    # hiera(1): the Hiera 3 command line and the list of subcommands; it names every page
    path = os.path.join(DOCS, "hiera.1")
    check_page(path, "hiera", "1", version, top, "`hiera --help`")
    page = open(path).read()
    for p, s in pages.items():
        ref = rf"\.BR\s+hiera\\-{s}\s+\({p[-1]}\)"
        check(re.search(ref, page) is not None, f"{path}: SEE ALSO does not name hiera-{s}({p[-1]})")
    # no page for a subcommand the command does not have
    for p in sorted(glob.glob(os.path.join(DOCS, "hiera-*.[1-8]"))):
        check(p in pages, f"{p}: no such subcommand in src/cli/main.c")

    return T.summary()


if __name__ == "__main__":
    sys.exit(main())
