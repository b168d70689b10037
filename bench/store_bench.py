#!/usr/bin/env python3
"""The history store against a plain CSV log, on the same synthetic lab.

Usage: store_bench.py BUILD_DIR DAYS
1. bench/store_week writes DAYS days (8 GPUs at 1 s, about 40 processes a
   week) through the store's real write path, and the same GPUs to a CSV
   (four metrics per GPU and second, appended and flushed each tick). It
   prints bytes per GPU-sample and write CPU per tick for both.
2. Times `tarmac report --since 7d`, `--since 30d` and `tarmac history
   --since 1h --gpu 0` on the store (wall time, median of 5), against awk
   computing the same per-GPU figures from the CSV.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

build, days = sys.argv[1], int(sys.argv[2])
work = tempfile.mkdtemp(prefix="tarmac-store-bench-")
db, csv = f"{work}/tarmac.db", f"{work}/samples.csv"
subprocess.run([f"{build}/bin/store_week", db, csv, str(days)], check=True)
t0 = 1790000000 - 1790000000 % 86400
end = t0 + days * 86400 - 1


def wall_ms(argv, runs=5):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


tarmac = f"{build}/bin/tarmac"
awk_report = ("awk -F, -v s={s} '$1>=s {{n[$2]++; u[$2]+=$3; if ($3<5) i[$2]++}} "
              "END {{for (g in n) printf \"%s %.1f %.1f\\n\", g, u[g]/n[g], i[g]/3600}}' " + csv)
awk_history = ("awk -F, -v s={s} '$1>=s && $2==0 {{b=$1-$1%30; n[b]++; u[b]+=$3}} "
               "END {{for (b in n) printf \"%s %.1f\\n\", b, u[b]/n[b]}}' " + csv)
rows = [
    ("report --since 7d", [tarmac, "report", "--db", db, "--since", f"@{end - 7 * 86400}", "--until", f"@{end}"],
     ["sh", "-c", awk_report.format(s=end - 7 * 86400)]),
    ("history --since 1h --gpu 0", [tarmac, "history", "--db", db, "--gpu", "0", "--since", f"@{end - 3600}",
                                    "--until", f"@{end}"],
     ["sh", "-c", awk_history.format(s=end - 3600)]),
]
if days >= 30:
    rows.insert(1, ("report --since 30d", [tarmac, "report", "--db", db, "--since", f"@{end - 30 * 86400}",
                                           "--until", f"@{end}"],
                    ["sh", "-c", awk_report.format(s=end - 30 * 86400)]))
print(f"\n{'query':<30}{'tarmac store':>14}{'CSV + awk':>14}")
for name, ours, theirs in rows:
    print(f"{name:<30}{wall_ms(ours):>11.1f} ms{wall_ms(theirs, 3):>11.1f} ms", flush=True)
subprocess.run(["rm", "-rf", work])
