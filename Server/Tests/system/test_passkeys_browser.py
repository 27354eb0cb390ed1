"""Oracle: headless Chromium's WebAuthn virtual authenticator against our relying party, on http://localhost.

The browser creates a passkey through the reachFive endpoints (our server verifies Chromium's attestation), then
signs in with it from the hosted login page (our server verifies Chromium's assertion), and the authorization completes
with a code for that account: through conditional mediation (passkey AutoFill: the page signs in with nothing clicked
or typed; Chromium's virtual environment picks the credential the way a person picks it from the autofill list), and
through the "Sign in with a passkey" button in a browser without conditional mediation. After a password sign-in, an
account without a passkey is offered one ("Sign in faster next time"): Chromium makes it on the offer page, and the
next sign-in uses it."""

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from conftest import DEMO_PASSWORD, DEMO_USER, add_virtual_authenticator, authorize_url, pkce_pair, redeem, without_conditional_mediation
from test_browser import REDIRECT, session_cookie, wait_for_redirect

SIGN_UP = """
const done = arguments[arguments.length - 1];
const b64 = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
const unb64 = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((s.length + 3) % 4)), (c) => c.charCodeAt(0));
(async () => {
  const post = async (path, body) => {
    const r = await fetch(path, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
    return {status: r.status, json: await r.json()};
  };
  const options = await post("/identity/v1/webauthn/signup-options", {client_id: "latchkey-demo", origin: location.origin,
    friendly_name: "Chromium", profile: {email: arguments[0], given_name: "Chrome"}});
  if (options.status !== 200) return done({step: "options", ...options});
  const pk = options.json.options.public_key;
  const credential = await navigator.credentials.create({publicKey: {
    rp: pk.rp, user: {id: unb64(pk.user.id), name: pk.user.name, displayName: pk.user.display_name},
    challenge: unb64(pk.challenge), pubKeyCredParams: pk.pub_key_cred_params, timeout: pk.timeout,
    excludeCredentials: pk.exclude_credentials.map((c) => ({type: c.type, id: unb64(c.id)})),
    authenticatorSelection: {residentKey: pk.authenticator_selection.resident_key,
                             requireResidentKey: pk.authenticator_selection.require_resident_key,
                             userVerification: pk.authenticator_selection.user_verification},
    attestation: arguments[1]}});
  const r = credential.response;
  done(await post("/identity/v1/webauthn/signup", {webauthn_id: pk.user.id, public_key_credential: {
    id: credential.id, raw_id: b64(credential.rawId), type: credential.type,
    response: {attestation_object: b64(r.attestationObject), client_data_json: b64(r.clientDataJSON)}}}));
})().catch((e) => done({error: String(e)}));
"""


def open_login(browser, server, state):
    verifier, challenge = pkce_pair()
    browser.get(authorize_url(server, REDIRECT, challenge, state))
    WebDriverWait(browser, 10).until(expected_conditions.presence_of_element_located((By.ID, "passkey")))
    return verifier


def sign_up_in_browser(browser, email, attestation="none"):
    browser.set_script_timeout(20)
    return browser.execute_async_script(SIGN_UP, email, attestation)


def test_chromium_passkey_signup_then_conditional_sign_in(browser, server):
    authenticator = add_virtual_authenticator(browser)
    open_login(browser, server, "register")
    # The username field offers passkeys in its autofill list.
    assert browser.find_element(By.ID, "username").get_attribute("autocomplete") == "username webauthn"
    result = sign_up_in_browser(browser, "chrome@example.com")
    assert result.get("status") == 200, result
    assert result["json"]["tkn"]
    stored = browser.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    assert len(stored) == 1 and stored[0]["isResidentCredential"]

    # A fresh authorization: the page's conditional request signs the new account in, nothing clicked or typed.
    verifier = open_login(browser, server, "conditional")
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["conditional"]
    tokens = redeem(server, query["code"][0], REDIRECT, verifier)
    assert tokens.status_code == 200, tokens.text
    userinfo = server_userinfo(server, tokens.json()["access_token"])
    assert userinfo["email"] == "chrome@example.com"
    # Chromium's counter moved on; the server accepted it (the stored credential's counter is now 1 or more).
    after = browser.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    assert after[0]["signCount"] >= 1


def test_chromium_without_conditional_mediation_signs_in_with_the_button(browser, server):
    without_conditional_mediation(browser)
    add_virtual_authenticator(browser)
    open_login(browser, server, "register")
    assert sign_up_in_browser(browser, "button@example.com").get("status") == 200

    verifier = open_login(browser, server, "button")
    # Today's page: no conditional request started, the button is there and signs in.
    form = browser.find_element(By.ID, "passkey-form")
    assert form.get_attribute("data-conditional") is None
    assert browser.find_element(By.ID, "passkey").is_displayed()
    browser.find_element(By.ID, "passkey").click()
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["button"]
    tokens = redeem(server, query["code"][0], REDIRECT, verifier)
    assert tokens.status_code == 200, tokens.text
    assert server_userinfo(server, tokens.json()["access_token"])["email"] == "button@example.com"


def test_chromium_conditional_request_waits_and_the_button_takes_over(browser, server):
    """With no passkey on the device the conditional request shows nothing (no error on the page); once a passkey
    exists the button signs in (aborting the conditional request first if the browser still holds it open)."""
    authenticator = add_virtual_authenticator(browser)
    open_login(browser, server, "register")
    assert sign_up_in_browser(browser, "takeover@example.com").get("status") == 200
    stored = browser.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    browser.execute_cdp_cmd("WebAuthn.clearCredentials", {"authenticatorId": authenticator})
    verifier = open_login(browser, server, "takeover")
    assert not browser.find_element(By.ID, "passkey-error").is_displayed()
    # The passkey comes back (a phone nearby, a synced keychain); the person presses the button.
    browser.execute_cdp_cmd("WebAuthn.addCredential", {"authenticatorId": authenticator, "credential": stored[0]})
    browser.find_element(By.ID, "passkey").click()
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["takeover"]
    assert redeem(server, query["code"][0], REDIRECT, verifier).status_code == 200


def test_chromium_packed_attestation_and_refusals(browser, server):
    authenticator = add_virtual_authenticator(browser)
    open_login(browser, server, "packed")
    # Chromium's virtual authenticator answers "direct" with a packed attestation statement; our server verifies it.
    packed = sign_up_in_browser(browser, "packed@example.com", attestation="direct")
    assert packed.get("status") == 200, packed
    # The same email again is refused with a field error (before any authenticator prompt).
    again = sign_up_in_browser(browser, "packed@example.com")
    assert again.get("step") == "options" and again["status"] == 400, again
    assert again["json"]["error_details"][0]["field"] == "email"
    # With the passkey removed from the authenticator, the page's button reports the failure and stays usable.
    browser.execute_cdp_cmd("WebAuthn.clearCredentials", {"authenticatorId": authenticator})
    browser.execute_cdp_cmd("WebAuthn.setAutomaticPresenceSimulation", {"authenticatorId": authenticator, "enabled": True})
    open_login(browser, server, "none-left")
    browser.set_script_timeout(5)
    browser.find_element(By.ID, "passkey").click()
    error = WebDriverWait(browser, 90).until(expected_conditions.visibility_of_element_located((By.ID, "passkey-error")))
    assert error.text
    assert browser.find_element(By.ID, "passkey").is_enabled()


def password_sign_in(browser, server, state):
    """The hosted form filled in as a person would; returns the PKCE verifier."""
    verifier = open_login(browser, server, state)
    browser.find_element(By.ID, "username").send_keys(DEMO_USER)
    browser.find_element(By.ID, "password").send_keys(DEMO_PASSWORD)
    try:
        browser.find_element(By.ID, "submit").click()
    except Exception:
        pass  # the page goes on by itself where there is nothing to offer
    return verifier


def offer_page(browser):
    """The offer page, once its script has decided this browser can make a passkey."""
    button = WebDriverWait(browser, 20).until(expected_conditions.visibility_of_element_located((By.ID, "create-passkey")))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sign in faster next time"
    assert DEMO_USER in browser.find_element(By.CSS_SELECTOR, "p.sub").text
    return button


def later_cookie(browser):
    cookies = browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]
    return next((c for c in cookies if c["name"] == "lk_passkey_later"), None)


def test_chromium_offered_a_passkey_after_the_password_makes_it_and_signs_in_with_it_next(browser, server):
    authenticator = add_virtual_authenticator(browser)
    verifier = password_sign_in(browser, server, "offer")
    offer_page(browser).click()
    # The passkey is made on the page (Chromium's attestation verified by the server), then on to the application.
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["offer"]
    assert redeem(server, query["code"][0], REDIRECT, verifier).status_code == 200, "the sign-in itself is unchanged"
    stored = browser.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"]
    assert len(stored) == 1 and stored[0]["isResidentCredential"]
    assert later_cookie(browser) is None

    # Signed out (the SSO cookie gone), the next sign-in is the passkey: conditional mediation, nothing typed.
    browser.execute_cdp_cmd("Network.deleteCookies", {"name": session_cookie(browser)["name"], "url": server.base + "/"})
    verifier = open_login(browser, server, "with-the-passkey")
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["with-the-passkey"]
    tokens = redeem(server, query["code"][0], REDIRECT, verifier)
    assert tokens.status_code == 200, tokens.text
    assert server_userinfo(server, tokens.json()["access_token"])["email"] == DEMO_USER
    assert browser.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"][0]["signCount"] >= 1


def test_chromium_not_now_goes_on_and_is_not_asked_again(browser, server):
    authenticator = add_virtual_authenticator(browser)
    verifier = password_sign_in(browser, server, "later")
    offer_page(browser)
    try:
        browser.find_element(By.ID, "not-now").click()
    except Exception:
        pass
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["later"]
    assert redeem(server, query["code"][0], REDIRECT, verifier).status_code == 200
    assert browser.execute_cdp_cmd("WebAuthn.getCredentials", {"authenticatorId": authenticator})["credentials"] == []
    cookie = later_cookie(browser)
    assert cookie and cookie["httpOnly"]
    # Signed out and in again with the password: straight back to the application, no offer.
    browser.execute_cdp_cmd("Network.deleteCookies", {"name": session_cookie(browser)["name"], "url": server.base + "/"})
    verifier = password_sign_in(browser, server, "again")
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["again"]
    assert redeem(server, query["code"][0], REDIRECT, verifier).status_code == 200


def test_chromium_without_a_passkey_authenticator_is_not_held_up(browser, server):
    """No platform authenticator: the offer page moves on by itself ("unsupported", not remembered as a refusal)."""
    verifier = password_sign_in(browser, server, "unable")
    query = wait_for_redirect(browser, REDIRECT, timeout=20)
    assert query["state"] == ["unable"]
    pages = [entry["url"] for entry in browser.execute_cdp_cmd("Page.getNavigationHistory", {})["entries"]]
    assert any("/passkey-offer?request=" in url for url in pages), f"the offer page was on the way: {pages}"
    assert redeem(server, query["code"][0], REDIRECT, verifier).status_code == 200
    assert later_cookie(browser) is None


def server_userinfo(server, access_token):
    import requests
    response = requests.get(server.base + "/oauth2/userinfo", headers={"Authorization": "Bearer " + access_token}, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()
