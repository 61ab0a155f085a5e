#!/usr/bin/env bash
# `make release`: the release archives in dist/ (or $1), reproducibly.
#
#   dist/docker-machine-driver-harvester-linux-{amd64,arm64}.tar.gz
#   dist/harvester-bootstrap-linux-{amd64,arm64}.tar.gz
#   dist/SHA256SUMS
#   dist/nodedriver.yaml   (harvester-bootstrap nodedriver: the amd64 archive's URL and sha256)
#
# VERSION (default: git describe) is stamped into both binaries
# (internal/version). Same sources and VERSION give the same bytes:
# -trimpath, no build ID, no VCS stamp, static binaries; tar entries with a
# fixed mtime, owner and order, gzip without name or time. With --verify the
# whole release is built a second time into a temporary directory and must
# match byte for byte. RELEASE_URL is where the archives will be downloaded
# from (the NodeDriver's url).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
verify=0
if [ "${1:-}" = "--verify" ]; then verify=1; shift; fi
dist=$(realpath -m "${1:-$root/dist}")
version=${VERSION:-$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo dev)}
url=${RELEASE_URL:-https://github.com/harvester-kit/harvester-machine/releases/download/$version}
platforms=(linux/amd64 linux/arm64)
binaries=(docker-machine-driver-harvester harvester-bootstrap)
ldflags="-s -w -buildid= -X github.com/harvester-kit/harvester-machine/internal/version.Version=$version"

# archive OUT DIR FILE: a tar.gz of DIR/FILE with fixed metadata.
archive() {
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner --mode='u=rwx,go=rx' \
    --format=gnu -C "$2" -cf - "$3" | gzip -n -9 > "$1"
}

build_into() {
  local out=$1 tmp
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' RETURN
  mkdir -p "$out"
  rm -f "$out"/*.tar.gz "$out"/SHA256SUMS "$out"/nodedriver.yaml
  for p in "${platforms[@]}"; do
    local os=${p%/*} arch=${p#*/}
    for b in "${binaries[@]}"; do
      echo "release: $b $version $os/$arch" >&2
      mkdir -p "$tmp/$os-$arch"
      (cd "$root" && CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=false \
        -ldflags "$ldflags" -o "$tmp/$os-$arch/$b" "./cmd/$b")
      grep -qaF -- "$version" "$tmp/$os-$arch/$b" || { echo "release: $b: version $version not stamped" >&2; exit 1; }
      archive "$out/$b-$os-$arch.tar.gz" "$tmp/$os-$arch" "$b"
    done
  done
  (cd "$out" && sha256sum -- *.tar.gz > SHA256SUMS)
  # The manifest is made by the bootstrap command built for this machine.
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "$ldflags" -o "$tmp/host-bootstrap" ./cmd/harvester-bootstrap)
  if [ "$("$tmp/host-bootstrap" --version)" != "harvester-bootstrap version $version" ]; then
    echo "release: harvester-bootstrap --version does not say $version" >&2; exit 1
  fi
  "$tmp/host-bootstrap" nodedriver --url "$url/docker-machine-driver-harvester-linux-amd64.tar.gz" \
    "$out/docker-machine-driver-harvester-linux-amd64.tar.gz" > "$out/nodedriver.yaml"
}

build_into "$dist"
if [ "$verify" = 1 ]; then
  again=$(mktemp -d)
  trap 'rm -rf "$again"' EXIT
  echo "release: building again to check the bytes are the same" >&2
  build_into "$again"
  if ! diff -r "$dist" "$again" >&2; then
    echo "release: NOT reproducible: a second build differs" >&2
    exit 1
  fi
  echo "release: reproducible (a second build is byte-identical)" >&2
fi
echo "release: $version in $dist:" >&2
(cd "$dist" && ls -l -- * >&2)
