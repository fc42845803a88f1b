"""test_native.py - the package against include/jobq.h and libjobq: one
exception class per entry of the error table and no other, the C
structures' layout as the compiler sees it, and finding the library
($JOBQ_LIBRARY, then the loader path by soname), with a clear error when
it is missing."""

import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import support

import jobq
from jobq import _native, errors

HEADER = os.path.join(support.ROOT, "include", "jobq.h")


def header_errors():
    with open(HEADER) as f:
        text = f.read()
    table = re.search(r"#define JOBQ_ERRNO_MAP\(X\)(.*?)\n\n", text, re.S).group(1)
    return [(n, int(v), m) for n, v, m in re.findall(r'X\((\w+),\s*(-?\d+),\s*"([^"]*)"\)',
                                                      table)]


class ErrorTable(unittest.TestCase):
    def test_every_error_of_the_header_has_its_class(self):
        table = header_errors()
        self.assertGreater(len(table), 10)
        for name, value, message in table:
            if value == 0:
                continue
            cls = errors.BY_CODE.get(value)
            self.assertIsNotNone(cls, "JOBQ_%s (%d) has no exception class" % (name, value))
            self.assertEqual(cls.name, "JOBQ_" + name)
            self.assertTrue(issubclass(cls, jobq.Error))
            self.assertIs(getattr(jobq, cls.__name__), cls, "jobq.%s" % cls.__name__)
            self.assertEqual(_native.err_name(value), "JOBQ_" + name)
            self.assertEqual(_native.load().jobq_strerror(value).decode(), message)

    def test_no_class_without_an_error_in_the_header(self):
        codes = {value for _, value, _ in header_errors()}
        for code, cls in errors.BY_CODE.items():
            self.assertIn(code, codes, "%s (%d) is not in JOBQ_ERRNO_MAP" % (cls.__name__, code))
            self.assertIn(cls.__name__, jobq.__all__)

    def test_an_unknown_code_is_still_an_error(self):
        e = errors.from_code(-99, "something new", _native.err_name(-99))
        self.assertIsInstance(e, jobq.Error)
        self.assertEqual((e.code, e.name, str(e)), (-99, "JOBQ_EUNKNOWN", "something new"))

    def test_the_messages_come_from_the_library(self):
        with self.assertRaises(jobq.InvalidURL) as cm:
            jobq.connect("nosuch:thing")
        self.assertIn("nosuch", str(cm.exception))
        self.assertEqual(cm.exception.code, -2)


class Layout(unittest.TestCase):
    """Every ctypes structure has the size, field offsets and field sizes
    the C compiler gives the header's structure of that name."""

    def test_structures_match_the_header(self):
        cc = shutil.which("cc")
        if cc is None:
            self.skipTest("no C compiler (cc) to read the header's layout")
        lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "jobq.h"',
                 "int main(void) {"]
        for cname, cls in _native.STRUCTS.items():
            lines.append('  printf("%s %%zu", sizeof(%s));' % (cname, cname))
            for field, _ in cls._fields_:
                lines.append('  printf(" %s=%%zu:%%zu", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                             % (field, cname, field, cname, field))
            lines.append('  printf("\\n");')
        lines.append("  return 0;\n}\n")
        with tempfile.TemporaryDirectory(prefix="jqcl-layout.") as tmp:
            src, exe = os.path.join(tmp, "layout.c"), os.path.join(tmp, "layout")
            with open(src, "w") as f:
                f.write("\n".join(lines))
            subprocess.run([cc, "-std=c17", "-I", os.path.dirname(HEADER), "-o", exe, src],
                           check=True, capture_output=True)
            out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            cname, size, *fields = line.split()
            cls = _native.STRUCTS[cname]
            self.assertEqual(ctypes.sizeof(cls), int(size), "sizeof(%s)" % cname)
            for f in fields:
                field, where = f.split("=")
                offset, size = where.split(":")
                self.assertEqual(getattr(cls, field).offset, int(offset),
                                 "offsetof(%s, %s)" % (cname, field))
                self.assertEqual(getattr(cls, field).size, int(size),
                                 "sizeof %s.%s" % (cname, field))

    def test_the_limits_bounds_are_the_headers(self):
        with open(HEADER) as f:
            text = f.read()
        for name, value in (("JOBQ_LIMIT_MAX", _native.LIMIT_MAX),
                            ("JOBQ_LIMIT_PERIOD_MAX", _native.LIMIT_PERIOD_MAX)):
            self.assertEqual(int(re.search(r"#define %s (\d+)" % name, text).group(1)), value,
                             name)

    def test_the_version_is_the_headers(self):
        with open(HEADER) as f:
            version = re.search(r'#define JOBQ_VERSION "([^"]+)"', f.read()).group(1)
        self.assertEqual(jobq.__version__, version)
        self.assertEqual(jobq.library_version(), version)
        with open(os.path.join(support.PACKAGE, "pyproject.toml")) as f:
            self.assertIn('version = "%s"' % version, f.read())


def load_in_child(**environ):
    """Loads the library in a new interpreter with environ; returns its
    (exit status, output)."""
    code = ("import jobq\n"
            "try:\n"
            "    print('loaded', jobq.library_version())\n"
            "except jobq.LibraryError as e:\n"
            "    print('error:', e)\n")
    e = support.env()
    e.pop("JOBQ_LIBRARY", None)
    e.pop("LD_LIBRARY_PATH", None)
    e.update(environ)
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                       timeout=60)
    return r.returncode, r.stdout + r.stderr


class Loading(unittest.TestCase):
    def setUp(self):
        self.lib = os.environ.get("JOBQ_LIBRARY") or os.path.join(support.ROOT, "build",
                                                                  "libjobq.so")
        self.tmp = tempfile.mkdtemp(prefix="jqcl-lib.")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_jobq_library_names_the_file(self):
        rc, out = load_in_child(JOBQ_LIBRARY=self.lib)
        self.assertIn("loaded", out)

    def test_a_bad_jobq_library_is_named(self):
        missing = os.path.join(self.tmp, "nothere.so")
        rc, out = load_in_child(JOBQ_LIBRARY=missing)
        self.assertIn("error: cannot load libjobq from JOBQ_LIBRARY '%s'" % missing, out)

    def test_the_loader_finds_the_soname_first(self):
        os.symlink(self.lib, os.path.join(self.tmp, "libjobq.so.0"))
        rc, out = load_in_child(LD_LIBRARY_PATH=self.tmp)
        self.assertIn("loaded", out)

    def test_the_loader_finds_the_development_name(self):
        os.symlink(self.lib, os.path.join(self.tmp, "libjobq.so"))
        rc, out = load_in_child(LD_LIBRARY_PATH=self.tmp)
        self.assertIn("loaded", out)

    def test_missing_everywhere_names_both_places(self):
        if any(os.path.exists(os.path.join(d, "libjobq.so.0"))
               for d in ("/usr/lib", "/usr/local/lib", "/lib")):
            self.skipTest("libjobq is installed on this machine's loader path")
        rc, out = load_in_child(LD_LIBRARY_PATH=self.tmp)
        self.assertIn("error: cannot load libjobq: JOBQ_LIBRARY is not set and the system's "
                      "loader path has neither libjobq.so.0 nor libjobq.so", out)

    def test_importing_needs_no_library(self):
        rc, out = load_in_child(LD_LIBRARY_PATH=self.tmp, JOBQ_LIBRARY=os.devnull)
        self.assertEqual(rc, 0, out)  # the import itself worked; the load failed
        self.assertIn("error:", out)
