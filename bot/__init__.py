"""Neo's GitHub-facing products: the service, the Action, App setup and the `neo` CLI."""
