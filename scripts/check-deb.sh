#!/usr/bin/env bash
# Installs the Debian package DEB (scripts/package-deb.sh), checks it as a user of a fresh
# machine would use it, and removes it again, also when a check fails (root only; CI runs it):
#   the declared dependencies (libc only, PostgreSQL, fio, zfs-fuse suggested)
#   `csdchar --version` from the PATH, naming a commit
#   `man -w` finds csdchar(1) and every command's page; csdchar-block(1) renders with its options
#   bash completes `csdchar db run --wo<TAB>` through bash-completion's loader (as a login shell does)
#   the README and every example campaign and fio job file under /usr/share/doc/csdchar
#   the README's main job (shortened) runs from the installed binary on a scratch file
# A csdchar already installed (dpkg, /usr/bin or /usr/local/bin) is left alone: the check refuses.
set -euo pipefail
cd "$(dirname "$0")/.."

deb="${1:?usage: scripts/check-deb.sh DEB}"
if [ "$(id -u)" != 0 ]; then
  echo "error: installing a package needs root" >&2
  exit 2
fi
if ! command -v man >/dev/null || [ ! -f /usr/share/bash-completion/bash_completion ]; then
  echo "error: the check needs man and bash's completion loader: apt-get install man-db bash-completion" >&2
  exit 1
fi
if dpkg-query -W -f='${Status}' csdchar 2>/dev/null | grep -q 'installed'; then
  echo "error: a csdchar package is already installed; not replacing it" >&2
  exit 1
fi
for f in /usr/bin/csdchar /usr/local/bin/csdchar; do
  if [ -e "$f" ]; then
    echo "error: $f exists; not installing over or beside it" >&2
    exit 1
  fi
done

scratch=""
cleanup() {
  dpkg --purge csdchar >/dev/null 2>&1 || true
  if [ -n "$scratch" ]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT
fail() {
  echo "package check failed: $*" >&2
  exit 1
}

dpkg -i "$deb" >/dev/null

depends=$(dpkg-query -W -f='${Depends}' csdchar)
# Package names without their version constraints; libgcc-s1 is what libc6 itself depends on;
# libssl3 is OpenSSL, which verifies server certificates as libpq does (crates/pgwire/src/verify.rs).
for dep in $(echo "$depends" | sed 's/([^)]*)//g; s/[,|]/ /g'); do
  case "$dep" in
    libc6|libgcc-s1|libssl3|libssl3t64) ;;
    *) fail "Depends lists $dep (only libc6, libgcc-s1 and libssl3 are expected): $depends" ;;
  esac
done
[[ "$depends" == *libc6* ]] || fail "Depends does not list libc6: $depends"
[[ "$depends" == *libssl3* ]] || fail "Depends does not list libssl3 (the binary links OpenSSL): $depends"
suggests=$(dpkg-query -W -f='${Suggests}' csdchar)
for s in postgresql fio zfs-fuse; do
  [[ ", $suggests," == *", $s,"* ]] || fail "Suggests lacks $s: $suggests"
done

[ "$(command -v csdchar)" = /usr/bin/csdchar ] || fail "csdchar on the PATH is $(command -v csdchar)"
version=$(csdchar --version)
echo "$version" | sed 's/^/  /'
echo "$version" | grep -Eq '^commit: ([0-9a-f]{40}|unknown)' || fail "--version names no commit"

man -w csdchar >/dev/null || fail "man -w csdchar"
man -w csdchar-block >/dev/null || fail "man -w csdchar-block"
# Every command's page: the list comes from the installed binary itself.
pages=$(mktemp -d)
csdchar manpages "$pages" >/dev/null
for page in "$pages"/*.1; do
  name=$(basename "$page" .1)
  man -w "$name" >/dev/null || fail "man -w $name"
done
rm -rf "$pages"
MANWIDTH=120 MANPAGER=cat man csdchar-block 2>/dev/null | grep -q -- '--iodepth' ||
  fail "man csdchar-block does not show --iodepth"

# What TAB does in an interactive bash: bash-completion loads the script on first use.
completed=$(bash --norc --noprofile -c '
  . /usr/share/bash-completion/bash_completion
  _completion_loader csdchar
  complete -p csdchar >/dev/null || exit 3
  COMP_LINE="csdchar db run --wo"; COMP_POINT=${#COMP_LINE}
  COMP_WORDS=(csdchar db run --wo); COMP_CWORD=3
  fn=$(complete -p csdchar | sed -n "s/.* -F \([^ ]*\) .*/\1/p")
  "$fn" csdchar --wo run
  printf "%s\n" "${COMPREPLY[@]}"') || fail "bash did not load the completion of csdchar"
echo "$completed" | grep -qx -- '--workload' ||
  fail "csdchar db run --wo<TAB> offered: $(echo "$completed" | tr '\n' ' ')"
[ -s /usr/share/zsh/vendor-completions/_csdchar ] || fail "no zsh completion"
[ -s /usr/share/fish/vendor_completions.d/csdchar.fish ] || fail "no fish completion"

doc=/usr/share/doc/csdchar
[ -s "$doc/README.md.gz" ] || fail "no README under $doc"
[ -s "$doc/copyright" ] || fail "no copyright under $doc"
for f in examples/campaigns/* examples/fio/*; do
  cmp -s "$f" "$doc/$f" || fail "$doc/$f differs from the workspace's or is missing"
done

# The README's main job, shorter, on a scratch file.
scratch=$(mktemp -d /var/tmp/csdchar-deb-check.XXXXXX)
csdchar block --rw randwrite --bs 4k --iodepth 32 --compress 75 --size 16m --runtime 1s \
  --time-based "$scratch/csdchar.dat" --output-format json --output "$scratch/r.json" >/dev/null ||
  fail "csdchar block (the README's main job) failed"
grep -q '"commit"' "$scratch/r.json" || fail "the block result has no commit"

cleanup
scratch=""
trap - EXIT
if dpkg-query -W -f='${Status}' csdchar 2>/dev/null | grep -q 'installed' || [ -e /usr/bin/csdchar ] ||
  [ -e /usr/share/man/man1/csdchar.1.gz ]; then
  fail "csdchar is still installed after dpkg --purge"
fi
echo "package check: ok ($deb installed, used and removed)"
