#!/usr/bin/env bash
# The fillfactor study on a compressing block device: zram (lz4) with ext4 mounted with
# discard, a cluster csdchar creates there, pgbench TPC-B at SCALE for each fillfactor.
# Needs root. Leaves no zram configuration, mount or cluster behind.
# Usage: scripts/bench/study-zram.sh     env: SCALE=20 FILLFACTORS=100,70,50 THREADS=8 TIME=10
set -euo pipefail
cd "$(dirname "$0")/../.."
SCALE=${SCALE:-20}; FILLFACTORS=${FILLFACTORS:-100,70,50}; THREADS=${THREADS:-8}; TIME=${TIME:-10}
[ "$(id -u)" = 0 ] || { echo "needs root (zram, mount)" >&2; exit 2; }
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
modprobe zram 2>/dev/null || true
ID=$(cat /sys/class/zram-control/hot_add)
MNT=$(mktemp -d /var/tmp/csdchar-study.XXXX)
cleanup() {
  for _ in $(seq 50); do umount "$MNT" 2>/dev/null && break; mountpoint -q "$MNT" || break; sleep 0.2; done
  rmdir "$MNT" 2>/dev/null || true
  for _ in $(seq 50); do echo 1 > /sys/block/zram$ID/reset 2>/dev/null && break; sleep 0.1; done
  echo "$ID" > /sys/class/zram-control/hot_remove 2>/dev/null || true
}
trap cleanup EXIT
echo lz4 > /sys/block/zram$ID/comp_algorithm
echo 8G > /sys/block/zram$ID/disksize
mkfs.ext4 -q -F /dev/zram$ID
mount -o discard /dev/zram$ID "$MNT"
"$CSD" db study --pgdata "$MNT/pgdata" --workload tpcb --scale "$SCALE" --fillfactor "$FILLFACTORS" \
  --threads "$THREADS" --time "${TIME}s" --report-interval 0 \
  --pg-set shared_buffers=512MB --pg-set wal_level=minimal --pg-set max_wal_senders=0 --pg-set max_wal_size=4GB \
  | sed -n '/^ *fillfactor threads/,$p'
