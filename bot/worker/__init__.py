"""Running queued jobs: the lease loop, one job's steps, and what they write on GitHub."""
