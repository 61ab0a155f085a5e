#!/usr/bin/env bash
# `make demo`: the whole flow against a simulated Harvester, the way Rancher
# runs it, then cleans up. Needs bin/ built (`make build tools`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
export PATH="$bin:$PATH"
work=$(mktemp -d "${TMPDIR:-/tmp}/harvester-demo.XXXXXX")
state="$work/sim"
sim_pid=""

step() { printf '\n\033[1m==> %s\033[0m\n' "$*" >&2; }
mask() { sed -E 's/((token|client-key-data|client-certificate-data)(:|=)[ "]*)[^ "]{12,}/\1<masked>/g; s/[A-Za-z0-9+\/=]{120,}/<masked base64>/g'; }
cleanup() {
  if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
    kill -TERM "$sim_pid"; wait "$sim_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$work/ccmlb" ./test/demo/ccmlb)

step "Starting the simulated Harvester (real etcd, kube-apiserver, kube-controller-manager) with guest clusters"
harvester-sim --state-dir "$state" --guest-clusters 2>"$work/sim.log" &
sim_pid=$!
for _ in $(seq 1 600); do
  [ -f "$state/ready" ] && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$work/sim.log" >&2; exit 1; }
  sleep 0.1
done
[ -f "$state/ready" ] || { echo "simulator not ready after 60s" >&2; cat "$work/sim.log" >&2; exit 1; }
grep -o 'simulated Harvester ready.*' "$work/sim.log" >&2 || true
harvester-sim status --state-dir "$state"

cluster=demo
pool=pool1
export MACHINE_STORAGE_PATH="$work/machine"
export HARVESTER_KUBECONFIG_CONTENT
HARVESTER_KUBECONFIG_CONTENT=$(cat "$state/kubeconfig")
printf '#!/bin/sh\necho "the Rancher agent would be installed here"\n' > "$work/install.sh"
export KUBECONFIG="$state/kubeconfig"

step "Cloud provider: the driver makes guest cluster $cluster's credential and writes the K3s add-ons into each node (--harvester-cloud-provider=k3s)"
# A K3s install user data of your own would go in --harvester-user-data; the
# driver adds the credential, the CCM/CSI manifests and the config drop-in.

step "Creating node pool $cluster-$pool (3 K3s machines) through rancher-machine, as Rancher does"
machines=()
pids=()
for i in 1 2 3; do
  name="$cluster-$pool-$(head -c 64 /dev/urandom | tr -dc 'a-z0-9' | head -c 5)"
  machines+=("$name")
  rancher-machine create --driver harvester \
    --custom-install-script "$work/install.sh" \
    --harvester-cluster-name "$cluster" \
    --harvester-cloud-provider k3s \
    --harvester-vm-namespace default \
    --harvester-image-name default/ubuntu-22.04 \
    --harvester-network-name default/vlan1 \
    --harvester-ssh-user ubuntu \
    --harvester-cpu-count 2 --harvester-memory-size 4 --harvester-disk-size 20 \
    "$name" >"$work/create-$name.log" 2>&1 &
  pids+=($!)
done
for idx in "${!pids[@]}"; do
  if ! wait "${pids[$idx]}"; then
    echo "create of ${machines[$idx]} failed:" >&2; cat "$work/create-${machines[$idx]}.log" >&2; exit 1
  fi
  echo "created ${machines[$idx]}" >&2
done
grep -h 'cloud-provider credential' "$work"/create-*.log | head -1 >&2 || true


step "Machines as rancher-machine sees them (ls -q, status, ip)"
# The table form of `rancher-machine ls` panics upstream for machines created
# with --custom-install-script (as Rancher creates them), so ask each one.
for m in "${machines[@]}"; do
  printf '%-22s %-8s %s\n' "$m" "$(rancher-machine status "$m")" "$(rancher-machine ip "$m")"
done

step "Guest cluster $cluster comes up: the machines join as nodes, K3s applies the add-ons from their cloud-init"
guest_kubeconfig="$state/guests/$cluster/kubeconfig"
for _ in $(seq 1 300); do
  harvester-sim status --state-dir "$state" > "$work/status.txt" 2>&1 || true
  [ "$(grep -c "^$cluster .* Ready " "$work/status.txt")" -eq 3 ] && grep -q "harvester-addons (" "$work/status.txt" && break
  sleep 0.2
done
cat "$work/status.txt"
grep -q "harvester-addons (" "$work/status.txt" || { echo "the guest cluster did not come up" >&2; tail -20 "$work/sim.log" >&2; exit 1; }
echo "guest cluster kubeconfig: $guest_kubeconfig (mode $(stat -c %a "$guest_kubeconfig"))" >&2

step "A load balancer for Service default/web of $cluster: an IP pool for the cluster, then the cloud provider's LoadBalancer"
harvester-bootstrap lb pool --name "$cluster-lb" --range 192.168.100.0/24@192.168.100.10-192.168.100.20 \
  --scope-guest-cluster "$cluster" > "$work/pool.yaml"
cat "$work/pool.yaml"
"$work/ccmlb" apply-pool --kubeconfig "$state/kubeconfig" --file "$work/pool.yaml"
# With the cloud-config the guest's add-ons hold, as the CCM does.
"$work/ccmlb" create --guest-kubeconfig "$guest_kubeconfig" --cluster "$cluster" --service default/web
harvester-sim status --state-dir "$state" | sed -n '/^NAMESPACE *LOADBALANCER/,/^GUEST CLUSTER/p' | sed '$d'

step "The Service goes: the cloud provider deletes the LoadBalancer and the address returns to the pool"
"$work/ccmlb" delete --guest-kubeconfig "$guest_kubeconfig" --cluster "$cluster" --service default/web
harvester-sim status --state-dir "$state" | sed -n '/^IPPOOL/,/^$/p'
"$work/ccmlb" delete-pool --kubeconfig "$state/kubeconfig" --file "$work/pool.yaml"

step "RKE1 cluster.yml add-ons for $cluster (harvester-bootstrap addon rke1; secrets masked)"
harvester-bootstrap addon rke1 --cluster-name "$cluster" --namespace default --csi > "$work/rke1-addons.yaml"
mask < "$work/rke1-addons.yaml" | sed -n '1,40p'
echo "... ($(wc -l < "$work/rke1-addons.yaml") lines in all)"

step "Removing the machines (rancher-machine rm -y --update-config)"
for m in "${machines[@]}"; do rancher-machine rm -y --update-config "$m" >/dev/null && echo "removed $m" >&2; done
harvester-bootstrap kubeconfig revoke --cluster-name "$cluster" --namespace default

step "Nothing is left (no VMs, load balancers or pools; the guest cluster went with its machines)"
for _ in $(seq 1 100); do [ -d "$state/guests/$cluster" ] || break; sleep 0.2; done
harvester-sim status --state-dir "$state"
[ ! -d "$state/guests/$cluster" ] || { echo "guest cluster $cluster still runs" >&2; exit 1; }
left=$(rancher-machine ls -q 2>/dev/null | grep -vc '^(' || true)
echo "machines known to rancher-machine: $left" >&2
[ "$left" -eq 0 ]
step "Demo finished"
