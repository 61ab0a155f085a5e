package addons

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func kubeVIPDaemonSet(t *testing.T, o Options) *appsv1.DaemonSet {
	t.Helper()
	objs, err := Objects(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if ds, ok := obj.(*appsv1.DaemonSet); ok && ds.Name == KubeVIPName {
			return ds
		}
	}
	return nil
}

// envOf is the container's plain values (entries from the downward API
// left out).
func envOf(ds *appsv1.DaemonSet) map[string]string {
	out := map[string]string{}
	for _, e := range ds.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom == nil {
			out[e.Name] = e.Value
		}
	}
	return out
}

// TestKubeVIPAsHarvestersChart: kube-vip comes with the cloud provider,
// with Harvester's values, and each option changes what it should.
func TestKubeVIPAsHarvestersChart(t *testing.T) {
	ds := kubeVIPDaemonSet(t, DefaultOptions("guest-a"))
	if ds == nil {
		t.Fatal("no kube-vip DaemonSet with the default options")
	}
	spec := ds.Spec.Template.Spec
	c := spec.Containers[0]
	if !spec.HostNetwork || spec.ServiceAccountName != KubeVIPName || !slices.Equal(c.Args, []string{"manager"}) {
		t.Errorf("pod spec %+v", spec)
	}
	if caps := c.SecurityContext.Capabilities; !slices.Equal(caps.Add, []corev1.Capability{"NET_ADMIN", "NET_RAW"}) || !slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities %+v", caps)
	}
	want := map[string]string{"vip_interface": "", "vip_arp": "true", "lb_enable": "true", "lb_port": "6443", "vip_subnet": "32",
		"cp_enable": "false", "svc_enable": "true", "svc_election": "false", "vip_leaderelection": "false", "prometheus_server": ":2112"}
	if got := envOf(ds); !mapsEqual(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
	// kube-vip's node name is the pod's node, never the hostname.
	env := c.Env
	if last := env[len(env)-1]; last.Name != KubeVIPEnvNodeName || last.ValueFrom == nil || last.ValueFrom.FieldRef == nil ||
		last.ValueFrom.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("last env entry %+v, want vip_nodename from spec.nodeName", last)
	}
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		t.Errorf("update strategy %+v", ds.Spec.UpdateStrategy)
	}
	terms := spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 2 || terms[0].MatchExpressions[0].Key != "node-role.kubernetes.io/controlplane" || terms[1].MatchExpressions[0].Key != "node-role.kubernetes.io/control-plane" {
		t.Errorf("affinity %+v", terms)
	}

	local := DefaultOptions("guest-a")
	local.LB = LoadBalancing{TrafficPolicyLocal: true, VIPInterface: "eth1"}
	ds = kubeVIPDaemonSet(t, local)
	if ds.Spec.Template.Spec.Affinity != nil {
		t.Errorf("externalTrafficPolicy Local: kube-vip must run on every node, affinity %+v", ds.Spec.Template.Spec.Affinity)
	}
	if env := envOf(ds); env["svc_election"] != "true" || env["vip_interface"] != "eth1" || env["svc_enable"] != "true" {
		t.Errorf("env %v", env)
	}

	mirror := DefaultOptions("guest-a")
	mirror.ImageRegistry = "registry.example.com/mirror"
	if img := kubeVIPDaemonSet(t, mirror).Spec.Template.Spec.Containers[0].Image; img != "registry.example.com/mirror/rancher/mirrored-kube-vip-kube-vip-iptables:"+KubeVIPVersion {
		t.Errorf("mirrored image %s", img)
	}
	for name, o := range map[string]Options{"--kube-vip=false": {KubeVIP: false, CCM: true}, "no CCM": {KubeVIP: true, CCM: false, CSI: true}} {
		full := DefaultOptions("guest-a")
		full.KubeVIP, full.CCM, full.CSI = o.KubeVIP, o.CCM, o.CSI || full.CSI
		if kubeVIPDaemonSet(t, full) != nil {
			t.Errorf("%s: kube-vip rendered", name)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestCCMNetworkArgs: the v0.2.7 flags, values unquoted, in a fixed order.
func TestCCMNetworkArgs(t *testing.T) {
	for _, c := range []struct {
		lb   LoadBalancing
		want []string
	}{
		{LoadBalancing{}, nil},
		{LoadBalancing{ManagementNetwork: "default/vlan1"}, []string{"--management-network=default/vlan1"}},
		{LoadBalancing{NodeIPCIDR: "10.52.0.0/16", NodeExcludeIPRanges: []string{"10.52.0.1", "10.52.1.0/24"}},
			[]string{"--node-ip-cidr=10.52.0.0/16", "--node-exclude-ip-ranges=10.52.0.1,10.52.1.0/24"}},
	} {
		if got := c.lb.CCMArgs(); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.lb, got, c.want)
		}
	}
}

// TestLoadBalancingValidate: every bad value is reported at once, naming its field.
func TestLoadBalancingValidate(t *testing.T) {
	good := []LoadBalancing{
		{},
		{VIPInterface: "enp1s0", ManagementNetwork: "default/vlan1", NodeIPCIDR: "fd00::/64", NodeExcludeIPRanges: []string{"10.0.0.1", "2001:db8::1", "10.1.0.0/16"}},
		{VIPInterface: "eth0.100", TrafficPolicyLocal: true},
	}
	for _, l := range good {
		if err := l.Validate(); err != nil {
			t.Errorf("%+v: %v", l, err)
		}
	}
	bad := LoadBalancing{
		VIPInterface: `eth0"`, ManagementNetwork: "vlan1", NodeIPCIDR: "10.52.0.0", NodeExcludeIPRanges: []string{"10.0.0.1", "10.0.0.1-10.0.0.9"},
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("want errors")
	}
	for _, want := range []string{`kube-vip interface "eth0\""`, `management network "vlan1"`, `node IP CIDR "10.52.0.0"`, `node exclude IP ranges "10.0.0.1-10.0.0.9"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %s: %v", want, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a-very-long-interface-name", "eth 0", "eth0/1", "eth:0"} {
		if (LoadBalancing{VIPInterface: name}).Validate() == nil && name != "" {
			t.Errorf("interface %q accepted", name)
		}
	}
}

// TestOptionsLoadBalancingNeeds: the network flags need the cloud provider
// v0.2.7; kube-vip's options need kube-vip.
func TestOptionsLoadBalancingNeeds(t *testing.T) {
	old := DefaultOptions("g")
	old.Versions.CloudProvider.Tag = "v0.2.5"
	old.LB.ManagementNetwork = "default/vlan1"
	if err := old.Validate(); err == nil || !strings.Contains(err.Error(), `cloud provider version "v0.2.5": the network options need the cloud provider v0.2.7`) {
		t.Errorf("old CCM with network flags: %v", err)
	}
	noCCM := DefaultOptions("g")
	noCCM.CCM = false
	noCCM.LB = LoadBalancing{NodeIPCIDR: "10.0.0.0/8", VIPInterface: "eth0"}
	err := noCCM.Validate()
	if err == nil || !strings.Contains(err.Error(), "network options are the cloud provider's") || !strings.Contains(err.Error(), "need kube-vip") {
		t.Errorf("no CCM: %v", err)
	}
	noVIP := DefaultOptions("g")
	noVIP.KubeVIP = false
	noVIP.LB.TrafficPolicyLocal = true
	if err := noVIP.Validate(); err == nil || !strings.Contains(err.Error(), "enable cloud provider, kube-vip") {
		t.Errorf("no kube-vip: %v", err)
	}
}
