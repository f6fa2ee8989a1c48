#!/bin/bash
# Instructions per call and the source files one call passes through, for one
# or more checkouts, under valgrind's callgrind (BENCHMARKS.md, "Callgrind:
# instructions per call and the files a call passes through").
#
#   Tools/Bench/profile/callgrind-paths.sh [--build] [--work DIR] [--only PARTS]
#       [--preflights N1,N2] [--evaluations E1,E2] TREE...
#
#   TREE     a checkout, optionally LABEL=CHECKOUT (label: the directory's name),
#            or, with --build, a git revision of the repository this script is
#            in (a detached worktree WORK/src-REV is made for it and left there:
#            `git worktree remove WORK/src-REV` when done). Its
#            .build/release/localauthd must be built with `make bench`'s flags
#            (release, static Swift runtime, lld), which keep the debug info:
#              swift build -c release --static-swift-stdlib \
#                -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs --product localauthd
#            The unit-test count needs `swift build --build-tests` (debug) done;
#            without it: "-". --build runs both when the release binary is missing.
#   --only   comma-separated of static,count,walk (default all three)
#   --preflights N1,N2   (default 1000,3000)   --evaluations E1,E2 (default 20,60)
#   --work   where runs, dumps and file lists go (default /tmp/callgrind-paths)
#
# count: the daemon (debug info stripped: valgrind 3.19 cannot read Swift's
#   DWARF 5) on the rig (scripts/rig.sh: private bus, real polkitd) and
#   libfprint's virtual_device, three runs: (N1 preflights, E1 evaluations),
#   (N2, E1), (N1, E2), each after enrolling one finger and the same warm-up;
#   instructions per preflight = (run2 - run1) / (N2 - N1), per evaluation =
#   (run3 - run1) / (E2 - E1): start-up, enrolment and warm-up cancel. A
#   preflight is one CanEvaluatePolicy(1); an evaluation one EvaluatePolicy(1)
#   answered true after a SCAN of the enrolled finger, the reader left open
#   between them (back to back, as the bench's "evaluation" row).
# walk: one run of the same stripped daemon with --fprintd, callgrind started
#   with instrumentation off; callgrind_control -i on before a call, a dump
#   right after its answer (VerifyStart: after its final VerifyStatus), -i off.
#   Windows: idle (3 s), evaluate (EvaluatePolicy on an idle service: the
#   reader closed), evaluate-open (the next one, reader open), verify (Claim
#   first, outside the window, then VerifyStart to VerifyStatus done). Every
#   executed address of localauthd in a window is symbolized against the
#   unstripped binary with llvm-symbolizer --inlining: a file counts when an
#   instruction's line-table entry is in it ("inner") or it is an inlined
#   caller of one ("outer"). Counted: files under Sources/ with code run in
#   the window and not in the idle window.
# static: stored properties of class LocalAuthService (Service.swift, lines
#   at the class body's top level starting with let/var, computed ones
#   excluded), lines with `unowned` in Sources/ (comments excluded), files
#   with `extension LocalAuthService`, unit tests (XCTest, all but EndToEndTests).
#
# Root; takes the rig lock itself (flock /tmp/localauth-rig.lock). Time on a
# 2-vCPU machine: about 100 s per built tree (count runs 60 s, walk 20 s, unit
# tests 20 s); --build adds about 2.5 min (release) and 4.5 min (tests) a tree.
# Prints a table; per tree WORK/LABEL/ holds the callgrind outputs, files-*.txt
# (every file, inner/outer) and summary.txt.
set -euo pipefail
args=("$@")

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
PY=/usr/bin/python3
export PATH=/opt/swift/usr/bin:$PATH
export LLVM_SYMBOLIZER="${LLVM_SYMBOLIZER:-$(command -v llvm-symbolizer)}"
work=/tmp/callgrind-paths; only=static,count,walk; build=0
P=(1000 3000); E=(20 60)
trees=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=1;;
    --work) work=$2; shift;;
    --only) only=$2; shift;;
    --preflights) IFS=, read -r -a P <<< "$2"; shift;;
    --evaluations) IFS=, read -r -a E <<< "$2"; shift;;
    -h|--help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0;;
    -*) echo "callgrind-paths: unknown option $1" >&2; exit 2;;
    *) trees+=("$1");;
  esac
  shift
done
[ ${#trees[@]} -gt 0 ] || { sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
[ -n "${CGP_LOCKED:-}" ] || CGP_LOCKED=1 exec flock /tmp/localauth-rig.lock "$0" "${args[@]}"
mkdir -p "$work"
has() { [[ ",$only," == *",$1,"* ]]; }
t0=$(date +%s)

build_tree() {  # CHECKOUT: make bench's release flags, then the unit tests (debug)
  (cd "$1" &&
   swift build -c release --static-swift-stdlib -Xswiftc -use-ld=lld \
     -Xlinker -z -Xlinker pack-relative-relocs --product localauthd &&
   swift build --build-tests)
}

# ------------------------------------------------------------ static counts
stored_properties() {  # Service.swift -> one line per stored property
  awk '
    /^(public |final |internal )*(final )?(public )?class LocalAuthService[ :{]/ { inside = 1; depth = 0 }
    inside {
      line = $0; sub(/\/\/.*/, "", line)
      if (depth == 1 && line ~ /^[ \t]*(@[A-Za-z]+[ \t]+)*((private|fileprivate|internal|public)(\(set\))?[ \t]+|lazy[ \t]+|nonisolated(\(unsafe\))?[ \t]+|weak[ \t]+|unowned(\([a-z]+\))?[ \t]+)*(let|var)[ \t]/ \
          && line !~ /(^|[ \t])static[ \t]/ && line !~ /^[^=]*\{/) print FNR ": " $0
      n = split(line, ch, "")
      for (i = 1; i <= n; i++) { if (ch[i] == "{") depth++; else if (ch[i] == "}") { depth--; if (depth == 0 && inside) { inside = 0; exit } } }
    }' "$1"
}

static_counts() {  # CHECKOUT OUTDIR
  local t=$1 o=$2
  stored_properties "$t/Sources/LocalAuthService/Service.swift" > "$o/stored-properties.txt"
  grep -rn --include='*.swift' -w unowned "$t/Sources" | grep -v -E '^[^:]+:[0-9]+:[[:space:]]*//' \
    | sed "s|^$t/||" > "$o/unowned.txt" || true
  grep -rl --include='*.swift' -E 'extension LocalAuthService\b' "$t/Sources" | sed "s|^$t/||" > "$o/extensions.txt" || true
  echo "stored_properties $(wc -l < "$o/stored-properties.txt")" >> "$o/summary.txt"
  echo "unowned $(wc -l < "$o/unowned.txt")" >> "$o/summary.txt"
  echo "extension_files $(wc -l < "$o/extensions.txt")" >> "$o/summary.txt"
  local tests=-
  if ls "$t"/.build/debug/*PackageTests.xctest >/dev/null 2>&1; then
    (cd "$t" && swift test --skip-build --disable-swift-testing --skip '^EndToEndTests\.' > "$o/unit-tests.log" 2>&1) || true
    tests=$(grep -E 'Executed [0-9]+ tests' "$o/unit-tests.log" | tail -1 |
      sed -E 's/.*Executed ([0-9]+) tests?.* ([0-9]+) failures?.*/\1 (\2 failed)/')
  fi
  echo "unit_tests ${tests:--}" >> "$o/summary.txt"
}

# ------------------------------------------------------------ the rig
D=""
cleanup() {
  [ -n "${vpid:-}" ] && kill "$vpid" 2>/dev/null && wait "$vpid" 2>/dev/null || true
  [ -n "$D" ] && "$rig" stop "$D" >/dev/null 2>&1 || true
}
trap cleanup EXIT

start_daemon() {  # RUN_NAME EXTRA_VALGRIND_ARGS... -- EXTRA_DAEMON_ARGS...
  local run=$1; shift
  local vg=() da=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do vg+=("$1"); shift; done
  [ $# -gt 0 ] && shift; da=("$@")
  rm -rf "$D/state-$run" "$D/fp-$run" "$D/vfp-$run.sock"; mkdir -p "$D/fp-$run"; chmod 700 "$D/fp-$run"
  DBUS_SYSTEM_BUS_ADDRESS=unix:path=$D/system_bus_socket FP_VIRTUAL_DEVICE=$D/vfp-$run.sock \
  FP_DRIVERS_WHITELIST=virtual_device \
    valgrind --tool=callgrind --callgrind-out-file="$o/cg-$run.out" "${vg[@]}" "$bin" \
      --state-dir "$D/state-$run" --idle-timeout 0 --fprintd-store "$D/fp-$run" "${da[@]}" \
      > "$o/daemon-$run.log" 2>&1 &
  vpid=$!
  vfp=$D/vfp-$run.sock
}

stop_daemon() {
  kill -TERM "$vpid"; wait "$vpid" || true; vpid=""
}

totals() { grep -E '^(totals|summary):' "$1" | head -1 | awk '{print $2}'; }

count_runs() {
  local i runs=("${P[0]}:${E[0]}" "${P[1]}:${E[0]}" "${P[0]}:${E[1]}") n=0
  for r in "${runs[@]}"; do
    n=$((n + 1)); local p=${r%%:*} e=${r##*:}
    start_daemon "count$n" --
    $PY "$here/callgrind-paths.py" count unix:path=$D/system_bus_socket "$vfp" --preflights "$p" --evaluations "$e"
    stop_daemon
    echo "count$n $p $e $(totals "$o/cg-count$n.out")" >> "$o/counts.txt"
  done
  awk -v o="$o/summary.txt" '
    { p[NR] = $2; e[NR] = $3; t[NR] = $4 }
    END { printf "per_preflight %d\nper_evaluation %d\n", (t[2]-t[1])/(p[2]-p[1]), (t[3]-t[1])/(e[3]-e[1]) >> o }' "$o/counts.txt"
}

walk_run() {
  start_daemon walk --instr-atstart=no --dump-instr=yes --dump-line=no --compress-strings=no --compress-pos=no --demangle=no -- --fprintd
  $PY "$here/callgrind-paths.py" walk unix:path=$D/system_bus_socket "$vfp" --pid "$vpid" --out "$o/walk-windows.txt"
  stop_daemon
  local part w
  for part in "$o"/cg-walk.out.*; do
    w=$(sed -n 's/^desc: Trigger: dump //p' "$part" | head -1)
    [ -n "$w" ] || continue
    $PY "$here/callgrind-paths.py" files "$part" "$orig" "$t" --object "$bin" > "$o/files-$w.txt"
  done
  local f window
  awk '$2 ~ /^Sources\// { print $2 }' "$o/files-idle.txt" | sort -u > "$o/src-idle.all"
  for window in evaluate evaluate-open verify; do
    f="$o/files-$window.txt"; [ -f "$f" ] || continue
    # Sources/ files run in the window and not in the idle window
    awk '$2 ~ /^Sources\// { print $2 }' "$f" | sort -u > "$o/src-$window.all"
    comm -23 "$o/src-$window.all" "$o/src-idle.all" > "$o/src-$window.txt"
    awk '$1 == "inner" && $2 ~ /^Sources\// { print $2 }' "$f" | sort -u | comm -23 - "$o/src-idle.all" > "$o/src-$window.inner"
    echo "files_$window $(grep -c '^Sources/LocalAuthService/' "$o/src-$window.txt") $(wc -l < "$o/src-$window.txt") $(grep -c '^Sources/LocalAuthService/' "$o/src-$window.inner") $(wc -l < "$o/src-$window.inner")" >> "$o/summary.txt"
  done
  echo "files_idle $(wc -l < "$o/src-idle.all")" >> "$o/summary.txt"
}

labels=()
for spec in "${trees[@]}"; do
  label=${spec%%=*}; t=${spec#*=}
  if [ "$label" = "$spec" ]; then
    if [ -d "$spec" ]; then t=$(cd "$spec" && pwd); label=$(basename "$t")
    else
      [ $build = 1 ] || { echo "callgrind-paths: $spec is not a directory (a revision needs --build)" >&2; exit 2; }
      rev=$(git -C "$repo" rev-parse --short "$spec"); label=$spec; t=$work/src-$rev
      [ -d "$t" ] || git -C "$repo" worktree add --detach "$t" "$rev" >/dev/null
    fi
  fi
  t=$(cd "$t" && pwd)
  orig=$t/.build/release/localauthd
  if [ ! -x "$orig" ]; then
    [ $build = 1 ] || { echo "callgrind-paths: no $orig (build it, or --build)" >&2; exit 2; }
    build_tree "$t"
  fi
  o=$work/$label; rm -rf "$o"; mkdir -p "$o"; labels+=("$label")
  echo "rev $(git -C "$t" rev-parse --short HEAD)" > "$o/summary.txt"
  bin=$o/localauthd; strip --strip-debug -o "$bin" "$orig"
  rig=$t/scripts/rig.sh
  echo "== $label ($t) $(date +%T)" >&2
  has static && static_counts "$t" "$o"
  if has count || has walk; then
    D=$(mktemp -d /tmp/cgp-rig.XXXXXX)
    "$rig" start "$D" >/dev/null
    has count && count_runs
    has walk && walk_run
    "$rig" stop "$D" >/dev/null; rm -rf "$D"; D=""
  fi
done

# ------------------------------------------------------------ the table
get() { awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$work/$1/summary.txt"; }
row() {  # TITLE KEY FIELD
  printf '| %s |' "$1"
  for l in "${labels[@]}"; do
    v=$(get "$l" "$2" | awk -v files="${3:-}" '{ print files ? $1 " / " $2 : $0 }'); printf ' %s |' "${v:--}"
  done; echo
}
printf '| |'; for l in "${labels[@]}"; do r=$(get "$l" rev); [ "$r" = "$l" ] && printf ' %s |' "$l" || printf ' %s (%s) |' "$l" "$r"; done; echo
printf '| --- |'; for l in "${labels[@]}"; do printf ' ---: |'; done; echo
row "instructions per preflight (CanEvaluatePolicy)" per_preflight
row "instructions per evaluation (EvaluatePolicy, reader open)" per_evaluation
row "files per EvaluatePolicy, idle service (LocalAuthService / all Sources/)" files_evaluate 1
row "files per EvaluatePolicy, reader open (LocalAuthService / all Sources/)" files_evaluate-open 1
row "files per VerifyStart to final VerifyStatus (LocalAuthService / all Sources/)" files_verify 1
row "stored properties of LocalAuthService" stored_properties
row "lines with unowned in Sources/" unowned
row "files with extension LocalAuthService" extension_files
row "unit tests" unit_tests
echo "elapsed $(( $(date +%s) - t0 )) s; details in $work/<label>/" >&2
