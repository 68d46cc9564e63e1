#!/bin/bash
# io_submit_mode=offload at rate_iops=200 (fio's examples/fixed-rate-submission.fio, small and short): fio and
# csdchar on an 8 MiB file with direct I/O, alternating rounds; achieved IOPS and the gaps between issues
# (completion time minus latency, from each tool's per-I/O lat log).
#   CSDCHAR=target/debug/csdchar ROUNDS=2 scripts/bench/offload-vs-fio.sh
# fio 3.33 now and then never ends with offload: each run is killed after 20 s and the round says so.
set -u
CSDCHAR=${CSDCHAR:-csdchar}
ROUNDS=${ROUNDS:-2}
dir=$(mktemp -d -p "${TMPDIR:-/var/tmp}")
trap 'rm -rf "$dir"' EXIT
cd "$dir"
head -c 8M /dev/zero > d8
for r in $(seq "$ROUNDS"); do for who in fio csdchar; do
  rm -rf o && mkdir o
  printf "[fixed-rate-submit]\nfilename=$dir/d8\nsize=8m\nrw=read\nioengine=libaio\niodepth=32\nthread\ndirect=1\nio_submit_mode=offload\nrate_iops=200\nruntime=2\ntime_based\nwrite_lat_log=$dir/o/j\n" > off.fio
  if [ "$who" = fio ]; then
    timeout -s KILL 20 fio --output-format=json --output=o.json off.fio >/dev/null 2>&1 || { echo "$r fio hung (killed after 20 s)"; continue; }
  else
    timeout -s KILL 20 "$CSDCHAR" block --job-file off.fio --output-format fio-json > o.json 2>/dev/null
  fi
  python3 - "$r" "$who" <<'PY'
import json, sys
j = json.load(open('o.json'))['jobs'][0]['read']
iss = sorted(float(l.split(',')[0]) - float(l.split(',')[1]) / 1e6 for l in open('o/j_lat.1.log'))
g = sorted(b - a for a, b in zip(iss, iss[1:]))
print(sys.argv[1], sys.argv[2], 'iops %.1f' % j['iops'],
      'gap ms p10/p50/p90 %.2f/%.2f/%.2f' % (g[len(g) // 10], g[len(g) // 2], g[len(g) * 9 // 10]),
      'clat mean us %.0f' % (j['clat_ns']['mean'] / 1e3))
PY
done; done
