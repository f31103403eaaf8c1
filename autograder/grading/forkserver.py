"""The zygote's program: a clean process that forks one sandboxed kernel per request (zygote.py runs it).

Not imported by the grader: zygote.py runs this file's source with ``python -c``, as root, in a
mount namespace of its own whose root is a jail like the sandbox's (``jail.zygote_script``), with
the kernel's environment. It imports what every kernel imports (ipykernel, and the notebook's
modules: numpy, torch, matplotlib), starts no thread, and then only forks. It never runs any code
of a submission: each child leaves it at once, so each submission gets a fresh process that no
other submission's code touched, built as the sandbox always was (:func:`_sandbox`):

    zygote (root, jail's mount namespace)   imports once, then waits for requests
      A  (root)    unshares net, pid, mount, ipc and uts namespaces;
                   dies with the zygote; reports how B ended, then exits
        B  (root, pid 1 of the new namespaces)  joins the sandbox's cgroups, mounts a fresh
                   scratch tmpfs on /tmp (and /dev/shm), a /proc of its own; dies with A, taking
                   every process of the namespace with it; waits for the kernel, reaps orphans
          C  (the sandbox's uid)  every other descriptor closed, no capability (bounding,
                   inheritable), no_new_privs, the rlimits, the kernel's environment: the kernel

Requests come on the one socket the grader holds (a SOCK_SEQPACKET pair): JSON, and as descriptors
the kernel's log, the write end of a status pipe and the cgroups' ``cgroup.procs``
files. The answer is A's pid and a pidfd for it (the grader kills the sandbox through it). The end
of that socket (the grader is gone) ends the zygote, and with it every sandbox it forked.
"""

import ctypes
import json
import os
import resource
import select
import signal
import socket
import sys

NAMESPACES = 0x20000 | 0x4000000 | 0x8000000 | 0x20000000 | 0x40000000  # CLONE_NEWNS, NEWUTS, NEWIPC, NEWPID, NEWNET
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND = 2, 4, 8, 4096
MNT_DETACH = 2
# open_tree(2) and move_mount(2) (Linux 5.2; the same numbers on x86-64 and arm64): a mount of the jail under /tmp
# (a venv or checkout that lives under the host's /tmp) is cloned before the scratch tmpfs hides it, then put back
SYS_OPEN_TREE, SYS_MOVE_MOUNT, AT_FDCWD = 428, 429, -100
OPEN_TREE_CLONE, AT_RECURSIVE, MOVE_MOUNT_F_EMPTY_PATH = 1, 0x8000, 4
LIMITS = {"as": resource.RLIMIT_AS, "nproc": resource.RLIMIT_NPROC, "fsize": resource.RLIMIT_FSIZE,
          "cpu": resource.RLIMIT_CPU, "core": resource.RLIMIT_CORE}  # fmt: skip
libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _mount(source, target, fstype, flags, options=None) -> None:
    encode = lambda text: text and text.encode()  # noqa: E731
    _check(libc.mount(encode(source), encode(target), encode(fstype), flags, encode(options)), target)


def _kernel(request: dict, log: int) -> None:
    """C: drop everything, as setpriv, prlimit and env -i did, and run the kernel in this process."""
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.closerange(3, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    os.chdir("/tmp")
    uid = request["uid"]
    for cap in range(64):  # the bounding set (needs CAP_SETPCAP: before the uid changes)
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)  # no keep-caps: the permitted, effective and ambient sets empty
    header, data = (ctypes.c_uint32 * 2)(0x20080522, 0), (ctypes.c_uint32 * 6)()
    _check(libc.capset(header, data), "capset")  # the inheritable set too
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    for name, value in request["limits"].items():
        resource.setrlimit(LIMITS[name], (value, value))
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(request["env"])
    if "numpy" in sys.modules:  # a fresh process seeds numpy's global generator from the OS (random reseeds itself)
        sys.modules["numpy"].random.seed()
    import ipykernel_launcher
    from ipykernel import kernelapp

    sys.argv = [ipykernel_launcher.__file__, *request["argv"]]
    kernelapp.launch_new_instance()


def _clone_mount(path: str) -> int:
    """A detached copy of the mount at ``path`` (and those below it), as a descriptor for move_mount."""
    flags = OPEN_TREE_CLONE | AT_RECURSIVE | os.O_CLOEXEC
    tree = libc.syscall(SYS_OPEN_TREE, AT_FDCWD, path.encode(), flags)
    if tree < 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"open_tree {path} (a course under /tmp needs Linux 5.2): {os.strerror(errno)}")
    return tree


def _init(request: dict, log: int, cgroups: list) -> None:
    """B, pid 1 of the sandbox's namespaces (as the setup shell was): its scratch folder, a fresh size-limited
    tmpfs on /tmp, owned by the sandbox's uid (the kernel's working folder and HOME, its connection file and
    sockets: the grader reaches them through /proc/<B>/root), also /dev/shm; a /proc of its own; then it
    waits for the kernel."""
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    for procs in cgroups:  # as the setup shell did: pid 1 and the kernel it forks count there
        os.write(procs, b"0")
        os.close(procs)
    uid, fonts = request["uid"], {}
    for name in os.listdir("/tmp/.mpl"):  # the zygote's font list, for the kernel's matplotlib cache
        with open(f"/tmp/.mpl/{name}", "rb") as handle:
            fonts[name] = handle.read()
    kept = [(path, _clone_mount(path)) for path in request.get("tmp_binds", [])]
    options = f"size={request['scratch_mb']}m,mode=0700,uid={uid},gid={uid}"
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, options)
    for sub in (".mpl", ".shm", ".ipython", ".jupyter"):
        os.mkdir(f"/tmp/{sub}")
        os.chown(f"/tmp/{sub}", uid, uid)
    for path, tree in kept:  # back where the kernel finds them, read-only as before, in root's folders
        os.makedirs(path)
        _check(libc.syscall(SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, path.encode(), MOVE_MOUNT_F_EMPTY_PATH), path)
        os.close(tree)
    for name, data in [*((f".mpl/{n}", d) for n, d in fonts.items()), (".kernel.json", request["connection"])]:
        with open(f"/tmp/{name}", "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
        os.chown(f"/tmp/{name}", uid, uid)
    _mount("/tmp/.shm", "/dev/shm", None, MS_BIND)
    _check(libc.umount2(b"/proc", MNT_DETACH), "umount /proc")
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    kernel = os.fork()
    if kernel == 0:
        _run(_kernel, request, log)
    os.close(log)
    while True:  # the kernel's orphans are reaped here, as the shell did
        pid, status = os.wait()
        if pid == kernel:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _sandbox(request: dict, fds: list, zygote: int) -> None:
    """A: the sandbox's namespaces; reports B's pid, then how B ended, on the status pipe."""
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    if os.getppid() != zygote:
        os._exit(1)
    log, status, *cgroups = fds
    _check(libc.unshare(NAMESPACES), "unshare")
    child = os.fork()
    if child == 0:
        os.close(status)
        _run(_init, request, log, cgroups)
    for descriptor in (log, *cgroups):
        os.close(descriptor)
    os.write(status, f"{child}\n".encode())  # the grader reaches the sandbox's /tmp through /proc/<child>/root
    _, code = os.waitpid(child, 0)
    os.write(status, f"{os.waitstatus_to_exitcode(code)}\n".encode())
    os._exit(0)


def _run(function, *args) -> None:
    """Run one stage of a sandbox, which never returns; if it fails, say why on stderr and exit."""
    try:
        function(*args)
    except BaseException:  # noqa: B036
        import traceback

        traceback.print_exc()
    finally:
        os._exit(1)


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def main() -> None:
    fd, modules = int(sys.argv[2]), json.loads(sys.argv[3])
    if sys.path and sys.path[0] == "":  # as ipykernel_launcher: the working folder is not on the path yet
        del sys.path[0]
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"  # as the kernel sets it, before imports
    import importlib

    for name in ["ipykernel_launcher", "ipykernel.kernelapp", *modules]:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S110 - the kernel imports it again, and fails as it would have
            pass
    conn = socket.socket(fileno=fd)
    threads = len(os.listdir("/proc/self/task"))
    conn.send(json.dumps({"ready": threads == 1, "threads": threads}).encode())
    if threads != 1:
        return
    zygote = os.getpid()
    while True:
        ready, _, _ = select.select([conn], [], [], 1.0)
        _reap()
        if not ready:
            continue
        message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 16)
        if not message:
            os._exit(0)  # the grader is gone: so are the sandboxes (each dies with its parent)
        try:
            request = json.loads(message)
            pid = os.fork()
        except Exception as exc:  # noqa: BLE001
            for descriptor in fds:
                os.close(descriptor)
            conn.send(json.dumps({"error": repr(exc)}).encode())
            continue
        if pid == 0:
            os.close(conn.detach())
            os.dup2(fds[0], 2)  # what goes wrong before the kernel runs goes to the kernel's log
            _run(_sandbox, request, fds, zygote)
        for descriptor in fds:
            os.close(descriptor)
        pidfd = os.pidfd_open(pid)
        socket.send_fds(conn, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)


if __name__ == "__main__":
    main()
