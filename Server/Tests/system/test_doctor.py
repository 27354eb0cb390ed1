"""`latchkey doctor` against a deployment: the real server configured right passes, and each planted
misconfiguration is found and named with its fix (non-zero exit). Faults our server never makes (a redirect, a wrong
content type, private key material, a missing key) are planted in a small stub deployment on loopback."""
import contextlib
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading

import pytest

from conftest import BINARY, Server

APP = "ABCDE12345.com.example.app"


def doctor(*args):
    return subprocess.run([BINARY, "doctor", *args], capture_output=True, text=True, timeout=120)


def failures(result):
    return [line for line in result.stdout.splitlines() if "[FAIL]" in line]


@pytest.fixture
def configured():
    """The server as an iOS app needs it: its app id listed, an https redirect URI on its own host, the app's
    origin accepted for passkeys."""
    workdir = tempfile.mkdtemp(prefix="latchkey-doctor-")
    config = os.path.join(workdir, "latchkey.json")
    with open(config, "w") as f:
        json.dump({"development": True, "demo": True, "associations": {"apple_app_ids": [APP]},
                   "clients": [{"client_id": "ios-app", "token_endpoint_auth_method": "none", "app_type": "native",
                                "redirect_uris": ["https://localhost/app/callback", "com.example.app:/callback"],
                                "passkey_allowed_origins": ["self", "https://localhost"]}]}, f)
    server = Server(workdir, args=["--config", config]).start()
    yield server
    server.stop()
    shutil.rmtree(workdir, ignore_errors=True)


def test_a_deployment_set_up_right_passes(configured):
    result = doctor("--issuer", configured.base, "--app-id", APP, "--client-id", "ios-app",
                    "--redirect-uri", "https://localhost/app/callback", "--redirect-uri", "com.example.app:/callback")
    assert result.returncode == 0, result.stdout + result.stderr
    assert failures(result) == []
    for passed in ["discovery", "jwks", "rp-id", "apple-app-site-association", "webcredentials", "redirect-uri", "applinks"]:
        assert f"[ok  ] {passed}:" in result.stdout, passed
    assert "CFBundleURLTypes" in result.stdout  # the custom scheme's reminder


def test_the_association_file_as_served(configured):
    import requests
    answer = requests.get(configured.base + "/.well-known/apple-app-site-association", allow_redirects=False, timeout=10)
    assert answer.status_code == 200 and answer.headers["Content-Type"] == "application/json"
    document = answer.json()
    assert document["webcredentials"]["apps"] == [APP]
    assert document["applinks"]["details"] == [{"appIDs": [APP], "components": [{"/": "/app/callback"}]}]
    # Nothing configured for related origins: no file.
    assert requests.get(configured.base + "/.well-known/webauthn", timeout=10).status_code == 404


def test_planted_server_misconfigurations_are_found(configured):
    # The issuer an app was given differs from the one the server announces.
    wrong_issuer = doctor("--issuer", configured.base.replace("localhost", "127.0.0.1"))
    assert wrong_issuer.returncode == 1
    assert any("discovery" in line and "announces issuer" in line for line in failures(wrong_issuer)), wrong_issuer.stdout
    # An app the file does not list.
    other_app = doctor("--issuer", configured.base, "--app-id", "ZZZZZ99999.com.example.other")
    assert other_app.returncode == 1
    assert "add ZZZZZ99999.com.example.other to associations.apple_app_ids" in other_app.stdout
    # A redirect URI the application does not have, and an https one on the host that is not an applinks path.
    redirect = doctor("--issuer", configured.base, "--app-id", APP, "--client-id", "ios-app", "--redirect-uri", "https://localhost/elsewhere")
    assert redirect.returncode == 1
    assert "register https://localhost/elsewhere in the application's redirect_uris" in redirect.stdout
    # An application that does not accept the app's origin for passkeys.
    demo = doctor("--issuer", configured.base, "--client-id", "latchkey-demo")
    assert "add https://localhost to the application's passkey_allowed_origins" in demo.stdout, demo.stdout
    # A malformed app id.
    malformed = doctor("--issuer", configured.base, "--app-id", "com.example.app")
    assert any("app-id" in line for line in failures(malformed)), malformed.stdout


def test_a_server_without_associations_fails_the_file_check(server):
    result = doctor("--issuer", server.base, "--app-id", APP)
    assert result.returncode == 1
    assert "associations.apple_app_ids" in result.stdout
    assert any("apple-app-site-association" in line and "404" in line for line in failures(result)), result.stdout


class Stub(http.server.BaseHTTPRequestHandler):
    """A deployment with one planted fault at a time (`fault`)."""
    fault = None
    port = 0

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="application/json", headers=()):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        base = f"http://localhost:{self.port}"
        key = {"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": "sXch", "e": "AQAB"}
        if self.path == "/.well-known/openid-configuration":
            return self.answer(200, {"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
                                     "jwks_uri": base + "/jwks", "id_token_signing_alg_values_supported": ["RS256", "ES256"]
                                     if self.fault == "missing-es256" else ["RS256"]})
        if self.path == "/jwks":
            return self.answer(200, {"keys": [dict(key, d="private") if self.fault == "private-key" else key]})
        if self.path == "/.well-known/apple-app-site-association":
            if self.fault == "redirect":
                return self.answer(301, b"", headers=[("Location", "https://www.example.com/aasa")])
            document = {"webcredentials": {"apps": [APP]}}
            if self.fault == "html":
                return self.answer(200, json.dumps(document).encode(), content_type="text/html")
            return self.answer(200, document)
        return self.answer(404, {"error": "not_found"})


@contextlib.contextmanager
def stub_deployment(fault):
    """The stub on a free loopback port with `fault` planted; yields its issuer."""
    handler = type("Planted", (Stub,), {"fault": fault})
    stub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    handler.port = stub.server_address[1]
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{handler.port}"
    finally:
        stub.shutdown()


@pytest.mark.parametrize("fault,finding", [
    ("redirect", "answers a redirect"),
    ("html", "served as text/html"),
    ("private-key", "publishes private key material"),
    ("missing-es256", "no key verifies ID tokens signed with ES256"),
])
def test_planted_deployment_faults_are_found(fault, finding):
    with stub_deployment(fault) as issuer:
        result = doctor("--issuer", issuer, "--app-id", APP)
        assert result.returncode == 1, result.stdout
        assert any(finding in line for line in failures(result)), result.stdout
        # Every failure says what to change.
        lines = result.stdout.splitlines()
        for index, line in enumerate(lines):
            if "[FAIL]" in line:
                assert index + 1 < len(lines) and "fix:" in lines[index + 1], result.stdout


def test_the_stub_without_faults_passes():
    with stub_deployment(None) as issuer:
        result = doctor("--issuer", issuer, "--app-id", APP)
        assert result.returncode == 0, result.stdout
