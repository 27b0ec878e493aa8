"""What runs tell the other apps without importing them (runs imports none of them)."""

from __future__ import annotations

from django.dispatch import Signal

# An extract run succeeded through the model and its answer compiled into rules verified on its page.
# Sent by the worker after the run finished; kwargs: run (the Run), compiled ({"schema", "fields", "fromRun",
# "verifiedAt"}). queries keeps it on the saved query the run replayed.
answer_compiled = Signal()
