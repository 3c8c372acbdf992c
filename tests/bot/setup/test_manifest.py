"""Neo's GitHub App manifest: what it asks GitHub for, and the committed copy."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.github.app import CI_REPAIR_PERMISSIONS, JOB_PERMISSIONS, WORKFLOW_JOB_PERMISSIONS
from bot.intake.triggers import ACTED_ON
from bot.setup.manifest import EVENTS, EXAMPLE_WEBHOOK_URL, PERMISSIONS, app_manifest

COMMITTED = Path(__file__).parents[3] / "docs" / "app-manifest.json"
LEVELS = {"read": 1, "write": 2, "admin": 3}
# The permission GitHub requires before an App may subscribe to each event.
EVENT_PERMISSION = {
    "issue_comment": "issues",
    "issues": "issues",
    "pull_request": "pull_requests",
    "pull_request_review": "pull_requests",
    "pull_request_review_comment": "pull_requests",
    "check_run": "checks",
    "check_suite": "checks",
    "workflow_run": "actions",
}


def test_the_committed_manifest_is_the_one_the_module_builds() -> None:
    assert json.loads(COMMITTED.read_text()) == app_manifest(EXAMPLE_WEBHOOK_URL), (
        "docs/app-manifest.json is stale: regenerate it with "
        "json.dumps(app_manifest(EXAMPLE_WEBHOOK_URL), indent=2)"
    )


def test_the_app_subscribes_to_exactly_the_events_triage_acts_on() -> None:
    acted_on = {key.split(".")[0] for key in ACTED_ON}
    assert set(app_manifest(EXAMPLE_WEBHOOK_URL)["default_events"]) == acted_on
    assert len(EVENTS) == len(acted_on)


@pytest.mark.parametrize(
    "asked", [JOB_PERMISSIONS, WORKFLOW_JOB_PERMISSIONS, CI_REPAIR_PERMISSIONS]
)
def test_the_app_grants_every_permission_a_job_token_asks_for(asked: Mapping[str, str]) -> None:
    granted = app_manifest(EXAMPLE_WEBHOOK_URL)["default_permissions"]
    for name, level in asked.items():
        assert name in granted, name
        assert LEVELS[granted[name]] >= LEVELS[level], name


def test_the_app_asks_for_nothing_beyond_what_jobs_use() -> None:
    # The least privilege GitHub lets an owner see: the most a job token asks for.
    granted = app_manifest(EXAMPLE_WEBHOOK_URL)["default_permissions"]
    assert dict(granted) == {**WORKFLOW_JOB_PERMISSIONS, **CI_REPAIR_PERMISSIONS}
    assert dict(granted) == dict(PERMISSIONS)


def test_workflow_edits_are_the_one_permission_a_job_asks_for_only_when_allowed() -> None:
    # Pushing under .github/workflows/ needs it; no other job token holds it.
    assert PERMISSIONS["workflows"] == "write"
    assert set(PERMISSIONS) - set(JOB_PERMISSIONS) == {"workflows", "checks", "actions"}
    assert set(CI_REPAIR_PERMISSIONS) - set(JOB_PERMISSIONS) == {"checks", "actions"}
    assert all(CI_REPAIR_PERMISSIONS[name] == "read" for name in ("checks", "actions"))


def test_every_event_has_the_permission_github_requires_for_it() -> None:
    manifest = app_manifest(EXAMPLE_WEBHOOK_URL)
    for event in manifest["default_events"]:
        assert event in EVENT_PERMISSION, f"which permission does {event} need?"
        assert EVENT_PERMISSION[event] in manifest["default_permissions"], event


def test_the_manifest_is_a_private_app_with_an_active_webhook() -> None:
    manifest = app_manifest(
        "https://neo.example.org:8443/api/github/webhooks",
        name="Neo for Acme",
        redirect_url="http://127.0.0.1:5000/callback",
    )
    assert manifest["name"] == "Neo for Acme"
    assert manifest["url"] == "https://neo.example.org:8443"
    assert manifest["hook_attributes"] == {
        "url": "https://neo.example.org:8443/api/github/webhooks",
        "active": True,
    }
    assert manifest["redirect_url"] == "http://127.0.0.1:5000/callback"
    assert manifest["public"] is False
    assert "redirect_url" not in app_manifest(EXAMPLE_WEBHOOK_URL)


def test_with_a_public_url_the_app_calls_back_to_the_run_pages_sign_in() -> None:
    manifest = app_manifest(EXAMPLE_WEBHOOK_URL, public_url="https://neo.example.org/")

    assert manifest["callback_urls"] == ["https://neo.example.org/auth/github/callback"]
    assert "callback_urls" not in app_manifest(EXAMPLE_WEBHOOK_URL)
