"""The account page in headless Chromium against the real `latchkey` binary: a person finds it from the server's root
page, signs in through the hosted page, edits the profile, changes the password, signs out everywhere else, removes a
connected app's access, downloads their data and deletes the account; the same pages in Arabic, right to left; a page
opened through single sign-on asks "Confirm it's you" before the download or the deletion; a form posted from another
site changes nothing; an authenticator app set up from the page's QR code (decoded by zxing-cpp), recovery codes, and
the next sign-in answered with one; a passkey created on the page with Chromium's virtual authenticator, signing in
on the hosted page, and removed. Every page is captured in English and in Arabic (set LATCHKEY_ACCOUNT_SCREENSHOTS
to a directory to keep the images)."""
import base64
import hashlib
import hmac
import io
import json
import os
import re
import shutil
import struct
import tempfile
import time
import urllib.parse

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

import zxingcpp
from PIL import Image

from conftest import (DEMO_PASSWORD, DEMO_USER, REDIRECT, Server, Shots, add_virtual_authenticator, click, new_chrome, poll, sign_in_with,
                      without_conditional_mediation)

LAYLA = "layla@example.com"
LAYLA_PASSWORD = "layla's long account password"
NEW_PASSWORD = "a brand new demo passphrase"


@pytest.fixture
def account_server():
    workdir = tempfile.mkdtemp(prefix="latchkey-account-")
    config = os.path.join(workdir, "latchkey.json")
    with open(config, "w") as f:
        # A day of recent sign-in: the run never depends on how long Chromium takes (the 5-minute default is tested in
        # Swift with a frozen clock). "Field notes" is a third-party application: signing in to it asks for consent.
        json.dump({"development": True, "demo": True, "recent_auth_seconds": 86400,
                   "users": [{"username": LAYLA, "password": LAYLA_PASSWORD,
                              "claims": {"email": LAYLA, "email_verified": "true", "given_name": "ليلى", "family_name": "حداد"}}],
                   "clients": [{"client_id": "field-notes", "name": "Field notes", "redirect_uris": [REDIRECT],
                                "scopes": ["openid", "profile", "offline_access"], "third_party": True}]}, f)
    server = Server(workdir, args=["--config", config]).start()
    yield server
    server.stop()
    shutil.rmtree(workdir, ignore_errors=True)


def account_browser(languages):
    browser = new_chrome(languages)
    browser.set_window_size(1280, 1400)
    return browser


def sign_in_from_home(browser, server, username, password):
    """The root page, its link to the account page, the hosted sign-in, "Not now" on the passkey offer."""
    browser.get(server.base + "/")
    click(browser, browser.find_element(By.CSS_SELECTOR, "main a[href='/account']"))
    assert "/login?request=" in browser.current_url, browser.current_url
    browser.find_element(By.ID, "username").send_keys(username)
    browser.find_element(By.ID, "password").send_keys(password)
    click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]"))
    if "/passkey-offer" in browser.current_url:
        click(browser, browser.find_element(By.ID, "not-now"))
    assert browser.current_url.endswith("/account/profile"), browser.current_url


def go(browser, server, section):
    click(browser, browser.find_element(By.CSS_SELECTOR, f"nav a[href='/account/{section}']"))
    assert browser.current_url.endswith("/account/" + section), browser.current_url
    assert browser.find_element(By.CSS_SELECTOR, f"nav a[href='/account/{section}']").get_attribute("aria-current") == "page"


def status(browser):
    return browser.find_element(By.CSS_SELECTOR, "[role=status]").text


def test_a_person_manages_their_account_end_to_end(account_server):
    server = account_server
    shots = Shots("LATCHKEY_ACCOUNT_SCREENSHOTS", "latchkey-account-shots-")
    # The person signed in to a third-party application and consented to it: a second session, a connected app.
    tokens = sign_in_with(server, "field-notes")
    downloads = tempfile.mkdtemp(prefix="latchkey-account-downloads-")
    browser = account_browser("en")
    try:
        browser.get(server.base + "/")
        shots.take(browser, "home-en")
        # Keyboard users reach "Skip to content" first on the account page.
        sign_in_from_home(browser, server, DEMO_USER, DEMO_PASSWORD)
        assert len(browser.find_elements(By.TAG_NAME, "h1")) == 1
        shots.take(browser, "profile-en")
        browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)
        assert browser.switch_to.active_element.get_attribute("class") == "skip"

        field = browser.find_element(By.ID, "attr-given_name")
        field.clear()
        field.send_keys("Dana")
        click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/account/profile'] button[type=submit]"))
        assert status(browser) == "Your profile was saved."
        assert browser.find_element(By.ID, "attr-given_name").get_attribute("value") == "Dana"

        go(browser, server, "security")
        browser.find_element(By.ID, "current-password").send_keys("not my password")
        browser.find_element(By.ID, "new-password").send_keys(NEW_PASSWORD)
        click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/account/security/password'] button[type=submit]"))
        assert browser.find_element(By.CSS_SELECTOR, "[role=alert]").text == "The current password is incorrect."
        shots.take(browser, "security-error-en")
        browser.find_element(By.ID, "current-password").send_keys(DEMO_PASSWORD)
        browser.find_element(By.ID, "new-password").send_keys(NEW_PASSWORD)
        click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/account/security/password'] button[type=submit]"))
        assert "Your password was changed." in status(browser)
        # The password change ended every other session: the application's refresh token is refused.
        refreshed = requests.post(server.base + "/oauth2/token", data={
            "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": "field-notes"}, timeout=10)
        assert refreshed.status_code == 400, refreshed.text

        # Another session (the application again, with the new password), then "Sign out everywhere else".
        tokens = sign_in_with(server, "field-notes", password=NEW_PASSWORD)
        go(browser, server, "sessions")
        rows = browser.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")
        assert len(rows) == 2 and "This browser" in rows[0].text and "Field notes" in rows[1].text, [r.text for r in rows]
        shots.take(browser, "sessions-en")
        click(browser, browser.find_element(By.XPATH, "//button[normalize-space()='Sign out everywhere else']"))
        assert status(browser) == "You are signed out everywhere else."
        assert len(browser.find_elements(By.CSS_SELECTOR, "#sessions tbody tr")) == 1

        go(browser, server, "applications")
        consents = browser.find_element(By.ID, "consents")
        assert "Field notes" in consents.text and "See your name, username and profile details" in consents.text, consents.text
        shots.take(browser, "applications-en")
        click(browser, consents.find_element(By.XPATH, ".//button[normalize-space()='Remove access']"))
        assert status(browser) == "Field notes no longer has access to your account."

        go(browser, server, "data")
        assert not browser.find_elements(By.CSS_SELECTOR, "fieldset[disabled]"), "a fresh sign-in: nothing to confirm"
        shots.take(browser, "data-en")
        browser.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
        browser.find_element(By.CSS_SELECTOR, "form[action='/account/data/export'] button").click()
        path = os.path.join(downloads, "account-data.json")
        poll(lambda: os.path.exists(path) and os.path.getsize(path) > 0, lambda done: done, within=20)
        with open(path) as f:
            document = json.load(f)
        assert document["profile"]["username"] == DEMO_USER, document["profile"]
        assert DEMO_PASSWORD not in json.dumps(document) and NEW_PASSWORD not in json.dumps(document)

        browser.find_element(By.ID, "delete-confirm").click()
        click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/account/data/delete'] button[type=submit]"))
        assert browser.find_element(By.TAG_NAME, "h1").text == "Your account was deleted"
        shots.take(browser, "deleted-en")
        browser.get(server.base + "/account/profile")
        assert "/login?request=" in browser.current_url, "signed out everywhere"
    finally:
        browser.quit()
        shutil.rmtree(downloads, ignore_errors=True)

    browser = account_browser("ar")
    try:
        browser.get(server.base + "/")
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("dir") == "rtl"
        shots.take(browser, "home-ar")
        sign_in_from_home(browser, server, LAYLA, LAYLA_PASSWORD)
        html = browser.find_element(By.TAG_NAME, "html")
        assert html.get_attribute("lang") == "ar" and html.get_attribute("dir") == "rtl"
        # Right to left: the heading hugs the right edge.
        heading = browser.find_element(By.TAG_NAME, "h1")
        width = browser.execute_script("return document.documentElement.clientWidth")
        assert heading.rect["x"] + heading.rect["width"] > width - 80, (heading.rect, width)
        shots.take(browser, "profile-ar")

        # A form posted from another site, with this session's real CSRF token, right after a fresh sign-in: the
        # browser sends no account cookie with it (SameSite=Lax) and nothing changes.
        csrf = browser.find_element(By.CSS_SELECTOR, "form[action='/account/profile'] input[name=csrf]").get_attribute("value")
        forged = "data:text/html," + urllib.parse.quote(
            f'<form method="post" action="{server.base}/account/data/delete"><input name="confirm" value="1">'
            f'<input name="csrf" value="{csrf}"><button id="go">go</button></form>')
        browser.get(forged)
        click(browser, browser.find_element(By.ID, "go"))
        browser.get(server.base + "/account/profile")
        assert browser.find_element(By.ID, "attr-given_name").get_attribute("value") == "ليلى", "the account is still there"
        for section in ["security", "passkeys", "linked", "sessions", "applications", "data"]:
            go(browser, server, section)
            for field in browser.find_elements(By.CSS_SELECTOR, "main input:not([type=hidden]):not([hidden])"):
                assert browser.find_elements(By.CSS_SELECTOR, f"label[for='{field.get_attribute('id')}']"), field.get_attribute("id")
            shots.take(browser, section + "-ar")
        click(browser, browser.find_element(By.CSS_SELECTOR, "header form button[type=submit]"))
        shots.take(browser, "signed-out-ar")

        # Opened again through single sign-on: no password asked, but the download and the deletion wait for
        # "Confirm it's you".
        browser.get(server.base + "/account/data")
        assert browser.current_url.endswith("/account/data"), browser.current_url
        assert browser.find_elements(By.CSS_SELECTOR, "fieldset[disabled]")
        shots.take(browser, "data-confirm-ar")

        browser.get(server.base + "/account/data")
        click(browser, browser.find_element(By.CSS_SELECTOR, "#fresh a"))
        assert "/login?request=" in browser.current_url, "Confirm it's you asks for the password again"
    finally:
        browser.quit()
    print("account screenshots:", shots.directory)
    assert len(shots.taken) == 17


def totp(base32_key, at):
    """RFC 6238 (SHA-1, 6 digits, 30 s) for the key the page shows: the authenticator app's side, written here."""
    key = base64.b32decode(base32_key + "=" * (-len(base32_key) % 8))
    digest = hmac.new(key, struct.pack(">Q", int(at) // 30), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


def scanned(browser):
    """What an authenticator app reads from the page's QR code: the element's pixels, decoded by zxing-cpp."""
    image = Image.open(io.BytesIO(browser.find_element(By.CSS_SELECTOR, ".qr svg").screenshot_as_png))
    results = zxingcpp.read_barcodes(image)
    assert len(results) == 1, results
    return results[0].text


@pytest.mark.parametrize("language,username,password", [("en", DEMO_USER, DEMO_PASSWORD), ("ar", LAYLA, LAYLA_PASSWORD)])
def test_second_steps_set_up_from_the_qr_code(account_server, language, username, password):
    """An authenticator app set up from the QR code (decoded by zxing-cpp, checked against the key and the link), its
    first code (computed here from the decoded key), recovery codes shown once, and the next sign-in asking for the
    step, answered with a recovery code."""
    server = account_server
    shots = Shots("LATCHKEY_ACCOUNT_SCREENSHOTS", "latchkey-account-shots-")
    browser = account_browser(language)
    try:
        sign_in_from_home(browser, server, username, password)
        go(browser, server, "security")
        assert browser.find_elements(By.ID, "no-factors")
        click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/account/security/totp'] button"))
        uri = scanned(browser)
        link = browser.find_element(By.CSS_SELECTOR, "a[href^='otpauth:']").get_attribute("href")
        assert uri == link, (uri, link)
        query = urllib.parse.parse_qs(urllib.parse.urlparse(uri).query)
        key = query["secret"][0]
        assert browser.find_element(By.ID, "totp-key").text.replace(" ", "") == key
        assert urllib.parse.unquote(urllib.parse.urlparse(uri).path).endswith(":" + username), uri
        shots.take(browser, "totp-" + language)
        # The code of this moment on the real clocks of both sides. A machine too busy to post it within its step gets
        # "That code is not right" and the same set-up, and types the next code, as a person would.
        for _ in range(3):
            browser.find_element(By.ID, "totp-code").send_keys(totp(key, time.time()))
            click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/account/security/totp/verify'] button[type=submit]"))
            if not browser.find_elements(By.ID, "totp-code"):
                break
        assert browser.current_url.split("?")[0].endswith("/account/security"), browser.current_url
        assert len(browser.find_elements(By.CSS_SELECTOR, "#factors tbody tr")) == 1

        click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/account/security/recovery-codes'] button"))
        codes = [item.text for item in browser.find_elements(By.CSS_SELECTOR, "#recovery-codes li")]
        assert len(codes) == 10 and len(set(codes)) == 10, codes
        shots.take(browser, "recovery-codes-" + language)
        click(browser, browser.find_element(By.CSS_SELECTOR, "main a[href='/account/security']"))
        assert not browser.find_elements(By.ID, "recovery-codes"), "shown once"
        shots.take(browser, "security-factors-" + language)

        # Signed out and in again: the hosted page asks for the step; a recovery code answers it once.
        click(browser, browser.find_element(By.CSS_SELECTOR, "header form button[type=submit]"))
        browser.delete_all_cookies()
        browser.get(server.base + "/account/security")
        browser.find_element(By.ID, "username").send_keys(username)
        browser.find_element(By.ID, "password").send_keys(password)
        click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]"))
        assert browser.find_elements(By.ID, "otp"), "the second step is asked for"
        browser.find_element(By.CSS_SELECTOR, "#recovery summary").click()
        browser.find_element(By.ID, "recovery-code").send_keys(codes[0])
        click(browser, browser.find_element(By.ID, "verify-recovery"))
        if "/passkey-offer" in browser.current_url:
            click(browser, browser.find_element(By.ID, "not-now"))
        assert browser.current_url.endswith("/account/security"), browser.current_url
        summary = browser.find_element(By.ID, "recovery-summary").text
        assert re.findall(r"\d+", summary)[:2] == ["9", "10"], summary
    finally:
        browser.quit()
    print("account screenshots:", shots.directory)
    assert len(shots.taken) == 3


def test_a_passkey_created_on_the_account_page_signs_in(account_server):
    """The page's script with Chromium's virtual authenticator: a passkey created and named, then the hosted page's
    passkey button signs in with it (the page shows when it was last used), and it is removed."""
    server = account_server
    shots = Shots("LATCHKEY_ACCOUNT_SCREENSHOTS", "latchkey-account-shots-")
    browser = account_browser("en")
    try:
        without_conditional_mediation(browser)  # the hosted page's button, not the autofill request
        authenticator = add_virtual_authenticator(browser)
        sign_in_from_home(browser, server, DEMO_USER, DEMO_PASSWORD)
        go(browser, server, "passkeys")
        assert browser.find_element(By.ID, "no-passkeys")
        assert browser.find_element(By.ID, "add-passkey").is_displayed(), "the script shows the form where passkeys work"
        assert not browser.find_element(By.ID, "passkey-unsupported").is_displayed()
        browser.find_element(By.ID, "passkey-name").send_keys("Test laptop")
        click(browser, browser.find_element(By.ID, "add-passkey-button"))
        assert status(browser) == "Your passkey was created. You can now sign in with it."
        rows = browser.find_elements(By.CSS_SELECTOR, "#passkeys tbody tr")
        assert len(rows) == 1 and "Test laptop" in rows[0].text and "Not yet" in rows[0].text, [r.text for r in rows]
        stored = browser.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
        assert len(stored) == 1 and stored[0]["isResidentCredential"], stored
        shots.take(browser, "passkeys-en")
        # The same authenticator again: the browser refuses (the account's passkeys are excluded) and the page says why,
        # staying where it is.
        browser.find_element(By.ID, "add-passkey-button").click()
        refusal = poll(lambda: browser.find_element(By.ID, "passkey-error"), lambda found: found.is_displayed(), within=20)
        assert refusal.text == "This passkey is already on your account.", refusal.text
        assert refusal.get_attribute("role") == "alert"

        click(browser, browser.find_element(By.CSS_SELECTOR, "header form button[type=submit]"))
        browser.delete_all_cookies()
        browser.get(server.base + "/account/passkeys")
        assert "/login?request=" in browser.current_url, browser.current_url
        browser.find_element(By.ID, "passkey").click()
        rows = poll(lambda: browser.find_elements(By.CSS_SELECTOR, "#passkeys tbody tr"), lambda found: len(found) == 1, within=20)
        assert browser.current_url.endswith("/account/passkeys"), browser.current_url
        row = rows[0]
        assert "Not yet" not in row.text, "signed in with it: the page shows when " + row.text

        click(browser, row.find_element(By.XPATH, ".//button[normalize-space()='Remove']"))
        assert status(browser) == "The passkey was removed. It can no longer sign in to your account."
        assert browser.find_element(By.ID, "no-passkeys")
    finally:
        browser.quit()
    print("account screenshots:", shots.directory)
