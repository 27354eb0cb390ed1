"""A configured `latchkey serve` is not a development server. One-time codes travel by SMTP (STARTTLS, AUTH) to
their recipient only, survive a relay outage and a restart, and `/dev/outbox` does not exist."""
import base64
import datetime
import email
import email.policy
import ipaddress
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time

import pytest
import requests
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import BINARY, free_port

SMTP_USER = "latchkey"
SMTP_PASSWORD = "relay-password-for-tests"
VICTIM = "victim@example.com"
# A real (non-development) server may need a key for its secrets at rest; servers that do not read it ignore it.
SECRETS_AT_REST = {"LATCHKEY_KEY_ENCRYPTION_KEY": base64.b64encode(bytes(range(32))).decode()}


def make_certificates(directory):
    """A throw-away CA and a relay certificate for localhost / 127.0.0.1 signed by it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Latchkey test relay CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {name: os.path.join(directory, name + ".pem") for name in ("ca", "cert", "key")}
    with open(paths["ca"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["cert"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return paths


class Mailbox:
    """aiosmtpd handler: keeps every accepted message with the session facts the test checks."""

    def __init__(self):
        self.messages = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):
        with self.lock:
            self.messages.append({"from": envelope.mail_from, "to": list(envelope.rcpt_tos), "content": envelope.content,
                                  "tls": session.ssl is not None, "auth": session.auth_data})
        return "250 Message accepted"

    def wait(self, recipient, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                for m in self.messages:
                    if recipient in m["to"]:
                        return m
            time.sleep(0.1)
        raise AssertionError(f"no email for {recipient} within {timeout}s")


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = auth_data.login == SMTP_USER.encode() and auth_data.password == SMTP_PASSWORD.encode()
    return AuthResult(success=ok, handled=False, auth_data=SMTP_USER if ok else None)


class Relay:
    """aiosmtpd on 127.0.0.1 that requires STARTTLS and AUTH (PLAIN or LOGIN)."""

    def __init__(self, certs, port):
        self.mailbox = Mailbox()
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(certs["cert"], certs["key"])
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                                     authenticator=authenticator, auth_required=True, auth_require_tls=True)

    def start(self):
        self.controller.start()
        return self

    def stop(self):
        self.controller.stop()


class ConfiguredServer:
    """`latchkey serve --config FILE`: a real (non-development) server."""

    def __init__(self, workdir, config, extra_args=()):
        self.workdir = workdir
        self.port = config["port"]
        self.config_path = os.path.join(workdir, "latchkey.json")
        with open(self.config_path, "w") as f:
            json.dump(config, f)
        self.extra_args = list(extra_args)
        self.proc = None

    @property
    def base(self):
        return f"http://localhost:{self.port}"

    @property
    def log_text(self):
        with open(os.path.join(self.workdir, "server.log"), errors="replace") as f:
            return f.read()

    def start(self):
        log = open(os.path.join(self.workdir, "server.log"), "ab")
        env = dict(os.environ, LATCHKEY_TEST_SMTP_PASSWORD=SMTP_PASSWORD, **SECRETS_AT_REST)
        self.proc = subprocess.Popen([BINARY, "serve", "--config", self.config_path, *self.extra_args], cwd=self.workdir,
                                     stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited: " + self.log_text)
            try:
                if requests.get(self.base + "/health", timeout=1).status_code == 200:
                    return self
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("server did not start: " + self.log_text)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)


def configuration(workdir, smtp_port, ca_file, **smtp):
    port = free_port()
    return {
        "issuer": f"http://localhost:{port}", "port": port, "database": os.path.join(workdir, "latchkey.sqlite"),
        "clients": [{"client_id": "app", "redirect_uris": ["http://127.0.0.1/callback"],
                     "grant_types": ["authorization_code", "refresh_token"]}],
        "users": [{"username": VICTIM, "password": "victim's old password", "claims": {"email": VICTIM, "email_verified": "true"}}],
        "smtp": {"host": "127.0.0.1", "port": smtp_port, "starttls": "required", "username": SMTP_USER,
                 "password_env": "LATCHKEY_TEST_SMTP_PASSWORD", "from": "noreply@example.com", "ca_file": ca_file,
                 "timeout_seconds": 5, "retry_seconds": 1, "max_attempts": 10, **smtp},
    }


@pytest.fixture
def workdir():
    path = tempfile.mkdtemp(prefix="latchkey-smtp-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def certs(workdir):
    return make_certificates(workdir)


def start_recovery(server, locale=None):
    body = {"applicationId": "app", "flowType": "RECOVERY", "inputs": {"username": VICTIM}}
    if locale:
        body["locale"] = locale
    response = requests.post(server.base + "/flow/execute", json=body, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def code_of(message):
    parsed = email.message_from_bytes(message["content"], policy=email.policy.default)
    text = parsed.get_body(preferencelist=("plain",)).get_content()
    match = re.search(r"\b([0-9A-Z]{5}-[0-9A-Z]{5})\b", text)  # a recovery code
    assert match, text
    return parsed, match.group(1)


def wait_for_log(server, needle, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if needle in server.log_text:
            return
        time.sleep(0.1)
    raise AssertionError(f"{needle!r} not in the server log: {server.log_text}")


def test_recovery_code_goes_to_the_mailbox_not_to_an_attacker(workdir, certs):
    relay = Relay(certs, free_port()).start()
    server = ConfiguredServer(workdir, configuration(workdir, relay.controller.port, certs["ca"])).start()
    try:
        # The attack: the route that handed out every code does not exist on a configured server.
        started = start_recovery(server, locale="fr")
        assert requests.get(server.base + "/dev/outbox", params={"recipient": VICTIM}, timeout=10).status_code == 404

        message = relay.mailbox.wait(VICTIM)
        assert message["tls"], "sent after STARTTLS"
        assert message["auth"] == SMTP_USER
        assert message["from"] == "noreply@example.com" and message["to"] == [VICTIM]
        parsed, code = code_of(message)
        assert parsed["To"].addresses[0].addr_spec == VICTIM and parsed["Date"].datetime and parsed["Message-ID"]
        assert parsed["Subject"] == "Votre code de réinitialisation du mot de passe", "UTF-8 subject (RFC 2047)"

        # The recipient completes the recovery with the code from their mailbox.
        verified = requests.post(server.base + "/flow/execute", json={
            "executionId": started["executionId"], "challengeToken": started["challengeToken"], "action": "action_verify",
            "inputs": {"confirmationCode": code}}, timeout=10).json()
        assert verified["flowStatus"] == "INCOMPLETE" and [i["identifier"] for i in verified["data"]["inputs"]] == ["password"]
        assert code not in server.log_text, "no code in the log"
    finally:
        server.stop()
        relay.stop()


def test_email_waits_for_a_relay_that_is_down_at_first(workdir, certs):
    smtp_port = free_port()
    server = ConfiguredServer(workdir, configuration(workdir, smtp_port, certs["ca"])).start()
    relay = None
    try:
        start_recovery(server)
        wait_for_log(server, "email delivery failed; will retry")
        relay = Relay(certs, smtp_port).start()
        message = relay.mailbox.wait(VICTIM)
        assert message["tls"] and message["auth"] == SMTP_USER
        code_of(message)
    finally:
        server.stop()
        if relay:
            relay.stop()


def test_queued_email_survives_a_restart(workdir, certs):
    smtp_port = free_port()
    config = configuration(workdir, smtp_port, certs["ca"])
    server = ConfiguredServer(workdir, config).start()
    relay = None
    try:
        start_recovery(server)
        wait_for_log(server, "email delivery failed; will retry")
        server.stop()
        relay = Relay(certs, smtp_port).start()
        server = ConfiguredServer(workdir, config).start()
        message = relay.mailbox.wait(VICTIM)
        code_of(message)
        assert len(relay.mailbox.messages) == 1, "delivered once"
    finally:
        server.stop()
        if relay:
            relay.stop()


def test_untrusted_relay_certificate_is_not_used(workdir, certs):
    """The relay's certificate must chain to ca_file: with another CA the password is never sent."""
    relay = Relay(certs, free_port()).start()
    other = make_certificates(tempfile.mkdtemp(dir=workdir))
    server = ConfiguredServer(workdir, configuration(workdir, relay.controller.port, other["ca"])).start()
    try:
        start_recovery(server)
        wait_for_log(server, "email delivery failed; will retry")
        assert relay.mailbox.messages == []
    finally:
        server.stop()
        relay.stop()


def run_serve(workdir, config, *args, timeout=30):
    path = os.path.join(workdir, "refused.json")
    with open(path, "w") as f:
        json.dump(config, f)
    return subprocess.run([BINARY, "serve", "--config", path, *args], cwd=workdir, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **SECRETS_AT_REST))


def test_start_up_refusals(workdir, certs):
    config = configuration(workdir, free_port(), certs["ca"])
    del config["smtp"]
    refused = run_serve(workdir, config)
    assert refused.returncode != 0 and "no delivery is configured" in refused.stdout + refused.stderr

    public = dict(config, issuer="https://id.example.com")
    refused = run_serve(workdir, public, "--dev")
    assert refused.returncode != 0 and "development mode" in refused.stdout + refused.stderr

    refused = run_serve(workdir, dict(public, development=True))
    assert refused.returncode != 0 and "development mode" in refused.stdout + refused.stderr
