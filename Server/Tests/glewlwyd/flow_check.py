#!/usr/bin/env python3
"""End-to-end OpenID Connect check against the glewlwyd started by start.sh.

Authorization code + PKCE (S256) with state and nonce, glewlwyd login and consent
driven as REST calls on a cookie session, code taken from the redirect Location
(redirects to 127.0.0.1:7777 are never followed), ID token signature checked with
the provider JWKS, then userinfo, refresh, revocation and end-session.

Only the standard library, requests and joserfc. Exit code 0 only if every step passed.

Environment (defaults match start.sh): GLEWLWYD_ISSUER, GLEWLWYD_CLIENT_ID,
GLEWLWYD_REDIRECT_URI, GLEWLWYD_TEST_USER, GLEWLWYD_TEST_PASSWORD,
GLEWLWYD_POST_LOGOUT_REDIRECT_URI. Or pass the workdir of start.sh as argv[1]
(its `env` file is read).
"""
import json
import base64
import hashlib
import os
import secrets
import sys
import time
import urllib.parse as up

import requests
from joserfc import jwt
from joserfc.jwk import KeySet

TIMEOUT = 10


def load_env():
    env = {}
    workdir = sys.argv[1] if len(sys.argv) > 1 else None
    if workdir is None and os.path.exists("/tmp/latchkey-glewlwyd.last"):
        workdir = open("/tmp/latchkey-glewlwyd.last").read().strip()
    if workdir and os.path.exists(os.path.join(workdir, "env")):
        for line in open(os.path.join(workdir, "env")):
            k, _, v = line.strip().partition("=")
            if k:
                env[k] = v
    env.update({k: v for k, v in os.environ.items() if k.startswith("GLEWLWYD_")})
    port = env.get("GLEWLWYD_PORT", "4593")
    env.setdefault("GLEWLWYD_ISSUER", f"http://127.0.0.1:{port}/api/oidc")
    env.setdefault("GLEWLWYD_CLIENT_ID", "latchkey-test")
    env.setdefault("GLEWLWYD_REDIRECT_URI", "http://127.0.0.1:7777/callback")
    env.setdefault("GLEWLWYD_POST_LOGOUT_REDIRECT_URI", "http://127.0.0.1:7777/logged-out")
    env.setdefault("GLEWLWYD_TEST_USER", "alice")
    env.setdefault("GLEWLWYD_TEST_PASSWORD", "alice-password-1")
    return env


class Failure(Exception):
    pass


STEP = [0]


def ok(name, detail=""):
    STEP[0] += 1
    print(f"[{STEP[0]:02d}] PASS {name}" + (f" - {detail}" if detail else ""), flush=True)


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def half_hash(value: str) -> str:
    return b64url(hashlib.sha256(value.encode()).digest()[:16])


def loopback_only(url):
    host = up.urlparse(url).hostname
    expect(host in ("127.0.0.1", "localhost", "::1"), f"refusing non-loopback URL {url}")
    return url


def main():
    env = load_env()
    issuer = env["GLEWLWYD_ISSUER"].rstrip("/")
    client_id = env["GLEWLWYD_CLIENT_ID"]
    redirect_uri = env["GLEWLWYD_REDIRECT_URI"]
    user, password = env["GLEWLWYD_TEST_USER"], env["GLEWLWYD_TEST_PASSWORD"]
    loopback_only(issuer)
    parsed = up.urlparse(issuer)
    base = f"{parsed.scheme}://{parsed.netloc}"
    api = base + "/api"          # glewlwyd core REST API (login, consent)
    scope = "openid profile email offline_access"

    # 1. discovery ---------------------------------------------------------------
    r = requests.get(issuer + "/.well-known/openid-configuration", timeout=TIMEOUT)
    expect(r.status_code == 200, f"discovery HTTP {r.status_code}")
    disco = r.json()
    expect(disco.get("issuer") == issuer, f"issuer mismatch {disco.get('issuer')!r} != {issuer!r}")
    for key in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
        expect(key in disco, f"discovery lacks {key}")
        loopback_only(disco[key])
        expect("//api" not in disco[key], f"{key} has a double slash: {disco[key]}")
    expect("S256" in disco.get("code_challenge_methods_supported", []), "S256 PKCE not advertised")
    ok("discovery", f"issuer={disco['issuer']}")

    # 2. JWKS --------------------------------------------------------------------
    r = requests.get(disco["jwks_uri"], timeout=TIMEOUT)
    expect(r.status_code == 200, f"jwks HTTP {r.status_code}")
    jwks = r.json()
    keyset = KeySet.import_key_set(jwks)
    ok("jwks", ", ".join(f"{k.get('kty')}/{k.get('alg')}/kid={k.get('kid')}" for k in jwks["keys"]))

    # 3. authorization request (no session yet -> glewlwyd login page) ---------------
    verifier = b64url(secrets.token_bytes(48))
    challenge = b64url(hashlib.sha256(verifier.encode()).digest())
    state = b64url(secrets.token_bytes(16))
    nonce = b64url(secrets.token_bytes(16))
    auth_params = {
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
        "scope": scope, "state": state, "nonce": nonce,
        "code_challenge": challenge, "code_challenge_method": "S256",
    }
    browser = requests.Session()   # plays the user agent: keeps glewlwyd's session cookie
    r = browser.get(disco["authorization_endpoint"], params=auth_params, allow_redirects=False, timeout=TIMEOUT)
    expect(r.status_code == 302, f"authorize HTTP {r.status_code}: {r.text[:200]}")
    login_loc = r.headers["Location"]
    login_q = dict(up.parse_qsl(up.urlparse(login_loc).query))
    expect("callback_url" in login_q, f"expected redirect to login page, got {login_loc}")
    callback_url = loopback_only(login_q["callback_url"])
    ok("authorize -> login page", up.urlparse(login_loc).path)

    # 4. login: password, then the 'retype-password' scheme required by scope profile --
    r = browser.post(api + "/auth/", json={"username": user, "password": password}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"password login HTTP {r.status_code}")
    expect("GLEWLWYD2_SESSION_ID" in browser.cookies, "no GLEWLWYD2_SESSION_ID cookie")
    ok("login password", "cookie GLEWLWYD2_SESSION_ID set")
    r = browser.get(api + "/auth/scheme/", params={"scope": scope}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"scheme list HTTP {r.status_code}")
    needed = {(s["scheme_type"], s["scheme_name"])
              for sc in r.json().values() for grp in sc.get("schemes", {}).values() for s in grp
              if not s.get("scheme_authenticated")}
    for stype, sname in sorted(needed):
        r = browser.post(api + "/auth/", json={"username": user, "scheme_type": stype, "scheme_name": sname,
                                               "value": {"password": password}}, timeout=TIMEOUT)
        expect(r.status_code == 200, f"scheme {stype}/{sname} login HTTP {r.status_code}")
        ok("login scheme", f"{stype}/{sname}")
    r = browser.get(api + "/auth/scheme/", params={"scope": scope}, timeout=TIMEOUT)
    missing = [name for name, sc in r.json().items()
               if not sc.get("available") or (sc.get("password_required") and not sc.get("password_authenticated"))]
    expect(not missing, f"scopes still not authenticated: {missing}")

    # 5. consent (grant) as REST ------------------------------------------------------
    r = browser.put(f"{api}/auth/grant/{up.quote(client_id)}", json={"scope": scope}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"grant HTTP {r.status_code}")
    r = browser.get(f"{api}/auth/grant/{up.quote(client_id)}/{up.quote(scope)}", timeout=TIMEOUT)
    expect(r.status_code == 200 and all(s["granted"] for s in r.json()["scope"]), f"grant not recorded: {r.text[:300]}")
    ok("consent", f"granted '{scope}' to {client_id}")

    # 6. back to the authorization endpoint (callback_url + g_continue) -> code ---------
    sep = "&" if "?" in callback_url else "?"
    r = browser.get(callback_url + sep + "g_continue", allow_redirects=False, timeout=TIMEOUT)
    expect(r.status_code == 302, f"authorize(continue) HTTP {r.status_code}: {r.text[:200]}")
    loc = r.headers["Location"]
    expect(loc.startswith(redirect_uri + "?"), f"unexpected redirect {loc}")
    cb = dict(up.parse_qsl(up.urlparse(loc).query))
    expect("error" not in cb, f"authorization error {cb}")
    expect(cb.get("state") == state, "state mismatch")
    expect(cb.get("code"), "no code in redirect")
    ok("authorize -> code", f"state ok, params={sorted(cb)}")

    # 7. token exchange (form body, public client, PKCE) ---------------------------------
    r = requests.post(disco["token_endpoint"], data={
        "grant_type": "authorization_code", "code": cb["code"], "redirect_uri": redirect_uri,
        "client_id": client_id, "code_verifier": "wrong-" + verifier}, timeout=TIMEOUT)
    expect(r.status_code in (400, 401, 403), f"wrong PKCE verifier accepted: HTTP {r.status_code}")
    ok("token with wrong code_verifier rejected", f"HTTP {r.status_code} {r.text[:80]}")
    r = requests.post(disco["token_endpoint"], data={
        "grant_type": "authorization_code", "code": cb["code"], "redirect_uri": redirect_uri,
        "client_id": client_id, "code_verifier": verifier}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"token HTTP {r.status_code}: {r.text[:300]}")
    tokens = r.json()
    for key in ("access_token", "id_token", "refresh_token", "token_type", "expires_in"):
        expect(key in tokens, f"token response lacks {key}")
    ok("token exchange", f"token_type={tokens['token_type']} expires_in={tokens['expires_in']} scope={tokens.get('scope')!r}")

    # 8. ID token validation -----------------------------------------------------------
    algs = disco.get("id_token_signing_alg_values_supported", ["RS256"])
    id_tok = jwt.decode(tokens["id_token"], keyset, algorithms=algs)
    c, h = id_tok.claims, id_tok.header
    now = time.time()
    expect(h.get("alg") == "RS256", f"id_token alg {h.get('alg')}")
    expect(c.get("iss") == issuer, f"id_token iss {c.get('iss')}")
    aud = c.get("aud")
    expect(aud == client_id or (isinstance(aud, list) and client_id in aud), f"id_token aud {aud}")
    expect(c.get("nonce") == nonce, "id_token nonce mismatch")
    expect(c.get("exp", 0) > now - 60 and c.get("iat", 0) < now + 300, f"id_token exp/iat {c.get('exp')}/{c.get('iat')}")
    expect(c.get("at_hash") == half_hash(tokens["access_token"]), "at_hash mismatch")
    if "c_hash" in c:
        expect(c["c_hash"] == half_hash(cb["code"]), "c_hash mismatch")
    ok("id_token verified", f"kid={h.get('kid')} sub={c.get('sub')} claims={sorted(c)}")
    # the access token is a JWT signed with the same key
    at = jwt.decode(tokens["access_token"], keyset, algorithms=algs)
    expect(at.claims.get("client_id") == client_id, "access token client_id")

    # 9. userinfo ------------------------------------------------------------------------
    r = requests.get(disco["userinfo_endpoint"], headers={"Authorization": "Bearer " + tokens["access_token"]}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"userinfo HTTP {r.status_code}")
    ui = r.json()
    expect(ui.get("sub") == c.get("sub"), "userinfo sub != id_token sub")
    ok("userinfo", str(ui))

    # With GLEWLWYD_TOKENS_TO (a file path): the token answer is written there and the check stops before refreshing
    # and revoking, so the benchmark (scripts/bench-peers.sh) can use the refresh token.
    if os.environ.get("GLEWLWYD_TOKENS_TO"):
        with open(os.environ["GLEWLWYD_TOKENS_TO"], "w") as f:
            json.dump({"token_endpoint": disco["token_endpoint"], "client_id": client_id, **tokens}, f)
        return 0

    # 10. refresh --------------------------------------------------------------------------
    r = requests.post(disco["token_endpoint"], data={
        "grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client_id}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"refresh HTTP {r.status_code}: {r.text[:200]}")
    refreshed = r.json()
    expect("access_token" in refreshed, "refresh response lacks access_token")
    r = requests.get(disco["userinfo_endpoint"], headers={"Authorization": "Bearer " + refreshed["access_token"]}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"userinfo with refreshed token HTTP {r.status_code}")
    rt = refreshed.get("refresh_token", tokens["refresh_token"])
    ok("refresh", f"new access token, keys={sorted(refreshed)}")

    # 11. revocation (RFC 7009) --------------------------------------------------------------
    rev = disco.get("revocation_endpoint")
    expect(rev, "no revocation_endpoint advertised")
    r = requests.post(rev, data={"token": rt, "token_type_hint": "refresh_token", "client_id": client_id}, timeout=TIMEOUT)
    print(f"     note: revoke as public client (client_id in form only) -> HTTP {r.status_code} (glewlwyd needs auth)")
    r = requests.post(rev, data={"token": rt, "token_type_hint": "refresh_token"},
                      headers={"Authorization": "Bearer " + refreshed["access_token"]}, timeout=TIMEOUT)
    expect(r.status_code == 200, f"revoke (bearer) HTTP {r.status_code}: {r.text[:200]}")
    r = requests.post(disco["token_endpoint"], data={
        "grant_type": "refresh_token", "refresh_token": rt, "client_id": client_id}, timeout=TIMEOUT)
    expect(r.status_code in (400, 401, 403), f"revoked refresh token still works: HTTP {r.status_code}")
    ok("revocation", f"refresh token revoked; reuse -> HTTP {r.status_code} {r.text[:60]}")

    # 12. end session (RP-initiated logout) ---------------------------------------------------
    end = disco.get("end_session_endpoint")
    if not end:
        ok("end_session", "not advertised - skipped")
    else:
        r = browser.get(end, params={"id_token_hint": tokens["id_token"],
                                     "post_logout_redirect_uri": env["GLEWLWYD_POST_LOGOUT_REDIRECT_URI"],
                                     "state": "logout-" + state}, allow_redirects=False, timeout=TIMEOUT)
        expect(r.status_code == 302, f"end_session HTTP {r.status_code}: {r.text[:200]}")
        eq = dict(up.parse_qsl(up.urlparse(r.headers["Location"]).query))
        expect(eq.get("prompt") == "end_session" and eq.get("sid"), f"unexpected end_session redirect {r.headers['Location']}")
        expect(eq["sid"] == c.get("sid"), "end_session sid != id_token sid")
        ok("end_session -> logout page", f"sid={eq['sid']} plugin={eq.get('plugin')}")
        # what glewlwyd's login.html does on "confirm logout":
        r = browser.delete(f"{api}/{eq.get('plugin', 'oidc')}/session/{eq['sid']}", timeout=TIMEOUT)
        expect(r.status_code == 200, f"DELETE oidc session HTTP {r.status_code}")
        r = browser.delete(api + "/auth/", timeout=TIMEOUT)
        expect(r.status_code == 200, f"DELETE /api/auth/ HTTP {r.status_code}")
        r = browser.get(disco["authorization_endpoint"], params=dict(auth_params, g_continue=""),
                        allow_redirects=False, timeout=TIMEOUT)
        expect(r.status_code == 302 and "code=" not in r.headers.get("Location", ""),
               "authorization still issues a code after logout")
        r = requests.get(disco["userinfo_endpoint"], headers={"Authorization": "Bearer " + tokens["access_token"]}, timeout=TIMEOUT)
        ok("logout confirmed", f"session gone, authorize -> login again; old access token userinfo -> HTTP {r.status_code}")

    print(f"flow_check: {STEP[0]} passed, 0 failed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (Failure, requests.RequestException, KeyError, ValueError) as exc:
        print(f"[{STEP[0] + 1:02d}] FAIL {type(exc).__name__}: {exc}", flush=True)
        print(f"flow_check: {STEP[0]} passed, 1 failed")
        sys.exit(1)
