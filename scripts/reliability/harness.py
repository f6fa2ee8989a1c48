"""The real parts, started by the suite: scripts/rig.sh's private bus and
polkitd, localauthd (the binary `swift build` made) on libfprint's virtual
sensor, and measurements of the service from /proc."""
import json
import os
import random
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RIG = os.path.join(ROOT, "scripts", "rig.sh")
XML = os.path.join(ROOT, "dbus", "org.example.LocalAuth.xml")
PY = "/usr/bin/python3"
ACTIONS = ["org.example.LocalAuth.evaluate", "org.example.LocalAuth.enroll", "org.example.LocalAuth.manage",
           "org.example.LocalAuth.authenticate-owner"]
NOBODY = 65534


def drop(uid):
    return [] if uid == 0 else ["/usr/bin/setpriv", "--reuid=%d" % uid, "--regid=%d" % uid, "--clear-groups"]


class Rig:
    def __init__(self, directory):
        self.dir = directory
        out = subprocess.run([RIG, "start", directory], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("rig.sh start: " + out.stdout + out.stderr)
        self.env = dict(line.split("=", 1) for line in open(directory + "/env").read().split())
        self.address = self.env["DBUS_SYSTEM_BUS_ADDRESS"]
        self.answers = self.env["LOCALAUTH_TEST_POLKIT_DIR"]

    def polkit(self, action, answer):
        subprocess.run([RIG, "polkit", self.dir, action, answer], check=True)

    def polkit_all(self, answer):
        for action in ACTIONS:
            self.polkit(action, answer)

    def held(self, action):
        return os.path.exists(os.path.join(self.answers, "waiting", action))

    def polkitd_pid(self):
        return int(open(self.dir + "/polkitd.pid").read())

    def kill_polkitd(self):
        pid = self.polkitd_pid()
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid)

    def start_polkitd(self):
        """What rig.sh start does for polkitd, alone (the bus stays up)."""
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=self.address, LOCALAUTH_TEST_POLKIT_DIR=self.answers)
        log = open(self.dir + "/polkitd.log", "a")
        child = subprocess.Popen(["/usr/lib/polkit-1/polkitd"], env=env, stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=log, start_new_session=True)
        open(self.dir + "/polkitd.pid", "w").write("%d\n" % child.pid)
        deadline = time.monotonic() + 10
        while not self.has_owner("org.freedesktop.PolicyKit1"):
            if time.monotonic() > deadline:
                raise RuntimeError("polkitd did not come back")
            time.sleep(0.02)
        return child

    def revive_polkit(self):
        """rig.sh revive-polkit: polkitd started again if it died (Debian's
        122 does now and then; the end-to-end tests revive it before each
        test). Returns rig.sh's line when it had to, else ""."""
        out = subprocess.run([RIG, "revive-polkit", self.dir], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("rig.sh revive-polkit: " + out.stdout + out.stderr)
        return out.stdout.strip()

    def has_owner(self, name):
        out = subprocess.run(["/usr/bin/dbus-send", "--bus=" + self.address, "--print-reply", "--reply-timeout=2000",
                              "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                              "org.freedesktop.DBus.NameHasOwner", "string:" + name], capture_output=True, text=True)
        return "boolean true" in out.stdout

    def stop(self):
        subprocess.run([RIG, "stop", self.dir], capture_output=True)


def wait_gone(pid, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.005)
    return False


class Service:
    """localauthd on the rig's bus with its own state and virtual sensor."""

    def __init__(self, rig, localauthd, state, extra=(), environment=None, launcher=()):
        self.rig, self.localauthd, self.state = rig, localauthd, state
        os.makedirs(state, exist_ok=True)
        base = os.path.dirname(state.rstrip("/"))
        self.sensor = os.path.join(base, "vfp-%d.sock" % random.randrange(10 ** 9))
        self.log_path = state.rstrip("/") + ".log"
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address, FP_DRIVERS_WHITELIST="virtual_device",
                   FP_VIRTUAL_DEVICE=self.sensor)
        env.update(environment or {})
        os.makedirs(base + "/fprintd-store", exist_ok=True)
        command = list(launcher) + [localauthd, "--state-dir", state, "--idle-timeout", "0",
                                    "--fprintd-store", base + "/fprintd-store"] + list(extra)
        self.child = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=open(self.log_path, "a"),
                                      stderr=subprocess.STDOUT)
        self.pid = self.child.pid
        deadline = time.monotonic() + 20
        while not rig.has_owner("org.example.LocalAuth"):
            if self.child.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("localauthd did not start: " + self.log()[-2000:])
            time.sleep(0.02)

    def log(self):
        try:
            return open(self.log_path, errors="replace").read()
        except OSError:
            return ""

    def alive(self):
        return self.child.poll() is None and self.rig.has_owner("org.example.LocalAuth")

    def stats(self):
        """RSS, its high-water mark (kB) and open fds, from /proc/PID."""
        values = {}
        for line in open("/proc/%d/status" % self.pid):
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                values[key] = int(rest.split()[0])
        values["fds"] = len(os.listdir("/proc/%d/fd" % self.pid))
        return {"rss_kb": values["VmRSS"], "hwm_kb": values["VmHWM"], "fds": values["fds"]}

    def vfp(self, command, timeout=5.0):
        vfp(self.sensor, command, timeout)

    def terminate(self, timeout=10):
        """SIGTERM; returns (exit status, seconds) (status None: still running)."""
        started = time.monotonic()
        if self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)
        try:
            status = self.child.wait(timeout)
        except subprocess.TimeoutExpired:
            status = None
        return status, time.monotonic() - started

    def kill9(self):
        if self.child.poll() is None:
            self.child.send_signal(signal.SIGKILL)
        self.child.wait()

    def stop(self):
        status, _ = self.terminate()
        if status is None:
            self.kill9()


def vfp(path, command, timeout=5.0):
    """One command to libfprint's virtual sensor; waits until the driver took
    it (it closes the connection)."""
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            break
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise RuntimeError("virtual sensor %s not listening" % path)
            time.sleep(0.005)
    try:
        s.sendall(command.encode())
        s.settimeout(5)
        try:
            while s.recv(256):
                pass
        except OSError:
            pass
    finally:
        s.close()


def worker(rig, uid, args, timeout=600):
    """Runs worker.py as uid to completion; returns its last JSON line."""
    out = subprocess.run(drop(uid) + [PY, os.path.join(HERE, "worker.py")] + [str(a) for a in args],
                         env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address, PYTHONDONTWRITEBYTECODE="1"),
                         capture_output=True, text=True, timeout=timeout)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if out.returncode != 0 or not lines:
        raise RuntimeError("worker %s as %d failed: %s %s" % (args[:2], uid, out.stdout[-500:], out.stderr[-1500:]))
    return json.loads(lines[-1])


def start_worker(rig, uid, args):
    """Starts worker.py as uid; returns the Popen (stdout a pipe)."""
    return subprocess.Popen(drop(uid) + [PY, os.path.join(HERE, "worker.py")] + [str(a) for a in args],
                            env=dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address, PYTHONDONTWRITEBYTECODE="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def percentile(values, p):
    if not values:
        return None
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, int(round(p / 100.0 * len(ordered) + 0.5)) - 1))
    return ordered[k]


UNIT = os.path.join(ROOT, "systemd", "localauthd.service.in")


def unit_values(key):
    """The values of KEY= in the shipped unit (every line, space-separated)."""
    values = []
    for line in open(UNIT).read().splitlines():
        if line.startswith(key + "="):
            values += line[len(key) + 1:].split()
    return values


def unit_memory_max():
    """The unit's MemoryMax= in bytes (None when it has none)."""
    values = unit_values("MemoryMax")
    if not values:
        return None
    value = values[-1]
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(value[-1:].upper(), 1)
    return int(value[:-1] if scale != 1 else value) * scale


def unit_launcher():
    """setpriv with exactly the unit's capabilities (CapabilityBoundingSet=,
    AmbientCapabilities=, NoNewPrivileges=), as systemd starts the service."""
    def caps(key):
        return [v.lower().replace("cap_", "") for v in unit_values(key)]
    launcher = ["/usr/bin/setpriv", "--bounding-set=" + ",".join(["-all"] + ["+" + c for c in caps("CapabilityBoundingSet")]),
                "--inh-caps=-all", "--ambient-caps=" + ",".join(["-all"] + ["+" + c for c in caps("AmbientCapabilities")])]
    if "yes" in unit_values("NoNewPrivileges"):
        launcher.append("--no-new-privs")
    return launcher + ["--"]


class MemoryGroup:
    """A cgroup v1 memory group whose limit the kernel enforces: a service
    started through `launcher` runs in it, so that going past the limit is
    an OOM kill (a death the row sees), as under the unit's MemoryMax."""
    HIERARCHY = "/sys/fs/cgroup/memory"

    def __init__(self, limit):
        if not os.path.isdir(self.HIERARCHY):
            raise RuntimeError("no cgroup v1 memory hierarchy at %s" % self.HIERARCHY)
        self.path = os.path.join(self.HIERARCHY, "localauth-rel-%d-%d" % (os.getpid(), random.randrange(10 ** 9)))
        os.mkdir(self.path)
        self.limit = limit
        self.write("memory.limit_in_bytes", limit)
        if os.path.exists(os.path.join(self.path, "memory.memsw.limit_in_bytes")):
            self.write("memory.memsw.limit_in_bytes", limit)   # no escape into swap
        self.launcher = ["/bin/sh", "-c", 'echo $$ > %s/cgroup.procs && exec "$@"' % self.path, "enter-cgroup"]

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write("%d\n" % value)

    def read(self, name):
        return open(os.path.join(self.path, name)).read()

    def peak(self):
        return int(self.read("memory.max_usage_in_bytes"))

    def oom_kills(self):
        """Processes the kernel killed here for going past the limit."""
        for line in self.read("memory.oom_control").splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return None   # an old kernel that does not count them

    def remove(self):
        deadline = time.monotonic() + 5
        while os.path.isdir(self.path):
            try:
                os.rmdir(self.path)
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.05)
