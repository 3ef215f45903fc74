"""kgcult.lazy: a module named at import time is imported at its first attribute read,
once, safely from any thread; reading the link index and annotating need no numpy."""
from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_imported_at_first_use_from_many_threads():
    out = _run(
        "import sys, threading\n"
        "from kgcult import lazy\n"
        "m = lazy.module('colorsys')\n"
        "before = lazy.loaded('colorsys')\n"
        "got = []\n"
        "ts = [threading.Thread(target=lambda: got.append(m.rgb_to_hsv(1, 0, 0))) for _ in range(16)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "print(before, lazy.loaded('colorsys'), len(got), set(got), m.hsv_to_rgb is sys.modules['colorsys'].hsv_to_rgb)\n")
    assert out == "False True 16 {(0.0, 1.0, 1)} True", out


def test_a_name_the_module_lacks_is_an_attribute_error():
    out = _run(
        "from kgcult import lazy\n"
        "m = lazy.module('colorsys')\n"
        "try:\n"
        "    m.no_such_name\n"
        "except AttributeError as e:\n"
        "    print('AttributeError', 'no_such_name' in str(e))\n")
    assert out == "AttributeError True"


def test_the_package_imports_without_numpy():
    out = _run("import sys, kgcult.cli.main, kgcult.cli.link, kgcult.cli.annotate, kgcult.link.pipeline\n"
               "print('numpy' in sys.modules)\n")
    assert out == "False", out
