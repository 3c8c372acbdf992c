"""Hostile configuration: each bad value is one line naming the setting, never a traceback.

`HOSTILE_YAML` is a table of `pytest.param(text, field, problem, id="readable-id")`
rows: a `.github/neo.yml` text (or bytes), the field the one RepoConfigError
must name (None: the file as a whole) and a word of the problem it must say.
Add a row for any document that should be refused.
"""

from __future__ import annotations

import pytest

from bot.repo_config import RepoConfigError, parse_repo_config

_BILLION_LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)

HOSTILE_YAML = [
    pytest.param("max_turns: 1" + "0" * 5000, "max_turns", "too large", id="int-5000-digits"),
    pytest.param("time_limit: " + "9" * 4400, "time_limit", "too large", id="int-4401-digits"),
    pytest.param("setup: [1" + "0" * 5000 + "]", "setup[0]", "too large", id="int-in-a-list"),
    pytest.param(
        "schedules:\n  - cron: 1" + "0" * 5000 + "\n    prompt: go\n",
        "schedules[0].cron",
        "too large",
        id="int-in-a-schedule",
    ),
    pytest.param("model: 1" + "0" * 5000, "model", "too large", id="int-where-text-goes"),
    pytest.param("max_turns: 1e400", "max_turns", "valid integer", id="float-overflows-to-inf"),
    pytest.param("max_turns: .inf", "max_turns", "valid integer", id="inf"),
    pytest.param("time_limit: -.inf", "time_limit", "valid integer", id="minus-inf"),
    pytest.param("max_turns: .nan", "max_turns", "valid integer", id="nan"),
    pytest.param("model: .nan", "model", "valid string", id="nan-where-text-goes"),
    pytest.param("model: " + "[" * 5000 + "]" * 5000, None, "nested", id="deep-flow-lists"),
    pytest.param("a: " + "{a: " * 3000 + "1" + "}" * 3000, None, "nested", id="deep-flow-maps"),
    pytest.param(
        "".join("  " * depth + "- \n" for depth in range(200)), None, "nested", id="deep-block"
    ),
    pytest.param("[" * 60_000, None, "nested", id="deep-unclosed"),
    pytest.param(_BILLION_LAUGHS, None, "expands to more than", id="billion-laughs"),
    pytest.param("a: &a [*a]", None, "refers to itself", id="recursive-alias"),
    pytest.param("model: *nowhere", None, "no anchor", id="alias-without-anchor"),
    pytest.param("? [a, b]\n: 1\n", None, "unhashable key", id="list-as-key"),
    pytest.param("? {a: 1}\n: 1\n", None, "unhashable key", id="map-as-key"),
    pytest.param("1: one", "1", "unknown field", id="int-key"),
    pytest.param("1.5: x", "1.5", "unknown field", id="float-key"),
    pytest.param("~: x", "null", "unknown field", id="null-key"),
    pytest.param("on: x", "True", "booleans in YAML", id="bool-key"),
    pytest.param("2001-12-14: x", "2001-12-14", "unknown field", id="date-key"),
    pytest.param("2001-02-30: x", "2001-02-30", "unknown field", id="impossible-date-key"),
    pytest.param("!!binary aGVsbG8=: x", "!!binary", "unknown field", id="binary-key"),
    pytest.param("model: !!binary aGVsbG8=", "model", "binary", id="binary"),
    pytest.param("model: !!binary '!!!'", "model", "binary", id="binary-undecodable"),
    pytest.param("setup: !!set {a: null, b: null}", "setup", "set", id="set-loses-order"),
    pytest.param("model: 2001-12-14", "model", "valid string", id="timestamp"),
    pytest.param("model: 2001-02-30", "model", "not a valid date", id="impossible-date"),
    pytest.param(
        "model: 2001-12-14t21:59:43.10-99:00", "model", "not a valid date", id="impossible-offset"
    ),
    pytest.param("model: !!python/object:os.system x", None, "constructor", id="python-tag"),
    pytest.param("model: a\nmodel: b\n", None, "duplicate key 'model'", id="duplicate-key"),
    pytest.param("model: a\n'model': b\n", None, "duplicate key", id="duplicate-quoted-key"),
    pytest.param("model: a\n---\nmodel: b\n", None, "single document", id="two-documents"),
    pytest.param("# " + "x" * 10_000_000, None, "larger than 64 KiB", id="10-MB-comment"),
    pytest.param(b"model: \xff\xfe", None, "not valid UTF-8", id="non-utf8-bytes"),
    pytest.param("model: x".encode("utf-16"), None, "not valid UTF-8", id="utf16-with-bom"),
    pytest.param(b"\xef\xbb\xbfmax_turns: lots", "max_turns", "valid integer", id="bom-bytes"),
    pytest.param("\ufeffmax_turns: lots", "max_turns", "valid integer", id="bom-text"),
    pytest.param('model: "\\ud800"', "model", "unicode", id="lone-surrogate-escape"),
    pytest.param("- a\n- b\n", None, "top level must be a mapping", id="list-document"),
]


@pytest.mark.parametrize(("text", "field", "problem"), HOSTILE_YAML)
def test_hostile_yaml_is_one_config_error_naming_the_field(
    text: str | bytes, field: str | None, problem: str
) -> None:
    with pytest.raises(RepoConfigError) as raised:
        parse_repo_config(text)

    message = str(raised.value)
    assert "\n" not in message
    assert len(message) < 300
    assert message.startswith(".github/neo.yml: ")
    assert raised.value.field == field
    if field is not None:
        assert field in message
    assert problem in message
