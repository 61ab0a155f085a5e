#!/usr/bin/env bash
# Builds the test tools (real kube-apiserver, kube-controller-manager, etcd,
# rancher-machine, kube-vip, KubeVirt's virt-api and virt-controller and
# Harvester's webhook, API server and upgrade helper) and the linter (golangci-lint) at their pinned
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
# kubevirt: its own module (test/tools/kubevirt), KubeVirt v1.7.0's
#   virt-api and virt-controller (thin main packages calling KubeVirt's entry
#   points) and kubevirt-install (what virt-operator installs, from
#   KubeVirt's install-strategy code), which harvester-sim starts. Its k8s.io
#   and shared modules are aligned with the main module's, so most of its
#   packages come from main's build cache. One file of kubevirt.io/client-go
#   v1.7.0 does not compile with client-go v0.34 (kubecli's gomock mock, in
#   a non-test file); Go refuses -overlay for files in the module cache, so
#   the build uses a copy of that module in .cache/ with the file replaced by
#   test/tools/kubevirt/_overlay's (a placeholder of the project's own) and a
#   go.mod there (-modfile) that points at the copy. Nothing patched is
#   committed.
# harvester: its own module (test/tools/harvester), Harvester v1.8.0's
#   admission webhook (harvester-webhook: a thin main calling Harvester's
#   pkg/webhook/server) and its API server with its controllers (harvester:
#   the module's own main package, built as it is), which harvester-sim
#   starts, and its upgrade helper (upgradehelper: cmd/upgradehelper as it
#   is; `harvester-sim upgrade` runs its vm-live-migrate-detector and
#   restore-vm as upgrade_node.sh and the restore-vm job do; 8 packages of
#   its own). Harvester's own go.mod
#   pins and replaces, with k8s.io at the main module's v0.34.4 so that most
#   of its packages come from main's build cache. Harvester imports
#   KubeVirt's virt-controller services, hence kubevirt.io/client-go's
#   kubecli: the same copy with the placeholder mock as kubevirt's.
#   kubevirt and harvester build one after the other, after main: they share
#   KubeVirt's packages, and two go builds at once would compile them twice.
# lint: its own module (test/tools/lint), golangci-lint.
#
# A group is rebuilt only when its module's pinned versions or sources
# change: a stamp holding the hash of go.mod, go.sum, the sources and the
# flags (paths relative to the checkout) sits in .cache/tools/.
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
# make build 3.9 CPU-minutes, main and kubevip together 11.7). kubevirt:
# what it adds to main's cache, measured by recompiling only the packages
# main does not build (a -gcflags pattern for each) on 2 loaded cores.
declare -A about=(
  [main]="about 2,700 packages (k8s.io/kubernetes, etcd server, rancher/machine and its cloud SDKs; those the product shares come from the cache make build filled), ~5 minutes on 2 idle cores"
  [kubevip]="about 1,000 packages (kube-vip, client-go v0.36, gobgp, nftables), ~2 minutes on 2 idle cores, alongside main (both: 11.7 CPU-minutes measured, ~6 minutes on 2 idle cores)"
  [kubevirt]="about 940 packages besides the standard library (virt-api, virt-controller, kubevirt-install), 640 of them shared with main (k8s.io v0.34.4) and built after it; the other ~320 and the links took 98 CPU-seconds (2026-11-28), ~1 minute more on 2 idle cores"
  [harvester]="about 2,480 packages (Harvester's webhook, API server and upgrade helper, its generated controllers, rancher/rancher's APIs, Longhorn, KubeVirt's virt-controller services), 1,480 of them shared with main (k8s.io v0.34.4), the rest ~3.5 CPU-minutes on top of main's cache"
  [lint]="about 960 packages (golangci-lint and its linters), ~3 minutes on 2 cores"
)

# stale GROUP DIR FILES OUTPUTS... -- FLAGS: succeeds when GROUP must be
# (re)built; sets want to the stamp it gets when built.
stale() {
  local group=$1 dir=$2 files=$3; shift 3
  local outputs=()
  while [ "$1" != "--" ]; do outputs+=("$1"); shift; done
  shift
  # The flags name files under the checkout (-modfile): hashed relative to
  # it, so that a checkout elsewhere with the same bin/ is up to date.
  local flags="$GOFLAGS $*"
  want=$( (go env GOVERSION; echo "${flags//"$root"/.}"; cd "$dir" && cat go.mod go.sum && eval "find $files -name '*.go' -print0" | sort -z | xargs -0r cat) | sha256sum | cut -d' ' -f1)
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
  # A failed build leaves the old stamp: errexit does not hold in a function called from `||`.
  (cd "$dir" && go build -o "$bin/" "$@") || return 1
  echo "tools: built ${outputs[*]} in $((SECONDS - start))s" >&2
  echo "$want" > "$stamps/$group"
}

# kubecli_modfile DIR CACHE writes CACHE/: a copy of the
# kubevirt.io/client-go that the module in DIR selects, whose
# kubecli/generated_mock_kubevirt.go is test/tools/kubevirt/_overlay's, and
# go.mod and go.sum: DIR's, with kubevirt.io/client-go replaced by the copy
# (for go build -modfile CACHE/go.mod).
kubecli_modfile() {
  local dir=$1 cache=$2 version
  version=$(cd "$dir" && GOWORK=off go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' kubevirt.io/client-go)
  (cd "$dir" && GOWORK=off go mod download kubevirt.io/client-go@"$version")
  rm -rf "$cache" && mkdir -p "$cache"
  cp -r "$(GOWORK=off go env GOMODCACHE)/kubevirt.io/client-go@$version" "$cache/client-go" && chmod -R u+w "$cache/client-go"
  cp "$root/test/tools/kubevirt/_overlay/kubecli/generated_mock_kubevirt.go" "$cache/client-go/kubecli/generated_mock_kubevirt.go"
  cp "$dir/go.mod" "$dir/go.sum" "$cache/"
  (cd "$cache" && GOWORK=off go mod edit -replace "kubevirt.io/client-go=$cache/client-go")
}

# build_kubevirt builds the kubevirt group; after main when both are
# wanted, so that it finds main's k8s.io packages compiled.
build_kubevirt() {
  export GOWORK=off CGO_ENABLED=1
  local cache="$root/.cache/kubevirt-client-go"
  kubecli_modfile "$root/test/tools/kubevirt" "$cache"
  build kubevirt "$root/test/tools/kubevirt" . virt-api virt-controller kubevirt-install -- \
    -modfile "$cache/go.mod" -ldflags "-s -w" ./cmd/virt-api ./cmd/virt-controller ./cmd/kubevirt-install
}

# build_harvester builds the harvester group; after kubevirt when both are
# wanted, so that it finds KubeVirt's packages compiled.
build_harvester() {
  export GOWORK=off CGO_ENABLED=1
  local cache="$root/.cache/harvester-client-go"
  kubecli_modfile "$root/test/tools/harvester" "$cache"
  build harvester "$root/test/tools/harvester" ". ../kubevirt/_overlay" harvester-webhook harvester upgradehelper -- \
    -modfile "$cache/go.mod" -ldflags "-s -w" ./cmd/harvester-webhook github.com/harvester/harvester \
    github.com/harvester/harvester/cmd/upgradehelper
}

# build_kubevirt_harvester builds the wanted ones of kubevirt and harvester,
# one after the other; it fails when either fails.
build_kubevirt_harvester() {
  local failed=0
  if is_wanted kubevirt; then build_kubevirt || failed=1; fi
  if is_wanted harvester; then build_harvester || failed=1; fi
  return "$failed"
}

wanted=("$@")
[ "${#wanted[@]}" -gt 0 ] || wanted=(main kubevip kubevirt harvester)
for w in "${wanted[@]}"; do
  case "$w" in
    main|kubevip|kubevirt|harvester|lint) ;;
    *) echo "tools: unknown group \"$w\": want main, kubevip, kubevirt, harvester or lint" >&2; exit 2 ;;
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
    ./test/tools/etcd github.com/rancher/machine/cmd/rancher-machine && build_kubevirt_harvester &
  pids+=($!)
elif is_wanted kubevirt || is_wanted harvester; then
  build_kubevirt_harvester &
  pids+=($!)
fi
if is_wanted lint; then
  build lint "$root/test/tools/lint" . golangci-lint -- -ldflags "-s -w" github.com/golangci/golangci-lint/v2/cmd/golangci-lint &
  pids+=($!)
fi
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit "$failed"
