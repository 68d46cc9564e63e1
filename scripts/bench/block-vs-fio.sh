#!/usr/bin/env bash
# csdchar block vs fio on the same zram device, same parameters, alternating
# A B A B; prints each round's IOPS ratio and the median, then the compression
# fidelity table (zram lz4 logical/physical after a --compress write).
#
# Usage (root): scripts/bench/block-vs-fio.sh      env: ROUNDS=7 RUNTIME=5 ONLY=iops|randwrite|fidelity CSDCHAR=
# Needs: cargo, fio (installed with apt if missing), zram (modprobe zram).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-7}
RUNTIME=${RUNTIME:-5}
[ "$(id -u)" = 0 ] || { echo "block-vs-fio: needs root (zram)" >&2; exit 2; }
command -v fio >/dev/null || { apt-get update -qq && apt-get install -y -qq fio >/dev/null; }
# CSDCHAR=path runs that binary (e.g. a copy of an earlier build) instead of building.
[ -n "${CSDCHAR:-}" ] || cargo build --release -q -p csdchar-cli
CSD=${CSDCHAR:-$PWD/target/release/csdchar}

source scripts/bench/zram.sh
zram_add 1G

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
csd_iops() { "$CSD" block "$@" --output-format json | python3 -c 'import json,sys; r=json.load(sys.stdin); print((r["read"] or {"iops":0})["iops"] + (r["write"] or {"iops":0})["iops"])'; }
fio_iops() { fio --name=b --output-format=json "$@" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]; print(j["read"]["iops"]+j["write"]["iops"])'; }

compare() { # label, csdchar args, fio args
  local label=$1 cargs=$2 fargs=$3 ratios=() a b
  for r in $(seq "$ROUNDS"); do
    a=$(csd_iops $cargs); b=$(fio_iops $fargs)
    ratios+=("$(python3 -c "print(f'{$a/$b:.3f}')")")
    printf '  %-44s round %d: csdchar %9.0f  fio %9.0f  ratio %s\n' "$label" "$r" "$a" "$b" "${ratios[-1]}"
  done
  printf '%-46s median ratio %s (rounds: %s)\n' "$label" "$(printf '%s\n' "${ratios[@]}" | median)" "${ratios[*]}"
}

ONLY=${ONLY:-}
if [ "$ONLY" != fidelity ]; then
echo "== setup: $DEV lz4 2G, prefilled with 50%-compressible data"
zram_reset 2G
"$CSD" block --rw write --bs 128k --iodepth 16 --compress 50 "$DEV" --output-format json >/dev/null
F="--filename=$DEV --direct=1 --bs=4k --runtime=$RUNTIME --time_based --ioengine=io_uring --rw=randread"
C="$DEV --bs 4k --runtime ${RUNTIME}s --time-based --rw randread"
# Defaults against defaults; then fio tuned as t/io_uring runs, and csdchar
# given the same batching (it always registers buffers and the file).
TUNED="--fixedbufs --registerfiles --iodepth_batch_submit=32 --iodepth_batch_complete_min=32 --iodepth_batch_complete_max=32"
CTUNED="--iodepth-batch-submit 32 --iodepth-batch-complete 32"
if [ "$ONLY" != randwrite ]; then
compare "randread qd32, both defaults"  "$C --iodepth 32"  "$F --iodepth=32"
compare "randread qd128, both defaults" "$C --iodepth 128" "$F --iodepth=128"
compare "randread qd32, batch 32/32, fio fixedbufs+registerfiles"  "$C --iodepth 32 $CTUNED"  "$F --iodepth=32 $TUNED"
compare "randread qd128, batch 32/32, fio fixedbufs+registerfiles" "$C --iodepth 128 $CTUNED" "$F --iodepth=128 $TUNED"
fi
# Random writes of 75%-compressible data (issue 43): the same layout on both
# sides (random head, then filler, per 4 KiB chunk; fio refills its buffers per
# I/O as it does whenever buffer_compress_percentage is set); fio's filler is
# zeros, csdchar's default is the non-zero repeat filler.
W="$DEV --bs 4k --runtime ${RUNTIME}s --time-based --rw randwrite --iodepth 16 --compress 75 --compress-chunk 4k"
FW="--filename=$DEV --direct=1 --bs=4k --runtime=$RUNTIME --time_based --ioengine=io_uring --rw=randwrite --iodepth=16 --buffer_compress_percentage=75 --buffer_compress_chunk=4k"
compare "randwrite qd16 75%, csdchar zeros (fio's data)" "$W --compress-fill zeros" "$FW"
compare "randwrite qd16 75%, csdchar repeat (default)" "$W" "$FW"
# Both told to reap completions 8 at a time (fewer wake-ups, coarser latencies).
compare "randwrite qd16 75%, zeros, complete 8 at a time" "$W --compress-fill zeros --iodepth-batch-complete 8" \
  "$FW --iodepth_batch_complete_min=8 --iodepth_batch_complete_max=16"
[ "$ONLY" = randwrite ] && exit 0
compare "null engine randread qd32, 1 job" \
  "--engine null --rw randread --bs 4k --iodepth 32 --size 1g --runtime ${RUNTIME}s --time-based" \
  "--ioengine=null --rw=randread --bs=4k --iodepth=32 --size=1g --runtime=$RUNTIME --time_based"

fi
[ "$ONLY" = iops ] && exit 0
echo "== compression fidelity: 512 MiB sequential write, bs 128k, qd16, chunk 4k, zram lz4"
printf '%-8s %-6s %-9s %12s %12s %10s %8s %8s\n' tool fill p% orig compr same ratio ideal-err
for p in 0 25 50 75 90; do
  ideal=$(python3 -c "print(100/(100-$p))")
  for fill in zeros repeat; do
    zram_reset 1G
    "$CSD" block --rw write --bs 128k --iodepth 16 --size 512m --compress "$p" --compress-chunk 4k --compress-fill $fill "$DEV" --output-format json >/dev/null
    read -r orig compr _ _ _ same _ <"$SYS/mm_stat"
    python3 -c "r=$orig/max($compr,1); print(f'%-8s %-6s %-9s %12d %12d %10d %8.3f %+7.1f%%' % ('csdchar','$fill',$p,$orig,$compr,$same,r,(r/$ideal-1)*100))"
  done
  zram_reset 1G
  fio --name=f --filename="$DEV" --direct=1 --rw=write --bs=128k --iodepth=16 --ioengine=io_uring --size=512m \
      --buffer_compress_percentage="$p" --buffer_compress_chunk=4k --refill_buffers --output-format=terse >/dev/null
  read -r orig compr _ _ _ same _ <"$SYS/mm_stat"
  python3 -c "r=$orig/max($compr,1); print(f'%-8s %-6s %-9s %12d %12d %10d %8.3f %+7.1f%%' % ('fio','zeros',$p,$orig,$compr,$same,r,(r/$ideal-1)*100))"
done
