"""Confinement the sandboxed child applies to itself before any submitted code runs.

This file runs inside the child (copied beside child.py, which loads it by path), so it
uses only the standard library, plus libseccomp's Python binding where installed. It is
also imported by the trusted grader, to probe which layers this machine offers.

The layers, each optional and each reported by the grader when active:
- namespaces of its own (IPC, network, host name) where the child starts as root with the
  right to make them (outside bubblewrap, which makes its own), so no System V or POSIX IPC
  object it makes outlives it;
- its job slot's CPUs (sched_setaffinity on every thread), so one submission's processes
  cannot take its neighbours' CPUs;
- rlimits: memory, CPU time, file size, core dumps, and (for a dedicated uid) processes;
- `no_new_privs` and, when the child still runs as root, every capability dropped;
- Landlock (Linux >= 5.13): reads only of the Python installation, system libraries and the
  grader's read-only folder; writes only to the child's own folders; no TCP (ABI >= 4); no
  signals to processes outside the sandbox (ABI >= 6);
- seccomp: no ptrace, no reading other processes' memory, no mounts or namespaces, no new
  sessions or process groups (so nothing escapes the kill of its group), no device files,
  no sockets but UNIX ones, rlimits that cannot be raised again, no System V IPC or POSIX
  message queues (objects that would outlive the child), no change of its CPUs and no
  scheduling of other processes; and, for a child without a uid of its own (whose process
  count no rlimit bounds: RLIMIT_NPROC never applies to root), no new processes, threads
  only.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import resource
import signal
import socket
import stat
import types

PR_SET_NO_NEW_PRIVS = 38
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
# Filesystem access rights by ABI version (uapi/linux/landlock.h).
FS_READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read file, read dir
FS_ALL_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
# The rights a rule on a file (not a folder) may carry: execute, write, read, truncate, ioctl.
FS_FILE = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
CLONE_NAMESPACE_FLAGS = (
    0x00020000,
    0x02000000,
    0x04000000,
    0x08000000,
    0x10000000,
    0x20000000,
    0x40000000,
    0x00000080,
)  # NEWNS ... NEWNET, NEWTIME
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "setsid",
    "setpgid",
    "mknod",
    "mknodat",
    "setrlimit",
    "kexec_load",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "keyctl",
    "add_key",
    "request_key",
    "open_by_handle_at",
    "fsopen",
    "fsmount",
    "move_mount",
    "open_tree",
    "capset",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "sethostname",
    "setdomainname",
    "iopl",
    "ioperm",
    "settimeofday",
    "clock_settime",
    "adjtimex",
    "acct",
    # Objects of the IPC namespace outlive the process that made them: without its own
    # namespace, a child's shared memory would stay on the machine until someone ran ipcrm.
    "shmget",
    "shmat",
    "shmctl",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "semget",
    "semop",
    "semtimedop",
    "semctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
    # The child's CPUs are its job slot's (pin_cpus): it must not widen them again.
    "sched_setaffinity",
)
# Calls that act on another process when their pid argument (the first) is not 0: a child
# running as the grader's uid (root, or a grader without uid slots) could otherwise lower
# its neighbours' priority or pin them onto its own CPUs.
OTHER_PROCESS_SYSCALLS = (
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "migrate_pages",
    "move_pages",
)
# setpriority(which, who, prio) and ioprio_set(which, who, prio): the target is the second.
OTHER_TARGET_SYSCALLS = ("setpriority", "ioprio_set")
# Processes (not threads) a child without a uid of its own may not start: TensorFlow and JAX
# start threads (clone with CLONE_THREAD), which the supervisor counts (children.py).
CLONE_THREAD = 0x00010000
NEW_PROCESS_SYSCALLS = ("fork", "vfork")
# Namespaces a child that starts as root leaves before it confines itself (bubblewrap makes
# its own): IPC (its shared memory, message queues and semaphores die with it), network and
# host name, as the fork server's children do.
CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS = 0x40000000, 0x08000000, 0x04000000
OWN_NAMESPACES = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS

# The C library, bound once for the whole grader: this file's system calls, the fork
# server's (prctl, unshare) and the grader's round folders (mount, umount2) use it.
LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long


class RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class ConfinementError(RuntimeError):
    """A layer the grader declared could not be applied: the child must not go on."""


def landlock_abi() -> int:
    """Landlock's ABI version here, 0 where the kernel lacks it or it is switched off."""
    version = LIBC.syscall(
        SYS_LANDLOCK_CREATE_RULESET,
        None,
        ctypes.c_size_t(0),
        ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION),
    )
    return max(int(version), 0)


# The libraries pyseccomp looks up with ctypes.util.find_library, which runs `ldconfig -p`
# for each: two processes and about 30 ms of every child's start-up, inside its sandbox.
KNOWN_SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}


def import_pyseccomp() -> types.ModuleType:
    """pyseccomp, its libraries found by their usual sonames where those load, and by
    ctypes' own search (ldconfig) elsewhere."""
    search = ctypes.util.find_library

    def find(name: str) -> str | None:
        soname = KNOWN_SONAMES.get(name)
        if soname:
            try:
                ctypes.CDLL(soname)
                return soname
            except OSError:
                pass
        return search(name)

    ctypes.util.find_library = find
    try:
        import pyseccomp
    finally:
        ctypes.util.find_library = search
    return pyseccomp


def seccomp_available() -> bool:
    """True where libseccomp and its Python binding load."""
    try:
        import_pyseccomp()
    except (ImportError, OSError):
        return False
    return True


def set_no_new_privs() -> None:
    if LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise ConfinementError(f"prctl(NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}")


def drop_capabilities() -> None:
    """A child still running as root keeps uid 0 but loses every capability."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()
    for cap in range(64):
        LIBC.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the last capability
    if LIBC.capset(header, data) != 0:
        raise ConfinementError(f"capset failed: {os.strerror(ctypes.get_errno())}")


def _fs_rights(abi: int) -> int:
    return FS_ALL_BY_ABI[max(v for v in FS_ALL_BY_ABI if v <= abi)]


def _add_path(ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path this machine lacks needs no rule
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            access &= FS_FILE
        rule = PathBeneathAttr(access, fd)
        if (
            LIBC.syscall(
                SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0
            )
            != 0
        ):
            raise ConfinementError(
                f"landlock_add_rule({path}) failed: {os.strerror(ctypes.get_errno())}"
            )
    finally:
        os.close(fd)


def apply_landlock(read: list[str], write: list[str]) -> int:
    """Restrict this process and its children to reading `read` and writing `write`."""
    abi = landlock_abi()
    if abi < 1:
        raise ConfinementError("Landlock is not available")
    everything = _fs_rights(abi)
    attr = RulesetAttr(
        everything,
        (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0,
        (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0,
    )
    size = ctypes.sizeof(RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = LIBC.syscall(
        SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    if ruleset < 0:
        raise ConfinementError(f"landlock_create_ruleset failed: {os.strerror(ctypes.get_errno())}")
    try:
        for path in read:
            _add_path(ruleset, path, FS_READ & everything)
        for path in write:
            _add_path(ruleset, path, everything)
        if LIBC.syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            raise ConfinementError(
                f"landlock_restrict_self failed: {os.strerror(ctypes.get_errno())}"
            )
    finally:
        os.close(ruleset)
    return abi


def apply_seccomp(single_process: bool = False) -> None:
    """Deny the system calls a grading child never needs (EPERM, so Python sees OSError);
    with `single_process`, also every new process (threads stay allowed)."""
    seccomp = import_pyseccomp()
    rules = seccomp.SyscallFilter(seccomp.ALLOW)
    deny = seccomp.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        rules.add_rule(deny, name)
    for name in OTHER_PROCESS_SYSCALLS:
        rules.add_rule(deny, name, seccomp.Arg(0, seccomp.NE, 0))
    for name in OTHER_TARGET_SYSCALLS:
        rules.add_rule(deny, name, seccomp.Arg(1, seccomp.NE, 0))
    rules.add_rule(deny, "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
    rules.add_rule(deny, "prlimit64", seccomp.Arg(2, seccomp.NE, 0))
    # clone3 passes its flags in memory, out of seccomp's sight: make libc fall back to clone.
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    for flag in CLONE_NAMESPACE_FLAGS:
        rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    if single_process:
        for name in NEW_PROCESS_SYSCALLS:
            rules.add_rule(deny, name)
        rules.add_rule(deny, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))
    rules.load()


def leave_namespaces() -> None:
    """Own IPC, network and host-name namespaces (needs CAP_SYS_ADMIN: a child that starts
    as root, before it drops its capabilities). What the child makes there dies with it."""
    if LIBC.unshare(OWN_NAMESPACES) != 0:
        raise ConfinementError(
            f"unshare of the IPC and network namespaces failed: {os.strerror(ctypes.get_errno())}"
        )


def pin_cpus(cpus: list[int]) -> None:
    """Run every thread of this process on `cpus` only (its job slot's), so that however
    many threads or processes it starts, its neighbours' CPUs stay theirs; threads and
    processes started later inherit the mask, and seccomp forbids changing it."""
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), cpus)
        except ProcessLookupError:
            continue  # a thread that has just ended
        except OSError as error:
            raise ConfinementError(f"sched_setaffinity({cpus}) failed: {error}") from error


def apply_rlimits(limits: dict) -> None:
    """Memory, CPU time, file size and (for a dedicated uid) process count limits."""
    memory, cpu, size = limits["memory"], limits["cpu_seconds"], limits["file_size"]
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if limits.get("processes"):
        resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"], limits["processes"]))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a too-large write fails instead of killing


def confine(plan: dict) -> None:
    """Apply every layer in the grader's plan, in an order where each still can be applied."""
    if plan.get("namespaces"):
        leave_namespaces()  # first: it needs the capabilities dropped below
    if plan.get("cpus"):
        pin_cpus(plan["cpus"])
    apply_rlimits(plan["limits"])
    if plan.get("no_new_privs"):
        set_no_new_privs()
    if plan.get("drop_capabilities"):
        drop_capabilities()
    landlock = plan.get("landlock")
    if landlock:
        own = f"/proc/{os.getpid()}"
        apply_landlock([*landlock["read"], own], landlock["write"])
    if plan.get("seccomp"):
        # last: it forbids capset, setrlimit and sched_setaffinity, which the steps above use
        apply_seccomp(bool(plan.get("single_process")))
