#!/bin/bash
# rate_iops=5000 for 30 s on zram: csdchar and fio, same job file, alternating.
#   CSDCHAR=target/release/csdchar scripts/bench/rate-vs-fio.sh   (root; needs fio and zram)
set -e
bin=$(realpath "${CSDCHAR:-target/release/csdchar}")
cd "$(mktemp -d)"
id=$(cat /sys/class/zram-control/hot_add)
trap 'echo 1 > /sys/block/zram$id/reset; echo $id > /sys/class/zram-control/hot_remove' EXIT
echo lz4 > /sys/block/zram$id/comp_algorithm
echo 1G > /sys/block/zram$id/disksize
dev=/dev/zram$id
"$bin" block --rw write --bs 1m --size 1g --compress 50 --iodepth 8 $dev >/dev/null
cat > rate30.fio <<EOT
[global]
ioengine=io_uring
direct=1
filename=$dev
bs=4k
rw=randread
iodepth=4
runtime=30
time_based
rate_iops=5000
[r]
EOT
for round in 1 2; do
  fio --output-format=json rate30.fio > fio.$round.json
  "$bin" block --job-file rate30.fio --output-format fio-json > cs.$round.json
done
for f in fio.*.json cs.*.json; do python3 -c "
import json,sys; j=json.load(open('$f'))['jobs'][0]['read']; p=j['clat_ns']['percentile']; l=j['lat_ns']
print('$f', round(j['iops'],1), 'lat mean us', round(l['mean']/1000,1), 'clat p50/p99/p99.9 us', p['50.000000']/1000, p['99.000000']/1000, p['99.900000']/1000)"; done
