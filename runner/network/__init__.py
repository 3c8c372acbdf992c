"""The network a sandbox is allowed: its policy, and the egress proxy that enforces it."""

from runner.network.accesses import Blocked, EgressReport
from runner.network.ecosystems import ECOSYSTEMS
from runner.network.hosts import BadEntry, Host
from runner.network.policy import (
    METHODS,
    OFF,
    Bounded,
    Ecosystem,
    Methods,
    NetworkPolicy,
    Plan,
    bound,
    default_policy,
    job_plan,
    may_reach,
    parse_entry,
    parse_list,
    plan,
    policy_of,
    setup_policy,
)

__all__ = [
    "ECOSYSTEMS",
    "METHODS",
    "OFF",
    "BadEntry",
    "Blocked",
    "Bounded",
    "Ecosystem",
    "EgressReport",
    "Host",
    "Methods",
    "NetworkPolicy",
    "Plan",
    "bound",
    "default_policy",
    "job_plan",
    "may_reach",
    "parse_entry",
    "parse_list",
    "plan",
    "policy_of",
    "setup_policy",
]
