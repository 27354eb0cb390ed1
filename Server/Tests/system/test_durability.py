"""A server killed with SIGKILL restarts with every issued refresh token still valid."""
import requests

from conftest import Server, redeem, sign_in_code


def sign_in_without_browser(server, redirect_uri="http://127.0.0.1:9/callback"):
    """The hosted form, submitted as a browser would (cookies kept, redirects inspected), then the code redeemed."""
    code, verifier = sign_in_code(server, redirect_uri)
    tokens = redeem(server, code, redirect_uri, verifier)
    assert tokens.status_code == 200, tokens.text
    return tokens.json()


def test_sigkill_keeps_every_refresh_token(server):
    issued = [sign_in_without_browser(server) for _ in range(5)]
    # Rotate some so the newest token of each family is the one that must survive.
    latest = []
    for t in issued:
        r = requests.post(server.base + "/oauth2/token", data={"grant_type": "refresh_token", "refresh_token": t["refresh_token"],
                                                               "client_id": "latchkey-demo"})
        assert r.status_code == 200
        latest.append(r.json()["refresh_token"])
    jwks_before = requests.get(server.base + "/oauth2/jwks").json()

    server.kill()  # SIGKILL: no shutdown code runs
    restarted = Server(server.workdir, port=server.port).start()
    try:
        assert requests.get(restarted.base + "/oauth2/jwks").json() == jwks_before, "signing keys survive"
        for token in latest:
            r = requests.post(restarted.base + "/oauth2/token", data={"grant_type": "refresh_token", "refresh_token": token,
                                                                      "client_id": "latchkey-demo"})
            assert r.status_code == 200, r.text
            assert requests.get(restarted.base + "/oauth2/userinfo",
                                headers={"Authorization": "Bearer " + r.json()["access_token"]}).status_code == 200
    finally:
        restarted.stop()
