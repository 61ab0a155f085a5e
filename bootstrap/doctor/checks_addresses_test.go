package doctor

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

func addressClaim(machine, addr string, ownerUID types.UID) corev1.ConfigMap {
	a := netip.MustParseAddr(addr)
	cm := corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: staticip.ClaimName("default/vlan1", a), Namespace: ns,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))},
		Data: staticip.ClaimData(staticip.Claim{Address: netip.PrefixFrom(a, 24), Machine: machine, NIC: "nic-0", Network: "default/vlan1"}),
	}
	if ownerUID != "" {
		cm.OwnerReferences = []metav1.OwnerReference{{Kind: "VirtualMachine", Name: machine, UID: ownerUID}}
	}
	return cm
}

func TestAddresses(t *testing.T) {
	s := healthy()
	s.Harvester.VMs[0].UID, s.Harvester.VMs[1].UID = "uid-1", "uid-2"
	s.Harvester.AddressClaims = []corev1.ConfigMap{addressClaim("guest-a-pool1-x2", "10.0.0.11", "uid-2"), addressClaim("guest-a-pool1-x1", "10.0.0.10", "uid-1")}
	row := Addresses(s)
	want := "2 held: guest-a-pool1-x1 nic-0 10.0.0.10/24 since 2026-05-01T12:00:00Z; guest-a-pool1-x2 nic-0 10.0.0.11/24 since 2026-05-01T12:00:00Z"
	if row.Status != OK || row.Seen != want {
		t.Errorf("got %s %q, want OK %q", row.Status, row.Seen, want)
	}

	s.Harvester.AddressClaims = append(s.Harvester.AddressClaims, addressClaim("guest-a-pool1-gone", "10.0.0.12", "uid-gone"), addressClaim("guest-a-pool1-none", "10.0.0.13", ""))
	row = Addresses(s)
	if row.Status != Warn || !strings.Contains(row.Seen, "held with no VM: 10.0.0.12 of guest-a-pool1-gone (ConfigMap static-ip.default.vlan1.10-0-0-12), 10.0.0.13 of guest-a-pool1-none") {
		t.Errorf("orphans: got %s %q", row.Status, row.Seen)
	}

	s.Harvester.Errors = map[string]string{"ConfigMap (address claim)": "list forbidden"}
	if row = Addresses(s); row.Status != Fail {
		t.Errorf("unlisted claims: got %s %q", row.Status, row.Seen)
	}
}

// reports makes the VMI report addr on its bridge NIC nic-0 (network
// default/vlan1), with a guest-agent-only docker0 beside it.
func reports(vmi *kubevirtv1.VirtualMachineInstance, addr string) {
	vmi.Spec.Networks = []kubevirtv1.Network{{Name: "nic-0", NetworkSource: kubevirtv1.NetworkSource{Multus: &kubevirtv1.MultusNetwork{NetworkName: "default/vlan1"}}}}
	vmi.Status.Interfaces = []kubevirtv1.VirtualMachineInstanceNetworkInterface{{Name: "nic-0", IP: addr, IPs: []string{addr, "fe80::1"}},
		{IP: "172.17.0.1", InfoSource: "guest-agent"}}
}

// TestAddressesSharedByTwoVMIs (issue 30, 9): a machine whose claim was
// deleted by hand while its VM was stopped comes back with the address
// another machine got meanwhile; the row warns, naming both VMIs. The same
// address on another network, or on a bridge only the guest agent reports,
// is not a clash.
func TestAddressesSharedByTwoVMIs(t *testing.T) {
	s := healthy()
	s.Harvester.VMs[0].UID, s.Harvester.VMs[1].UID = "uid-1", "uid-2"
	s.Harvester.AddressClaims = []corev1.ConfigMap{addressClaim("guest-a-pool1-x2", "10.0.0.10", "uid-2")}
	reports(&s.Harvester.VMIs[0], "10.0.0.11")
	reports(&s.Harvester.VMIs[1], "10.0.0.10")
	if row := Addresses(s); row.Status != OK {
		t.Fatalf("distinct addresses: got %s %q", row.Status, row.Seen)
	}
	reports(&s.Harvester.VMIs[0], "10.0.0.10")
	row := Addresses(s)
	if row.Status != Warn || !strings.Contains(row.Seen, "one address on several VMs: 10.0.0.10 on default/vlan1 by guest-a-pool1-x1 and guest-a-pool1-x2") ||
		!strings.Contains(row.Fix, "claim was deleted while its VM was stopped") {
		t.Errorf("one address on two VMIs: got %s %q (%q)", row.Status, row.Seen, row.Fix)
	}
	if strings.Contains(row.Seen, "172.17.0.1") {
		t.Errorf("a guest-agent-only bridge counted as a clash: %q", row.Seen)
	}
	s.Harvester.VMIs[0].Spec.Networks[0].Multus.NetworkName = "default/vlan2"
	if row := Addresses(s); row.Status != OK {
		t.Errorf("one address on two networks: got %s %q", row.Status, row.Seen)
	}
	s.Harvester.AddressClaims = nil
	s.Harvester.VMIs[0].Spec.Networks[0].Multus.NetworkName = "vlan1"
	if row := Addresses(s); row.Status != Warn || row.Seen != "none held; one address on several VMs: 10.0.0.10 on default/vlan1 by guest-a-pool1-x1 and guest-a-pool1-x2" {
		t.Errorf("a clash with no claim left: got %s %q", row.Status, row.Seen)
	}
}
