"""jobq_build.py - the package's build backend (PEP 517, with PEP 660
editable installs), in the standard library alone, so that
`pip install ./clients/python` works with no network: pip has nothing to
download to build it.  The package is pure Python, so a build is a zip of
jobq/*.py and the metadata of pyproject.toml's [project] table; the files
are dated 1980-01-01 so that a build is the same every time.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCH = (1980, 1, 1, 0, 0, 0)


def _project():
    """pyproject.toml's [project] table."""
    with open(os.path.join(HERE, "pyproject.toml"), "rb") as f:
        data = f.read()
    try:
        import tomllib
    except ImportError:  # before Python 3.11: the simple forms this file uses
        return _simple_toml(data.decode("utf-8"))["project"]
    return tomllib.loads(data.decode("utf-8"))["project"]


def _simple_toml(text):
    """Tables of `key = "string"`, `key = { text = "string" }` and arrays of
    strings (over several lines too): what pyproject.toml here holds."""
    tables, table = {}, None
    text = re.sub(r"(?m)^\s*#.*$", "", text)
    for m in re.finditer(r'(?ms)^\[([\w.-]+)\]|^(\w[\w-]*)\s*=\s*("[^"]*"|\{[^}]*\}|\[.*?\])',
                         text):
        if m.group(1):
            table = tables.setdefault(m.group(1), {})
            continue
        value = m.group(3)
        strings = re.findall(r'"([^"]*)"', value)
        if value.startswith("["):
            table[m.group(2)] = strings
        elif value.startswith("{"):
            table[m.group(2)] = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', value))
        else:
            table[m.group(2)] = strings[0]
    return tables


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p["description"], "Requires-Python: " + p["requires-python"],
             "License: " + p["license"]["text"], "Keywords: " + ",".join(p.get("keywords", []))]
    lines += ["Classifier: " + c for c in p.get("classifiers", [])]
    body = ""
    if p.get("readme"):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, p["readme"]), encoding="utf-8") as f:
            body = "\n" + f.read()
    return p["name"], p["version"], "\n".join(lines) + "\n" + body


def _sources():
    """The package's files, relative to this folder, in a stable order."""
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, "jobq")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [os.path.relpath(os.path.join(root, f), HERE) for f in sorted(files)
                if f.endswith(".py")]
    return out


def _wheel(wheel_directory, files):
    """Writes a wheel of files ({archive name: bytes}) plus its dist-info."""
    name, version, metadata = _metadata()
    dist = "%s-%s.dist-info" % (name, version)
    files = dict(files)
    files[dist + "/METADATA"] = metadata.encode("utf-8")
    files[dist + "/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: jobq_build\n"
                              b"Root-Is-Purelib: true\nTag: py3-none-any\n")
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(data)))
    record.append(dist + "/RECORD,,")
    files[dist + "/RECORD"] = ("\n".join(record) + "\n").encode()
    filename = "%s-%s-py3-none-any.whl" % (name, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w",
                         zipfile.ZIP_DEFLATED) as z:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return filename


def _read(rel):
    with open(os.path.join(HERE, rel), "rb") as f:
        return f.read()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {rel.replace(os.sep, "/"): _read(rel) for rel in _sources()})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose .pth file puts this folder on sys.path: edits to
    jobq/ take effect without a reinstall."""
    return _wheel(wheel_directory, {"jobq_editable.pth": (HERE + "\n").encode()})


def build_sdist(sdist_directory, config_settings=None):
    name, version, metadata = _metadata()
    base = "%s-%s" % (name, version)
    filename = base + ".tar.gz"
    files = {"PKG-INFO": metadata.encode("utf-8")}
    for rel in ["pyproject.toml", "jobq_build.py", "README.md"] + _sources():
        files[rel.replace(os.sep, "/")] = _read(rel)
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for path, data in files.items():
            info = tarfile.TarInfo(base + "/" + path)
            info.size = len(data)
            info.mtime = 315532800
            info.mode = 0o644
            t.addfile(info, io.BytesIO(data))
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []
