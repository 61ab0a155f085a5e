#!/usr/bin/env bash
# Builds the test tools (real kube-apiserver, kube-controller-manager, etcd and
# rancher-machine) and the linter (golangci-lint) from their pinned Go modules
# under test/tools/ into bin/. With arguments, builds only those modules
# (`build.sh lint`); without, every test tool (not the linter).
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
  echo "tools: building ${outputs[*]} (cold builds take several minutes)" >&2
  (cd "$dir" && go build -trimpath -o "$bin/" "$@")
  echo "$want" > "$stamp"
}

wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=(kube etcd machine)

build kube kube-apiserver kube-controller-manager -- -ldflags "$kube_ldflags" ./cmd/kube-apiserver ./cmd/kube-controller-manager
build etcd etcd -- -ldflags "-s -w" ./cmd/etcd
build machine rancher-machine -- -ldflags "-s -w" github.com/rancher/machine/cmd/rancher-machine
build lint golangci-lint -- -ldflags "-s -w" github.com/golangci/golangci-lint/v2/cmd/golangci-lint
