#!/usr/bin/env bash
# Builds the test tools (real kube-apiserver, kube-controller-manager, etcd,
# rancher-machine and kube-vip) and the linter (golangci-lint) at their pinned
# versions into bin/. With arguments, builds only those groups
# (`build.sh lint`); without, every test tool (not the linter).
#
# main: kube-apiserver, kube-controller-manager (k8s.io/kubernetes), etcd
#   (test/tools/etcd, go.etcd.io/etcd/server at the version Kubernetes' own
#   etcd client uses) and rancher-machine are `tool`s of the project's own
#   module (go.mod): one dependency graph and one `go build`, so every package
#   they share with the product and its tests (client-go, apimachinery,
#   protobuf, grpc, x/net, ...) is compiled once for all of them.
# kubevip: its own module (test/tools/kubevip): kube-vip v1.2.2, the newest
#   release the Go module proxy serves (it refuses v1.2.3, the guests' image),
#   needs client-go v0.36, which Kubernetes v1.34's tools cannot share.
#   It builds at the same time as main: the cores idle while main links.
# harvester: its own module (test/tools/harvester), Harvester v1.8.0's
#   admission webhook (harvester-webhook: a thin main calling Harvester's
#   pkg/webhook/server). Only on request (`build.sh harvester`): harvester-sim
#   does not start it yet (docs/design/harvester-real-spike.md). Harvester's
#   own go.mod pins and replaces, with k8s.io at the main module's v0.34.4
#   so that most of its packages come from main's build cache. Harvester
#   imports KubeVirt's virt-controller services, hence kubevirt.io/client-go's
#   kubecli, whose gomock mock (a non-test file) does not compile with
#   client-go v0.34; Go refuses -overlay for files in the module cache, so
#   the build uses a copy of that module in .cache/ with the mock replaced by
#   test/tools/kubevirt/_overlay's placeholder, and a go.mod there
#   (-modfile) that points at the copy. Nothing patched is committed.
# lint: its own module (test/tools/lint), golangci-lint.
#
# A group is rebuilt only when its module's pinned versions or sources
# change: a stamp holding the hash of go.mod, go.sum, the sources and the
# flags sits in .cache/tools/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
stamps="$root/.cache/tools"
mkdir -p "$bin" "$stamps"
# The flags the Makefile exports: the Go build cache shares a package between
# builds only when they match.
case " ${GOFLAGS:-} " in
  *" -trimpath "*) ;;
  *) export GOFLAGS="-trimpath -buildvcs=false ${GOFLAGS:-}" ;;
esac

kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$root/go.mod" | head -n1)
kube_minor=$(echo "$kube_version" | cut -d. -f2)
kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$kube_minor -X k8s.io/component-base/version.gitTreeState=clean"
kubevip_version=$(awk '$1=="github.com/kube-vip/kube-vip"{print $2}' "$root/test/tools/kubevip/go.mod" | head -n1)

# What a cold build (empty Go build cache) of each group compiles, and how
# long that takes on 2 idle cores, to tell the user before starting: CPU
# time / 2, measured after `make build` with an empty GOCACHE (2026-11-26:
# make build 3.9 CPU-minutes, main and kubevip together 11.7).
declare -A about=(
  [main]="about 2,700 packages (k8s.io/kubernetes, etcd server, rancher/machine and its cloud SDKs; those the product shares come from the cache `make build` filled), ~5 minutes on 2 idle cores"
  [kubevip]="about 1,000 packages (kube-vip, client-go v0.36, gobgp, nftables), ~2 minutes on 2 idle cores, alongside main (both: 11.7 CPU-minutes measured, ~6 minutes on 2 idle cores)"
  [harvester]="about 2,400 packages (Harvester's webhook, its generated controllers, rancher/rancher's APIs, Longhorn, KubeVirt's virt-controller services), 1,480 of them shared with main (k8s.io v0.34.4), the rest ~3.5 CPU-minutes on top of main's cache"
  [lint]="about 960 packages (golangci-lint and its linters), ~3 minutes on 2 cores"
)

# stale GROUP DIR FILES OUTPUTS... -- FLAGS: succeeds when GROUP must be
# (re)built; sets want to the stamp it gets when built.
stale() {
  local group=$1 dir=$2 files=$3; shift 3
  local outputs=()
  while [ "$1" != "--" ]; do outputs+=("$1"); shift; done
  shift
  want=$( (go env GOVERSION; echo "$GOFLAGS $*"; cd "$dir" && cat go.mod go.sum && eval "find $files -name '*.go' -print0" | sort -z | xargs -0r cat) | sha256sum | cut -d' ' -f1)
  local have=""
  [ -f "$stamps/$group" ] && have=$(cat "$stamps/$group")
  for o in "${outputs[@]}"; do [ -x "$bin/$o" ] || return 0; done
  [ "$have" != "$want" ]
}

# build GROUP DIR FILES OUTPUTS... -- GO_BUILD_ARGS...: FILES (find's
# starting points under DIR) are the group's own sources, part of its stamp.
build() {
  local group=$1 dir=$2 files=$3; shift 3
  local outputs=()
  while [ "$1" != "--" ]; do outputs+=("$1"); shift; done
  shift
  if ! stale "$group" "$dir" "$files" "${outputs[@]}" -- "$@"; then
    echo "tools: ${outputs[*]} up to date" >&2
    return
  fi
  echo "tools: building ${outputs[*]} (${group}): ${about[$group]} when nothing is in the Go build cache yet" >&2
  local start=$SECONDS
  # Replace, never overwrite: bin/ files may be hard links shared with other checkouts.
  for o in "${outputs[@]}"; do rm -f "$bin/$o"; done
  (cd "$dir" && go build -o "$bin/" "$@")
  echo "tools: built ${outputs[*]} in $((SECONDS - start))s" >&2
  echo "$want" > "$stamps/$group"
}

# harvester_modfile writes .cache/harvester-client-go/: a copy of
# kubevirt.io/client-go (the version the harvester module selects) whose
# kubecli/generated_mock_kubevirt.go is test/tools/kubevirt/_overlay's, and
# go.mod/go.sum = the module's own plus a replace of kubevirt.io/client-go
# by that copy.
hvcache="$root/.cache/harvester-client-go"
harvester_modfile() {
  local dir="$root/test/tools/harvester" version src
  version=$(cd "$dir" && GOWORK=off go list -m -f '{{.Version}}' kubevirt.io/client-go)
  src="$(GOWORK=off go env GOMODCACHE)/kubevirt.io/client-go@$version"
  (cd "$dir" && GOWORK=off go mod download kubevirt.io/client-go)
  rm -rf "$hvcache" && mkdir -p "$hvcache"
  cp -r "$src" "$hvcache/client-go" && chmod -R u+w "$hvcache/client-go"
  cp "$root/test/tools/kubevirt/_overlay/kubecli/generated_mock_kubevirt.go" "$hvcache/client-go/kubecli/generated_mock_kubevirt.go"
  cp "$dir/go.sum" "$hvcache/go.sum"
  cp "$dir/go.mod" "$hvcache/go.mod"
  (cd "$hvcache" && GOWORK=off go mod edit -replace "kubevirt.io/client-go=$hvcache/client-go")
}

build_harvester() {
  export GOWORK=off CGO_ENABLED=1
  harvester_modfile
  build harvester "$root/test/tools/harvester" ". ../kubevirt/_overlay" harvester-webhook -- \
    -modfile "$hvcache/go.mod" -ldflags "-s -w" ./cmd/harvester-webhook
}

wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=(main kubevip)
for w in "${wanted[@]}"; do
  case "$w" in
    main|kubevip|lint|harvester) ;;
    *) echo "tools: unknown group \"$w\": want main, kubevip, lint or harvester" >&2; exit 2 ;;
  esac
done
is_wanted() { [[ " ${wanted[*]} " == *" $1 "* ]]; }

pids=()
if is_wanted kubevip; then
  build kubevip "$root/test/tools/kubevip" . kube-vip -- -ldflags "-s -w -X main.Version=$kubevip_version" github.com/kube-vip/kube-vip &
  pids+=($!)
fi
if is_wanted main; then
  build main "$root" test/tools/etcd kube-apiserver kube-controller-manager kube-scheduler etcd rancher-machine -- \
    -ldflags "$kube_ldflags" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    ./test/tools/etcd github.com/rancher/machine/cmd/rancher-machine &
  pids+=($!)
fi
if is_wanted harvester; then
  build_harvester &
  pids+=($!)
fi
if is_wanted lint; then
  build lint "$root/test/tools/lint" . golangci-lint -- -ldflags "-s -w" github.com/golangci/golangci-lint/v2/cmd/golangci-lint &
  pids+=($!)
fi
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit "$failed"
