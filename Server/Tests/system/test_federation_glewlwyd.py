"""Federation with a real upstream OpenID provider: glewlwyd (Debian's, started by Server/Tests/glewlwyd/start.sh; scripts/test.sh
exports LATCHKEY_GLEWLWYD_ENV) is the "Corp SSO" of a `latchkey serve --config` instance, and headless Chromium plays the
person at both: Latchkey's hosted page ("Continue with Corp SSO"), glewlwyd's own login app (login.html: password,
consent, the password re-typed for the `profile` scope, "Continue"), back at Latchkey, then the application's redirect URI.

Each test registers its own confidential client at glewlwyd through the admin API (the redirect URI names the Latchkey
port the test picked) and deletes it afterwards. Every test skips when no glewlwyd is available.

What glewlwyd sends: its ID tokens carry `email` (scope `email`) but no `email_verified` at all by default; start.sh maps
a user property `email_verified` to the claim, and only a user created with that property (the "verified" user made
here) gets `email_verified: true`. Alice has none, so for Latchkey her address is unverified.

A person cannot decline at glewlwyd (its consent page has no "deny"); the upstream error is produced by taking the
`code` grant away from Latchkey's client at glewlwyd, which then answers `error=unauthorized_client` to the callback.
"""
import base64
import json
import os
import re
import secrets
import shutil
import tempfile
import urllib.parse

import pytest
import requests
from selenium.common.exceptions import (ElementNotInteractableException, NoSuchElementException, StaleElementReferenceException,
                                        TimeoutException, WebDriverException)
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from conftest import Server, Shots, click, free_port, new_chrome, past_passkey_offer, pkce_pair

TIMEOUT = 20
PROVIDER_ID = "corp"
PROVIDER_NAME = "Corp SSO"
SECRET_ENV = "CORP_SSO_SECRET"
APP = "fed-web"
# The application's redirect URI: never served, the test reads the URL the browser was sent to.
APP_REDIRECT = "http://127.0.0.1:9/callback"
SCOPES = ["openid", "email", "profile"]
VERIFIED_USER = "vera-fed"  # a glewlwyd user whose ID tokens say email_verified: true (created per test)
VERIFIED_PASSWORD = "vera-password-1"
VERIFIED_EMAIL = "vera@example.test"


# ------------------------------------------------------------------------------------------------------------ glewlwyd

def read_env_file(path):
    env = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            if key:
                env[key] = value
    return env


class Glewlwyd:
    """The glewlwyd of LATCHKEY_GLEWLWYD_ENV: its addresses, its test user, and its admin REST API (a cookie session
    from `POST /api/auth/` as admin/password, the account glewlwyd's schema creates)."""

    def __init__(self, env):
        self.issuer = env["GLEWLWYD_ISSUER"].rstrip("/")
        parsed = urllib.parse.urlparse(self.issuer)
        assert parsed.hostname in ("127.0.0.1", "localhost", "::1"), f"not a loopback issuer: {self.issuer}"
        self.base = f"{parsed.scheme}://{parsed.netloc}"
        self.user = env.get("GLEWLWYD_TEST_USER", "alice")
        self.password = env.get("GLEWLWYD_TEST_PASSWORD", "alice-password-1")
        self.email = "alice@example.test"  # start.sh's
        self.admin = requests.Session()
        self.discovery = None

    def reachable(self):
        try:
            r = requests.get(self.issuer + "/.well-known/openid-configuration", timeout=5)
        except requests.RequestException:
            return False
        if r.status_code != 200:
            return False
        self.discovery = r.json()
        return True

    def login_app_served(self):
        """start.sh serves glewlwyd's login web app (glewlwyd-common) at /login.html; an older start.sh did not."""
        try:
            return requests.get(self.base + "/login.html", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def api(self, method, path, body=None, expect=(200,)):
        if "GLEWLWYD2_SESSION_ID" not in self.admin.cookies:
            r = self.admin.post(self.base + "/api/auth/", json={"username": "admin", "password": "password"}, timeout=TIMEOUT)
            assert r.status_code == 200, f"glewlwyd admin login: HTTP {r.status_code} {r.text[:300]}"
        r = self.admin.request(method, self.base + "/api" + path, json=body, timeout=TIMEOUT)
        assert r.status_code in expect, f"glewlwyd {method} /api{path}: HTTP {r.status_code} {r.text[:300]}"
        return r

    def register_client(self, client_id, secret, redirect_uri, authorization_types=("code", "refresh_token")):
        """A confidential client: `client_secret` (stored as is; glewlwyd also offers a hashed `password`) accepted with
        client_secret_basic and client_secret_post, the one redirect URI, the code grant; PKCE (S256) is allowed by the
        OIDC plugin for every client."""
        self.api("DELETE", "/client/" + urllib.parse.quote(client_id), expect=(200, 404))
        self.api("POST", "/client/", self.client_body(client_id, secret, redirect_uri, authorization_types))

    def client_body(self, client_id, secret, redirect_uri, authorization_types):
        return {"client_id": client_id, "name": "Latchkey", "description": "Latchkey federation system test",
                "enabled": True, "confidential": True, "client_secret": secret, "scope": [],
                "redirect_uri": [redirect_uri], "authorization_type": list(authorization_types),
                "token_endpoint_auth_method": ["client_secret_basic", "client_secret_post"]}

    def update_client(self, client_id, secret, redirect_uri, authorization_types):
        self.api("PUT", "/client/" + urllib.parse.quote(client_id),
                 self.client_body(client_id, secret, redirect_uri, authorization_types))

    def delete_client(self, client_id):
        self.api("DELETE", "/client/" + urllib.parse.quote(client_id), expect=(200, 404))

    def create_verified_user(self):
        """A user whose ID tokens say `email_verified: true` (the user property start.sh maps to the claim)."""
        self.delete_user(VERIFIED_USER)
        self.api("POST", "/user/", {"username": VERIFIED_USER, "password": VERIFIED_PASSWORD, "name": "Vera Verified",
                                    "email": VERIFIED_EMAIL, "email_verified": "true", "enabled": True,
                                    "scope": ["openid", "profile", "email", "offline_access", "g_profile"]})

    def delete_user(self, username):
        self.api("DELETE", "/user/" + urllib.parse.quote(username), expect=(200, 404))


@pytest.fixture(scope="module")
def glewlwyd():
    path = os.environ.get("LATCHKEY_GLEWLWYD_ENV")
    if not path or not os.path.exists(path):
        pytest.skip("glewlwyd is not running (scripts/test.sh starts it with Server/Tests/glewlwyd/start.sh and exports LATCHKEY_GLEWLWYD_ENV)")
    g = Glewlwyd(read_env_file(path))
    if not g.reachable():
        pytest.skip(f"glewlwyd of {path} does not answer at {g.issuer}")
    return g


@pytest.fixture
def upstream_client(glewlwyd):
    """A fresh client id per test: glewlwyd remembers a user's consent per client id."""
    client = {"client_id": "latchkey-upstream-" + secrets.token_hex(4), "secret": "upstream-" + secrets.token_urlsafe(24)}
    yield client
    glewlwyd.delete_client(client["client_id"])


# ------------------------------------------------------------------------------------ a person at glewlwyd, in Chromium

# Which step of glewlwyd's login app (login.html, a React app) the page shows; null while it loads.
_GLEWLWYD_STEP = """
const shown = e => !!e && e.offsetParent !== null;
const id = x => document.getElementById(x);
if (shown(id('username')) && shown(id('password')) && shown(id('loginbut'))) return 'password';
if ([...document.querySelectorAll("input[id^='grant-']")].some(shown)) return 'consent';
if (shown(id('value')) && shown(id('but'))) return 'scheme';
const go = document.querySelector('.card-footer button.btn-success');
if (shown(go) && !go.disabled) return 'continue';
return null;
"""

# Without the login app: the same steps as REST calls from a page on glewlwyd's origin, so that the session cookie lands
# in the browser (what Server/Tests/LatchkeySDKEndToEndTests/GlewlwydStandardsModeTests.swift does over plain HTTP).
_GLEWLWYD_REST_LOGIN = """
const [user, password, done] = [arguments[0], arguments[1], arguments[arguments.length - 1]];
const query = new URLSearchParams(location.search);
const scope = query.get('scope'), client = query.get('client_id'), callback = query.get('callback_url');
const json = (method, path, body) => fetch('/api' + path, {method, credentials: 'include',
  headers: {'Content-Type': 'application/json'}, body: body && JSON.stringify(body)});
(async () => {
  let r = await json('POST', '/auth/', {username: user, password});
  if (r.status !== 200) return done('password login: HTTP ' + r.status);
  const schemes = await (await fetch('/api/auth/scheme/?scope=' + encodeURIComponent(scope), {credentials: 'include'})).json();
  for (const s of Object.values(schemes))
    for (const group of Object.values(s.schemes || {}))
      for (const m of group)
        if (!m.scheme_authenticated) {
          r = await json('POST', '/auth/', {username: user, scheme_type: m.scheme_type, scheme_name: m.scheme_name, value: {password}});
          if (r.status !== 200) return done('scheme ' + m.scheme_name + ': HTTP ' + r.status);
        }
  r = await json('PUT', '/auth/grant/' + encodeURIComponent(client), {scope});
  if (r.status !== 200) return done('consent: HTTP ' + r.status);
  done(null);
  location.assign(callback + (callback.includes('?') ? '&' : '?') + 'g_continue');
})().catch(e => done(String(e)));
"""


def glewlwyd_step(browser, glewlwyd):
    try:
        if not browser.current_url.startswith(glewlwyd.base + "/"):
            return "left"
        return browser.execute_script(_GLEWLWYD_STEP)
    except WebDriverException:
        return None  # between two pages


def wait_for_glewlwyd(browser, glewlwyd):
    WebDriverWait(browser, TIMEOUT, poll_frequency=0.1).until(
        lambda d: d.current_url.startswith(glewlwyd.base + "/"), message="the browser never reached glewlwyd")


def sign_in_at_glewlwyd(browser, glewlwyd, user, password):
    """The person at glewlwyd, from its login page until glewlwyd sends the browser away (to the redirect URI of the
    client that asked): password, consent to the scopes (first time for this client), the password again (start.sh's
    `profile` scope requires the `retype-password` scheme), then "Continue". Steps already done (a glewlwyd session, a
    consent given before) are skipped, as glewlwyd's app skips them. Returns the steps taken."""
    wait_for_glewlwyd(browser, glewlwyd)
    WebDriverWait(browser, TIMEOUT, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return document.readyState") == "complete")
    if "/login.html" in browser.current_url and not glewlwyd.login_app_served():
        problem = browser.execute_async_script(_GLEWLWYD_REST_LOGIN, user, password)
        assert problem is None, f"glewlwyd REST login: {problem}"
        WebDriverWait(browser, TIMEOUT, poll_frequency=0.1).until(
            lambda d: glewlwyd_step(d, glewlwyd) == "left", message="glewlwyd did not send the browser back")
        return ["rest"]
    steps = []
    for _ in range(12):
        try:
            step = WebDriverWait(browser, TIMEOUT, poll_frequency=0.1).until(lambda d: glewlwyd_step(d, glewlwyd))
        except TimeoutException:
            raise AssertionError(f"glewlwyd's login page is stuck at {browser.current_url}: "
                                 + browser.find_element(By.TAG_NAME, "body").text[:600])
        if step == "left":
            return steps
        try:
            _glewlwyd_act(browser, step, user, password)
        except (NoSuchElementException, StaleElementReferenceException, ElementNotInteractableException):
            continue  # the app re-rendered between looking and acting: look again
        steps.append(step)
        # The app re-renders in place: wait until this step is over before looking for the next one.
        WebDriverWait(browser, TIMEOUT, poll_frequency=0.1).until(
            lambda d: glewlwyd_step(d, glewlwyd) != step, message=f"glewlwyd's '{step}' step did not complete")
    raise AssertionError(f"glewlwyd's login went round in circles: {steps}")


def _glewlwyd_act(browser, step, user, password):
    if step == "password":
        for field, value in (("username", user), ("password", password)):
            element = browser.find_element(By.ID, field)
            element.clear()
            element.send_keys(value)
        browser.find_element(By.ID, "loginbut").click()
    elif step == "consent":
        for box in browser.find_elements(By.CSS_SELECTOR, "input[id^='grant-']"):
            if box.is_displayed() and not box.is_selected():
                box.click()
        browser.find_element(By.XPATH, "//button[normalize-space()='Grant access']").click()
    elif step == "scheme":
        element = browser.find_element(By.ID, "value")
        element.clear()
        element.send_keys(password)
        browser.find_element(By.ID, "but").click()
    elif step == "continue":
        browser.find_element(By.CSS_SELECTOR, ".card-footer button.btn-success").click()


def wait_for_url(browser, prefix):
    WebDriverWait(browser, TIMEOUT, poll_frequency=0.1).until(
        lambda d: d.current_url.startswith(prefix), message=f"the browser did not reach {prefix}")
    return urllib.parse.parse_qs(urllib.parse.urlparse(browser.current_url).query)


def navigate(browser, url):
    try:
        browser.get(url)
    except WebDriverException:
        pass  # a hop to an address nobody serves (the redirect URI): the URL is what matters


def jwt_claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def english_chrome():
    return new_chrome(languages="en")


@pytest.fixture
def chrome():
    driver = english_chrome()
    yield driver
    driver.quit()


# ---------------------------------------------------------------------------------------- glewlwyd alone (no Latchkey)

def test_glewlwyd_signs_a_person_in_for_a_confidential_client(glewlwyd, upstream_client, chrome):
    """What Latchkey will need from glewlwyd, without Latchkey: the confidential client registered through the admin
    API, the person's sign-in in Chromium ending at the registered redirect URI with a code, the code redeemed with the
    client secret (HTTP Basic) and PKCE, and the ID token's claims: `email`, and `email_verified` only for a user that
    has the property."""
    redirect_uri = "http://127.0.0.1:9/federation/corp/callback"
    glewlwyd.register_client(upstream_client["client_id"], upstream_client["secret"], redirect_uri)
    glewlwyd.create_verified_user()
    try:
        for user, password, email, verified in [(glewlwyd.user, glewlwyd.password, glewlwyd.email, None),
                                                (VERIFIED_USER, VERIFIED_PASSWORD, VERIFIED_EMAIL, True)]:
            chrome.execute_cdp_cmd("Network.clearBrowserCookies", {})  # every origin's, glewlwyd's session among them
            verifier, challenge = pkce_pair()
            state, nonce = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
            navigate(chrome, glewlwyd.discovery["authorization_endpoint"] + "?" + urllib.parse.urlencode({
                "response_type": "code", "client_id": upstream_client["client_id"], "redirect_uri": redirect_uri,
                "scope": " ".join(SCOPES), "state": state, "nonce": nonce,
                "code_challenge": challenge, "code_challenge_method": "S256"}))
            steps = sign_in_at_glewlwyd(chrome, glewlwyd, user, password)
            if glewlwyd.login_app_served():
                assert steps == ["password", "consent", "scheme", "continue"], steps
            query = wait_for_url(chrome, redirect_uri + "?")
            assert query["state"] == [state] and "error" not in query, query
            r = requests.post(glewlwyd.discovery["token_endpoint"], auth=(upstream_client["client_id"], upstream_client["secret"]),
                              data={"grant_type": "authorization_code", "code": query["code"][0], "redirect_uri": redirect_uri,
                                    "code_verifier": verifier}, timeout=TIMEOUT)
            assert r.status_code == 200, r.text
            claims = jwt_claims(r.json()["id_token"])
            assert claims["iss"] == glewlwyd.issuer and claims["aud"] == upstream_client["client_id"]
            assert claims["nonce"] == nonce and claims["email"] == email
            assert claims.get("email_verified") is verified, claims
    finally:
        glewlwyd.delete_user(VERIFIED_USER)


# ------------------------------------------------------------------------------------------- Latchkey behind glewlwyd

class FederatedLatchkey:
    """`latchkey serve --config` with glewlwyd as identity provider `corp` of the browser application `fed-web`
    (public, PKCE, open registration); the client secret reaches the server through its environment."""

    def __init__(self, glewlwyd, upstream_client, users=(), settings=None):
        self.workdir = tempfile.mkdtemp(prefix="latchkey-federation-")
        self.port = free_port()
        self.issuer = f"http://localhost:{self.port}"
        self.callback = f"{self.issuer}/federation/{PROVIDER_ID}/callback"
        self.glewlwyd = glewlwyd
        self.upstream_client = upstream_client
        config = {
            "issuer": self.issuer, "development": True, "bcrypt_cost": 4,
            "identity_providers": [{
                "id": PROVIDER_ID, "type": "oidc", "name": PROVIDER_NAME, "issuer": glewlwyd.issuer,
                "client_id": upstream_client["client_id"], "client_secret_env": SECRET_ENV,
                "scopes": SCOPES, "link_by_verified_email": True}],
            "clients": [{
                "client_id": APP, "name": "Federation test app", "app_type": "browser",
                "redirect_uris": [APP_REDIRECT], "grant_types": ["authorization_code", "refresh_token"],
                "scopes": ["openid", "profile", "email", "offline_access"], "registration": "open",
                "identity_providers": [PROVIDER_ID]}],
            "users": list(users),
            **(settings or {}),
        }
        path = os.path.join(self.workdir, "latchkey.json")
        with open(path, "w") as f:
            json.dump(config, f)
        self.server = Server(self.workdir, port=self.port, args=["--config", path],
                             env={SECRET_ENV: upstream_client["secret"]})

    def start(self):
        self.glewlwyd.register_client(self.upstream_client["client_id"], self.upstream_client["secret"], self.callback)
        self.server.start()
        assert self.server.base == self.issuer
        return self

    def stop(self):
        self.server.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)

    @property
    def log(self):
        with open(os.path.join(self.workdir, "server.log"), errors="replace") as f:
            return f.read()[-4000:]

    def authorize_url(self, state, nonce, challenge, path="/oauth2/authorize", **extra):
        params = {"response_type": "code", "client_id": APP, "redirect_uri": APP_REDIRECT, "scope": "openid profile email",
                  "state": state, "nonce": nonce, "code_challenge": challenge, "code_challenge_method": "S256", **extra}
        return self.issuer + path + "?" + urllib.parse.urlencode(params)

    def redeem(self, code, verifier):
        r = requests.post(self.issuer + "/oauth2/token", data={
            "grant_type": "authorization_code", "code": code, "redirect_uri": APP_REDIRECT, "client_id": APP,
            "code_verifier": verifier}, timeout=TIMEOUT)
        assert r.status_code == 200, r.text
        return r.json()

    def password_sign_in(self, username, password):
        """The hosted form submitted with a password, as test_browser's `sign_in_code`: the ID token's claims."""
        session = requests.Session()
        verifier, challenge = pkce_pair()
        r = session.get(self.authorize_url("pw", "n-pw", challenge), allow_redirects=False, timeout=TIMEOUT)
        assert r.status_code == 302, r.text
        page = session.get(urllib.parse.urljoin(self.issuer, r.headers["Location"]), timeout=TIMEOUT)
        fields = login_form_fields(page.text)
        done = session.post(self.issuer + "/login", data={**fields, "username": username, "password": password},
                            allow_redirects=False, timeout=TIMEOUT)
        done = past_passkey_offer(session, self.issuer, done, timeout=TIMEOUT)
        assert done.status_code == 303, done.text
        query = urllib.parse.parse_qs(urllib.parse.urlparse(done.headers["Location"]).query)
        return jwt_claims(self.redeem(query["code"][0], verifier)["id_token"])


def login_form_fields(html):
    return dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', html))


@pytest.fixture
def latchkey(glewlwyd, upstream_client):
    started = []

    def start(users=(), settings=None):
        instance = FederatedLatchkey(glewlwyd, upstream_client, users, settings)
        started.append(instance)  # stopped and removed even when it fails to start
        return instance.start()

    yield start
    for instance in started:
        instance.stop()


def continue_with_corp(browser):
    """Latchkey's hosted page: the provider's button, inside the CSRF-protected login form."""
    button = WebDriverWait(browser, TIMEOUT).until(expected_conditions.element_to_be_clickable(
        (By.CSS_SELECTOR, f"button[name='idp'][value='{PROVIDER_ID}']")))
    assert button.text == f"Continue with {PROVIDER_NAME}"
    button.click()


def federated_sign_in(browser, server, glewlwyd, user, password, **extra):
    """Client authorization URL → Latchkey's page → "Continue with Corp SSO" → glewlwyd → back: the code's tokens.
    With `idp=corp` in `extra` Latchkey's page is skipped (asserted)."""
    verifier, challenge = pkce_pair()
    state, nonce = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
    navigate(browser, server.authorize_url(state, nonce, challenge, **extra))
    if "idp" in extra or "provider" in extra:
        assert browser.current_url.startswith(glewlwyd.base + "/"), f"Latchkey's page was not skipped: {browser.current_url}"
    else:
        assert urllib.parse.urlparse(browser.current_url).path == "/login", browser.current_url
        continue_with_corp(browser)
    sign_in_at_glewlwyd(browser, glewlwyd, user, password)
    query = wait_for_url(browser, APP_REDIRECT + "?")
    assert "error" not in query, f"{query}\n{server.log}"
    assert query["state"] == [state] and query["iss"] == [server.issuer], query
    tokens = server.redeem(query["code"][0], verifier)
    claims = jwt_claims(tokens["id_token"])
    assert claims["iss"] == server.issuer and claims["aud"] in (APP, [APP]) and claims["nonce"] == nonce, claims
    return claims, tokens


def test_federated_sign_in_creates_one_account_and_signs_in_to_it_again(glewlwyd, latchkey, chrome):
    server = latchkey()

    # 1. First time: Latchkey's page, "Continue with Corp SSO", glewlwyd's login, back with a code. The account is made
    #    just in time (registration is open): glewlwyd sends no email_verified, so nothing is linked by email, and the
    #    unverified address is not kept as the account's email (third review, R3-8: it would take it from its owner).
    claims, tokens = federated_sign_in(chrome, server, glewlwyd, glewlwyd.user, glewlwyd.password)
    assert "fed" in claims["amr"], claims
    assert claims["idp"] == PROVIDER_ID, claims
    assert "email" not in claims, claims
    assert claims.get("email_verified") in (None, False, "false"), claims
    access = jwt_claims(tokens["access_token"])
    assert access.get("idp") == PROVIDER_ID and access["sub"] == claims["sub"], access
    userinfo = requests.get(server.issuer + "/oauth2/userinfo", headers={"Authorization": "Bearer " + tokens["access_token"]},
                            timeout=TIMEOUT)
    assert userinfo.status_code == 200 and userinfo.json()["sub"] == claims["sub"], userinfo.text

    # 2. prompt=login in the same browser: Latchkey's page again; glewlwyd still has its session (only "Continue").
    again, _ = federated_sign_in(chrome, server, glewlwyd, glewlwyd.user, glewlwyd.password, prompt="login")
    assert again["sub"] == claims["sub"], (again, claims)

    # 3. A new browser (no session at Latchkey or at glewlwyd): the same account, not a second one.
    other = english_chrome()
    try:
        fresh, _ = federated_sign_in(other, server, glewlwyd, glewlwyd.user, glewlwyd.password)
    finally:
        other.quit()
    assert fresh["sub"] == claims["sub"], (fresh, claims)
    assert fresh["idp"] == PROVIDER_ID and "fed" in fresh["amr"]


def test_idp_hint_goes_straight_to_the_provider(glewlwyd, latchkey, chrome):
    server = latchkey()
    authorization_endpoint = glewlwyd.discovery["authorization_endpoint"]

    # What an SDK asks before drawing its own buttons (Latchkey's path and reachFive's).
    for path in ["/identity/v1/providers", "/api/v1/providers"]:
        r = requests.get(server.issuer + path, params={"client_id": APP}, timeout=TIMEOUT)
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        assert r.json()["items"] == [{"provider": PROVIDER_ID, "name": PROVIDER_NAME, "type": "oidc"}], (path, r.text)

    # The upstream request itself: Latchkey's confidential client, its callback, PKCE S256, state, nonce, the scopes.
    # Reached by redirects only (Latchkey may pass through its own /login without showing it), no page in between.
    for path, hint in [("/oauth2/authorize", {"idp": PROVIDER_ID}), ("/oauth/authorize", {"idp": PROVIDER_ID}),
                       ("/oauth2/authorize", {"provider": PROVIDER_ID}), ("/oauth2/authorize", {"provider": PROVIDER_ID + ":web"})]:
        _, challenge = pkce_pair()
        session, url, hops = requests.Session(), server.authorize_url("s", "n", challenge, path=path, **hint), []
        while not url.startswith(glewlwyd.base + "/") and len(hops) < 3:
            r = session.get(url, allow_redirects=False, timeout=TIMEOUT)
            assert r.status_code in (302, 303), (path, hint, hops, r.status_code, r.text[:300])
            url = urllib.parse.urljoin(server.issuer, r.headers["Location"])
            hops.append(url)
        location = url
        assert location.startswith(authorization_endpoint + "?"), (path, hint, hops)
        upstream = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(location).query))
        assert upstream["client_id"] == server.upstream_client["client_id"]
        assert upstream["redirect_uri"] == server.callback
        assert upstream["response_type"] == "code"
        assert upstream["code_challenge_method"] == "S256" and upstream["code_challenge"] != challenge
        assert upstream["state"] and upstream["nonce"] and upstream["state"] != "s"
        assert set(upstream["scope"].split()) == set(SCOPES)

    # In the browser: straight to glewlwyd (no Latchkey page), then back with a code.
    claims, _ = federated_sign_in(chrome, server, glewlwyd, glewlwyd.user, glewlwyd.password, idp=PROVIDER_ID)
    assert claims["idp"] == PROVIDER_ID and "fed" in claims["amr"]


def test_upstream_error_shows_the_login_page_with_an_error(glewlwyd, latchkey, upstream_client, chrome):
    server = latchkey()
    # glewlwyd refuses Latchkey's request: the client may no longer use the code grant, so glewlwyd answers the
    # callback with error=unauthorized_client (and state) before anyone signs in.
    glewlwyd.update_client(upstream_client["client_id"], upstream_client["secret"], server.callback, ["refresh_token"])

    # Over HTTP first, for the status code: the callback answers the login page again, 4xx, with the error.
    session = requests.Session()
    _, challenge = pkce_pair()
    r = session.get(server.authorize_url("http", "n", challenge), allow_redirects=False, timeout=TIMEOUT)
    assert r.status_code == 302, r.text
    page = session.get(urllib.parse.urljoin(server.issuer, r.headers["Location"]), timeout=TIMEOUT)
    chosen = session.post(server.issuer + "/login", data={**login_form_fields(page.text), "idp": PROVIDER_ID},
                          allow_redirects=False, timeout=TIMEOUT)
    assert chosen.status_code == 303 and chosen.headers["Location"].startswith(glewlwyd.discovery["authorization_endpoint"]), \
        (chosen.status_code, chosen.headers.get("Location"))
    refused = session.get(chosen.headers["Location"], allow_redirects=False, timeout=TIMEOUT)
    assert refused.status_code == 302 and refused.headers["Location"].startswith(server.callback + "?"), refused.headers
    back = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(refused.headers["Location"]).query))
    assert back.get("error") == "unauthorized_client", back
    shown = session.get(refused.headers["Location"], allow_redirects=False, timeout=TIMEOUT)
    assert 400 <= shown.status_code < 500, (shown.status_code, shown.text[:500])
    assert 'class="error"' in shown.text and PROVIDER_NAME in shown.text, shown.text[:2000]
    assert f'name="idp" value="{PROVIDER_ID}"' in shown.text, "the provider's button is offered again"

    # In Chromium: the person sees Latchkey's page with the error, and the button to try again.
    verifier, challenge = pkce_pair()
    navigate(chrome, server.authorize_url("browser", "n-b", challenge))
    continue_with_corp(chrome)
    error = WebDriverWait(chrome, TIMEOUT).until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, "p.error")))
    assert PROVIDER_NAME in error.text, error.text
    assert urllib.parse.urlparse(chrome.current_url).netloc == urllib.parse.urlparse(server.issuer).netloc

    # Once glewlwyd accepts the client again, the same page's button completes the sign-in (same request, same state).
    glewlwyd.update_client(upstream_client["client_id"], upstream_client["secret"], server.callback, ["code", "refresh_token"])
    continue_with_corp(chrome)
    sign_in_at_glewlwyd(chrome, glewlwyd, glewlwyd.user, glewlwyd.password)
    query = wait_for_url(chrome, APP_REDIRECT + "?")
    assert query["state"] == ["browser"] and "code" in query, f"{query}\n{server.log}"
    claims = jwt_claims(server.redeem(query["code"][0], verifier)["id_token"])
    assert claims["idp"] == PROVIDER_ID


def test_link_by_verified_email_only_when_glewlwyd_verified_it(glewlwyd, latchkey, chrome):
    """Local accounts with the two addresses, both verified at Latchkey. Alice's glewlwyd ID token has no
    email_verified: the sign-in is refused (no account taken over, none duplicated). Vera's says email_verified: true:
    the federated sign-in lands on her existing account."""
    glewlwyd.create_verified_user()
    try:
        server = latchkey(users=[
            {"username": glewlwyd.email, "password": "alice local password",
             "claims": {"email": glewlwyd.email, "email_verified": "true", "name": "Alice Local"}},
            {"username": VERIFIED_EMAIL, "password": "vera local password",
             "claims": {"email": VERIFIED_EMAIL, "email_verified": "true", "name": "Vera Local"}}])
        alice_local = server.password_sign_in(glewlwyd.email, "alice local password")
        vera_local = server.password_sign_in(VERIFIED_EMAIL, "vera local password")

        # Alice: refused, Latchkey's page says why.
        _, challenge = pkce_pair()
        navigate(chrome, server.authorize_url("alice", "n-a", challenge))
        continue_with_corp(chrome)
        sign_in_at_glewlwyd(chrome, glewlwyd, glewlwyd.user, glewlwyd.password)
        error = WebDriverWait(chrome, TIMEOUT).until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, "p.error")))
        assert "already exists" in error.text and PROVIDER_NAME in error.text, error.text
        assert not chrome.current_url.startswith(APP_REDIRECT)
        assert server.password_sign_in(glewlwyd.email, "alice local password")["sub"] == alice_local["sub"]

        # Vera, in a new browser: linked to her account by the verified address.
        other = english_chrome()
        try:
            claims, _ = federated_sign_in(other, server, glewlwyd, VERIFIED_USER, VERIFIED_PASSWORD)
        finally:
            other.quit()
        assert claims["sub"] == vera_local["sub"], (claims, vera_local)
        assert claims["idp"] == PROVIDER_ID and "fed" in claims["amr"]
    finally:
        glewlwyd.delete_user(VERIFIED_USER)


def test_the_account_page_links_and_unlinks_corp_sso(glewlwyd, latchkey, chrome):
    """The account page as a person uses it: signed in with a password, "Linked accounts", "Link Corp SSO", glewlwyd's
    own login, and back on the page, which says so; a Corp SSO sign-in in another browser then lands on that account;
    "Unlink" takes it away, and Corp SSO no longer signs in to it. A day of recent sign-in, so the run never depends on
    how long Chromium takes (the 5-minute rule is tested in Swift with a frozen clock)."""
    username, password = "lina@example.com", "lina's local password"
    server = latchkey(users=[{"username": username, "password": password,
                              "claims": {"email": username, "email_verified": "true", "name": "Lina Local"}}],
                      settings={"recent_auth_seconds": 86400})
    shots = Shots("LATCHKEY_ACCOUNT_SCREENSHOTS", "latchkey-account-shots-")
    local = server.password_sign_in(username, password)

    navigate(chrome, server.issuer + "/account/linked")
    assert urllib.parse.urlparse(chrome.current_url).path == "/login", chrome.current_url
    chrome.find_element(By.ID, "username").send_keys(username)
    chrome.find_element(By.ID, "password").send_keys(password)
    click(chrome, chrome.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]"))
    if "/passkey-offer" in chrome.current_url:
        click(chrome, chrome.find_element(By.ID, "not-now"))
    wait_for_url(chrome, server.issuer + "/account/linked")
    assert chrome.find_element(By.ID, "no-links")
    link = chrome.find_element(By.XPATH, f"//button[normalize-space()='Link {PROVIDER_NAME}']")
    link.click()
    sign_in_at_glewlwyd(chrome, glewlwyd, glewlwyd.user, glewlwyd.password)
    wait_for_url(chrome, server.issuer + "/account/linked?")
    notice = WebDriverWait(chrome, TIMEOUT).until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, "[role=status]")))
    assert notice.text == f"{PROVIDER_NAME} is linked. You can now sign in with it.", f"{notice.text}\n{server.log}"
    rows = chrome.find_elements(By.CSS_SELECTOR, "#links tbody tr")
    assert len(rows) == 1 and PROVIDER_NAME in rows[0].text, [r.text for r in rows]
    assert not chrome.find_elements(By.ID, "link-providers"), "nothing left to link"
    shots.take(chrome, "linked-en")

    other = english_chrome()
    try:
        claims, _ = federated_sign_in(other, server, glewlwyd, glewlwyd.user, glewlwyd.password)
    finally:
        other.quit()
    assert claims["sub"] == local["sub"] and claims["idp"] == PROVIDER_ID, (claims, local)

    click(chrome, rows[0].find_element(By.XPATH, ".//button[normalize-space()='Unlink']"))
    notice = WebDriverWait(chrome, TIMEOUT).until(expected_conditions.visibility_of_element_located((By.CSS_SELECTOR, "[role=status]")))
    assert notice.text == f"{PROVIDER_NAME} was unlinked. It can no longer sign in to your account.", notice.text
    assert chrome.find_element(By.ID, "no-links")
    assert chrome.find_element(By.XPATH, f"//button[normalize-space()='Link {PROVIDER_NAME}']")
    other = english_chrome()
    try:
        after, _ = federated_sign_in(other, server, glewlwyd, glewlwyd.user, glewlwyd.password)
    finally:
        other.quit()
    assert after["sub"] != local["sub"], "unlinked: Corp SSO signs in to an account of its own, not Lina's"
    print("account screenshots:", shots.directory)
