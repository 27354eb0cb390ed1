"""The `latchkey` CLI as a user runs it: login --no-browser (headless Chromium completes the sign-in at the printed
URL, which exercises webviewLogin through the loopback user agent), whoami, token, logout, and clear failures."""
import os
import urllib.parse
import stat
import subprocess
import tempfile

import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import BINARY, DEMO_PASSWORD, DEMO_USER, free_port


def cli(home, *args, timeout=60):
    return subprocess.run([BINARY, *args], env={**os.environ, "LATCHKEY_HOME": home}, capture_output=True, text=True, timeout=timeout)


def test_login_whoami_token_logout(server, browser):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    login = subprocess.Popen([BINARY, "login", "--no-browser", "--issuer", server.base], env={**os.environ, "LATCHKEY_HOME": home},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = login.stdout.readline().strip()
    assert url.startswith(server.base + "/oauth2/authorize?"), url
    # Pushed (RFC 9126): the request went to /oauth2/par, the printed URL carries only its reference.
    assert "request_uri=urn%3Aietf%3Aparams%3Aoauth%3Arequest_uri%3A" in url and "code_challenge" not in url and "state=" not in url, url

    browser.get(url)  # the person opens the printed URL
    browser.find_element(By.ID, "username").send_keys(DEMO_USER)
    browser.find_element(By.ID, "password").send_keys(DEMO_PASSWORD)
    browser.find_element(By.ID, "submit").click()
    out, err = login.communicate(timeout=30)
    assert login.returncode == 0, err
    assert f"Signed in to {server.base} as {DEMO_USER}." in out
    # The loopback listener answered the browser (which may still be rendering when the CLI exits).
    WebDriverWait(browser, 10).until(lambda b: "close this window" in b.page_source)

    for path in [os.path.join(home, "profile.json")] + [os.path.join(home, "sessions", f) for f in os.listdir(os.path.join(home, "sessions"))]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path

    whoami = cli(home, "whoami")
    assert whoami.returncode == 0 and DEMO_USER in whoami.stdout and "Demo User" in whoami.stdout, whoami.stderr

    token = cli(home, "token")
    assert token.returncode == 0, token.stderr
    access = token.stdout.strip()
    assert requests.get(server.base + "/oauth2/userinfo", headers={"Authorization": "Bearer " + access}).status_code == 200

    # The sign-in happened in the browser, so logout ends the server's session there: the URL is printed (no browser
    # here), the person's browser opens it and comes back to the CLI's loopback /logout.
    logout = subprocess.Popen([BINARY, "logout", "--no-browser"], env={**os.environ, "LATCHKEY_HOME": home},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    end_session = logout.stdout.readline().strip()
    assert end_session.startswith(server.base + "/oauth2/logout?") and "post_logout_redirect_uri=http%3A%2F%2F127.0.0.1%3A" in end_session, end_session
    browser.get(end_session)
    out, err = logout.communicate(timeout=30)
    assert logout.returncode == 0, out + err
    assert "refresh token: revoked at the provider" in out and "access token: revoked at the provider" in out, out
    assert "provider session: ended at the provider" in out, out
    WebDriverWait(browser, 10).until(lambda b: "close this window" in b.page_source)
    assert requests.get(server.base + "/oauth2/userinfo", headers={"Authorization": "Bearer " + access}).status_code == 401
    # The browser's session at the server ended too: a silent sign-in there now needs a login.
    browser.get(server.base + "/oauth2/authorize?" + urllib.parse.urlencode({
        "response_type": "code", "client_id": "latchkey-demo", "redirect_uri": "http://127.0.0.1:9/callback", "scope": "openid",
        "state": "s", "prompt": "none", "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", "code_challenge_method": "S256"}))
    WebDriverWait(browser, 10).until(lambda b: "error=login_required" in b.current_url)
    after = cli(home, "token")
    assert after.returncode == 1 and "Not signed in" in after.stderr


def test_clear_failures(server):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    down = cli(home, "login", "--no-browser", "--issuer", f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 1 and "cannot reach the server" in down.stderr, down.stderr
    wrong = cli(home, "login", "--no-browser", "--issuer", server.base + "/elsewhere")
    assert wrong.returncode == 1 and "configuration problem" in wrong.stderr, wrong.stderr
    nothing = cli(home, "whoami")
    assert nothing.returncode == 1 and "Not signed in" in nothing.stderr
    for count in ("0", "10000001", "many"):
        refused = cli(home, "token", "--repeat", count)
        assert refused.returncode != 0 and "--repeat" in refused.stderr, refused.stderr
    # A repeated run without a sign-in stops at once (not ten thousand error lines).
    alone = cli(home, "token", "--repeat", "10000")
    assert alone.returncode == 1 and "Not signed in" in alone.stderr and alone.stderr.count("\n") <= 2, alone.stderr
