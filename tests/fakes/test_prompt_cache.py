"""The fakes' model of prompt caching."""

from typing import Any

from tests.fakes.prompt_cache import BreakpointCache, CacheUse, PrefixCache, common_prefix

CACHE = {"type": "ephemeral"}


def test_common_prefix() -> None:
    assert common_prefix("abcdef", "abcxyz") == 3
    assert common_prefix("abc", "abc") == 3
    assert common_prefix("abc", "abcd") == 3
    assert common_prefix("", "abc") == 0
    assert common_prefix("xbc", "abc") == 0


def test_a_prompt_reads_what_it_shares_with_an_earlier_one_under_its_key() -> None:
    cache = PrefixCache()
    first = "a" * 400
    assert cache.read("m", first) == 0
    assert cache.read("m", first + "b" * 400) == 100
    assert cache.read("other", first + "c") == 0
    # The longest match among all earlier prompts counts.
    assert cache.read("m", first + "b" * 200 + "z") == 150
    assert cache.read("m", "z" + first) == 0


def _request(system: str, *texts: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for i, text in enumerate(texts):
        messages.append(
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": [{"type": "text", "text": text}],
            }
        )
    messages[-1]["content"][-1]["cache_control"] = CACHE
    return {
        "model": "claude",
        "system": [{"type": "text", "text": system, "cache_control": CACHE}],
        "messages": messages,
    }


def test_anthropic_reads_a_prefix_written_at_an_earlier_breakpoint() -> None:
    cache = BreakpointCache()
    first = cache.use("claude", _request("s" * 400, "u" * 400))
    assert first.read == 0
    assert first.written > 200
    second = cache.use("claude", _request("s" * 400, "u" * 400, "a" * 400, "v" * 400))
    # The breakpoint moved to the newest message, yet the old prefix still matches.
    assert second.read == first.written + first.uncached
    assert second.written > 200
    assert second.uncached < 5


def test_anthropic_reads_nothing_when_the_system_prompt_changes() -> None:
    cache = BreakpointCache()
    cache.use("claude", _request("s" * 400, "u" * 400))
    changed = cache.use("claude", _request("t" * 400, "u" * 400, "a" * 400, "v" * 400))
    assert changed.read == 0


def test_anthropic_without_breakpoints_writes_nothing() -> None:
    cache = BreakpointCache()
    body = {"model": "claude", "messages": [{"role": "user", "content": "hi" * 400}]}
    assert cache.use("claude", body) == CacheUse(read=0, written=0, uncached=202)
    assert cache.use("claude", body).read == 0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _with_ttl(request: dict[str, Any], ttl: str) -> dict[str, Any]:
    for block in [*request["system"], request["messages"][-1]["content"][-1]]:
        block["cache_control"] = {"type": "ephemeral", "ttl": ttl}
    return request


def test_five_minute_entries_expire_unless_read_and_an_hours_outlive_the_gap() -> None:
    clock = Clock()
    cache = BreakpointCache(clock=clock)
    talk = ("u" * 400, "a" * 400, "v" * 400)
    first = cache.use("claude", _request("s" * 400, "u" * 400))
    clock.now = 299  # read within five minutes: refreshed
    assert cache.use("claude", _request("s" * 400, *talk)).read == first.written + first.uncached
    clock.now = 299 + 301  # past five minutes since the last read: gone
    expired = cache.use("claude", _request("s" * 400, *talk))
    assert expired.read == 0
    assert expired.written_1h == 0

    # Written for an hour, it is still there after a 10-minute gap.
    clock.now = 1_000
    hour = cache.use("claude", _with_ttl(_request("s" * 400, *talk, "b" * 400), "1h"))
    assert hour.written_1h == hour.written > 0
    clock.now = 1_000 + 600
    later = cache.use("claude", _with_ttl(_request("s" * 400, *talk, "b" * 400, "w" * 400), "1h"))
    assert later.read == hour.read + hour.written + hour.uncached
    assert later.written == later.written_1h < 120  # the new message only
