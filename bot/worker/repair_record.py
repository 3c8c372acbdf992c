"""The record a CI repair keeps: its round's comment on the pull request, its section in
the report of the work that made the pull request, and the body's status line.

The I/O around `repair_report` (pure). Nothing here erases what an earlier
job said: the story's report gets a section of this round's own, between
markers (a retried round rewrites its own), and the pull request's body
changes only between its status markers, whatever a maintainer wrote around
them. A GitHub error in the story or the status costs that note, never the
repair: it is logged, and the round's comment still tells everything.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from bot.github.client import GitHubError, RepoClient
from bot.github.markers import REPAIR_ROUND_MARKER
from bot.worker.context import ProgressComment, with_lead
from bot.worker.progress import Command, Outcome, Progress
from bot.worker.pull_request import comment_url, with_status
from bot.worker.rendering import render_progress
from bot.worker.repair_report import (
    Pushed,
    RepairRound,
    final_section,
    round_lead,
    running_section,
    status_final,
    status_running,
    with_section,
)
from bot.worker.services import JobServices
from runner.job import JobResult

__all__ = ["RepairRecord"]


@dataclass(slots=True)
class RepairRecord:
    """Where one repair round tells itself, and what it has said so far."""

    services: JobServices
    github: RepoClient
    round: RepairRound
    # The report of the work that made the pull request: (comment id, body as last written).
    story: tuple[int, str] | None
    # The runner's result, once the run ended.
    result: JobResult | None = None
    _running: asyncio.Task[None] | None = field(default=None, repr=False)

    @classmethod
    async def open(
        cls,
        services: JobServices,
        github: RepoClient,
        progress: Progress,
        round_: RepairRound,
        *,
        owner: int,
        pull_body: str,
    ) -> tuple[RepairRecord, ProgressComment]:
        """The round's comment on the pull request (the one the run edits), then, in the
        background, its running section in thread `owner`'s report and the status line."""
        lead = round_lead(round_)
        text = with_lead(render_progress(progress.state, now=services.clock()), lead)
        comment_id = await github.progress_comment(round_.job_id, text)
        web = services.settings.git_url
        url = comment_url(web, github.repository, round_.pull_number, comment_id)
        record = cls(services, github, replace(round_, round_url=url), await _story(github, owner))
        record._running = asyncio.create_task(record._say_running(pull_body))
        return record, ProgressComment(github, comment_id, lead)

    async def _say_running(self, pull_body: str) -> None:
        await self._story_section(running_section(self.round))
        await self._status(pull_body, status_running(self.round))

    async def finish(self, outcome: Outcome, commands: Sequence[Command]) -> None:
        """The round's final section in the story, and the status line, once it ended."""
        if self._running is not None:
            with contextlib.suppress(Exception):  # its own errors are logged
                await self._running
        result = self.result
        pushed = None
        if result is not None and result.changed and result.commit:
            pushed = Pushed(result.commit, result.subject)
        await self._story_section(final_section(self.round, outcome, commands, pushed))
        try:
            fresh = await self.github.pull_head(self.round.pull_number)
        except GitHubError as error:
            self.services.log("repair_status_failed", job=self.round.job_id, error=str(error))
            return
        await self._status(fresh.body, status_final(self.round, outcome, pushed))

    async def _story_section(self, section: str) -> None:
        if self.story is None:
            return
        story_id, body = self.story
        updated = with_section(body, self.round.job_id, section)
        if updated is None:
            # The earlier report leaves no room: the round's comment has it all.
            self.services.log("repair_section_left_out", job=self.round.job_id)
            return
        try:
            await self.github.update_progress(story_id, updated)
        except GitHubError as error:
            self.services.log("repair_section_failed", job=self.round.job_id, error=str(error))
            return
        self.story = (story_id, updated)

    async def _status(self, body: str, line: str) -> None:
        try:
            await self.github.update_pull_body(self.round.pull_number, with_status(body, line))
        except GitHubError as error:
            self.services.log("repair_status_failed", job=self.round.job_id, error=str(error))


async def _story(github: RepoClient, number: int) -> tuple[int, str] | None:
    """Thread `number`'s newest report, which a round's section joins; None when it has
    none (a schedule's pull request) or the thread is gone (deleted, transferred)."""
    try:
        return await github.latest_progress_comment(number, unless=REPAIR_ROUND_MARKER)
    except GitHubError as error:
        if error.status != 404:
            raise
        return None
