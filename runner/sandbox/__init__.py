"""Where tools act: the Sandbox protocol and its host implementation."""

from runner.sandbox.base import ExecResult, Lines, PathOutsideTree, Sandbox, SandboxError
from runner.sandbox.local import LocalSandbox

__all__ = ["ExecResult", "Lines", "LocalSandbox", "PathOutsideTree", "Sandbox", "SandboxError"]
