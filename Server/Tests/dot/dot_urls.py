"""The provider under /o (so its issuer has a path), RFC 8414 metadata at the root as the provider's documentation asks
for prefixed deployments, and Django's own login page."""
from django.contrib.auth import views as auth_views
from django.urls import include, path
from oauth2_provider import urls as oauth2_urls

urlpatterns = [
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
    path("", include((oauth2_urls.metadata_urlpatterns, "oauth2_metadata"))),
    path("accounts/login/", auth_views.LoginView.as_view(template_name="login.html"), name="login"),
]
