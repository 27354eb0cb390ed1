#!/usr/bin/env bash
# Starts django-oauth-toolkit (Jazzband's OAuth 2.0 / OpenID Connect provider for Django, from PyPI) on loopback as a
# second third-party provider for the SDK's tests: a fresh SQLite database and RSA key in WORKDIR, one user, one
# public PKCE application. Writes WORKDIR/env (sourceable) for `DjangoOAuthToolkitTests`.
#
# Usage: Server/Tests/dot/start.sh WORKDIR     (DOT_PORT: the port on 127.0.0.1, default a free one)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${1:?usage: start.sh WORKDIR}"
PORT="${DOT_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
mkdir -p "$WORK" && chmod 700 "$WORK"
WORK="$(cd "$WORK" && pwd)"
log() { echo "[dot/start] $*" >&2; }

python3 -c "import django, oauth2_provider" 2>/dev/null || { log "installing django-oauth-toolkit"; python3 -m pip install -q django-oauth-toolkit; }
if (exec 3<>"/dev/tcp/127.0.0.1/${PORT}") 2>/dev/null; then log "something already listens on 127.0.0.1:${PORT}"; exit 1; fi

export DOT_WORKDIR="$WORK" DOT_RSA_KEY_FILE="$WORK/rsa.pem"
export DOT_TEST_USER=bob DOT_TEST_PASSWORD="bob-password-1" DOT_CLIENT_ID=latchkey-dot
export DOT_REDIRECT_URI="http://127.0.0.1:7777/callback" DOT_POST_LOGOUT_REDIRECT_URI="http://127.0.0.1:7777/logout"
export DOT_SECRET_KEY="$(python3 -c 'import secrets; print(secrets.token_urlsafe(48))')"
python3 -c "
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives import serialization
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
open('$DOT_RSA_KEY_FILE', 'wb').write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))"
chmod 600 "$DOT_RSA_KEY_FILE"
python3 "$HERE/provision.py"

cd "$HERE"
nohup python3 -m django runserver "127.0.0.1:${PORT}" --noreload --settings dot_settings --pythonpath "$HERE" >"$WORK/dot.log" 2>&1 &
echo $! >"$WORK/dot.pid"
for _ in $(seq 1 120); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:${PORT}/o/.well-known/openid-configuration', timeout=2)" 2>/dev/null; then
    break
  fi
  kill -0 "$(cat "$WORK/dot.pid")" 2>/dev/null || { cat "$WORK/dot.log" >&2; log "django-oauth-toolkit did not start"; exit 1; }
  sleep 0.5
done
VERSION="$(python3 -c 'import oauth2_provider, django; print(oauth2_provider.__version__, "on Django", django.__version__)')"
cat >"$WORK/env" <<ENV
DOT_BASE=http://127.0.0.1:${PORT}
DOT_ISSUER=http://127.0.0.1:${PORT}/o
DOT_CLIENT_ID=${DOT_CLIENT_ID}
DOT_REDIRECT_URI=${DOT_REDIRECT_URI}
DOT_POST_LOGOUT_REDIRECT_URI=${DOT_POST_LOGOUT_REDIRECT_URI}
DOT_TEST_USER=${DOT_TEST_USER}
DOT_TEST_PASSWORD=${DOT_TEST_PASSWORD}
DOT_VERSION=${VERSION}
ENV
log "django-oauth-toolkit ${VERSION} on http://127.0.0.1:${PORT} (pid $(cat "$WORK/dot.pid"), workdir $WORK)"
