"""bot.intake.webhooks: signature verification, bounded body reads and delivery parsing.

Every bad input of the intake issue has a row, and a hypothesis property
checks that random bodies, headers and signatures only ever raise
`WebhookError`s: the server maps those to 4xx, anything else would be a 5xx.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import AsyncIterator, Callable
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bot.intake.webhooks import (
    MAX_BODY,
    BadRequest,
    BadSignature,
    BodyTooLarge,
    Delivery,
    WebhookError,
    parse,
    read_limited,
    verify,
)

SECRET = b"It's a Secret to Everybody"
BODY = b'{"action":"created","zen":"Hello, World!"}'


def sign(body: bytes, secret: bytes = SECRET) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def headers(**extra: str) -> dict[str, str]:
    base = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "Content-Type": "application/json",
    }
    base.update(extra)
    return base


# --- verify -------------------------------------------------------------------


def test_verify_accepts_githubs_own_example() -> None:
    # The worked example of GitHub's "Validating webhook deliveries" page.
    verify(
        b"Hello, World!",
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        SECRET,
    )


def test_verify_accepts_uppercase_hex() -> None:
    good = sign(BODY)
    verify(BODY, "sha256=" + good.removeprefix("sha256=").upper(), SECRET)


@pytest.mark.parametrize(
    ("signature", "secret", "reason"),
    [
        pytest.param(None, SECRET, "missing", id="missing-header"),
        pytest.param("", SECRET, "sha256=<hex>", id="empty"),
        pytest.param(
            "sha1=" + hmac.new(SECRET, BODY, hashlib.sha1).hexdigest(),
            SECRET,
            "sha256=<hex>",
            id="sha1-only",
        ),
        pytest.param(sign(BODY).upper(), SECRET, "sha256=<hex>", id="prefix-uppercase"),
        pytest.param(sign(BODY), b"another secret", "does not match", id="wrong-secret"),
        pytest.param(sign(BODY + b" "), SECRET, "does not match", id="other-body"),
        pytest.param("sha256=" + "zz" * 32, SECRET, "sha256=<hex>", id="non-hex"),
        pytest.param(sign(BODY)[:-2], SECRET, "sha256=<hex>", id="short-hex"),
        pytest.param(sign(BODY) + "00", SECRET, "sha256=<hex>", id="long-hex"),
        pytest.param(
            # bytes.fromhex would skip the spaces; the digest must be 64 hex digits.
            "sha256="
            + " ".join(sign(BODY).removeprefix("sha256=")[i : i + 2] for i in range(0, 64, 2)),
            SECRET,
            "sha256=<hex>",
            id="hex-with-spaces",
        ),
        pytest.param(" " + sign(BODY), SECRET, "sha256=<hex>", id="leading-space"),
    ],
)
def test_verify_refuses(signature: str | None, secret: bytes, reason: str) -> None:
    with pytest.raises(BadSignature, match=reason) as caught:
        verify(BODY, signature, secret)
    assert caught.value.status == 401
    message = str(caught.value)
    assert "\n" not in message
    assert BODY.decode() not in message
    if signature:
        assert signature.removeprefix("sha256=").removeprefix("sha1=").strip() not in message


@pytest.mark.parametrize("size", [0, 1, 2046, 2047, 2048, 4094, 4095, 14_500, 100_003])
def test_verify_accepts_bodies_of_any_size_around_the_hashing_chunk(size: int) -> None:
    # The HMAC is computed in chunks under 2 KB; the result must be the plain HMAC.
    body = bytes(range(256)) * (size // 256) + bytes(size % 256)
    signature = "sha256=" + hmac.new(b"secret", body, hashlib.sha256).hexdigest()

    verify(body, signature, b"secret")
    with pytest.raises(BadSignature):
        verify(body + b" ", signature, b"secret")


def test_verify_refuses_an_empty_secret_as_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="secret is empty"):
        verify(BODY, sign(BODY, b""), b"")


# --- read_limited -------------------------------------------------------------


class CountingStream:
    """An async byte stream that counts the chunks pulled from it."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.pulled = 0

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            self.pulled += 1
            yield chunk


async def test_read_limited_joins_the_chunks() -> None:
    stream = CountingStream([b"ab", b"", b"cd", b"e"])
    assert await read_limited(stream, 5) == b"abcde"
    assert stream.pulled == 4


async def test_read_limited_accepts_exactly_the_limit() -> None:
    assert await read_limited(CountingStream([b"x" * 10, b"y" * 6]), 16) == b"x" * 10 + b"y" * 6


async def test_read_limited_stops_as_soon_as_the_limit_is_passed() -> None:
    stream = CountingStream([b"x" * 10] * 100)
    with pytest.raises(BodyTooLarge) as caught:
        await read_limited(stream, 25)
    # 10 + 10 + 10 > 25 at the third chunk; the other 97 stay unread.
    assert stream.pulled == 3
    assert caught.value.status == 413
    assert "xxx" not in str(caught.value)


async def test_read_limited_defaults_to_25_mib() -> None:
    assert MAX_BODY == 25 * 1024 * 1024
    mib = b"\0" * (1024 * 1024)
    stream = CountingStream([mib] * 40)
    with pytest.raises(BodyTooLarge):
        await read_limited(stream)
    assert stream.pulled == 26


# --- parse --------------------------------------------------------------------


def test_parse_json() -> None:
    delivery = parse(headers(), BODY)
    assert delivery == Delivery(
        event="issue_comment",
        delivery_id="72d3162e-cc78-11e3-81ab-4c9367dc0958",
        action="created",
        payload={"action": "created", "zen": "Hello, World!"},
    )
    assert delivery.event_action == "issue_comment.created"


def test_parse_looks_headers_up_case_insensitively() -> None:
    lowered = {name.lower(): value for name, value in headers().items()}
    shouted = {name.upper(): value for name, value in headers().items()}
    assert parse(lowered, BODY) == parse(shouted, BODY) == parse(headers(), BODY)


def test_parse_form_body() -> None:
    body = urlencode({"payload": BODY.decode()}).encode()
    form = headers(**{"Content-Type": "application/x-www-form-urlencoded"})
    assert parse(form, body) == parse(headers(), BODY)


def test_parse_form_body_with_utf8() -> None:
    payload = {"action": "created", "comment": {"body": "@neo ünïcödé ✓"}}
    body = ("payload=" + quote(json.dumps(payload, ensure_ascii=False))).encode()
    form = headers(**{"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"})
    assert parse(form, body).payload == payload


def test_parse_event_without_action() -> None:
    delivery = parse(
        headers(**{"X-GitHub-Event": "ping"}), b'{"zen": "Keep it logically awesome."}'
    )
    assert delivery.action is None
    assert delivery.event_action == "ping"


def test_parse_ignores_an_action_that_is_not_a_string() -> None:
    assert parse(headers(), b'{"action": 3}').action is None


def test_parse_json_without_content_type() -> None:
    bare = headers()
    del bare["Content-Type"]
    assert parse(bare, BODY).action == "created"


FORM = "application/x-www-form-urlencoded"


@pytest.mark.parametrize(
    ("hdrs", "body", "reason"),
    [
        pytest.param(
            {"X-GitHub-Delivery": "d1", "Content-Type": "application/json"},
            BODY,
            "missing X-GitHub-Event",
            id="missing-event",
        ),
        pytest.param(
            {"X-GitHub-Event": "issues", "Content-Type": "application/json"},
            BODY,
            "missing X-GitHub-Delivery",
            id="missing-delivery",
        ),
        pytest.param(headers(**{"X-GitHub-Event": "  "}), BODY, "missing", id="blank-event"),
        pytest.param(
            headers(**{"X-GitHub-Event": "issues\nX-Injected: 1"}),
            BODY,
            "malformed X-GitHub-Event",
            id="event-with-newline",
        ),
        pytest.param(
            headers(**{"X-GitHub-Delivery": "x" * 500}),
            BODY,
            "malformed X-GitHub-Delivery",
            id="delivery-too-long",
        ),
        pytest.param(headers(), b'{"action": "created"', "not valid JSON", id="truncated-json"),
        pytest.param(headers(), b"", "not valid JSON", id="empty-body"),
        pytest.param(headers(), b"\xff\xfe\xfa", "not valid JSON", id="not-utf8"),
        pytest.param(headers(), b'{"n": NaN}', "not valid JSON", id="nan"),
        pytest.param(headers(), b'{"n": -Infinity}', "not valid JSON", id="infinity"),
        pytest.param(headers(), b'{"s": "\\ud800"}', "not valid JSON", id="lone-surrogate"),
        pytest.param(headers(), b"[" * 100_000, "not valid JSON", id="deeply-nested"),
        pytest.param(headers(), b"[1, 2]", "not a JSON object", id="json-array"),
        pytest.param(headers(), b'"text"', "not a JSON object", id="json-string"),
        pytest.param(
            headers(**{"Content-Type": "text/plain"}), BODY, "Content-Type", id="other-type"
        ),
        pytest.param(
            headers(**{"Content-Type": FORM}),
            b"zen=hello",
            "no payload field",
            id="form-no-payload",
        ),
        pytest.param(
            headers(**{"Content-Type": FORM}),
            b"payload=%7B%22action%22",
            "not valid JSON",
            id="form-bad-json",
        ),
        pytest.param(
            headers(**{"Content-Type": FORM}),
            b"payload=%ff%fe",
            "malformed form body",
            id="form-bad-utf8",
        ),
        pytest.param(
            headers(**{"Content-Type": FORM}),
            "payload=é".encode(),
            "malformed form body",
            id="form-not-ascii",
        ),
        pytest.param(
            headers(**{"Content-Type": FORM}),
            b"payload=%7B%7D&payload=%7B%7D",
            "more than one payload",
            id="form-two-payloads",
        ),
        pytest.param(
            headers(**{"Content-Type": FORM}),
            b"&".join(b"f%d=1" % i for i in range(100)),
            "malformed form body",
            id="form-too-many-fields",
        ),
    ],
)
def test_parse_refuses(hdrs: dict[str, str], body: bytes, reason: str) -> None:
    with pytest.raises(BadRequest, match=reason) as caught:
        parse(hdrs, body)
    assert caught.value.status == 400
    message = str(caught.value)
    assert "\n" not in message
    assert len(message) < 100  # one line, never the body


# --- property: only WebhookErrors, ever ---------------------------------------

HEADER_NAMES = [
    "X-GitHub-Event",
    "x-github-event",
    "X-GitHub-Delivery",
    "X-GITHUB-DELIVERY",
    "Content-Type",
    "X-Hub-Signature-256",
]
CONTENT_TYPES = [
    "application/json",
    "application/json; charset=utf-8",
    FORM,
    "text/plain",
    "",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "object", "form", "form-json"]))
    if kind == "object":
        fields = st.dictionaries(st.sampled_from(["action", "issue", "x"]), json_values)
        return json.dumps(draw(fields)).encode()
    if kind == "bytes":
        return draw(st.binary(max_size=256))
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    if kind == "form":
        return draw(st.text(max_size=64)).encode("utf-8", "surrogatepass")
    return ("payload=" + quote(json.dumps(draw(json_values)))).encode()


@st.composite
def header_maps(draw: st.DrawFn) -> dict[str, str]:
    names = st.sampled_from(HEADER_NAMES) | st.text(max_size=12)
    values = st.sampled_from(["issues", "issue_comment", "ping", "d-1", *CONTENT_TYPES]) | st.text(
        max_size=40
    )
    # Start from a good set half the time, so parsing gets past the headers.
    base = headers() if draw(st.booleans()) else {}
    base.update(draw(st.dictionaries(names, values, max_size=4)))
    return base


@st.composite
def signatures(draw: st.DrawFn, body: bytes) -> str | None:
    kind = draw(st.sampled_from(["none", "valid", "hex", "text"]))
    if kind == "none":
        return None
    if kind == "valid":
        return sign(body)
    if kind == "hex":
        return "sha256=" + draw(st.binary(min_size=32, max_size=32)).hex()
    return draw(st.text(max_size=80))


def outcome(step: Callable[[], object]) -> WebhookError | None:
    """Run `step`; the WebhookError it raised, None if none. Anything else propagates."""
    try:
        step()
    except WebhookError as error:
        return error
    return None


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), body=bodies(), hdrs=header_maps())
def test_random_input_only_raises_webhook_errors(
    data: st.DataObject, body: bytes, hdrs: dict[str, str]
) -> None:
    # The server verifies, then parses; each is tried on its own here so that
    # parse sees bodies whose signature would have been refused too.
    signature = data.draw(signatures(body))
    refused = outcome(lambda: verify(body, signature, SECRET))
    event(f"verify: {type(refused).__name__ if refused else 'ok'}")
    assert refused is None or type(refused) is BadSignature
    assert refused is None or "\n" not in str(refused)
    assert refused is not None or signature == sign(body)

    refused = outcome(lambda: parse(hdrs, body))
    event(f"parse: {type(refused).__name__ if refused else 'ok'}")
    assert refused is None or type(refused) is BadRequest
    assert refused is None or "\n" not in str(refused)
    if refused is None:
        delivery = parse(hdrs, body)
        assert isinstance(delivery.payload, dict)
        assert delivery.action is None or isinstance(delivery.action, str)


@settings(max_examples=500, deadline=None)
@given(chunks=st.lists(st.binary(max_size=64), max_size=20), limit=st.integers(0, 512))
async def test_read_limited_property(chunks: list[bytes], limit: int) -> None:
    stream = CountingStream(chunks)
    joined = b"".join(chunks)
    try:
        body = await read_limited(stream, limit)
    except BodyTooLarge:
        assert len(joined) > limit
        # It stopped at the first chunk that crossed the limit.
        sizes = [len(c) for c in chunks]
        crossing = next(i for i in range(len(sizes)) if sum(sizes[: i + 1]) > limit)
        assert stream.pulled == crossing + 1
    else:
        assert body == joined
        assert len(body) <= limit
