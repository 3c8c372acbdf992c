# Neo's images, one build target each. Build them with scripts/build-images.
#
# The base image is a build argument so that a machine without an image
# registry can build from a Debian base it bootstrapped itself (debootstrap +
# docker import); any Debian bookworm image works.
ARG BASE_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------------------
# sandbox: where a job's commands run. One disposable container per job, with
# the working tree at /workspace and no secrets; its network is what the job
# is allowed. No Neo code lives here: the docker sandbox injects its exec
# agent when it starts a container. Built in three stages: the Debian
# packages (sandbox-base); the tools that come from PyPI and npm
# (sandbox-tools, which alone trusts the build's certificate authorities);
# and the image, which takes the tools from it. Build it with
# scripts/build-images, which puts the host's authorities in the context.
# ---------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS sandbox-base

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
        python3-dev \
        python3-pip \
        python3-venv \
        ripgrep \
        sed \
        tini \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# The toolchains automatic setup calls (runner/sandbox/setup_detect.py), one
# RUN each so that adding one does not rebuild the others, all from Debian.
# Node.js 18 with npm.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends nodejs npm \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# Go 1.23 from bookworm-backports: bookworm's own 1.19 rejects the `go 1.21.0`
# lines of most current modules. Toolchains a go.mod asks for beyond it are
# fetched by go itself, as any module, when the network allows it.
RUN echo 'deb http://deb.debian.org/debian bookworm-backports main' \
        > /etc/apt/sources.list.d/bookworm-backports.list \
    && apt-get update \
    && apt-get install --yes --no-install-recommends golang-1.23-go \
    && ln -s /usr/lib/go-1.23/bin/go /usr/lib/go-1.23/bin/gofmt /usr/local/bin/ \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# Ruby with bundler; ruby-dev builds the gems that have C extensions.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends ruby ruby-dev bundler \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# Rust: rustc-web and cargo-web are Debian's current Rust for bookworm (its
# rustc 1.63 cannot read today's Cargo.lock). The largest toolchain here.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends rustc-web cargo-web \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

FROM sandbox-base AS sandbox-tools

# Downloads trust Debian's authorities plus the host's (a proxy that
# intercepts TLS); they stay in this stage.
COPY host-ca-certificates.crt /tmp/neo-build/
ENV SSL_CERT_FILE=/opt/build-ca.pem \
    PIP_CERT=/opt/build-ca.pem \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_PYTHON=/usr/bin/python3 \
    UV_PYTHON_DOWNLOADS=never \
    UV_NO_CACHE=1 \
    npm_config_cafile=/opt/build-ca.pem \
    npm_config_update_notifier=false \
    npm_config_fund=false \
    npm_config_audit=false
# uv, and Poetry and Pipenv each in a virtual environment of its own (uv's
# tools) under /opt/neo-tools, their commands linked into /opt/neo-tools/bin.
ARG UV_VERSION=0.13.9
ARG POETRY_VERSION=2.5.1
ARG PIPENV_VERSION=2026.10.3
RUN cat /etc/ssl/certs/ca-certificates.crt /tmp/neo-build/host-ca-certificates.crt \
        > /opt/build-ca.pem \
    && python3 -m venv /opt/neo-tools/uv \
    && /opt/neo-tools/uv/bin/pip install --quiet "uv==${UV_VERSION}" \
    && install -d /opt/neo-tools/bin \
    && ln -s ../uv/bin/uv ../uv/bin/uvx /opt/neo-tools/bin/ \
    && UV_TOOL_DIR=/opt/neo-tools/python UV_TOOL_BIN_DIR=/opt/neo-tools/bin \
        /opt/neo-tools/bin/uv tool install --quiet "poetry==${POETRY_VERSION}" \
    && UV_TOOL_DIR=/opt/neo-tools/python UV_TOOL_BIN_DIR=/opt/neo-tools/bin \
        /opt/neo-tools/bin/uv tool install --quiet "pipenv==${PIPENV_VERSION}"
# pnpm and Yarn 1 from npm.
ARG PNPM_VERSION=10.34.9
ARG YARN_VERSION=1.22.22
RUN npm install --global --prefix /opt/neo-tools/node --no-audit --no-fund \
        "pnpm@${PNPM_VERSION}" "yarn@${YARN_VERSION}" >/dev/null \
    && ln -s ../node/bin/pnpm ../node/bin/pnpx ../node/bin/yarn ../node/bin/yarnpkg \
        /opt/neo-tools/bin/
# The prepared environment's Python (runner/sandbox/environment.py): a
# virtual environment with pytest, which setup installs into and the agent's
# python3, pip and pytest run from. Everyone may write the environment: the
# sandbox runs as the runner's uid when the runner is not root, and is the
# container's only user.
ARG PYTEST_VERSION=9.2.0
RUN python3 -m venv /opt/neo-env/venv \
    && /opt/neo-env/venv/bin/pip install --quiet "pytest==${PYTEST_VERSION}" \
    && find /opt/neo-env -name __pycache__ -prune -exec rm -rf {} + \
    && chmod -R a+rwX /opt/neo-env

FROM sandbox-base AS sandbox

COPY --from=sandbox-tools /opt/neo-tools /opt/neo-tools
COPY --from=sandbox-tools /opt/neo-env /opt/neo-env

# A fixed uid/gid so that the host can hand the working tree to the sandbox
# user without guessing; the tree itself is mounted at /workspace at run time.
# /node_modules leads to the environment's: Node looks for packages in every
# ancestor's node_modules, so a project's dependencies resolve from anywhere
# in /workspace without a node_modules in the tree.
RUN groupadd --gid 1000 neo \
    && useradd --uid 1000 --gid 1000 --home-dir /home/neo --create-home \
        --shell /bin/bash neo \
    && install -d -o neo -g neo -m 0755 /workspace \
    && chmod 0777 /opt/neo-env \
    && ln -s /opt/neo-tools/bin/* /usr/local/bin/ \
    && ln -s /opt/neo-env/node_modules /node_modules

# Go's build cache, warmed with the standard packages tests commonly import:
# Go 1.20 and later ship no compiled standard library, so a sandbox's first
# `go test` compiled fmt, testing, os and their dependencies from source
# (about a minute of CPU on two cores, more than two under load); a package
# that imports net/http (most services, and gorilla/mux's tests) compiled
# crypto/tls and the rest of the HTTP stack on top, in every sandbox. The cache
# is where the sandbox's commands keep it (GOCACHE, runner/sandbox/
# environment.py), inside the prepared environment.
RUN mkdir /tmp/warm && cd /tmp/warm \
    && printf 'module warm\n\ngo 1.21\n' > go.mod \
    && printf '%s\n' 'package warm' 'import (' \
        '_ "bufio"; _ "bytes"; _ "context"; _ "encoding/json"; _ "errors"' \
        '_ "fmt"; _ "io"; _ "os"; _ "os/exec"; _ "path/filepath"; _ "reflect"' \
        '_ "regexp"; _ "sort"; _ "strconv"; _ "strings"; _ "sync"; _ "time"' \
        '_ "encoding/base64"; _ "encoding/csv"; _ "encoding/hex"; _ "flag"; _ "math"' \
        '_ "net"; _ "net/http"; _ "net/http/httptest"; _ "net/url"; _ "unicode/utf8"' ')' \
        > warm.go \
    && printf '%s\n' 'package warm' 'import "testing"' 'func TestWarm(t *testing.T) {}' \
        > warm_test.go \
    && GOCACHE=/opt/neo-env/cache/go-build GOPATH=/tmp/warm/gopath GOTOOLCHAIN=local \
        go test ./... >/dev/null \
    && cd / && rm -rf /tmp/warm \
    && chmod -R a+rwX /opt/neo-env/cache

ENV LANG=C.UTF-8 HOME=/home/neo
WORKDIR /workspace
USER neo

ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["bash"]

# ---------------------------------------------------------------------------
# egress: the proxy that is a sandbox's one way out, one container per job
# (runner/network/proxy.py). squid from Debian's package decides what passes;
# socat relays the unix socket the sandbox is given to squid's port. No Neo
# code and no configuration live here: the runner sends squid.conf and the
# script that starts both over the container's stdin. Before the service
# stages, so that building `--target egress` needs only the sandbox's context.
# ---------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS egress

ARG DEBIAN_FRONTEND=noninteractive

# As in the sandbox (the same layer, so it is built once).
RUN printf '%s\n' \
        'path-exclude /usr/share/doc/*' \
        'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' \
        'path-exclude /usr/share/info/*' \
        'path-exclude /usr/share/locale/*' \
        > /etc/dpkg/dpkg.cfg.d/01-neo-nodoc

# squid from Debian trixie (6.13): bookworm's 5.7 cuts a plain-HTTP upload
# short whenever the server reads it more slowly than the sandbox sends it
# (squid bug 5405: with its request buffer full, squid reads 0 bytes and takes
# that for the client's end; the command gets "Empty reply from server"). The
# stage upgrades its base to trixie whole rather than mix two releases'
# libraries. ca-certificates: squid fetches https:// URLs asked for in plain HTTP.
RUN rm -f /etc/apt/sources.list /etc/apt/sources.list.d/* \
    && printf '%s\n' \
        'deb http://deb.debian.org/debian trixie main' \
        'deb http://deb.debian.org/debian trixie-updates main' \
        'deb http://deb.debian.org/debian-security trixie-security main' \
        > /etc/apt/sources.list \
    && apt-get update \
    && apt-get full-upgrade --yes --no-install-recommends \
    && apt-get install --yes --no-install-recommends \
        ca-certificates \
        socat \
        squid \
    && apt-get autoremove --purge --yes \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# The socket's directory, owned by squid's user: a job's fresh volume mounted
# here takes its owner from the image.
RUN install -d -o proxy -g proxy -m 0755 /run/neo-egress

# What a refused request gets back, for the model reading a command's output
# (runner/network/squid.py names them in deny_info); squid fills in %M, %U, %H.
RUN cd /usr/share/squid-langpack/templates \
    && printf '%s\n' \
        "Neo's egress proxy refused %M %U: %H is not a host (or port) this job's network allows." \
        "The job's report lists it; the repository's network.allow in .github/neo.yml can allow it." \
        > ERR_NEO_HOST \
    && printf '%s\n' \
        "Neo's egress proxy refused %M %U: this job's network allows only GET, HEAD and OPTIONS" \
        "in plain HTTP (network.methods: read). The job's report lists it." \
        > ERR_NEO_METHOD \
    && printf '%s\n' \
        "Neo's egress proxy refused %M %U: %H is at a private or local address, which only" \
        "the operator's NEO_NETWORK can open. The job's report lists it." \
        > ERR_NEO_ADDRESS

USER proxy

# ---------------------------------------------------------------------------
# service: the GitHub App. `neo serve` receives webhooks on port 8000 and, with
# NEO_WORKERS > 0, runs jobs; settings are NEO_* variables (see docs/github-app.md).
# Built in stages: a runtime (Python, git); the locked dependencies, installed
# into /opt/neo with uv; Neo itself, installed over them; and the image, which
# takes /opt/neo from those (no uv, no pip, no sources) as two layers, so that
# a change to Neo's code rebuilds a small one. They come after the sandbox so
# that building `--target sandbox` never needs a build context.
# ---------------------------------------------------------------------------
FROM ${BASE_IMAGE} AS service-runtime

ARG DEBIAN_FRONTEND=noninteractive

# As in the sandbox (the same layer, so it is built once).
RUN printf '%s\n' \
        'path-exclude /usr/share/doc/*' \
        'path-include /usr/share/doc/*/copyright' \
        'path-exclude /usr/share/man/*' \
        'path-exclude /usr/share/info/*' \
        'path-exclude /usr/share/locale/*' \
        > /etc/dpkg/dpkg.cfg.d/01-neo-nodoc

# git: jobs clone, commit and push here, on the service's side, never in the
# sandbox. tini as PID 1 reaps git's children and forwards signals.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends \
        ca-certificates \
        git \
        python3 \
        tini \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

# uid/gid 1000, as the sandbox's `neo`: the working trees the service clones
# are then already owned by the user sandbox commands run as.
RUN groupadd --gid 1000 neo \
    && useradd --uid 1000 --gid 1000 --home-dir /home/neo --create-home \
        --shell /usr/sbin/nologin neo

FROM service-runtime AS service-deps

ARG DEBIAN_FRONTEND=noninteractive
# python3-venv: a virtual environment for the pip that installs uv.
RUN apt-get update \
    && apt-get install --yes --no-install-recommends python3-venv \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/*

ARG UV_VERSION=0.13.9
# The dependencies go to /opt/neo, compiled to bytecode: the service runs as
# a user that cannot write there, so nothing is compiled at start-up.
ENV UV_PROJECT_ENVIRONMENT=/opt/neo \
    UV_PYTHON=/usr/bin/python3 \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    SSL_CERT_FILE=/opt/build-ca.pem \
    PIP_CERT=/opt/build-ca.pem \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src

# From pyproject.toml and uv.lock alone, so that a change to Neo's own code
# reuses this layer. Downloads trust Debian's certificate authorities plus
# host-ca-certificates.crt when the context has one: scripts/build-images
# puts the host's bundle there, so a proxy that intercepts TLS and is trusted
# by the host is trusted by the build too. It stays in the build stages.
COPY pyproject.toml uv.lock host-ca-certificates.cr[t] ./
RUN cat /etc/ssl/certs/ca-certificates.crt \
        $(find . -maxdepth 1 -name host-ca-certificates.crt) > /opt/build-ca.pem \
    && python3 -m venv /opt/uv \
    && /opt/uv/bin/pip install --quiet "uv==${UV_VERSION}" \
    && /opt/uv/bin/uv sync --locked --no-dev --no-install-project

FROM service-deps AS service-build

COPY README.md ./
COPY bot ./bot
COPY runner ./runner
# Neo itself, as a wheel (not a link to /src, which the image does not keep).
# Only its own files are compiled (uv would compile every dependency again)
# and gathered under /opt/neo-self at their installed paths, so that the
# image takes them as a layer of their own, over the dependencies' layer.
RUN UV_COMPILE_BYTECODE=0 /opt/uv/bin/uv sync --locked --no-dev --no-editable \
    && site=$(/opt/neo/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))') \
    && /opt/neo/bin/python -m compileall -q "$site/bot" "$site/runner" \
    && install -d "/opt/neo-self$site" /opt/neo-self/opt/neo/bin \
    && cp -a "$site/bot" "$site/runner" "$site"/neo-*.dist-info "/opt/neo-self$site/" \
    && cp -a /opt/neo/bin/neo /opt/neo-self/opt/neo/bin/

FROM service-runtime AS service

COPY --from=service-deps /opt/neo /opt/neo
COPY --from=service-build /opt/neo-self/ /

# The data directory holds the queue (SQLite), the clones and the sessions.
# Jobs run in sandbox containers that the service starts through the Docker
# engine, so the engine resolves their bind mounts on the host: mount a host
# directory at this same path (`--volume /var/lib/neo:/var/lib/neo`), owned
# by uid 1000, or move both sides with NEO_DATA_DIR.
ENV PATH=/opt/neo/bin:$PATH \
    LANG=C.UTF-8 \
    HOME=/home/neo \
    NEO_DATA_DIR=/var/lib/neo
RUN install -d -o neo -g neo -m 0750 /var/lib/neo
VOLUME /var/lib/neo

# The Docker engine is reached through its socket, mounted at the default
# path, /var/run/docker.sock. The socket belongs to root and the `docker`
# group of the host, whose gid differs from host to host: give the user that
# group at run time,
#   --volume /var/run/docker.sock:/var/run/docker.sock
#   --group-add "$(stat -c %g /var/run/docker.sock)"
# Whoever reaches the socket is root on the host in all but name: it is the
# service that needs it, never the sandboxes (they get no socket). Without
# it, set NEO_SANDBOX=local and NEO_ALLOW_LOCAL_SANDBOX=1 (commands then run
# inside this container, where they can read the service's key and queue).
USER neo
WORKDIR /home/neo
EXPOSE 8000

# Python's standard library is enough for the probe (no curl in the image).
# The first check runs one interval after the start.
HEALTHCHECK --interval=5s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

ENTRYPOINT ["/usr/bin/tini", "--", "neo", "serve", "--host", "0.0.0.0", "--port", "8000"]
