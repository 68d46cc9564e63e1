#!/usr/bin/env bash
# Reads every job file in fio's examples/ with `csdchar block --job-file F --parse-only` and
# counts the files csdchar would run with fio's semantics and those it refuses, with the
# options refused most often. fio's source: FIO_SRC (default: a clone in /var/tmp).
#
#   scripts/bench/fio-examples.sh [FIO_SRC]
set -euo pipefail
cd "$(dirname "$0")/../.."
src=${1:-${FIO_SRC:-/var/tmp/csdchar-fio-src}}
if [[ ! -d $src/examples ]]; then
  git clone --quiet --depth 1 https://github.com/axboe/fio "$src"
fi
cargo build -q -p csdchar-cli
bin=target/debug/csdchar
ok=0; refused=0; invalid=0
refusals=$(mktemp)
trap 'rm -f "$refusals"' EXIT
# Variables the xnvme examples expect (fio substitutes "" for an unset one, and so does csdchar).
export FIO_RW=${FIO_RW:-randread} FIO_BS=${FIO_BS:-4k} FIO_IODEPTH=${FIO_IODEPTH:-1} FIO_DIR=${FIO_DIR:-/tmp}
for f in "$src"/examples/*.fio; do
  if out=$(cd "$src/examples" && "$OLDPWD/$bin" block --job-file "$f" --parse-only 2>&1 >/dev/null); then
    ok=$((ok + 1))
  elif grep -q "does not implement" <<<"$out"; then
    refused=$((refused + 1))
    # "N options csdchar does not implement: a=b (F:L): why; c (F:L): why; remove them ..."
    sed -e 's/^.*does not implement: //' -e 's/; remove them.*$//' <<<"$out" \
      | tr ';' '\n' | sed -e 's/^ *//' -e 's/[= ].*$//' | sort -u >>"$refusals"
  else
    invalid=$((invalid + 1))
    echo "invalid: $(basename "$f"): $out"
  fi
done
total=$((ok + refused + invalid))
echo "fio examples: $total job files; $ok run with fio's semantics; $refused refused naming their options; $invalid invalid"
echo "options refused, by number of files:"
sort "$refusals" | uniq -c | sort -rn | head -25
