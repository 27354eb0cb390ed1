"""The admin console in headless Chromium against the real `latchkey` binary: an operator (admin role, emailed codes as
second factor) signs in through the hosted page, creates an application and a person signs in with it, finds a
locked-out account through the audit trail and lifts the lockout, ends the account's sessions and sees its refresh
token refused; an account without the admin role and a second factor cannot get in. Every page is captured in English
and in Arabic (set LATCHKEY_CONSOLE_SCREENSHOTS to a directory to keep the images)."""
import json
import os
import re
import shutil
import tempfile
import urllib.parse

import pytest
import requests
from selenium.webdriver.common.by import By

from conftest import (DEMO_PASSWORD, DEMO_USER, REDIRECT, Server, Shots, click, latest_code, new_chrome, pkce_pair, sign_in_with,
                      wait_for_next_page)

OPERATOR = "ops@example.com"
OPERATOR_PASSWORD = "the operator's console password"


@pytest.fixture
def console_server():
    workdir = tempfile.mkdtemp(prefix="latchkey-console-")
    config = os.path.join(workdir, "latchkey.json")
    with open(config, "w") as f:
        json.dump({"development": True, "demo": True, "users": [{
            "username": OPERATOR, "password": OPERATOR_PASSWORD, "roles": ["admin"], "second_factor": "email",
            "claims": {"email": OPERATOR, "email_verified": "true", "name": "Operator"}}]}, f)
    server = Server(workdir, args=["--config", config]).start()
    yield server
    server.stop()
    shutil.rmtree(workdir, ignore_errors=True)


def sign_in_to_console(browser, server, username=OPERATOR, password=OPERATOR_PASSWORD):
    browser.get(server.base + "/admin")
    assert "/login?request=" in browser.current_url, browser.current_url
    browser.find_element(By.ID, "username").send_keys(username)
    browser.find_element(By.ID, "password").send_keys(password)
    click(browser, browser.find_element(By.CSS_SELECTOR, "form[action='/login'] button[type=submit]"))


def finish_second_factor(browser, server, recipient=OPERATOR):
    field = browser.find_element(By.NAME, "otp")
    field.send_keys(latest_code(server, recipient))
    page = browser.find_element(By.TAG_NAME, "html")
    field.submit()
    wait_for_next_page(browser, page)
    assert browser.current_url.endswith("/admin/applications"), browser.current_url


def fail_passwords(server, username, times):
    for _ in range(times):
        session = requests.Session()
        verifier, challenge = pkce_pair()
        params = {"response_type": "code", "client_id": "latchkey-demo", "redirect_uri": REDIRECT, "scope": "openid",
                  "state": "st", "code_challenge": challenge, "code_challenge_method": "S256"}
        r = session.get(server.base + "/oauth2/authorize?" + urllib.parse.urlencode(params), allow_redirects=False, timeout=20)
        page = session.get(server.base + r.headers["Location"], timeout=20)
        fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page.text))
        session.post(server.base + "/login", data={**fields, "username": username, "password": "not the password"},
                     allow_redirects=False, timeout=20)


def console_browser(languages):
    browser = new_chrome(languages)
    browser.set_window_size(1280, 1400)
    return browser


def test_an_operator_runs_the_console_end_to_end(console_server):
    server = console_server
    shots = Shots("LATCHKEY_CONSOLE_SCREENSHOTS", "latchkey-console-shots-")
    browser = console_browser("en")
    try:
        sign_in_to_console(browser, server)
        finish_second_factor(browser, server)
        assert browser.find_element(By.TAG_NAME, "h1").text == "Applications"
        assert "latchkey-demo" in browser.page_source
        shots.take(browser, "applications-en")

        # A new application, and a person signs in with it at once.
        click(browser, browser.find_element(By.LINK_TEXT, "New application"))
        shots.take(browser, "application-new-en")
        browser.find_element(By.ID, "name").send_keys("Field notes")
        browser.find_element(By.ID, "redirect_uris").send_keys(REDIRECT)
        browser.find_element(By.ID, "scope").clear()
        browser.find_element(By.ID, "scope").send_keys("openid profile offline_access")
        click(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
        client_id = browser.find_element(By.ID, "client-id").text
        assert client_id.startswith("lk-")
        shots.take(browser, "application-created-en")
        tokens = sign_in_with(server, client_id)
        assert requests.get(server.base + "/oauth2/userinfo", headers={"Authorization": "Bearer " + tokens["access_token"]},
                            timeout=10).status_code == 200
        click(browser, browser.find_element(By.LINK_TEXT, "Open the application"))
        shots.take(browser, "application-detail-en")

        # The demo account gets locked out; the audit trail shows it; the operator lifts the lockout.
        fail_passwords(server, DEMO_USER, 5)
        click(browser, browser.find_element(By.LINK_TEXT, "Audit trail"))
        browser.find_element(By.CSS_SELECTOR, "#type option[value='account.locked']").click()
        click(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button[type=submit]"))
        rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
        assert len(rows) == 1 and "account.locked" in rows[0].text, [r.text for r in rows]
        shots.take(browser, "audit-en")
        click(browser, rows[0].find_element(By.CSS_SELECTOR, "a[href^='/admin/users/']"))
        assert browser.find_element(By.TAG_NAME, "h1").text == DEMO_USER
        shots.take(browser, "user-en")
        click(browser, browser.find_element(By.XPATH, "//button[normalize-space()='Lift the lockout']"))
        assert "The lockout was lifted." in browser.find_element(By.CSS_SELECTOR, "[role=status]").text

        # The account's consent to the registered application, withdrawn by the operator.
        consents = browser.find_element(By.ID, "consents")
        assert client_id in consents.text and "offline_access openid profile" in consents.text, consents.text
        click(browser, consents.find_element(By.XPATH, ".//button[normalize-space()='Withdraw']"))
        assert "The consent was withdrawn" in browser.find_element(By.CSS_SELECTOR, "[role=status]").text
        assert client_id not in browser.find_element(By.ID, "consents").text

        # End the account's sessions: its refresh token is refused from then on.
        click(browser, browser.find_element(By.XPATH, "//button[normalize-space()='End every session']"))
        assert "The sessions were ended." in browser.find_element(By.CSS_SELECTOR, "[role=status]").text
        refreshed = requests.post(server.base + "/oauth2/token", data={
            "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}, timeout=10)
        assert refreshed.status_code == 400 and refreshed.json()["error"] == "invalid_grant", refreshed.text

        click(browser, browser.find_element(By.LINK_TEXT, "Users"))
        shots.take(browser, "users-en")
        # Keyboard users can skip straight to the content; every field has a label.
        assert browser.find_element(By.CSS_SELECTOR, "a.skip").get_attribute("href").endswith("#content")
        for field in browser.find_elements(By.CSS_SELECTOR, "main input:not([type=hidden]), main select, main textarea"):
            assert browser.find_elements(By.CSS_SELECTOR, f"label[for='{field.get_attribute('id')}']"), field.get_attribute("id")
    finally:
        browser.quit()

    # The same pages in Arabic, right to left.
    browser = console_browser("ar")
    try:
        sign_in_to_console(browser, server)
        finish_second_factor(browser, server)
        assert browser.find_element(By.TAG_NAME, "html").get_attribute("dir") == "rtl"
        shots.take(browser, "applications-ar")
        for path, name in [("/admin/applications/new", "application-new-ar"), (f"/admin/applications/{client_id}", "application-detail-ar"),
                           ("/admin/users", "users-ar"), ("/admin/audit", "audit-ar")]:
            browser.get(server.base + path)
            assert browser.find_element(By.TAG_NAME, "html").get_attribute("lang") == "ar"
            shots.take(browser, name)
        click(browser, browser.find_element(By.CSS_SELECTOR, "tbody tr a[href^='/admin/users/']"))
        shots.take(browser, "user-ar")
        user_page = browser.current_url
        browser.get(server.base + "/admin/applications/new")
        browser.find_element(By.ID, "name").send_keys("ملاحظات")
        browser.find_element(By.ID, "redirect_uris").send_keys(REDIRECT)
        click(browser, browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]"))
        assert browser.find_element(By.ID, "client-id").text.startswith("lk-")
        shots.take(browser, "application-created-ar")

        # A form posted from another site carries no console cookie (SameSite=Strict) and changes nothing.
        forged = "data:text/html," + urllib.parse.quote(
            f'<form method="post" action="{user_page}/disable"><input name="csrf" value="x"><button id="go">go</button></form>')
        browser.get(forged)
        click(browser, browser.find_element(By.ID, "go"))
        browser.get(user_page)
        assert browser.find_elements(By.CSS_SELECTOR, "form[action$='/disable']"), "the account is still enabled"

        click(browser, browser.find_element(By.CSS_SELECTOR, "header form button[type=submit]"))
        shots.take(browser, "signed-out-ar")
    finally:
        browser.quit()
    print("console screenshots:", shots.directory)
    assert len(shots.taken) == 15


def test_an_account_without_admin_role_or_second_factor_is_refused(console_server):
    server = console_server
    browser = console_browser("en")
    try:
        # The demo account has neither: the hosted page refuses the console's sign-in (it requires a second factor).
        sign_in_to_console(browser, server, DEMO_USER, DEMO_PASSWORD)
        assert "/admin/applications" not in browser.current_url
        assert not [c for c in browser.get_cookies() if c["name"].endswith("lk_console")]
        browser.get(server.base + "/admin/users")
        assert "/login?request=" in browser.current_url, "still not signed in to the console"
    finally:
        browser.quit()
