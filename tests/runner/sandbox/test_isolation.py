"""The local sandbox's namespaces: the command line, the reasons for a refusal,
and the init's reading of the mount table. Real namespaces are exercised by
tests/hostile/test_local_sandbox.py and test_local.py."""

from __future__ import annotations

import pytest

from runner.sandbox import local_init
from runner.sandbox.isolation import init_argv, refusal, why_not

RESTRICTED = "kernel/apparmor_restrict_unprivileged_userns"


def test_a_normal_user_gets_a_user_namespace_and_root_does_not() -> None:
    user = init_argv("/usr/bin/unshare", 1000, "/py", "/tree")
    root = init_argv("/usr/bin/unshare", 0, "/py", "/tree")

    assert user == [
        "/usr/bin/unshare",
        "--map-current-user",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "--",
        "/py",
        "-I",
        local_init.__file__,
        "/tree",
    ]
    assert root == [user[0], *user[2:]]


@pytest.mark.parametrize(
    ("stderr", "euid", "sysctls", "reason"),
    [
        pytest.param(
            b"unshare: write failed /proc/self/uid_map: Operation not permitted\n",
            1000,
            {RESTRICTED: "1", "user/max_user_namespaces": "63000"},
            "AppArmor forbids unprivileged user namespaces here:"
            " kernel.apparmor_restrict_unprivileged_userns=1",
            id="ubuntu-apparmor",
        ),
        pytest.param(
            b"unshare: unshare failed: Operation not permitted\n",
            1000,
            {"kernel/unprivileged_userns_clone": "0"},
            "unprivileged user namespaces are disabled here: kernel.unprivileged_userns_clone=0",
            id="debian-sysctl",
        ),
        pytest.param(
            b"unshare: unshare failed: No space left on device\n",
            1000,
            {"user/max_user_namespaces": "0"},
            "user namespaces are disabled here: user.max_user_namespaces=0",
            id="no-user-namespaces",
        ),
        pytest.param(
            b"unshare: unshare failed: Operation not permitted\n",
            0,
            {RESTRICTED: "1"},
            "unshare: unshare failed: Operation not permitted",
            id="root-needs-no-user-namespace",
        ),
        pytest.param(
            b"\nunshare: mount /proc failed:\tPermission denied\nmore\n",
            1000,
            {RESTRICTED: "0"},
            "unshare: mount /proc failed: Permission denied",
            id="unshare-s-first-line",
        ),
        pytest.param(b"", 1000, {}, "its init exited before it was ready", id="silent"),
    ],
)
def test_a_refusal_names_its_reason(
    stderr: bytes, euid: int, sysctls: dict[str, str], reason: str
) -> None:
    assert why_not(stderr, euid, sysctls) == reason
    assert refusal(reason) == (
        f"the local sandbox cannot hide other processes from its commands ({reason});"
        " use --sandbox docker"
    )


def test_the_init_finds_every_proc_mount_point_unescaped() -> None:
    mountinfo = (
        b"22 1 0:21 / /proc rw,nosuid shared:12 - proc proc rw\n"
        b"23 22 0:22 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw\n"
        b"30 1 0:21 / /host\\040proc rw master:1 - proc proc rw\n"
        b"31 1 8:1 / /data rw - ext4 /dev/sda1 rw\n"
        b"32 1 0:40 / /weird\\134name rw shared:5 opt:x - proc none rw,hidepid=2\n"
    )

    assert list(local_init.proc_mounts(mountinfo)) == ["/proc", "/host proc", "/weird\\name"]
