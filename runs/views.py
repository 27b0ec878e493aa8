"""Thin adapters: validate, call one service, serialize."""

from __future__ import annotations

import uuid

from django.core.handlers.asgi import ASGIRequest
from django.http import FileResponse, HttpResponse, StreamingHttpResponse
from django.utils import timezone
from django.utils.cache import get_conditional_response, set_response_etag
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, PolymorphicProxySerializer, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from runs import archive, direct, export, resources, services, webhooks
from runs.models import Batch, Run, Webhook
from runs.serializers import (
    RUN_SPEC,
    RUNS_PAGE_DEFAULT,
    RUNS_PAGE_MAX,
    BatchCreatedSerializer,
    BatchSerializer,
    BatchSubmitSerializer,
    DeliveryAttemptSerializer,
    ExportParamsSerializer,
    FetchRequestSerializer,
    FetchResponseSerializer,
    ReextractSerializer,
    RunDetailSerializer,
    RunFilterSerializer,
    RunListParamsSerializer,
    RunSerializer,
    RunSummarySerializer,
    SearchRequestSerializer,
    SearchResponseSerializer,
    WebhookCreatedSerializer,
    WebhookCreateSerializer,
    WebhookSerializer,
)
from service.kernel.errors import ServiceError
from service.kernel.openapi import errors


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


class NewestFirst(CursorPagination):
    """Pages by cursor: `limit` (checked by RunListParamsSerializer first) and `cursor`, taken from the
    answer's `next` and `previous` URLs."""

    ordering = "-created_at"
    page_size = RUNS_PAGE_DEFAULT
    page_size_query_param = "limit"
    max_page_size = RUNS_PAGE_MAX

    def decode_cursor(self, request):
        try:
            return super().decode_cursor(request)
        except NotFound:  # DRF answers a mangled cursor with 404; it is bad input
            message = "Not a cursor this API gave out; follow an answer's next URL, or start again without cursor."
            raise ServiceError("invalid_request", f"cursor: {message}", fields={"cursor": [message]}) from None


class RunViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Submit, list, inspect and cancel runs."""

    pagination_class = NewestFirst

    def get_queryset(self):
        runs = Run.objects.all()
        if self.action == "retrieve":
            return runs.prefetch_related("steps")
        if self.action == "list":
            params = RunListParamsSerializer(data=self.request.query_params)
            params.is_valid(raise_exception=True)
            filters = {k: v for k, v in params.validated_data.items() if k not in ("limit", "cursor", "include")}
            runs = runs.filter_by(**filters)
            if not self.whole_runs_listed():
                runs = runs.summaries()
        return runs

    def whole_runs_listed(self) -> bool:
        return self.request.query_params.get("include") == "result"

    def get_object(self) -> Run:
        run = self.get_queryset().filter(pk=self.kwargs["pk"]).first() if is_uuid(self.kwargs["pk"]) else None
        if run is None:
            raise ServiceError("not_found", f"There is no run {self.kwargs['pk']}.", status_code=404)
        self.check_object_permissions(self.request, run)
        return run

    def get_serializer_class(self):
        if self.action == "retrieve":
            return RunDetailSerializer
        if self.action == "list" and not self.whole_runs_listed():
            return RunSummarySerializer
        return RunSerializer

    @extend_schema(responses={200: RunDetailSerializer, 304: None, **errors(404)})
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        """A run with its whole trace. The answer has an ETag: send it back as If-None-Match and an unchanged run
        is answered 304 without a body (for clients that poll a run)."""
        return super().retrieve(request, *args, **kwargs)

    def finalize_response(self, request: Request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if self.action == "retrieve" and response.status_code == 200:
            response.render()
            set_response_etag(response)
            response = get_conditional_response(request, etag=response["ETag"], response=response)
        return response

    @extend_schema(
        parameters=[RunListParamsSerializer],
        responses={200: PolymorphicProxySerializer("RunListItem", [RunSummarySerializer, RunSerializer], None)},
    )
    def list(self, request: Request, *args, **kwargs) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(request=RUN_SPEC, responses={201: RunSerializer})
    def create(self, request: Request) -> Response:
        run = services.run_submit(spec=request.data)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: RunSerializer, **errors(404, 409)})
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        run = services.run_cancel(run=self.get_object())
        return Response(RunSerializer(self.get_queryset().get(pk=run.pk)).data)

    @extend_schema(request=ReextractSerializer, responses={201: RunSerializer, **errors(404, 409)})
    @action(detail=True, methods=["post"])
    def reextract(self, request: Request, pk: str | None = None) -> Response:
        """Extract again from the page this run archived (no request leaves the machine); drift against its result."""
        run = services.run_reextract(source=self.get_object(), changes=request.data)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={(200, "image/jpeg"): bytes, **errors(404)})
    @action(detail=True, methods=["get"], url_path=r"steps/(?P<index>\d+)/screenshot")
    def screenshot(self, request: Request, pk: str | None = None, index: str | None = None) -> FileResponse:
        run = self.get_object()
        step = run.steps.filter(index=int(index)).first()
        if step is None or not step.screenshot:
            raise ServiceError("not_found", "This step has no screenshot.", status_code=404)
        path = resources.screenshot_dir(run.pk) / step.screenshot
        if not path.is_file():
            raise ServiceError("not_found", "The screenshot file is missing from the data directory.", status_code=404)
        return FileResponse(path.open("rb"), content_type="image/jpeg")

    @extend_schema(responses={(200, "text/html"): bytes, **errors(404)})
    @action(detail=True, methods=["get"], url_path=r"steps/(?P<index>\d+)/page")
    def page(self, request: Request, pk: str | None = None, index: str | None = None) -> HttpResponse:
        """The HTML a step loaded, as archived: a download that no browser renders in the service's origin."""
        run = self.get_object()
        step = run.steps.filter(index=int(index)).first()
        archived = archive.open_page(step) if step is not None else None
        if archived is None:
            raise ServiceError("not_found", "This step has no archived page (or it was pruned).", status_code=404)
        with archived:
            response = HttpResponse(archived.read(), content_type="text/html; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-step-{step.index}.html"'
        response["Content-Security-Policy"] = "sandbox"
        response["X-Content-Type-Options"] = "nosniff"
        return response


class BatchViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Submit many runs at once; follow them by counts (GET /api/runs?batch=<id> lists them)."""

    queryset = Batch.objects.all()
    serializer_class = BatchSerializer

    @extend_schema(responses={200: BatchSerializer, **errors(404)})
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        return super().retrieve(request, *args, **kwargs)

    def get_object(self) -> Batch:
        batch = Batch.objects.filter(pk=self.kwargs["pk"]).first() if is_uuid(self.kwargs["pk"]) else None
        if batch is None:
            raise ServiceError("not_found", f"There is no batch {self.kwargs['pk']}.", status_code=404)
        return batch

    @extend_schema(request=BatchSubmitSerializer, responses={201: BatchCreatedSerializer})
    def create(self, request: Request) -> Response:
        submitted = BatchSubmitSerializer(data=request.data)
        submitted.is_valid(raise_exception=True)
        batch, runs = services.batch_submit(specs=submitted.validated_data["runs"])
        return Response({"id": str(batch.pk), "runs": [str(run.pk) for run in runs]}, status=status.HTTP_201_CREATED)


class ExportView(APIView):
    """Every run matching the filters of GET /api/runs, streamed as one JSON array or CSV file."""

    @extend_schema(
        parameters=[OpenApiParameter("format", enum=list(export.FORMATS), required=True), RunFilterSerializer],
        responses={
            (200, "application/json"): {"type": "array", "items": {"type": "object"}},
            (200, "text/csv"): OpenApiTypes.STR,
        },
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        params = ExportParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        filters = dict(params.validated_data)
        fmt = filters.pop("format")
        runs = Run.objects.filter_by(**filters).order_by("created_at", "id")
        chunks = export.FORMATS[fmt](runs)
        if isinstance(request._request, ASGIRequest):  # daphne: stream it, do not collect it first
            chunks = export.asynchronous(chunks)
        response = StreamingHttpResponse(chunks, content_type=export.CONTENT_TYPES[fmt])
        name = f"run-{filters['id']}" if filters.get("id") else f"runs-{timezone.now().strftime('%Y%m%d-%H%M%S')}"
        response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
        return response


class FetchView(APIView):
    """A page as Markdown, now (not kept as a run unless persist is true)."""

    @extend_schema(request=FetchRequestSerializer, responses={200: FetchResponseSerializer, **errors(502, 504)})
    def post(self, request: Request) -> Response:
        return Response(direct.fetch_page(request.data))


class SearchView(APIView):
    """Web search through SearXNG, optionally with every result's page as Markdown."""

    @extend_schema(request=SearchRequestSerializer, responses={200: SearchResponseSerializer, **errors(502, 503)})
    def post(self, request: Request) -> Response:
        return Response({"results": direct.search(request.data)})


class WebhookViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """URLs told about runs as they end, in signed deliveries (runs/webhooks.py)."""

    queryset = Webhook.objects.all()
    serializer_class = WebhookSerializer
    pagination_class = None

    def get_object(self) -> Webhook:
        hook = Webhook.objects.filter(pk=self.kwargs["pk"]).first() if is_uuid(self.kwargs["pk"]) else None
        if hook is None:
            raise ServiceError("not_found", f"There is no webhook {self.kwargs['pk']}.", status_code=404)
        return hook

    @extend_schema(request=WebhookCreateSerializer, responses={201: WebhookCreatedSerializer})
    def create(self, request: Request) -> Response:
        """Subscribe a URL; the answer holds the signing secret, shown this once."""
        hook = webhooks.subscribe(request.data)
        return Response(WebhookCreatedSerializer(hook).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: WebhookSerializer, **errors(404)})
    def retrieve(self, request: Request, *args, **kwargs) -> Response:
        return super().retrieve(request, *args, **kwargs)

    @extend_schema(responses={204: None, **errors(404)})
    def destroy(self, request: Request, pk: str | None = None) -> Response:
        """The webhook goes, with its deliveries: none is sent after this."""
        webhooks.unsubscribe(self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(responses={200: DeliveryAttemptSerializer(many=True), **errors(404)})
    @action(detail=True, methods=["get"])
    def deliveries(self, request: Request, pk: str | None = None) -> Response:
        """The last 100 delivery attempts, newest first: event, status code, duration, error."""
        return Response(DeliveryAttemptSerializer(webhooks.recent_attempts(self.get_object()), many=True).data)
