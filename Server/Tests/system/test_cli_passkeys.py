"""The passkey CLI against the real server: `signup --passkey` creates an account whose only credential is a passkey
in $LATCHKEY_HOME/passkeys.json, `login --passkey` signs in with it (discoverable and username-first),
`passkey register|list|rename|delete` manage the account's passkeys."""
import json
import os
import stat
import tempfile

import requests

from conftest import BINARY  # noqa: F401  (the binary under test)
from test_cli import cli


def test_passkey_signup_login_and_management(server):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    signup = cli(home, "signup", "--passkey", "--issuer", server.base, "--email", "cli@example.com", "--given-name", "Cli",
                 "--passkey-name", "Terminal")
    assert signup.returncode == 0, signup.stderr + signup.stdout
    keys = os.path.join(home, "passkeys.json")
    assert stat.S_IMODE(os.stat(keys).st_mode) == 0o600
    assert "privateKey" not in signup.stdout and "private" not in signup.stdout.lower()

    whoami = cli(home, "whoami")
    assert whoami.returncode == 0 and "cli@example.com" in whoami.stdout, whoami.stderr
    assert cli(home, "logout").returncode == 0

    # Discoverable, then username-first, with the key file alone.
    login = cli(home, "login", "--passkey", "--issuer", server.base)
    assert login.returncode == 0, login.stderr + login.stdout
    assert "cli@example.com" in cli(home, "whoami").stdout
    username_first = cli(home, "login", "--passkey", "--issuer", server.base, "--username", "cli@example.com")
    assert username_first.returncode == 0, username_first.stderr

    # The same authenticator cannot register twice for the account (the server lists it in excludeCredentials).
    twice = cli(home, "passkey", "register", "--name", "Again")
    assert twice.returncode != 0 and "already" in twice.stderr, twice.stderr
    # A second passkey from "another device" (a fresh key store); list, rename, delete.
    os.rename(keys, keys + ".first-device")
    register = cli(home, "passkey", "register", "--name", "Second")
    assert register.returncode == 0, register.stderr + register.stdout
    listing = cli(home, "passkey", "list")
    assert listing.returncode == 0 and "Terminal" in listing.stdout and "Second" in listing.stdout, listing.stdout
    token = cli(home, "token").stdout.strip()
    items = requests.get(server.base + "/identity/v1/webauthn/registration", headers={"Authorization": "Bearer " + token}, timeout=10).json()
    second = next(item for item in items if item["friendly_name"] == "Second")
    # Ids are base64url: one in 64 begins with "-", which reads as an option unless it comes after "--".
    assert cli(home, "passkey", "rename", "--", second["id"], "Renamed").returncode == 0
    assert "Renamed" in cli(home, "passkey", "list").stdout
    delete = cli(home, "passkey", "delete", "--", second["id"])
    assert delete.returncode == 0, delete.stderr
    assert "Renamed" not in cli(home, "passkey", "list").stdout
    again = cli(home, "passkey", "delete", "--", second["id"])
    assert again.returncode != 0 and again.stderr.strip(), "deleting twice is a clear error"
    # An id that begins with a dash reaches the server after "--" (a usage error would exit 64).
    dashed = cli(home, "passkey", "delete", "--", "-" + second["id"][1:])
    assert dashed.returncode not in (0, 64) and dashed.stderr.strip(), dashed.stderr


def test_passkey_login_without_a_passkey_is_a_clear_error(server):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    login = cli(home, "login", "--passkey", "--issuer", server.base)
    assert login.returncode != 0
    assert "passkey" in (login.stderr + login.stdout).lower()
    assert "Traceback" not in login.stderr and "Fatal error" not in login.stderr
