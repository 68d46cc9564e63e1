#!/usr/bin/env bash
# Drive A vs drive B, the seeds' way, in one report: sysbench oltp_read_write through a
# thread sweep on a cluster csdchar creates on the plain disk (/var/tmp) and on a
# compressing device (zram, lz4, ext4 mounted with discard), then `csdchar report`.
# Needs root. Leaves no zram configuration, mount or cluster behind.
# Usage: scripts/bench/report-zram-vs-disk.sh   env: OUT=/var/tmp/csdchar-report-demo THREADS=1,2,4
#        TIME=20 TABLES=4 TABLE_SIZE=100000 FILLFACTOR=100
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/var/tmp/csdchar-report-demo}; THREADS=${THREADS:-1,2,4}; TIME=${TIME:-20}
TABLES=${TABLES:-4}; TABLE_SIZE=${TABLE_SIZE:-100000}; FILLFACTOR=${FILLFACTOR:-100}
[ "$(id -u)" = 0 ] || { echo "needs root (zram, mount)" >&2; exit 2; }
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
. scripts/bench/zram-ext4.sh
# The plain disk's cluster lives in a directory of its own; mktemp makes it 0700 and the
# server runs as postgres, so it must be able to reach pgdata.
DISK=$(mktemp -d /var/tmp/csdchar-disk.XXXX)
chmod 755 "$DISK"
extra_cleanup() { rm -rf "$DISK"; }
zram_ext4_mount zram
rm -rf "$OUT"; mkdir -p "$OUT/disk" "$OUT/zram"
# The ephemeral cluster lives where the data directory is: one per device.
for dev in disk zram; do
  if [ $dev = disk ]; then base=$DISK; else base=$MNT; fi
  common=(--pgdata "$base/pgdata" --tables "$TABLES" --table-size "$TABLE_SIZE" --pg-set shared_buffers=128MB)
  "$CSD" db prepare "${common[@]}" --fillfactor "$FILLFACTOR"
  "$CSD" db run "${common[@]}" --workload oltp_read_write --threads "$THREADS" --time "${TIME}s" \
    --report-interval 1s --percentile 95,99 --output-format json --output "$OUT/$dev/oltp_read_write.json"
  echo "$dev: done" >&2
done
"$CSD" report --label disk="$OUT/disk" --label zram="$OUT/zram" --out "$OUT/report"
