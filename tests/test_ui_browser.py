"""The explorer in a real browser: Debian's chromium driven by selenium through chromedriver, against
a real uvicorn server (tiny trained models, the test PostgreSQL database).

Without chromium and chromedriver these tests skip, unless RECLOOP_UI_REQUIRE_BROWSER is set (CI
sets it), which turns a missing browser into a failure. Screenshots go to RECLOOP_UI_SCREENSHOT_DIR
when set (docs/ui holds the committed ones), else to the test's temporary directory.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import uvicorn
from fake_openai import FakeOpenAI, Reply
from PIL import Image

from app.main import create_app
from app.services import catalog as catalog_service
from app.services.errors import Unavailable
from app.services.keys import create_key
from app.services.runtime import open_worker
from app.settings import Settings
from graph.agents.llm_evidence import LLMWeights
from graph.agents.offline import OfflineUserAgent
from lab.calibration.deps import calibrated_deps

pytestmark = pytest.mark.integration

CHROMIUM = os.environ.get("RECLOOP_UI_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("RECLOOP_UI_CHROMEDRIVER", "/usr/bin/chromedriver")
WAIT_S = 30  # generous: the machine is shared with training runs and other test suites
HISTORY = [49, 180, 257, 293, 0, 171]
CANDIDATES = [5, 10, 15, 20, 25, 30, 35, 40]
# Markup that would run if any page put data through an HTML parser.
HOSTILE = '<script>window.__pwned="script"</script><img src=x onerror="window.__pwned=\'img\'">'


# --- a real server in its own thread (its own event loop; selenium calls block) ------------------


@dataclass
class UIServer:
    base_url: str
    settings: Settings
    new_key: Callable[[str], str]
    llm: FakeOpenAI
    """The OpenAI-compatible server the "llm" agents call (scripted replies, else valid answers)."""

    def api(self, key: str) -> httpx.Client:
        """A plain HTTP client of the same server, for setting the scene of a test."""
        return httpx.Client(base_url=self.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.fixture(scope="module")
def ui_server(service_settings, service_db_url, ml_dataset, service_loop_deps, ml_scorers, tmp_path_factory):
    settings = service_settings.model_copy(
        update={"data_dir": tmp_path_factory.mktemp("ui-data"), "steering_similarity": "collaborative"}
    )
    settings.runs_dir.mkdir(parents=True)
    llm = FakeOpenAI().start()
    # LLM agents for agents "llm"; the service's own settings keep no endpoint, so steering
    # commands stay with the offline parser.
    with_llm = settings.model_copy(
        update={"llm_base_url": llm.base_url, "llm_timeout_s": 10.0, "llm_max_retries": 1}
    )
    scorer = ml_scorers["sasrec"]
    loop_deps = {
        **service_loop_deps,
        "llm": asyncio.run(
            calibrated_deps(
                with_llm.loop_config(), ml_dataset, scorer, scorer, "llm", llm_weights=LLMWeights.obey()
            )
        ),
    }
    ready = threading.Event()
    state: dict = {}

    async def serve() -> None:
        async with open_worker(
            settings, database_url=service_db_url, catalog=ml_dataset, loop_deps=loop_deps
        ) as worker:
            app = create_app(settings, worker=worker)
            server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
            serving = asyncio.create_task(server.serve())
            while not server.started and not serving.done():
                await asyncio.sleep(0.02)
            state.update(server=server, worker=worker, loop=asyncio.get_running_loop())
            if server.started:
                state["port"] = server.servers[0].sockets[0].getsockname()[1]  # port 0: the OS picked
            ready.set()
            await serving

    def run() -> None:
        try:
            asyncio.run(serve())  # which also ends what the server left running (sse-starlette's watcher)
        except BaseException as exc:  # reported to the test instead of dying silently in the thread
            state["error"] = exc
        finally:
            ready.set()

    thread = threading.Thread(target=run, name="ui-server", daemon=True)
    thread.start()
    assert ready.wait(120), "the UI server did not start"
    if "port" not in state:
        raise RuntimeError(f"the UI server failed to start: {state.get('error')!r}")

    def new_key(owner: str) -> str:
        making = create_key(state["worker"].database.sessionmaker, owner=owner)
        return asyncio.run_coroutine_threadsafe(making, state["loop"]).result(timeout=30).secret

    yield UIServer(base_url=f"http://127.0.0.1:{state['port']}", settings=settings, new_key=new_key, llm=llm)
    state["loop"].call_soon_threadsafe(setattr, state["server"], "should_exit", True)
    thread.join(timeout=60)
    llm.stop()


# --- the browser ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def driver() -> Iterator:
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not shutil.which(path)]
    if missing:
        message = f"no {missing}: apt-get install chromium chromium-driver"
        if os.environ.get("RECLOOP_UI_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="recloop-ui-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # A closed network makes chromium wait on its background services: switch them off.
    for argument in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        "--window-size=1280,900",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    browser.set_page_load_timeout(WAIT_S)
    try:
        yield browser
    finally:
        browser.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def screenshots(tmp_path: Path) -> Path:
    configured = os.environ.get("RECLOOP_UI_SCREENSHOT_DIR")
    folder = Path(configured) if configured else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Page:
    """The browser on the explorer, with waits that read like what a person looks for."""

    def __init__(self, driver, server: UIServer, screenshots: Path):
        self.driver, self.server, self.screenshots = driver, server, screenshots

    def open(self, route: str = "") -> None:
        self.driver.get(f"{self.server.base_url}/ui/{route}")
        self.wait_for_css("#view .page")

    def sign_in(self, key: str) -> None:
        self.open()
        self.type("input[name=api-key]", key)
        self.click_css(".signin button[type=submit]")
        self.wait_for_text("h1", "Sessions")

    def go(self, route: str) -> None:
        self.driver.execute_script("location.hash = arguments[0]", route)

    def open_session(self, session_id: str, user_id: str) -> None:
        self.go(f"#/sessions/{session_id}")
        self.wait_for_text(".session-header h1", user_id)

    def css(self, selector: str):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.CSS_SELECTOR, selector)

    def all(self, selector: str) -> list:
        from selenium.webdriver.common.by import By

        return self.driver.find_elements(By.CSS_SELECTOR, selector)

    def wait(self, condition: Callable, what: str, timeout: float = WAIT_S):
        from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
        from selenium.webdriver.support.ui import WebDriverWait

        # The page redraws parts of itself: an element found a moment ago may be gone; look again.
        return WebDriverWait(
            self.driver,
            timeout,
            poll_frequency=0.05,
            ignored_exceptions=(NoSuchElementException, StaleElementReferenceException),
        ).until(lambda _: condition(), message=f"waited {timeout} s for {what}")

    def wait_for_css(self, selector: str):
        return self.wait(lambda: (found := self.all(selector)) and found[0], selector)

    def wait_for_text(self, selector: str, text: str):
        def shown():
            return next((e for e in self.all(selector) if text in e.text), None)

        return self.wait(shown, f"{selector} showing {text!r}")

    def type(self, selector: str, text: str) -> None:
        element = self.wait_for_css(selector)
        element.clear()
        element.send_keys(text)

    def click_css(self, selector: str) -> None:
        self.wait_for_css(selector).click()

    def click_text(self, selector: str, text: str) -> None:
        self.wait_for_text(selector, text).click()

    def pick(self, form: str, query: str, title: str) -> None:
        """Search the catalog picker of ``form`` and add the result showing ``title``."""
        self.type(f"{form} .picker input[type=search]", query)
        self.wait_for_text(f"{form} .picker-results li", title).find_element("css selector", "button").click()

    def select(self, selector: str, value: str) -> None:
        from selenium.webdriver.support.ui import Select

        Select(self.wait_for_css(selector)).select_by_value(value)

    def pairs(self, element) -> dict[str, str]:
        """A <dl> (the first one in ``element``) as {term: description}."""
        return self.driver.execute_script(
            "const dl = arguments[0].matches('dl') ? arguments[0] : arguments[0].querySelector('dl');"
            "return Object.fromEntries([...dl.querySelectorAll(':scope > dt')]"
            ".map(dt => [dt.textContent, dt.nextElementSibling.textContent]));",
            element,
        )

    def shot(self, name: str, width: int = 1280, *, show: str | None = None) -> Path:
        """A screenshot ``width`` pixels wide: the whole page (up to 2,400 px tall), or the screen
        around the element ``show`` selects."""
        self.driver.set_window_size(width, 900)
        if show:
            self.driver.execute_script(
                "arguments[0].scrollIntoView({block: 'start'}); window.scrollBy(0, -60)", self.css(show)
            )
        else:
            height = self.driver.execute_script("return document.documentElement.scrollHeight")
            self.driver.set_window_size(width, min(max(height, 600), 2400))
            self.driver.execute_script("window.scrollTo(0, 0)")
        path = self.screenshots / f"{name}.png"
        # A page has few colours: a 256-colour palette keeps the PNGs small enough to commit.
        Image.open(io.BytesIO(self.driver.get_screenshot_as_png())).quantize(256).save(path, optimize=True)
        self.driver.set_window_size(1280, 900)
        return path

    def assert_nothing_injected_ran(self) -> None:
        """HOSTILE showed as text: its script never ran, its image was never made."""
        assert self.driver.execute_script("return window.__pwned") is None
        injected = "return document.querySelectorAll('img[src=x], body script').length"
        assert self.driver.execute_script(injected) == 0

    def assert_fields_labelled(self) -> None:
        """Every form control on the page has a label a screen reader announces."""
        unlabelled = self.driver.execute_script(
            "return [...document.querySelectorAll('input, select, textarea')]"
            ".filter(el => !el.labels.length && !el.getAttribute('aria-label'))"
            ".map(el => el.outerHTML)"
        )
        assert unlabelled == []

    def errors(self) -> list[str]:
        """Console errors other than the failed requests a test provokes on purpose (401, 404, 409)."""
        return [
            entry["message"]
            for entry in self.driver.get_log("browser")
            if entry["level"] == "SEVERE" and "Failed to load resource" not in entry["message"]
        ]


@pytest.fixture
def page(driver, ui_server, screenshots) -> Iterator[Page]:
    driver.set_window_size(1280, 900)
    driver.get(f"{ui_server.base_url}/ui/")
    driver.execute_script("sessionStorage.clear()")
    driver.get_log("browser")  # start each test with an empty console
    browser_page = Page(driver, ui_server, screenshots)
    yield browser_page
    assert browser_page.errors() == []  # no script error and no CSP violation during the test


@pytest.fixture
def key(ui_server) -> str:
    """A fresh key per test: its sessions are the test's own."""
    return ui_server.new_key(f"ui-{uuid.uuid4().hex[:8]}")


def _new_session(api: httpx.Client, user_id: str = "user-1", history=HISTORY) -> str:
    created = api.post("/v1/sessions", json={"user_id": user_id, "history": history})
    assert created.status_code == 201, created.text
    return created.json()["id"]


def _open_new_session(page: Page, ui_server: UIServer, key: str, user_id: str) -> str:
    """A new session of ``user_id``, and the browser signed in on its page."""
    with ui_server.api(key) as api:
        session_id = _new_session(api, user_id)
    page.sign_in(key)
    page.open_session(session_id, user_id)
    return session_id


def _human_loop(api: httpx.Client, session_id: str, decisions: list[str]) -> None:
    """A loop judged by a person through the API: one decision per round."""
    url = f"/v1/sessions/{session_id}"
    body = {"candidates": CANDIDATES, "judge_mode": "human", "max_rounds": len(decisions)}
    assert api.post(f"{url}/recommendations", json=body).json()["status"] == "awaiting_feedback"
    for decision in decisions:
        answer = {"decision": decision, "reason": f"{decision}ed by a person"}
        assert api.post(f"{url}/feedback", json=answer).status_code == 200


# --- tests ------------------------------------------------------------------------------------------


def test_sign_in_refuses_a_wrong_key_and_keeps_a_good_one_out_of_urls_and_the_page(page, key):
    page.open()
    page.wait_for_text("h1", "Sign in")
    assert not page.css("#sign-out").is_displayed()  # signed out: nothing to sign out of
    page.shot("signin-390", 390)
    page.type("input[name=api-key]", "rl_not-a-real-key")
    page.click_css(".signin button[type=submit]")
    page.wait_for_text(".signin .form-status", "That key was refused: invalid or revoked API key.")
    assert page.driver.execute_script("return sessionStorage.length") == 0

    # Keyboard only: the refused key is selected in the focused field; typing replaces it, Enter submits.
    assert page.driver.switch_to.active_element.get_attribute("name") == "api-key"
    page.driver.switch_to.active_element.send_keys(key + "\n")
    page.wait_for_text("h1", "Sessions")
    page.assert_fields_labelled()
    assert page.driver.execute_script("return sessionStorage.getItem('recloop.apiKey')") == key
    assert key not in page.driver.current_url and key not in page.driver.page_source
    assert page.css("#nav").is_displayed() and page.css("#sign-out").is_displayed()

    page.click_css("#sign-out")
    page.wait_for_text("h1", "Sign in")
    assert not page.css("#sign-out").is_displayed()
    assert page.driver.execute_script("return sessionStorage.length") == 0


def test_sessions_list_filters_and_pages(page, ui_server, key):
    with ui_server.api(key) as api:
        for _ in range(12):
            _new_session(api, "alice")
        bob = [_new_session(api, "bob") for _ in range(2)]
        paused = _new_session(api, "carol")
        assert (
            api.post(
                f"/v1/sessions/{paused}/recommendations",
                json={"candidates": CANDIDATES, "judge_mode": "human"},
            ).json()["status"]
            == "awaiting_feedback"
        )

    page.sign_in(key)
    page.wait_for_text(".results .count", "15 sessions")
    page.shot("sessions-1280")
    page.shot("sessions-390", 390, show=".results")

    page.type(".filters input[name=user_id]", "bob")
    page.click_css(".filters button[type=submit]")
    page.wait_for_text(".results .count", "2 sessions")
    rows = page.all("table.sessions tbody tr")
    assert {row.get_attribute("data-session-id") for row in rows} == set(bob)
    assert all(row.find_element("css selector", ".user-link").text == "bob" for row in rows)
    assert "user_id=bob" in page.driver.current_url

    page.click_text(".filters a", "Clear")
    page.wait_for_text(".results .count", "15 sessions")
    page.select(".filters select[name=status]", "awaiting_feedback")
    page.click_css(".filters button[type=submit]")
    page.wait_for_text(".results .count", "1 session")
    assert page.css("table.sessions .user-link").text == "carol"
    assert "awaiting feedback" in page.css("table.sessions .badge").text

    page.click_text(".filters a", "Clear")
    page.wait_for_text(".results .count", "15 sessions")  # the cleared list is drawn: edit its form now
    page.type(".filters input[name=user_id]", "alice")
    page.select(".filters select[name=limit]", "10")
    page.click_css(".filters button[type=submit]")
    page.wait_for_text(".pager", "1–10 of 12")
    assert len(page.all("table.sessions tbody tr")) == 10
    page.click_text(".pager a", "Next")
    page.wait_for_text(".pager", "11–12 of 12")
    assert len(page.all("table.sessions tbody tr")) == 2

    page.click_text(".filters a", "Clear")
    # Until the cleared list is drawn, the form may still be redrawn, dropping a value set now.
    page.wait_for_text(".results .count", "15 sessions")
    page.driver.execute_script(
        "const input = document.querySelector('.filters input[name=created_after]');"
        "input.value = '2999-01-01T00:00:00';"
    )
    page.click_css(".filters button[type=submit]")
    page.wait_for_text(".results", "No session matches these filters.")


def test_creating_a_session_from_catalog_picks_and_opening_it(page, key):
    page.sign_in(key)
    page.type(".create-session input[name=user_id]", "dana")
    page.pick(".create-session", "toy story", "Toy Story")
    page.pick(".create-session", "star wars", "Star Wars")
    assert len(page.all(".create-session ol.chosen li")) == 2
    page.type(".create-session input[name=history_ids]", "49, 180")
    page.click_text(".create-session button[type=submit]", "Create session")

    page.wait_for_text("h1", "Session of dana")
    page.assert_fields_labelled()
    history = page.wait_for_text("#section-history", "4 items")
    titles = [row.text for row in history.find_elements("css selector", "table.history tbody tr")]
    assert "Toy Story" in titles[0] and "Star Wars" in titles[1]
    assert "Animation" in titles[0]  # attributes (genres) beside the title
    assert page.css("#section-loops").text.count("No loop yet") == 1


def test_a_live_recommendation_stream_shows_rounds_as_they_arrive(page, ui_server, key, monkeypatch):
    judge = OfflineUserAgent.judge

    async def thoughtful_judge(self, ctx):  # takes its time, as an LLM would: updates arrive apart
        await asyncio.sleep(0.4)
        return await judge(self, ctx)

    monkeypatch.setattr(OfflineUserAgent, "judge", thoughtful_judge)
    with ui_server.api(key) as api:
        session_id = _new_session(api, "erin")
        _human_loop(api, session_id, ["reject", "reject", "accept"])
        _human_loop(api, session_id, ["reject", "accept"])
    page.sign_in(key)
    page.open_session(session_id, "erin")
    page.type("#section-run input[name=candidates]", " ".join(map(str, CANDIDATES)))
    page.type("#section-run input[name=max_rounds]", "3")
    page.click_text("#section-run button", "Run recommendation")

    # The first updates are on the page while the loop still runs.
    first = page.wait_for_css("#section-run .live-log li[data-node=recommend]")
    assert page.css("#section-run .live").get_attribute("data-state") == "running"
    assert "proposes #" in first.text
    page.wait(lambda: page.css("#section-run .live").get_attribute("data-state") == "completed", "the result")
    nodes = [li.get_attribute("data-node") for li in page.all("#section-run .live-log li")]
    n_rounds = len(nodes) // 4
    assert n_rounds >= 1 and nodes == ["recommend", "score", "judge", "memory_update"] * n_rounds
    assert "Done:" in page.css("#section-run .live-state").text

    loop = page.wait_for_css("details.loop[data-loop-index='3']")
    loop.find_element("css selector", "summary").click()
    rows = loop.find_elements("css selector", "table.rounds tbody tr")
    assert len(rows) == n_rounds
    cells = {td.get_attribute("data-label"): td.text for td in rows[0].find_elements("css selector", "td")}
    assert cells["Fallbacks"] == "none" and cells["LLM"] == "no LLM call"  # offline agents
    assert page.pairs(loop)["LLM usage"] == "no LLM call"
    assert cells["Rec agent's reason"] and cells["User agent's reason"] and cells["Rank"].isdigit()
    # The charts: every round's rank (the people's three rejections marked), every loop's length.
    live = [
        li.find_element("css selector", ".badge").text for li in page.all(".live-log li[data-node=judge]")
    ]
    assert len(page.all(".charts svg .mark-reject")) == 3 + live.count("reject")
    assert len(page.all(".charts svg .mark-accept")) == 2 + live.count("accept")
    assert len(page.all(".charts svg .mark-loop")) == 3
    page.shot("session-live-1280")


def test_llm_rounds_show_fallback_causes_usage_and_every_attempt(page, ui_server, key):
    # The recommendation agent's answer is cut off twice (a try and its retry): the offline policy
    # recommends, and the round says why. The user agent then answers (the fake's valid replies).
    ui_server.llm.reset()
    ui_server.llm.enqueue(Reply.cut_off(), Reply.cut_off())
    _open_new_session(page, ui_server, key, "kim")
    page.select("#section-run select[name=agents]", "llm")
    page.type("#section-run input[name=candidates]", " ".join(map(str, CANDIDATES)))
    page.type("#section-run input[name=max_rounds]", "1")
    page.click_text("#section-run button", "Run recommendation")
    page.wait(lambda: page.css("#section-run .live").get_attribute("data-state") == "completed", "the result")
    recommend = page.css("#section-run .live-log li[data-node=recommend]").text
    assert "fell back: length: " in recommend and "2 calls" in recommend

    loop = page.wait_for_css("details.loop[data-loop-index='1']")
    loop.find_element("css selector", "summary").click()
    cells = {td.get_attribute("data-label"): td for td in loop.find_elements("css selector", "tbody tr td")}
    assert cells["Fallbacks"].text.startswith("rec agent fell back: length: ")
    usage = cells["LLM"].text
    assert usage.startswith("3 calls · prompt ") and " s" in usage
    assert "rec agent: 2 calls" in usage and "user agent: 1 call" in usage
    cells["LLM"].find_element("css selector", "details.attempts summary").click()
    attempts = [li.text for li in cells["LLM"].find_elements("css selector", "details.attempts li")]
    assert len(attempts) == 3 and attempts[0].startswith("rec #1 failed") and "length" in attempts[0]
    assert attempts[2].startswith("user #1 ok")
    assert page.pairs(loop)["LLM usage"].startswith("3 calls · prompt ")
    page.shot("session-llm-1280", show="details.loop[data-loop-index='1']")


def test_a_human_judge_round_trip_shows_hostile_reasons_as_text(page, ui_server, key):
    with ui_server.api(key) as api:
        session_id = _new_session(api, HOSTILE)
    page.sign_in(key)
    page.wait_for_text("table.sessions .user-link", "<script>")  # the user id, literally
    page.go(f"#/sessions/{session_id}")
    page.wait_for_css(".session-header h1")
    assert HOSTILE in page.css(".session-header h1").text
    page.select("#section-run select[name=judge_mode]", "human")
    page.type("#section-run input[name=candidates]", " ".join(map(str, CANDIDATES)))
    page.click_text("#section-run button", "Run recommendation")

    page.wait_for_text("#section-judge h2", "round 1 awaits your judgement")
    page.click_css("#decision-reject")
    page.type("#section-judge textarea[name=reason]", f"Seen it. {HOSTILE}")
    page.click_text("#section-judge button", "Send judgement")
    page.wait_for_text("#section-judge h2", "round 2 awaits your judgement")
    page.shot("session-judge-1280", show="#section-judge")
    page.type("#section-judge textarea[name=reason]", "Yes, that one.")
    page.click_text("#section-judge button", "Send judgement")
    page.wait(lambda: not page.all("#section-judge"), "the judgement panel to go")

    loop = page.wait_for_css("details.loop[data-loop-index='1']")
    assert "accepted after 2 rounds" in loop.text
    loop.find_element("css selector", "summary").click()
    reasons = [q.text for q in loop.find_elements("css selector", 'td[data-label="User agent\'s reason"] q')]
    assert reasons == [f"Seen it. {HOSTILE}", "Yes, that one."]
    memory = page.css(".side-column details")
    memory.find_element("css selector", "summary").click()
    assert HOSTILE in memory.text
    page.assert_nothing_injected_ran()


def test_a_steering_command_shows_parsed_preferences_and_the_new_list(page, ui_server, key):
    _open_new_session(page, ui_server, key, "frank")
    page.type("#section-steer input[name=text]", "No horror, from the 90s")
    page.click_text("#section-steer button", "Send command")
    page.wait_for_text("#section-steer .form-status", "Understood.")
    result = page.css("#section-steer .steer-result")
    parsed = page.pairs(result.find_element("css selector", "dl:nth-of-type(2)"))
    assert parsed["Adds to avoids"] == "genres Horror" and parsed["Adds to wants"] == "years 1990–1999"
    assert len(result.find_elements("css selector", ".new-recommendations li")) == 20
    page.wait_for_text("#section-steer table.commands", "No horror, from the 90s")
    page.shot("session-steer-1280", show="#section-steer")

    page.type("#section-steer input[name=text]", HOSTILE)
    page.click_text("#section-steer button", "Send command")
    page.wait_for_text("#section-steer .form-status", "Partly understood")
    page.wait_for_text("#section-steer table.commands .command-text", "<img src=x")
    page.assert_nothing_injected_ran()
    assert "wants: years 1990–1999 · avoids: genres Horror" in page.css("#section-steer table.commands").text


def test_a_conflict_a_missing_session_and_deletion_read_as_messages(page, ui_server, key):
    with ui_server.api(key) as api:
        session_id = _new_session(api, "gina")
        page.sign_in(key)
        page.open_session(session_id, "gina")
        # Meanwhile another client starts a human-judged loop: this page is now out of date.
        paused = api.post(
            f"/v1/sessions/{session_id}/recommendations",
            json={"candidates": CANDIDATES, "judge_mode": "human"},
        )
        assert paused.json()["status"] == "awaiting_feedback"

    page.click_text("#section-run button", "Run recommendation")
    page.wait_for_text(
        "#section-run .form-status",
        "Not now: the session's loop awaits your judgement: POST .../feedback first.",
    )
    page.shot("session-conflict-390", 390, show="#section-run")
    page.pick("#section-consume", "fargo", "Fargo")
    page.click_text("#section-consume button[type=submit]", "Record")
    page.wait_for_text("#section-consume .form-status", "Not now: the session's loop awaits your judgement")

    page.go(f"#/sessions/{uuid.uuid4()}")
    page.wait_for_text("#notice", "Not found: no session")

    page.open_session(session_id, "gina")
    page.click_text(".danger-zone button", "Delete session…")
    page.wait(lambda: page.css("dialog.confirm").is_displayed(), "the confirmation")
    page.click_text("dialog.confirm button", "Cancel")
    assert not page.css("dialog.confirm").is_displayed()
    page.click_text(".danger-zone button", "Delete session…")
    page.click_text("dialog.confirm button", "Delete for good")
    page.wait_for_text("#notice", "Session deleted.")
    page.wait_for_text(".results .count", "0 sessions")


def test_recording_consumption_and_the_catalog_and_an_outage(page, ui_server, key, monkeypatch):
    _open_new_session(page, ui_server, key, "hal")
    page.pick("#section-consume", "fargo", "Fargo")
    page.click_text("#section-consume button[type=submit]", "Record")
    page.wait_for_text("#section-consume .form-status", f"the history has {len(HISTORY) + 1} items now")
    page.wait_for_text("#section-history table.history", "Fargo")

    page.click_text("#nav a", "Catalog")
    page.type("form[role=search] input[name=q]", "star wars")
    page.click_text("form[role=search] button", "Search")
    page.click_text("table.items a", "Star Wars")
    page.wait_for_text("h1", "Star Wars")
    assert "genres" in page.css("dl.pairs").text

    def outage(*args, **kwargs):
        raise Unavailable("the database is unreachable; retry shortly")

    monkeypatch.setattr(catalog_service, "search", outage)
    page.go("#/catalog?q=fargo")
    page.wait_for_text(
        "#notice", "The service is unavailable right now: the database is unreachable; retry shortly."
    )
    assert "Try again in 2 s." in page.css("#notice").text  # the answer's Retry-After


def test_the_run_browser_shows_report_plots_settings_and_the_papers_numbers(
    page, ui_server, key, write_eval_run
):
    runs = ui_server.settings.runs_dir
    write_eval_run(runs, "table4-lastfm-example")
    hostile_report = (
        f"## Hostile\n\n{HOSTILE}\n\n| a | paper b |\n|---|---|\n| {HOSTILE} | 1 |\n\n"
        "[x](javascript:alert(1))\n"
    )
    write_eval_run(runs, "zz-hostile-report", report=hostile_report)

    page.sign_in(key)
    page.click_text("#nav a", "Evaluation runs")
    page.click_text("table.runs a", "table4-lastfm-example")
    page.wait_for_text("h1", "table4-lastfm-example")
    table = page.wait_for_css(".report table.report-table")
    assert [th.text for th in table.find_elements("css selector", "th.paper-column")] == ["paper M/A/F"]
    assert "0.2869 / 0.3197 / 0.3770" in table.text and "0.3118 (0.3116)" in table.text
    page.wait_for_text(".paper-note", "published numbers")
    page.wait(
        lambda: page.driver.execute_script(
            "const img = document.querySelector('.report img.plot');"
            "return img && img.complete && img.naturalWidth > 0 && img.src.startsWith('blob:')"
        ),
        "the plot to load",
    )
    settings = page.pairs(page.wait_for_text("section", "Settings (config.json)"))
    assert settings["experiment"] == "table4" and settings["dataset"] == "lastfm"
    page.shot("run-1280")

    page.go("#/runs/zz-hostile-report")
    page.wait_for_text("h1", "zz-hostile-report")
    report = page.wait_for_css(".report")
    assert HOSTILE in report.text and report.find_elements("css selector", "td.paper-column")
    assert not report.find_elements("css selector", "a")  # a javascript: link stays text
    page.assert_nothing_injected_ran()


def test_the_api_key_never_reaches_the_server_in_a_url(page, ui_server, key):
    """Everything the page asked for (navigation and fetches) as the browser saw it."""
    _open_new_session(page, ui_server, key, "ivan")
    urls = page.driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert any("/v1/sessions" in url for url in urls)
    assert not [url for url in urls if key in url]
    stored = json.dumps(page.driver.execute_script("return {...localStorage}"))
    assert key not in stored  # sessionStorage only: gone with the tab


# --- the graph, candidates, two loops side by side, checkpoints (issue 27) -------------------------


def test_the_loop_graph_is_drawn_from_the_compiled_graph_and_marks_the_running_node(
    page, ui_server, key, monkeypatch
):
    judge = OfflineUserAgent.judge

    async def thoughtful_judge(self, ctx):  # slow enough to see the mark move while the loop runs
        await asyncio.sleep(0.6)
        return await judge(self, ctx)

    monkeypatch.setattr(OfflineUserAgent, "judge", thoughtful_judge)
    with ui_server.api(key) as api:
        drawing = api.get("/v1/graph").json()
    assert drawing["nodes"] == ["__start__", "recommend", "score", "judge", "memory_update", "__end__"]
    assert {"source": "memory_update", "target": "recommend", "conditional": True} in drawing["edges"]
    assert drawing["mermaid"].startswith("---") or "graph TD" in drawing["mermaid"]
    _open_new_session(page, ui_server, key, "gus")
    card = page.wait_for_css("#section-graph svg.loop-graph")
    shown = [g.get_attribute("data-node") for g in card.find_elements("css selector", "g.node")]
    assert shown == drawing["nodes"]
    paths = card.find_elements("css selector", "path.edge")
    assert len(paths) == len(drawing["edges"])
    dashed = {
        (p.get_attribute("data-source"), p.get_attribute("data-target"))
        for p in paths
        if "conditional" in p.get_attribute("class")
    }
    assert dashed == {(e["source"], e["target"]) for e in drawing["edges"] if e["conditional"]}
    assert page.css("#section-graph .graph-status").text == "Idle: no loop running."

    page.type("#section-run input[name=candidates]", " ".join(map(str, CANDIDATES)))
    page.type("#section-run input[name=max_rounds]", "2")
    page.click_text("#section-run button", "Run recommendation")
    # While the user agent thinks, the last node that ran is marked (score, just before judge ends).
    page.wait(lambda: page.css("#section-graph").get_attribute("data-phase") == "running", "a running mark")
    marked = page.wait_for_css("#section-graph g.node.current")
    assert marked.get_attribute("data-node") in ("recommend", "score", "judge", "memory_update")
    assert "just ran" in page.css("#section-graph .graph-status").text
    page.shot("session-graph-live-1280", show="#section-graph")
    page.wait(lambda: page.css("#section-graph").get_attribute("data-phase") == "done", "the end mark")
    assert page.all("#section-graph g.node.current") == []
    assert page.css("#section-graph .graph-status").text == "Finished: the loop reached the end."


def _judged_loop(api: httpx.Client, session_id: str, reasons: list[tuple[str, str]]) -> None:
    """A loop judged by a person through the API with the given (decision, reason) per round."""
    url = f"/v1/sessions/{session_id}"
    body = {"candidates": CANDIDATES, "judge_mode": "human", "max_rounds": len(reasons)}
    assert api.post(f"{url}/recommendations", json=body).json()["status"] == "awaiting_feedback"
    for decision, reason in reasons:
        assert api.post(f"{url}/feedback", json={"decision": decision, "reason": reason}).status_code == 200


@pytest.mark.parametrize("width", [1280, 390])
def test_candidates_two_loops_side_by_side_and_checkpoints_show_data_as_text(page, ui_server, key, width):
    with ui_server.api(key) as api:
        session_id = _new_session(api, "ivy")
        _judged_loop(api, session_id, [("reject", f"No. {HOSTILE}"), ("accept", "Fine.")])
        _judged_loop(api, session_id, [("accept", f"Yes! {HOSTILE}")])
        loops = api.get(f"/v1/sessions/{session_id}/loops").json()["data"]
        first_answer = next(loop for loop in loops if loop["loop_index"] == 1)["final_item"]
        consumed = next(c for c in CANDIDATES if c != first_answer)
        assert api.post(f"/v1/sessions/{session_id}/consumed", json={"items": [consumed]}).status_code == 200
        found = api.get(f"/v1/sessions/{session_id}/loops/1/candidates").json()
        checkpoints = api.get(f"/v1/sessions/{session_id}/checkpoints", params={"limit": 200}).json()
        assert api.get(f"/v1/sessions/{session_id}/loops/9/candidates").status_code == 404
    # The API: every candidate with both models' scores and ranks; the rounds' proposals marked.
    assert [c["item"] for c in found["data"]] == CANDIDATES and len(found["proposals"]) == 2
    assert sorted(c["rec_rank"] for c in found["data"])[0] == 1
    assert [c["item"] for c in found["data"] if c["final"]] == [first_answer] == found["proposals"][-1:]
    assert [c["item"] for c in found["data"] if c["consumed_later"]] == [consumed]
    steps = [c["step"] for c in checkpoints["data"]]
    assert steps == sorted(steps, reverse=True) and checkpoints["count"] == len(steps)
    assert checkpoints["data"][0]["state"]["loop_index"] == 2 and checkpoints["data"][0]["next"] == []
    assert {n for c in checkpoints["data"] for n in c["nodes"]} == {
        "__start__",  # the step that takes the input in
        "recommend",
        "score",
        "judge",
        "memory_update",
    }

    page.driver.set_window_size(width, 900)
    page.sign_in(key)
    page.open_session(session_id, "ivy")
    # A loop's candidates, opened on demand.
    loop = page.wait_for_css("#section-loops details.loop[data-loop-index='1']")
    loop.find_element("css selector", "summary").click()
    loop.find_element("css selector", "details.loop-candidates summary").click()
    page.wait(lambda: loop.find_elements("css selector", "table.candidates tbody tr"), "the candidates")
    rows = loop.find_elements("css selector", "table.candidates tbody tr")
    assert [int(r.get_attribute("data-item")) for r in rows] == CANDIDATES
    final = loop.find_element("css selector", "table.candidates tr.final")
    assert int(final.get_attribute("data-item")) == first_answer and "answer" in final.text
    assert "round 2's proposal" in final.text
    true_item = loop.find_element("css selector", "table.candidates tr.true-item")
    assert int(true_item.get_attribute("data-item")) == consumed and "true item" in true_item.text
    assert len(loop.find_elements("css selector", "table.candidates tr.proposed")) in (1, 2)

    # Two loops side by side: the default pair is the two newest, each with its rounds and reasons.
    page.click_text("#section-compare button", "Compare")
    columns = page.wait(
        lambda: len(found := page.all(".compare .compare-column")) == 2 and found, "two columns"
    )
    assert [c.get_attribute("data-loop-index") for c in columns] == ["1", "2"]
    page.wait(lambda: len(page.all(".compare table.candidates")) == 2, "both loops' candidates")
    text = page.css(".compare").text
    assert f"No. {HOSTILE}" in text and f"Yes! {HOSTILE}" in text  # literally, as text
    left, right = (c.rect for c in columns)
    if width == 1280:
        assert left["y"] == right["y"] and left["x"] + left["width"] <= right["x"]  # side by side
    else:
        assert right["y"] >= left["y"] + left["height"]  # one after the other

    # The checkpoints, newest first, with the node that wrote each and the state's key fields.
    table_rows = page.wait(lambda: page.all("#section-checkpoints table.checkpoints tbody tr"), "checkpoints")
    assert [int(r.get_attribute("data-step")) for r in table_rows] == steps[:50]
    newest = {
        td.get_attribute("data-label"): td.text for td in table_rows[0].find_elements("css selector", "td")
    }
    assert newest["Next"] == "— (ended)" and newest["Loop"] == "2" and newest["Stop reason"] == "accepted"
    assert newest["Node"] == "memory_update"
    page.assert_nothing_injected_ran()
    page.assert_fields_labelled()
    assert page.driver.execute_script("return document.documentElement.scrollWidth") <= width
    page.shot(f"session-compare-{width}", width, show="#section-compare")
    page.shot(f"session-checkpoints-{width}", width, show="#section-checkpoints")


def test_the_command_log_fits_its_column_at_1280(page, ui_server, key):
    long_command = "no horror and something from the 90s like " + "Supercalifragilistic" * 4
    with ui_server.api(key) as api:
        session_id = _new_session(api, "jo")
        for text in ("no horror", long_command, "more like Fargo"):
            assert api.post(f"/v1/sessions/{session_id}/commands", json={"text": text}).status_code == 200
    page.sign_in(key)
    page.open_session(session_id, "jo")
    page.wait_for_text("#section-steer table.commands", "no horror")
    fits = page.driver.execute_script(
        "const form = document.querySelector('#section-steer');"
        "const wrap = form.querySelector('table.commands').closest('.table-wrap');"
        "const table = wrap.querySelector('table');"
        "return [wrap.scrollWidth <= wrap.clientWidth + 1,"
        " table.getBoundingClientRect().right <= form.getBoundingClientRect().right + 1];"
    )
    assert fits == [True, True]
    page.shot("session-steer-1280", show="#section-steer")
