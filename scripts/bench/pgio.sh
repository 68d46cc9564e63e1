#!/usr/bin/env bash
# pgio on the VM's disk and on zram (lz4, ext4), THREADS per schema, read-only by default:
# RIOPS next to the drive's read IOPS as csdchar reports them, and an independent
# /proc/diskstats delta taken around the same run (the drive's reads over the whole
# command) to check the reported figure. The server runs in a memory cgroup
# (--pg-memory-limit, page cache included) and the cache is dropped before each run: pages
# cached before the server's cgroup existed (by the load) would otherwise still serve its reads.
# Each run starts the server in its cgroup and stops it afterwards; what that adds to the
# drive's reads (catalogs, a few hundred) is within the independent delta, not the reported one.
# The load runs without the limit (under 64 MiB it thrashes).
# Needs root (cgroup, zram, mount).
# Usage: scripts/bench/pgio.sh   env: SCHEMAS=2 SIZE=512m THREADS="1 2 4" TIME=20 MEMLIMIT=64m
#        SHARED_BUFFERS=32MB UPDATE_PCT=0
set -euo pipefail
cd "$(dirname "$0")/../.."
SCHEMAS=${SCHEMAS:-2}; SIZE=${SIZE:-512m}; THREADS=${THREADS:-1 2 4}; TIME=${TIME:-20}
MEMLIMIT=${MEMLIMIT:-64m}; SHARED_BUFFERS=${SHARED_BUFFERS:-32MB}; UPDATE_PCT=${UPDATE_PCT:-0}
[ "$(id -u)" = 0 ] || { echo "needs root (memory cgroup, zram, mount)" >&2; exit 2; }
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DISK=$(mktemp -d /var/tmp/csdchar-pgiobench.XXXX)
chmod 755 "$DISK"
. scripts/bench/zram-ext4.sh
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
stop_cluster() { [ -f "$1/postmaster.pid" ] && su postgres -c "$BIN/pg_ctl stop -m fast -D $1" >/dev/null || true; }
# Servers stopped behind csdchar's back leave their (empty) memory cgroups: remove them.
extra_cleanup() {
  stop_cluster "$DISK/pgdata"; [ -n "${MNT:-}" ] && stop_cluster "$MNT/pgdata"; rm -rf "$DISK"
  for c in /sys/fs/cgroup/memory/csdchar-pg-* /sys/fs/cgroup/csdchar-pg-*; do [ -d "$c" ] && rmdir "$c" 2>/dev/null; done; true
}
zram_ext4_mount pgio
common=(--workload pgio --schemas "$SCHEMAS" --pgio-size "$SIZE" --pg-set "shared_buffers=$SHARED_BUFFERS")
for dev in disk zram; do
  if [ $dev = disk ]; then pg=$DISK/pgdata; else pg=$MNT/pgdata; fi
  "$CSD" db prepare "${common[@]}" --pgdata "$pg" >/dev/null 2>&1
  # The data directory's drive, as csdchar resolves it: a partition's whole disk.
  sys=$(readlink -f "/sys/dev/block/$(mountpoint -d "$(df --output=target "$pg" | tail -1)")")
  [ -e "$sys/partition" ] && sys=$(dirname "$sys")
  devname=$(basename "$sys")
  for t in $THREADS; do
    before=$(awk -v d="$devname" '$3 == d {print $4}' /proc/diskstats)
    "$CSD" db run "${common[@]}" --pgdata "$pg" --threads "$t" --time "${TIME}s" --update-pct "$UPDATE_PCT" \
      --pg-memory-limit "$MEMLIMIT" --drop-caches --report-interval 0 --output-format json > "$DISK/run.json" 2>"$DISK/err" \
      || { cat "$DISK/err" >&2; exit 1; }
    after=$(awk -v d="$devname" '$3 == d {print $4}' /proc/diskstats)
    python3 - "$DISK/run.json" "$before" "$after" "$dev" "$devname" "$t" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); st = r["steps"][0]; io = st["io"]
reads = int(sys.argv[3]) - int(sys.argv[2])
measured = (io["dev_read_iops"] or 0) * st["elapsed_s"]
print(f"  {sys.argv[4]:>4} ({sys.argv[5]}) {sys.argv[6]} thread(s)/schema: ops/s {st['tps']:8.0f}  "
      f"RIOPS {io['riops']:8.0f}  device r/s {io['dev_read_iops'] or 0:8.0f}  "
      f"read lat {io['dev_read_latency_ms'] or 0:.3f} ms  reads/miss {io['reads_per_miss'] or 0:.3f}  "
      f"reported reads {measured:.0f} vs diskstats around the command {reads} ({measured / max(reads, 1):.3f})"
      + (f"  logical/physical {io['logical_bytes'] / 2**20:.0f}/{io['physical_bytes'] / 2**20:.0f} MiB"
         if io.get("physical_bytes") else ""))
PY
  done
done
