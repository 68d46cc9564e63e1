#!/usr/bin/env bash
# The fillfactor study, RUNS times, each on a fresh zram device (lz4, 4 GiB) with ext4 mounted
# -o discard: does it give one answer? Prints per run and fillfactor the relations' logical
# bytes, the drive's physical change and ratio, the growth against the first fillfactor, the
# load's WAL and pg_wal growth, and the split the result carries (relations / WAL / rest).
# Needs root. Leaves no zram device, mount or cluster behind.
# Usage: scripts/bench/study-repeat.sh [extra study options]
#   env: RUNS=5 WORKLOAD=oltp-read-write LOAD="--tables 2 --table-size 150000" FILLFACTORS=100,70
#        THREADS=2 TIME=3
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-5}; WORKLOAD=${WORKLOAD:-oltp-read-write}; LOAD=${LOAD:---tables 2 --table-size 150000}
FILLFACTORS=${FILLFACTORS:-100,70}; THREADS=${THREADS:-2}; TIME=${TIME:-3}
[ "$(id -u)" = 0 ] || { echo "needs root (zram, mount)" >&2; exit 2; }
# CSD=path runs another build (e.g. an older one, to compare); default: this tree's release build.
if [ -z "${CSD:-}" ]; then cargo build --release -q -p csdchar-cli; CSD=$PWD/target/release/csdchar; fi
OUT=$(mktemp -d /var/tmp/csdchar-studyrep.XXXX)
. scripts/bench/zram-ext4.sh
for i in $(seq "$RUNS"); do
  ZRAM_SIZE=4G zram_ext4_mount studyrep
  # shellcheck disable=SC2086
  "$CSD" db study --pgdata "$MNT/pgdata" --workload "$WORKLOAD" $LOAD --fillfactor "$FILLFACTORS" \
    --threads "$THREADS" --time "${TIME}s" --report-interval 0 --output-format json \
    --output "$OUT/run-$i.json" "$@" >/dev/null 2>"$OUT/run-$i.err" || { cat "$OUT/run-$i.err"; exit 1; }
  zram_ext4_cleanup
  MNT=
  python3 - "$OUT/run-$i.json" "$i" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for r in v["rows"]:
    g = r.get("physical_growth")
    split = r.get("physical_split") or {}
    f = lambda x: "-" if x is None else f"{x/2**20:7.1f}"
    print(f"run {sys.argv[2]} ff {r['fillfactor']:3d}: relations {r['relation_bytes']/2**20:6.1f} MiB, "
          f"drive +{f(r.get('physical_bytes'))} MiB of +{f(r.get('physical_of_logical_bytes'))} MiB "
          f"(ratio {r.get('ratio') or 0:.2f}), growth {'-' if g is None else f'{100*g:+.1f}%'}; "
          f"load WAL {f(r.get('load_wal_bytes'))} MiB, pg_wal +{f(r.get('wal_dir_growth_bytes'))} MiB; "
          + ", ".join(f"{k} {f(x)}" for k, x in split.items() if isinstance(x, (int, float))))
PY
done
echo "results: $OUT"
