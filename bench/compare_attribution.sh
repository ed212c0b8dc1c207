#!/bin/bash
# Does `fitscope compare` find a slowdown planted in one part of run B, name the right part, and keep
# quiet about identical runs? Pairs of short runs of the seed CNN (batch 32, --workers 0, 200 steps, 195
# measured steps). A pair is REPEATS runs of A's settings and as many of each kind's B (default 5), made
# in turn (A1, each kind's B1, A2, each kind's B2, ...) and compared as two groups (`fitscope compare
# A1..A5 B1..B5 --runs-of-a 5`: Welch's t over the runs' means), so that both sides share the machine's
# drift; each kind's pairs are independent of one another. INTERLEAVE=0 makes A's runs first and one run
# of B after them (`fitscope compare A1 A2 A3 B` judges B by A's spread; REPEATS=1, one run against one).
# Kinds: a loader delay (--load-delay-ms: data_wait), a slow callback (--slow-callback-ms: callbacks), a
# delayed rank (two ranks under `fitscope launch`, rank 1 alone with a load delay: "rank 1 data_wait"),
# fewer threads (--threads 1 against 2: forward or backward, and threads.intra_op among the settings that
# differ; one size, the one the machine gives), and identical runs (no significant change). The delays
# are the size (SIZES, default 0.02 0.05 0.20) times the baseline's mean step (a sleep overshoots by some
# tens of microseconds; the measured change is printed beside the planted one).
# The goal: at 5 % and above, found and attributed in >= 95 % of pairs; identical pairs called changed
# in <= 5 %.
#   [REPEATS=5] [INTERLEAVE=1] [SIZES="0.05 0.20"] bench/compare_attribution.sh build/tools/fitscope/fitscope [pairs, default 20] [kinds, default all]
# KEEP_JSON=DIR keeps each pair's `compare --json` file there; KEEP_RUNS=DIR keeps every run directory
# there (DIR/pN/...), and with REUSE=1 a second call judges the kept runs again instead of training.
set -euo pipefail
fitscope=$(realpath "$1")
pairs=${2:-20}
kinds=${3:-"identical loader callback threads rank"}
if [ -n "${KEEP_RUNS:-}" ]; then
  mkdir -p "$KEEP_RUNS"
  dir=$(realpath "$KEEP_RUNS")
else
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
# kept: DIR is a finished run kept from an earlier call, to be judged again (REUSE=1)
kept() { [ -n "${REUSE:-}" ] && [ -f "$1/summary.json" ]; }
common=(train --model cnn --synthetic-size 8000 --epochs 1 --batch-size 32 --workers 0 --verbose 0 --overwrite)
# run DIR [FLAGS...]: one training run into DIR
run() {
  local out=$1
  shift
  kept "$out" && return
  "$fitscope" "${common[@]}" --threads 1 --run-dir "$out" "$@" > /dev/null
}
# run_ranks DIR DELAY: two ranks, rank 1 alone with --load-delay-ms DELAY
run_ranks() {
  local out=$1 delay=$2
  kept "$out" && return
  "$fitscope" launch --nproc-per-node 2 --master-port $((29600 + RANDOM % 300)) -- /bin/sh -c \
    'extra=""; [ "$RANK" = 1 ] && extra="--load-delay-ms $0"; exec "$@" $extra' "$delay" \
    "$fitscope" "${common[@]}" --threads 1 --run-dir "$out" > /dev/null
}
# judge EXPECTED NA RUN...: compares the runs, the first NA of them A's; "found" when the part compare finds
# grew the most is EXPECTED (a planted slowdown is named even where another run's noise made the compute
# faster), "quiet" when identical runs are no significant change; else what it said
judge() {
  local expected=$1 na=$2
  shift 2
  "$fitscope" compare "$@" --runs-of-a "$na" --json "$dir/compare.json" > /dev/null
  [ -z "${KEEP_JSON:-}" ] || cp "$dir/compare.json" "$KEEP_JSON/$kind-$size-$i.json"
  python3 - "$dir/compare.json" "$expected" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
expected, direction, part = sys.argv[2], c["direction"], c["attributed_to"]
changed = {p["part"]: p["change_ms"] for p in c["parts"]}
grew = c["largest_increase"].replace(" ", "_")  # what got slower in B, named as the comparison names it
direction, part = direction.replace(" ", "_"), part.replace(" ", "_")
if expected == "none":
    print("quiet" if direction == "no_significant_change" else f"alarm:{direction}:{part}", c["step"]["change_ms"])
elif expected == "compute":
    threads = any(s["name"].startswith("threads.intra_op") for s in c["settings"])
    ok = grew in ("forward", "backward") and threads
    print("found" if ok else f"missed:{direction}:{grew or '-'}", c["step"]["change_ms"])
else:
    print("found" if grew == expected.replace(" ", "_") else f"missed:{direction}:{grew or '-'}",
          changed.get(expected, c["step"]["change_ms"]))
PY
}

repeats=${REPEATS:-5}
run "$dir/base"
step_ms=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_ms"]["mean"])' "$dir/base/summary.json")
run_ranks "$dir/base-ranks" 0
rank_step_ms=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_ms"]["mean"])' "$dir/base-ranks/summary.json")
printf 'baseline: the seed CNN, batch 32, --threads 1, --workers 0: mean step %.3f ms (two ranks: %.3f ms); %d run(s) of A a pair\n' \
  "$step_ms" "$rank_step_ms" "$repeats"
results=$dir/results
: > "$results"
# runs_of_a PREFIX COMMAND...: `repeats` runs into PREFIX1, PREFIX2, ...; their directories in $a_runs
runs_of_a() {
  local prefix=$1 r
  shift
  a_runs=()
  for r in $(seq "$repeats"); do
    "$@" "$prefix$r"
    a_runs+=("$prefix$r")
  done
}
run_a() { run "$1"; }
run_a_threads() { kept "$1" || "$fitscope" "${common[@]}" --threads 2 --run-dir "$1" > /dev/null; }
run_a_ranks() { run_ranks "$1" 0; }
# sizes_of KIND: the planted sizes of a kind ("-": none)
sizes_of() { case $1 in identical | threads) echo "-" ;; *) echo "${SIZES:-0.02 0.05 0.20}" ;; esac; }
# run_b KIND SIZE DIR: run B of a kind and size
run_b() {
  case $1 in
    identical | threads) run "$3" ;;
    loader) run "$3" --load-delay-ms "$(python3 -c "print($2 * $step_ms)")" ;;
    callback) run "$3" --slow-callback-ms "$(python3 -c "print($2 * $step_ms)")" ;;
    rank) run_ranks "$3" "$(python3 -c "print($2 * $rank_step_ms)")" ;;
    *) echo "unknown kind $1 (expected identical, loader, callback, threads or rank)" >&2; exit 2 ;;
  esac
}
# expected_of KIND: what judge expects of it
expected_of() {
  case $1 in identical) echo none ;; loader) echo data_wait ;; callback) echo callbacks ;; threads) echo compute ;; rank) echo "rank 1 data_wait" ;; esac
}
# a_prefix KIND: the runs of A a kind is compared with (threads: --threads 2; rank: two ranks)
a_prefix() { case $1 in threads) echo t ;; rank) echo r ;; *) echo a ;; esac; }
for i in $(seq "$pairs"); do
  p=$dir/p$i
  mkdir -p "$p"
  if [ "${INTERLEAVE:-1}" = 1 ]; then
    for r in $(seq "$repeats"); do
      run "$p/a$r"
      for kind in $kinds; do
        case $kind in threads) run_a_threads "$p/t$r" ;; rank) run_a_ranks "$p/r$r" ;; esac
        for size in $(sizes_of "$kind"); do run_b "$kind" "$size" "$p/b-$kind-$size-$r"; done
      done
    done
    for kind in $kinds; do
      for size in $(sizes_of "$kind"); do
        a_runs=() b_runs=()
        for r in $(seq "$repeats"); do
          a_runs+=("$p/$(a_prefix "$kind")$r")
          b_runs+=("$p/b-$kind-$size-$r")
        done
        verdict=$(judge "$(expected_of "$kind")" "$repeats" "${a_runs[@]}" "${b_runs[@]}")
        echo "$kind $size $verdict" >> "$results"
        printf '%s %s pair %d: %s\n' "$kind" "$size" "$i" "$verdict"
      done
    done
  else
    runs_of_a "$p/a" run_a
    base_a=("${a_runs[@]}")
    for kind in $kinds; do
      case $kind in threads) runs_of_a "$p/t" run_a_threads ;; rank) runs_of_a "$p/r" run_a_ranks ;; *) a_runs=("${base_a[@]}") ;; esac
      for size in $(sizes_of "$kind"); do
        b=$p/b-$kind-$size
        run_b "$kind" "$size" "$b"
        verdict=$(judge "$(expected_of "$kind")" ${#a_runs[@]} "${a_runs[@]}" "$b")
        echo "$kind $size $verdict" >> "$results"
        printf '%s %s pair %d: %s\n' "$kind" "$size" "$i" "$verdict"
      done
    done
  fi
  [ -n "${KEEP_RUNS:-}" ] || rm -rf "$p"
done
python3 - "$results" "$step_ms" "$rank_step_ms" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    kind, size, verdict, change = line.split()
    rows[(kind, size)].append((verdict, float(change)))
step, rank_step = float(sys.argv[2]), float(sys.argv[3])
print(f"\n{'kind':<10} {'planted':>8} {'pairs':>6} {'right':>7} {'share':>7}  measured change of the part (median)")
for (kind, size), got in rows.items():
    right = sum(v in ("found", "quiet") for v, _ in got)
    base = rank_step if kind == "rank" else step
    planted = "-" if size == "-" else f"{float(size):.0%}"
    measured = statistics.median(c for _, c in got)
    print(f"{kind:<10} {planted:>8} {len(got):>6} {right:>7} {right / len(got):>7.0%}  {measured:+.3f} ms ({measured / base:+.1%} of the step)")
print("goal: at 5 % and above >= 95 % right; identical pairs: >= 95 % quiet (<= 5 % report a change)")
PY
[ -z "${KEEP_JSON:-}" ] || python3 "$(dirname "$0")/compare_floors.py" "$KEEP_JSON"
