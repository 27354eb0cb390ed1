"""System tests: the real `latchkey` binary started by the test script, driven over loopback HTTP and by headless Chromium."""
import base64
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.parse

import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# The server's package (Server/) and the repository around it (the SDK's package, api/, docs/, scripts/).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPOSITORY = os.path.dirname(ROOT)
BINARY = os.environ.get("LATCHKEY_BIN", os.path.join(ROOT, ".build", "debug", "latchkey"))
DEMO_USER = "demo@example.com"
DEMO_PASSWORD = "correct horse battery staple"


def poll(probe, accept, within, every=0.2):
    """`probe()` until `accept(result)`, for at most `within` seconds (a bound on a hang, not a timing rule); the last
    result (or the exception the last probe raised)."""
    deadline = time.monotonic() + within
    result = None
    while True:
        try:
            result = probe()
            if accept(result):
                return result
        except Exception as error:  # noqa: BLE001 - the caller's assertion reports it
            result = error
        if time.monotonic() > deadline:
            return result
        time.sleep(every)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`latchkey serve` as a child process of the test runner (never of a Swift test), on a free loopback port."""

    def __init__(self, workdir, port=None, database=None, issuer=None, env=None, args=None):
        """`database`: a SQLite path or a PostgreSQL URL (default: latchkey.sqlite in `workdir`); `issuer`: passed as
        `--issuer` (several instances behind one name share it); `env`: added to the child's environment; `args`: more
        arguments of `latchkey serve` (`--config FILE`)."""
        self.workdir = workdir
        self.port = port or free_port()
        self.database = database or os.path.join(workdir, "latchkey.sqlite")
        self.issuer = issuer
        self.env = env
        self.args = args or []
        self.proc = None

    @property
    def base(self):
        return f"http://localhost:{self.port}"

    def start(self):
        self.log = open(os.path.join(self.workdir, "server.log"), "ab")
        command = [BINARY, "serve", "--port", str(self.port), "--database", self.database]
        if self.issuer:
            command += ["--issuer", self.issuer]
        command += self.args
        self.proc = subprocess.Popen(command, cwd=self.workdir, stdout=self.log, stderr=subprocess.STDOUT,
                                     env={**os.environ, **self.env} if self.env else None)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                break  # exited: no point waiting for it to answer
            try:
                if requests.get(self.base + "/health", timeout=1).status_code == 200:
                    return self
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("server did not start: " + open(os.path.join(self.workdir, "server.log")).read())

    def kill(self, sig=signal.SIGKILL):
        self.proc.send_signal(sig)
        self.proc.wait(timeout=30)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.kill(signal.SIGTERM)


@pytest.fixture
def server():
    workdir = tempfile.mkdtemp(prefix="latchkey-system-")
    s = Server(workdir).start()
    yield s
    s.stop()
    shutil.rmtree(workdir, ignore_errors=True)


def pkce_pair():
    verifier = base64.urlsafe_b64encode(secrets.token_bytes(48)).rstrip(b"=").decode()
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_url(server, redirect_uri, challenge, state, nonce="n-0S6_PzA3Ze", scope="openid profile email offline_access", **extra):
    params = {"response_type": "code", "client_id": "latchkey-demo", "redirect_uri": redirect_uri, "scope": scope,
              "state": state, "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256", **extra}
    return server.base + "/oauth2/authorize?" + urllib.parse.urlencode(params)


def sign_in_code(server, redirect_uri="http://127.0.0.1:9/callback"):
    """The hosted form, submitted as a browser would (cookies kept, redirects inspected): returns the authorization
    code and its PKCE verifier, not yet redeemed."""
    session = requests.Session()
    verifier, challenge = pkce_pair()
    r = session.get(authorize_url(server, redirect_uri, challenge, "st"), allow_redirects=False, timeout=20)
    assert r.status_code == 302, r.text
    page = session.get(server.base + r.headers["Location"], timeout=20)
    fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page.text))
    done = session.post(server.base + "/login", data={**fields, "username": DEMO_USER, "password": DEMO_PASSWORD},
                        allow_redirects=False, timeout=20)
    done = past_passkey_offer(session, server.base, done)
    assert done.status_code == 303, done.text
    query = urllib.parse.parse_qs(urllib.parse.urlparse(done.headers["Location"]).query)
    return query["code"][0], verifier


def past_passkey_offer(session, base, response, timeout=20):
    """After a password, an account without a passkey is offered one (`/passkey-offer`, "Sign in faster next time")
    before the browser goes back to the application. These clients are browsers that cannot make a passkey: they answer
    as the page's script does there ("unsupported") and get the page's onward response; any other response is returned
    as it is."""
    location = response.headers.get("Location", "")
    if response.status_code != 303 or not location.startswith("/passkey-offer?"):
        return response
    page = session.get(base + location, timeout=timeout)
    assert page.status_code == 200, page.text
    fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page.text))
    return session.post(base + "/passkey-offer", data={**fields, "decision": "unsupported"}, allow_redirects=False, timeout=timeout)


def redeem(server, code, redirect_uri, verifier):
    return requests.post(server.base + "/oauth2/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
        "client_id": "latchkey-demo", "code_verifier": verifier}, timeout=10)


def new_chrome(languages=None):
    """Headless Chromium; `languages` ("ja,en") sets `--lang` and the `intl.accept_languages` preference, which is what
    Chromium sends as `Accept-Language`."""
    options = webdriver.ChromeOptions()
    for arg in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run"]:
        options.add_argument(arg)
    if languages:
        options.add_argument("--lang=" + languages.split(",")[0])
        options.add_experimental_option("prefs", {"intl.accept_languages": languages})
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary:
        options.binary_location = binary
    driver_path = shutil.which("chromedriver")
    driver = webdriver.Chrome(service=Service(driver_path) if driver_path else None, options=options)
    driver.set_page_load_timeout(20)
    return driver


@pytest.fixture
def browser():
    driver = new_chrome()
    yield driver
    driver.quit()


class Shots:
    """Full-page screenshots, named by page and language, kept in the directory the environment variable `variable`
    names (else a temporary one)."""

    def __init__(self, variable, prefix):
        self.directory = os.environ.get(variable) or tempfile.mkdtemp(prefix=prefix)
        os.makedirs(self.directory, exist_ok=True)
        self.taken = []

    def take(self, browser, name):
        # The window is tall enough for every page (1400 px).
        path = os.path.join(self.directory, name + ".png")
        assert browser.save_screenshot(path)
        self.taken.append(path)


def wait_for_next_page(browser, page):
    """Waits until `page` (the previous document's root) is gone. Chromium reports a node of a document being replaced
    as stale, or as "not belonging to the document" while the next one loads: both mean the navigation happened."""
    def gone(_):
        try:
            page.is_enabled()
            return False
        except WebDriverException:
            return True
    WebDriverWait(browser, 20).until(gone)


def click(browser, element):
    """Clicks a link or a submit button and waits for the next page (Selenium's click does not wait for navigation)."""
    page = browser.find_element(By.TAG_NAME, "html")
    element.click()
    wait_for_next_page(browser, page)


def latest_code(server, recipient):
    messages = requests.get(server.base + "/dev/outbox", params={"recipient": recipient}, timeout=10).json()["messages"]
    return messages[0]["code"]


REDIRECT = "http://127.0.0.1:9/callback"


def sign_in_with(server, client_id, username=DEMO_USER, password=DEMO_PASSWORD):
    """The hosted sign-in for `client_id`, as a browser would post it; returns the token response."""
    session = requests.Session()
    verifier, challenge = pkce_pair()
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "scope": "openid profile offline_access",
              "state": "st", "nonce": "n", "code_challenge": challenge, "code_challenge_method": "S256"}
    r = session.get(server.base + "/oauth2/authorize?" + urllib.parse.urlencode(params), allow_redirects=False, timeout=20)
    assert r.status_code == 302, r.text
    page = session.get(server.base + r.headers["Location"], timeout=20)
    fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page.text))
    done = session.post(server.base + "/login", data={**fields, "username": username, "password": password},
                        allow_redirects=False, timeout=20)
    done = past_passkey_offer(session, server.base, done)
    assert done.status_code == 303, done.text
    if done.headers["Location"].startswith("/consent?request="):
        # A registered application is third-party: the person allows it on the consent page.
        consent = session.get(server.base + done.headers["Location"], timeout=20)
        assert consent.status_code == 200 and "Field notes" in consent.text, consent.text
        fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', consent.text))
        done = session.post(server.base + "/consent", data={**fields, "decision": "allow"}, allow_redirects=False, timeout=20)
        assert done.status_code == 303, done.text
    code = urllib.parse.parse_qs(urllib.parse.urlparse(done.headers["Location"]).query)["code"][0]
    tokens = requests.post(server.base + "/oauth2/token", data={
        "grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT, "client_id": client_id,
        "code_verifier": verifier}, timeout=10)
    assert tokens.status_code == 200, tokens.text
    return tokens.json()


def add_virtual_authenticator(browser):
    """Chromium's virtual platform authenticator (CDP WebAuthn): user-verifying, resident keys, always present."""
    browser.execute_cdp_cmd("WebAuthn.enable", {"enableUI": False})
    return browser.execute_cdp_cmd("WebAuthn.addVirtualAuthenticator", {"options": {
        "protocol": "ctap2", "transport": "internal", "hasResidentKey": True, "hasUserVerification": True,
        "isUserVerified": True, "automaticPresenceSimulation": True}})["authenticatorId"]


# A browser without conditional mediation (the page must look and work as it always did).
NO_CONDITIONAL_MEDIATION = "if (window.PublicKeyCredential) PublicKeyCredential.isConditionalMediationAvailable = async () => false;"


def without_conditional_mediation(browser):
    browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": NO_CONDITIONAL_MEDIATION})
