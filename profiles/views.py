from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from profiles import services
from profiles.serializers import ProfileImportSerializer, ProfileSerializer
from service.kernel.openapi import errors


class ProfileViewSet(viewsets.ViewSet):
    """Stored browser sessions: metadata and cookie summaries only; the state is write-only."""

    lookup_field = "name"
    lookup_value_regex = "[^/]+"

    @extend_schema(responses=ProfileSerializer(many=True))
    def list(self, request: Request) -> Response:
        return Response([info.to_dict() for info in services.store().list()])

    @extend_schema(responses={200: ProfileSerializer, **errors(404)})
    def retrieve(self, request: Request, name: str) -> Response:
        return Response(services.profile_get(name=name).to_dict())

    @extend_schema(responses={204: None, **errors(404)})
    def destroy(self, request: Request, name: str) -> Response:
        services.profile_delete(name=name)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=ProfileImportSerializer, responses={201: ProfileSerializer, 200: ProfileSerializer, **errors(409)}
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_state(self, request: Request) -> Response:
        body = ProfileImportSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        existed = services.store().exists(body.validated_data["name"])
        info = services.profile_import(**body.validated_data)
        return Response(info.to_dict(), status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED)
