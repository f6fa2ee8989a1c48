"""The rows of the reliability suite. Each row attacks the real service on the
rig and returns its checks: (what, passed, measured value, goal). A row
passes when every check does; every value is measured in this run."""
import json
import os
import random
import select
import signal
import subprocess
import threading
import time

import bus
import contract
import harness
from bus import GLib
from harness import NOBODY

FINGER = "rel-finger"          # the virtual print id of root's right index finger
NOBODY_FINGER = "rel-nobody"   # nobody's left thumb


class Row:
    def __init__(self, name):
        self.name = name
        self.checks = []
        self.figures = {}

    def check(self, what, passed, value, goal, known=None):
        """known: the id of a known service bug (KNOWN) this check shows."""
        self.checks.append({"what": what, "passed": bool(passed), "value": value, "goal": goal, "known": known})
        return passed

    @property
    def passed(self):
        return bool(self.checks) and all(c["passed"] for c in self.checks)

    @property
    def passed_but_known(self):
        """Every failing check is a known service bug."""
        return bool(self.checks) and all(c["passed"] or c["known"] for c in self.checks)


# Service bugs this suite found, open until Sources/ fixes them (RELIABILITY.md).
# Fixed so far: R1 (a value inside an a{sv} escaped the 16 KiB limit: the
# array length was asked of the wrong iterator) and R2 (a verify-only reader
# tried the first print in finger order first; now the finger that matched
# last, kept across restarts). RELIABILITY.md has both stories.
KNOWN = {}


class Context:
    def __init__(self, rig, localauthd, base, short, seed):
        self.rig, self.localauthd, self.base, self.short, self.seed = rig, localauthd, base, short, seed
        self.rng = random.Random(seed)
        self.count = 0
        self.services = []
        self.cleanups = []   # run after the services stopped (a cgroup to remove)

    def service(self, state=None, extra=(), environment=None, rig=None, launcher=()):
        self.count += 1
        state = state or os.path.join(self.base, "svc-%d" % self.count, "state")
        svc = harness.Service(rig or self.rig, self.localauthd, state, extra, environment, launcher)
        self.services.append(svc)
        return svc

    def client(self, rig=None):
        return bus.Client((rig or self.rig).address)

    def cleanup(self):
        for svc in self.services:
            svc.stop()
        self.services = []
        for cleanup in self.cleanups:
            cleanup()
        self.cleanups = []


# ---------------------------------------------------------------- helpers

def enroll_root(svc, client, finger, scan_id, options=None, max_scans=12):
    """Enrolls a finger of root's, one SCAN per EnrollStatus that asks for one."""
    client.signals.clear()
    pending = client.start("EnrollWithOptions", "sa{sv}", [finger, options or {}])
    sent = 0
    while pending.outcome is None and sent < max_scans:
        asked = sum(1 for (_, m, v) in client.signals if m == "EnrollStatus" and v[0] in
                    ("enroll-place-finger", "enroll-stage-passed", "enroll-retry-scan") and v[1] < v[2])
        if asked > sent:
            svc.vfp("SCAN " + scan_id)
            sent += 1
        client.pump(0.005)
    client.wait(lambda: pending.outcome is not None, 30)
    return pending.outcome


class Remote:
    """A call made by worker.py as another uid; its signals arrive as lines."""

    def __init__(self, ctx, uid, member, signature, values, listen=None, rig=None):
        args = ["call", member, signature, json.dumps(values)] + ([listen] if listen is not None else [])
        self.process = harness.start_worker(rig or ctx.rig, uid, args)
        self.lines = []
        self.result = None
        self.wait_line(lambda l: "ready" in l, 15)

    def _read(self, timeout):
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.process.stdout.readline()
        if not line:
            return False
        data = json.loads(line)
        self.lines.append(data)
        if "outcome" in data:
            self.result = data
        return data

    def wait_line(self, predicate, timeout):
        end = time.monotonic() + timeout
        for line in self.lines:
            if predicate(line):
                return line
        while time.monotonic() < end:
            line = self._read(max(0.0, end - time.monotonic()))
            if line is False:
                return None
            if line and predicate(line):
                return line
        return None

    def wait_status(self, status, timeout=10):
        return self.wait_line(lambda l: "signal" in l and status in l["signal"][1], timeout)

    def outcome(self, timeout=30):
        line = self.wait_line(lambda l: "outcome" in l, timeout)
        if line is None:
            self.kill()
        return line["outcome"] if line else "no answer in %g s" % timeout

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()

    def signals(self):
        return [l["signal"] for l in self.lines if "signal" in l]


def enroll_remote(ctx, svc, uid, finger, scan_id):
    call = Remote(ctx, uid, "Enroll", "s", [finger])
    for _ in range(12):
        if call.wait_line(lambda l: "outcome" in l, 0.01):
            break
        asked = len([s for s in call.signals() if s[0] == "EnrollStatus" and s[1][0] in
                     ("enroll-place-finger", "enroll-stage-passed") and s[1][1] < s[1][2]])
        scanned = getattr(call, "scanned", 0)
        if asked > scanned:
            svc.vfp("SCAN " + scan_id)
            call.scanned = scanned + 1
        else:
            call.wait_line(lambda l: "signal" in l or "outcome" in l, 5)
    return call.outcome()


def evaluate(client, svc, request_id, scan=FINGER, timeout=15):
    """One EvaluatePolicy(1) with a SCAN once the reader asks for a finger."""
    pending = client.start("EvaluatePolicy", "usa{sv}", [1, "Reliability", {"request-id": GLib.Variant("s", request_id)}])
    if not client.wait(lambda: "place-finger" in client.statuses(request_id) or pending.outcome is not None, timeout):
        return "no place-finger in %g s" % timeout
    if pending.outcome is None and scan:
        svc.vfp("SCAN " + scan)
    client.wait(lambda: pending.outcome is not None, timeout)
    return pending.outcome or "no answer"


def print_files(state, uid=0):
    found = []
    top = os.path.join(state, "prints", str(uid))
    for directory, _, files in os.walk(top):
        found += [os.path.join(directory, f) for f in files]
    return found


def lockout_count(state, uid=0):
    try:
        return int(open(os.path.join(state, "lockout", str(uid))).read().strip() or "0")
    except FileNotFoundError:
        return 0


def ms(seconds):
    return None if seconds is None else round(seconds * 1000, 1)


def owner_enrolled_service(ctx, extra=()):
    svc = ctx.service(extra=extra)
    client = ctx.client()
    outcome = enroll_root(svc, client, "right-index-finger", FINGER)
    if outcome != "reply":
        raise RuntimeError("setup: enrolling root's finger: %s\n%s" % (outcome, svc.log()[-2000:]))
    return svc, client


# ---------------------------------------------------------------- rows

def malformed(ctx):
    """Every generated call, as root and as nobody, polkit yes and no."""
    row = Row("malformed")
    generated = len(contract.generate(harness.XML, ctx.seed))
    per_batch = 100 if ctx.short else generated
    svc = ctx.service(extra=["--scan-timeout", "1"])
    ctx.rig.polkit_all("yes")
    # Warm-up: every generated call once, so that what the allocator keeps
    # after the first 1 MiB calls is in "before" and only growth is counted.
    harness.worker(ctx.rig, 0, ["malformed", harness.XML, ctx.seed, 0, 100 if ctx.short else generated])
    before = svc.stats()
    sent = answered = by_service = 0
    bad = []
    outcomes = {}
    alive = True
    for batch, (uid, answer) in enumerate([(0, "yes"), (0, "no"), (NOBODY, "yes"), (NOBODY, "no")]):
        ctx.rig.polkit_all(answer)
        start = (batch * 457) if ctx.short else 0
        result = harness.worker(ctx.rig, uid, ["malformed", harness.XML, ctx.seed, start, per_batch])
        sent += result["sent"]
        answered += sum(n for o, n in result["outcomes"].items() if o != "no-reply-sent" and bus.is_named(o))
        by_service += result["by_service"]
        bad += [[uid, answer] + b for b in result["bad"]]
        for o, n in result["outcomes"].items():
            outcomes[o] = outcomes.get(o, 0) + n
        alive = svc.alive() and alive
        row.check("service alive after batch uid %d polkit %s" % (uid, answer), svc.alive(), svc.alive(), True)
    after = svc.stats()
    no_reply = outcomes.get("no-reply-sent", 0)
    row.figures = {"generated": generated, "sent": sent, "no_reply_sent": no_reply, "answered": answered,
                   "answered_by_service": by_service, "outcomes": outcomes, "bad": bad[:20], "before": before,
                   "after": after}
    row.check("calls sent (generated from the XML)", sent >= (400 if ctx.short else 5000), sent,
              ">= %d" % (400 if ctx.short else 5000))
    row.check("answered with a named error or a reply", answered == sent - no_reply, answered, sent - no_reply)
    row.check("timeouts, NoReply or unnamed errors", not bad, len(bad), 0)
    row.check("fds before/after", after["fds"] <= before["fds"], "%d/%d" % (before["fds"], after["fds"]), "no growth")
    row.check("RSS growth (kB)", after["rss_kb"] - before["rss_kb"] <= 4096, after["rss_kb"] - before["rss_kb"],
              "<= 4096")
    ctx.rig.polkit_all("yes")
    return row


def concurrency(ctx):
    """64 callers (48 root, 16 nobody: the per-uid limit) evaluating at once."""
    row = Row("concurrency")
    svc, client = owner_enrolled_service(ctx)
    ctx.rig.polkit_all("yes")
    got = enroll_remote(ctx, svc, NOBODY, "left-thumb", FINGER)
    if got != "reply":
        raise RuntimeError("setup: enrolling nobody's finger: %s" % got)
    n_root, n_nobody = (12, 4) if ctx.short else (48, 16)
    workers = [(0, harness.start_worker(ctx.rig, 0, ["concurrent", n_root, "EvaluatePolicy", "usa{sv}",
                                                     json.dumps([1, "Concurrency", {"request-id": "c%d"}])])),
               (NOBODY, harness.start_worker(ctx.rig, NOBODY, ["concurrent", n_nobody, "EvaluatePolicy", "usa{sv}",
                                                               json.dumps([1, "Concurrency", {"request-id": "c%d"}])]))]
    for _, w in workers:
        w.stdout.readline()   # {"ready": n}: every call sent
    # polkitd runs the rig's rule (a spawned shell) for each of nobody's
    # calls, one after another: let every call reach the reader's queue
    # before the first scan, so that the order of answers is the service's.
    time.sleep(1.5)
    scans = 0
    started = time.monotonic()
    first_scan = time.time()
    while any(w.poll() is None for _, w in workers) and scans < 3 * (n_root + n_nobody):
        svc.vfp("SCAN " + FINGER)
        scans += 1
        time.sleep(0.01)
    records = []
    for uid, w in workers:
        out, err = w.communicate(timeout=120)
        lines = [l for l in out.splitlines() if '"records"' in l]
        if not lines:
            raise RuntimeError("caller process of uid %d: %s" % (uid, err[-500:]))
        records += [dict(r, uid=uid) for r in json.loads(lines[-1])["records"]]
    wall = time.monotonic() - started
    ok = [r for r in records if r["outcome"] == "reply"]
    latencies = [r["answered"] - max(r["sent"], first_scan) for r in records if r["answered"]]
    order = sorted(records, key=lambda r: r["answered"] or 1e18)
    gaps = [b["answered"] - a["answered"] for a, b in zip(order, order[1:]) if a["answered"] and b["answered"]]
    # fairness: while nobody still waits, how many root answers in a row at most
    run = longest = 0
    nobody_left = n_nobody
    if len(records) != n_root + n_nobody:
        raise RuntimeError("a caller process answered for %d of %d calls" % (len(records), n_root + n_nobody))
    for r in order:
        if r["uid"] == NOBODY:
            nobody_left -= 1
            run = 0
        elif nobody_left > 0:
            run += 1
            longest = max(longest, run)
    p99 = harness.percentile(latencies, 99)
    row.figures = {"callers": len(records), "ok": len(ok), "scans_sent": scans, "wall_s": round(wall, 2),
                   "p50_ms": ms(harness.percentile(latencies, 50)), "p99_ms": ms(p99),
                   "handover_p99_ms": ms(harness.percentile(gaps, 99)), "root_turns_in_a_row_max": longest,
                   "outcomes": sorted(set(r["outcome"] for r in records))}
    row.check("callers answered with success", len(ok) == n_root + n_nobody, len(ok), n_root + n_nobody)
    row.check("most root turns in a row while nobody waited", longest <= 2, longest, "<= 2 (round-robin)")
    row.check("p99 from the first scan to the answer (ms), %d scans in turn" % (n_root + n_nobody),
              p99 is not None and p99 < 5, ms(p99), "< 5000")
    row.check("p99 hand-over between callers (ms)", gaps and harness.percentile(gaps, 99) < 0.5,
              ms(harness.percentile(gaps, 99)), "< 500")
    row.check("service alive", svc.alive(), svc.alive(), True)
    return row


def vanishing(ctx):
    """Callers killed at random moments, some inside the polkit check."""
    row = Row("vanishing")
    svc, client = owner_enrolled_service(ctx)
    ctx.rig.polkit_all("yes")
    got = enroll_remote(ctx, svc, NOBODY, "left-thumb", FINGER)
    if got != "reply":
        raise RuntimeError("setup: enrolling nobody's finger: %s" % got)
    before = svc.stats()
    runs = 10 if ctx.short else 200
    waits = []
    held_kills = 0
    alive_at_kill = 0
    slow = []
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=ctx.rig.address)
    for k in range(runs):
        uid = 0 if k % 2 == 0 else NOBODY
        kind = ctx.rng.choice(["evaluate", "enroll"])
        hold = uid == NOBODY and k % 4 == 1
        action = "org.example.LocalAuth.evaluate" if kind == "evaluate" else "org.example.LocalAuth.enroll"
        if hold:
            ctx.rig.polkit(action, "hold")
        method = (["org.example.LocalAuth.EvaluatePolicy", "1", "Vanishing", "{}"] if kind == "evaluate"
                  else ["org.example.LocalAuth.Enroll", "left-little-finger"])
        victim = subprocess.Popen(harness.drop(uid) + ["/usr/bin/gdbus", "call", "--system", "--timeout", "60",
                                                       "--dest", contract.SERVICE, "--object-path", contract.PATH,
                                                       "--method"] + method,
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if hold:
            deadline = time.monotonic() + 5
            while not ctx.rig.held(action) and time.monotonic() < deadline:
                time.sleep(0.002)
            held_kills += ctx.rig.held(action)
            time.sleep(ctx.rng.uniform(0, 0.1))
        else:
            time.sleep(ctx.rng.uniform(0, 0.25))
        alive_at_kill += victim.poll() is None
        victim.kill()
        victim.wait()
        killed = time.monotonic()
        if hold:
            # The rig's hold blocks all of polkitd (its rules run one at a
            # time), root's checks too: let it go at the kill. A check the
            # service failed to drop would now start a ghost for the victim.
            ctx.rig.polkit(action, "release")
        rid = "probe-%d" % k
        client.signals.clear()
        pending = client.start("EvaluatePolicy", "usa{sv}", [1, "Probe", {"request-id": GLib.Variant("s", rid)}])
        client.wait(lambda: "place-finger" in client.statuses(rid) or pending.outcome is not None, 10)
        served = [t for (t, m, v) in client.signals if m == "EvaluationStatus" and v == (rid, "place-finger")]
        wait = served[0] - killed if served else None
        waits.append(wait if wait is not None else 99.0)
        if wait is None or wait >= 1.0:
            slow.append({"run": k, "uid": uid, "kind": kind, "held": hold, "wait_s": wait, "outcome": pending.outcome})
        if pending.outcome is None:
            svc.vfp("SCAN " + FINGER)
        client.wait(lambda: pending.outcome is not None, 10)
    ghosts = [f for uid in (0, NOBODY) for f in print_files(svc.state, uid) if "left-little-finger" in f]
    after = svc.stats()
    worst = max(waits) if waits else None
    row.figures = {"kills": runs, "kills_inside_polkit_check": held_kills, "worst_ms": ms(worst),
                   "p50_ms": ms(harness.percentile(waits, 50)), "slow": slow[:10], "before": before, "after": after}
    row.check("callers killed while their call was pending (half root, half nobody)", alive_at_kill == runs,
              alive_at_kill, runs)
    row.check("kills inside the polkit check", held_kills >= runs // 4, held_kills, ">= %d" % (runs // 4))
    row.check("worst time until the reader serves the next caller (ms)", worst is not None and worst < 1.0,
              ms(worst), "< 1000 every time")
    row.check("prints stored for departed callers", not ghosts, len(ghosts), 0)
    row.check("fds before/after", after["fds"] <= before["fds"], "%d/%d" % (before["fds"], after["fds"]), "no growth")
    row.check("service alive", svc.alive(), svc.alive(), True)
    return row


def faults(ctx):
    row = Row("faults")
    ctx.rig.polkit_all("yes")
    svc, client = owner_enrolled_service(ctx)
    enroll_service_state = svc.state

    # polkitd killed in the middle of a check, then between calls
    ctx.rig.polkit("org.example.LocalAuth.enroll", "hold")
    call = Remote(ctx, NOBODY, "DeleteEnrolledFinger", "s", ["left-little-finger"])
    deadline = time.monotonic() + 5
    while not ctx.rig.held("org.example.LocalAuth.enroll") and time.monotonic() < deadline:
        time.sleep(0.002)
    held = ctx.rig.held("org.example.LocalAuth.enroll")
    ctx.rig.kill_polkitd()
    killed = time.monotonic()
    outcome = call.outcome(30)
    answered_in = time.monotonic() - killed
    ctx.rig.polkit("org.example.LocalAuth.enroll", "release")
    row.check("polkitd killed mid-check: answered PermissionDenied", held and outcome.endswith("PermissionDenied"),
              "%s in %d ms" % (outcome.rsplit(".", 1)[-1], answered_in * 1000), "PermissionDenied")
    as_root = client.call("DeleteEnrolledFinger", "s", ["left-little-finger"])[0]
    as_nobody = Remote(ctx, NOBODY, "DeleteEnrolledFinger", "s", ["left-little-finger"]).outcome()
    row.check("polkitd down between calls: fails closed (root, nobody)",
              as_root.endswith("PermissionDenied") and as_nobody.endswith("PermissionDenied"),
              "%s, %s" % (as_root.rsplit(".", 1)[-1], as_nobody.rsplit(".", 1)[-1]), "PermissionDenied both")
    ctx.rig.start_polkitd()
    again = Remote(ctx, NOBODY, "DeleteEnrolledFinger", "s", ["left-little-finger"]).outcome()
    row.check("polkitd restarted: works again", again.endswith("NotEnrolled"), again.rsplit(".", 1)[-1], "NotEnrolled")
    row.check("service alive through polkitd faults", svc.alive(), svc.alive(), True)

    # the reader failing in the middle of a scan
    for command, expect_success in [("RETRY 0", True), ("RETRY 1", True), ("SLEEP 400", True), ("ERROR 0", False),
                                    ("ERROR 5", False)]:
        rid = "fault-%s" % command.replace(" ", "-")
        client.signals.clear()
        pending = client.start("EvaluatePolicy", "usa{sv}", [1, "Fault", {"request-id": GLib.Variant("s", rid)}])
        client.wait(lambda: "place-finger" in client.statuses(rid), 10)
        svc.vfp(command)
        if expect_success:
            svc.vfp("SCAN " + FINGER)
        client.wait(lambda: pending.outcome is not None, 3 if not expect_success else 10)
        if pending.outcome is None:       # the reader recovered by itself and waits again
            svc.vfp("SCAN " + FINGER)
            client.wait(lambda: pending.outcome is not None, 10)
        next_one = evaluate(client, svc, rid + "-next")
        good = (pending.outcome == "reply" if expect_success else bus.is_named(pending.outcome or "none"))
        row.check("%s mid-scan: answered; next evaluation works" % command, good and next_one == "reply",
                  "%s; next %s" % ((pending.outcome or "no answer").rsplit(".", 1)[-1], next_one.rsplit(".", 1)[-1]),
                  "reply" if expect_success else "named error")
    # ... and in the middle of an enrollment
    for command in ["RETRY 0", "SLEEP 400", "ERROR 0"]:
        client.signals.clear()
        pending = client.start("Enroll", "s", ["left-ring-finger"])
        client.wait(lambda: any(v[0] == "enroll-place-finger" for (_, m, v) in client.signals if m == "EnrollStatus"), 10)
        svc.vfp("SCAN e")
        client.wait(lambda: any(v[0] == "enroll-stage-passed" for (_, m, v) in client.signals if m == "EnrollStatus"), 10)
        svc.vfp(command)
        for _ in range(8):
            if pending.outcome is not None:
                break
            client.pump(0.2)
            if pending.outcome is None:
                svc.vfp("SCAN e")
        client.wait(lambda: pending.outcome is not None, 10)
        stored = [f for f in print_files(svc.state) if f.endswith("left-ring-finger")]
        consistent = (pending.outcome == "reply") == bool(stored)
        row.check("%s mid-enrollment: answered, stored only on success" % command,
                  bus.is_named(pending.outcome or "none") and consistent,
                  "%s, %d stored" % ((pending.outcome or "no answer").rsplit(".", 1)[-1], len(stored)), "consistent")
        if stored:
            client.call("DeleteEnrolledFinger", "s", ["left-ring-finger"])
    # unplugged mid-scan (the virtual reader is gone for good: last)
    client.signals.clear()
    pending = client.start("EvaluatePolicy", "usa{sv}", [1, "Unplug", {"request-id": GLib.Variant("s", "unplug")}])
    client.wait(lambda: "place-finger" in client.statuses("unplug"), 10)
    svc.vfp("UNPLUG")
    client.wait(lambda: pending.outcome is not None, 10)
    kind = client.call("CanEvaluatePolicy", "u", [1])[0]
    row.check("UNPLUG mid-scan: answered; then no reader", bus.is_named(pending.outcome or "none") and
              kind.endswith("BiometryNotAvailable") and svc.alive(),
              "%s; then %s" % ((pending.outcome or "no answer").rsplit(".", 1)[-1], kind.rsplit(".", 1)[-1]),
              "SystemCancel; BiometryNotAvailable")
    svc.stop()
    svc2 = ctx.service(state=enroll_service_state)
    client2 = ctx.client()
    client2.signals.clear()
    pending = client2.start("Enroll", "s", ["left-ring-finger"])
    client2.wait(lambda: any(v[0] == "enroll-place-finger" for (_, m, v) in client2.signals if m == "EnrollStatus"), 10)
    svc2.vfp("SCAN e")
    svc2.vfp("UNPLUG")
    client2.wait(lambda: pending.outcome is not None, 10)
    stored = [f for f in print_files(svc2.state) if f.endswith("left-ring-finger")]
    row.check("UNPLUG mid-enrollment: answered, nothing stored",
              bus.is_named(pending.outcome or "none") and pending.outcome != "reply" and not stored and svc2.alive(),
              "%s, %d stored" % ((pending.outcome or "no answer").rsplit(".", 1)[-1], len(stored)), "error, 0 stored")
    svc2.stop()

    # SIGTERM in every phase
    for phase in ["queued", "polkit check", "scanning", "enrolling"]:
        svc = ctx.service(state=enroll_service_state)
        a, b = ctx.client(), ctx.client()
        calls = []
        remote = None
        if phase in ("queued", "scanning"):
            calls.append(a.start("EvaluatePolicy", "usa{sv}", [1, "T", {"request-id": GLib.Variant("s", "t1")}]))
            a.wait(lambda: "place-finger" in a.statuses("t1"), 10)
            if phase == "queued":
                calls.append(b.start("EvaluatePolicy", "usa{sv}", [1, "T", {"request-id": GLib.Variant("s", "t2")}]))
                b.pump(0.3)
        elif phase == "polkit check":
            ctx.rig.polkit("org.example.LocalAuth.evaluate", "hold")
            remote = Remote(ctx, NOBODY, "EvaluatePolicy", "usa{sv}", [1, "T", {}])
            deadline = time.monotonic() + 5
            while not ctx.rig.held("org.example.LocalAuth.evaluate") and time.monotonic() < deadline:
                time.sleep(0.002)
        else:
            calls.append(a.start("Enroll", "s", ["left-ring-finger"]))
            a.wait(lambda: any(v[0] == "enroll-place-finger" for (_, m, v) in a.signals if m == "EnrollStatus"), 10)
            svc.vfp("SCAN e")
            a.wait(lambda: any(v[0] == "enroll-stage-passed" for (_, m, v) in a.signals if m == "EnrollStatus"), 10)
        status, seconds = svc.terminate()
        for c in (a, b):
            c.wait(lambda: all(p.outcome is not None for p in calls), 5)
        outcomes = [p.outcome or "no answer" for p in calls]
        if remote:
            outcomes.append(remote.outcome(10))
            ctx.rig.polkit("org.example.LocalAuth.evaluate", "release")
        stored = [f for f in print_files(enroll_service_state) if f.endswith("left-ring-finger")]
        row.check("SIGTERM %s: exit 0 at once, every caller answered" % phase,
                  status == 0 and seconds < 2 and all(o.endswith("SystemCancel") for o in outcomes) and not stored,
                  "exit %s in %d ms; %s" % (status, seconds * 1000, ", ".join(o.rsplit(".", 1)[-1] for o in outcomes)),
                  "exit 0 < 2000 ms; SystemCancel")
        a.close()
        b.close()

    # the bus gone: a clean exit; bus activation brings the service back with its state
    bus_gone(ctx, row)
    return row


def bus_gone(ctx, row):
    directory = os.path.join(ctx.base, "bus-rig")
    rig = harness.Rig(directory)
    try:
        rig.polkit_all("yes")
        svc = ctx.service(rig=rig)
        client = bus.Client(rig.address)
        if enroll_root(svc, client, "right-index-finger", FINGER) != "reply":
            raise RuntimeError("bus row setup: enroll failed")
        client.close()
        dbus_pid = int(open(directory + "/dbus.pid").read())
        os.kill(dbus_pid, signal.SIGKILL)
        harness.wait_gone(dbus_pid)
        gone = time.monotonic()
        try:
            status = svc.child.wait(10)
        except subprocess.TimeoutExpired:
            status = None
        exit_ms = (time.monotonic() - gone) * 1000
        row.check("bus killed: service exits cleanly", status == 0 and exit_ms < 2000,
                  "exit %s in %d ms" % (status, exit_ms), "exit 0 < 2000 ms")
        # the same bus again, now with activation of this localauthd and its state
        services = os.path.join(directory, "services")
        os.makedirs(services, exist_ok=True)
        with open(os.path.join(services, "org.example.LocalAuth.service"), "w") as f:
            f.write("[D-BUS Service]\nName=org.example.LocalAuth\nExec=%s --state-dir %s --idle-timeout 0 "
                    "--fprintd-store %s\nUser=root\n" % (ctx.localauthd, svc.state, os.path.join(directory, "empty")))
        sock = directory + "/system_bus_socket"
        conf = subprocess.run([harness.RIG, "bus-config", sock, os.path.join(harness.ROOT, "dbus",
                                                                             "org.example.LocalAuth.conf"), services],
                              capture_output=True, text=True, check=True).stdout
        open(directory + "/bus.conf", "w").write(conf)
        if os.path.exists(sock):
            os.unlink(sock)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=rig.address, FP_DRIVERS_WHITELIST="virtual_device",
                   FP_VIRTUAL_DEVICE=svc.sensor)
        log = open(directory + "/dbus.log", "a")
        daemon = subprocess.Popen(["dbus-daemon", "--config-file=%s/bus.conf" % directory, "--nofork"], env=env,
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        open(directory + "/dbus.pid", "w").write("%d\n" % daemon.pid)
        deadline = time.monotonic() + 10
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.01)
        rig.start_polkitd()
        client = bus.Client(rig.address)
        first = client.call("CanEvaluatePolicy", "u", [1], timeout=30)
        reply = client.connection.call_sync("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                            "GetConnectionUnixProcessID",
                                            GLib.Variant("(s)", ("org.example.LocalAuth",)), None, 0, 5000, None)
        activated = reply.unpack()[0]
        svc.pid = activated
        matched = evaluate(client, svc, "after-activation")
        row.check("bus back: activation restarts the service with its prints",
                  first == ("reply", (True,)) and matched == "reply",
                  "CanEvaluatePolicy %s, evaluation %s" % (first[1] if first[0] == "reply" else first[0],
                                                             matched.rsplit(".", 1)[-1]), "(True,), reply")
        client.close()
        os.kill(activated, signal.SIGTERM)
        harness.wait_gone(activated)
    finally:
        rig.stop()


def storage(ctx):
    """kill -9 during enrollments and lockout updates; some inside the write."""
    row = Row("storage")
    ctx.rig.polkit_all("yes")
    svc, client = owner_enrolled_service(ctx)
    state = svc.state
    kept = [f for f in print_files(state) if f.endswith("right-index-finger")][0]
    kept_bytes = open(kept, "rb").read()
    runs = 4 if ctx.short else 30
    in_write = 2 if ctx.short else 10
    failures = []
    strace_errors = []
    acknowledged_total = 0
    alive_kills = 0
    landed_inside = 0
    highest = 0
    for k in range(runs + in_write):
        kind = "enroll" if k % 2 == 0 else "lockout"
        inside = k >= runs
        if svc is None:
            svc = ctx.service(state=state)
            client = ctx.client()
        tracer = None
        if inside:
            tracer = subprocess.Popen(["strace", "-f", "-qq", "-p", str(svc.pid), "-o", "/dev/null",
                                       "-e", "trace=fsync,rename,renameat,renameat2",
                                       "-e", "inject=fsync,rename,renameat,renameat2:delay_enter=300000"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(0.3)
            if tracer.poll() is not None:   # no ptrace here (a container without CAP_SYS_PTRACE, say)
                strace_errors.append(tracer.stderr.read().strip()[:200])
        acknowledged = 0
        client.signals.clear()
        directory = (os.path.join(state, "prints", "0", "virtual_device", "0") if kind == "enroll"
                     else os.path.join(state, "lockout"))
        aim = {"landed": False}
        if inside:
            # A thread watches for the write's temporary file (it lives
            # ~600 ms under strace's delays) and kills the service inside it.
            def aim_at_write(victim=svc, delay=ctx.rng.uniform(0.0, 0.5)):
                end = time.monotonic() + 8
                while time.monotonic() < end and victim.child.poll() is None:
                    if os.path.isdir(directory) and any(".tmp-" in f for f in os.listdir(directory)):
                        time.sleep(delay)
                        aim["landed"] = any(".tmp-" in f for f in os.listdir(directory))
                        aim["killed"] = victim.child.poll() is None
                        victim.kill9()
                        return
                    time.sleep(0.001)
            aimer = threading.Thread(target=aim_at_write)
            aimer.start()
        delay = ctx.rng.uniform(0.2, 1.5) if kind == "enroll" else ctx.rng.uniform(0.5, 2.0)
        # a lockout run's random moment counts from its first scan, so that it updates the count
        deadline = time.monotonic() + (9 if inside else delay if kind == "enroll" else 5)
        anchored = inside or kind == "enroll"
        pending = None
        scans = 0
        reset_at = 0
        while time.monotonic() < deadline and svc.child.poll() is None:
            if pending is None or pending.outcome is not None:
                if kind == "enroll":
                    pending = client.start("EnrollWithOptions", "sa{sv}",
                                           ["right-thumb", {"replace": GLib.Variant("b", True)}])
                else:
                    if lockout_count(state) >= 5:
                        client.call("ResetLockout", "s", [""], timeout=5)
                        reset_at = sum(1 for (_, m, v) in client.signals
                                       if m == "EvaluationStatus" and v[1] == "no-match")
                    pending = client.start("EvaluatePolicy", "usa{sv}",
                                           [1, "L", {"request-id": GLib.Variant("s", "l%d" % scans)}])
            client.pump(0.01)
            if not anchored and "place-finger" in [v[1] for (_, m, v) in client.signals if m == "EvaluationStatus"]:
                anchored = True
                deadline = time.monotonic() + delay
            asked = [v for (_, m, v) in client.signals if
                     (m == "EnrollStatus" and v[0] in ("enroll-place-finger", "enroll-stage-passed") and v[1] < v[2]) or
                     (m == "EvaluationStatus" and v[1] in ("place-finger", "no-match", "retry-scan"))]
            # no-matches the service told us of since the last reset: each was on disk before
            acknowledged = sum(1 for (_, m, v) in client.signals
                               if m == "EvaluationStatus" and v[1] == "no-match") - reset_at
            if len(asked) > scans:
                scans += 1
                try:
                    # The same id as the kept print: on a verify-only reader only one
                    # print is tried (R2), and either must then match.
                    svc.vfp("SCAN %s" % (FINGER if kind == "enroll" else "wrong"), timeout=1)
                except RuntimeError:
                    pass
        if inside:
            aimer.join()
        landed = aim["landed"]
        alive_kills += svc.child.poll() is None or aim.get("killed", False)
        svc.kill9()
        landed_inside += landed
        if tracer:
            try:
                tracer.wait(5)
            except subprocess.TimeoutExpired:
                tracer.kill()
                tracer.wait()
        before_restart = lockout_count(state)
        client.close()
        svc = ctx.service(state=state)
        client = ctx.client()
        leftovers = [f for f in print_files(state) if ".tmp-" in f]
        outcome, listed = client.call("ListEnrolledPrints", "a{sv}", [{}])
        ours = [p for p in (listed[0] if outcome == "reply" else []) if p.get("source") == "localauth"]
        files = [f for f in print_files(state) if ".tmp-" not in f]
        count = lockout_count(state)
        highest = max(highest, count)
        loads = outcome == "reply" and len(ours) == len(files) and not leftovers
        has_old = (any(p.get("finger") == "right-index-finger" for p in ours) and
                   os.path.exists(kept) and open(kept, "rb").read() == kept_bytes)
        if count >= 5:
            client.call("ResetLockout", "s", [""])
        matched = evaluate(client, svc, "keep-%d" % k)
        problems = []
        if not loads:
            problems.append("store: %s listed %d files %d leftovers %d" % (outcome, len(ours), len(files), len(leftovers)))
        if not has_old or matched != "reply":
            problems.append("old print: listed and unchanged %s, evaluation %s" % (has_old, matched))
        if count < min(acknowledged, 5) or count != before_restart:
            problems.append("lockout %d on disk after restart, %d acknowledged" % (count, acknowledged))
        acknowledged_total += max(0, acknowledged)
        if problems:
            failures.append({"run": k, "kind": kind, "inside": inside, "landed": landed, "problems": problems})
    # A second finger must not hide the first (found by this row: R2).
    shadow = enroll_root(svc, client, "left-index-finger", "rel-second")
    first_still = evaluate(client, svc, "after-second-finger", timeout=5)
    row.check("right index still matches once a left index is enrolled", shadow == "reply" and first_still == "reply",
              "enroll %s, evaluation %s" % (shadow.rsplit(".", 1)[-1], first_still.rsplit(".", 1)[-1]), "reply",
              None)
    row.figures = {"kills": runs + in_write, "random_kills": runs, "acknowledged_no_matches": acknowledged_total, "aimed_at_write": in_write,
                   "landed_inside_write": landed_inside, "highest_lockout": highest, "failures": failures[:10]}
    row.check("kill -9 of a running service (enrollment, lockout runs)", alive_kills >= (3 if ctx.short else 30),
              alive_kills, ">= %d" % (3 if ctx.short else 30))
    row.check("no-matches written and acknowledged before a kill (lockout updates exercised)",
              acknowledged_total >= (1 if ctx.short else 10), acknowledged_total, ">= %d" % (1 if ctx.short else 10))
    row.check("kills that landed inside a write (strace delays fsync, rename)", landed_inside >= in_write // 2,
              "%d; strace: %s" % (landed_inside, strace_errors[0]) if strace_errors else landed_inside,
              ">= %d" % (in_write // 2))
    row.check("runs where the store did not load, an old print did not match or a lockout count went down",
              not failures, len(failures), 0)
    return row


def soak(ctx):
    row = Row("soak")
    ctx.rig.polkit_all("yes")
    svc, client = owner_enrolled_service(ctx)
    preflights = 300 if ctx.short else 10000
    evaluations = 10 if ctx.short else 300
    call = contract.Call("preflight", contract.PATH, contract.SERVICE, "CanEvaluatePolicy", "u", [1], 0, False)
    bus.run_calls(ctx.rig.address, [call] * 200)
    for k in range(3):
        evaluate(client, svc, "warm-%d" % k)
    before = svc.stats()
    started = time.monotonic()
    results = bus.run_calls(ctx.rig.address, [call] * preflights, window=8)
    pre_s = time.monotonic() - started
    pre_ok = sum(1 for r in results if r[1] == "reply")
    started = time.monotonic()
    ok = sum(1 for k in range(evaluations) if evaluate(client, svc, "soak-%d" % k) == "reply")
    eval_s = time.monotonic() - started
    after = svc.stats()
    huge = "x" * (1 << 20)
    repeat = 3 if ctx.short else 25
    plain = [contract.Call("1 MiB %s" % m, contract.PATH, contract.SERVICE, m, s, v, 0, False) for m, s, v in [
        ("EvaluatePolicy", "usa{sv}", [1, huge, {}]), ("Enroll", "s", [huge]), ("Cancel", "s", [huge])]] * repeat
    in_dict = [contract.Call("1 MiB in a{sv} %s" % m, contract.PATH, contract.SERVICE, m, s, v, 0, False)
               for m, s, v in [("ListEnrolledPrints", "a{sv}", [{"user": GLib.Variant("s", huge)}]),
                               ("EvaluatePolicy", "usa{sv}", [1, "r", {"request-id": GLib.Variant("s", huge)}]),
                               ("EvaluatePolicy", "usa{sv}", [1, "r", {"unknown": GLib.Variant("ay", bytes(1 << 20)),
                                                                     "interaction-not-allowed": GLib.Variant("b", True)}])]]
    in_dict = in_dict * repeat
    measured = {}
    for name, batch in [("plain", plain), ("in_dict", in_dict)]:
        hwm_before = svc.stats()["hwm_kb"]
        results = bus.run_calls(ctx.rig.address, batch, window=4)
        hwm_after = svc.stats()["hwm_kb"]
        measured[name] = {"calls": len(batch), "refused": sum(1 for r in results if r[1].endswith("LimitExceeded")),
                          "hwm_rise_kb": hwm_after - hwm_before,
                          "outcomes": sorted(set("%s: %s" % (r[0], r[1]) for r in results))}
    row.figures = {"preflights": preflights, "preflights_ok": pre_ok, "preflights_per_s": round(preflights / pre_s),
                   "evaluations": evaluations, "evaluations_ok": ok, "evaluations_per_s": round(evaluations / eval_s, 1),
                   "before": before, "after": after, "one_mib": measured}
    row.check("preflights answered true", pre_ok == preflights, pre_ok, preflights)
    row.check("evaluations succeeded", ok == evaluations, ok, evaluations)
    row.check("RSS growth (kB)", after["rss_kb"] - before["rss_kb"] <= 2048, after["rss_kb"] - before["rss_kb"],
              "<= 2048 (flat)")
    row.check("fds before/after", after["fds"] <= before["fds"], "%d/%d" % (before["fds"], after["fds"]), "no growth")
    for name, what in [("plain", "1 MiB string arguments"), ("in_dict", "1 MiB strings inside an a{sv}")]:
        m = measured[name]
        known = None
        row.check("%s refused LimitExceeded" % what, m["refused"] == m["calls"], m["refused"], m["calls"], known)
        row.check("%s: RSS high-water rise (kB)" % what, m["hwm_rise_kb"] <= 4096, m["hwm_rise_kb"], "<= 4096", known)
    row.check("service alive", svc.alive(), svc.alive(), True)
    return row


def cross_user(ctx):
    row = Row("cross-user")
    ctx.rig.polkit_all("yes")
    svc, client = owner_enrolled_service(ctx)
    if enroll_remote(ctx, svc, NOBODY, "left-thumb", NOBODY_FINGER) != "reply":
        raise RuntimeError("setup: enrolling nobody's finger failed")
    ctx.rig.polkit("org.example.LocalAuth.manage", "no")
    root_files = sorted(print_files(svc.state, 0))
    nobody_files = sorted(print_files(svc.state, NOBODY))

    def as_nobody(member, signature, values):
        return Remote(ctx, NOBODY, member, signature, values).outcome()

    denied = {
        "ListEnrolledPrints of root": as_nobody("ListEnrolledPrints", "a{sv}", [{"user": "root"}]),
        "DeleteEnrolledFingerWithOptions of root": as_nobody("DeleteEnrolledFingerWithOptions", "sa{sv}",
                                                             ["right-index-finger", {"user": "root"}]),
        "DeleteEnrolledFingersWithOptions of root": as_nobody("DeleteEnrolledFingersWithOptions", "a{sv}",
                                                              [{"user": "root"}]),
        "EnrollWithOptions for root": as_nobody("EnrollWithOptions", "sa{sv}", ["right-thumb", {"user": "root"}]),
        "ResetLockout of root": as_nobody("ResetLockout", "s", ["root"]),
    }
    for what, outcome in denied.items():
        row.check("nobody: %s" % what, outcome.endswith("PermissionDenied"), outcome.rsplit(".", 1)[-1],
                  "PermissionDenied")
    listing = Remote(ctx, NOBODY, "ListEnrolledFingers", "", [])
    listing.outcome()
    row.check("nobody: ListEnrolledFingers shows only its own", "left-thumb" in listing.result["value"] and
              "right-index-finger" not in listing.result["value"], listing.result["value"], "['left-thumb']")

    # root's evaluation: nobody cancels it, ends it, listens for its signals
    listener = Remote(ctx, NOBODY, "-", "", [], listen="4")
    client.signals.clear()
    pending = client.start("EvaluatePolicy", "usa{sv}", [1, "Root", {"request-id": GLib.Variant("s", "root-secret")}])
    client.wait(lambda: "place-finger" in client.statuses("root-secret"), 10)
    cancel = as_nobody("Cancel", "s", ["root-secret"])
    end = as_nobody("EndEvaluation", "ss", ["root-secret", "user-cancel"])
    client.pump(0.3)
    still = pending.outcome is None
    svc.vfp("SCAN wrong")
    client.wait(lambda: "no-match" in client.statuses("root-secret"), 10)
    client.pump(0.2)
    svc.vfp("SCAN " + FINGER)
    client.wait(lambda: pending.outcome is not None, 10)
    listener.outcome(10)
    seen = ([s for s in listener.signals() if s[0] in ("EvaluationStatus", "EnrollStatus")] +
            ((listener.result or {}).get("filtered") or []))
    row.check("nobody's Cancel and EndEvaluation of root's request id change nothing",
              still and pending.outcome == "reply" and not cancel.startswith("no answer"),
              "root still waiting %s, then %s" % (still, pending.outcome), "waiting, then reply")
    row.check("nobody observes none of root's EvaluationStatus signals (monitor, eavesdrop, match rules)",
              not seen and listener.result is not None and len(client.statuses("root-secret")) >= 2,
              "%d seen (root got %d; monitor %s)" % (len(seen), len(client.statuses("root-secret")),
                                                     (listener.result or {}).get("monitor")), 0)

    # the reverse: root's own calls never touch nobody's
    theirs = Remote(ctx, NOBODY, "EvaluatePolicy", "usa{sv}", [1, "Nobody", {"request-id": "nobody-secret"}])
    theirs.wait_status("place-finger", 10)
    client.signals.clear()
    client.call("Cancel", "s", ["nobody-secret"])
    client.call("EndEvaluation", "ss", ["nobody-secret", "user-cancel"])
    time.sleep(0.3)
    still = theirs.result is None and theirs.process.poll() is None
    svc.vfp("SCAN " + NOBODY_FINGER)
    outcome = theirs.outcome(10)
    client.pump(0.1)
    root_saw = [v for (_, m, v) in client.signals if m == "EvaluationStatus"]
    row.check("root's Cancel and EndEvaluation of nobody's request id change nothing",
              still and outcome == "reply", "nobody still waiting %s, then %s" % (still, outcome), "waiting, then reply")
    row.check("root's connection receives none of nobody's EvaluationStatus", not root_saw, len(root_saw), 0)
    fingers = client.call("ListEnrolledFingers")[1]
    row.check("root: ListEnrolledFingers shows only its own", fingers == (["right-index-finger"],), repr(fingers),
              "(['right-index-finger'],)")
    client.call("DeleteEnrolledFingers")
    row.check("root deleting all its prints leaves nobody's", sorted(print_files(svc.state, NOBODY)) == nobody_files
              and nobody_files and not print_files(svc.state, 0) and root_files,
              "%d of nobody's kept" % len(print_files(svc.state, NOBODY)), "%d kept" % len(nobody_files))
    ctx.rig.polkit_all("yes")
    return row


FPRINTD_ACTIONS = ["net.reactivated.fprint.device.verify", "net.reactivated.fprint.device.enroll",
                   "net.reactivated.fprint.device.setusername"]


def fprintd_malformed(ctx):
    """The malformed row's generator over fprintd's Manager and Device
    interfaces, on `localauthd --fprintd`: as root and as nobody, polkit yes
    and no, and with the device claimed by another connection."""
    row = Row("fprintd-malformed")
    svc = ctx.service(extra=["--fprintd", "--scan-timeout", "1"])
    deadline = time.monotonic() + 10
    while not ctx.rig.has_owner(contract.FPRINT):
        if time.monotonic() > deadline:
            raise RuntimeError("localauthd --fprintd does not own %s: %s" % (contract.FPRINT, svc.log()[-2000:]))
        time.sleep(0.02)

    def polkit(answer):
        ctx.rig.polkit_all(answer)
        for action in FPRINTD_ACTIONS:
            ctx.rig.polkit(action, answer)

    def alive():
        return svc.alive() and ctx.rig.has_owner(contract.FPRINT)

    xml_dir = os.path.dirname(harness.XML)
    try:
        polkit("yes")
        probe = harness.worker(ctx.rig, 0, ["fprintd-malformed", xml_dir, ctx.seed, 0, 0])
        at_start = svc.stats()
        generated, devices = probe["generated"], probe["devices"]
        if not devices:
            raise RuntimeError("GetDevices listed no device: %s" % svc.log()[-2000:])
        per_batch = 100 if ctx.short else generated
        # Warm-up, as in the malformed row: only growth after it counts.
        harness.worker(ctx.rig, 0, ["fprintd-malformed", xml_dir, ctx.seed, 0, per_batch])
        before = svc.stats()
        sent = answered = by_service = 0
        bad = []
        outcomes = {}
        by_member = {}
        batches = [(0, "yes", False), (0, "no", False), (NOBODY, "yes", False), (NOBODY, "no", False),
                   (0, "yes", True), (NOBODY, "yes", True)]
        for batch, (uid, answer, claimed) in enumerate(batches):
            polkit(answer)
            holder = None
            if claimed:   # root's other connection holds the first device through the batch
                holder = harness.start_worker(ctx.rig, 0, ["fprintd-claim", devices[0]])
                ready = select.select([holder.stdout], [], [], 15)[0] and "ready" in holder.stdout.readline()
                if not ready:
                    holder.kill()
                    raise RuntimeError("the holder could not claim %s: %s" % (devices[0], holder.stderr.read()[-500:]))
            start = (batch * 457) if ctx.short else 0
            try:
                result = harness.worker(ctx.rig, uid, ["fprintd-malformed", xml_dir, ctx.seed, start, per_batch])
            finally:
                if holder is not None:
                    held = holder.poll() is None
                    holder.kill()
                    holder.wait()
            sent += result["sent"]
            answered += sum(n for o, n in result["outcomes"].items() if o != "no-reply-sent" and bus.is_named(o))
            by_service += result["by_service"]
            bad += [[uid, answer, claimed] + b for b in result["bad"]]
            by_member["uid %d polkit %s%s" % (uid, answer, " claimed" if claimed else "")] = result["by_member"]
            for o, n in result["outcomes"].items():
                outcomes[o] = outcomes.get(o, 0) + n
            what = "uid %d polkit %s%s" % (uid, answer, ", claimed by another connection" if claimed else "")
            if claimed:
                row.check("the other connection's claim held through the batch (%s)" % what, held, held, True)
            row.check("service alive after batch %s" % what, alive(), alive(), True)
        after = svc.stats()
        # Nothing stuck: the device is free again (the holder left the bus),
        # root claims and releases it, and no print was stored.
        polkit("yes")
        client = ctx.client()
        claim = client.connection.call_sync(contract.FPRINT, devices[0], "net.reactivated.Fprint.Device", "Claim",
                                            GLib.Variant("(s)", ("",)), None, 0, 10000, None) is not None
        client.connection.call_sync(contract.FPRINT, devices[0], "net.reactivated.Fprint.Device", "Release",
                                    None, None, 0, 10000, None)
        client.close()
        store = os.path.join(os.path.dirname(svc.state.rstrip("/")), "fprintd-store")
        stored = [os.path.join(d, f) for d, _, files in os.walk(store) for f in files]
    finally:
        polkit("default")
    no_reply = outcomes.get("no-reply-sent", 0)
    row.figures = {"generated": generated, "devices": devices, "sent": sent, "no_reply_sent": no_reply,
                   "answered": answered, "answered_by_service": by_service, "outcomes": outcomes, "bad": bad[:20],
                   "device_outcomes": by_member, "at_start": at_start, "before": before, "after": after}
    row.check("calls sent (generated from fprintd's XML)", sent >= (400 if ctx.short else 3000), sent,
              ">= %d" % (400 if ctx.short else 3000))
    row.check("answered with a named error or a reply", answered == sent - no_reply, answered, sent - no_reply)
    row.check("timeouts, NoReply or unnamed errors", not bad, len(bad), 0)
    row.check("device claimable again afterwards, no print stored", claim and not stored,
              "claim %s, %d files" % (claim, len(stored)), "claim True, 0 files")
    row.check("fds before/after", after["fds"] <= before["fds"], "%d/%d" % (before["fds"], after["fds"]), "no growth")
    row.check("RSS growth (kB)", after["rss_kb"] - before["rss_kb"] <= 4096, after["rss_kb"] - before["rss_kb"],
              "<= 4096")
    # The peak, not only what is left: six batches of 1 MiB arguments cost
    # no more than the warm-up's did (the rise from the start, the warm-up
    # included, is shown beside it; the large-calls row bounds the peak).
    row.check("VmHWM rise after the warm-up (kB)", after["hwm_kb"] - before["hwm_kb"] <= 4096,
              "%d (from the start: %d)" % (after["hwm_kb"] - before["hwm_kb"], after["hwm_kb"] - at_start["hwm_kb"]),
              "<= 4096")
    return row


# Just under the system bus's largest message (Debian's dbus-daemon: 32 MiB,
# 33,554,432 bytes, the header included).
LARGEST_MESSAGE = 33_500_000
BUS_LIMITS = "org.freedesktop.DBus.Error.LimitsExceeded"
OUR_LIMIT = "org.example.LocalAuth.Error.LimitExceeded"
LARGE_KINDS = [  # worker.py's kind, what it sends, the answers that count as refused alone / among others
    ("fprintd-device-property", "Properties.Get of fprintd's Device, a 33.5 MB property name", [BUS_LIMITS],
     [BUS_LIMITS]),
    ("fprintd-manager-property", "Properties.Get of fprintd's Manager, a 33.5 MB property name", [BUS_LIMITS],
     [BUS_LIMITS]),
    ("fprintd-device-method", "fprintd's Device.DeleteEnrolledFingers, a 33.5 MB username", [BUS_LIMITS],
     [BUS_LIMITS]),
    ("localauth", "org.example.LocalAuth's EvaluatePolicy, a 33.5 MB reason", [OUR_LIMIT], [OUR_LIMIT, BUS_LIMITS]),
]


def short_name(outcome):
    return ".".join(outcome.split(".")[-3:]) if outcome.startswith(("org.", "net.")) else outcome


def large_calls(ctx):
    """Calls as large as the system bus lets through, sent by uid 65534 to
    `localauthd --fprintd` run as the unit runs it: its capabilities, and a
    memory cgroup at its MemoryMax, so that an OOM is a death."""
    row = Row("large-calls")
    limit = harness.unit_memory_max()
    if not limit:
        raise RuntimeError("no MemoryMax= in %s" % harness.UNIT)
    group = harness.MemoryGroup(limit)
    ctx.cleanups.append(group.remove)
    svc = ctx.service(extra=["--fprintd"], launcher=group.launcher + harness.unit_launcher())
    deadline = time.monotonic() + 10
    while not ctx.rig.has_owner(contract.FPRINT):
        if time.monotonic() > deadline:
            raise RuntimeError("localauthd --fprintd does not own %s: %s" % (contract.FPRINT, svc.log()[-2000:]))
        time.sleep(0.02)

    def alive():
        return svc.alive() and ctx.rig.has_owner(contract.FPRINT)

    def hwm():
        try:
            return svc.stats()["hwm_kb"]
        except (OSError, KeyError):   # gone, or a zombie (no VmHWM)
            return None

    client = ctx.client()
    devices = list(client.connection.call_sync(contract.FPRINT, contract.FPRINT_MANAGER,
                                               "net.reactivated.Fprint.Manager", "GetDevices", None,
                                               GLib.VariantType("(ao)"), 0, 10000, None).unpack()[0])
    if not devices:
        raise RuntimeError("GetDevices listed no device: %s" % svc.log()[-2000:])
    # The service as it serves: a call of nobody's first (no print: NotEnrolled).
    preflight = Remote(ctx, NOBODY, "CanEvaluatePolicy", "u", [1]).outcome()
    before = hwm()
    rss_before = svc.stats()["rss_kb"]
    bound_kb = (2 * LARGEST_MESSAGE + (8 << 20)) // 1024
    longest_text = 0
    singles = {}
    # One at a time: each alone is refused, and what one costs.
    for kind, what, alone, _ in LARGE_KINDS:
        result = harness.worker(ctx.rig, NOBODY, ["large", devices[0], LARGEST_MESSAGE, kind + ":1"], timeout=200)
        got = result["kinds"][kind]
        outcome = list(got["outcomes"])[0]
        longest_text = max(longest_text, got["longest_text_bytes"])
        singles[kind] = {"outcome": outcome, "by": got["by"], "text_bytes": got["longest_text_bytes"],
                         "seconds": result["records"][0]["seconds"], "hwm_kb_after": hwm()}
        row.check("%s, alone: refused" % what, outcome in alone, short_name(outcome),
                  " or ".join(short_name(a) for a in alone))
    after_singles = hwm()
    row.check("service alive after the single calls", alive(), alive(), True)
    row.check("VmHWM rise after the 4 single calls, one at a time (kB)",
              after_singles is not None and after_singles - before <= bound_kb,
              None if after_singles is None else after_singles - before,
              "<= %d (2 x %d B + 8 MiB)" % (bound_kb, LARGEST_MESSAGE))

    # Several at once on every object of both names: libdbus reads one,
    # holds at most 8 MiB more, and the bus refuses what our queue cannot take.
    per_kind = 1 if ctx.short else 2
    workers = [(kind, harness.start_worker(ctx.rig, NOBODY, ["large", devices[0], LARGEST_MESSAGE,
                                                             "%s:%d" % (kind, per_kind)]))
               for kind, _, _, _ in LARGE_KINDS]
    together = {}
    refused = by_bus = 0
    wrong = []
    for kind, w in workers:
        out, err = w.communicate(timeout=200)
        lines = [l for l in out.splitlines() if '"kinds"' in l]
        if not lines:
            raise RuntimeError("large calls of %s: %s" % (kind, err[-1000:]))
        got = json.loads(lines[-1])["kinds"][kind]
        together[kind] = got
        longest_text = max(longest_text, got["longest_text_bytes"])
        accepted = [a for k, _, _, a in LARGE_KINDS if k == kind][0]
        for outcome, n in got["outcomes"].items():
            if outcome in accepted:
                refused += n
            else:
                wrong.append("%s: %d %s" % (kind, n, outcome))
        by_bus += got["by"].get("bus", 0)
    after = hwm()
    try:
        rss_after = svc.stats()["rss_kb"]
    except (OSError, KeyError):
        rss_after = None
    total = per_kind * len(LARGE_KINDS)
    row.check("%d at once (%d on each of fprintd's Device and Manager and ours): refused LimitsExceeded"
              % (total, per_kind), refused == total and not wrong,
              "%d (%d answered by the bus)%s" % (refused, by_bus, "; " + ", ".join(wrong) if wrong else ""),
              total)
    row.check("longest error text sent back (bytes)", longest_text <= 1024, longest_text, "<= 1024")
    row.check("VmHWM rise over the row, the calls at once included (kB)",
              after is not None and after - before <= bound_kb, None if after is None else after - before,
              "<= %d" % bound_kb)
    # Refused calls leave nothing behind: a freed body kept in the heap (as
    # glibc's raised mmap threshold did) is also how a third copy arises.
    row.check("RSS left once every call was refused (kB)",
              rss_after is not None and rss_after - rss_before <= 4096,
              None if rss_after is None else rss_after - rss_before, "<= 4096")
    # Still serving both names.
    again = Remote(ctx, NOBODY, "CanEvaluatePolicy", "u", [1]).outcome() if svc.alive() else "dead"
    try:
        listed = client.connection.call_sync(contract.FPRINT, contract.FPRINT_MANAGER,
                                             "net.reactivated.Fprint.Manager", "GetDevices", None,
                                             GLib.VariantType("(ao)"), 0, 10000, None) is not None
    except GLib.Error:
        listed = False
    client.close()
    row.check("service alive and serving both names afterwards (nobody's preflight, GetDevices)",
              alive() and again == preflight and bus.is_named(again) and listed,
              "%s, %s" % (short_name(again), "reply" if listed else "no answer"),
              "%s (as before), reply" % short_name(preflight))
    kills, peak = group.oom_kills(), group.peak()
    row.check("OOM kills in the service's memory cgroup at the unit's MemoryMax=%d MiB" % (limit >> 20),
              kills == 0 and alive(), "%s (cgroup peak %.1f MiB)" % (kills, peak / 1048576.0), 0)
    row.figures = {"largest_message": LARGEST_MESSAGE, "memory_max": limit, "cgroup_peak_mib": round(peak / 1048576.0, 1),
                   "oom_kills": kills, "hwm_kb_before": before, "hwm_kb_after_singles": after_singles,
                   "hwm_kb_after": after, "hwm_rise_kb": None if after is None else after - before,
                   "rss_kb_before": rss_before, "rss_kb_after": rss_after,
                   "rss_left_kb": None if rss_after is None else rss_after - rss_before,
                   "bound_kb": bound_kb, "preflight_before": preflight, "singles": singles, "together": together,
                   "longest_text_bytes": longest_text}
    return row


ROWS = {"malformed": malformed, "fprintd-malformed": fprintd_malformed, "concurrency": concurrency, "vanishing": vanishing, "faults": faults,
        "storage": storage, "soak": soak, "cross-user": cross_user, "large-calls": large_calls}
