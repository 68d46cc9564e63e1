#!/usr/bin/env bash
# 4K random writes, QD16, 75%-compressible, on zram: two csdchar builds and fio
# alternating (before, fio, now) round by round, each under perf stat; prints
# IOPS, CPU µs per I/O (task-clock of all the process's threads, io-wq workers
# included) and context switches per I/O.
#
# Usage (root): BEFORE=/path/to/old/csdchar scripts/bench/randwrite-cpu-per-io.sh
#   env: ROUNDS=5 RUNTIME=5 FILL=zeros|repeat CSDCHAR= (BEFORE unset: fio and this build only)
# Needs: cargo, fio, perf, zram (modprobe zram).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-5}
RUNTIME=${RUNTIME:-5}
FILL=${FILL:-zeros}
[ "$(id -u)" = 0 ] || { echo "randwrite-cpu-per-io: needs root (zram)" >&2; exit 2; }
[ -n "${CSDCHAR:-}" ] || cargo build --release -q -p csdchar-cli
CSD=${CSDCHAR:-$PWD/target/release/csdchar}
source scripts/bench/zram.sh
TMP=$(mktemp -d)
extra_cleanup() { rm -rf "$TMP"; }
zram_add 2G
"$CSD" block --rw write --bs 128k --iodepth 16 --compress 50 "$DEV" --output-format json >/dev/null

run() { # name, command...
  local name=$1; shift
  perf stat -x, -e task-clock,context-switches -o "$TMP/stat" -- "$@" >"$TMP/out" 2>/dev/null
  python3 - "$name" "$TMP" <<'PY'
import json, sys
name, tmp = sys.argv[1], sys.argv[2]
stat = {l.split(',')[2]: float(l.split(',')[0]) for l in open(f'{tmp}/stat') if l.count(',') > 3 and l[0].isdigit()}
j = json.load(open(f'{tmp}/out'))
w = j['jobs'][0]['write'] if name == 'fio' else j['write']
n = w['total_ios'] if name == 'fio' else w['ios']
print(f"{name} {w['iops']:8.0f} IOPS {stat['task-clock'] * 1000 / n:5.2f} us/IO {stat['context-switches'] / n:4.2f} cs/IO |", end=' ')
PY
}
C="$DEV --bs 4k --runtime ${RUNTIME}s --time-based --rw randwrite --iodepth 16 --compress 75 --compress-chunk 4k --compress-fill $FILL --output-format json"
for r in $(seq "$ROUNDS"); do
  printf 'round %d: ' "$r"
  [ -z "${BEFORE:-}" ] || run before "$BEFORE" block $C
  run fio fio --name=b --filename="$DEV" --direct=1 --bs=4k --runtime="$RUNTIME" --time_based --ioengine=io_uring \
    --rw=randwrite --iodepth=16 --buffer_compress_percentage=75 --buffer_compress_chunk=4k --output-format=json
  run now "$CSD" block $C
  echo "load $(cut -d' ' -f1 /proc/loadavg)"
done
