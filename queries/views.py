"""Thin adapters over queries/services.py."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from queries import services
from queries.models import SavedQuery
from queries.serializers import (
    QUERY_CREATE,
    QueryCompileSerializer,
    QueryReplaySerializer,
    QuerySpecSerializer,
    SavedQuerySerializer,
)
from runs.serializers import RunSerializer
from service.kernel.openapi import errors


class SavedQueryViewSet(viewsets.ViewSet):
    """Named extract specs: list, create (or promote a run), edit, delete, replay."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    @extend_schema(responses=SavedQuerySerializer(many=True))
    def list(self, request: Request) -> Response:
        return Response(SavedQuerySerializer(SavedQuery.objects.all(), many=True).data)

    @extend_schema(request=QUERY_CREATE, responses={201: SavedQuerySerializer, **errors(404, 409)})
    def create(self, request: Request) -> Response:
        query = services.query_save(request.data)
        return Response(SavedQuerySerializer(query).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: SavedQuerySerializer, **errors(404)})
    def retrieve(self, request: Request, name: str) -> Response:
        return Response(SavedQuerySerializer(services.query_get(name=name)).data)

    @extend_schema(request=QuerySpecSerializer, responses={200: SavedQuerySerializer, **errors(404)})
    def update(self, request: Request, name: str) -> Response:
        return self._update(request, name, partial=False)

    @extend_schema(request=QuerySpecSerializer, responses={200: SavedQuerySerializer, **errors(404)})
    def partial_update(self, request: Request, name: str) -> Response:
        return self._update(request, name, partial=True)

    def _update(self, request: Request, name: str, *, partial: bool) -> Response:
        query = services.query_get(name=name)
        body = QuerySpecSerializer(data=request.data, partial=partial)
        body.is_valid(raise_exception=True)
        query = services.query_update(query=query, changes=body.validated_data)
        return Response(SavedQuerySerializer(query).data)

    @extend_schema(responses={204: None, **errors(404)})
    def destroy(self, request: Request, name: str) -> Response:
        services.query_delete(query=services.query_get(name=name))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=QueryCompileSerializer, responses={200: SavedQuerySerializer, **errors(404, 409)})
    @action(detail=True, methods=["post"], url_path="compile")
    def compile(self, request: Request, name: str) -> Response:
        """Compile a replay's model answer into rules that later replays run first."""
        query = services.query_compile(query=services.query_get(name=name), request=request.data)
        return Response(SavedQuerySerializer(query).data)

    @compile.mapping.delete
    @extend_schema(responses={204: None, **errors(404)})
    def uncompile(self, request: Request, name: str) -> Response:
        services.query_uncompile(query=services.query_get(name=name))
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=QueryReplaySerializer, responses={201: RunSerializer, **errors(404)})
    @action(detail=True, methods=["post"])
    def run(self, request: Request, name: str) -> Response:
        query = services.query_get(name=name)
        run = services.query_replay(query=query, overrides=request.data)
        return Response(RunSerializer(run).data, status=status.HTTP_201_CREATED)
