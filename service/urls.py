from __future__ import annotations

from django.contrib import admin
from django.urls import include, path, re_path
from rest_framework.routers import SimpleRouter

from profiles.views import ProfileViewSet
from queries.views import SavedQueryViewSet
from runs.views import BatchViewSet, ExportView, FetchView, RunViewSet, SearchView, WebhookViewSet
from service import views
from service.kernel.errors import api_not_found

router = SimpleRouter(trailing_slash=False)
router.register("runs", RunViewSet, basename="run")
router.register("batches", BatchViewSet, basename="batch")
router.register("queries", SavedQueryViewSet, basename="query")
router.register("profiles", ProfileViewSet, basename="profile")
router.register("webhooks", WebhookViewSet, basename="webhook")

api = [
    path("health", views.health, name="health"),
    path("metrics", views.MetricsView.as_view(), name="metrics"),
    path("session", views.SessionView.as_view(), name="session"),
    path("schema", views.SchemaView.as_view(), name="schema"),
    path("docs", views.DocsView.as_view(url_name="schema"), name="docs"),
    path("export", ExportView.as_view(), name="export"),
    path("fetch", FetchView.as_view(), name="fetch"),
    path("search", SearchView.as_view(), name="search"),
    *router.urls,
]

urlpatterns = [
    path("api/", include(api)),
    re_path(r"^api/.*$", api_not_found),
    path("admin/", admin.site.urls),
    path("", views.home, name="home"),
    # Client-side routes of the playground (/history, /runs/<id>…): its index.html. Not /api, /admin, /static or
    # the build's /assets, and not names with a file extension (a missing file stays a 404).
    re_path(r"^(?!(?:api|admin|static|assets)(?:/|$))(?!.*\.[A-Za-z0-9]+$).+$", views.home, name="playground"),
]

handler404 = "service.kernel.errors.api_not_found"
handler500 = "service.kernel.errors.api_server_error"
