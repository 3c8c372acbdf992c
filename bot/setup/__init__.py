"""`neo setup-app`: Neo's GitHub App, created with GitHub's manifest flow."""
