"""The engine: pure Python that drives the browser. No Django, no ORM.

It takes spec dataclasses and a Recorder, and returns result dataclasses, so the worker, the CLI and tests
drive it the same way.
"""
