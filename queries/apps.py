from django.apps import AppConfig


class QueriesConfig(AppConfig):
    name = "queries"

    def ready(self) -> None:
        from queries import schedule_rows
        from queries.services import keep_compiled
        from runs.signals import answer_compiled

        answer_compiled.connect(keep_compiled, dispatch_uid="queries.keep_compiled")
        schedule_rows.connect()
