#!/usr/bin/env python3
"""Signs the demo user in to a running `latchkey serve` through the hosted login page (authorization code + PKCE),
then calls userinfo, refreshes and signs out. Standard library only, so it runs on a fresh machine."""
import base64, hashlib, http.cookiejar, json, re, secrets, sys, urllib.error, urllib.parse, urllib.request

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://localhost:8090"
REDIRECT = "http://127.0.0.1:8765/callback"  # the demo client accepts any loopback port (RFC 8252 §7.3)


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


jar = http.cookiejar.CookieJar()
opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), NoRedirect())


def call(url, data=None, headers=None):
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, headers=headers or {})
    try:
        response = opener.open(request)
    except urllib.error.HTTPError as error:  # 3xx and 4xx arrive here because redirects are not followed
        response = error
    return response.status, response.headers, response.read().decode()


def claims(jwt):
    payload = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


verifier = base64.urlsafe_b64encode(secrets.token_bytes(48)).rstrip(b"=").decode()
challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
state, nonce = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
query = urllib.parse.urlencode({"response_type": "code", "client_id": "latchkey-demo", "redirect_uri": REDIRECT,
                                "scope": "openid profile email offline_access", "state": state, "nonce": nonce,
                                "code_challenge": challenge, "code_challenge_method": "S256"})
status, headers, _ = call(f"{BASE}/oauth2/authorize?{query}")
print(f"1. GET /oauth2/authorize -> {status} {headers['Location'][:40]}…")
status, _, page = call(BASE + headers["Location"])
fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page))
status, headers, _ = call(BASE + "/login", {**fields, "username": "demo@example.com", "password": "correct horse battery staple"})
if headers["Location"].startswith("/passkey-offer"):
    # The account has no passkey: the server offers one before going back to the app. This script is a browser
    # without a passkey authenticator, so it answers as the page's script would there.
    _, _, page = call(BASE + headers["Location"])
    fields = dict(re.findall(r'name="(request|csrf)" value="([^"]+)"', page))
    print("   the server offers a passkey (\"Sign in faster next time\"); this browser cannot make one and goes on")
    status, headers, _ = call(BASE + "/passkey-offer", {**fields, "decision": "unsupported"})
callback = urllib.parse.parse_qs(urllib.parse.urlparse(headers["Location"]).query)
assert callback["state"] == [state] and callback["iss"] == [BASE], "state/iss mismatch"
print(f"2. POST /login (hosted form) -> {status}, redirected with code, state and iss={callback['iss'][0]}")
status, _, body = call(BASE + "/oauth2/token", {"grant_type": "authorization_code", "code": callback["code"][0],
                                                "redirect_uri": REDIRECT, "client_id": "latchkey-demo", "code_verifier": verifier})
tokens = json.loads(body)
id_claims = claims(tokens["id_token"])
assert id_claims["nonce"] == nonce
print(f"3. POST /oauth2/token -> {status}: signed in as {id_claims['name']} <{id_claims['email']}> (sub {id_claims['sub']})")
status, _, body = call(BASE + "/oauth2/userinfo", headers={"Authorization": "Bearer " + tokens["access_token"]})
print(f"4. GET /oauth2/userinfo -> {status} {body}")
status, _, body = call(BASE + "/oauth2/token", {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": "latchkey-demo"})
print(f"5. refresh -> {status}, new refresh token issued: {json.loads(body)['refresh_token'] != tokens['refresh_token']}")
status, headers, _ = call(f"{BASE}/oauth2/logout?" + urllib.parse.urlencode(
    {"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": "http://127.0.0.1:8765/logout", "state": "bye"}))
print(f"6. GET /oauth2/logout -> {status} {headers['Location']}")
print("Demo sign-in complete.")
