"""The one rule for names users give things: profiles, credentials, saved queries, API keys."""

from __future__ import annotations

import re

NAME_PATTERN = re.compile(r"^[a-z0-9_-]{1,64}$")
NAME_RULE = "1 to 64 characters of a-z, 0-9, '-' and '_'"
