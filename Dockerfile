# Neo's images, one build target each. Build them with scripts/build-images.
#
# The base image is a build argument so that a machine without an image
# registry can build from a Debian base it bootstrapped itself (debootstrap +
# docker import); any Debian bookworm image works.
ARG BASE_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------------------
# sandbox: where a job's commands run. One disposable container per job, with
# the working tree at /workspace, no network and no secrets. No Neo code lives
# here: the docker sandbox injects its exec agent when it starts a container.
# ---------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS sandbox

# Only for the build: the running sandbox must not inherit it.
ARG DEBIAN_FRONTEND=noninteractive

# Docs, man pages and translations are dead weight in a sandbox that only a
# model reads (--help still works); keep the copyright files.
RUN printf '%s\n' \
        'path-exclude /usr/share/doc/*' \
        'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' \
        'path-exclude /usr/share/info/*' \
        'path-exclude /usr/share/locale/*' \
        > /etc/dpkg/dpkg.cfg.d/01-neo-nodoc

# The tools an agent expects on any repository: a shell and the POSIX
# userland, git, ripgrep, Python, a C toolchain, and tini as PID 1 so that
# orphans are reaped and signals reach the process group. C.UTF-8 ships with
# libc in bookworm, so no locales package is needed.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends \
        bash \
        build-essential \
        ca-certificates \
        coreutils \
        curl \
        diffutils \
        findutils \
        gawk \
        git \
        grep \
        make \
        patch \
        procps \
        python3 \
        python3-pip \
        python3-venv \
        ripgrep \
        sed \
        tini \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# Language toolchains that repositories need go here, one RUN per toolchain so
# that adding one does not rebuild the layers above. For example:
#   Node.js:  apt-get install --yes --no-install-recommends nodejs npm
#   Go:       apt-get install --yes --no-install-recommends golang-go
#   Rust:     apt-get install --yes --no-install-recommends rustc cargo
#   Java:     apt-get install --yes --no-install-recommends default-jdk-headless maven
# (each followed by `apt-get clean && rm -rf /var/lib/apt/lists/*`, after an
# `apt-get update`). Packages come from Debian so the image builds wherever
# Debian's mirror is reachable.

# A fixed uid/gid so that the host can hand the working tree to the sandbox
# user without guessing; the tree itself is mounted at /workspace at run time.
RUN groupadd --gid 1000 neo \
    && useradd --uid 1000 --gid 1000 --home-dir /home/neo --create-home \
        --shell /bin/bash neo \
    && install -d -o neo -g neo -m 0755 /workspace

ENV LANG=C.UTF-8 HOME=/home/neo
WORKDIR /workspace
USER neo

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["bash"]
