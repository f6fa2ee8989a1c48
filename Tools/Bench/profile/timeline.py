# Where one evaluation's wall time goes: reads `perf script` of syscall
# tracepoints recorded system-wide during evaluations.py (run.sh does both) and
# prints, per localauthd evaluation, the median time between the messages:
# the call reaching localauthd, its CheckAuthorization, polkitd's answer, the
# place-finger signal, the reply. Then fprintd's cycle, call by call.
#   timeline.py DIR   (DIR/pids: dbus fprintd localauthd polkitd; DIR/sys.txt)
import re, statistics, sys
D = sys.argv[1]
dbus, fpd, la, pk = map(int, open(D + "/pids").read().split())
ev = []
for line in open(D + "/sys.txt"):
    m = re.match(r"\s*(.+?)\s+(\d+)/(\d+)\s+([\d.]+):\s+syscalls:(\w+):\s*(.*)", line)
    if not m: continue
    comm, pid, tid, t, name, rest = m.groups()
    ret = None
    if name.startswith("sys_exit"):
        ret = int(rest.split()[0], 16)
        if ret >= 1 << 63: ret -= 1 << 64
    ev.append((float(t) * 1e6, comm, int(pid), int(tid), name, ret))
# the second python client (the measured run) is the last python pid
client = max(set(e[2] for e in ev if e[2] not in (la, pk, fpd, dbus) and e[1] in ("python3", "gdbus")), key=lambda p: [x[2] for x in ev].count(p))
def role(e):
    t, comm, pid, tid, name, ret = e
    if pid == client: return "client-" + ("main" if tid == pid else "gdbus")
    if pid == la: return "la-" + ("main" if tid == pid else comm)
    if pid == pk: return "pk"
    if pid == dbus: return "dbus"
    if pid == fpd: return "fprintd"
    return None
ev = [(e, role(e)) for e in ev if role(e)]
# cycles: client gdbus sendmsg followed (before the next client send) by a localauthd main recvmsg
starts = [i for i, (e, r) in enumerate(ev) if r == "client-gdbus" and e[4] == "sys_enter_sendmsg"]
rows = {}
def add(k, v): rows.setdefault(k, []).append(v)
n = 0
for a, b in zip(starts, starts[1:]):
    seg = ev[a:b]
    t0 = seg[0][0][0]
    def first(pred):
        for e, r in seg:
            if pred(e, r): return e[0] - t0
    def last(pred):
        v = None
        for e, r in seg:
            if pred(e, r): v = e[0] - t0
        return v
    t1 = first(lambda e, r: r == "la-main" and e[4] == "sys_exit_recvmsg" and e[5] > 0)
    if t1 is None: continue  # an fprintd cycle
    t2 = first(lambda e, r: r.startswith("la-") and r != "la-main" and e[4] == "sys_enter_sendmsg")
    t3 = first(lambda e, r: r == "pk" and e[4] == "sys_exit_recvmsg" and e[5] > 0)
    t5 = first(lambda e, r: r.startswith("la-") and r != "la-main" and e[4] == "sys_exit_recvmsg" and e[5] > 0)
    if None in (t2, t3, t5): continue
    t4 = max(e[0] - t0 for e, r in seg if r == "pk" and e[4] == "sys_enter_sendmsg" and e[0] - t0 < t5)
    pkcalls = sum(1 for e, r in seg if r == "pk" and e[4] == "sys_enter_sendmsg" and e[0] - t0 < t5)
    acc = first(lambda e, r: r == "la-main" and e[4] in ("sys_enter_accept4", "sys_enter_accept"))
    scan = first(lambda e, r: r == "la-main" and e[4] == "sys_exit_recvfrom" and e[5] > 0)
    sends = [e[0] - t0 for e, r in seg if r == "la-main" and e[4] == "sys_enter_sendmsg" and e[0] - t0 > t5]
    t8 = last(lambda e, r: r == "client-gdbus" and e[4] == "sys_exit_recvmsg" and e[5] > 0)
    if len(sends) < 2 or t8 is None: continue
    n += 1
    add("client send -> localauthd reads the call", t1)
    add("call read -> CheckAuthorization sent (polkit thread)", t2 - t1)
    add("CheckAuthorization sent -> polkitd reads it", t3 - t2)
    add("polkitd: read -> answer sent", t4 - t3)
    add("polkitd answer -> localauthd's polkit thread reads it", t5 - t4)
    add("polkit answer read -> place-finger signal sent", sends[0] - t5)
    add("place-finger signal -> reply sent (libfprint verify)", sends[-1] - sends[0])
    add("reply sent -> client reads it", t8 - sends[-1])
    add("TOTAL client send -> client reads reply", t8)
    add("(polkitd sendmsg count before answering)", pkcalls)
    if acc is not None: add("(vfp accept, from client send)", acc)
    if scan is not None: add("(SCAN read, from client send)", scan)
print(f"{n} evaluations")
for k, v in rows.items():
    print(f"{k:55s} median {statistics.median(v):7.0f}  p90 {sorted(v)[len(v)*9//10]:7.0f}")

# fprintd's cycle: the non-localauthd segments come 4 by 4 (Claim, VerifyStart, VerifyStop, Release)
names = ["Claim", "VerifyStart (+ VerifyStatus)", "VerifyStop", "Release"]
segs = []
for a, b in zip(starts, starts[1:]):
    seg = ev[a:b]
    if any(r == "la-main" and e[4] == "sys_exit_recvmsg" and e[5] > 0 for e, r in seg): continue
    if not any(r == "fprintd" for e, r in seg): continue
    segs.append(seg)
segs = segs[1:]  # the first is GetDefaultDevice
fr = {}
for i, seg in enumerate(segs):
    k = names[i % 4]; t0 = seg[0][0][0]
    end = max(e[0] for e, r in seg if r == "client-gdbus" and e[4] == "sys_exit_recvmsg" and e[5] > 0)
    pkt = [e[0] for e, r in seg if r == "pk"]
    fr.setdefault(k, {"total": [], "polkitd": []})
    fr[k]["total"].append(end - t0)
    fr[k]["polkitd"].append((max(pkt) - min(pkt)) if pkt else 0)
print(f"fprintd: {len(segs)//4} cycles")
tot = 0
for k in names:
    v = fr[k]; tot += statistics.median(v["total"])
    print(f"  {k:30s} call median {statistics.median(v['total']):6.0f} us, polkitd busy in it {statistics.median(v['polkitd']):6.0f} us")
print(f"  sum of the medians {tot:.0f} us")
