"""Issue 10, items 5 and 6: the web console in a real browser.

Debian's Chromium, headless, driven by Selenium through Debian's chromedriver (nothing is downloaded: the driver's
path is given and SE_OFFLINE is set), against the real binary with `catalog: "storage"`, SQLite and an admin
listener. Marketing ops' whole round: sign in with a token made by the CLI, add an offer to the draft, see the
validation error at its field, fix it, save, publish after reading the diff, see the public API sign the new offer,
simulate a customer from the test kit's signed data, read the charts, roll back, read and verify the audit log,
sign out. Then the attacks: a change without the CSRF token or from another origin is refused, and an expired
session sends the page back to the sign-in form. Every page is photographed at a laptop's and a phone's width
under .build/test-output/console/, and the browser's log must hold no error (CSP violations are logged there).
"""

from __future__ import annotations

import base64
import http.client
import http.server
import json
import re
import os
import signal
import sqlite3
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

from support import (
    BUNDLE_ID,
    ISSUER_ID,
    OFFER_LAPSED,
    OFFER_OPEN,
    PRODUCT_MONTHLY,
    PRODUCT_YEARLY,
    REPO_ROOT,
    Server,
    run_cli,
    signed_nonce,
)

REBINDING_HOST = "rebind.attacker.test"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOTS = REPO_ROOT / ".build" / "test-output" / "console"
# Name in the file, and the viewport: a laptop and a phone.
WIDTHS = {"1280": (1280, 800), "390": (390, 844)}
NEW_OFFER = "console_spring"
OFFER_LATER = "summer_2099"  # scheduled
OFFER_OVER = "winter_2020"  # ended
WAIT = 15
SESSION_COOKIE = "offer_signer_session"


# MARK: - The deployment


@dataclass
class Deployment:
    server: Server
    token: str
    database: Path

    @property
    def admin(self) -> str:
        assert self.server.admin_port is not None, "started without admin=True"
        return f"http://127.0.0.1:{self.server.admin_port}"


@pytest.fixture
def deployment(tmp_path, testkit_dir, signing_key):
    """The real binary serving the catalog from a fresh SQLite file, with an admin listener and a publisher's token
    made by `offer-signer admin token create`; the test kit's CA is trusted for Sandbox data."""
    yield from serve(tmp_path, testkit_dir, signing_key, catalog="storage")


@pytest.fixture
def file_deployment(tmp_path, testkit_dir, signing_key):
    """`deployment` with the catalog in the configuration file."""
    yield from serve(tmp_path, testkit_dir, signing_key, catalog="file")


def serve(tmp_path: Path, testkit_dir: Path, signing_key, catalog: str):
    database = tmp_path / "console.sqlite"
    config = {
        "listen": {"host": "127.0.0.1", "port": 0},
        "storage": f"sqlite:{database}",
        "catalog": catalog,
        "admin": {"listen": {"host": "127.0.0.1", "port": 0}, "sessionMinutes": 60},
        "trust": {"rootCertificates": [str(testkit_dir / "ca" / "root.cer")], "environments": ["Sandbox"]},
        "apps": [{
            "bundleId": BUNDLE_ID,
            "issuerId": ISSUER_ID,
            "keys": [{"keyId": signing_key.key_id, "privateKeyFile": str(signing_key.path)}],
            "offers": [
                {"id": OFFER_OPEN, "type": "promotional", "productIds": [PRODUCT_MONTHLY, PRODUCT_YEARLY],
                 "requiresVerifiedCustomer": False},
                {"id": OFFER_LAPSED, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                 "eligibility": {"all": [{"subscriptionStatus": ["expired"]}, {"daysSinceExpiry": {"min": 30}}]}},
                {"id": OFFER_LATER, "type": "promotional", "productIds": [PRODUCT_YEARLY],
                 "activeFrom": "2099-06-01T00:00:00Z", "requiresVerifiedCustomer": False},
                {"id": OFFER_OVER, "type": "promotional", "productIds": [PRODUCT_YEARLY],
                 "activeFrom": "2020-01-01T00:00:00Z", "activeUntil": "2020-02-01T00:00:00Z",
                 "requiresVerifiedCustomer": False},
            ],
        }],
    }
    path = tmp_path / "console.json"
    path.write_text(json.dumps(config, indent=2))
    check = run_cli("config", "check", "--config", str(path))
    assert check.returncode == 0, check.stdout + check.stderr
    created = run_cli("admin", "token", "create", "--config", str(path), "--name", "ops-test", "--role", "publisher")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("osa_") and len(token) == 47, "the CLI prints the token alone"
    server = Server.start(path, tmp_path, admin=True)
    yield Deployment(server, token, database)
    status = server.stop(signal.SIGTERM, timeout=10)
    assert status == 0, server.stderr_path.read_text(errors="replace")


def admin_call(deployment: Deployment, method: str, path: str, body=None, headers: dict | None = None):
    """(status, headers, parsed body or raw bytes) of a request to the admin listener, every header kept (a
    repeated one too)."""
    url = urllib.parse.urlsplit(deployment.admin)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    all_headers = {"Content-Type": "application/json"} if data is not None else {}
    all_headers.update(headers or {})
    try:
        connection.request(method, path, body=data, headers=all_headers)
        response = connection.getresponse()
        raw = response.read()
        content_type = response.headers.get("Content-Type", "")
        parsed = json.loads(raw) if raw and content_type.startswith("application/json") else raw
        return response.status, response.headers, parsed
    finally:
        connection.close()


def bearer(deployment: Deployment) -> dict:
    return {"Authorization": f"Bearer {deployment.token}"}


# MARK: - The browser


@pytest.fixture(scope="module")
def driver():
    for path in (CHROMIUM, CHROMEDRIVER):
        assert os.access(path, os.X_OK), f"{path} is missing: `make deps` installs Debian's chromium and chromium-driver"
    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never download a browser or a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--hide-scrollbars", "--window-size=1280,800",
                     # A name of another site that points at this machine, as DNS rebinding makes one.
                     f"--host-resolver-rules=MAP {REBINDING_HOST} 127.0.0.1"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield browser
    browser.quit()


@pytest.fixture(scope="module")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    print(f"console screenshots: {SCREENSHOTS}")
    return SCREENSHOTS


class Console:
    """The console in the browser, at the deployment's admin listener, seen as ops see it."""

    def __init__(self, browser, deployment: Deployment, screenshots: Path | None = None):
        self.browser = browser
        self.deployment = deployment
        self.screenshots = screenshots
        self.wait = WebDriverWait(browser, WAIT)
        self.log: list[dict] = []
        self.resize(*WIDTHS["1280"])
        # Nothing left of an earlier test (cookies are per host, not per port: its session would be sent here).
        browser.execute_cdp_cmd("Network.clearBrowserCookies", {})
        self.read_log()
        self.log.clear()

    def resize(self, width: int, height: int) -> None:
        self.browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 700})

    def find(self, css: str):
        return self.browser.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str):
        return self.browser.find_elements(By.CSS_SELECTOR, css)

    def shown(self, css: str):
        return self.wait.until(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), f"{css} never showed")

    def text_in(self, css: str, text: str) -> None:
        self.wait.until(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text),
                        f"{css} never said {text!r}")

    def open(self) -> None:
        self.browser.get(self.deployment.admin + "/admin/")

    def page(self, name: str, action) -> None:
        """Does `action`, then waits for the page `name` to be built afresh."""
        old = self.all(".page")
        action()
        if old:
            self.wait.until(EC.staleness_of(old[0]), f"the page before {name} stayed")
        self.shown(f"#page-{name}[data-ready]")

    def go(self, name: str) -> None:
        self.page(name, lambda: self.find(f"#nav-{name}").click())

    def sign_in(self, token: str, then: str = "offers") -> None:
        self.shown("#signin-form")
        field = self.find("#token")
        field.clear()
        field.send_keys(token)
        self.page(then, lambda: self.find("#signin-form button[type=submit]").click())

    def type_into(self, element, text: str) -> None:
        element.clear()
        element.send_keys(text)

    def read_log(self) -> list[dict]:
        self.log += self.browser.get_log("browser")
        return self.log

    def screenshot(self, name: str) -> None:
        """The whole page at each width, after checking that nothing scrolls sideways."""
        assert self.screenshots is not None
        for label, (width, height) in WIDTHS.items():
            self.resize(width, height)
            self.browser.execute_script("window.scrollTo(0, 0)")
            self.browser.execute_async_script(
                "requestAnimationFrame(() => requestAnimationFrame(arguments[arguments.length - 1]))")
            full = self.browser.execute_script("return Math.ceil(document.documentElement.scrollHeight)")
            shot = self.browser.execute_cdp_cmd("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": 0, "y": 0, "width": width, "height": max(full, height), "scale": 1}})
            (self.screenshots / f"{name}-{label}.png").write_bytes(base64.b64decode(shot["data"]))
            scroll, inner = self.browser.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]")
            assert scroll <= inner, f"the {name} page scrolls sideways at {label} px: {scroll} > {inner}"
            cut = self.browser.execute_script(
                "return [...document.querySelectorAll('.table-card, .card, .banner')]"
                ".filter((e) => e.scrollWidth > e.clientWidth + 1).map((e) => e.className)")
            assert not cut, f"on the {name} page at {label} px, these are wider than their box: {cut}"
        self.resize(*WIDTHS["1280"])

    def session_cookie(self) -> str:
        cookie = self.browser.get_cookie(SESSION_COOKIE)
        assert cookie is not None, "no session cookie after signing in"
        return cookie["value"]


def unexpected_errors(log: list[dict], expected: set[tuple[int, str]]) -> list[dict]:
    """The browser log's errors, but for the failed requests the test caused on purpose, given as (status, path):
    a CSP violation, a script error, or a failed load of anything else stays. (Chromium logs every answer of 400
    or more as an error, even one the page expects and handles.)"""
    def on_purpose(entry: dict) -> bool:
        url, _, rest = entry["message"].partition(" - ")
        return any(f"status of {status} " in rest and urllib.parse.urlsplit(url).path == path
                   for status, path in expected)
    return [entry for entry in log if entry["level"] == "SEVERE" and not on_purpose(entry)]


def wait_for(condition, deadline_seconds: float, what: str):
    """Polls `condition` (every 100 ms) until it returns something true, at most `deadline_seconds`."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what} did not happen within {deadline_seconds} s"
        time.sleep(0.1)


# MARK: - The round of marketing ops


def test_console_round_from_sign_in_to_sign_out(driver, deployment, screenshots, signing_key, signed):
    console = Console(driver, deployment, screenshots)
    server = deployment.server

    # Sign in with the CLI's token; the page keeps no secret.
    console.open()
    console.shown("#signin-form")
    assert not console.all("#signin-message"), "a first visit is no sign-out"
    console.screenshot("signin")
    console.sign_in(deployment.token)
    assert console.find("#who-name").text == "ops-test · publisher"
    assert deployment.token not in driver.page_source
    cookie = console.session_cookie()
    assert driver.get_cookie(SESSION_COOKIE)["httpOnly"] is True
    assert driver.execute_script("return document.cookie") == "", "the session cookie must be HttpOnly"
    assert driver.execute_script("return localStorage.length + sessionStorage.length") == 0
    assert cookie not in driver.page_source
    states = {row.get_attribute("data-offer-id"): row.find_element(By.CSS_SELECTOR, ".badge").text
              for row in console.all("#offers-table .offer-row")}
    assert states == {OFFER_OPEN: "live", OFFER_LAPSED: "live", OFFER_LATER: "scheduled", OFFER_OVER: "ended"}

    # A new offer in the draft: the validation error shows at its field, then goes once fixed.
    console.go("editor")
    console.find("#add-offer").click()
    cards = console.all(".offer-card")
    assert len(cards) == len(states) + 1
    new_index = len(states)
    editor = cards[new_index].find_element(By.CSS_SELECTOR, "textarea.offer-json")
    offer = {"id": NEW_OFFER, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
             "requiresVerifiedCustomer": False, "limits": {"total": 0}}
    console.type_into(editor, json.dumps(offer, indent=1))
    error_at_field = (f'.offer-card[data-offer-id="{NEW_OFFER}"] '
                      f'.field-error[data-path="$.offers[{new_index}].limits.total"]')
    error = console.shown(error_at_field)
    assert error.find_element(By.CSS_SELECTOR, ".field-name").text == "limits.total"
    assert error.find_element(By.CSS_SELECTOR, ".field-message").text, "the API's message is shown"
    errors = [(e.get_attribute("data-path"), e.text) for e in console.all(".field-error")]
    assert all(path.startswith(f"$.offers[{new_index}].") for path, _ in errors), f"only the new one is wrong: {errors}"
    console.text_in("#check-status", f"{len(errors)} problem{'' if len(errors) == 1 else 's'} to fix.")
    console.screenshot("editor")
    offer["limits"]["total"] = 100
    console.type_into(editor, json.dumps(offer, indent=1))
    console.text_in("#check-status", "No problems found.")
    assert not console.all(".field-error")
    # The rule beside it, in words: this offer has none, so everyone.
    assert "Everyone" in cards[new_index].find_element(By.CSS_SELECTOR, ".offer-side").text
    assert "All of these" in cards[1].find_element(By.CSS_SELECTOR, ".offer-side").text
    console.find("#save-draft").click()
    console.text_in(".banner-success", "Draft saved (revision 1).")
    # The editor's line says who saved and when, the time as text (it once printed "[object HTMLTimeElement]").
    facts = console.find("#draft-facts").text
    assert "[object" not in facts, facts
    assert re.fullmatch(r"Revision 1, based on version 1, saved by .+ at \d{4}-\d{2}-\d{2} \d{2}:\d{2}", facts), facts
    assert console.find("#draft-facts time").get_attribute("datetime").endswith("Z")
    assert server.promo(offerId=NEW_OFFER).status != 200, "a draft is not served"

    # Someone else saves the draft meanwhile: saving here is refused (409) with a message that says so, and their
    # version loads on request.
    draft_path = f"/admin/v1/apps/{BUNDLE_ID}/catalog/draft"
    status, _, theirs = admin_call(deployment, "GET", draft_path, headers=bearer(deployment))
    assert status == 200 and theirs["revision"] == 1
    status, _, saved = admin_call(deployment, "PUT", draft_path, {"document": theirs["document"]},
                                  headers={**bearer(deployment), "If-Match": '"1"'})
    assert status == 200 and saved["revision"] == 2, saved
    console.find("#save-draft").click()
    console.text_in(".banner-error", "Someone else changed this draft meanwhile (it is now at revision 2).")
    console.page("editor", lambda: console.find("#reload-draft").click())
    console.text_in("#draft-facts", "Revision 2")

    # The offers list shows the draft-only offer as such.
    console.go("offers")
    state = console.find(f'.offer-row[data-offer-id="{NEW_OFFER}"] .badge').text
    assert state == "draft"
    console.screenshot("offers")

    # Publish after reading the diff against the live version.
    console.go("publish")
    added = console.shown(f'.diff-card[data-offer-id="{NEW_OFFER}"][data-change="added"]')
    assert '"total": 100' in added.find_element(By.CSS_SELECTOR, ".diff").text
    assert added.find_elements(By.CSS_SELECTOR, ".line-add") and not added.find_elements(By.CSS_SELECTOR, ".line-del")
    assert len(console.all(".diff-card")) == 1, "nothing else changed"
    console.find("#publish-message").send_keys("Spring offer for monthly subscribers")
    console.screenshot("publish")
    assert console.find("#publish-summary").text == "Changes from live version 1 to draft revision 2"
    console.find("#publish-button").click()
    console.text_in(".banner-success", "Published version 2.")
    # The page's header now says what is live, not the diff it published.
    console.text_in("#publish-summary", "Version 2 is live, published from draft revision 2")
    assert "Changes from" not in console.find("#publish-summary").text

    # The public API signs the new offer within seconds, and PyJWT-independent ECDSA verifies it.
    signed_answer = wait_for(lambda: (r := server.promo(offerId=NEW_OFFER)).status == 200 and r, 10,
                             "the public API signing the published offer")
    signed_nonce(signed_answer, signing_key, NEW_OFFER)

    # Simulate a customer from the test kit's signed data (expired 10 days ago): the trace as a tree.
    console.go("simulate")
    console.find("#simulate-input").send_keys(signed.recent)
    Select(console.find("#simulate-against")).select_by_value("live")
    console.find("#simulate-button").click()
    new = console.shown(f'.sim-offer[data-offer-id="{NEW_OFFER}"][data-verdict="eligible"]')
    lapsed = console.shown(f'.sim-offer[data-offer-id="{OFFER_LAPSED}"][data-verdict="not_eligible"]')
    assert lapsed.find_elements(By.CSS_SELECTOR, '.trace [data-result="fail"] .mark-fail')
    assert new.find_elements(By.CSS_SELECTOR, '.trace [data-result="pass"] .mark-pass')
    assert not new.find_elements(By.CSS_SELECTOR, '.trace [data-result="fail"]')
    root = lapsed.find_element(By.CSS_SELECTOR, ".trace > details")
    assert root.get_attribute("open") is not None
    root.find_element(By.CSS_SELECTOR, "summary").click()
    assert root.get_attribute("open") is None, "a branch of the trace folds"
    root.find_element(By.CSS_SELECTOR, "summary").click()
    console.screenshot("simulate")

    # Issued against redeemed, per offer over days.
    console.go("charts")
    chart = console.shown(f'.chart-card[data-offer-id="{NEW_OFFER}"] svg.chart-wide')
    assert chart.find_elements(By.CSS_SELECTOR, "polyline.series-issued")
    assert chart.find_elements(By.CSS_SELECTOR, "polyline.series-redeemed")
    totals = console.find(f'.chart-card[data-offer-id="{NEW_OFFER}"] .chart-totals').text
    assert "Issued 1" in totals and "Redeemed 0" in totals, totals
    console.screenshot("charts")

    # Roll back to version 1: the new offer is no longer signed.
    console.go("versions")
    assert console.find('.version-row[data-version="2"] .badge').text == "live"
    console.find('.rollback[data-version="1"]').click()
    console.shown("#rollback-message")
    console.screenshot("versions")
    console.find("#rollback-confirm").click()
    console.text_in(".banner-success", "Version 3 is live")
    wait_for(lambda: server.promo(offerId=NEW_OFFER).status != 200, 10, "the rolled back offer being refused")
    assert server.promo(offerId=OFFER_OPEN).status == 200

    # The audit log: every change, and a chain that verifies.
    console.go("audit")
    actions = {row.get_attribute("data-action") for row in console.all(".audit-row")}
    assert {"catalog.import", "session.create", "draft.save", "catalog.publish", "catalog.rollback"} <= actions
    publish = console.find('.audit-row[data-action="catalog.publish"] details.change')
    publish.find_element(By.CSS_SELECTOR, "summary").click()
    assert NEW_OFFER in publish.find_element(By.CSS_SELECTOR, ".diff").text, "the version's before and after"
    console.find("#verify-audit").click()
    console.shown('#verify-result [data-valid="true"]')
    console.screenshot("audit")

    # Sign out: the form comes back, and the old cookie is worth nothing.
    console.find("#sign-out").click()
    console.text_in("#signin-message", "You have signed out.")
    assert driver.get_cookie(SESSION_COOKIE) is None
    status, _, body = admin_call(deployment, "GET", "/admin/v1/session", headers={"Cookie": f"{SESSION_COOKIE}={cookie}"})
    assert status == 401 and body["error"]["code"] == "unauthorized"

    # The session asked for before signing in, and the refused save: nothing else failed, nothing broke the CSP.
    problems = unexpected_errors(console.read_log(), {(401, "/admin/v1/session"), (409, draft_path)})
    assert not problems, f"the browser logged errors: {problems}"


# MARK: - Attacks and endings


def test_a_change_without_the_csrf_token_or_from_another_origin_is_refused(driver, deployment):
    # The session as the console gets it.
    status, headers, session = admin_call(deployment, "POST", "/admin/v1/session", {"token": deployment.token})
    assert status == 200
    set_cookie = headers.get("Set-Cookie")
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie and "Path=/admin" in set_cookie
    cookie = set_cookie.split(";")[0]
    csrf = session["csrfToken"]
    # A draft a publish would take, so that only the CSRF defence can stop one.
    status, _, draft = admin_call(deployment, "GET", f"/admin/v1/apps/{BUNDLE_ID}/catalog/draft",
                                  headers=bearer(deployment))
    assert status == 200
    document = draft["document"]
    document["offers"].append({"id": NEW_OFFER, "type": "promotional", "productIds": [PRODUCT_MONTHLY],
                               "requiresVerifiedCustomer": False})
    status, _, saved = admin_call(deployment, "PUT", f"/admin/v1/apps/{BUNDLE_ID}/catalog/draft", {"document": document},
                                  headers={**bearer(deployment), "If-Match": f'"{draft["revision"]}"'})
    assert status == 200, saved
    publish_path = f"/admin/v1/apps/{BUNDLE_ID}/catalog/publish"
    publish = {"message": "not by ops", "draftRevision": saved["revision"]}

    own_origin = deployment.admin
    for label, extra in [
        ("no token", {}),
        ("a wrong token", {"X-CSRF-Token": csrf[:-2] + ("AA" if not csrf.endswith("AA") else "BB")}),
        ("another origin", {"X-CSRF-Token": csrf, "Origin": "http://attacker.example"}),
    ]:
        status, _, body = admin_call(deployment, "POST", publish_path, publish, headers={"Cookie": cookie, **extra})
        assert status == 403, f"{label}: {status} {body}"
        assert body["error"]["code"] == "csrf_rejected", label

    # A page of another origin in the browser, which holds the console's cookie (same host, another port: the same
    # site, so SameSite lets the cookie go): its form-like request is refused.
    console = Console(driver, deployment)
    console.open()
    console.sign_in(deployment.token)
    attacker = AttackerSite(deployment.admin + publish_path, json.dumps(publish))
    try:
        driver.get(attacker.url)
        WebDriverWait(driver, WAIT).until(lambda d: d.title in ("sent", "failed"))
    finally:
        attacker.stop()
    refused = [entry for entry in console.read_log()
               if publish_path in entry["message"] and "status of 403" in entry["message"]]
    assert refused, f"the cross-origin request was not refused with 403: {console.log}"
    status, _, versions = admin_call(deployment, "GET", f"/admin/v1/apps/{BUNDLE_ID}/catalog/versions",
                                     headers=bearer(deployment))
    assert status == 200 and versions["live"] == 1, versions

    # The same request with the token, from the listener's own origin, goes through: the defence made the difference.
    status, _, body = admin_call(deployment, "POST", publish_path, publish,
                                 headers={"Cookie": cookie, "X-CSRF-Token": csrf, "Origin": own_origin})
    assert status == 201, body
    assert body["version"] == 2


class AttackerSite:
    """A page on another port of 127.0.0.1 that posts to `target` with the browser's cookies, as a form would (no
    preflight: `no-cors`, text/plain)."""

    def __init__(self, target: str, body: str):
        page = f"""<!doctype html><title>sending</title><script>
fetch({json.dumps(target)}, {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"Content-Type": "text/plain"}}, body: {json.dumps(body)}}})
  .then(() => {{ document.title = "sent"; }}, () => {{ document.title = "failed"; }});
</script>""".encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *arguments):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


def test_an_expired_session_sends_the_page_back_to_sign_in(driver, deployment):
    console = Console(driver, deployment)
    console.open()
    console.sign_in(deployment.token)
    cookie = console.session_cookie()
    # The session ends in the store itself, as time would end it.
    with sqlite3.connect(deployment.database, timeout=10) as database:
        changed = database.execute("UPDATE admin_sessions SET expires_at_ms = 0").rowcount
    assert changed == 1
    status, _, body = admin_call(deployment, "GET", "/admin/v1/session", headers={"Cookie": f"{SESSION_COOKIE}={cookie}"})
    assert status == 401 and body["error"]["code"] == "session_expired"
    console.find("#nav-audit").click()
    console.text_in("#signin-message", "Your session has expired. Sign in again.")
    assert not console.all("#page-audit")
    # Signing in again goes to the page that was asked for.
    console.sign_in(deployment.token, then="audit")
    assert "audit" in driver.current_url
    problems = unexpected_errors(console.read_log(), {(401, "/admin/v1/session"), (401, "/admin/v1/audit")})
    assert not problems, f"the browser logged errors: {problems}"


def test_with_the_catalog_in_the_file_the_editor_says_where_offers_change(driver, file_deployment):
    console = Console(driver, file_deployment)
    console.open()
    console.sign_in(file_deployment.token)
    assert len(console.all("#offers-table .offer-row")) == 4
    console.go("editor")
    assert 'catalog: "file"' in console.find(".banner-info").text
    assert all(not box.is_enabled() for box in console.all("textarea.offer-json"))
    assert not console.find("#save-draft").is_enabled() and not console.find("#add-offer").is_enabled()
    assert not console.all(".field-error")
    problems = unexpected_errors(console.read_log(), {(401, "/admin/v1/session")})
    assert not problems, f"the browser logged errors: {problems}"


# MARK: - The files over HTTP


def test_a_dns_rebinding_page_gets_nothing_of_the_console(driver, deployment):
    """Issue 19, item 3: a page on another site whose name now points at 127.0.0.1 loads the admin listener under its
    own name. Chromium, told that name, gets the 421 JSON error and no console: no script, no sign-in form, and a
    sign-in posted from that page is refused the same way."""
    port = deployment.server.admin_port
    driver.get(f"http://{REBINDING_HOST}:{port}/admin/")
    text = driver.find_element(By.TAG_NAME, "body").text
    assert "misdirected_request" in text, text
    assert not driver.find_elements(By.CSS_SELECTOR, "script[src], form, #sign-out")
    # Script of the rebinding site's own (same origin as far as the browser knows): the admin API answers it nothing.
    driver.get(f"http://{REBINDING_HOST}:{port}/admin/v1/health")
    answer = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/admin/v1/session', {method: 'POST', headers: {'Content-Type': 'application/json'},"
        f" body: JSON.stringify({{token: '{deployment.token}'}})}})"
        ".then(r => r.text().then(t => done([r.status, t]))).catch(e => done([0, String(e)]));")
    assert answer[0] == 421 and "misdirected_request" in answer[1], answer
    # The same page at the listener's own name is the console.
    driver.get(deployment.admin + "/admin/")
    WebDriverWait(driver, 10).until(EC.presence_of_element_located((By.CSS_SELECTOR, "script")))


def test_the_admin_listener_serves_the_console_with_its_security_headers(deployment):
    expected = {
        "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                   "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
    for path, status, content_type, cache in [
        ("/admin/", 200, "text/html; charset=utf-8", "no-cache"),
        ("/admin/assets/console.js", 200, "text/javascript; charset=utf-8", "no-cache"),
        ("/admin/assets/console.css", 200, "text/css; charset=utf-8", "no-cache"),
        ("/admin/assets/favicon.svg", 200, "image/svg+xml", "no-cache"),
        ("/admin", 301, None, "no-cache"),
        ("/admin/assets/nothing.js", 404, "application/json", None),
    ]:
        got, headers, body = admin_call(deployment, "GET", path)
        assert got == status, (path, got, body)
        if content_type:
            assert headers.get_all("Content-Type") == [content_type], path
        for name, value in expected.items():
            assert headers.get_all(name) == [value], (path, name, headers.get_all(name))
        if cache:
            assert headers.get_all("Cache-Control") == [cache], (path, headers.get_all("Cache-Control"))
        else:
            assert len(headers.get_all("Cache-Control")) == 1, path
        if status == 404:
            assert body["error"]["code"] == "not_found"
    _, headers, _ = admin_call(deployment, "GET", "/admin")
    assert headers["Location"] == "/admin/"
    # Never on the public port.
    public = deployment.server.request("GET", "/admin/")
    assert public.status == 404
    assert b"<html" not in public.body
