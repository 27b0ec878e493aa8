"""What a run's page may use, read from the settings and the data directory: the network it may reach, the stored
state it starts from, the engine's page spec, and where its screenshots are kept."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from profiles.store import StateFileError, check_storage_state_file, profile_path
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import EngineError, FetchOptions, FetchSpec


def network_policy() -> NetworkPolicy:
    """Where runs and synchronous fetches may connect, from ALLOW_PRIVATE_NETWORKS and NETWORK_ALLOWLIST; who answers
    the guard's DNS lookups, from NETWORK_DNS_SERVERS (empty: the system's resolver configuration)."""
    return NetworkPolicy(
        allow_private=settings.ALLOW_PRIVATE_NETWORKS,
        allowlist=tuple(settings.NETWORK_ALLOWLIST),
        nameservers=tuple(settings.NETWORK_DNS_SERVERS),
    )


def storage_state_path(spec: dict) -> str | None:
    """The state file a run starts from; checked again at execution (like at submit), since files change."""
    if spec.get("profile"):
        path = profile_path(settings.DATA_DIR, spec["profile"])
        if not path.is_file():
            raise EngineError("unknown_profile", f"The profile {spec['profile']!r} no longer exists.")
        return str(path)
    if spec.get("storageStatePath"):
        try:
            return str(check_storage_state_file(spec["storageStatePath"], settings.DATA_DIR))
        except StateFileError as error:
            raise EngineError("invalid_storage_state", str(error)) from None
    return None


def screenshot_dir(run_id: str) -> Path:
    return settings.DATA_DIR / "screenshots" / str(run_id)


def screenshot_url(run_id: str, index: int) -> str:
    return f"/api/runs/{run_id}/steps/{index}/screenshot"


def page_spec(spec: dict, *, run: bool) -> FetchSpec:
    """The engine's page to load for an API spec (a run's, or POST /api/fetch's): options, stored state, the network
    policy. run: a run keeps a screenshot in its trace, so render "auto" means the browser ("http" opts out)."""
    options = spec.get("options") or {}
    render = options.get("render") or ("browser" if run else "auto")
    return FetchSpec(
        url=spec["url"],
        options=FetchOptions(
            main_content=options.get("mainContent", True),
            timeout_ms=options.get("timeoutMs", 60_000),
            screenshots=options.get("screenshots", True),
            wait_for=options.get("waitFor"),
            render=("http" if render == "http" else "browser") if run else render,
        ),
        storage_state_path=storage_state_path(spec),
        network=network_policy(),
    )
