#!/usr/bin/env bash
# csdchar db run vs sysbench 1.x on the same PostgreSQL cluster and tables,
# alternating A B A B: TPS ratio and client CPU per transaction ratio (user+sys
# of the client process / transactions; the server is not the client's child).
# Usage: scripts/bench/db-vs-sysbench.sh     env: ROUNDS=3 TIME=10 THREADS=8 TABLES=4 TABLE_SIZE=100000 WORKLOADS="..."
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}; TIME=${TIME:-10}; THREADS=${THREADS:-8}; TABLES=${TABLES:-4}; TABLE_SIZE=${TABLE_SIZE:-100000}
command -v sysbench >/dev/null || { apt-get update -qq && apt-get install -y -qq sysbench >/dev/null; }
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-dbbench.XXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
PGDATA=$DIR/pgdata
# One cluster for both, left running between the runs, stopped at the end.
"$CSD" db prepare --pgdata "$PGDATA" --keep-running --tables "$TABLES" --table-size "$TABLE_SIZE" \
  --pg-set shared_buffers=256MB --pg-set max_connections=300 >/dev/null
PORT=$(sed -n 4p "$PGDATA/postmaster.pid")
BIN=$(pg_config --bindir)
stop() { if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $PGDATA" >/dev/null; else "$BIN/pg_ctl" stop -m fast -D "$PGDATA" >/dev/null; fi; rm -rf "$DIR"; }
trap stop EXIT
URL="host=127.0.0.1 port=$PORT user=postgres dbname=postgres"

# Prints "tps cpu_seconds".
csd_run() { # workload
  /usr/bin/time -f "%U %S" -o "$DIR/t" "$CSD" db run --url "$URL" --workload "${1//_/-}" --tables "$TABLES" \
    --table-size "$TABLE_SIZE" --threads "$THREADS" --time "${TIME}s" --report-interval 0 --output-format json > "$DIR/o"
  python3 -c "import json; r=json.load(open('$DIR/o')); t=open('$DIR/t').read().split(); print(r['steps'][0]['tps'], float(t[0])+float(t[1]), r['steps'][0]['transactions'])"
}
sb_run() { # workload
  /usr/bin/time -f "%U %S" -o "$DIR/t" sysbench "$1" --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$PORT" \
    --pgsql-user=postgres --pgsql-db=postgres --tables="$TABLES" --table-size="$TABLE_SIZE" --threads="$THREADS" \
    --time="$TIME" --rand-type=uniform run > "$DIR/o"
  python3 - "$DIR" <<'PY'
import re, sys
d = sys.argv[1]
o = open(d + "/o").read(); t = open(d + "/t").read().split()
m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", o)
print(m.group(2), float(t[0]) + float(t[1]), m.group(1))
PY
}
for w in ${WORKLOADS:-oltp_read_only oltp_read_write oltp_point_select}; do
  tr=(); cr=()
  for r in $(seq "$ROUNDS"); do
    read -r a_tps a_cpu a_tx < <(csd_run "$w")
    read -r b_tps b_cpu b_tx < <(sb_run "$w")
    tr+=("$(python3 -c "print(f'{$a_tps/$b_tps:.3f}')")")
    cr+=("$(python3 -c "print(f'{($a_cpu/$a_tx)/($b_cpu/$b_tx):.3f}')")")
    printf '  %-18s round %d: csdchar %8.1f tps %6.2fs cpu | sysbench %8.1f tps %6.2fs cpu\n' "$w" "$r" "$a_tps" "$a_cpu" "$b_tps" "$b_cpu"
  done
  med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
  printf '%-18s TPS ratio median %s (%s); client CPU per transaction ratio median %s (%s)\n' \
    "$w" "$(med "${tr[@]}")" "${tr[*]}" "$(med "${cr[@]}")" "${cr[*]}"
done
