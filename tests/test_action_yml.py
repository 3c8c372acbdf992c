"""action.yml and the workflows, parsed: inputs reach `neo action` through the
environment only, run steps name their shell, and every workflow asks for the
least permissions it needs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.action.inputs import INPUTS, input_variable
from bot.action.outputs import OUTPUTS

ROOT = Path(__file__).parents[1]
EXAMPLES = ROOT / "examples" / "workflows"
EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
# The action's placeholder reference, as the README documents it.
ACTION_REF = "OWNER/neo@v1"
# Each example workflow, and what it may ask of the workflow token: its
# pull request's push, comments and reactions, and nothing more.
LEAST_PERMISSIONS = {
    "neo-mention.yml": {"contents": "write", "issues": "write", "pull-requests": "write"},
    "neo-label.yml": {"contents": "write", "issues": "write", "pull-requests": "write"},
    "neo-review.yml": {"contents": "write", "pull-requests": "write"},
    "neo-schedule.yml": {"contents": "write", "pull-requests": "write"},
}


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def triggers(workflow: dict[Any, Any]) -> dict[str, Any]:
    # YAML 1.1 reads the key `on` as True.
    value = workflow.get("on", workflow.get(True))
    assert value is not None
    return value if isinstance(value, dict) else dict.fromkeys(value)


@pytest.fixture(scope="module")
def action() -> dict[str, Any]:
    return load(ROOT / "action.yml")


def steps(action: dict[str, Any]) -> list[dict[str, Any]]:
    runs = action["runs"]
    assert runs["using"] == "composite"
    return list(runs["steps"])


def neo_step(action: dict[str, Any]) -> dict[str, Any]:
    (step,) = [s for s in steps(action) if "neo" in s.get("run", "") and " action" in s["run"]]
    return step


# --- action.yml -------------------------------------------------------------------


def test_the_inputs_are_the_ones_neo_action_reads(action: dict[str, Any]) -> None:
    assert list(action["inputs"]) == list(INPUTS)
    for name, spec in action["inputs"].items():
        assert spec.get("description"), name
        assert "default" in spec, name


def test_every_input_reaches_neo_action_through_its_environment(action: dict[str, Any]) -> None:
    env = neo_step(action)["env"]
    for name in action["inputs"]:
        assert env[input_variable(name)] == f"${{{{ inputs.{name} }}}}", name
    # No other step sees an input: keys go to the one process that uses them.
    for step in steps(action):
        if step is neo_step(action):
            continue
        for value in [*step.get("env", {}).values(), *step.get("with", {}).values()]:
            assert "inputs." not in str(value), step.get("name")


def test_no_expression_is_interpolated_into_a_run_script(action: dict[str, Any]) -> None:
    runs = [step["run"] for step in steps(action) if "run" in step]
    assert len(runs) == 3
    for script in runs:
        assert "${{" not in script
        assert EXPRESSION.search(script) is None


def test_each_run_step_names_its_shell(action: dict[str, Any]) -> None:
    for step in steps(action):
        if "run" in step:
            assert step.get("shell") == "bash", step.get("name")
        else:
            assert "uses" in step, step


def test_the_outputs_are_the_neo_steps(action: dict[str, Any]) -> None:
    step_id = neo_step(action)["id"]
    assert list(action["outputs"]) == list(OUTPUTS)
    for name, spec in action["outputs"].items():
        assert spec["value"] == f"${{{{ steps.{step_id}.outputs.{name} }}}}"


def test_uv_is_pinned_cached_and_installs_neo_from_the_actions_checkout(
    action: dict[str, Any],
) -> None:
    setup, install, *_ = steps(action)
    assert re.fullmatch(r"astral-sh/setup-uv@v\d+\.\d+\.\d+", setup["uses"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", setup["with"]["version"])
    assert setup["with"]["enable-cache"] is True
    assert setup["with"]["cache-dependency-glob"] == "${{ github.action_path }}/uv.lock"
    assert "uv sync --locked --no-dev" in install["run"]
    assert '--project "$GITHUB_ACTION_PATH"' in install["run"]
    # The Neo step runs the environment the install step made.
    venv = install["env"]["UV_PROJECT_ENVIRONMENT"]
    assert neo_step(action)["env"]["NEO_VENV"] == venv
    assert neo_step(action)["run"].startswith('"$NEO_VENV/bin/neo" action')


def test_only_a_throwaway_runner_has_its_user_namespaces_allowed(action: dict[str, Any]) -> None:
    (step,) = [
        s for s in steps(action) if "apparmor_restrict_unprivileged_userns" in s.get("run", "")
    ]
    assert step["if"] == (
        "inputs.sandbox == 'local' && runner.os == 'Linux' && runner.environment == 'github-hosted'"
    )
    assert steps(action).index(step) < steps(action).index(neo_step(action))


def test_the_token_defaults_to_the_workflows_and_the_sandbox_to_local(
    action: dict[str, Any],
) -> None:
    inputs = action["inputs"]
    assert inputs["github_token"]["default"] == "${{ github.token }}"
    assert inputs["sandbox"]["default"] == "local"
    assert inputs["trigger_phrase"]["default"] == "@neo"
    assert inputs["label_trigger"]["default"] == "neo"


# --- the example workflows ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(LEAST_PERMISSIONS))
def test_an_example_workflow_uses_only_declared_inputs_with_least_permissions(
    name: str, action: dict[str, Any]
) -> None:
    workflow = load(EXAMPLES / name)
    assert workflow["permissions"] == LEAST_PERMISSIONS[name]
    uses = []
    for job in workflow["jobs"].values():
        assert "permissions" not in job  # the workflow's, no wider per job
        for step in job["steps"]:
            if step.get("uses", "").startswith("OWNER/neo"):
                uses.append(step)
    assert len(uses) == 1
    step = uses[0]
    assert step["uses"] == ACTION_REF
    assert set(step.get("with", {})) <= set(action["inputs"])
    # A key comes from a secret, never from the file.
    for key in ("anthropic_api_key", "openai_api_key", "gemini_api_key", "openrouter_api_key"):
        if key in step.get("with", {}):
            assert re.fullmatch(r"\$\{\{ secrets\.\w+ \}\}", step["with"][key])


def test_the_examples_cover_mentions_labels_reviews_and_schedules() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.yml")) == sorted(LEAST_PERMISSIONS)
    events = {name: set(triggers(load(EXAMPLES / name))) for name in LEAST_PERMISSIONS}
    assert events["neo-mention.yml"] == {
        "issue_comment",
        "pull_request_review_comment",
        "issues",
    }
    assert events["neo-label.yml"] == {"issues"}
    assert triggers(load(EXAMPLES / "neo-label.yml"))["issues"]["types"] == ["labeled"]
    assert events["neo-review.yml"] == {"pull_request_review"}
    assert events["neo-schedule.yml"] == {"schedule", "workflow_dispatch"}
    schedule = load(EXAMPLES / "neo-schedule.yml")
    (job,) = schedule["jobs"].values()
    (step,) = [s for s in job["steps"] if "uses" in s]
    assert step["with"]["prompt"].strip()


# --- the project's own CI ----------------------------------------------------------


def test_ci_runs_the_readmes_test_command_with_read_only_contents() -> None:
    ci = load(ROOT / ".github" / "workflows" / "ci.yml")
    assert ci["permissions"] == {"contents": "read"}
    readme = (ROOT / "README.md").read_text()
    # The README's "Develop" section holds the one command that runs the suite.
    command = re.search(r"## Develop\n.*?```sh\n(.+?)\n```", readme, re.DOTALL)
    assert command is not None
    (job,) = ci["jobs"].values()
    assert job["runs-on"].startswith("ubuntu")
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs == [command.group(1).strip()]
    for step in job["steps"]:
        if "run" in step:
            assert "${{" not in step["run"]
