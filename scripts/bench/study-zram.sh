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
. scripts/bench/zram-ext4.sh
zram_ext4_mount study
"$CSD" db study --pgdata "$MNT/pgdata" --workload tpcb --scale "$SCALE" --fillfactor "$FILLFACTORS" \
  --threads "$THREADS" --time "${TIME}s" --report-interval 0 \
  --pg-set shared_buffers=512MB --pg-set wal_level=minimal --pg-set max_wal_senders=0 --pg-set max_wal_size=4GB \
  | sed -n '/^ *fillfactor threads/,$p'
