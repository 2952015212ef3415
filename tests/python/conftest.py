"""Shared set-up of the Python module's tests (make check-python): the module from the build tree
(PYTHONPATH=build/python), the hiera command beside it (HIERA_BIN, default build/hiera) for the
answers to compare with, parsed files in a scratch disk cache, never ~/.cache/hiera."""
import os, shutil, subprocess, tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CASES = os.path.join(ROOT, "tests", "cases")
HIERA_BIN = os.path.abspath(os.environ.get("HIERA_BIN", os.path.join(ROOT, "build", "hiera")))

_scratch = tempfile.mkdtemp(prefix="hiera-python-tests-")
os.environ["HIERA_CACHE_DIR"] = os.path.join(_scratch, "cache")
os.environ.setdefault("HIERA_PUPPET_LAYOUT", "debian")  # the layout of the Puppet that recorded the cases


def pytest_unconfigure(config):
    shutil.rmtree(_scratch, ignore_errors=True)


@pytest.fixture
def scratch(tmp_path):
    return tmp_path


def run_hiera(*args, cwd=None):
    p = subprocess.run([HIERA_BIN, *args], capture_output=True, text=True, cwd=cwd, timeout=60)
    return p.returncode, p.stdout, p.stderr
