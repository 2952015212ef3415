"""The count of a test script's checks: check() counts a pass or a failure (a failure is printed,
up to a limit, and kept), summary() prints the closing "LABEL: N passed, N failed" line that
.ci/run reads and gives the script's exit status. Safe from many threads.

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
    from tally import Tally
    T = Tally("edit")
    check = T.check
"""
import threading


class Tally:
    def __init__(self, label, fail_prefix="FAIL: ", print_limit=None):
        self.label = label
        self.fail_prefix = fail_prefix
        self.print_limit = print_limit  # None: every failure is printed; 0: none
        self.passed = self.failed = 0
        self.failures = []
        self._lock = threading.Lock()

    def check(self, ok, what=""):
        with self._lock:
            if ok:
                self.passed += 1
            else:
                self.failed += 1
                self.failures.append(what)
                if self.print_limit is None or self.failed <= self.print_limit:
                    print(self.fail_prefix + what, flush=True)
        return ok

    def line(self):
        return ("%s: " % self.label if self.label else "") + "%d passed, %d failed" % (self.passed, self.failed)

    def summary(self):
        """Prints the closing line; the exit status: 1 when anything failed."""
        print(self.line(), flush=True)
        return 1 if self.failed else 0
