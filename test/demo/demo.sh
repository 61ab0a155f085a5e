#!/usr/bin/env bash
# `make demo`: the whole flow against a simulated Harvester, the way Rancher
# runs it, then cleans up. Needs bin/ built (`make build tools`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
tools="$root/.cache/demo"

# Nothing the demo starts may reach another machine: compile what it needs
# (the namespace has no network, so no module downloads), then run the rest
# of this script in the harness's private network namespace (test/harness):
# loopback and the guests' network only, no default route.
if [ -z "${HARVESTER_E2E_NETNS:-}" ]; then
  mkdir -p "$tools"
  # The flags the Makefile exports: with them the packages these programs
  # share with the product and the tools come from the Go build cache.
  case " ${GOFLAGS:-} " in
    *" -trimpath "*) ;;
    *) export GOFLAGS="-trimpath -buildvcs=false ${GOFLAGS:-}" ;;
  esac
  (cd "$root" && go build -o "$tools/" ./test/harness/harvester-netns ./test/demo/ccmlb ./test/demo/csiattach)
  exec "$tools/harvester-netns" bash "$0" "$@"
fi
guest_net=()
case "$HARVESTER_E2E_NETNS" in
  "isolated "*) guest_net=(--guest-interface="${HARVESTER_E2E_NETNS#isolated }") ;;
  *) echo "the demo runs without a private network namespace (${HARVESTER_E2E_NETNS#unavailable: }): it skips every step that would reach a guest" >&2 ;;
esac
export PATH="$bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/harvester-demo.XXXXXX")
state="$work/sim"
sim_pid=""
ccm_pid=""
demo_start=$SECONDS
step_start=$SECONDS
step_name=""

# step NAME: ends the previous step (with the time it took) and starts one.
step() {
  [ -z "$step_name" ] || printf '    (%ds)\n' $((SECONDS - step_start)) >&2
  step_name=$*; step_start=$SECONDS
  [ -z "$step_name" ] || printf '\n\033[1m==> %s\033[0m\n' "$*" >&2
}
progress() { printf '    ... %s (%ds)\n' "$*" $((SECONDS - step_start)) >&2; }
cleanup() {
  if [ -n "$ccm_pid" ] && kill -0 "$ccm_pid" 2>/dev/null; then kill -TERM "$ccm_pid"; wait "$ccm_pid" || true; fi
  if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
    kill -TERM "$sim_pid"; wait "$sim_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# rancher_name MACHINE: the instance name Rancher gives rancher-machine (dots
# turned into dashes; over 63 characters, the end replaced by - and a hash).
rancher_name() {
  local n=${1//./-}
  if [ "${#n}" -gt 63 ]; then n="${n:0:57}-$(printf %s "$n" | sha256sum | cut -c1-5)"; fi
  echo "$n"
}

# kube_vip_pid NODE: the pid of the real kube-vip harvester-sim runs for NODE
# of the demo's guest cluster (from its state file).
kube_vip_pid() {
  sed -n 's/^ *"pid": \([0-9]*\),$/\1/p' "$state/guests/$cluster/kube-vip/$1/state.json" 2>/dev/null
}

# node_addrs NODE: `ip -br addr show eth0` in NODE's network namespace.
node_addrs() {
  nsenter --net="/proc/$(kube_vip_pid "$1")/ns/net" ip -br addr show eth0
}

# announce_kube_vip: the real kube-vip (bin/kube-vip, run by harvester-sim on
# each control-plane node in the node's own network namespace) announces the
# address once the Service has a ready endpoint, and writes the ingress.
announce_kube_vip() {
  if [ ${#guest_net[@]} -eq 0 ]; then
    echo "no private network namespace: kube-vip is not run, nothing announces the address" >&2; return
  fi
  if [ ! -x "$bin/kube-vip" ]; then
    echo "bin/kube-vip is missing: nothing announces the address and the Service gets no ingress; build it with \`make tools\` (test/tools/kubevip)" >&2
    exit 1
  fi
  "$tools/ccmlb" endpoints --guest-kubeconfig "$guest_kubeconfig" --service default/web --node "${machines[0]}" --pod-ip 10.42.0.10
  local out
  out=$("$tools/ccmlb" ingress --guest-kubeconfig "$guest_kubeconfig" --service default/web)
  echo "$out"
  vip_node=$(sed -n 's/.* on node \([^ ]*\) .*/\1/p' <<<"$out")
  vip=$(sed -n 's/.*ingress: \([0-9.]*\),.*/\1/p' <<<"$out")
  echo "on $vip_node's interface (ip -br addr show eth0 in the node's network namespace):" >&2
  node_addrs "$vip_node" | sed 's/^/    /'
  for _ in $(seq 1 50); do
    harvester-sim status --state-dir "$state" | grep -q "^$cluster  *$vip_node .*$vip x" && break
    sleep 0.2
  done
  echo "gratuitous ARPs kube-vip sent, as the guest network saw them on $vip_node's veth (harvester-sim status):" >&2
  harvester-sim status --state-dir "$state" | sed -n '/^GUEST CLUSTER *NODE *KUBE-VIP/,$p'
}

# withdrawn_kube_vip: kube-vip took the deleted Service's address off the node.
withdrawn_kube_vip() {
  [ -n "${vip_node:-}" ] || return 0
  for _ in $(seq 1 100); do
    node_addrs "$vip_node" | grep -q " $vip/32" || break
    sleep 0.2
  done
  echo "kube-vip withdrew $vip from $vip_node (ip -br addr show eth0 there):" >&2
  node_addrs "$vip_node" | sed 's/^/    /'
}

step "Starting the simulated Harvester: the real etcd, kube-apiserver, kube-controller-manager, kube-scheduler, KubeVirt's kubevirt-install, virt-api and virt-controller, Harvester's harvester-webhook and harvester (its API server and controllers); each guest cluster gets a real kube-apiserver, and its nodes the real kube-vip"
harvester-sim --state-dir "$state" --guest-clusters ${guest_net[@]+"${guest_net[@]}"} 2>"$work/sim.log" &
sim_pid=$!
for i in $(seq 1 600); do
  [ -f "$state/ready" ] && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
  [ $((i % 50)) -ne 0 ] || progress "waiting for the simulator"
  sleep 0.1
done
[ -f "$state/ready" ] || { echo "simulator not ready after 60s" >&2; cat "$work/sim.log" >&2; exit 1; }
echo "simulated Harvester ready after $(grep -o 'simulated Harvester ready.*after=[^ ]*' "$work/sim.log" | sed 's/.*after=//')" >&2
harvester-sim status --state-dir "$state" | sed -n '/^HOST/,/^$/p'

cluster=demo
pool=pool1
export MACHINE_STORAGE_PATH="$work/machine"
export KUBECONFIG="$state/kubeconfig"
printf '#!/bin/sh\necho "the Rancher agent would be installed here"\n' > "$work/install.sh"

step "Creating node pool $cluster-$pool (3 K3s machines at once) through rancher-machine, as Rancher's machine-provision jobs do"
# The cloud credential arrives only in HARVESTER_* variables; the machine
# config as --harvester-<field>=<value> in the user's order (booleans bare
# and only when true, empty values left out), --harvester-cluster-name last.
# --harvester-cloud-provider=k3s makes the driver create the guest cluster's
# Harvester credential and write the K3s cloud-provider add-ons into each node.
export HARVESTER_KUBECONFIG_CONTENT HARVESTER_CLUSTER_ID=c-demo HARVESTER_CLUSTER_TYPE=harvester
HARVESTER_KUBECONFIG_CONTENT=$(base64 -w0 < "$state/kubeconfig")
machine_config=(
  --harvester-vm-namespace=default
  --harvester-cpu-count=2 --harvester-memory-size=4 --harvester-disk-size=20
  --harvester-image-name=default/ubuntu-22.04
  --harvester-network-name=default/vlan1
  --harvester-ssh-user=ubuntu
  --harvester-cloud-provider=k3s
)
machines=()
pids=()
for i in 1 2 3; do
  name=$(rancher_name "$cluster-$pool-$(head -c 64 /dev/urandom | tr -dc 'a-z0-9' | head -c 5)")
  machines+=("$name")
  rancher-machine create --driver=harvester --custom-install-script="$work/install.sh" \
    "${machine_config[@]}" --harvester-cluster-name="$cluster" "$name" >"$work/create-$name.log" 2>&1 &
  pids+=($!)
done
for idx in "${!pids[@]}"; do
  if ! wait "${pids[$idx]}"; then
    echo "create of ${machines[$idx]} failed:" >&2; cat "$work/create-${machines[$idx]}.log" >&2; exit 1
  fi
  progress "created ${machines[$idx]}"
done
echo "rancher-machine's output for ${machines[0]}:" >&2
# rancher-machine itself warns (three lines) that the driver has no flag
# ending in -os (it looks for one to choose the cloud-init hostname key);
# the upstream driver has none either, so Rancher's logs show the same.
grep -v -e 'Trying to access option  which does not exist' -e 'WILL\*\*\* CAUSE UNEXPECTED BEHAVIOR' \
  -e 'Type assertion did not go smoothly to string for key $' "$work/create-${machines[0]}.log" | sed 's/^/    /' >&2

step "The machines: rancher-machine's answers (one line each, ready for scripts) and where Harvester placed them"
for m in "${machines[@]}"; do
  printf '%-22s status=%-8s ip=%-14s url=%s\n' "$m" "$(rancher-machine status "$m")" "$(rancher-machine ip "$m")" "$(rancher-machine url "$m")"
done
harvester-sim status --state-dir "$state" | sed -n '/^NAMESPACE *VM /,/^$/p' | grep -E "^NAMESPACE|$cluster-$pool"
# Count the HOST column of the VM table only (the guest cluster's node
# table also has the machines' names in its second column).
hosts=$(harvester-sim status --state-dir "$state" | sed -n '/^NAMESPACE *VM /,/^$/p' |
  awk -v p="$cluster-$pool" '$2 ~ "^"p && $5 != "-" {print $5}' | sort -u | wc -l)
echo "the pool's ${#machines[@]} VMs are spread over $hosts hosts" >&2

step "The cloud provider's Harvester kubeconfig for $cluster (harvester-bootstrap kubeconfig; the token is not shown)"
harvester-bootstrap kubeconfig --kubeconfig "$state/kubeconfig" --cluster-name "$cluster" --namespace default \
  --output "$work/cloud-provider.kubeconfig" 2>/dev/null
echo "written to $work/cloud-provider.kubeconfig (mode $(stat -c %a "$work/cloud-provider.kubeconfig")):" >&2
awk '($1=="server:"||$1=="namespace:"||$1=="user:") && NF==2 {print "    "$1" "$2}' "$work/cloud-provider.kubeconfig" | sort -u
echo "    token: <$(grep -E '^\s*token:' "$work/cloud-provider.kubeconfig" | awk '{print length($2)}') characters, not shown>"

step "Guest cluster $cluster comes up: the machines join as nodes, K3s applies the add-ons from their cloud-init"
guest_kubeconfig="$state/guests/$cluster/kubeconfig"
for _ in $(seq 1 300); do
  harvester-sim status --state-dir "$state" > "$work/status.txt" 2>&1 || true
  [ "$(grep -c "^$cluster .* Ready " "$work/status.txt")" -eq 3 ] && grep -q "harvester-addons (" "$work/status.txt" && grep -q "kube-vip (DaemonSet)" "$work/status.txt" && break
  sleep 0.2
done
sed -n '/^GUEST CLUSTER/,$p' "$work/status.txt"
grep -q "harvester-addons (" "$work/status.txt" || { echo "the guest cluster did not come up" >&2; tail -20 "$work/sim.log" >&2; exit 1; }
grep -q "kube-vip (DaemonSet)" "$work/status.txt" || { echo "kube-vip did not come with the add-ons" >&2; exit 1; }
echo "guest cluster kubeconfig: $guest_kubeconfig (mode $(stat -c %a "$guest_kubeconfig"))" >&2
echo "kube-vip came with the cloud provider (it will announce the load balancers' addresses); nodes still carry the" >&2
echo "cloud provider's uninitialized taint and no zone until it runs" >&2

step "The cloud provider initialises the guest's nodes: providerID harvester://<VM UID>, zone and region of the VM's host, taint removed"
# The demo's stand-in does what the CCM does (test/simtest.CCMInitNodes), with
# the cloud-config the guest's add-ons hold.
"$tools/ccmlb" init-nodes --guest-kubeconfig "$guest_kubeconfig"
harvester-sim status --state-dir "$state" | sed -n '/^GUEST CLUSTER *NODE/,/^$/p'

step "A load balancer for Service default/web of $cluster: an IP pool for the cluster, the cloud provider's LoadBalancer"
harvester-bootstrap lb pool --name "$cluster-lb" --range 192.168.100.0/24@192.168.100.10-192.168.100.20 \
  --scope-guest-cluster "$cluster" > "$work/pool.yaml"
cat "$work/pool.yaml"
"$tools/ccmlb" apply-pool --kubeconfig "$state/kubeconfig" --file "$work/pool.yaml"
# The cloud provider's load-balancer half runs from here on, with the
# cloud-config the guest's add-ons hold, by the real CCM's rules
# (test/simtest.ServiceController): a sync on each Service change it sees
# (never on a status-only change), status.address copied from the Service's
# ingress only during a sync, a delete only with status.address set.
"$tools/ccmlb" run --guest-kubeconfig "$guest_kubeconfig" --cluster "$cluster" > "$work/ccm.log" 2>&1 &
ccm_pid=$!
"$tools/ccmlb" create --guest-kubeconfig "$guest_kubeconfig" --service default/web
harvester-sim status --state-dir "$state" | sed -n '/^NAMESPACE *LOADBALANCER/,/^GUEST CLUSTER/p' | sed '$d'

# --- kube-vip announces: the real kube-vip (bin/kube-vip), which harvester-sim runs on each control-plane node ---
step "kube-vip announces the address of default/web once the Service has a ready endpoint: on the node's interface, by gratuitous ARP, and in the Service's ingress"
announce_kube_vip
# --- end of the kube-vip step ---

# --- host maintenance (issue 34) ---
# vm_host VM: the host column of harvester-sim status' VM table.
vm_host() {
  harvester-sim status --state-dir "$state" | sed -n '/^NAMESPACE *VM /,/^$/p' | awk -v vm="$1" '$2 == vm {print $5}'
}
# guest_node NODE: NODE's line of the guest cluster's node table.
guest_node() {
  harvester-sim status --state-dir "$state" | sed -n '/^GUEST CLUSTER *NODE *STATUS/,/^$/p' | awk -v n="$2" -v c="$1" '$1 == c && $2 == n'
}
mnt_node=${vip_node:-${machines[0]}}
mnt_host=$(vm_host "$mnt_node")
mnt_ip=$(rancher-machine ip "$mnt_node")
step "Host maintenance: what happens to $cluster if $mnt_host (where $mnt_node runs) goes into maintenance (harvester-bootstrap maintenance-check), then Harvester's enableMaintenanceMode (harvester-sim maintenance)"
harvester-bootstrap maintenance-check --kubeconfig "$state/kubeconfig" --cluster-name "$cluster" --namespace default \
  --guest-kubeconfig "$guest_kubeconfig" "$mnt_host"
harvester-sim maintenance enable --state-dir "$state" "$mnt_host"
now_host=$(vm_host "$mnt_node"); now_ip=$(rancher-machine ip "$mnt_node"); now_state=$(rancher-machine status "$mnt_node")
echo "$mnt_node: live-migrated from $mnt_host to $now_host; rancher-machine status $now_state, ip $now_ip (before: $mnt_ip)" >&2
[ "$now_host" != "$mnt_host" ] && [ "$now_ip" = "$mnt_ip" ] && [ "$now_state" = Running ] ||
  { echo "the machine did not survive the maintenance unchanged" >&2; exit 1; }
echo "its guest node (harvester-sim status):" >&2
guest_node "$cluster" "$mnt_node" | sed 's/^/    /'
guest_node "$cluster" "$mnt_node" | grep -q " Ready " || { echo "$mnt_node is not Ready" >&2; exit 1; }
if [ -n "${vip_node:-}" ]; then
  node_addrs "$vip_node" | grep -q " $vip/32" || { echo "kube-vip no longer holds $vip on $vip_node" >&2; exit 1; }
  echo "kube-vip still announces $vip on $vip_node (ip -br addr show eth0 there):" >&2
  node_addrs "$vip_node" | sed 's/^/    /'
fi
harvester-sim maintenance disable --state-dir "$state" "$mnt_host"
# --- end of the host maintenance step ---

# --- the leftover LoadBalancer and gc (issue 29) ---
step "The Service goes: kube-vip withdraws the address; the cloud provider deletes the LoadBalancer only with status.address set, which it copies from the ingress only during a sync (as on Harvester: harvester#1460, #11345)"
"$tools/ccmlb" delete --guest-kubeconfig "$guest_kubeconfig" --service default/web
withdrawn_kube_vip
sed 's/^/    /' "$work/ccm.log" >&2
# The LoadBalancer (ADDRESS "-": status.address never set) and the pool
# address it still holds.
harvester-sim status --state-dir "$state" | sed -n '/^NAMESPACE *LOADBALANCER/,/^GUEST CLUSTER/p' | sed '$d'

step "harvester-bootstrap gc --guest-kubeconfig finds the LoadBalancer whose Service is gone, and --delete removes it"
echo "harvester-bootstrap doctor's row for it (with the command that fixes it):" >&2
{ harvester-bootstrap doctor --kubeconfig "$state/kubeconfig" --cluster-name "$cluster" --namespace default \
    --guest-kubeconfig "$guest_kubeconfig" 2>/dev/null || true; } | grep -A1 -E '^loadbalancer-leftovers '
harvester-bootstrap gc --kubeconfig "$state/kubeconfig" --cluster-name "$cluster" --namespace default \
  --guest-kubeconfig "$guest_kubeconfig"
harvester-bootstrap gc --kubeconfig "$state/kubeconfig" --cluster-name "$cluster" --namespace default \
  --guest-kubeconfig "$guest_kubeconfig" --delete
for _ in $(seq 1 100); do
  harvester-sim status --state-dir "$state" | sed -n '/^NAMESPACE *LOADBALANCER/,/^GUEST CLUSTER/p' | grep -q "$cluster-default-web-" || break
  sleep 0.2
done
echo "the LoadBalancer is gone and its address is back in the pool:" >&2
harvester-sim status --state-dir "$state" | sed -n '/^IPPOOL/,/^$/p'
kill -TERM "$ccm_pid"; wait "$ccm_pid" || true
ccm_pid=""
"$tools/ccmlb" delete-pool --kubeconfig "$state/kubeconfig" --file "$work/pool.yaml"
# --- end of the leftover LoadBalancer and gc ---

step "A volume for $cluster: the CSI driver's calls with the guest's credential, hot-plugged into ${machines[0]}'s VM"
# What harvester-csi-driver v0.2.9 does for a guest PVC: a host PVC named
# after the volume, Bound, then addvolume on the node's VM; KubeVirt reports
# the disk in the VMI's status.
"$tools/csiattach" attach --guest-kubeconfig "$guest_kubeconfig" --node "${machines[0]}" --volume pvc-demo-data
echo "harvester-bootstrap doctor's storage rows:" >&2
{ harvester-bootstrap doctor --kubeconfig "$state/kubeconfig" --cluster-name "$cluster" --namespace default \
    --guest-kubeconfig "$guest_kubeconfig" 2>/dev/null || true; } | grep -E '^(CHECK|csi-storageclass|volumes|guest-volumes) '
"$tools/csiattach" detach --guest-kubeconfig "$guest_kubeconfig" --node "${machines[0]}" --volume pvc-demo-data

step "RKE1 cluster.yml add-ons for $cluster (harvester-bootstrap addon rke1), summarised"
harvester-bootstrap addon rke1 --cluster-name "$cluster" --namespace default --csi > "$work/rke1-addons.yaml"
echo "$(wc -l < "$work/rke1-addons.yaml") lines; the objects it holds:"
# Objects' kinds sit two spaces in (inside the addons block); deeper ones
# are references (roleRef, subjects).
grep -E '^  kind: ' "$work/rke1-addons.yaml" | sed -E 's/^  kind: //' | sort | uniq -c | sed 's/^/    /'
echo "kube-vip announces the load balancers' addresses here too: $(grep -cE '^      app.kubernetes.io/name: kube-vip$' "$work/rke1-addons.yaml") kube-vip objects (ServiceAccount, RBAC, DaemonSet)"

step "Removing the machines as Rancher's delete job does (rm -y --update-config, credential only in the environment)"
for m in "${machines[@]}"; do rancher-machine rm -y --update-config "$m" >/dev/null && progress "removed $m"; done
harvester-bootstrap kubeconfig revoke --cluster-name "$cluster" --namespace default

step "Nothing is left (no VMs, load balancers or pools; the guest cluster went with its machines)"
for _ in $(seq 1 100); do [ -d "$state/guests/$cluster" ] || break; sleep 0.2; done
harvester-sim status --state-dir "$state"
[ ! -d "$state/guests/$cluster" ] || { echo "guest cluster $cluster still runs" >&2; exit 1; }
left=$(rancher-machine ls -q 2>/dev/null | grep -vc '^(' || true)
echo "machines known to rancher-machine: $left" >&2
[ "$left" -eq 0 ]

step "Stopping the simulator"
kill -TERM "$sim_pid"; wait "$sim_pid" || true
sim_pid=""
step ""
printf '\n\033[1mDemo finished in %ds\033[0m\n' $((SECONDS - demo_start)) >&2
