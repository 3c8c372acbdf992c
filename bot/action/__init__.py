"""`neo action`: Neo as a step of a GitHub Actions workflow."""
