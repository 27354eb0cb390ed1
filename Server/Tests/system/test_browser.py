"""Headless Chromium through the hosted pages: sign in, silent SSO, prompt=login, end-session."""
import urllib.parse

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from conftest import DEMO_PASSWORD, DEMO_USER, authorize_url, pkce_pair, redeem

# The redirect target is never served: the test reads the URL the browser was sent to.
REDIRECT = "http://127.0.0.1:9/callback"


def session_cookie(browser):
    """The SSO cookie, read through DevTools (Selenium's get_cookie only sees the current page's origin)."""
    cookies = browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
    return next((c for c in cookies if c["name"] == "lk_session"), None)


def wait_for_redirect(browser, prefix, timeout=10):
    import time
    deadline = time.time() + timeout
    while time.time() < deadline:
        if browser.current_url.startswith(prefix):
            return urllib.parse.parse_qs(urllib.parse.urlparse(browser.current_url).query)
        time.sleep(0.05)
    raise AssertionError(f"browser did not reach {prefix}; it is at {browser.current_url}")


def open_authorize(browser, server, state, **extra):
    verifier, challenge = pkce_pair()
    try:
        browser.get(authorize_url(server, REDIRECT, challenge, state, **extra))
    except Exception:
        pass  # the final hop to 127.0.0.1:9 fails to load; the URL is what matters
    return verifier


def test_sign_in_sso_prompt_login_and_logout(browser, server):
    # 1. First sign-in shows the hosted form; a person fills it in.
    verifier = open_authorize(browser, server, "first")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sign in"
    assert browser.find_element(By.CSS_SELECTOR, "label[for=username]").text
    browser.find_element(By.ID, "username").send_keys(DEMO_USER)
    browser.find_element(By.ID, "password").send_keys("wrong password")
    browser.find_element(By.ID, "submit").click()
    # click() does not wait for the POST's page load: wait for the re-rendered form's alert.
    alert = WebDriverWait(browser, 10).until(expected_conditions.visibility_of_element_located((By.ID, "form-error")))
    assert "incorrect" in alert.text
    browser.find_element(By.ID, "password").send_keys(DEMO_PASSWORD)
    try:
        browser.find_element(By.ID, "submit").click()
    except Exception:
        pass
    query = wait_for_redirect(browser, REDIRECT)
    assert query["state"] == ["first"]
    assert query["iss"] == [server.base]
    tokens = redeem(server, query["code"][0], REDIRECT, verifier)
    assert tokens.status_code == 200
    id_token = tokens.json()["id_token"]
    cookie = session_cookie(browser)
    assert cookie and cookie["httpOnly"] and cookie["sameSite"] == "Lax"
    assert not cookie["secure"], "plain-http loopback development instance"

    # 2. Silent SSO: no form, straight back with a code.
    verifier = open_authorize(browser, server, "second")
    query = wait_for_redirect(browser, REDIRECT)
    assert query["state"] == ["second"]
    assert redeem(server, query["code"][0], REDIRECT, verifier).status_code == 200

    # 3. prompt=login shows the form despite the session.
    open_authorize(browser, server, "third", prompt="login")
    assert browser.find_element(By.ID, "password")

    # 4. End-session with the ID-token hint signs the browser out and returns to a registered URI.
    logout = server.base + "/oauth2/logout?" + urllib.parse.urlencode(
        {"id_token_hint": id_token, "post_logout_redirect_uri": "http://127.0.0.1:9/logout", "state": "bye"})
    try:
        browser.get(logout)
    except Exception:
        pass
    assert wait_for_redirect(browser, "http://127.0.0.1:9/logout")["state"] == ["bye"]
    assert session_cookie(browser) is None

    # 5. After sign-out the form is back.
    open_authorize(browser, server, "fourth")
    assert browser.find_element(By.ID, "username")
