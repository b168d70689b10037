#!/usr/bin/env python3
"""Where each real job's extra wait goes, from two runs of backfill_week.py.

Usage: backfill_wait_split.py FOLDER [BASE_RUN] [RUN]

FOLDER is what BACKFILL_WEEK_EVENTS named (`BACKFILL_WEEK_EVENTS=FOLDER
python3 bench/backfill_week.py build heavy 1 7 baseline,auto`); the runs
default to baseline and auto. Each job's extra wait is its wait in RUN
minus the same job's in BASE_RUN. The jobs are split into those a backfill
lease was revoked for (the agent's `preempting` event names their
request) and the rest, with the median extra of each, the median time from
a job's first revocation to its grant, and, for both runs, how much longer
than its work a computing job held its lease (grant to release).
"""
import collections
import json
import os
import re
import statistics
import sys


def load(folder, run):
    with open(os.path.join(folder, run + ".json")) as f:
        d = json.load(f)
    return ({int(k): v for k, v in d["waits"].items()}, {int(k): v for k, v in d["lease_ids"].items()},
            d["events"])


def first_at(events):
    """(kind, lease) -> the time of its first such event."""
    at = {}
    for e in events:
        at.setdefault((e["kind"], e["lease"]), e["at_unix"])
    return at


def main():
    folder = sys.argv[1]
    base_run = sys.argv[2] if len(sys.argv) > 2 else "baseline"
    run = sys.argv[3] if len(sys.argv) > 3 else "auto"
    base, _, _ = load(folder, base_run)
    waits, ids, events = load(folder, run)
    at = first_at(events)
    revoked_for = collections.defaultdict(list)  # Request -> times of revocations for it.
    for e in events:
        m = re.search(r"revoked for request (\d+)", e["detail"]) if e["kind"] == "preempting" else None
        if m:
            revoked_for[int(m.group(1))].append(e["at_unix"])
    revoking, other, handover = [], [], []
    for i, wait in waits.items():
        if i not in base:
            continue
        extra = wait - base[i]
        lease = ids.get(i)
        if revoked_for.get(lease):
            revoking.append(extra)
            if ("granted", lease) in at:
                handover.append(at[("granted", lease)] - min(revoked_for[lease]))
        else:
            other.append(extra)

    def ms(values):
        return f"{1000 * statistics.median(values):.1f} ms" if values else "-"

    print(f"{run} against {base_run}: {len(revoking) + len(other)} jobs, median extra wait "
          f"{ms(revoking + other)} ({100 * statistics.median(revoking + other) / statistics.median(base.values()):.2f} "
          f"% of {base_run}'s median wait, {statistics.median(base.values()):.3f} s)")
    print(f"  {len(revoking)} jobs a backfill lease was revoked for: median extra {ms(revoking)}, "
          f"first revocation to grant {ms(handover)}")
    print(f"  {len(other)} jobs none was revoked for: median extra {ms(other)}")
    for name in (base_run, run):
        _, lease_ids, evs = load(folder, name)
        with open(os.path.join(folder, name + ".json")) as f:
            work_seconds = {int(k): v for k, v in json.load(f)["work_seconds"].items()}
        a = first_at(evs)
        over = []
        for i, lease in lease_ids.items():
            end = a.get(("released", lease), a.get(("preempted", lease)))
            if i in work_seconds and end is not None and ("granted", lease) in a:
                over.append(end - a[("granted", lease)] - work_seconds[i])
        print(f"  {name}: a computing job held its lease {ms(over)} longer than its work (p50, grant to release)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
