#!/usr/bin/env bash
# Start a throwaway glewlwyd (Debian package) OpenID Connect provider on loopback,
# backed by a fresh SQLite file, and configure it for the Latchkey standards-mode test.
#
# Usage: Server/Tests/glewlwyd/start.sh [WORKDIR]
#   WORKDIR        throwaway dir (default: new mktemp dir under /tmp). Wiped if it
#                  already holds a previous run (glewlwyd.db etc).
#   GLEWLWYD_PORT  port on 127.0.0.1 (default 4593)
# Prints ISSUER=..., PID=..., WORKDIR=... and writes $WORKDIR/env (sourceable) and
# /tmp/latchkey-glewlwyd.last (path of the last workdir, used by stop.sh).
set -euo pipefail

PORT="${GLEWLWYD_PORT:-4593}"
HOST=127.0.0.1
BASE="http://${HOST}:${PORT}"
PLUGIN_NAME=oidc                      # OIDC endpoints live under /api/<plugin name>
ISSUER="${BASE}/api/${PLUGIN_NAME}"
ADMIN_USER=admin                      # created by the Debian schema with password "password"
ADMIN_PASS=password
TEST_USER="${GLEWLWYD_TEST_USER:-alice}"
TEST_PASS="${GLEWLWYD_TEST_PASSWORD:-alice-password-1}"
CLIENT_ID=latchkey-test
REDIRECT_URI="http://127.0.0.1:7777/callback"
POST_LOGOUT_URI="http://127.0.0.1:7777/logged-out"
LAST_FILE=/tmp/latchkey-glewlwyd.last

log() { echo "[glewlwyd/start] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------- install
if ! command -v glewlwyd >/dev/null 2>&1 || [ "$(dpkg-query -W -f='${Status}' glewlwyd 2>/dev/null)" != "install ok installed" ]; then
  log "installing glewlwyd from Debian"
  export DEBIAN_FRONTEND=noninteractive
  # The package's postinst in "Personalized" mode needs dbconfig + a real DB and
  # fails with dbconfig-no-thanks; "No configuration" skips all of that.
  echo "glewlwyd glewlwyd/config_type select No configuration" | debconf-set-selections
  if ! apt-cache show glewlwyd >/dev/null 2>&1; then
    timeout 300 apt-get update -qq
  fi
  timeout 600 apt-get install -y -qq --no-install-recommends glewlwyd dbconfig-no-thanks sqlite3 openssl curl jq >/dev/null \
    || { timeout 300 dpkg --configure -a || true; }
  [ "$(dpkg-query -W -f='${Status}' glewlwyd 2>/dev/null)" = "install ok installed" ] || die "glewlwyd install failed"
fi
for tool in sqlite3 openssl curl jq; do
  command -v "$tool" >/dev/null || { DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq "$tool" >/dev/null; }
done
GLEWLWYD_VERSION="$(dpkg-query -W -f='${Version}' glewlwyd)"

# ---------------------------------------------------------------- schema
SCHEMA=""
for f in /usr/share/dbconfig-common/data/glewlwyd/install/sqlite3; do
  [ -f "$f" ] && SCHEMA="$f"
done
if [ -z "$SCHEMA" ]; then
  SCHEMA="$(dpkg -L glewlwyd | grep -E 'init\.sqlite3\.sql(\.gz)?$' | head -n1 || true)"
fi
[ -n "$SCHEMA" ] || die "no SQLite schema found in 'dpkg -L glewlwyd'"

# ---------------------------------------------------------------- workdir
if [ -n "${1:-}" ]; then
  WORK="$1"
  mkdir -p "$WORK"
  if [ -f "$WORK/glewlwyd.pid" ] && kill -0 "$(cat "$WORK/glewlwyd.pid")" 2>/dev/null; then
    die "a glewlwyd from $WORK is still running (pid $(cat "$WORK/glewlwyd.pid")); run stop.sh first"
  fi
  rm -f "$WORK/glewlwyd.db" "$WORK/glewlwyd.conf" "$WORK/private.pem" "$WORK/public.pem" \
        "$WORK/glewlwyd.log" "$WORK/admin.cookies" "$WORK/env" "$WORK/glewlwyd.pid"
  rm -rf "$WORK/webapp"
else
  WORK="$(mktemp -d /tmp/latchkey-glewlwyd.XXXXXX)"
fi
WORK="$(cd "$WORK" && pwd)"
chmod 700 "$WORK"

if (exec 3<>"/dev/tcp/${HOST}/${PORT}") 2>/dev/null; then
  die "something already listens on ${HOST}:${PORT} (set GLEWLWYD_PORT or run stop.sh)"
fi

log "workdir $WORK, schema $SCHEMA"
case "$SCHEMA" in
  *.gz) zcat "$SCHEMA" | timeout 60 sqlite3 "$WORK/glewlwyd.db" ;;
  *)    timeout 60 sqlite3 "$WORK/glewlwyd.db" < "$SCHEMA" ;;
esac

# ---------------------------------------------------------------- signing key (never committed)
timeout 60 openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/private.pem" 2>/dev/null
timeout 60 openssl pkey -in "$WORK/private.pem" -pubout -out "$WORK/public.pem" 2>/dev/null
chmod 600 "$WORK/private.pem"

# ---------------------------------------------------------------- login web app (glewlwyd-common)
# The package's webapp/config.json is a symlink to /etc/glewlwyd/config-2.7.json, which this Debian
# package installs as a *directory* holding config.json, so the web app cannot load its settings from
# the packaged tree. Serve a per-workdir copy (~2 MB) instead, with the real config.json (GlewlwydUrl
# "./": the app talks to whatever origin served it). Not symlinks: glewlwyd's static file server answers
# 404 for a file whose real path is outside its folder. Never request a directory under it (GET /fonts/):
# glewlwyd answers an empty 200 and a thread then spins until it is stopped.
WEBAPP_SRC=/usr/share/glewlwyd/webapp
WEBAPP="$WORK/webapp"
STATIC_CONF=""
if [ -f "$WEBAPP_SRC/login.html" ]; then
  rm -rf "$WEBAPP"; mkdir -p "$WEBAPP"
  for entry in "$WEBAPP_SRC"/*; do
    [ "$(basename "$entry")" = config.json ] || cp -RL "$entry" "$WEBAPP/"
  done
  for c in /etc/glewlwyd/config-2.7.json/config.json /etc/glewlwyd/config-2.7.json "$WEBAPP_SRC/config.json"; do
    if [ -f "$c" ]; then cp "$c" "$WEBAPP/config.json"; break; fi
  done
  [ -f "$WEBAPP/config.json" ] || die "glewlwyd web app: no config.json found"
  mime() { printf '  { extension = "%s"\n    mime_type = "%s"\n    compress = %s },\n' "$1" "$2" "$3"; }
  STATIC_CONF="static_files_path=\"${WEBAPP}/\"
static_files_mime_types =
(
$(mime .html text/html 1; mime .css text/css 1; mime .js application/javascript 1; mime .json application/json 1
  mime .png image/png 0; mime .jpg image/jpeg 0; mime .ico image/x-icon 0; mime .ttf font/ttf 0
  mime .woff font/woff 0; mime .woff2 font/woff2 0; mime .eot application/vnd.ms-fontobject 0 | sed '$ s/,$//')
);"
else
  log "glewlwyd web app (login.html) not installed: only the REST login works"
fi

# ---------------------------------------------------------------- server config (libconfig syntax)
cat > "$WORK/glewlwyd.conf" <<CONF
${STATIC_CONF}
port=${PORT}
bind_address="${HOST}"
external_url="${BASE}"
login_url="login.html"
api_prefix="api"
allow_origin="*"
log_mode="file"
log_level="${GLEWLWYD_LOG_LEVEL:-INFO}"
log_file="${WORK}/glewlwyd.log"
cookie_secure=0
cookie_same_site="empty"
session_expiration=3600
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
plugin_api_run_enabled=""
add_x_frame_option_header_deny=true
max_post_size=16778240
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="/usr/lib/glewlwyd/user"
client_module_path="/usr/lib/glewlwyd/client"
user_auth_scheme_module_path="/usr/lib/glewlwyd/scheme"
plugin_module_path="/usr/lib/glewlwyd/plugin"
hash_algorithm="SHA512"
database =
{
  type = "sqlite3"
  path = "${WORK}/glewlwyd.db"
};
CONF

# ---------------------------------------------------------------- start
log "starting glewlwyd ${GLEWLWYD_VERSION} on ${BASE}"
nohup glewlwyd --config-file="$WORK/glewlwyd.conf" >"$WORK/stdout.log" 2>&1 </dev/null &
PID=$!
echo "$PID" > "$WORK/glewlwyd.pid"
echo "$WORK" > "$LAST_FILE"

wait_http() { # url expected-code tries
  local i code
  for i in $(seq 1 "$3"); do
    kill -0 "$PID" 2>/dev/null || { tail -n 30 "$WORK/glewlwyd.log" "$WORK/stdout.log" >&2 || true; die "glewlwyd exited"; }
    code="$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" || true)"
    [ "$code" = "$2" ] && return 0
    sleep 0.25
  done
  die "timeout waiting for $1 (last HTTP $code)"
}
wait_http "${BASE}/config" 200 120

# ---------------------------------------------------------------- admin REST configuration
JAR="$WORK/admin.cookies"
api() { # METHOD PATH [JSON]
  local out code
  out="$(mktemp)"
  if [ $# -ge 3 ]; then
    code="$(curl -s -m 20 -o "$out" -w '%{http_code}' -b "$JAR" -c "$JAR" -X "$1" -H 'Content-Type: application/json' --data-binary "$3" "${BASE}/api$2")"
  else
    code="$(curl -s -m 20 -o "$out" -w '%{http_code}' -b "$JAR" -c "$JAR" -X "$1" "${BASE}/api$2")"
  fi
  if [ "${code:0:1}" != "2" ]; then
    log "$1 /api$2 -> HTTP $code: $(head -c 600 "$out")"; rm -f "$out"; die "admin API call failed"
  fi
  log "$1 /api$2 -> $code"
  rm -f "$out"
}

api POST /auth/ "$(jq -nc --arg u "$ADMIN_USER" --arg p "$ADMIN_PASS" '{username:$u,password:$p}')"

# "retype-password" auth scheme instance (glewlwyd's password scheme module). glewlwyd only
# accepts a scheme login (POST /api/auth with scheme_type) for a scheme attached to a scope,
# so it is attached as a required factor of the "profile" scope unless
# GLEWLWYD_PASSWORD_SCHEME_REQUIRED=0.
api POST /mod/scheme/ '{"module":"retype-password","name":"password","display_name":"Password","expiration":600,"max_use":0,"allow_user_register":false,"parameters":{}}'

# scopes (openid already exists in the schema, with no password; require the password)
api PUT /scope/openid '{"name":"openid","display_name":"Open ID","description":"Open ID Connect scope","password_required":true,"password_max_age":0,"scheme":{}}'
for s in profile email offline_access; do
  if [ "$s" = profile ] && [ "${GLEWLWYD_PASSWORD_SCHEME_REQUIRED:-1}" = 1 ]; then
    scheme='{"0":[{"scheme_type":"retype-password","scheme_name":"password"}]}'; req='{"0":1}'
  else
    scheme='{}'; req='{}'
  fi
  api POST /scope/ "$(jq -nc --arg n "$s" --argjson sc "$scheme" --argjson rq "$req" \
    '{name:$n,display_name:$n,description:("OIDC scope " + $n),password_required:true,password_max_age:0,scheme:$sc,scheme_required:$rq}')"
done

# The database user backend keeps only the properties its data-format lists: add "email_verified", so a
# user created with "email_verified":"true" gets the claim below (alice has none: her tokens carry no
# email_verified at all, glewlwyd's default). The federation system test creates such a user.
api PUT /mod/user/database '{"module":"database","name":"database","display_name":"Database backend","order_rank":0,"readonly":false,
 "parameters":{"use-glewlwyd-connection":true,"data-format":{
  "picture":{"multiple":false,"read":true,"write":true,"profile-read":true,"profile-write":true},
  "reset-credentials-code":{"multiple":false,"read":true,"write":true,"profile-read":false,"profile-write":false},
  "user-code":{"multiple":false,"read":true,"write":true,"profile-read":true,"profile-write":true},
  "email_verified":{"multiple":false,"read":true,"write":true,"profile-read":true,"profile-write":false}}}}'
api PUT /mod/user/database/reset   # the running instance keeps its old data-format until reset

# test user (database user backend from the schema)
api POST /user/ "$(jq -nc --arg u "$TEST_USER" --arg p "$TEST_PASS" \
  '{username:$u,password:$p,name:"Alice Latchkey",email:"alice@example.test",enabled:true,
    scope:["openid","profile","email","offline_access","g_profile"]}')"

# OIDC plugin instance
PLUGIN_JSON="$(jq -nc \
  --arg iss "$ISSUER" --arg name "$PLUGIN_NAME" \
  --rawfile key "$WORK/private.pem" --rawfile cert "$WORK/public.pem" '
{module:"oidc", name:$name, display_name:"OpenID Connect", order_rank:0, readonly:false,
 parameters:{
  "iss":$iss, "oauth-as-iss-id":false,
  "jwt-type":"rsa","jwt-key-size":"256","key":$key,"cert":$cert,
  "jwks-uri":"","jwks-private":"","default-kid":"","client-sign_kid-parameter":"","jwks-public":"","jwks-public-uri":"",
  "jwks-show":true,"jwks-x5c":[],
  "access-token-duration":3600,"refresh-token-duration":1209600,"code-duration":600,
  "refresh-token-rolling":true,"refresh-token-one-use":"never",
  "client-refresh-token-one-use-parameter":"refresh-token-one-use",
  "allow-non-oidc":false,
  "auth-type-code-enabled":true,"auth-type-code-revoke-replayed":false,
  "auth-type-token-enabled":false,"auth-type-id-token-enabled":true,"auth-type-none-enabled":false,
  "auth-type-password-enabled":false,"auth-type-client-enabled":false,"auth-type-device-enabled":false,
  "auth-type-refresh-enabled":true,
  "scope":[],"additional-parameters":[],
  "claims":[{"name":"email_verified","user-property":"email_verified","type":"boolean",
             "boolean-value-true":"true","boolean-value-false":"false","mandatory":false,"on-demand":false,"scope":["email"]}],
  "service-documentation":"","op-policy-uri":"","op-tos-uri":"",
  "request-parameter-allow":false,"request-uri-allow-https-non-secure":false,
  "request-parameter-allow-encrypted":false,"request-parameter-ietf-strict":false,
  "secret-type":"public",
  "address-claim":{"type":"no","formatted":"","street_address":"","locality":"","region":"","postal_code":"","country":"","mandatory":false},
  "name-claim":"on-demand","name-claim-scope":["profile"],
  "email-claim":"on-demand","email-claim-scope":["email"],
  "scope-claim":"no","scope-claim-scope":[],
  "allowed-scope":["openid","profile","email","offline_access"],
  "pkce-allowed":true,"pkce-method-plain-allowed":false,"pkce-required":false,"pkce-required-public-client":false,"pkce-scopes":[],
  "introspection-revocation-allowed":true,"introspection-revocation-auth-scope":["openid"],
  "introspection-revocation-allow-target-client":true,
  "register-client-allowed":false,"register-client-auth-scope":[],"register-client-credentials-scope":[],
  "register-client-token-one-use":true,"register-client-management-allowed":false,
  "register-resource-specify-allowed":false,"register-resource-default":[],"register-default-properties":{},
  "session-management-allowed":true,"session-cookie-name":"GLEWLWYD2_OIDC_SID","session-cookie-expiration":3600,
  "front-channel-logout-allowed":false,"back-channel-logout-allowed":false,
  "client-pubkey-parameter":"","client-jwks-parameter":"jwks","client-jwks_uri-parameter":"jwks_uri",
  "request-maximum-exp":3600,"encrypt-out-token-allow":false,
  "client-enc-parameter":"enc","client-alg-parameter":"alg","client-alg_kid-parameter":"alg_kid",
  "client-encrypt_code-parameter":"encrypt_code","client-encrypt_at-parameter":"encrypt_at",
  "client-encrypt_userinfo-parameter":"encrypt_userinfo","client-encrypt_id_token-parameter":"encrypt_id_token",
  "client-encrypt_refresh_token-parameter":"encrypt_refresh_token","client-encrypt_introspection-parameter":"encrypt_introspection",
  "device-authorization-expiration":600,"device-authorization-interval":5,
  "client-cert-header-name":"SSL_CLIENT_CERT","client-cert-use-endpoint-aliases":false,"client-cert-self-signed-allowed":false,
  "oauth-dpop-allowed":false,"oauth-dpop-iat-duration":10,
  "resource-allowed":false,"resource-scope":{},"resource-client-property":"","resource-scope-and-client-property":false,
  "oauth-rar-allowed":false,"rar-types-client-property":"authorization_details_types","rar-allow-auth-unsigned":false,
  "rar-allow-auth-unencrypted":true,"rar-types":{},
  "oauth-par-allowed":false,"oauth-par-duration":90,"oauth-par-required":false,
  "oauth-par-request_uri-prefix":"urn:ietf:params:oauth:request_uri:",
  "prompt-continue-client-property":"","restrict-scope-client-property":"",
  "oauth-ciba-allowed":false,
  "oauth-fapi-check-all":false,"oauth-fapi-allow-jarm":false,"oauth-fapi-add-s_hash":false,"oauth-fapi-verify-nbf":false,
  "oauth-fapi-allow-restrict-alg":false,"oauth-fapi-restrict-alg":[],"oauth-fapi-allow-multiple-kid":false,
  "oauth-fapi-ciba-confidential-client":false,"oauth-fapi-ciba-push-forbidden":false
 }}')"
api POST /mod/plugin/ "$PLUGIN_JSON"

# public client
api POST /client/ "$(jq -nc --arg c "$CLIENT_ID" --arg r "$REDIRECT_URI" --arg l "$POST_LOGOUT_URI" '
{client_id:$c,name:"Latchkey SDK test client",description:"public client for Latchkey standards-mode tests",
 enabled:true,confidential:false,scope:[],
 redirect_uri:[$r],authorization_type:["code","refresh_token"],
 token_endpoint_auth_method:["none"],post_logout_redirect_uri:$l}')"

wait_http "${ISSUER}/.well-known/openid-configuration" 200 80
rm -f "$JAR"

cat > "$WORK/env" <<ENV
GLEWLWYD_BASE=${BASE}
GLEWLWYD_ISSUER=${ISSUER}
GLEWLWYD_PID=${PID}
GLEWLWYD_WORKDIR=${WORK}
GLEWLWYD_CLIENT_ID=${CLIENT_ID}
GLEWLWYD_REDIRECT_URI=${REDIRECT_URI}
GLEWLWYD_POST_LOGOUT_REDIRECT_URI=${POST_LOGOUT_URI}
GLEWLWYD_TEST_USER=${TEST_USER}
GLEWLWYD_TEST_PASSWORD=${TEST_PASS}
GLEWLWYD_VERSION=${GLEWLWYD_VERSION}
ENV
log "ready"
echo "ISSUER=${ISSUER}"
echo "PID=${PID}"
echo "WORKDIR=${WORK}"
