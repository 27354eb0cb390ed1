"""django-oauth-toolkit (Jazzband's OAuth 2.0 / OpenID Connect provider for Django) as a third-party provider for
the SDK's tests: a minimal Django project, SQLite in the work directory, on loopback only. `start.sh` sets
DOT_WORKDIR and DOT_RSA_KEY_FILE before Django reads this file."""
import os

WORKDIR = os.environ["DOT_WORKDIR"]
SECRET_KEY = os.environ.get("DOT_SECRET_KEY", "latchkey-test-only-" + "x" * 40)
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1"]
ROOT_URLCONF = "dot_urls"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [{"BACKEND": "django.template.backends.django.DjangoTemplates",
              "DIRS": [os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")], "APP_DIRS": True,
              "OPTIONS": {"context_processors": ["django.template.context_processors.request"]}}]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.path.join(WORKDIR, "dot.sqlite3")}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True
LOGIN_URL = "/accounts/login/"

with open(os.environ["DOT_RSA_KEY_FILE"]) as key_file:
    RSA_KEY = key_file.read()

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_RSA_PRIVATE_KEY": RSA_KEY,
    "PKCE_REQUIRED": True,
    "ROTATE_REFRESH_TOKEN": True,
    # RP-Initiated Logout, as the provider's documentation sets it up: a page for the browser, behind Django's CSRF
    # protection for POST; no prompt when the ID token belongs to the browser's user.
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "OIDC_RP_INITIATED_LOGOUT_STRICT_REDIRECT_URIS": False,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https", "io.latchkey.demo"],
    "SCOPES": {"openid": "OpenID Connect", "profile": "Profile", "email": "Email"},
}
