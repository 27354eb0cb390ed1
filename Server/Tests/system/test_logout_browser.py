"""Form Post, Front-Channel and Back-Channel Logout in headless Chromium against the real `latchkey` binary, with a
relying party played by a small HTTP server on another loopback origin (as the OpenID conformance suite plays one):

- `oidcc-form-post-basic`-like: the authorization response reaches the relying party as a POST made by the browser
  itself, from a page that submits under the server's strict CSP (no inline script);
- `oidcc-frontchannel-rp-initiated-logout`-like: signing out at the server loads the relying party's
  `frontchannel_logout_uri` in a frame with `iss` and `sid`, then the browser continues to the registered
  `post_logout_redirect_uri` with `state`;
- `oidcc-backchannel-rp-initiated-logout`-like: the server's delivery loop POSTs a `logout_token` whose RS256 signature
  is checked here with `cryptography` against the published JWKS (an implementation independent of the server's), with
  the claims the specification asks for and no `nonce`."""
import base64
import json
import os
import shutil
import tempfile
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import DEMO_PASSWORD, DEMO_USER, Server, new_chrome, pkce_pair

WAIT = 30  # seconds: the longest any step may take on a loaded machine before it is a failure


class RelyingParty:
    """The relying party's endpoints on 127.0.0.1: records what reaches each, and wakes the test when it does."""

    def __init__(self):
        self.received = {}
        self.events = {name: threading.Event() for name in ["callback", "frontchannel", "backchannel", "signed-out"]}
        party = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def record(self, name, payload):
                party.received.setdefault(name, []).append(payload)
                party.events[name].set()
                body = f"<!doctype html><title>{name}</title><p id='rp'>{name}</p>".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                url = urllib.parse.urlparse(self.path)
                name = url.path.strip("/")
                if name not in party.events:
                    self.send_error(404)
                    return
                self.record(name, {"query": urllib.parse.parse_qs(url.query), "headers": dict(self.headers)})

            def do_POST(self):
                url = urllib.parse.urlparse(self.path)
                name = url.path.strip("/")
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length).decode()
                if name not in party.events:
                    self.send_error(404)
                    return
                self.record(name, {"form": urllib.parse.parse_qs(body), "headers": dict(self.headers)})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def wait(self, name):
        assert self.events[name].wait(WAIT), f"nothing reached the relying party's /{name} in {WAIT} s"
        return self.received[name][-1]

    def close(self):
        self.httpd.shutdown()


@pytest.fixture
def party():
    rp = RelyingParty()
    yield rp
    rp.close()


@pytest.fixture
def logout_server(party):
    workdir = tempfile.mkdtemp(prefix="latchkey-logout-")
    config = os.path.join(workdir, "latchkey.json")
    with open(config, "w") as f:
        json.dump({"development": True, "demo": True, "clients": [{
            "client_id": "rp", "name": "Relying party", "app_type": "browser",
            "redirect_uris": [party.base + "/callback"], "post_logout_redirect_uris": [party.base + "/signed-out"],
            "frontchannel_logout_uri": party.base + "/frontchannel", "frontchannel_logout_session_required": True,
            "backchannel_logout_uri": party.base + "/backchannel", "backchannel_logout_session_required": True}]}, f)
    server = Server(workdir, args=["--config", config]).start()
    yield server
    server.stop()
    shutil.rmtree(workdir, ignore_errors=True)


def b64decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verified_claims(server, token):
    """The claims of an RS256 JWT after checking its signature with `cryptography` against the server's JWKS."""
    header_b64, payload_b64, signature_b64 = token.split(".")
    header = json.loads(b64decode(header_b64))
    assert header["alg"] == "RS256", header
    keys = requests.get(server.base + "/oauth2/jwks", timeout=10).json()["keys"]
    jwk = next(k for k in keys if k["kid"] == header["kid"])
    public = rsa.RSAPublicNumbers(int.from_bytes(b64decode(jwk["e"]), "big"), int.from_bytes(b64decode(jwk["n"]), "big")).public_key()
    public.verify(b64decode(signature_b64), f"{header_b64}.{payload_b64}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return header, json.loads(b64decode(payload_b64))


def test_form_post_then_front_and_back_channel_logout(logout_server, party):
    server = logout_server
    browser = new_chrome()
    try:
        # Sign in with response_mode=form_post: the browser POSTs the code to the relying party by itself.
        verifier, challenge = pkce_pair()
        params = {"response_type": "code", "client_id": "rp", "redirect_uri": party.base + "/callback",
                  "scope": "openid profile", "state": "st-1", "nonce": "n-1", "response_mode": "form_post",
                  "code_challenge": challenge, "code_challenge_method": "S256"}
        browser.get(server.base + "/oauth2/authorize?" + urllib.parse.urlencode(params))
        assert "/login?request=" in browser.current_url, browser.current_url
        browser.find_element(By.ID, "username").send_keys(DEMO_USER)
        browser.find_element(By.ID, "password").send_keys(DEMO_PASSWORD)
        browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]").click()
        posted = party.wait("callback")["form"]
        assert posted["state"] == ["st-1"] and posted["iss"] == [server.base], posted
        assert "code" not in urllib.parse.urlparse(browser.current_url).query, "the code never travels in an address"
        tokens = requests.post(server.base + "/oauth2/token", data={
            "grant_type": "authorization_code", "code": posted["code"][0], "redirect_uri": party.base + "/callback",
            "client_id": "rp", "code_verifier": verifier}, timeout=10)
        assert tokens.status_code == 200, tokens.text
        id_token = tokens.json()["id_token"]
        _, id_claims = verified_claims(server, id_token)
        sid = id_claims["sid"]

        # Sign out at the server: the page frames the front-channel URI, then goes on to the registered redirect.
        logout = {"id_token_hint": id_token, "post_logout_redirect_uri": party.base + "/signed-out", "state": "bye"}
        browser.get(server.base + "/oauth2/logout?" + urllib.parse.urlencode(logout))
        framed = party.wait("frontchannel")["query"]
        assert framed == {"iss": [server.base], "sid": [sid]}, framed
        WebDriverWait(browser, WAIT).until(lambda b: b.current_url.startswith(party.base + "/signed-out"))
        assert urllib.parse.parse_qs(urllib.parse.urlparse(browser.current_url).query) == {"state": ["bye"]}
        assert party.received["signed-out"][-1]["query"] == {"state": ["bye"]}

        # Back-channel: the binary's delivery loop POSTs a logout token.
        notice = party.wait("backchannel")
        assert notice["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
        assert list(notice["form"]) == ["logout_token"]
        header, claims = verified_claims(server, notice["form"]["logout_token"][0])
        assert header["typ"] == "logout+jwt"
        assert claims["iss"] == server.base and claims["aud"] == "rp" and claims["sub"] == id_claims["sub"]
        assert claims["sid"] == sid and "nonce" not in claims and claims["jti"]
        assert claims["events"] == {"http://schemas.openid.net/event/backchannel-logout": {}}
        assert 0 < claims["exp"] - claims["iat"] <= 120
        assert len(party.received["backchannel"]) == 1
    finally:
        browser.quit()
