"""The queue's series on /metrics, from one snapshot read at scrape time.

A collector over one `QueueSnapshot`, in a registry made per scrape: the
values are the queue's as the scrape finds them, never a stale copy, and a
database that does not answer shows as `neo_queue_up 0`.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.jobs import JobState
from bot.queue import QueueSnapshot

__all__ = ["QueueCollector", "queue_exposition"]


class QueueCollector(Collector):
    """The series of one snapshot; None when the queue could not be read."""

    def __init__(self, snapshot: QueueSnapshot | None) -> None:
        self.snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("neo_queue_up", "1 when the queue answered this scrape.")
        up.add_metric([], 0.0 if self.snapshot is None else 1.0)
        yield up
        if self.snapshot is None:
            return
        snapshot = self.snapshot
        yield GaugeMetricFamily(
            "neo_queue_depth", "Jobs waiting to be claimed.", value=snapshot.depth
        )
        yield GaugeMetricFamily(
            "neo_queue_running", "Jobs a worker is running.", value=snapshot.running
        )
        yield GaugeMetricFamily(
            "neo_queue_oldest_queued_age_seconds",
            "How long the longest-waiting queued job has waited; 0 when none is queued.",
            value=snapshot.oldest_queued_age,
        )
        states = GaugeMetricFamily(
            "neo_queue_jobs", "Jobs in the queue by state.", labels=["state"]
        )
        for state in JobState:
            states.add_metric([state.value], snapshot.states.get(state, 0))
        yield states


def queue_exposition(snapshot: QueueSnapshot | None) -> bytes:
    """The Prometheus text of one snapshot's series."""
    registry = CollectorRegistry()
    registry.register(QueueCollector(snapshot))
    return generate_latest(registry)
