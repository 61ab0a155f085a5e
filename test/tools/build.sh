#!/usr/bin/env bash
# Builds the test tools (real kube-apiserver, kube-controller-manager, etcd,
# rancher-machine, kube-vip, KubeVirt's virt-api and virt-controller and
# Harvester's webhook, API server and upgrade helper) and the linters (golangci-lint, deadcode) at their
# pinned versions into bin/. With arguments, builds only those groups
# (`build.sh lint`); without, every test tool (not the linter). Group
# product is `make build`'s: the product binaries named by PRODUCT_BINS,
# with no stamp (Go's build cache knows what changed).
#
# The terminal gets one line per group, what it compiled of what it has to
# and the time so far (in place on a terminal, every 30 s otherwise); the
# go commands' own output (a cold module cache's hundreds of `go:
# downloading` lines, each package compiled, errors) goes to a log per
# group, whose path is printed; a failed group's errors are printed too.
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
# harvester: its own module (test/tools/harvester), Harvester v1.8.1's
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
# lint: its own module (test/tools/lint), golangci-lint and deadcode
#   (golang.org/x/tools/cmd/deadcode at the x/tools golangci-lint uses).
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
    # Its end before its start: the display never shows it building.
    note "$group" end up-to-date && begin "$group" "${outputs[@]}"
    return
  fi
  begin "$group" "${outputs[@]}"
  # Replace, never overwrite: bin/ files may be hard links shared with other checkouts.
  for o in "${outputs[@]}"; do rm -f "$bin/$o"; done
  # A failed build leaves the old stamp: errexit does not hold in a function called from `||`.
  compile "$group" "$dir" "$@" || return 1
  echo "$want" > "$stamps/$group"
}

# The build's output goes to one log per group (LOGS/GROUP.log, its path
# printed); the terminal gets one line per group: what it builds, packages
# compiled of those to compile, the time so far. The groups' builds and the
# display are separate processes: a build notes its state in files under
# RUN (GROUP.what, .start, .total, .end), which the display reads.
logs="$stamps/log"
run=$(mktemp -d "${TMPDIR:-/tmp}/tools-build.XXXXXX")
mkdir -p "$logs"

# note GROUP KEY VALUE... records a state of GROUP's build for the display.
note() {
  local group=$1 key=$2; shift 2
  echo "$*" > "$run/$group.$key.tmp" && mv "$run/$group.$key.tmp" "$run/$group.$key"
}

# begin GROUP OUTPUTS... marks GROUP's build as started, once.
begin() {
  local group=$1; shift
  [ -f "$run/$group.start" ] && return
  note "$group" what "$*"
  note "$group" start "$(date +%s)"
}

# compile GROUP DIR GO_BUILD_ARGS...: `go build -v` in DIR, whose output
# (go: downloading, each package as it is compiled, errors) goes to GROUP's
# log. First `go list` counts the packages it will compile (Stale: their
# result is not in the Go build cache; a main package already linked in it
# is not compiled again), for the display; it also downloads the modules.
compile() {
  local group=$1 dir=$2 log="$logs/$1.log" total; shift 2
  total=$( (cd "$dir" && go list -deps -f '{{if .Stale}}{{.StaleReason}}{{end}}' "$@" 2>>"$log") |
    awk 'NF && !/not installed but available in build cache/ {n++} END {print n+0}') || total="?"
  note "$group" total "$total"
  if (cd "$dir" && go build -v -o "$bin/" "$@") >>"$log" 2>&1; then
    note "$group" end ok "$(date +%s)"
    return
  fi
  note "$group" end failed "$(date +%s)"
  return 1
}

# compiled GROUP: the packages GROUP's build has compiled so far (the lines
# of its log that are an import path: `go build -v` prints one per package).
compiled() {
  local n
  n=$(grep -c -E '^[^ ]+$' "$logs/$1.log" 2>/dev/null) || true
  echo "${n:-0}"
}

# minsec SECONDS: "3m07s".
minsec() { local s=$(($1 > 0 ? $1 : 0)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# status GROUP END: GROUP's line: where its build is (first: a narrow
# terminal cuts the end), then what it builds. END is its end as noted
# (empty while it builds).
status() {
  local group=$1 start total end=() now state
  read -r -a end <<<"$2"
  start=$(<"$run/$group.start")
  total=$(cat "$run/$group.total" 2>/dev/null) || true
  now=${end[1]:-$(date +%s)}
  local took
  took=$(minsec $((now - start)))
  case "${end[0]:-}" in
    up-to-date) state="up to date" ;;
    ok) state="built in $took, $(compiled "$group") packages compiled" ;;
    failed) state="FAILED after $took, log ${logs#"$root"/}/$group.log" ;;
    *) if [ -z "$total" ]; then
         state="finding the packages to compile, $took"
       elif [ "$total" = "?" ]; then
         state="$(compiled "$group") packages compiled, $took"
       elif [ "$(compiled "$group")" -ge "$total" ]; then
         state="$total of $total packages, linking, $took"
       else
         state="$(compiled "$group") of $total packages, $took"
       fi ;;
  esac
  echo "$label: $state: $(<"$run/$group.what")"
}

# display GROUP...: the groups' lines until RUN/stop exists: on a terminal
# redrawn in place every second; otherwise a group's line when it starts,
# every 30 s while it builds, and when it ends.
display() {
  local tty=false cols=80 drawn=0 last=$SECONDS group end line stop=false
  local -A said=()
  if [ -t 2 ]; then
    tty=true
    cols=$(stty size 2>/dev/null </dev/tty | cut -d' ' -f2) || true
    [[ "${cols:-}" =~ ^[1-9][0-9]*$ ]] || cols=80
  fi
  while [ -d "$run" ]; do
    [ -f "$run/stop" ] && stop=true
    if $tty; then
      [ "$drawn" -eq 0 ] || printf '\033[%dA' "$drawn" >&2
      drawn=0
      for group in "$@"; do
        [ -f "$run/$group.start" ] || continue
        end=$(cat "$run/$group.end" 2>/dev/null) || true
        line=$(status "$group" "$end")
        printf '\r\033[K%s\n' "${line:0:cols-1}" >&2
        drawn=$((drawn + 1))
      done
    else
      for group in "$@"; do
        [ -f "$run/$group.start" ] || continue
        end=$(cat "$run/$group.end" 2>/dev/null) || true
        if [ -n "$end" ]; then
          [ "${said[$group]:-}" = end ] || status "$group" "$end" >&2
          said[$group]=end
        elif [ -z "${said[$group]:-}" ] || [ $((SECONDS - last)) -ge 30 ]; then
          status "$group" "" >&2
          said[$group]=start
        fi
      done
      [ $((SECONDS - last)) -lt 30 ] || last=$SECONDS
    fi
    $stop && return
    sleep 1
  done
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
  if ! kubecli_modfile "$root/test/tools/kubevirt" "$cache" 2>>"$logs/kubevirt.log"; then
    note kubevirt end failed "$(date +%s)" && begin kubevirt virt-api virt-controller kubevirt-install && return 1
  fi
  build kubevirt "$root/test/tools/kubevirt" . virt-api virt-controller kubevirt-install -- \
    -modfile "$cache/go.mod" -ldflags "-s -w" ./cmd/virt-api ./cmd/virt-controller ./cmd/kubevirt-install
}

# build_harvester builds the harvester group; after kubevirt when both are
# wanted, so that it finds KubeVirt's packages compiled.
build_harvester() {
  export GOWORK=off CGO_ENABLED=1
  local cache="$root/.cache/harvester-client-go"
  if ! kubecli_modfile "$root/test/tools/harvester" "$cache" 2>>"$logs/harvester.log"; then
    note harvester end failed "$(date +%s)" && begin harvester harvester-webhook harvester upgradehelper && return 1
  fi
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
    product|main|kubevip|kubevirt|harvester|lint) ;;
    *) echo "tools: unknown group \"$w\": want product, main, kubevip, kubevirt, harvester or lint" >&2; exit 2 ;;
  esac
done
is_wanted() { [[ " ${wanted[*]} " == *" $1 "* ]]; }
label=tools
[ "${wanted[*]}" != product ] || label=build
for w in "${wanted[@]}"; do : > "$logs/$w.log"; done
if [ "${#wanted[@]}" -eq 1 ]; then where=${wanted[0]}; else where="{$(IFS=,; echo "${wanted[*]}")}"; fi
echo "$label: the build's output goes to ${logs#"$root"/}/$where.log" >&2
display "${wanted[@]}" &
display_pid=$!
trap 'touch "$run/stop"; wait "$display_pid" || true; rm -rf "$run"' EXIT

pids=()
if is_wanted product; then
  # `make build`: no stamp, go build's own cache tells what to compile.
  read -r -a products <<<"${PRODUCT_BINS:?PRODUCT_BINS must name the product binaries}"
  begin product "${products[@]}"
  compile product "$root" "${products[@]/#/./cmd/}" &
  pids+=($!)
fi
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
  build lint "$root/test/tools/lint" . golangci-lint deadcode -- -ldflags "-s -w" \
    github.com/golangci/golangci-lint/v2/cmd/golangci-lint golang.org/x/tools/cmd/deadcode &
  pids+=($!)
fi
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
touch "$run/stop"
wait "$display_pid" || true
# A failed group's errors, from the end of its log.
for w in "${wanted[@]}"; do
  if [ -f "$run/$w.end" ] && [ "$(cut -d' ' -f1 "$run/$w.end")" = failed ]; then
    echo "$label: the end of ${logs#"$root"/}/$w.log:" >&2
    grep -v -E -e '^go: downloading ' -e '^[^ ]+$' "$logs/$w.log" | tail -n 40 >&2
  fi
done
exit "$failed"
