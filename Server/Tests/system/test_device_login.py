"""The device authorization grant (RFC 8628) as a person uses it: `latchkey login --device` prints a code and a URL,
headless Chromium opens the URL, signs in on the hosted page and allows (then, for a second run, denies) the sign-in,
and the CLI finishes on its own by polling."""
import os
import re
import subprocess
import tempfile

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conftest import BINARY, DEMO_PASSWORD, DEMO_USER


def start_device_login(server, home):
    login = subprocess.Popen([BINARY, "login", "--device", "--issuer", server.base], env={**os.environ, "LATCHKEY_HOME": home},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = login.stdout.readline().strip()
    match = re.match(r"To sign in, open (\S+) on any device and enter the code ([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})$", first)
    assert match, first
    # No link with the code in it: the demo application does not allow one, so the person types it.
    return login, match.group(1), match.group(2)


def test_device_login_allowed_then_denied(server, browser):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    login, uri, code = start_device_login(server, home)
    assert uri == server.base + "/device"

    # The person types the code on the page, signs in, checks the code on the confirmation and allows it.
    browser.get(uri)
    browser.find_element(By.ID, "user_code").send_keys(code.lower())
    browser.find_element(By.ID, "continue").click()
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "username"))
    browser.find_element(By.ID, "username").send_keys(DEMO_USER)
    browser.find_element(By.ID, "password").send_keys(DEMO_PASSWORD)
    browser.find_element(By.ID, "submit").click()
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "approve"))
    assert browser.find_element(By.ID, "device-code").text == code
    browser.find_element(By.ID, "approve").click()
    WebDriverWait(browser, 10).until(lambda b: "return to your device" in b.page_source)
    out, err = login.communicate(timeout=30)
    assert login.returncode == 0, err
    assert f"Signed in to {server.base} as {DEMO_USER}." in out
    whoami = subprocess.run([BINARY, "whoami"], env={**os.environ, "LATCHKEY_HOME": home}, capture_output=True, text=True, timeout=30)
    assert whoami.returncode == 0 and DEMO_USER in whoami.stdout, whoami.stderr

    # A second device: a link with its code leads to an empty entry page, not to the confirmation; the browser is
    # signed in already (SSO, a minute ago), so the typed code goes straight to the confirmation.
    other_home = tempfile.mkdtemp(prefix="latchkey-home-")
    second, _, second_code = start_device_login(server, other_home)
    browser.get(f"{server.base}/device?user_code={second_code}")
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "user_code"))
    assert not browser.find_elements(By.ID, "deny")
    assert browser.find_element(By.ID, "user_code").get_attribute("value") == ""
    browser.find_element(By.ID, "user_code").send_keys(second_code)
    browser.find_element(By.ID, "continue").click()
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "deny"))
    assert "This request was made" in browser.find_element(By.ID, "request-age").text
    browser.find_element(By.ID, "deny").click()
    WebDriverWait(browser, 10).until(lambda b: "denied" in b.page_source)
    out, err = second.communicate(timeout=30)
    assert second.returncode == 1 and "access_denied" in err, err
    assert not os.path.exists(os.path.join(other_home, "profile.json"))
