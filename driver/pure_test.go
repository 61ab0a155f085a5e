package driver

import (
	"strings"
	"testing"

	"github.com/rancher/machine/libmachine/state"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/power"
)

// TestSelectAddress checks both pickers on each input: SelectAddress (GetIP:
// IPv4 first, else IPv6) and SelectIPv6 (GetIPv6).
func TestSelectAddress(t *testing.T) {
	type ifc = kubevirtv1.VirtualMachineInstanceNetworkInterface
	cases := []struct {
		name        string
		ifaces      []ifc
		want, want6 string
	}{
		{"nil", nil, "", ""},
		{"empty interface", []ifc{{}}, "", ""},
		{"ipv4", []ifc{{IP: "10.0.0.5", IPs: []string{"10.0.0.5"}}}, "10.0.0.5", ""},
		{"link-local skipped", []ifc{{IPs: []string{"fe80::1", "169.254.1.1", "10.0.0.7"}}}, "10.0.0.7", ""},
		{"ipv4 before earlier ipv6", []ifc{{IPs: []string{"2001:db8::5"}}, {IPs: []string{"192.168.1.9"}}}, "192.168.1.9", "2001:db8::5"},
		{"ipv6 only", []ifc{{IPs: []string{"fe80::2", "2001:db8::7"}}}, "2001:db8::7", "2001:db8::7"},
		{"link-local reported as ipAddress", []ifc{{IP: "fe80::1", IPs: []string{"fe80::1", "2001:db8:52::7"}}}, "2001:db8:52::7", "2001:db8:52::7"},
		{"dual stack", []ifc{{IP: "10.0.0.5", IPs: []string{"10.0.0.5", "fd00:52::9"}}}, "10.0.0.5", "fd00:52::9"},
		{"ipv6 on the second interface", []ifc{{IPs: []string{"10.0.0.5"}}, {IPs: []string{"2001:db8::1/64"}}}, "10.0.0.5", "2001:db8::1"},
		{"zone stripped", []ifc{{IPs: []string{"2001:db8::2%eth0"}}}, "2001:db8::2", "2001:db8::2"},
		{"cidr form", []ifc{{IP: "10.1.2.3/24"}}, "10.1.2.3", ""},
		{"v4-mapped is ipv4", []ifc{{IPs: []string{"::ffff:10.0.0.8"}}}, "10.0.0.8", ""},
		{"guest-agent bridges listed first", []ifc{
			{IP: "172.17.0.1", IPs: []string{"172.17.0.1"}, InterfaceName: "docker0", InfoSource: "guest-agent"},
			{IP: "10.42.0.1", InterfaceName: "cni0", InfoSource: "guest-agent"},
			{Name: "nic-0", IP: "10.52.0.9", IPs: []string{"10.52.0.9"}, InfoSource: "domain, guest-agent"},
		}, "10.52.0.9", ""},
		{"first NIC ipv6-only beats a bridge's ipv4", []ifc{
			{IP: "172.17.0.1", InterfaceName: "docker0", InfoSource: "guest-agent"},
			{Name: "nic-0", IP: "fe80::1", IPs: []string{"fe80::1", "2001:db8:52::3"}},
		}, "2001:db8:52::3", "2001:db8:52::3"},
		{"first NIC waiting for DHCP: no bridge address", []ifc{
			{Name: "nic-0", MAC: "52:54:00:00:00:01", InfoSource: "domain"},
			{IP: "172.17.0.1", InterfaceName: "docker0", InfoSource: "guest-agent"},
			{IP: "fd00:42::1", InterfaceName: "cni0", InfoSource: "guest-agent"},
		}, "", ""},
		{"first NIC first", []ifc{{Name: "nic-0", IP: "10.52.0.1"}, {Name: "nic-1", IP: "10.52.0.2"}, {IP: "172.17.0.1"}}, "10.52.0.1", ""},
		{"garbage loopback multicast unspecified", []ifc{{IP: "nope", IPs: []string{"127.0.0.1", "::1", "0.0.0.0", "::", "ff02::1"}}}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := machine.SelectAddress(tc.ifaces)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("SelectAddress: got %q %v, want %q", got, ok, tc.want)
			}
			got, ok = machine.SelectIPv6(tc.ifaces)
			if got != tc.want6 || ok != (tc.want6 != "") {
				t.Errorf("SelectIPv6: got %q %v, want %q", got, ok, tc.want6)
			}
		})
	}
}

func TestStateOf(t *testing.T) {
	now := metav1.Now()
	vmi := func(p kubevirtv1.VirtualMachineInstancePhase) *kubevirtv1.VirtualMachineInstance {
		return &kubevirtv1.VirtualMachineInstance{Status: kubevirtv1.VirtualMachineInstanceStatus{Phase: p}}
	}
	deleting := vmi(kubevirtv1.Running)
	deleting.DeletionTimestamp = &now
	cases := []struct {
		name string
		vmi  *kubevirtv1.VirtualMachineInstance
		want state.State
	}{
		{"no vmi", nil, state.Stopped},
		{"unset", vmi(""), state.Starting},
		{"pending", vmi(kubevirtv1.Pending), state.Starting},
		{"scheduling", vmi(kubevirtv1.Scheduling), state.Starting},
		{"scheduled", vmi(kubevirtv1.Scheduled), state.Starting},
		{"running", vmi(kubevirtv1.Running), state.Running},
		{"succeeded", vmi(kubevirtv1.Succeeded), state.Stopped},
		{"failed", vmi(kubevirtv1.Failed), state.Error},
		{"unknown", vmi(kubevirtv1.Unknown), state.None},
		{"deleting", deleting, state.Stopping},
	}
	for _, tc := range cases {
		if got := power.StateOf(tc.vmi); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestDescribeVMINeverPanics(t *testing.T) {
	if s := machine.DescribeVMI(nil); s == "" {
		t.Error("empty description")
	}
	v := &kubevirtv1.VirtualMachineInstance{}
	v.Status.Phase = kubevirtv1.Running
	v.Status.NodeName = "harvester-node-1"
	v.Annotations = map[string]string{corev1.LabelTopologyZone: "sim-zone-b"}
	if s := machine.DescribeVMI(v); !strings.Contains(s, "harvester-node-1 (zone sim-zone-b)") || !strings.Contains(s, "waiting for the guest") {
		t.Errorf("description: %s", s)
	}
}

func TestAPIErrorUnauthorized(t *testing.T) {
	err := config.APIError("get VM", errUnauthorized())
	if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "5827") || !strings.Contains(err.Error(), "expired") {
		t.Errorf("unclear 401 error: %v", err)
	}
}

func errUnauthorized() error {
	return apierrors.NewUnauthorized("token expired")
}
