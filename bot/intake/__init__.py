"""What comes in: webhook deliveries, their triage, and the schedules that queue jobs."""
