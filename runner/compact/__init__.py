"""Compaction: keeping a long conversation within the model's context window."""

from runner.compact.base import Compaction, Compactor, PromptState, Stage
from runner.compact.clearing import CLEARED_MARK, clear_tool_results
from runner.compact.split import safe_tail_start
from runner.compact.window import CompactionPolicy, WindowCompactor

__all__ = [
    "CLEARED_MARK",
    "Compaction",
    "CompactionPolicy",
    "Compactor",
    "PromptState",
    "Stage",
    "WindowCompactor",
    "clear_tool_results",
    "safe_tail_start",
]
