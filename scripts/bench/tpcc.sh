#!/usr/bin/env bash
# TPC-C (BenchmarkSQL 5.x semantics) on a cluster csdchar manages on the plain disk:
#  1. load at WAREHOUSES: csdchar's loader (COPY over LOAD_JOBS connections, one transaction
#     per warehouse) vs BenchmarkSQL 5.0's path (--load-method insert: one connection, batched
#     single-row INSERTs, commit every 10,000 rows), alternating; rows/s of the data phase and
#     of the whole build (keys, foreign keys, vacuum included), warehouses/min;
#  2. tpmC, tpmTOTAL and CPU at TERMINALS: the client's (user+sys of csdchar) against the
#     server's (the postmaster's own and reaped children's CPU plus its live children's);
#  3. with ZRAM=1 (root): the same sweep on zram (lz4, ext4) and on the disk, then
#     `csdchar report` for the drive A vs B tables (tpmC A | B | change).
# Usage: scripts/bench/tpcc.sh   env: ROUNDS=2 WAREHOUSES=10 LOAD_JOBS=2 TERMINALS="1 4 8 16"
#        TIME=30 ZRAM=1 ZRAM_WAREHOUSES=2 ZRAM_TERMINALS=1,4,8 ZRAM_TIME=20
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-2}; WAREHOUSES=${WAREHOUSES:-10}; LOAD_JOBS=${LOAD_JOBS:-2}
TERMINALS=${TERMINALS:-1 4 8 16}; TIME=${TIME:-30}
ZRAM=${ZRAM:-1}; ZRAM_WAREHOUSES=${ZRAM_WAREHOUSES:-2}; ZRAM_TERMINALS=${ZRAM_TERMINALS:-1,4,8}
ZRAM_TIME=${ZRAM_TIME:-20}
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
DIR=$(mktemp -d /var/tmp/csdchar-tpccbench.XXXX)
chmod 755 "$DIR"
PGDATA=$DIR/pgdata
SETTINGS=(--pg-set shared_buffers=1GB --pg-set max_wal_size=8GB --pg-set checkpoint_timeout=30min)
stop_cluster() {
  [ -f "$1/postmaster.pid" ] || return 0
  if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $1" >/dev/null
  else "$BIN/pg_ctl" stop -m fast -D "$1" >/dev/null; fi
}
. scripts/bench/zram-ext4.sh
extra_cleanup() { stop_cluster "$PGDATA" || true; [ -n "${MNT:-}" ] && stop_cluster "$MNT/pgdata" || true; rm -rf "$DIR"; }
trap zram_ext4_cleanup EXIT
"$CSD" db prepare --workload tpcc --warehouses 1 --pgdata "$PGDATA" --keep-running "${SETTINGS[@]}" >/dev/null 2>&1
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }

# Prints "rows total_s load_s": from prepare's summary line.
load() {
  "$CSD" db prepare --workload tpcc --warehouses "$WAREHOUSES" --pgdata "$PGDATA" --threads "$LOAD_JOBS" \
    --force "$@" 2>&1 >/dev/null | python3 -c '
import re, sys
t = sys.stdin.read()
m = re.search(r"= (\d+) rows in ([\d.]+)s .*load ([\d.]+) s", t)
if not m: sys.exit("no summary line: " + t)
print(m.group(1), m.group(2), m.group(3))'
}
echo "== load, $WAREHOUSES warehouses (rows/s: data phase | whole build incl. keys and vacuum)"
copy_d=(); ins_d=(); copy_w=(); ins_w=()
for i in $(seq "$ROUNDS"); do
  read -r rows a_tot a_load < <(load --load-method copy)
  read -r _ b_tot b_load < <(load --load-method insert)
  copy_d+=("$(python3 -c "print(round($rows/$a_load))")"); ins_d+=("$(python3 -c "print(round($rows/$b_load))")")
  copy_w+=("$(python3 -c "print(round($rows/$a_tot))")"); ins_w+=("$(python3 -c "print(round($rows/$b_tot))")")
  printf '  round %d: copy (%d jobs) %8.0f | %7.0f rows/s (%.1f s, %.1f warehouses/min) ; insert (1 connection) %8.0f | %7.0f rows/s (%.1f s)\n' \
    "$i" "$LOAD_JOBS" "${copy_d[-1]}" "${copy_w[-1]}" "$a_tot" "$(python3 -c "print($WAREHOUSES*60/$a_tot)")" \
    "${ins_d[-1]}" "${ins_w[-1]}" "$b_tot"
done
printf 'load: data phase copy/insert %s (medians %s vs %s rows/s); whole build %s (%s vs %s rows/s)\n' \
  "$(python3 -c "print(f'{$(med "${copy_d[@]}")/$(med "${ins_d[@]}"):.2f}x')")" "$(med "${copy_d[@]}")" "$(med "${ins_d[@]}")" \
  "$(python3 -c "print(f'{$(med "${copy_w[@]}")/$(med "${ins_w[@]}"):.2f}x')")" "$(med "${copy_w[@]}")" "$(med "${ins_w[@]}")"

# CPU seconds of the server: the postmaster and reaped children, plus live children.
server_cpu() {
  python3 - "$(head -1 "$PGDATA/postmaster.pid")" <<'PY'
import os, sys
pm = sys.argv[1]; hz = os.sysconf("SC_CLK_TCK")
def fields(pid):
    s = open(f"/proc/{pid}/stat").read(); return s[s.rindex(")") + 2:].split()
f = fields(pm); total = sum(int(x) for x in f[11:15])
for p in os.listdir("/proc"):
    if p.isdigit() and p != pm:
        try:
            g = fields(p)
            if g[1] == pm: total += int(g[11]) + int(g[12])
        except Exception: pass
print(total / hz)
PY
}
echo "== tpmC by terminals, $WAREHOUSES warehouses, ${TIME}s each"
for t in $TERMINALS; do
  s0=$(server_cpu)
  /usr/bin/time -f "%U %S" -o "$DIR/time" "$CSD" db run --workload tpcc --pgdata "$PGDATA" --threads "$t" \
    --time "${TIME}s" --report-interval 0 --output-format json > "$DIR/run.json"
  sleep 0.5
  s1=$(server_cpu)
  python3 - "$DIR/run.json" "$DIR/time" "$s0" "$s1" "$t" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); st = r["steps"][0]
u, s = map(float, open(sys.argv[2]).read().split())
server = float(sys.argv[4]) - float(sys.argv[3]); client = u + s; tx = st["transactions"]
lat = {k["name"]: k["latency"]["mean_ns"] / 1e6 for k in st["by_type"]}
print(f"  {sys.argv[5]:>3} terminals: tpmC {st['tpmc']:9.0f}  tpmTOTAL {st['tpm_total']:9.0f}  "
      f"new_order avg {lat['new_order']:.2f} ms  rollbacks {st['rollbacks']}  "
      f"client CPU {client*1e3/tx:.3f} ms/tx, server {server*1e3/tx:.3f} ms/tx, client/server {client/server:.3f}")
PY
done

if [ "$ZRAM" = 1 ] && [ "$(id -u)" = 0 ]; then
  echo "== disk vs zram: $ZRAM_WAREHOUSES warehouses, terminals $ZRAM_TERMINALS, ${ZRAM_TIME}s each"
  stop_cluster "$PGDATA"
  zram_ext4_mount tpcc
  OUT=$DIR/report; mkdir -p "$OUT/disk" "$OUT/zram"
  for dev in disk zram; do
    if [ $dev = disk ]; then pg=$DIR/pgdata-disk; else pg=$MNT/pgdata; fi
    "$CSD" db prepare --workload tpcc --warehouses "$ZRAM_WAREHOUSES" --pgdata "$pg" --pg-set shared_buffers=256MB >/dev/null 2>&1
    "$CSD" db run --workload tpcc --pgdata "$pg" --pg-set shared_buffers=256MB --threads "$ZRAM_TERMINALS" \
      --time "${ZRAM_TIME}s" --output-format json --output "$OUT/$dev/tpcc.json" 2>/dev/null
  done
  "$CSD" report --label disk="$OUT/disk" --label zram="$OUT/zram" --out "$OUT/html"
fi
