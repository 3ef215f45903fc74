"""The query page in headless Chromium: it loads, runs an example query against
`kgcult serve` and shows the expected rows with entity labels; a screenshot is saved.

Needs the Debian packages chromium and chromium-driver (/usr/bin/chromium); the test
installs nothing and skips with a message when they are absent.
"""
from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kgcult import hierarchy, serve
from kgcult.store import Store

FOOD = Path(__file__).resolve().parent / "fixtures" / "serve" / "food.ttl"
CHROMIUM = "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).exists(),
    reason=f"{CHROMIUM} not found: install the Debian packages chromium and chromium-driver "
           "(apt-get install -y chromium chromium-driver) to run the browser test",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tmp_path_factory.mktemp("browser") / "store"
    s = Store(path)
    s.load([FOOD])
    hierarchy.build(s)
    s.close()
    st = Store(path, read_only=True)
    srv = serve.make_server(st, serve.ServeConfig(port=0)).start()
    yield srv
    srv.stop()
    st.close()


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-dev-shm-usage", f"--user-data-dir={profile}",
           # wait (in virtual time) until the page's fetches are done
           "--virtual-time-budget=15000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_page_runs_an_example_query(server, tmp_path):
    url = server.url + "/#example=dishes-per-country"
    dom = chromium(["--dump-dom", url], tmp_path / "profile")
    assert dom.returncode == 0, dom.stderr[-2000:]
    page = dom.stdout
    # the example ran in the page: a results table with one row per country, labelled
    assert 'id="result-table"' in page, page[-3000:]
    rows = re.findall(r'<tr class="row">(.*?)</tr>', page)
    cells = {re.sub(r"<[^>]+>", "", r.split("</td>")[0]).strip(): re.sub(r"<[^>]+>", "", r.split("</td>")[1]).strip()
             for r in rows}
    assert cells == {"Japan Q17": "2", "Italy Q38": "2", "South Korea Q884": "2"}, cells
    assert '<a href="/entity/Q17?lang=en" class="entity">' in page
    assert "3 rows in" in page
    # the example buttons are there
    for ex in serve.EXAMPLES:
        assert f'id="example-{ex["id"]}"' in page

    shot = tmp_path / "query-page.png"
    r = chromium(["--window-size=1280,900", f"--screenshot={shot}", url], tmp_path / "profile2")
    assert r.returncode == 0 and shot.exists() and shot.stat().st_size > 5000, r.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {shot}")


@pytest.mark.slow
def test_page_query_from_a_link_and_the_entity_page(server, tmp_path):
    # a query from the URL, as a link would carry it
    q = "SELECT ?dish WHERE { ?dish wdt:P495 wd:Q884 } ORDER BY ?dish"
    from urllib.parse import quote

    dom = chromium(["--dump-dom", server.url + "/#query=" + quote(q)], tmp_path / "p1")
    assert dom.returncode == 0
    assert "bibimbap" in dom.stdout and "kimchi jjigae" in dom.stdout
    card = chromium(["--dump-dom", server.url + "/entity/Q46383?lang=ja"], tmp_path / "p2")
    text = html.unescape(card.stdout)
    assert "寿司" in text and "日本 (Q17)" in text and "typedAs" in text  # labels in Japanese
    shot = tmp_path / "entity-page.png"
    chromium(["--window-size=1000,800", f"--screenshot={shot}", server.url + "/entity/Q46383"], tmp_path / "p3")
    assert shot.exists()


def test_chromium_driver_is_installed_too():
    """chromium-driver comes with chromium in .ci/run; the DevTools-free tests above do not
    need it, but a WebDriver-based test would."""
    if not shutil.which("chromedriver"):
        pytest.skip("chromedriver not installed (Debian package chromium-driver)")
    out = subprocess.run(["chromedriver", "--version"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "ChromeDriver" in out.stdout
