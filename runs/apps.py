import sys

from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "runs"

    def ready(self) -> None:
        from runs.metrics import count_engine_reports

        count_engine_reports()
        if {"qcluster", "work"} & set(sys.argv[1:2]):
            # Load the job and the engine (Playwright, trafilatura, model SDKs) once, before the cluster forks
            # its workers; otherwise each worker pays the imports on its first run (~0.3 s of queue pickup).
            import runs.jobs  # noqa: F401
