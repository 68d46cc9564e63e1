#!/bin/bash
# rate_iops=5000 for 30 s on zram: csdchar and fio, same job file, alternating rounds.
#   CSDCHAR=target/release/csdchar ROUNDS=3 RUNTIME=30 scripts/bench/rate-vs-fio.sh   (root; needs fio and zram)
# Compare lat (submission to completion): fio's io_uring engine stamps an I/O issued after
# io_uring_enter returns, so zram's inline work falls into fio's slat; csdchar stamps it before the
# enter that submits and waits, so the same work falls into its clat. lat is the same span in both.
set -e
bin=$(realpath "${CSDCHAR:-target/release/csdchar}")
source "$(dirname "$0")/zram.sh"
zram_add 1G
dev=$DEV
cd "$(mktemp -d)"
"$bin" block --rw write --bs 1m --size 1g --compress 50 --iodepth 8 $dev >/dev/null
cat > rate30.fio <<EOT
[global]
ioengine=io_uring
direct=1
filename=$dev
bs=4k
rw=randread
iodepth=4
runtime=${RUNTIME:-30}
time_based
rate_iops=5000
lat_percentiles=1
[r]
EOT
for round in $(seq 1 "${ROUNDS:-2}"); do
  fio --output-format=json rate30.fio > fio.$round.json
  "$bin" block --job-file rate30.fio --output-format json > cs.$round.json
done
for round in $(seq 1 "${ROUNDS:-2}"); do python3 -c "
import json
f = json.load(open('fio.$round.json'))['jobs'][0]['read']
c = json.load(open('cs.$round.json'))['read']
fp = f['lat_ns']['percentile']
cp = {p['percentile']: p['value_ns'] for p in c['lat']['percentiles']}
us = lambda ns: round(ns / 1000, 1)
print($round, 'fio', round(f['iops'], 1), 'slat/clat/lat mean us', us(f['slat_ns']['mean']), us(f['clat_ns']['mean']),
      us(f['lat_ns']['mean']), 'lat p50/p90/p99/p99.9 us', *[us(fp[k]) for k in ('50.000000', '90.000000', '99.000000', '99.900000')])
print($round, 'csdchar', round(c['iops'], 1), 'slat/clat/lat mean us', us(c['slat']['mean_ns']), us(c['clat']['mean_ns']),
      us(c['lat']['mean_ns']), 'lat p50/p90/p99/p99.9 us', *[us(cp[p]) for p in (50.0, 90.0, 99.0, 99.9)])"; done
