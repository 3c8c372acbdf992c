"""The run page: a job's event records, and the web pages, live stream, sign-in and
actions that show them (docs/architecture.md, "The run page")."""

__all__: list[str] = []
