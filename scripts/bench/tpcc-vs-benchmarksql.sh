#!/usr/bin/env bash
# csdchar's TPC-C against real BenchmarkSQL 5.0 on one PostgreSQL cluster csdchar manages
# (shared_buffers 256MB, both tools over TCP on 127.0.0.1), alternating rounds:
#  1. build: BenchmarkSQL's runDatabaseBuild.sh (tables, LoadData with loadWorkers=LOAD_WORKERS,
#     indexes, foreign keys, history id, vacuum analyze) vs `csdchar db prepare --workload tpcc`
#     (--threads LOAD_WORKERS) of the same WAREHOUSES, wall time of each;
#  2. run, on the database BenchmarkSQL built (csdchar needs none of its own objects): at each of
#     TERMINALS, BenchmarkSQL's runBenchmark.sh (runMins=1) vs csdchar statement mode for 60 s, then
#     csdchar procedure mode once (HammerDB's way, for scale): tpmC, the per-type mix, and client
#     CPU per transaction (user+sys of the client process tree / transactions; BenchmarkSQL's
#     includes its JVM's start-up, as a user pays it).
# BenchmarkSQL exits 0 after SQL errors: its log is checked and any error fails the script.
# Needs java, javac and mvn (installed with apt when missing), git or BMSQL_SRC (a 5.0 release tree).
# Usage: scripts/bench/tpcc-vs-benchmarksql.sh
#   env: ROUNDS=2 WAREHOUSES=2 TERMINALS="1 4 8" LOAD_WORKERS=4 BMSQL_SRC= JDBC=42.7.4
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${ROUNDS:-2}; WAREHOUSES=${WAREHOUSES:-2}; TERMINALS=${TERMINALS:-1 4 8}
LOAD_WORKERS=${LOAD_WORKERS:-4}; JDBC=${JDBC:-42.7.4}
for tool in java javac mvn; do
  command -v $tool >/dev/null || { apt-get update -qq && apt-get install -y -qq default-jdk-headless maven >/dev/null; break; }
done
cargo build --release -q -p csdchar-cli
CSD=$PWD/target/release/csdchar
DIR=$(mktemp -d /var/tmp/csdchar-bmsql.XXXX)
chmod 755 "$DIR"
BIN=$(pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
PGDATA=$DIR/pgdata
stop() {
  [ -f "$PGDATA/postmaster.pid" ] && if [ "$(id -u)" = 0 ]; then su postgres -c "$BIN/pg_ctl stop -m fast -D $PGDATA" >/dev/null
  else "$BIN/pg_ctl" stop -m fast -D "$PGDATA" >/dev/null; fi
  rm -rf "$DIR"
}
trap stop EXIT

# BenchmarkSQL 5.0 from its release source (commit da69cdb, "Release 5.0"), built with javac;
# the PostgreSQL JDBC driver and log4j 1.2.17 from Maven Central.
B=$DIR/benchmarksql
if [ -n "${BMSQL_SRC:-}" ]; then cp -r "$BMSQL_SRC" "$B"
else git clone -q https://github.com/petergeoghegan/benchmarksql "$B" && git -C "$B" checkout -q da69cdb; fi
for a in org.postgresql:postgresql:$JDBC log4j:log4j:1.2.17; do mvn -B -q dependency:get -Dartifact=$a >/dev/null; done
rm -f "$B"/lib/postgres/*.jar
cp ~/.m2/repository/org/postgresql/postgresql/$JDBC/postgresql-$JDBC.jar "$B/lib/postgres/"
cp ~/.m2/repository/log4j/log4j/1.2.17/log4j-1.2.17.jar "$B/lib/"
mkdir -p "$B/build" "$B/dist"
javac -nowarn -d "$B/build" -cp "$B/lib/*:$B/lib/postgres/*" "$B"/src/*/*.java 2>/dev/null
(cd "$B/build" && jar cf "$B/dist/BenchmarkSQL-5.0.jar" .)

"$CSD" db prepare --workload tpcc --warehouses 1 --pgdata "$PGDATA" --listen 127.0.0.1 --keep-running \
  --pg-set shared_buffers=256MB --pg-set max_wal_size=4GB --pg-set checkpoint_timeout=30min >/dev/null 2>&1
PORT=$(sed -n 4p "$PGDATA/postmaster.pid")
PASSWORD=$(awk -F: '{print $5}' "$PGDATA/csdchar-password")
URL="host=127.0.0.1 port=$PORT user=postgres password=$PASSWORD dbname=postgres"
# BenchmarkSQL's objects live in public; csdchar's own loads go to another schema.
"$CSD" db cleanup --url "$URL" --workload tpcc >/dev/null
props() { # terminals
  cat > "$B/run/bench.props" <<EOF
db=postgres
driver=org.postgresql.Driver
conn=jdbc:postgresql://127.0.0.1:$PORT/postgres
user=postgres
password=$PASSWORD
warehouses=$WAREHOUSES
loadWorkers=$LOAD_WORKERS
terminals=$1
runTxnsPerTerminal=0
runMins=1
limitTxnsPerMin=0
terminalWarehouseFixed=true
newOrderWeight=45
paymentWeight=43
orderStatusWeight=4
deliveryWeight=4
stockLevelWeight=4
resultDirectory=$DIR/result_%tY-%tm-%td_%tH%tM%tS
EOF
}
now() { date +%s.%N; }
med() { printf '%s\n' "$@" | sort -g | sed -n "$(( ($#+1)/2 ))p"; }
# Fails when a BenchmarkSQL log holds an error (it exits 0 after them).
check_log() {
  if grep -Eq "ERROR|Exception|FATAL" "$1"; then echo "BenchmarkSQL reported errors:"; grep -E "ERROR|Exception|FATAL" "$1" | head; exit 1; fi
}

echo "== build, $WAREHOUSES warehouses (wall seconds; BenchmarkSQL loadWorkers=$LOAD_WORKERS, csdchar --threads $LOAD_WORKERS)"
b_build=(); c_build=()
props 1
for i in $(seq "$ROUNDS"); do
  (cd "$B/run" && ./runDatabaseDestroy.sh bench.props >/dev/null 2>&1 || true)
  t0=$(now); (cd "$B/run" && ./runDatabaseBuild.sh bench.props > "$DIR/build.log" 2>&1); t1=$(now)
  check_log "$DIR/build.log"
  b_build+=("$(python3 -c "print(round($t1-$t0, 2))")")
  t0=$(now)
  "$CSD" db prepare --url "$URL" --schema csdchar_build --workload tpcc --warehouses "$WAREHOUSES" \
    --threads "$LOAD_WORKERS" --force >/dev/null 2>&1
  t1=$(now)
  c_build+=("$(python3 -c "print(round($t1-$t0, 2))")")
  "$CSD" db cleanup --url "$URL" --schema csdchar_build --workload tpcc >/dev/null
  echo "  round $i: BenchmarkSQL ${b_build[-1]} s | csdchar ${c_build[-1]} s"
done
printf 'build: csdchar/BenchmarkSQL %s (medians %s s vs %s s)\n' \
  "$(python3 -c "print(f'{$(med "${c_build[@]}")/$(med "${b_build[@]}"):.2f}x')")" "$(med "${c_build[@]}")" "$(med "${b_build[@]}")"

# "tpmC transactions cpu_s mix" of one BenchmarkSQL run.
bmsql_run() { # terminals
  props "$1"
  local log=$DIR/run.log
  (cd "$B/run" && /usr/bin/time -f "%U %S" -o "$DIR/cpu" ./runBenchmark.sh bench.props > "$log" 2>&1)
  check_log "$log"
  local res; res=$(ls -td "$DIR"/result_* | head -1)
  python3 - "$log" "$DIR/cpu" "$res/data/result.csv" <<'PY'
import re, sys, collections
log = open(sys.argv[1]).read()
tpmc = float(re.search(r"Measured tpmC \(NewOrders\) = ([\d.]+)", log).group(1))
n = int(re.search(r"Transaction Count = (\d+)", log).group(1))
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
kinds = collections.Counter()
for line in open(sys.argv[3]).read().splitlines()[1:]:
    f = line.split(",")
    if f[4] != "DELIVERY":  # the background part is counted as the delivery
        kinds[f[4]] += 1
total = sum(kinds.values())
mix = "/".join(f"{100*kinds[k]/total:.1f}" for k in ["NEW_ORDER", "PAYMENT", "ORDER_STATUS", "DELIVERY_BG", "STOCK_LEVEL"])
print(tpmc, n, u + s, mix)
PY
  rm -rf "$res"
}
# The same of one csdchar run (CPU: the csdchar process).
csd_run() { # terminals mode
  /usr/bin/time -f "%U %S" -o "$DIR/cpu" "$CSD" db run --url "$URL" --workload tpcc --tpcc-mode "$2" \
    --threads "$1" --time 60s --output-format json --output "$DIR/csd.json" >/dev/null 2>&1
  python3 - "$DIR/csd.json" "$DIR/cpu" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["steps"][0]
u, c = map(float, open(sys.argv[2]).read().split()[-2:])
by = {t["name"]: t["transactions"] for t in s["by_type"]}
total = sum(by.values())
mix = "/".join(f"{100*by.get(k,0)/total:.1f}" for k in ["new_order", "payment", "order_status", "delivery", "stock_level"])
print(round(s["tpmc"], 2), s["transactions"], u + c, mix)
PY
}
echo "== run, $WAREHOUSES warehouses, 60 s per run, TCP; mix: new_order/payment/order_status/delivery/stock_level %"
for t in $TERMINALS; do
  b_tpm=(); c_tpm=(); b_cpu=(); c_cpu=()
  for i in $(seq "$ROUNDS"); do
    read -r tpm n cpu mix < <(bmsql_run "$t")
    b_tpm+=("$tpm"); b_cpu+=("$(python3 -c "print($cpu*1000/$n)")")
    echo "  $t terminal(s) round $i: BenchmarkSQL tpmC $tpm, $n transactions, client CPU $(printf %.3f "${b_cpu[-1]}") ms/txn, mix $mix"
    read -r tpm n cpu mix < <(csd_run "$t" statements)
    c_tpm+=("$tpm"); c_cpu+=("$(python3 -c "print($cpu*1000/$n)")")
    echo "  $t terminal(s) round $i: csdchar     tpmC $tpm, $n transactions, client CPU $(printf %.3f "${c_cpu[-1]}") ms/txn, mix $mix"
  done
  read -r ptpm _ _ _ < <(csd_run "$t" procedures)
  printf '%s terminal(s): tpmC statements/BenchmarkSQL %s (medians %s vs %s); client CPU per txn %s (%s vs %s ms); procedure mode tpmC %s (%s x statements)\n' \
    "$t" "$(python3 -c "print(f'{$(med "${c_tpm[@]}")/$(med "${b_tpm[@]}"):.2f}x')")" "$(med "${c_tpm[@]}")" "$(med "${b_tpm[@]}")" \
    "$(python3 -c "print(f'{$(med "${c_cpu[@]}")/$(med "${b_cpu[@]}"):.3f}x')")" "$(printf %.3f "$(med "${c_cpu[@]}")")" "$(printf %.3f "$(med "${b_cpu[@]}")")" \
    "$ptpm" "$(python3 -c "print(f'{$ptpm/$(med "${c_tpm[@]}"):.2f}')")"
done
