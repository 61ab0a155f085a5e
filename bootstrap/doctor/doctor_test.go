package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

const (
	cluster = "guest-a"
	ns      = "default"
)

func vm(name string) kubevirtv1.VirtualMachine {
	labels := harvester.MachineLabels(ns, name, cluster)
	return kubevirtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Labels: labels},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: harvester.MachineLabels(ns, name, cluster)},
		}},
		Status: kubevirtv1.VirtualMachineStatus{PrintableStatus: kubevirtv1.VirtualMachineStatusRunning},
	}
}

func vmi(name, zone string) kubevirtv1.VirtualMachineInstance {
	return kubevirtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{
			harvester.ZoneKey: zone, harvester.RegionKey: "r1", harvester.HostnameKey: "host-" + zone,
		}},
		Status: kubevirtv1.VirtualMachineInstanceStatus{Interfaces: []kubevirtv1.VirtualMachineInstanceNetworkInterface{{IP: "10.0.0.5"}}},
	}
}

func pool(name string, available int64) lbapi.IPPool {
	return lbapi.IPPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       lbapi.IPPoolSpec{Selector: lbapi.Selector{Scope: []lbapi.Scope{{Namespace: ns, GuestCluster: cluster}}}},
		Status:     lbapi.IPPoolStatus{Total: 8, Available: available},
	}
}

func loadBalancer(name, clusterLabel, address string) lbapi.LoadBalancer {
	return lbapi.LoadBalancer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{
			harvester.LabelLBCluster: clusterLabel, harvester.LabelLBServiceNamespace: "default", harvester.LabelLBServiceName: "web",
		}, Annotations: map[string]string{lbapi.AnnCluster: clusterLabel}},
		Status: lbapi.LoadBalancerStatus{Address: address},
	}
}

func ccm(args ...string) appsv1.Deployment {
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "harvester-cloud-provider", Namespace: "kube-system"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "harvester-cloud-provider", Image: "rancher/harvester-cloud-provider:v0.2.7", Args: args,
		}}}}}}
}

func kubeVIP(svcEnable string) appsv1.DaemonSet {
	return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-vip", Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "kube-vip", Image: "rancher/mirrored-kube-vip-kube-vip-iptables:v1.2.3", Args: []string{"manager"},
			Env: []corev1.EnvVar{{Name: "svc_enable", Value: svcEnable}, {Name: "vip_arp", Value: "true"}},
		}}}}}}
}

func node(name, zone string) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{harvester.ZoneKey: zone, "node-role.kubernetes.io/control-plane": "true"}},
		Spec: corev1.NodeSpec{ProviderID: harvester.ProviderIDPrefix + "uid-" + name}}
}

func storageClass(name, provisioner string, isDefault bool, params map[string]string) storagev1.StorageClass {
	sc := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, Parameters: params}
	if isDefault {
		sc.Annotations = map[string]string{addons.AnnDefaultStorageClass: "true"}
	}
	return sc
}

func claim(ns, name, class string, phase corev1.PersistentVolumeClaimPhase) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class}, Status: corev1.PersistentVolumeClaimStatus{Phase: phase}}
}

// hotplugged adds the hot-plugged volume name (claim pvc) to the VMI.
func hotplugged(v *kubevirtv1.VirtualMachineInstance, name, pvc string, phase kubevirtv1.VolumePhase, reason string) {
	v.Spec.Volumes = append(v.Spec.Volumes, kubevirtv1.Volume{Name: name, VolumeSource: kubevirtv1.VolumeSource{
		PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
			PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc}}}})
	v.Status.VolumeStatus = append(v.Status.VolumeStatus, kubevirtv1.VolumeStatus{Name: name, Target: "sdb", Phase: phase, Reason: reason,
		HotplugVolume: &kubevirtv1.HotplugVolumeStatus{}})
}

func csiDaemonSet(args ...string) appsv1.DaemonSet {
	return appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: addons.CSIName, Namespace: "kube-system"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: addons.CSIName, Image: "rancher/harvester-csi-driver:v0.2.9", Args: args,
		}}}}}}
}

// healthy is a snapshot on which every check is OK.
// renderedObjects are the add-ons' objects by kind.
type renderedObjects struct {
	daemonSets          []appsv1.DaemonSet
	clusterRoles        []rbacv1.ClusterRole
	clusterRoleBindings []rbacv1.ClusterRoleBinding
}

func rendered(objs []runtime.Object) renderedObjects {
	var r renderedObjects
	for _, o := range objs {
		switch x := o.(type) {
		case *appsv1.DaemonSet:
			r.daemonSets = append(r.daemonSets, *x)
		case *rbacv1.ClusterRole:
			r.clusterRoles = append(r.clusterRoles, *x)
		case *rbacv1.ClusterRoleBinding:
			r.clusterRoleBindings = append(r.clusterRoleBindings, *x)
		}
	}
	return r
}

// endpointSlice of Service ns/svc with one endpoint, ready or not.
func endpointSlice(ns, svc string, ready bool) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: svc + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.42.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}}}
}

func healthy() *clusterstate.Snapshot {
	a := credentials.Access{ClusterName: cluster, Namespace: ns}.WithDefaults()
	objs := credentials.BuildAccess(a)
	grant := credentials.BuildGrant(ns, credentials.GrantOptions{}, credentials.GrantSubjects(ns, []corev1.ServiceAccount{*objs.ServiceAccount}))
	exp := now.Add(30 * 24 * time.Hour)
	vmis := []kubevirtv1.VirtualMachineInstance{vmi("guest-a-pool1-x1", "zone-a"), vmi("guest-a-pool1-x2", "zone-b")}
	hotplugged(&vmis[0], "pvc-1111", "pvc-1111", kubevirtv1.VolumeReady, "VolumeReady")
	va := storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "csi-1111"}, Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "192.168.100.2"}}}}}
	lb := loadBalancer(clusterstate.CloudProviderName(cluster, "default", "web", "uid-web"), cluster, "192.168.100.2")
	lb.Status.AllocatedAddress.IP = "192.168.100.2"
	kv := rendered(addons.KubeVIPObjects(addons.DefaultOptions(cluster)))
	return &clusterstate.Snapshot{
		Now:        now,
		Admin:      clusterstate.Auth{Source: "--kubeconfig", Kind: clusterstate.CredCertificate, User: "admin", Expires: &exp},
		DriverGate: &clusterstate.DriverGate{Serving: []string{"drivers/docker-machine-driver-harvester"}},
		Harvester: clusterstate.Harvester{
			Target:               clusterstate.Target{Cluster: cluster, Namespace: ns},
			VMs:                  []kubevirtv1.VirtualMachine{vm("guest-a-pool1-x1"), vm("guest-a-pool1-x2")},
			VMIs:                 vmis,
			Claims:               []corev1.PersistentVolumeClaim{claim(ns, "pvc-1111", "harvester-longhorn", corev1.ClaimBound)},
			StorageClasses:       []storagev1.StorageClass{storageClass("harvester-longhorn", "driver.longhorn.io", true, nil)},
			ServiceAccounts:      []corev1.ServiceAccount{*objs.ServiceAccount},
			RoleBindings:         []rbacv1.RoleBinding{*objs.RoleBinding, *objs.CSIRoleBinding},
			GrantBindings:        []rbacv1.ClusterRoleBinding{*grant.ReadsBinding},
			GrantRoleBindings:    []rbacv1.RoleBinding{*grant.SharedGrants[0], *grant.SharedGrants[1]},
			GuestServiceAccounts: []string{objs.ServiceAccount.Name},
			TokenSecrets: []clusterstate.TokenSecret{{Namespace: ns, Name: a.TokenSecretName(), ServiceAccount: a.ServiceAccount,
				Labels: objs.TokenSecret.Labels, Filled: true, Auth: &clusterstate.Auth{User: "system:serviceaccount:default:guest-a", Kind: clusterstate.CredJWT}}},
			LoadBalancers: []lbapi.LoadBalancer{lb},
			IPPools:       []lbapi.IPPool{pool("pool-a", 5)},
			Errors:        map[string]string{},
		},
		Guest: &clusterstate.Guest{
			Nodes:               []corev1.Node{node("guest-a-pool1-x1", "zone-a"), node("guest-a-pool1-x2", "zone-b")},
			Services:            []corev1.Service{svc},
			EndpointSlices:      []discoveryv1.EndpointSlice{endpointSlice("default", "web", true)},
			Deployments:         []appsv1.Deployment{ccm("--cloud-config=/etc/kubernetes/cloud-config", "--cluster-name="+cluster)},
			DaemonSets:          []appsv1.DaemonSet{kv.daemonSets[0], csiDaemonSet("--nodeid=$(NODE_ID)")},
			ClusterRoles:        kv.clusterRoles,
			ClusterRoleBindings: kv.clusterRoleBindings,
			PVCs:                []corev1.PersistentVolumeClaim{claim("default", "data", addons.StorageClass, corev1.ClaimBound)},
			StorageClasses:      []storagev1.StorageClass{storageClass(addons.StorageClass, addons.CSIDriverName, true, nil)},
			VolumeAttachments:   []storagev1.VolumeAttachment{va},
			Errors:              map[string]string{},
		},
	}
}

func TestHealthySnapshotIsAllOK(t *testing.T) {
	r := Run(healthy())
	if len(r) != 25 {
		t.Errorf("got %d rows, want 25 (every check once): %+v", len(r), r)
	}
	for _, row := range r {
		if row.Status != OK {
			t.Errorf("%s: %s %q (fix %q), want OK", row.Check, row.Status, row.Seen, row.Fix)
		}
	}
	if r.Failed() {
		t.Error("Failed() on a healthy report")
	}
}

func TestEachCheckFailsOnItsCause(t *testing.T) {
	cases := []struct {
		check  string
		want   Status
		seen   string // part of the row's Seen
		inject func(s *clusterstate.Snapshot)
	}{
		{CheckKubeconfig, Fail, "401", func(s *clusterstate.Snapshot) {
			s.Admin = clusterstate.Auth{Source: "--kubeconfig", Kind: clusterstate.CredJWT, Err: "Unauthorized", Rejected: true}
		}},
		{CheckKubeconfig, Warn, "under 7 days", func(s *clusterstate.Snapshot) {
			exp := now.Add(3 * 24 * time.Hour)
			s.Admin.Expires = &exp
		}},
		{CheckKubeconfig, Fail, "expired", func(s *clusterstate.Snapshot) {
			exp := now.Add(-time.Minute)
			s.Admin.Expires = &exp
		}},
		{CheckCloudConfig, Warn, "under 7 days", func(s *clusterstate.Snapshot) {
			exp := now.Add(24 * time.Hour)
			s.CloudConfig = &clusterstate.Auth{Source: "--cloud-config", Kind: clusterstate.CredJWT, User: "sa", Expires: &exp}
		}},
		{CheckCloudConfig, Fail, "401", func(s *clusterstate.Snapshot) {
			s.CloudConfig = &clusterstate.Auth{Source: "--cloud-config", Kind: clusterstate.CredJWT, Err: "Unauthorized", Rejected: true}
		}},
		{CheckVMs, Fail, "ErrorUnschedulable", func(s *clusterstate.Snapshot) {
			s.Harvester.VMs[1].Status.PrintableStatus = kubevirtv1.VirtualMachineStatusUnschedulable
		}},
		{CheckVMs, Warn, "no VM", func(s *clusterstate.Snapshot) { s.Harvester.VMs = nil }},
		{CheckVMs, Fail, "forbidden", func(s *clusterstate.Snapshot) { s.Harvester.Errors[clusterstate.KindVM] = "list: forbidden" }},
		{CheckCreator, Fail, "guest-a-pool1-x2 (template)", func(s *clusterstate.Snapshot) {
			delete(s.Harvester.VMs[1].Spec.Template.ObjectMeta.Labels, harvester.LabelCreator)
		}},
		{CheckCreator, Fail, "guest-a-pool1-x1", func(s *clusterstate.Snapshot) { delete(s.Harvester.VMs[0].Labels, harvester.LabelCreator) }},
		{CheckTopology, Fail, harvester.ZoneKey, func(s *clusterstate.Snapshot) { delete(s.Harvester.VMIs[0].Annotations, harvester.ZoneKey) }},
		{CheckGuestAgent, Fail, "guest-a-pool1-x2 (no interface address)", func(s *clusterstate.Snapshot) { s.Harvester.VMIs[1].Status.Interfaces = nil }},
		{CheckGuestAgent, Warn, "no running VMI", func(s *clusterstate.Snapshot) { s.Harvester.VMIs, s.Guest = nil, nil }},
		{CheckCredential, Warn, "no ServiceAccount", func(s *clusterstate.Snapshot) { s.Harvester.ServiceAccounts = nil }},
		{CheckCredential, Fail, "RoleBinding guest-a-csi-driver (harvesterhci.io:csi-driver) missing", func(s *clusterstate.Snapshot) {
			s.Harvester.RoleBindings = s.Harvester.RoleBindings[:1]
		}},
		{CheckCredentialScope, Warn, "harvesterhci.io:csi-driver bound cluster-wide (ClusterRoleBinding) for guest-a", func(s *clusterstate.Snapshot) {
			wide := credentials.BuildAccess(credentials.Access{ClusterName: cluster, Namespace: ns, CSIClusterWide: true}.WithDefaults())
			s.Harvester.RoleBindings = s.Harvester.RoleBindings[:1] // made before the RoleBinding
			s.Harvester.ClusterRoleBindings = []rbacv1.ClusterRoleBinding{*wide.ClusterRoleBinding}
		}},
		{CheckCredentialScope, Fail, "namespace default has no grant harvester-bootstrap:guest-namespace:default", func(s *clusterstate.Snapshot) {
			s.Harvester.GrantBindings = nil
		}},
		{CheckCredentialScope, Fail, "ClusterRoleBinding harvester-bootstrap:guest-namespace:default names group system:serviceaccounts:default", func(s *clusterstate.Snapshot) {
			s.Harvester.GrantBindings[0].Subjects = []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: "system:serviceaccounts:default"}} // made before
		}},
		{CheckCredentialScope, Fail, "RoleBinding harvester-system/harvester-bootstrap:guest-namespace:default names ServiceAccount default/app that is no guest credential", func(s *clusterstate.Snapshot) {
			s.Harvester.GrantRoleBindings[0].Subjects = append(s.Harvester.GrantRoleBindings[0].Subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "app", Namespace: ns})
		}},
		{CheckCredentialScope, Fail, "does not name the cluster's ServiceAccount guest-a in ClusterRoleBinding", func(s *clusterstate.Snapshot) {
			s.Harvester.GrantBindings[0].Subjects = nil
		}},
		{CheckNamespaceShared, Warn, "also holds VMs of guest cluster(s) guest-b", func(s *clusterstate.Snapshot) {
			other := vm("guest-b-pool1-y1")
			other.Labels[harvester.LabelGuestCluster] = "guest-b"
			s.Harvester.VMs = append(s.Harvester.VMs, other)
		}},
		{CheckCredential, Fail, "RoleBinding guest-a-cloudprovider missing", func(s *clusterstate.Snapshot) { s.Harvester.RoleBindings = nil }},
		{CheckCredential, Fail, "has no token", func(s *clusterstate.Snapshot) {
			s.Harvester.TokenSecrets[0].Filled, s.Harvester.TokenSecrets[0].Auth = false, nil
		}},
		{CheckToken, Fail, "guest-a-token does not authenticate", func(s *clusterstate.Snapshot) {
			s.Harvester.TokenSecrets[0].Auth = &clusterstate.Auth{Err: "Unauthorized", Rejected: true}
		}},
		{CheckLoadBalancers, Fail, "no IP addresses available", func(s *clusterstate.Snapshot) {
			l := &s.Harvester.LoadBalancers[0]
			l.Status.Address, l.Status.AllocatedAddress.IP = "", ""
			l.Status.Conditions = []lbapi.Condition{{Type: lbapi.ConditionReady, Status: "False", Message: "no IP addresses available in range set: 192.168.100.2-192.168.100.9"}}
		}},
		{CheckLoadBalancers, Warn, "kubernetes", func(s *clusterstate.Snapshot) {
			s.Harvester.LoadBalancers = append(s.Harvester.LoadBalancers, loadBalancer("kubernetes-default-x-11111111", DefaultCCMCluster, "192.168.100.3"))
		}},
		{CheckIPPools, Fail, "pool-a 0 of 8 free", func(s *clusterstate.Snapshot) { s.Harvester.IPPools[0].Status.Available = 0 }},
		{CheckIPPools, Fail, "no matched IPPool", func(s *clusterstate.Snapshot) { s.Harvester.IPPools = nil }},
		{CheckIPPools, Warn, "no matched IPPool", func(s *clusterstate.Snapshot) {
			s.Harvester.IPPools, s.Harvester.LoadBalancers = nil, nil
			s.Guest.Services = nil
		}},
		{CheckLeftovers, Warn, "LoadBalancer default/" + clusterstate.CloudProviderName(cluster, "default", "web", "uid-web"), func(s *clusterstate.Snapshot) {
			s.Harvester.VMs, s.Harvester.VMIs, s.Guest = nil, nil, nil
		}},
		{CheckNodes, Fail, "taint node.cloudprovider.kubernetes.io/uninitialized", func(s *clusterstate.Snapshot) {
			s.Guest.Nodes[0].Spec.Taints = []corev1.Taint{{Key: harvester.TaintUninitialized, Effect: corev1.TaintEffectNoSchedule}}
		}},
		{CheckNodes, Fail, "providerID unset", func(s *clusterstate.Snapshot) { s.Guest.Nodes[1].Spec.ProviderID = "" }},
		{CheckZones, Fail, `guest-a-pool1-x1 (node "zone-b", host "zone-a")`, func(s *clusterstate.Snapshot) {
			s.Guest.Nodes[0].Labels[harvester.ZoneKey] = "zone-b"
		}},
		{CheckCCMCluster, Fail, "--cluster-name=kubernetes (flag not set)", func(s *clusterstate.Snapshot) {
			s.Guest.Deployments = []appsv1.Deployment{ccm("--cloud-config=/etc/kubernetes/cloud-config")}
		}},
		{CheckCCMCluster, Fail, "--cluster-name=other", func(s *clusterstate.Snapshot) {
			s.Guest.Deployments = []appsv1.Deployment{ccm("--cluster-name", "other")}
		}},
		{CheckCCMCluster, Fail, "no harvester-cloud-provider", func(s *clusterstate.Snapshot) { s.Guest.Deployments = nil }},
		{CheckGuestServices, Fail, "default/web: LoadBalancer " + clusterstate.CloudProviderName(cluster, "default", "web", "uid-web") + ` carries cluster "kubernetes"`, func(s *clusterstate.Snapshot) {
			s.Harvester.LoadBalancers[0].Labels[harvester.LabelLBCluster] = DefaultCCMCluster
		}},
		{CheckGuestServices, Fail, "no Harvester LoadBalancer", func(s *clusterstate.Snapshot) { s.Harvester.LoadBalancers = nil }},
		{CheckKubeVIP, Fail, "no kube-vip in kube-system: nothing announces default/web 192.168.100.2", func(s *clusterstate.Snapshot) { s.Guest.DaemonSets = nil }},
		{CheckKubeVIP, Fail, "nothing announces default/web 10.9.9.9", func(s *clusterstate.Snapshot) {
			s.Guest.DaemonSets, s.Harvester.LoadBalancers = nil, nil
			s.Guest.Services[0].Annotations = map[string]string{"kube-vip.io/loadbalancerIPs": "10.9.9.9"}
		}},
		{CheckKubeVIP, Warn, "the cloud provider runs without kube-vip", func(s *clusterstate.Snapshot) {
			s.Guest.DaemonSets, s.Guest.Services = nil, nil
		}},
		{CheckKubeVIP, Fail, `DaemonSet kube-vip svc_enable="false": it announces no Service addresses`, func(s *clusterstate.Snapshot) {
			s.Guest.DaemonSets = []appsv1.DaemonSet{kubeVIP("false")}
		}},
		{CheckKubeVIP, Fail, "DaemonSet kube-vip svc_enable=unset", func(s *clusterstate.Snapshot) {
			s.Guest.DaemonSets = []appsv1.DaemonSet{kubeVIP("")}
			s.Guest.DaemonSets[0].Spec.Template.Spec.Containers[0].Env = nil
		}},
		{CheckCSIStorageClass, Fail, "no default StorageClass", func(s *clusterstate.Snapshot) {
			s.Harvester.StorageClasses[0].Annotations = nil
		}},
		{CheckCSIStorageClass, Fail, "not on Harvester: fast (--host-storage-class); Harvester has: harvester-longhorn", func(s *clusterstate.Snapshot) {
			s.HostStorageClass = "fast"
		}},
		{CheckCSIStorageClass, Fail, "not on Harvester: ssd (DaemonSet harvester-csi-driver --host-storage-class)", func(s *clusterstate.Snapshot) {
			s.Guest.DaemonSets = []appsv1.DaemonSet{csiDaemonSet("--host-storage-class=ssd")}
		}},
		{CheckCSIStorageClass, Fail, "not on Harvester: nvme (guest StorageClass harvester)", func(s *clusterstate.Snapshot) {
			s.Guest.StorageClasses[0].Parameters = map[string]string{addons.ParamHostStorageClass: "nvme"}
		}},
		{CheckCSIStorageClass, Fail, "forbidden", func(s *clusterstate.Snapshot) { s.Harvester.Errors[clusterstate.KindStorageClass] = "list: forbidden" }},
		{CheckVolumes, Fail, `guest-a-pool1-x1: volume pvc-2222 Pending (PVCNotReady: PVC is in phase ClaimPending), host PVC pvc-2222 is Pending: StorageClass "gone" not found on Harvester`, func(s *clusterstate.Snapshot) {
			hotplugged(&s.Harvester.VMIs[0], "pvc-2222", "pvc-2222", kubevirtv1.VolumePending, "PVCNotReady")
			s.Harvester.VMIs[0].Status.VolumeStatus[1].Message = "PVC is in phase ClaimPending"
			s.Harvester.Claims = append(s.Harvester.Claims, claim(ns, "pvc-2222", "gone", corev1.ClaimPending))
		}},
		{CheckVolumes, Fail, "host PVC pvc-3333 does not exist", func(s *clusterstate.Snapshot) {
			hotplugged(&s.Harvester.VMIs[1], "pvc-3333", "pvc-3333", kubevirtv1.VolumePending, "FailedPvcNotFound")
		}},
		{CheckVolumes, Fail, "host PVC pvc-4444 is Pending", func(s *clusterstate.Snapshot) {
			hotplugged(&s.Harvester.VMIs[1], "pvc-4444", "pvc-4444", kubevirtv1.VolumePending, "PVCNotReady")
			s.Harvester.Claims = append(s.Harvester.Claims, claim(ns, "pvc-4444", "harvester-longhorn", corev1.ClaimPending))
		}},
		{CheckVolumes, Warn, "guest-a-pool1-x2: request to add volume pvc-5555 not applied yet", func(s *clusterstate.Snapshot) {
			s.Harvester.VMs[1].Status.VolumeRequests = []kubevirtv1.VirtualMachineVolumeRequest{{AddVolumeOptions: &kubevirtv1.AddVolumeOptions{Name: "pvc-5555"}}}
		}},
		{CheckKubeVIP, Warn, "vip_nodename unset: kube-vip takes the hostname", func(s *clusterstate.Snapshot) {
			c := &s.Guest.DaemonSets[0].Spec.Template.Spec.Containers[0]
			c.Env = c.Env[:len(c.Env)-1]
		}},
		{CheckKubeVIP, Fail, "pod kube-vip-x1 on guest-a-pool1-x1: CrashLoopBackOff: unable to find interface eth9", func(s *clusterstate.Snapshot) {
			ds := s.Guest.DaemonSets[0]
			s.Guest.SystemPods = []corev1.Pod{{
				ObjectMeta: metav1.ObjectMeta{Name: "kube-vip-x1", Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels},
				Spec:       corev1.PodSpec{NodeName: "guest-a-pool1-x1"},
				Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
					State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: "unable to find interface eth9\n"}},
				}}},
			}}
		}},
		{CheckKubeVIP, Fail, "ServiceAccount kube-system/kube-vip may not update services/status", func(s *clusterstate.Snapshot) {
			s.Guest.ClusterRoleBindings = nil
		}},
		{CheckKubeVIP, Fail, "can run on none of the 2 nodes (guest-a-pool1-x1: no label its required node affinity asks for)", func(s *clusterstate.Snapshot) {
			for i := range s.Guest.Nodes {
				delete(s.Guest.Nodes[i].Labels, "node-role.kubernetes.io/control-plane")
			}
		}},
		{CheckKubeVIP, Fail, "taint node.cloudprovider.kubernetes.io/uninitialized:NoSchedule not tolerated", func(s *clusterstate.Snapshot) {
			for i := range s.Guest.Nodes {
				s.Guest.Nodes[i].Spec.Taints = []corev1.Taint{{Key: harvester.TaintUninitialized, Value: "true", Effect: corev1.TaintEffectNoSchedule},
					{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
			}
		}},
		{CheckLBAnnounced, Warn, "status.address unset: " + NoStatusAddress, func(s *clusterstate.Snapshot) {
			s.Harvester.LoadBalancers[0].Status.Address = ""
		}},
		{CheckLBAnnounced, Warn, "no endpoints: " + NoEndpoints, func(s *clusterstate.Snapshot) {
			s.Guest.EndpointSlices = nil
		}},
		{CheckLBAnnounced, Warn, "ingress none does not hold 192.168.100.2: " + NoIngress, func(s *clusterstate.Snapshot) {
			s.Guest.Services[0].Status = corev1.ServiceStatus{}
		}},
		{CheckLBLeftovers, Warn, "Service default/web no longer exists in the guest cluster", func(s *clusterstate.Snapshot) {
			s.Guest.Services = nil
		}},
		{CheckLBLeftovers, Warn, "Service default/web was re-created (UID uid-new)", func(s *clusterstate.Snapshot) {
			s.Guest.Services[0].UID = "uid-new"
		}},
		{CheckLBLeftovers, Fail, "could not be listed", func(s *clusterstate.Snapshot) {
			s.Guest.Errors[clusterstate.KindService] = "list Services in the guest cluster: Unauthorized"
		}},
		{CheckGuestVolumes, Fail, `default/web-data Pending: StorageClass "fast" not found in the guest cluster`, func(s *clusterstate.Snapshot) {
			s.Guest.PVCs = append(s.Guest.PVCs, claim("default", "web-data", "fast", corev1.ClaimPending))
		}},
		{CheckGuestVolumes, Fail, "default/db Pending: waiting for harvester-csi-driver", func(s *clusterstate.Snapshot) {
			s.Guest.PVCs = append(s.Guest.PVCs, claim("default", "db", addons.StorageClass, corev1.ClaimPending))
		}},
		{CheckGuestVolumes, Fail, "default/x Pending: no StorageClass and the guest cluster has no default", func(s *clusterstate.Snapshot) {
			p := claim("default", "x", "", corev1.ClaimPending)
			p.Spec.StorageClassName = nil
			s.Guest.PVCs, s.Guest.StorageClasses[0].Annotations = append(s.Guest.PVCs, p), nil
		}},
		{CheckGuestVolumes, Fail, "VolumeAttachment csi-1111 (volume pvc-1111 on node guest-a-pool1-x1): rpc error: attach timed out", func(s *clusterstate.Snapshot) {
			pv := "pvc-1111"
			va := &s.Guest.VolumeAttachments[0]
			va.Spec.Source.PersistentVolumeName, va.Spec.NodeName = &pv, "guest-a-pool1-x1"
			va.Status = storagev1.VolumeAttachmentStatus{AttachError: &storagev1.VolumeError{Message: "rpc error: attach timed out"}}
		}},
	}
	for _, c := range cases {
		t.Run(c.check+"/"+c.seen, func(t *testing.T) {
			s := healthy()
			c.inject(s)
			r := Run(s)
			row := r.Row(c.check)
			if row == nil {
				t.Fatalf("no %s row in %+v", c.check, r)
			}
			if row.Status != c.want || !strings.Contains(row.Seen, c.seen) {
				t.Errorf("%s = %s %q, want %s containing %q", c.check, row.Status, row.Seen, c.want, c.seen)
			}
			if row.Fix == "" {
				t.Errorf("%s %s without a fix", c.check, row.Status)
			}
			if r.Failed() != (c.want == Fail) {
				t.Errorf("Failed() = %v with %s %s", r.Failed(), c.check, c.want)
			}
		})
	}
}

func TestRejectedAdminReportsOnlyCredentialRows(t *testing.T) {
	s := healthy()
	s.Admin = clusterstate.Auth{Source: "--kubeconfig", Err: "Unauthorized", Rejected: true}
	r := Run(s)
	if len(r) != 1 || r[0].Check != CheckKubeconfig || !strings.Contains(r[0].Fix, "5827") {
		t.Errorf("report = %+v, want only the kubeconfig row with the 5827 advice", r)
	}
}

func TestOutputs(t *testing.T) {
	s := healthy()
	s.Harvester.IPPools[0].Status.Available = 0
	r := Run(s)
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "ip-pools") || !strings.Contains(table.String(), "  fix: create an IPPool") {
		t.Errorf("table:\n%s", table.String())
	}
	var got struct {
		Failed bool  `json:"failed"`
		Checks []Row `json:"checks"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Failed || len(got.Checks) != len(r) || got.Checks[0].Check != CheckKubeconfig {
		t.Errorf("json = %+v", got)
	}
}

// TestKubeVIPAsRendered: the kube-vip the add-ons render passes the check.
func TestKubeVIPAsRendered(t *testing.T) {
	s := healthy()
	s.Guest.DaemonSets = nil
	for _, obj := range addons.KubeVIPObjects(addons.DefaultOptions(cluster)) {
		if ds, ok := obj.(*appsv1.DaemonSet); ok {
			s.Guest.DaemonSets = append(s.Guest.DaemonSets, *ds)
		}
	}
	if row := KubeVIP(s); row.Status != OK || row.Seen != "DaemonSet kube-vip svc_enable=true (vip_nodename from spec.nodeName; RBAC of ServiceAccount kube-vip complete; runs on 2 of 2 nodes)" {
		t.Errorf("rendered kube-vip: %+v", row)
	}
}

// TestLBAnnouncedDetails: kube-vip's annotation stands in for ready
// endpoints; an unset status.address gets the resync advice; the leftover
// row prints the exact gc command with the guest kubeconfig as given.
func TestLBAnnouncedDetails(t *testing.T) {
	s := healthy()
	s.Guest.EndpointSlices = nil
	s.Guest.Services[0].Annotations = map[string]string{AnnotationAllowWithoutEndpoints: "true"}
	if row := LBAnnounced(s); row.Status != OK {
		t.Errorf("without endpoints but with %s: %+v", AnnotationAllowWithoutEndpoints, row)
	}
	s.Harvester.LoadBalancers[0].Status.Address = ""
	if row := LBAnnounced(s); row.Status != Warn || !strings.Contains(row.Fix, "harvester-bootstrap/resync=1") {
		t.Errorf("status.address unset: %+v", row)
	}
	s.Guest.Services = nil
	s.GuestKubeconfig = "/tmp/guest.yaml"
	want := "`harvester-bootstrap gc --cluster-name guest-a --namespace default --guest-kubeconfig /tmp/guest.yaml --delete`"
	if row := LBLeftovers(s); row.Status != Warn || !strings.HasPrefix(row.Fix, want) || !strings.HasPrefix(row.Seen, "1 holding pool addresses: ") {
		t.Errorf("leftover: %+v, want the fix to start with %s", row, want)
	}
}

// TestKubeVIPRunsWhereDaemonSetsTolerate: the taints the DaemonSet
// controller tolerates for every pod (an unreachable node's) do not keep
// kube-vip off a node.
func TestKubeVIPRunsWhereDaemonSetsTolerate(t *testing.T) {
	s := healthy()
	for i := range s.Guest.Nodes {
		s.Guest.Nodes[i].Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute},
			{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}
	}
	if row := KubeVIP(s); row.Status != OK || !strings.Contains(row.Seen, "runs on 2 of 2 nodes") {
		t.Errorf("kube-vip on unreachable, cordoned nodes: %+v", row)
	}
}

// TestNotReadyEndpointCounts: kube-vip v1.2.x announces a Service whose
// only endpoint is not ready (measured with v1.2.2), so doctor does not
// warn about it.
func TestNotReadyEndpointCounts(t *testing.T) {
	s := healthy()
	s.Guest.EndpointSlices = []discoveryv1.EndpointSlice{endpointSlice("default", "web", false)}
	if row := Run(s).Row(CheckLBAnnounced); row == nil || row.Status != OK {
		t.Errorf("%s with a not-ready endpoint: %+v, want OK", CheckLBAnnounced, row)
	}
}
