#!/usr/bin/env python3
"""The pairs of bench/compare_attribution.sh judged again at several noise floors, from the `compare
--json` files it kept (KEEP_JSON=DIR): per kind and planted size, the share of pairs right (a planted
slowdown named as what grew in B; identical runs no change) with the floor at 0 (the intervals alone),
2, 3, 4 and 5 % of A's step. A change counts when its interval lies beyond +-floor x A's mean step, as
ComparisonOptions::noise_floor does; the part named is the largest such increase, a rank's phase before
any phase of the chief's (Comparison::largest_increase). Pairs judged against several runs of A have no
floor (their intervals come from A's spread): their columns are all the same.
  bench/compare_floors.py DIR"""
import collections, glob, json, os, sys

FLOORS = [0.0, 0.02, 0.03, 0.04, 0.05]
EXPECTED = {"loader": "data_wait", "callback": "callbacks", "rank": "rank 1 data_wait", "threads": "compute", "identical": None}


def beyond(d, floor_ms):
    return d["low_ms"] is not None and (d["low_ms"] > floor_ms or d["high_ms"] < -floor_ms)


def largest_increase(c, floor_ms):
    grew = [p for p in c["parts"] if beyond(p, floor_ms) and p["change_ms"] > 0]
    for kind in ("rank", "phase"):  # a rank's phase against the other ranks' before any phase of the chief's
        of_kind = [p for p in grew if p["kind"] == kind]
        if of_kind:
            return max(of_kind, key=lambda p: p["change_ms"])["part"]
    return ""


def right(kind, c, floor):
    floor_ms = floor * c["step"]["a_ms"]
    if kind == "identical":
        return not beyond(c["step"], floor_ms)
    grew = largest_increase(c, floor_ms)
    if kind == "threads":
        return grew in ("forward", "backward") and any(s["name"].startswith("threads.intra_op") for s in c["settings"])
    return grew == EXPECTED[kind]


rows = collections.defaultdict(list)
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    kind, rest = os.path.basename(path)[:-5].split("-", 1)  # KIND-SIZE-PAIR.json, SIZE "-" where none
    size = rest.rsplit("-", 1)[0]
    rows[(kind, size)].append(json.load(open(path)))
print(f"{'kind':<10} {'planted':>8} {'pairs':>6}  " + "  ".join(f"floor {f:.0%}".rjust(9) for f in FLOORS) +
      "   step change of B (median, of A's step)")
for (kind, size), cs in rows.items():
    shares = [sum(right(kind, c, f) for c in cs) / len(cs) for f in FLOORS]
    changes = sorted(c["step"]["change_ms"] / c["step"]["a_ms"] for c in cs)
    planted = "-" if size == "-" else f"{float(size):.0%}"
    print(f"{kind:<10} {planted:>8} {len(cs):>6}  " + "  ".join(f"{s:>9.0%}" for s in shares) +
          f"   {changes[len(changes) // 2]:+.1%} (from {changes[0]:+.1%} to {changes[-1]:+.1%})")
print("right: a planted slowdown named as what grew in B; identical runs called no change. "
      "goal: >= 95 % at 5 % and above, >= 95 % for identical runs")
