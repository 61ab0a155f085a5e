package capacity

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func quota(name string, labels map[string]string, hard, used map[string]string) corev1.ResourceQuota {
	rl := func(m map[string]string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for k, v := range m {
			out[corev1.ResourceName(k)] = resource.MustParse(v)
		}
		return out
	}
	return corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Labels: labels},
		Spec: corev1.ResourceQuotaSpec{Hard: rl(hard)}, Status: corev1.ResourceQuotaStatus{Hard: rl(hard), Used: rl(used)}}
}

func testEnv(ratio, arch string) quotaEnv {
	oc, _ := harvester.ParseOvercommit("")
	return quotaEnv{ratio: ratio, overcommit: oc, arch: arch}
}

func TestQuotaShortfalls(t *testing.T) {
	// 2 CPUs, 4 GiB, one 30 GiB disk of longhorn-ubuntu-22.04. At ratio 1
	// Harvester's rule adds 276Mi; the launcher pod asks 2730Mi (4Gi at
	// 150% overcommit) and 200m CPU, plus KubeVirt's 276Mi and the page
	// tables of 2730Mi (5591041 bytes), plus its guest-console-log
	// sidecar's 35M (33.38Mi) and 5m, limits 60M (57.22Mi) and 15m.
	c := plans.BaseConfig()
	c.DiskSizeGiB = 30
	in, _ := config.ParseInputs(c)
	plan, err := vmspec.PlanFromConfig(c, in, "c1-pool1-x7k2p", plans.Images)
	if err != nil {
		t.Fatal(err)
	}
	ask, err := askOf(plan, testEnv("1", ""))
	if err != nil {
		t.Fatal(err)
	}
	rancherNS := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{
		harvester.AnnotationRancherResourceQuota: `{"limit":{"limitsCpu":"4","limitsMemory":"8Gi","requestsStorage":"100Gi"}}`}}}
	defaultRQ := map[string]string{harvester.LabelDefaultResourceQuota: "true"}
	cases := []struct {
		name   string
		ns     *corev1.Namespace
		quotas []corev1.ResourceQuota
		want   []string
	}{
		{"no quota", nil, nil, nil},
		{"room", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"limits.cpu": "4", "limits.memory": "8Gi", "requests.storage": "100Gi"}, nil)}, nil},
		{"other resources", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"services": "0", "requests.nvidia.com/gpu": "0"}, nil)}, nil},
		{"storage", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"requests.storage": "50Gi"}, map[string]string{"requests.storage": "40Gi"})},
			[]string{"ResourceQuota default/q: requests.storage: the machine needs 30Gi, 10Gi of 50Gi is free (40Gi used)"}},
		{"memory with overhead", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"limits.memory": "4Gi", "limits.cpu": "1"}, nil)},
			[]string{"ResourceQuota default/q: limits.cpu: the machine needs 2015m, 1 of 1 is free (0 used) (the VM's CPU and its guest-console-log sidecar's 15m)",
				"ResourceQuota default/q: limits.memory: the machine needs 4.33Gi, 4Gi of 4Gi is free (0 used) (the VM's memory, KubeVirt's VM overhead 281.33Mi and its guest-console-log sidecar's 57.22Mi)"}},
		{"requests", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"requests.cpu": "100m", "requests.memory": "3000Mi"}, nil)},
			[]string{"ResourceQuota default/q: requests.cpu: the machine needs 205m, 100m of 100m is free (0 used) (the VM's CPU and its guest-console-log sidecar's 5m)",
				"ResourceQuota default/q: requests.memory: the machine needs 3044.71Mi, 3000Mi of 3000Mi is free (0 used) (the VM's memory, KubeVirt's VM overhead 281.33Mi and its guest-console-log sidecar's 33.38Mi)"}},
		{"requests with room", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"cpu": "205m", "memory": "3045Mi"}, nil)}, nil},
		{"requests without the sidecar's", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"cpu": "204m", "memory": "3012Mi"}, nil)},
			[]string{"ResourceQuota default/q: cpu: the machine needs 205m, 204m of 204m is free", "ResourceQuota default/q: memory: the machine needs 3044.71Mi, 3012Mi of 3012Mi is free"}},
		{"counts and class", nil, []corev1.ResourceQuota{quota("q", nil, map[string]string{"count/virtualmachines.kubevirt.io": "3", "persistentvolumeclaims": "5",
			"longhorn-ubuntu-22.04.storageclass.storage.k8s.io/requests.storage": "20Gi", "other.storageclass.storage.k8s.io/requests.storage": "0"},
			map[string]string{"count/virtualmachines.kubevirt.io": "3", "persistentvolumeclaims": "1"})},
			[]string{"count/virtualmachines.kubevirt.io: the machine needs 1 for its VM, 0 of 3 is free (3 used)",
				"longhorn-ubuntu-22.04.storageclass.storage.k8s.io/requests.storage: the machine needs 30Gi, 20Gi of 20Gi is free"}},
		{"harvester's rule", rancherNS, []corev1.ResourceQuota{quota("default-xyz", defaultRQ, map[string]string{"limits.cpu": "100"},
			map[string]string{"limits.cpu": "3", "limits.memory": "4Gi", "requests.storage": "50Gi"})},
			[]string{"namespace default's project quota (field.cattle.io/resourceQuota limitsCpu): limits.cpu: the machine needs 2, 1 of 4 is free (3 used)",
				"(field.cattle.io/resourceQuota limitsMemory): limits.memory: the machine needs 4.27Gi, 4Gi of 8Gi is free (4Gi used) (the VM's memory and Harvester's VM overhead 276Mi)"}},
		{"harvester's rule without the default quota", rancherNS, []corev1.ResourceQuota{quota("q", nil, map[string]string{"pods": "10"}, map[string]string{"limits.cpu": "4"})}, nil},
	}
	for _, tc := range cases {
		got := quotaShortfalls(ask, tc.ns, tc.quotas)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %q, want %d shortfalls", tc.name, got, len(tc.want))
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%s: %q lacks %q", tc.name, got[i], tc.want[i])
			}
		}
	}
}

func TestMigratingVMsAreNotCountedTwice(t *testing.T) {
	c := plans.BaseConfig()
	in, _ := config.ParseInputs(c)
	plan, _ := vmspec.PlanFromConfig(c, in, "m", plans.Images)
	rq := quota("default-xyz", map[string]string{harvester.LabelDefaultResourceQuota: "true"}, map[string]string{"limits.cpu": "100"}, map[string]string{"limits.cpu": "4"})
	rq.Annotations = map[string]string{harvester.AnnotationMigratingUIDPrefix + "uid-1": `{"limits.cpu":"2"}`}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Annotations: map[string]string{harvester.AnnotationRancherResourceQuota: `{"limit":{"limitsCpu":"4"}}`}}}
	ask, err := askOf(plan, testEnv("", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got := quotaShortfalls(ask, ns, []corev1.ResourceQuota{rq}); len(got) != 0 {
		t.Errorf("a migrating VM's CPUs counted twice: %q", got)
	}
}

func TestVGPUShortfall(t *testing.T) {
	const a100 = "nvidia.com/GRID_A100-1B"
	node := func(name string, n int64) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{a100: *resource.NewQuantity(n, resource.DecimalSI)}}}
	}
	holding := func(nodeName string, n int) kubevirtv1.VirtualMachineInstance {
		vmi := kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{NodeName: nodeName}}
		for range n {
			vmi.Spec.Domain.Devices.GPUs = append(vmi.Spec.Domain.Devices.GPUs, kubevirtv1.GPU{DeviceName: a100})
		}
		return vmi
	}
	one := []config.VGPURequest{{Name: "g1", DeviceName: a100}}
	two := []config.VGPURequest{{Name: "g1", DeviceName: a100}, {Name: "g2", DeviceName: a100}}
	cases := []struct {
		name  string
		want  []config.VGPURequest
		nodes []corev1.Node
		vmis  []kubevirtv1.VirtualMachineInstance
		msg   string
	}{
		{"room", one, []corev1.Node{node("h0", 1)}, nil, ""},
		{"no profile", []config.VGPURequest{{Name: "g", DeviceName: "nvidia.com/NOPE"}}, []corev1.Node{node("h0", 2)}, nil, "no host offers the vGPU profile nvidia.com/NOPE"},
		{"held", one, []corev1.Node{node("h0", 1), node("h1", 1)}, []kubevirtv1.VirtualMachineInstance{holding("h0", 1), holding("h1", 1)},
			"no host has room for the machine's vGPUs (1 nvidia.com/GRID_A100-1B); free per host: h0: 0 of 1 nvidia.com/GRID_A100-1B; h1: 0 of 1"},
		{"spread is not room", two, []corev1.Node{node("h0", 1), node("h1", 1)}, nil, "no host has room for the machine's vGPUs (2 nvidia.com/GRID_A100-1B)"},
		{"one host with two", two, []corev1.Node{node("h0", 1), node("h1", 2)}, nil, ""},
	}
	for _, tc := range cases {
		got := vgpuShortfall(tc.want, tc.nodes, tc.vmis)
		if (tc.msg == "") != (got == "") || !strings.Contains(got, tc.msg) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.msg)
		}
	}
}

// TestQuotaAskFollowsHarvester: the ask is the VM Harvester's mutator
// makes of the plan, rendered as KubeVirt renders its launcher pod.
func TestQuotaAskFollowsHarvester(t *testing.T) {
	const mi = 1 << 20
	// KubeVirt's guest-console-log sidecar (serialconsolelog.go): requests
	// 35M and 5m, limits 60M and 15m; with dedicated CPUs its requests are
	// its limits.
	const sideReqMem, sideLimMem = 35_000_000, 60_000_000
	cases := []struct {
		name              string
		modify            func(*config.Config)
		arch              string
		reqMemory, limMem int64 // launcher pod
		ruleMemory        int64 // Harvester's project-quota rule
		reqCPU, limCPU    string
	}{
		// 4Gi at 150%: 2730Mi; overhead 276Mi and page tables of 2730Mi.
		{"plain", nil, "amd64", 2730*mi + 276*mi + 5591041 + sideReqMem, 4096*mi + 276*mi + 5591041 + sideLimMem, 4372 * mi, "205m", "2015m"},
		// A vGPU pins all guest memory (no overcommit) and VFIO adds 1Gi.
		{"vGPU", func(c *config.Config) {
			c.VGPUInfo = `{"vGPURequests":[{"name":"gpu1","deviceName":"nvidia.com/NVIDIA_A2-4Q"}]}`
		}, "amd64", 4096*mi + 276*mi + 8388609 + 1024*mi + sideReqMem, 4096*mi + 276*mi + 8388609 + 1024*mi + sideLimMem, 4372 * mi, "205m", "2015m"},
		// UEFI's firmware on aarch64 adds 128Mi to both overheads.
		{"arm64", nil, harvester.ArchARM64, 2730*mi + 404*mi + 5591041 + sideReqMem, 4096*mi + 404*mi + 5591041 + sideLimMem, 4500 * mi, "205m", "2015m"},
		// Dedicated CPUs: no overcommit, whole vCPUs plus the emulator
		// thread, guaranteed QoS (+100Mi), memory limit = request.
		{"pinned", func(c *config.Config) { c.CPUPinning, c.IsolateEmulatorThread = true, true },
			"amd64", 4096*mi + 376*mi + 8388609 + sideLimMem, 4096*mi + 376*mi + 8388609 + sideLimMem, 4372 * mi, "3015m", "3015m"},
	}
	for _, c := range cases {
		cfg := plans.BaseConfig()
		if c.modify != nil {
			c.modify(&cfg)
		}
		in, err := config.ParseInputs(cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		plan, err := vmspec.PlanFromConfig(cfg, in, "m", plans.Images)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ask, err := askOf(plan, testEnv("1", c.arch))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := map[string]string{
			"requests.memory": ask.requests.Memory().String(), "limits.memory": ask.limits.Memory().String(),
			"rule memory": ask.ruleMemory.String(), "requests.cpu": ask.requests.Cpu().String(), "limits.cpu": ask.limits.Cpu().String(),
		}
		want := map[string]string{
			"requests.memory": resource.NewQuantity(c.reqMemory, resource.BinarySI).String(),
			"limits.memory":   resource.NewQuantity(c.limMem, resource.BinarySI).String(),
			"rule memory":     resource.NewQuantity(c.ruleMemory, resource.BinarySI).String(),
			"requests.cpu":    c.reqCPU, "limits.cpu": c.limCPU,
		}
		for k := range want {
			if got[k] != want[k] {
				t.Errorf("%s: %s = %s, want %s", c.name, k, got[k], want[k])
			}
		}
	}
}

// TestScopedQuotas: a quota with scopes counts only the launcher pod (and,
// by VolumeAttributesClass, the claims) it selects; everything else the
// machine makes counts against unscoped quotas alone.
func TestScopedQuotas(t *testing.T) {
	c := plans.BaseConfig()
	in, _ := config.ParseInputs(c)
	plan, err := vmspec.PlanFromConfig(c, in, "m", plans.Images)
	if err != nil {
		t.Fatal(err)
	}
	ask, err := askOf(plan, testEnv("", ""))
	if err != nil {
		t.Fatal(err)
	}
	withScopes := func(hard map[string]string, scopes []corev1.ResourceQuotaScope, exprs ...corev1.ScopedResourceSelectorRequirement) corev1.ResourceQuota {
		q := quota("s", nil, hard, nil)
		q.Spec.Scopes = scopes
		if len(exprs) > 0 {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: exprs}
		}
		return q
	}
	pc := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	vac := corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass, Operator: corev1.ScopeSelectorOpDoesNotExist}
	noPods := map[string]string{"pods": "0"}
	cases := []struct {
		name  string
		quota corev1.ResourceQuota
		want  string // "" fits
	}{
		{"BestEffort pods: 0", withScopes(noPods, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}), ""},
		{"NotBestEffort pods: 0", withScopes(noPods, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotBestEffort}), "pods: the machine needs 1 for its virt-launcher pod, 0 of 0 is free"},
		{"Terminating", withScopes(map[string]string{"pods": "0", "limits.memory": "1Mi"}, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}), ""},
		{"NotTerminating", withScopes(map[string]string{"limits.cpu": "1"}, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}), "limits.cpu: the machine needs 2015m, 1 of 1 is free"},
		{"a class the launcher lacks", withScopes(noPods, nil, pc(corev1.ScopeSelectorOpIn, "high")), ""},
		{"any class", withScopes(noPods, nil, pc(corev1.ScopeSelectorOpExists)), ""},
		{"no class", withScopes(noPods, nil, pc(corev1.ScopeSelectorOpDoesNotExist)), "pods: the machine needs 1 for its virt-launcher pod"},
		{"not the class high", withScopes(map[string]string{"count/pods": "0"}, nil, pc(corev1.ScopeSelectorOpNotIn, "high")), "count/pods: the machine needs 1 for its virt-launcher pod"},
		{"cross-namespace affinity", withScopes(noPods, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity}), ""},
		{"claims without an attributes class", withScopes(map[string]string{"persistentvolumeclaims": "0"}, nil, vac), "persistentvolumeclaims: the machine needs 1 for its volumes' claims"},
	}
	for _, tc := range cases {
		got := quotaShortfalls(ask, nil, []corev1.ResourceQuota{tc.quota})
		switch {
		case tc.want == "" && len(got) > 0:
			t.Errorf("%s: refused: %q", tc.name, got)
		case tc.want != "" && (len(got) != 1 || !strings.Contains(got[0], tc.want)):
			t.Errorf("%s: %q, want one shortfall with %q", tc.name, got, tc.want)
		}
	}

	// A priority class and cross-namespace affinity on the VM are the
	// launcher's.
	plan.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: corev1.LabelHostname, NamespaceSelector: &metav1.LabelSelector{}}}}}
	if ask, err = askOf(plan, testEnv("", "")); err != nil {
		t.Fatal(err)
	}
	q := withScopes(noPods, []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeCrossNamespacePodAffinity})
	if got := quotaShortfalls(ask, nil, []corev1.ResourceQuota{q}); len(got) != 1 {
		t.Errorf("a launcher with cross-namespace anti-affinity fits a CrossNamespacePodAffinity pods: 0 quota: %q", got)
	}
}

// TestQuotaCountsWhatCreateMakes: the cloud-init Secret, the VM and its
// instance, each disk's claim, and the static-address ConfigMap, the
// managed-DHCP network config and the cloud-provider credential's objects
// when the machine makes them, in both quota forms.
func TestQuotaCountsWhatCreateMakes(t *testing.T) {
	c := plans.BaseConfig()
	in, _ := config.ParseInputs(c)
	plan, err := vmspec.PlanFromConfig(c, in, "m", plans.Images)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{}
	for _, n := range []string{"secrets", "count/secrets", "configmaps", "count/configmaps", "persistentvolumeclaims", "count/persistentvolumeclaims",
		"count/virtualmachines.kubevirt.io", "count/virtualmachineinstances.kubevirt.io", "count/virtualmachinenetworkconfigs.network.harvesterhci.io",
		"pods", "count/pods", "longhorn-ubuntu-22.04.storageclass.storage.k8s.io/persistentvolumeclaims",
		"count/serviceaccounts", "count/rolebindings.rbac.authorization.k8s.io"} {
		all[n] = "0"
	}
	for _, tc := range []struct {
		env  quotaEnv
		want []string
	}{
		{testEnv("", ""), []string{"count/persistentvolumeclaims", "count/pods", "count/secrets", "count/virtualmachineinstances", "count/virtualmachines.",
			"longhorn-ubuntu-22.04.storageclass", "persistentvolumeclaims", "pods", "secrets: the machine needs 1 for its cloud-init Secret"}},
		{quotaEnv{staticClaim: true, managedDHCP: true}, []string{"configmaps: the machine needs 1 for its static-address claim ConfigMap",
			"count/configmaps: the machine needs 1 for its static-address claim ConfigMap", "count/persistentvolumeclaims", "count/pods", "count/secrets",
			"count/virtualmachineinstances", "count/virtualmachinenetworkconfigs.network.harvesterhci.io: the machine needs 1 for its managed-DHCP VirtualMachineNetworkConfig",
			"count/virtualmachines.", "longhorn-ubuntu-22.04.storageclass", "persistentvolumeclaims", "pods", "secrets"}},
		{quotaEnv{credential: credentialObjects{serviceAccount: true, secret: true, roleBindings: []string{"a-cloudprovider", "a-csi-driver"}}}, []string{
			"count/persistentvolumeclaims", "count/pods", "count/rolebindings.rbac.authorization.k8s.io: the machine needs 2 for its cluster's cloud-provider RoleBinding a-cloudprovider and its cluster's cloud-provider RoleBinding a-csi-driver",
			"count/secrets: the machine needs 2 for its cloud-init Secret and its cluster's cloud-provider token Secret",
			"count/serviceaccounts: the machine needs 1 for its cluster's cloud-provider ServiceAccount", "count/virtualmachineinstances", "count/virtualmachines.",
			"longhorn-ubuntu-22.04.storageclass", "persistentvolumeclaims", "pods", "secrets: the machine needs 2"}},
	} {
		tc.env.overcommit = testEnv("", "").overcommit
		ask, err := askOf(plan, tc.env)
		if err != nil {
			t.Fatal(err)
		}
		got := quotaShortfalls(ask, nil, []corev1.ResourceQuota{quota("q", nil, all, nil)})
		if len(got) != len(tc.want) {
			t.Errorf("%+v: %d shortfalls, want %d:\n%s", tc.env, len(got), len(tc.want), strings.Join(got, "\n"))
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%q lacks %q", got[i], tc.want[i])
			}
		}
	}
}

// TestQuotaFigures: sizes in binary units in the quota's own unit, CPU in
// cores or millicores.
func TestQuotaFigures(t *testing.T) {
	cases := []struct {
		name             corev1.ResourceName
		need, hard, used string
		want             string
	}{
		{"requests.storage", "10Gi", "9.9Gi", "0", "the machine needs 10Gi, 9.9Gi of 9.9Gi is free (0 used)"},
		// 9.9Gi as the API server stores it.
		{"requests.storage", "30Gi", "10630044057600m", "10630044057600m", "the machine needs 30Gi, 0 of 9.9Gi is free (9.9Gi used)"},
		{"requests.storage", "5Gi", "1Ti", "1020Gi", "the machine needs 5Gi, 4Gi of 1Ti is free (1020Gi used)"},
		{"limits.memory", "3157610497", "3000Mi", "0", "the machine needs 3011.33Mi, 3000Mi of 3000Mi is free"},
		{"gold.storageclass.storage.k8s.io/requests.storage", "30Gi", "20Gi", "0", "the machine needs 30Gi, 20Gi of 20Gi"},
		{"requests.memory", "4294967297", "4Gi", "0", "the machine needs 4294967297, 4Gi of 4Gi"},
		{"requests.cpu", "200m", "1.5", "1400m", "the machine needs 200m, 100m of 1500m is free (1400m used)"},
		{"limits.cpu", "2", "4", "3", "the machine needs 2, 1 of 4 is free (3 used)"},
		{"requests.nvidia.com/gpu", "2", "1", "0", "the machine needs 2, 1 of 1 is free (0 used)"},
	}
	for _, c := range cases {
		got := shortfall(c.name, resource.MustParse(c.need), resource.MustParse(c.hard), resource.MustParse(c.used), nil)
		if !strings.Contains(got, c.want) {
			t.Errorf("%s %s of %s: %q, want %q", c.name, c.need, c.hard, got, c.want)
		}
	}
}
