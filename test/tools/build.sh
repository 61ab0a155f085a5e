#!/usr/bin/env bash
# Builds the test tools (real kube-apiserver, kube-controller-manager, etcd,
# rancher-machine and kube-vip) and the linter (golangci-lint) from their pinned Go modules
# under test/tools/ into bin/. With arguments, builds only those modules
# (`build.sh lint`); without, every test tool (not the linter).
# kube-apiserver, kube-controller-manager and etcd share one module (kube:
# etcd at the version Kubernetes' own etcd client uses, so no dependency
# moves) and one `go build`: the packages they share compile once.
# rancher-machine keeps its own module: it would move about ten of
# Kubernetes' dependencies (protobuf, otel, x/time, go-openapi).
# kube-vip keeps its own module too: v1.2.2, the newest release the Go module
# proxy serves (it refuses v1.2.3, the guests' image; README.md, `make tools`).
# A tool is rebuilt only when its module's pinned versions or sources change:
# a stamp holding the hash of go.mod, go.sum and sources sits in .cache/tools/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
stamps="$root/.cache/tools"
mkdir -p "$bin" "$stamps"

kube_version=$(awk '$1=="k8s.io/kubernetes"{print $2}' "$root/test/tools/kube/go.mod" | head -n1)
kube_minor=$(echo "$kube_version" | cut -d. -f2)
kube_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$kube_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$kube_minor -X k8s.io/component-base/version.gitTreeState=clean"

# What a cold build (empty Go build cache) of each module compiles, and how
# long that takes on 2 cores, to tell the user before starting.
declare -A about=(
  [kube]="about 2,230 packages (k8s.io/kubernetes, etcd server), ~8 minutes on 2 cores"
  [machine]="about 800 packages (rancher/machine and its cloud SDKs), ~3 minutes on 2 cores"
  [kubevip]="about 1,000 packages (kube-vip, client-go, gobgp, nftables), ~2 minutes on 2 idle cores (3 CPU-minutes; 14 minutes measured while other builds shared the cores)"
  [lint]="about 960 packages (golangci-lint and its linters), ~3 minutes on 2 cores"
)

# build MODULE OUTPUTS... -- GO_BUILD_ARGS...
build() {
  local module=$1; shift
  if [ "${#wanted[@]}" -gt 0 ] && [[ " ${wanted[*]} " != *" $module "* ]]; then return; fi
  local outputs=()
  while [ "$1" != "--" ]; do outputs+=("$1"); shift; done
  shift
  local dir="$root/test/tools/$module"
  local stamp="$stamps/$module"
  local want
  want=$( (go env GOVERSION; cd "$dir" && cat go.mod go.sum && find . -name '*.go' -print0 | sort -z | xargs -0r cat) | sha256sum | cut -d' ' -f1)
  local have=""
  [ -f "$stamp" ] && have=$(cat "$stamp")
  local missing=0
  for o in "${outputs[@]}"; do [ -x "$bin/$o" ] || missing=1; done
  if [ "$missing" = 0 ] && [ "$have" = "$want" ]; then
    echo "tools: ${outputs[*]} up to date" >&2
    return
  fi
  echo "tools: building ${outputs[*]} from test/tools/$module: ${about[$module]} when nothing is in the Go build cache yet" >&2
  local start=$SECONDS
  # Replace, never overwrite: bin/ files may be hard links shared with other checkouts.
  for o in "${outputs[@]}"; do rm -f "$bin/$o"; done
  (cd "$dir" && go build -trimpath -o "$bin/" "$@")
  echo "tools: built ${outputs[*]} in $((SECONDS - start))s" >&2
  echo "$want" > "$stamp"
}

wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=(kube machine kubevip)

build kube kube-apiserver kube-controller-manager etcd -- -ldflags "$kube_ldflags" ./cmd/kube-apiserver ./cmd/kube-controller-manager ./cmd/etcd
build machine rancher-machine -- -ldflags "-s -w" github.com/rancher/machine/cmd/rancher-machine
kubevip_version=$(awk '$1=="github.com/kube-vip/kube-vip"{print $2}' "$root/test/tools/kubevip/go.mod" | head -n1)
build kubevip kube-vip -- -ldflags "-s -w -X main.Version=$kubevip_version" github.com/kube-vip/kube-vip
build lint golangci-lint -- -ldflags "-s -w" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
