#!/usr/bin/env bash
# Builds csdchar's Debian package from this workspace with dpkg-deb and prints its path:
#   /usr/bin/csdchar (stripped, as Debian's packages are)
#   /usr/share/man/man1/csdchar.1.gz and one page per command (csdchar-block.1.gz, csdchar-db-run.1.gz, ...)
#   /usr/share/bash-completion/completions/csdchar, /usr/share/zsh/vendor-completions/_csdchar,
#   /usr/share/fish/vendor_completions.d/csdchar.fish
#   /usr/share/doc/csdchar/: README.md.gz, copyright, changelog.Debian.gz, examples/campaigns/, examples/fio/
# Pages and completions are what the packaged binary itself generates from its clap definitions
# (`csdchar manpages`, `csdchar completions`). Depends is what dpkg-shlibdeps finds the binary
# linked against (libc6, libgcc-s1, which libc6 itself depends on, and libssl3: OpenSSL verifies
# server certificates as libpq does); PostgreSQL, fio and
# zfs-fuse are Suggests. Needs dpkg-dev (dpkg-shlibdeps) and binutils (strip).
#
#   scripts/package-deb.sh                 cargo build --release --locked -p csdchar-cli, then package
#   scripts/package-deb.sh --binary PATH   package a csdchar already built (CI packages its test build's
#                                          target/debug/csdchar: a release build takes minutes)
#   --out DIR                              where the .deb goes (default: target/debian)
#   --compress xz|gzip|zstd|none           dpkg-deb's compressor (default xz, Debian's; CI uses zstd, which
#                                          dpkg reads from Debian 12 and Ubuntu 21.10 on: on the 78 MB
#                                          unoptimized binary it took 1.3 s, gzip 30 s, xz 130 s, busy machine)
# DEBFULLNAME and DEBEMAIL set the Maintainer field, as for Debian's own tools.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
out="${CARGO_TARGET_DIR:-target}/debian"
compress=xz
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --compress)
      compress="${2:?--compress needs xz, gzip, zstd or none}"; shift 2
      case "$compress" in xz|gzip|zstd|none) ;; *)
        echo "error: --compress: '$compress' is not one of xz, gzip, zstd, none" >&2; exit 2 ;;
      esac ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument '$1' (allowed: --binary PATH, --out DIR, --compress TYPE)" >&2; exit 2 ;;
  esac
done
for tool in dpkg-deb dpkg-shlibdeps strip gzip; do
  if ! command -v "$tool" >/dev/null; then
    echo "error: $tool not found: apt-get install dpkg-dev binutils gzip" >&2
    exit 1
  fi
done

if [ -z "$binary" ]; then
  cargo build --release --locked -p csdchar-cli >&2
  binary="${CARGO_TARGET_DIR:-target}/release/csdchar"
fi
if [ ! -x "$binary" ]; then
  echo "error: --binary: $binary is not an executable" >&2
  exit 2
fi

# The package's version is the binary's (`csdchar -V`: "csdchar 0.1.0 (COMMIT[, dirty])").
read -r name version _ < <("$binary" -V)
if [ "$name" != csdchar ] || ! [[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]]; then
  echo "error: $binary -V did not name a csdchar version" >&2
  exit 1
fi
commit_line=$("$binary" --version | sed -n 's/^commit: //p')
arch=$(dpkg --print-architecture)
# Reproducible: every file dated to the commit (or now, outside git), gzip without names or times.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}"

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
umask 022
root="$work/root"
doc="$root/usr/share/doc/csdchar"
mkdir -p "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d" "$doc/examples"

install -m 0755 "$binary" "$root/usr/bin/csdchar"
strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/usr/bin/csdchar"
bin="$root/usr/bin/csdchar"

"$bin" manpages "$work/man" >/dev/null
for page in "$work"/man/*.1; do
  gzip -9n < "$page" > "$root/usr/share/man/man1/$(basename "$page").gz"
done
"$bin" completions bash > "$root/usr/share/bash-completion/completions/csdchar"
"$bin" completions zsh > "$root/usr/share/zsh/vendor-completions/_csdchar"
"$bin" completions fish > "$root/usr/share/fish/vendor_completions.d/csdchar.fish"

gzip -9n < README.md > "$doc/README.md.gz"
cp -r examples/campaigns examples/fio "$doc/examples/"
repository=$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -n1)
maintainer="${DEBFULLNAME:-csdchar developers} <${DEBEMAIL:-csdchar@example.invalid}>"
cat > "$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: csdchar
Source: $repository

Files: *
Copyright: the csdchar developers
License: MIT or Apache-2.0
 At your option, under either license.
 .
 The Apache License, Version 2.0, is in /usr/share/common-licenses/Apache-2.0.
 .
 The MIT license: Permission is hereby granted, free of charge, to any person
 obtaining a copy of this software and associated documentation files (the
 "Software"), to deal in the Software without restriction, including without
 limitation the rights to use, copy, modify, merge, publish, distribute,
 sublicense, and/or sell copies of the Software, and to permit persons to whom
 the Software is furnished to do so, subject to the following conditions:
 .
 The above copyright notice and this permission notice shall be included in all
 copies or substantial portions of the Software.
 .
 THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
 OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
 SOFTWARE.
EOF
{
  printf 'csdchar (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Built from commit %s.\n\n' "$commit_line"
  printf ' -- %s  %s\n' "$maintainer" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n > "$doc/changelog.Debian.gz"

# Depends: the shared libraries the binary links, as dpkg-shlibdeps maps them to packages
# (it reads the package list from a debian/control, which a workspace does not have).
mkdir -p "$work/src/debian"
printf 'Source: csdchar\n\nPackage: csdchar\nArchitecture: any\n' > "$work/src/debian/control"
depends=$(cd "$work/src" && dpkg-shlibdeps -O -e "$bin" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
if [ -z "$depends" ]; then
  echo "error: dpkg-shlibdeps found no dependencies for $binary" >&2
  exit 1
fi

find "$root" -path "$root/DEBIAN" -prune -o -type f -printf '%P\0' | sort -z |
  (cd "$root" && xargs -0 md5sum) > "$root/DEBIAN/md5sums"
installed_size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<EOF
Package: csdchar
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_size
Depends: $depends
Suggests: postgresql, fio, zfs-fuse
Section: admin
Priority: optional
Description: characterize storage with transparent compression and its databases
 csdchar measures computational storage drives (ScaleFlux CSD), zram, btrfs
 and ZFS with compression, and the PostgreSQL or openGauss databases on them:
 a fio-like io_uring block engine writing data of exact compressibility (fio
 job files and fio's JSON), capacity counters, a compression estimator,
 sysbench-, pgbench-, TPC-C- and pgio-compatible database workloads, reports
 and whole campaigns. One binary; PostgreSQL's server binaries are needed for
 the clusters it manages, fio and zfs-fuse only to compare with or test on.
EOF
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

deb="$out/csdchar_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Z"$compress" --build "$root" "$deb" >/dev/null
echo "$deb"
