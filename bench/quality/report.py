"""What the benchmark prints: a table for people, one JSON object for programs. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from bench.quality.check import Checked
from bench.quality.harness import TaskResult
from bench.quality.taskset import Task

__all__ = ["check_json", "check_table", "list_json", "list_table", "run_json", "run_table"]


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def totals(results: Sequence[TaskResult]) -> dict[str, Any]:
    """The run in all: resolve rate, turns, tokens, cost and time."""
    resolved = sum(result.resolved for result in results)
    costs = [result.cost_usd for result in results]
    return {
        "tasks": len(results),
        "resolved": resolved,
        "resolve_rate": resolved / len(results) if results else 0.0,
        "turns": sum(result.turns for result in results),
        "input_tokens": sum(result.input_tokens for result in results),
        "output_tokens": sum(result.output_tokens for result in results),
        # Unknown when any call was unpriced: a partial sum would read as the whole.
        "cost_usd": None if None in costs else sum(c for c in costs if c is not None),
        "run_seconds": round(sum(result.run_seconds for result in results), 2),
        "grade_seconds": round(sum(result.grade_seconds for result in results), 2),
    }


def run_json(results: Sequence[TaskResult]) -> dict[str, Any]:
    tasks = []
    for result in results:
        item = asdict(result)
        item["run_seconds"] = round(result.run_seconds, 2)
        item["grade_seconds"] = round(result.grade_seconds, 2)
        item["fail_to_pass_failed"] = list(result.fail_to_pass_failed)
        item["pass_to_pass_failed"] = list(result.pass_to_pass_failed)
        tasks.append(item)
    return {"tasks": tasks, "total": totals(results)}


def run_table(results: Sequence[TaskResult]) -> str:
    header = [
        "task",
        "language",
        "resolved",
        "turns",
        "in tok",
        "out tok",
        "cost",
        "run s",
        "grade s",
        "note",
    ]
    rows = [
        [
            r.id,
            r.language,
            "yes" if r.resolved else "no",
            str(r.turns),
            str(r.input_tokens),
            str(r.output_tokens),
            _money(r.cost_usd),
            f"{r.run_seconds:.1f}",
            f"{r.grade_seconds:.1f}",
            r.error or "",
        ]
        for r in results
    ]
    total = totals(results)
    rows.append(
        [
            "total",
            "",
            f"{total['resolved']}/{total['tasks']} ({total['resolve_rate']:.0%})",
            str(total["turns"]),
            str(total["input_tokens"]),
            str(total["output_tokens"]),
            _money(total["cost_usd"]),
            f"{total['run_seconds']:.1f}",
            f"{total['grade_seconds']:.1f}",
            "",
        ]
    )
    return _table(header, rows)


def list_json(tasks: Sequence[Task]) -> dict[str, Any]:
    return {
        "tasks": [
            {
                "id": task.id,
                "language": task.language,
                "kind": task.kind,
                "title": task.title,
                "license": task.spec.license,
                "provenance": task.spec.provenance.model_dump(),
                "fail_to_pass": len(task.spec.fail_to_pass),
                "pass_to_pass": len(task.spec.pass_to_pass),
                "bytes": task.size,
            }
            for task in tasks
        ]
    }


def list_table(tasks: Sequence[Task]) -> str:
    header = ["task", "language", "kind", "license", "tests", "bytes", "title"]
    rows = [
        [
            task.id,
            task.language,
            task.kind,
            task.spec.license,
            f"{len(task.spec.fail_to_pass)}+{len(task.spec.pass_to_pass)}",
            str(task.size),
            task.title,
        ]
        for task in tasks
    ]
    size = sum(task.size for task in tasks)
    return f"{_table(header, rows)}\n{len(tasks)} tasks, {size:,} bytes"


def check_json(checked: Sequence[Checked], seconds: float) -> dict[str, Any]:
    return {
        "tasks": [{**asdict(item), "seconds": round(item.seconds, 2)} for item in checked],
        "total": {
            "tasks": len(checked),
            "sound": sum(item.sound for item in checked),
            "seconds": round(seconds, 2),
        },
    }


def check_table(checked: Sequence[Checked], seconds: float) -> str:
    header = ["task", "language", "sound", "seconds", "problem"]
    rows = [
        [
            item.id,
            item.language,
            "yes" if item.sound else "NO",
            f"{item.seconds:.1f}",
            item.problem or "",
        ]
        for item in checked
    ]
    sound = sum(item.sound for item in checked)
    return f"{_table(header, rows)}\n{sound}/{len(checked)} tasks sound in {seconds:.1f}s"
