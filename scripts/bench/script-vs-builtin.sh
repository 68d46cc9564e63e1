#!/usr/bin/env bash
# pgbench custom scripts through csdchar (issue 41), alternating rounds on one managed cluster:
#  1. the TPC-B script as a script (`-f tpcb.sql`, pgbench's builtin text) against csdchar's built-in
#     tpcb (`--workload tpcb`): client CPU per transaction (user+sys of the client / transactions)
#     and TPS; the issue's target: the script within 10% of the built-in's CPU per transaction;
#  2. the same script against pgbench -f on the same server: TPS and client CPU per transaction.
# Usage: scripts/bench/script-vs-builtin.sh
#   env: ROUNDS=3 SCALE=10 TIME=10 CLIENTS="8 32" MODE=prepared SCRIPT=tpcb-like
#        (SCRIPT: tpcb-like, simple-update or select-only, pgbench's builtin text through -f and
#        csdchar's --workload beside it; or user: a 5-statement script of a user's kind, no built-in) NOBUILD= (set: use the release binary as built)
set -euo pipefail
cd "$(dirname "$0")/../.."
SCRIPT=${SCRIPT:-tpcb-like}
ROUNDS=${ROUNDS:-3}; SCALE=${SCALE:-10}; TIME=${TIME:-10}; CLIENTS=${CLIENTS:-8 32}; MODE=${MODE:-prepared}
[ -n "${NOBUILD:-}" ] || cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-scriptbench.XXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
PGDATA=$DIR/pgdata
"$CSD" db prepare --workload tpcb --scale "$SCALE" --pgdata "$PGDATA" --keep-running \
  --pg-set shared_buffers=512MB --pg-set max_wal_size=4GB --pg-set checkpoint_timeout=30min \
  --pg-set max_connections=100 >/dev/null 2>&1
PORT=$(sed -n 4p "$PGDATA/postmaster.pid")
SOCK=$(sed -n 5p "$PGDATA/postmaster.pid")
BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGBENCH=$BIN/pgbench
stop() { if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $PGDATA" >/dev/null; else "$BIN/pg_ctl" stop -m fast -D "$PGDATA" >/dev/null; fi; rm -rf "$DIR"; }
trap stop EXIT
URL="host=$SOCK port=$PORT user=postgres dbname=postgres"
export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
ratio() { python3 -c "print(f'{$1:.3f}')"; }
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
# pgbench's builtin, as a file; or a user's script: a lookup, a range, an update and a log insert.
if [ "$SCRIPT" = user ]; then
  cat > "$DIR/tpcb.sql" <<'SQL'
\set aid random(1, 100000 * :scale)
\set bid random(1, :scale)
\set delta random(-5000, 5000)
BEGIN;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
SELECT count(*) FROM pgbench_accounts WHERE aid BETWEEN :aid AND :aid + 20;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (1, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
SQL
else
  "$PGBENCH" --show-script="$SCRIPT" 2>&1 | grep -v "^--" > "$DIR/tpcb.sql"
fi
case $SCRIPT in
  tpcb-like) BUILTIN=tpcb ;; simple-update) BUILTIN=tpcb-simple-update ;;
  select-only) BUILTIN=tpcb-select-only ;; *) BUILTIN= ;;
esac

# Prints "tps cpu_seconds transactions" of one csdchar run with ARGS.
csd_run() { # clients args...
  local c=$1; shift
  /usr/bin/time -f "%U %S" -o "$DIR/t" "$CSD" db run --url "$URL" "$@" -M "$MODE" --scale "$SCALE" \
    --threads "$c" --time "${TIME}s" --report-interval 0 --output-format json > "$DIR/o"
  python3 -c "import json; r=json.load(open('$DIR/o')); t=open('$DIR/t').read().split(); print(r['steps'][0]['tps'], float(t[0])+float(t[1]), r['steps'][0]['transactions'])"
}
pg_run() { # clients
  /usr/bin/time -f "%U %S" -o "$DIR/t" "$PGBENCH" -M "$MODE" -n -f "$DIR/tpcb.sql" -s "$SCALE" -c "$1" -j "$1" -T "$TIME" > "$DIR/o" 2>/dev/null
  python3 - "$DIR" <<'PY'
import re, sys
d = sys.argv[1]
o = open(d + "/o").read(); t = open(d + "/t").read().split()
tx = re.search(r"number of transactions actually processed: (\d+)", o).group(1)
tps = re.search(r"tps = ([\d.]+)", o).group(1)
print(tps, float(t[0]) + float(t[1]), tx)
PY
}
for c in $CLIENTS; do
  sb=(); cb=(); sp=(); cp=()
  for i in $(seq "$ROUNDS"); do
    read -r f_tps f_cpu f_tx < <(csd_run "$c" -f "$DIR/tpcb.sql")
    if [ -n "$BUILTIN" ]; then
      read -r w_tps w_cpu w_tx < <(csd_run "$c" --workload "$BUILTIN")
    else # no built-in: the script against itself
      w_tps=$f_tps; w_cpu=$f_cpu; w_tx=$f_tx
    fi
    read -r p_tps p_cpu p_tx < <(pg_run "$c")
    sb+=("$(ratio "$f_tps/$w_tps")"); cb+=("$(ratio "($f_cpu/$f_tx)/($w_cpu/$w_tx)")")
    sp+=("$(ratio "$f_tps/$p_tps")"); cp+=("$(ratio "($f_cpu/$f_tx)/($p_cpu/$p_tx)")")
    printf '  %d clients round %d: -f tpcb.sql %8.1f tps %6.2fs cpu | --workload tpcb %8.1f tps %6.2fs cpu | pgbench -f %8.1f tps %6.2fs cpu\n' \
      "$c" "$i" "$f_tps" "$f_cpu" "$w_tps" "$w_cpu" "$p_tps" "$p_cpu"
  done
  printf '%s, %d clients, -M %s: script/built-in TPS %s (%s), CPU/tx %s (%s); script/pgbench TPS %s (%s), CPU/tx %s (%s)\n' \
    "$SCRIPT" "$c" "$MODE" "$(med "${sb[@]}")" "${sb[*]}" "$(med "${cb[@]}")" "${cb[*]}" \
    "$(med "${sp[@]}")" "${sp[*]}" "$(med "${cp[@]}")" "${cp[*]}"
done
