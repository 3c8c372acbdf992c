"""The hosts each ecosystem's tools fetch from: the one table `network.allow` names expand from.

A name here stands for the hosts a package manager of that ecosystem needs to
install and update dependencies from the public registries: their indexes,
their file servers, the downloads their build tools make. Nothing broader
(no cloud storage domain, no CDN shared with anyone else), since every host
listed is one the agent can send data to.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["ECOSYSTEMS"]

ECOSYSTEMS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        # pip, uv, poetry, pipenv: the index and its file server.
        "python": ("pypi.org", "files.pythonhosted.org", "pypi.python.org"),
        # npm, pnpm, yarn (classic and berry); node-gyp fetches headers from nodejs.org.
        "node": ("registry.npmjs.org", "registry.yarnpkg.com", "repo.yarnpkg.com", "nodejs.org"),
        # The module proxy and checksum database (GOPROXY, GOSUMDB defaults).
        "go": ("proxy.golang.org", "sum.golang.org"),
        # cargo's sparse index and downloads; rustup's toolchains.
        "rust": ("crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"),
        # gem and bundler: the API, the compact index.
        "ruby": ("rubygems.org", "index.rubygems.org"),
        # git over HTTPS, the API, archives, raw files and release downloads.
        "github": (
            "github.com",
            "api.github.com",
            "codeload.github.com",
            "*.githubusercontent.com",
        ),
    }
)
