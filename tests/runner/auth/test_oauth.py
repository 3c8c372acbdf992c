"""The device-code sign-in and refresh over HTTP, against the fake sign-in service."""

from __future__ import annotations

import pytest

from runner.auth import oauth
from runner.auth.credentials import Credentials
from runner.auth.device_flow import DeviceCode
from runner.auth.endpoints import Endpoints, endpoints
from runner.auth.errors import AuthError
from tests.fakes.chatgpt_auth import DENIED, EXPIRED, PENDING, SLOW_DOWN, FakeChatGPTAuth


class Clock:
    """Time that passes only when the flow sleeps: no test waits for real."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def ends(fake: FakeChatGPTAuth) -> Endpoints:
    return endpoints({**fake.env, "NEO_CHATGPT_BASE_URL": "http://unused.invalid"})


async def sign_in(fake: FakeChatGPTAuth, clock: Clock, shown: list[DeviceCode]) -> Credentials:
    return await oauth.sign_in(ends(fake), shown.append, sleep=clock.sleep, clock=clock)


async def test_a_sign_in_polls_through_pending_and_slow_down_to_tokens(
    fake_auth: FakeChatGPTAuth,
) -> None:
    fake_auth.interval = "2"
    fake_auth.script_polls(PENDING, SLOW_DOWN, PENDING)
    clock = Clock()
    shown: list[DeviceCode] = []

    credentials = await sign_in(fake_auth, clock, shown)

    assert [c.verification_url for c in shown] == [f"{fake_auth.url}/codex/device"]
    assert shown[0].user_code
    # The interval, then five seconds longer for good after slow_down.
    assert clock.sleeps == [2.0, 7.0, 7.0]
    assert len(fake_auth.polls()) == 4
    assert credentials.account_id == "acct-fake-0001"
    assert credentials.access_token in fake_auth.live_access_tokens
    exchange = fake_auth.requests[-1]
    assert exchange.path == "/oauth/token"
    assert exchange.content_type.startswith("application/x-www-form-urlencoded")
    assert exchange.body["grant_type"] == "authorization_code"


@pytest.mark.parametrize(
    ("state", "line"),
    [
        (
            EXPIRED,
            "chatgpt sign-in: the code expired before it was approved (run `neo login chatgpt`)",
        ),
        (DENIED, "chatgpt sign-in: the request was denied"),
    ],
)
async def test_an_expired_or_denied_code_ends_the_sign_in_in_one_line(
    fake_auth: FakeChatGPTAuth, state: str, line: str
) -> None:
    fake_auth.script_polls(PENDING, state)

    with pytest.raises(AuthError) as caught:
        await sign_in(fake_auth, Clock(), [])

    assert str(caught.value) == line
    assert not fake_auth.issued_access_tokens


async def test_a_code_never_approved_gives_up_after_fifteen_minutes(
    fake_auth: FakeChatGPTAuth,
) -> None:
    fake_auth.interval = "300"
    fake_auth.script_polls(*[PENDING] * 10)
    clock = Clock()

    with pytest.raises(AuthError, match="not approved within 15 minutes"):
        await sign_in(fake_auth, clock, [])

    assert clock.now == 900.0
    assert len(fake_auth.polls()) == 4


async def test_a_sign_in_service_that_is_down_is_one_line() -> None:
    down = Endpoints("http://127.0.0.1:9", "http://unused.invalid")

    with pytest.raises(AuthError, match=r"^chatgpt sign-in: cannot reach 127\.0\.0\.1 \("):
        await oauth.sign_in(down, lambda code: None, sleep=Clock().sleep)


async def test_a_refresh_rotates_the_tokens_and_a_used_refresh_token_is_refused(
    fake_auth: FakeChatGPTAuth,
) -> None:
    old = await sign_in(fake_auth, Clock(), [])

    async with oauth.client() as http:
        fresh = await oauth.refresh(http, ends(fake_auth), old, now=0.0)
        with pytest.raises(AuthError) as caught:
            await oauth.refresh(http, ends(fake_auth), old, now=0.0)

    assert fresh.access_token != old.access_token
    assert fresh.refresh_token != old.refresh_token
    assert fresh.account_id == old.account_id
    refresh = fake_auth.requests[-1]
    assert refresh.content_type == "application/json"
    assert refresh.body["grant_type"] == "refresh_token"
    assert str(caught.value) == (
        "chatgpt sign-in: token refresh refused: 400 refresh_token_reused: Your refresh "
        "token has already been used. (run `neo login chatgpt`)"
    )
    assert old.refresh_token not in str(caught.value)
