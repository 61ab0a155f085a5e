package simctl

import (
	"net/netip"
	"strings"
	"testing"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/controllers"
)

// multipartAgentScript is MIME user data whose base64 shell-script part
// installs the agent (the form used when a custom install script is added).
const multipartAgentScript = `Content-Type: multipart/mixed; boundary="B"
MIME-Version: 1.0

--B
Content-Type: text/cloud-config; charset="utf-8"

#cloud-config
hostname: mime
--B
Content-Type: text/x-shellscript; charset="utf-8"
Content-Transfer-Encoding: base64

IyEvYmluL3NoCmFwdC1nZXQgaW5zdGFsbCAteSBxZW11LWd1ZXN0LWFnZW50Cg==
--B--
`

func createSecret(t *testing.T, ns, name, key, value string) {
	t.Helper()
	_, err := env.kube.CoreV1().Secrets(ns).Create(testContext(t), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{key: value}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create secret %s/%s: %v", ns, name, err)
	}
}

// createAgentImage makes an imported image labelled as shipping the agent.
func createAgentImage(t *testing.T, ns, name string) {
	t.Helper()
	createObject(t, gvrImage, &harvesterv1.VirtualMachineImage{
		TypeMeta: metav1.TypeMeta{APIVersion: "harvesterhci.io/v1beta1", Kind: "VirtualMachineImage"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{controllers.LabelImageGuestAgent: "true"}},
		Spec: harvesterv1.VirtualMachineImageSpec{DisplayName: name, SourceType: "download", URL: "http://images.example/agent.qcow2"},
	})
}

func TestIPRule(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	createSecret(t, ns, "agent-ud", "userdata", agentCloudConfig)
	createSecret(t, ns, "plain-ud", "userdata", "#cloud-config\nhostname: plain\n")
	createAgentImage(t, ns, "agent-os")

	createVM(t, ns, "no-agent", vmOpts{userDataSecret: "plain-ud", claims: []corev1.PersistentVolumeClaim{claimTemplate("no-agent-disk", fixtureImage, nil)}})
	createVM(t, ns, "secret-agent", vmOpts{userDataSecret: "agent-ud", interfaces: 2})
	createVM(t, ns, "inline-agent", vmOpts{userData: agentCloudConfig})
	createVM(t, ns, "image-agent", vmOpts{claims: []corev1.PersistentVolumeClaim{claimTemplate("image-agent-disk", ns+"/agent-os", nil)}})
	createSecret(t, ns, "mime-ud", "userdata", multipartAgentScript)
	createVM(t, ns, "mime-agent", vmOpts{userDataSecret: "mime-ud"})

	seen := map[string]string{}
	for _, name := range []string{"secret-agent", "inline-agent", "image-agent", "mime-agent"} {
		vmi := waitVMI(t, ns, name, "an IP", hasIP)
		for _, iface := range vmi.Status.Interfaces {
			ip, err := netip.ParseAddr(iface.IP)
			if err != nil || !netip.MustParsePrefix("10.52.0.0/16").Contains(ip) {
				t.Errorf("%s: interface %s address %q outside 10.52.0.0/16", name, iface.Name, iface.IP)
			}
			if iface.InfoSource != "domain, guest-agent" || len(iface.IPs) != 1 || iface.IPs[0] != iface.IP || iface.MAC == "" {
				t.Errorf("%s: interface status %+v", name, iface)
			}
			if other, dup := seen[iface.IP]; dup {
				t.Errorf("%s and %s share address %s", other, name, iface.IP)
			}
			seen[iface.IP] = name
		}
		if name == "secret-agent" && len(vmi.Status.Interfaces) != 2 {
			t.Errorf("secret-agent has %d interfaces, want 2", len(vmi.Status.Interfaces))
		}
	}

	// The controller says when it decided a guest has no agent.
	if msg := waitEvent(t, ns, "no-agent", "NoGuestAddress"); !strings.Contains(msg, "qemu-guest-agent") {
		t.Errorf("NoGuestAddress event says %q", msg)
	}
	vmi := waitVMI(t, ns, "no-agent", "Running", running)
	if len(vmi.Status.Interfaces) != 1 || vmi.Status.Interfaces[0].IP != "" || vmi.Status.Interfaces[0].MAC == "" {
		t.Errorf("vmi without the agent reports interfaces %+v, want one without address", vmi.Status.Interfaces)
	}
	if c := vmiCond(vmi, kubevirtv1.VirtualMachineInstanceAgentConnected); c != nil {
		t.Errorf("vmi without the agent has condition %+v", c)
	}

	// Changing the Secret to install the agent takes effect on the next boot.
	sec, err := env.kube.CoreV1().Secrets(ns).Get(testContext(t), "plain-ud", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Data["userdata"] = []byte(agentCloudConfig)
	if _, err := env.kube.CoreV1().Secrets(ns).Update(testContext(t), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteObject(t, gvrVMI, ns, "no-agent")
	waitVMI(t, ns, "no-agent", "an IP after reboot with the agent", func(v *kubevirtv1.VirtualMachineInstance) bool {
		return hasIP(v) && v.UID != vmi.UID
	})
}
