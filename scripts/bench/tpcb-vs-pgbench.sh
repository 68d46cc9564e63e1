#!/usr/bin/env bash
# csdchar's TPC-B vs pgbench on the same PostgreSQL cluster, alternating:
#  1. load time: `csdchar db prepare --workload tpcb` vs `pgbench -i` at SCALE, client-side
#     (binary COPY vs pgbench's COPY, steps dtgvp) and server-side (--init-mode server vs -I dtGvp);
#  2. TPS and client CPU per transaction (user+sys of the client process / transactions) at
#     CLIENTS clients, csdchar --protocol prepared vs pgbench -M prepared -n (no vacuum before the run).
# Loads print each tool's per-step split (wall, drop, create, generate, vacuum, primary keys) and
# the per-step medians; SCALES and MODES choose the loads, ONLY=load stops after them.
# Usage: scripts/bench/tpcb-vs-pgbench.sh
#   env: ROUNDS=3 SCALE=20 TIME=10 CLIENTS="1 8" SCALES="$SCALE" MODES="client server" ONLY=
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-3}; SCALE=${SCALE:-20}; TIME=${TIME:-10}; CLIENTS=${CLIENTS:-1 8}
SCALES=${SCALES:-$SCALE}; MODES=${MODES:-client server}
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-tpcbbench.XXXX)
[ "$(id -u)" = 0 ] && chown postgres "$DIR"
PGDATA=$DIR/pgdata
"$CSD" db prepare --workload tpcb --scale 1 --pgdata "$PGDATA" --keep-running \
  --pg-set shared_buffers=512MB --pg-set max_wal_size=4GB --pg-set checkpoint_timeout=30min >/dev/null 2>&1
PORT=$(sed -n 4p "$PGDATA/postmaster.pid")
# Managed clusters listen on their private Unix socket only; every client uses it.
SOCK=$(sed -n 5p "$PGDATA/postmaster.pid")
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGBENCH=$BIN/pgbench
stop() { if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $PGDATA" >/dev/null; else "$BIN/pg_ctl" stop -m fast -D "$PGDATA" >/dev/null; fi; rm -rf "$DIR"; }
trap stop EXIT
URL="host=$SOCK port=$PORT user=postgres dbname=postgres"
export PGHOST=$SOCK PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
ratio() { python3 -c "print(f'{$1:.3f}')"; }
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
# sb_run and pg_run.
. scripts/bench/peers.sh

# "wall drop create generate vacuum keys" of one load: csdchar's split line (its --force drop is
# the wall time's rest) or pgbench -i's "done in" line.
split() { # tool logfile wall
  python3 - "$@" <<'PY'
import re, sys
tool, log, wall = sys.argv[1], open(sys.argv[2]).read(), float(sys.argv[3])
f = lambda k: float(re.search(k + r" ([\d.]+) s", log).group(1))
if tool == "csdchar":
    gen = f("generate"); c, v, p = f("create tables"), f("vacuum"), f("primary keys")
    print(f"{wall:.3f} {wall - c - gen - v - p:.3f} {c:.3f} {gen:.3f} {v:.3f} {p:.3f}")
else:
    gen = f("(?:client|server)-side generate")
    print(f"{wall:.3f} {f('drop tables'):.3f} {f('create tables'):.3f} {gen:.3f} {f('vacuum'):.3f} {f('primary keys'):.3f}")
PY
}
timed() { # logfile command... : prints the wall seconds
  local out=$1 t0 t1; shift; t0=$(date +%s.%N); "$@" >"$out" 2>&1; t1=$(date +%s.%N)
  python3 -c "print(f'{$t1-$t0:.3f}')"
}
for scale in $SCALES; do
for mode in $MODES; do
  if [ "$mode" = client ]; then csd_extra=(); pg_steps=dtgvp; else csd_extra=(--init-mode server); pg_steps=dtGvp; fi
  r=(); A=(); B=()
  for i in $(seq "$ROUNDS"); do
    a=$(timed "$DIR/a" "$CSD" db prepare --url "$URL" --workload tpcb --scale "$scale" --force "${csd_extra[@]}")
    b=$(timed "$DIR/b" "$PGBENCH" -i -I "$pg_steps" -s "$scale")
    sa=$(split csdchar "$DIR/a" "$a"); sb=$(split pgbench "$DIR/b" "$b")
    A+=("$sa"); B+=("$sb"); r+=("$(ratio "$a/$b")")
    printf '  load %-6s scale %d round %d (wall drop create generate vacuum keys, s): csdchar %s | pgbench -i -I %s %s\n' \
      "$mode" "$scale" "$i" "$sa" "$pg_steps" "$sb"
  done
  printf 'load %-6s scale %d: time ratio csdchar/pgbench median %s (%s)\n' "$mode" "$scale" "$(med "${r[@]}")" "${r[*]}"
  # Per step, the median of each tool's rounds and their ratio.
  python3 - "${#A[@]}" "${A[@]}" "${B[@]}" <<'PY'
import statistics, sys
n = int(sys.argv[1]); rows = [list(map(float, r.split())) for r in sys.argv[2:]]
a, b = rows[:n], rows[n:]
for k, name in enumerate(["wall", "drop", "create", "generate", "vacuum", "primary keys"]):
    ma, mb = statistics.median(r[k] for r in a), statistics.median(r[k] for r in b)
    print(f"    {name:<13} csdchar {ma:6.3f} s  pgbench {mb:6.3f} s  ratio {ma / mb if mb else float('nan'):.3f}")
PY
done
done
[ "${ONLY:-}" = load ] && exit 0

# Prints "tps cpu_seconds transactions" (pg_run adds max RSS).
csd_run() {
  /usr/bin/time -f "%U %S" -o "$DIR/t" "$CSD" db run --url "$URL" --workload tpcb --scale "$SCALE" --protocol prepared \
    --threads "$1" --time "${TIME}s" --report-interval 0 --output-format json > "$DIR/o"
  python3 -c "import json; r=json.load(open('$DIR/o')); t=open('$DIR/t').read().split(); print(r['steps'][0]['tps'], float(t[0])+float(t[1]), r['steps'][0]['transactions'])"
}
"$CSD" db prepare --url "$URL" --workload tpcb --scale "$SCALE" --force >/dev/null 2>&1
for c in $CLIENTS; do
  tr=(); cr=()
  for i in $(seq "$ROUNDS"); do
    read -r a_tps a_cpu a_tx < <(csd_run "$c")
    read -r b_tps b_cpu b_tx _ < <(pg_run "$c")
    tr+=("$(ratio "$a_tps/$b_tps")"); cr+=("$(ratio "($a_cpu/$a_tx)/($b_cpu/$b_tx)")")
    printf '  tpcb-like %d client(s) round %d: csdchar %8.1f tps %6.2fs cpu | pgbench -M prepared %8.1f tps %6.2fs cpu\n' \
      "$c" "$i" "$a_tps" "$a_cpu" "$b_tps" "$b_cpu"
  done
  printf 'tpcb-like %d client(s): TPS ratio %s (%s), client CPU per transaction ratio %s (%s)\n' \
    "$c" "$(med "${tr[@]}")" "${tr[*]}" "$(med "${cr[@]}")" "${cr[*]}"
done
