"""The app-native terminal flows driven the way a person uses them: a pseudo-terminal (pexpect) types at the
prompts of `latchkey login --native`, `latchkey signup` and `latchkey recover`, and reads what the screen shows."""
import os
import tempfile

import pexpect
import requests

from conftest import BINARY, DEMO_PASSWORD, DEMO_USER


def spawn(home, *args):
    child = pexpect.spawn(BINARY, list(args), env={**os.environ, "LATCHKEY_HOME": home}, encoding="utf-8", timeout=30)
    child.logfile_read = open(os.path.join(home, "screen.log"), "a")
    return child


def test_native_login_wrong_then_right_password_hidden(server):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    child = spawn(home, "login", "--native", "--issuer", server.base)
    child.expect("Sign in")
    child.expect("Username or email: ")
    child.sendline(DEMO_USER)
    child.expect("Password: ")
    child.sendline("wrong password 1")
    child.expect("✗ The email or password is incorrect.")
    # The password was typed with echo off: the screen never shows it.
    assert "wrong password 1" not in child.before
    child.expect("Username or email: ")
    child.sendline(DEMO_USER)
    child.expect("Password: ")
    child.sendline(DEMO_PASSWORD)
    child.expect(f"Signed in to {server.base} as {DEMO_USER}.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    screen = open(os.path.join(home, "screen.log")).read()
    assert DEMO_PASSWORD not in screen and "wrong password 1" not in screen

    whoami = pexpect.run(BINARY, args=["whoami"], env={**os.environ, "LATCHKEY_HOME": home}, encoding="utf-8")
    assert DEMO_USER in whoami


def test_signup_shows_field_errors_next_to_prompts_then_signs_in(server):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    child = spawn(home, "signup", "--issuer", server.base)
    child.expect("Create your account")
    child.expect("Username: ")
    child.sendline("terminal-user")
    child.expect("Password: ")
    child.sendline("short")
    child.expect("Username: ")
    child.sendline("terminal-user")
    # The server's field error is shown right above the prompt it belongs to.
    child.expect(r"! Password: The password must be at least 8 characters\s+Password: ")
    child.sendline("a long enough password")
    child.expect("Tell us about yourself")
    child.expect("Email address: ")
    child.sendline("not-an-email")
    child.expect(r"! Email address: Email address is not a valid email\s+Email address: ")
    child.sendline("terminal-user@example.com")
    child.expect(f"Signed in to {server.base} as terminal-user@example.com.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def test_recover_reads_code_from_outbox_only_when_asked(server):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    child = spawn(home, "recover", "--issuer", server.base)
    child.expect("Username or email: ")
    child.sendline(DEMO_USER)
    child.expect("We sent a code by email.")
    child.expect(r"type /2 to Send a new code")
    child.expect(r"or type 'outbox' to read it from the development outbox\): ")
    # Not read automatically: a wrong code typed by the person is refused.
    child.sendline("000000" if requests.get(server.base + "/dev/outbox", params={"recipient": DEMO_USER}).json()["messages"][0]["code"] != "000000" else "111111")
    child.expect("✗ The code is incorrect.")
    child.expect(r"development outbox\): ")
    child.sendline("outbox")
    child.expect(r"Code from the development outbox: ([0-9A-Z]{5}-[0-9A-Z]{5})")  # recovery codes are long
    child.expect("New password: ")
    child.sendline("recovered passphrase 42")
    child.expect("Your password has been changed.")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    login = spawn(home, "login", "--native", "--issuer", server.base)
    login.expect("Username or email: ")
    login.sendline(DEMO_USER)
    login.expect("Password: ")
    login.sendline("recovered passphrase 42")
    login.expect("Signed in to")
    login.expect(pexpect.EOF)
