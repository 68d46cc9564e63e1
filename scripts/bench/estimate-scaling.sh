#!/usr/bin/env bash
# csdchar estimate: throughput per codec with 1 thread and with all cores,
# alternating, on a 512 MiB file of 70%-compressible data (a quarter of it
# incompressible). Prints MB/s per run and the scaling factor.
# Usage: scripts/bench/estimate-scaling.sh          env: ROUNDS=3 SIZE=512m
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}
SIZE=${SIZE:-512m}
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-estbench.XXXX)
trap 'rm -rf "$DIR"' EXIT
"$CSD" block --rw write --bs 1m --size "$SIZE" --compress 70 --direct 0 "$DIR/a" >/dev/null
"$CSD" block --rw write --bs 1m --size 128m --compress 0 --direct 0 "$DIR/b" >/dev/null
cat "$DIR/a" >/dev/null; cat "$DIR/b" >/dev/null # page cache: measure compression, not the disk
CORES=$(nproc)
mbs() { "$CSD" estimate "$DIR" --codec "$1" --threads "$2" --output-format json |
        python3 -c 'import json,sys; r=json.load(sys.stdin); print("%.0f" % (r["throughput_bytes_per_s"]/1e6))'; }
for codec in lz4 deflate-fixed deflate zstd; do
  one=(); all=()
  for _ in $(seq "$ROUNDS"); do one+=("$(mbs "$codec" 1)"); all+=("$(mbs "$codec" "$CORES")"); done
  m1=$(printf '%s\n' "${one[@]}" | sort -n | sed -n "$(( (ROUNDS+1)/2 ))p")
  mN=$(printf '%s\n' "${all[@]}" | sort -n | sed -n "$(( (ROUNDS+1)/2 ))p")
  printf '%-14s 1 thread: %5s MB/s (%s)   %s threads: %5s MB/s (%s)   scaling %.2fx\n' \
    "$codec" "$m1" "${one[*]}" "$CORES" "$mN" "${all[*]}" "$(python3 -c "print($mN/$m1)")"
done
