# The code interpreter's preamble, run as PID 1 of the jail (read-only at /sandbox/runner.py).
# It puts the limits on itself before the user's code exists, runs that code as __main__,
# then hands the files under /mnt/data/outputs to the host on fd 3 and ends the jail (PID 1
# exiting kills every process left in it). What it reports is checked again by the host:
# the user's code runs in this same process and could write anything on fd 3.
#
# Python starts with `-I -S`: no site processing (its .pth files and sitecustomize cost tens of
# milliseconds per run and are code nobody here asked to run); the packages' directories and
# the exit()/quit()/help() builtins are put back below. json and traceback are imported only
# when needed (json pulls in re): `print(1)` should cost little more than bare Python.
import os
import resource
import site
import stat
import sys

sys.path.extend(p for p in site.getsitepackages() if os.path.isdir(p) and p not in sys.path)
site.setquit()
site.setcopyright()
site.sethelper()

OUTPUTS = "/mnt/data/outputs"
CODE = "/sandbox/main.py"
RESULTS_FD = 3
MAX_SKIPPED_REPORTED = 50
MAX_ENTRIES_VISITED = 100_000


def limit(what, value):
    resource.setrlimit(what, (value, value))


def apply_limits(lim):
    limit(resource.RLIMIT_DATA, lim["memory_bytes"])
    cpu = max(1, lim["cpu_secs"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    limit(resource.RLIMIT_NPROC, lim["max_processes"])
    limit(resource.RLIMIT_FSIZE, lim["max_file_size"])
    limit(resource.RLIMIT_NOFILE, lim["max_open_files"])
    limit(resource.RLIMIT_CORE, 0)


class Figures:
    """plt.show() saves the open figures as PNG outputs (figure_1.png, ...)."""

    def __init__(self):
        self.saved = 0

    def save_open(self, plt):
        for num in plt.get_fignums():
            fig = plt.figure(num)
            while True:
                self.saved += 1
                path = os.path.join(OUTPUTS, "figure_%d.png" % self.saved)
                if not os.path.lexists(path):
                    break
            fig.savefig(path, format="png")
        plt.close("all")

    def patch(self, plt):
        def show(*args, **kwargs):
            self.save_open(plt)

        plt.show = show


FIGURES = Figures()


class PyplotHook:
    """Patches matplotlib.pyplot when (and only if) the code imports it."""

    def find_spec(self, name, path=None, target=None):
        if name != "matplotlib.pyplot":
            return None
        import importlib.util

        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            FIGURES.patch(module)

        spec.loader.exec_module = exec_module
        return spec


def print_exc():
    import traceback

    traceback.print_exc()


def run_code():
    """The code's exit status and which limit (if any) its error says it hit."""
    with open(CODE, encoding="utf-8") as f:
        source = f.read()
    scope = {"__name__": "__main__", "__file__": CODE, "__builtins__": __builtins__}
    sys.argv = [CODE]
    try:
        exec(compile(source, CODE, "exec"), scope)
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0, None
        if isinstance(code, int):
            return code & 0xFF, None
        print(code, file=sys.stderr)
        return 1, None
    except MemoryError:
        print_exc()
        return 1, "memory"
    except BaseException as e:
        print_exc()
        if isinstance(e, BlockingIOError) or getattr(e, "errno", None) == 11:
            return 1, "processes"
        return 1, None
    finally:
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is not None:
            try:
                FIGURES.save_open(plt)
            except Exception:
                print_exc()
    return 0, None


def send(out, header, body=b""):
    import json

    out.write(json.dumps(header).encode() + b"\n")
    if body:
        out.write(body)


def send_outputs(out, max_files, max_file_bytes):
    taken = 0
    skipped = 0
    visited = 0

    def skip(rel, why):
        nonlocal skipped
        skipped += 1
        if skipped <= MAX_SKIPPED_REPORTED:
            send(out, {"skipped": rel, "why": why})

    for root, dirs, files in os.walk(OUTPUTS, followlinks=False):
        for name in sorted(dirs):
            if os.path.islink(os.path.join(root, name)):
                skip(os.path.relpath(os.path.join(root, name), OUTPUTS), "a symbolic link")
        dirs.sort()
        for name in sorted(files):
            visited += 1
            if visited > MAX_ENTRIES_VISITED:
                send(out, {"skipped_more": skipped - MAX_SKIPPED_REPORTED + 1})
                return
            full = os.path.join(root, name)
            rel = os.path.relpath(full, OUTPUTS)
            try:
                st = os.lstat(full)
            except OSError as e:
                skip(rel, "unreadable: %s" % e.strerror)
                continue
            if stat.S_ISLNK(st.st_mode):
                skip(rel, "a symbolic link")
                continue
            if not stat.S_ISREG(st.st_mode):
                skip(rel, "not a regular file")
                continue
            if taken >= max_files:
                skip(rel, "over the limit of %d files" % max_files)
                continue
            if st.st_size > max_file_bytes:
                skip(rel, "larger than %d bytes" % max_file_bytes)
                continue
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as f:
                    body = f.read(max_file_bytes + 1)
            except OSError as e:
                skip(rel, "unreadable: %s" % e.strerror)
                continue
            if len(body) > max_file_bytes:
                skip(rel, "larger than %d bytes" % max_file_bytes)
                continue
            taken += 1
            send(out, {"file": rel, "size": len(body)}, body)
    if skipped > MAX_SKIPPED_REPORTED:
        send(out, {"skipped_more": skipped - MAX_SKIPPED_REPORTED})


def send_end(out, code, hit):
    """The last header, written by hand: json is not imported for a run with no files.
    The peak RSS (KiB) of this process and the children it waited for: the host's own figure
    for the jail also counts the server's size when it forked bwrap."""
    limit = "null" if hit is None else '"%s"' % hit
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    out.write(b'{"end": {"exit": %d, "limit": %s, "max_rss_kib": %d}}\n' % (code, limit.encode(), peak))


def main():
    # key=value,... of integers (parsing JSON would import json, and with it re).
    settings = {k: int(v) for k, v in (kv.split("=") for kv in sys.argv[1].split(","))}
    apply_limits(settings)
    os.set_inheritable(RESULTS_FD, False)
    os.closerange(RESULTS_FD + 1, 4096)
    out = os.fdopen(RESULTS_FD, "wb")
    sys.meta_path.insert(0, PyplotHook())
    code, hit = run_code()
    if os.getpid() != 1:
        # A process the code forked came back here: only the jail's first process reports.
        os._exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    try:
        send_outputs(out, settings["max_files"], settings["max_file_bytes"])
        send_end(out, code, hit)
        out.flush()
    except Exception:
        print_exc()
    os._exit(code)


main()
