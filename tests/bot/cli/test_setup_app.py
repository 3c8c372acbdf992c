"""bot.cli.setup_app: `neo setup-app`'s arguments, each bad one a line and exit 2."""

from __future__ import annotations

import pytest

from bot.cli.main import main
from tests.bot.setup.test_flow import WEBHOOK_URL


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--webhook-url", "ftp://neo.example.com/hooks"], "expected an http(s) URL"),
        (["--webhook-url", WEBHOOK_URL, "--org", "acme/../x"], "not an organization login"),
        (["--webhook-url", WEBHOOK_URL, "--port", "70000"], "expected a port from 0 to 65535"),
        (["--webhook-url", WEBHOOK_URL, "--name", "n" * 35], "1 to 34 characters"),
        ([], "--webhook-url"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["setup-app", *argv])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert complaint in err
