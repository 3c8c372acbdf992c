"""The only code that talks to GitHub's REST API: auth, one client per repository, a pure core."""
