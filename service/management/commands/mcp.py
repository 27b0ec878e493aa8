from __future__ import annotations

import anyio
from django.core.management.base import BaseCommand

from service.mcp.server import serve_stdio


class Command(BaseCommand):
    help = (
        "Serve the MCP tools over stdio, for MCP clients that start a command (desktop apps, IDEs). stdout is the "
        "protocol channel; logs go to stderr. Runs started here (run_saved_query, extract, start_agent) are executed "
        "by the service's workers: keep `manage.py serve` running on the same SERVICE_DATA_DIR (or DATABASE_URL). "
        "The same tools are served over streamable HTTP at /api/mcp with an API key."
    )

    def handle(self, *args, **options) -> None:
        anyio.run(serve_stdio)
