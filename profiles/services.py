"""Profile operations used by the API and the `profile` command."""

from __future__ import annotations

from django.conf import settings

from profiles.store import ProfileExists, ProfileInfo, ProfileNotFound, ProfileStore, StateFileError
from service.kernel.errors import ServiceError


def store() -> ProfileStore:
    return ProfileStore(settings.DATA_DIR)


def profile_import(*, name: str, state: object, overwrite: bool = False) -> ProfileInfo:
    try:
        return store().write(name, state, overwrite=overwrite)
    except ProfileExists:
        raise ServiceError(
            "profile_exists",
            f'A profile named {name!r} exists; send "overwrite": true to replace it.',
            status_code=409,
        ) from None
    except StateFileError as error:
        raise ServiceError("invalid_request", str(error), fields={"state": [str(error)]}) from None


def profile_get(*, name: str) -> ProfileInfo:
    try:
        return store().info(name)
    except (ProfileNotFound, StateFileError):
        raise ServiceError("not_found", f"There is no profile named {name!r}.", status_code=404) from None


def profile_delete(*, name: str) -> None:
    try:
        store().delete(name)
    except (ProfileNotFound, StateFileError):
        raise ServiceError("not_found", f"There is no profile named {name!r}.", status_code=404) from None
