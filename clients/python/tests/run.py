"""run.py - runs the Python client's tests (unittest) and reports each the
way tests/run.sh reads: "ok NAME", "not ok NAME" followed by its traceback
as "#" lines, "skip NAME: REASON", then "RESULT: N passed, N failed, N
skipped".  Arguments, if any, are test name patterns (unittest -k).

    JOBQ_LIBRARY=build/libjobq.so python3 clients/python/tests/run.py [-k PATTERN]
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))


class Result(unittest.TestResult):
    def __init__(self):
        super().__init__()
        self.passed = 0

    @staticmethod
    def name(test):
        return "python/%s.%s" % (type(test).__name__, test._testMethodName)

    def addSuccess(self, test):
        self.passed += 1
        print("ok", self.name(test), flush=True)

    def _bad(self, test, err):
        print("not ok", self.name(test))
        for line in self._exc_info_to_string(err, test).rstrip().splitlines():
            print("#", line)
        sys.stdout.flush()

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._bad(test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._bad(test, err)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        print("skip %s: %s" % (self.name(test), reason), flush=True)


def main(argv):
    loader = unittest.TestLoader()
    if len(argv) >= 2 and argv[0] == "-k":
        loader.testNamePatterns = ["*%s*" % argv[1]]
    suite = loader.discover(HERE, top_level_dir=HERE)
    result = Result()
    suite.run(result)
    failed = len(result.failures) + len(result.errors)
    print("RESULT: %d passed, %d failed, %d skipped" % (result.passed, failed,
                                                         len(result.skipped)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
