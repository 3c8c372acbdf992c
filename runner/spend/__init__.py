"""A run's spend: the ledger every model call goes through, and the provider that meters calls."""

from runner.spend.ledger import (
    MIN_OUTPUT_TOKENS,
    PRICES_IN_ENVIRONMENT,
    WRAP_UP_MARGIN_TOKENS,
    WRAP_UP_TOKENS,
    Account,
    Grant,
    Ledger,
    Quote,
)
from runner.spend.metered import MeteredProvider
from runner.spend.prompt_bound import PromptBound, bound_request

__all__ = [
    "MIN_OUTPUT_TOKENS",
    "PRICES_IN_ENVIRONMENT",
    "WRAP_UP_MARGIN_TOKENS",
    "WRAP_UP_TOKENS",
    "Account",
    "Grant",
    "Ledger",
    "MeteredProvider",
    "PromptBound",
    "Quote",
    "bound_request",
]
