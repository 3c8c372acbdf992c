"""The durable job queue between the webhook server and the workers."""

from bot.queue.base import (
    DEFAULT_MAX_ATTEMPTS,
    WIND_DOWN,
    CancelApplied,
    EnqueueResult,
    Heartbeat,
    JobQueue,
    LeaseLost,
    QueueClosed,
    QueueError,
    QueueSnapshot,
    SessionArchive,
    SessionFiles,
    SpendLine,
    SpendRecord,
    overran,
)
from bot.queue.postgres import PostgresQueue
from bot.queue.run_log import MAX_RUN_EVENTS, RunEvent, RunLog
from bot.queue.sqlite import SqliteQueue, WriteStats
from bot.queue.steering import MAX_STEER_CHARS, Steer, Steering, check_steer
from bot.queue.url import (
    data_dir,
    default_queue_url,
    is_postgres_url,
    open_queue,
    sqlite_path,
    sqlite_url,
)
from bot.queue.waking import WakingQueue, wakeup_of

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "MAX_RUN_EVENTS",
    "MAX_STEER_CHARS",
    "WIND_DOWN",
    "CancelApplied",
    "EnqueueResult",
    "Heartbeat",
    "JobQueue",
    "LeaseLost",
    "PostgresQueue",
    "QueueClosed",
    "QueueError",
    "QueueSnapshot",
    "RunEvent",
    "RunLog",
    "SessionArchive",
    "SessionFiles",
    "SpendLine",
    "SpendRecord",
    "SqliteQueue",
    "Steer",
    "Steering",
    "WakingQueue",
    "WriteStats",
    "check_steer",
    "data_dir",
    "default_queue_url",
    "is_postgres_url",
    "open_queue",
    "overran",
    "sqlite_path",
    "sqlite_url",
    "wakeup_of",
]
