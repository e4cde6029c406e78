"""The UI as files: served by the app under a strict CSP, shipped in the package, nothing external,
no inline code, and no HTML parsing of data in the scripts (the browser tests check behaviour)."""

from __future__ import annotations

import ast
import re
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from app.api.ui import CONTENT_SECURITY_POLICY
from app.main import create_app
from app.ui import STATIC_DIR

ROOT = Path(__file__).resolve().parents[1]
ASSETS = sorted(p for p in STATIC_DIR.rglob("*") if p.is_file())
SCRIPTS = [p for p in ASSETS if p.suffix == ".js"]


@pytest.fixture
async def ui_client(settings):
    # The pages need no database or models: an app without a worker serves them.
    transport = httpx.ASGITransport(app=create_app(settings))
    async with httpx.AsyncClient(transport=transport, base_url="http://recloop.test") as client:
        yield client


async def test_root_and_ui_redirect_to_the_page_which_sends_a_strict_policy(ui_client):
    for path in ("/", "/ui"):
        response = await ui_client.get(path)
        assert response.status_code == 307 and response.headers["location"] == "/ui/", path
    page = await ui_client.get("/ui/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert policy == CONTENT_SECURITY_POLICY
    directives = dict(d.split(" ", 1) for d in policy.split("; "))
    assert directives["script-src"] == "'self'" and directives["default-src"] == "'none'"
    assert "unsafe" not in policy and directives["form-action"] == "'none'"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"


async def test_every_asset_is_served_with_its_type_and_the_same_policy(ui_client):
    types = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml", ".html": "text/html"}
    for asset in ASSETS:
        response = await ui_client.get(f"/ui/static/{asset.relative_to(STATIC_DIR).as_posix()}")
        assert response.status_code == 200, asset
        assert response.headers["content-type"].startswith(types[asset.suffix]), asset
        assert response.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert (await ui_client.get("/ui/static/../main.py")).status_code == 404


class _Markup(HTMLParser):
    def __init__(self):
        super().__init__()
        self.scripts: list[dict] = []
        self.inline_code: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "script":
            self.scripts.append(attributes)
        for name, value in attributes.items():
            if name.startswith("on") or name == "style":
                self.inline_code.append(f"{tag}[{name}]")
            if name in ("src", "href") and value and re.match(r"^(https?:)?//", value):
                self.external.append(value)

    def handle_data(self, data):
        if self.lasttag in ("script", "style") and data.strip():
            self.inline_code.append(f"<{self.lasttag}> text")


def test_the_page_has_no_inline_code_and_loads_nothing_from_elsewhere():
    markup = _Markup()
    markup.feed((STATIC_DIR / "index.html").read_text())
    assert markup.scripts == [{"type": "module", "src": "static/js/app.js"}]
    assert markup.inline_code == [] and markup.external == []
    for asset in ASSETS:
        text = asset.read_text()
        imports = re.findall(r"""(?:from|import)\s*["']([^"']+)["']""", text)
        assert all(spec.startswith("./") or spec.startswith("../") for spec in imports), (asset, imports)
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", text), asset


def test_scripts_never_hand_data_to_an_html_parser():
    sinks = re.compile(
        r"\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\("
    )
    for script in SCRIPTS:
        assert not sinks.search(script.read_text()), script


def _setup_py_package_data() -> dict[str, list[str]]:
    """setup.py's PACKAGE_DATA literal, read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "PACKAGE_DATA" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py defines no PACKAGE_DATA")


def test_the_wheel_carries_every_ui_file():
    """What setuptools packs is what setup.py's package-data globs find under app/ui (installed as
    recloop/_server/app/ui in a wheel, app/ui in an editable install)."""
    package_data = _setup_py_package_data()
    package_dir = STATIC_DIR.parent
    packed = {p for pattern in package_data["app.ui"] for p in package_dir.glob(pattern) if p.is_file()}
    assert packed == set(ASSETS)
