"""`latchkey mfa` against the real server: a person signed in with a passkey adds an authenticator app (the key shown
once, a wrong first code refused, the right one accepted), makes recovery codes (shown once, never kept), lists and
removes it (the codes go with the last factor); emailed codes without a verified address are a clear error."""
import base64
import hashlib
import hmac
import os
import re
import struct
import subprocess
import tempfile
import time

from conftest import BINARY
from test_cli import cli


def totp(secret_base32, at):
    """RFC 6238 (SHA-1, 30 s, 6 digits), as an authenticator app computes it."""
    key = base64.b32decode(secret_base32 + "=" * (-len(secret_base32) % 8))
    digest = hmac.new(key, struct.pack(">Q", int(at // 30)), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset:offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


def test_mfa_enroll_list_remove(server):
    home = tempfile.mkdtemp(prefix="latchkey-home-")
    signup = cli(home, "signup", "--passkey", "--issuer", server.base, "--email", "mfa-cli@example.com", "--passkey-name", "Terminal")
    assert signup.returncode == 0, signup.stderr + signup.stdout

    empty = cli(home, "mfa", "list")
    assert empty.returncode == 0 and "No second factors." in empty.stdout, empty.stderr

    email = cli(home, "mfa", "enroll", "email")
    assert email.returncode == 1 and "no verified email address" in email.stderr, email.stderr

    enroll = subprocess.Popen([BINARY, "mfa", "enroll", "totp"], env={**os.environ, "LATCHKEY_HOME": home},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert enroll.stdout.readline().startswith("Add this key")
    uri = enroll.stdout.readline().strip()
    key_line = enroll.stdout.readline().strip()
    assert uri.startswith("otpauth://totp/") and key_line.startswith("Key: "), (uri, key_line)
    secret = key_line[len("Key: "):]
    assert f"secret={secret}" in uri
    now = time.time()
    window = {totp(secret, now + offset) for offset in (-30, 0, 30)}
    wrong = next(code for code in ("000000", "111111", "222222", "333333") if code not in window)
    out, err = enroll.communicate(input=f"{wrong}\n{totp(secret, time.time())}\n", timeout=60)
    assert enroll.returncode == 0, out + err
    assert "That code is not right" in err and "Authenticator app added" in out, out + err
    # The key was shown, never kept: not in the profile, the stored session or anywhere else in $LATCHKEY_HOME.
    for folder, _, files in os.walk(home):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                assert secret.encode() not in f.read(), os.path.join(folder, name)

    listed = cli(home, "mfa", "list")
    assert listed.returncode == 0 and listed.stdout.startswith("totp\tadded "), listed.stdout + listed.stderr
    assert "recovery codes" not in listed.stdout

    # Recovery codes: ten, shown once, never kept; a second set replaces the first.
    made = cli(home, "mfa", "recovery-codes")
    assert made.returncode == 0, made.stderr
    codes = [line for line in made.stdout.splitlines() if re.fullmatch(r"[0-9A-HJKMNP-TV-Z]{5}-[0-9A-HJKMNP-TV-Z]{5}", line)]
    assert len(codes) == 10 and len(set(codes)) == 10, made.stdout
    assert "10 of 10 unused" in cli(home, "mfa", "list").stdout
    for folder, _, files in os.walk(home):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                content = f.read()
                assert not any(code.encode() in content for code in codes), os.path.join(folder, name)

    removed = cli(home, "mfa", "remove", "totp")
    assert removed.returncode == 0 and "removed" in removed.stdout, removed.stderr
    again = cli(home, "mfa", "remove", "totp")
    assert again.returncode == 1 and "no totp factor" in again.stderr, again.stderr
    final = cli(home, "mfa", "list")
    # The last factor took its recovery codes with it; new ones need a factor to stand in for.
    assert "No second factors." in final.stdout and "recovery codes" not in final.stdout, final.stdout
    orphan = cli(home, "mfa", "recovery-codes")
    assert orphan.returncode == 1 and "no usable second factor" in orphan.stderr, orphan.stderr
