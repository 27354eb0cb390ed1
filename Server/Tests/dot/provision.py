"""Creates the database, the test user and the public PKCE application (`start.sh` runs it once per work directory)."""
import os
import sys

import django

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dot_settings")
django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from oauth2_provider.models import get_application_model  # noqa: E402

call_command("migrate", verbosity=0, interactive=False)
User = get_user_model()
user = User.objects.create_user(os.environ["DOT_TEST_USER"], email="bob@example.test", password=os.environ["DOT_TEST_PASSWORD"])
Application = get_application_model()
Application.objects.create(
    client_id=os.environ["DOT_CLIENT_ID"], name="latchkey-test", user=user,
    client_type=Application.CLIENT_PUBLIC, authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
    redirect_uris=os.environ["DOT_REDIRECT_URI"], post_logout_redirect_uris=os.environ["DOT_POST_LOGOUT_REDIRECT_URI"],
    algorithm=Application.RS256_ALGORITHM, skip_authorization=True,
)
