// Package nodefiles renders what a guest cluster's nodes need on disk for
// the Harvester cloud provider (CCM) and CSI driver, per distribution. It
// is pure (no I/O) and shared by harvester-bootstrap (`addon`, `userdata`)
// and the node driver, so both write the same files:
//
//   - rke2: the Harvester kubeconfig at /var/lib/rancher/rke2/etc/config-files/cloud-provider-config,
//     a config.yaml.d drop-in with `cloud-provider-name: harvester` and
//     `cloud-provider-config` pointing at it (RKE2 then runs its bundled CCM
//     and CSI charts), and a HelmChartConfig giving the CCM chart the
//     cluster name;
//   - k3s: one file in the auto-deploy folder /var/lib/rancher/k3s/server/manifests
//     with the cloud-config Secret (the kubeconfig the CCM and CSI mount) and
//     the pinned CCM (`--cluster-name=<cluster>`) and CSI add-ons, plus a
//     config.yaml.d drop-in with `disable-cloud-controller: true` and
//     `kubelet-arg: [cloud-provider=external]` (harmless on agents, which
//     ignore the first and need the second);
//   - rke1: the kubeconfig at /etc/kubernetes/cloud-config (the add-ons go
//     into cluster.yml, see RKE1ClusterYML).
//
// Drop-ins merge with whatever Rancher or the user writes to config.yaml.
package nodefiles
