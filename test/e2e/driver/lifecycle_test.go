package driver_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/test/harness"
)

// TestImageDiskLifecycle creates a machine from an image and a network and
// runs every machine command on it: ls, status, ip, stop, start, restart,
// kill, rm, rm again.
func TestImageDiskLifecycle(t *testing.T) {
	t.Parallel()
	harness.NeedGuests(t) // start and restart connect to the guest
	r := newRM(t, "e2e-life")
	name := "e2e-life-pool1-x7k2p"
	withDocker(t, name) // start and restart wait for the engine
	out := r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1")
	for _, want := range []string{"creating VM", "address"} {
		if !strings.Contains(out, want) {
			t.Errorf("create output lacks progress line %q:\n%s", want, out)
		}
	}

	vm := getVM(t, name)
	for k, v := range map[string]string{
		labelCreator: creatorValue, labelCluster: "e2e-life",
		"nodepool.harvesterhci.io/name":  "pool1",
		"harvesterhci.io/machineSetName": "default-e2e-life-pool1",
	} {
		if vm.Labels[k] != v || vm.Spec.Template.ObjectMeta.Labels[k] != v {
			t.Errorf("label %s: VM %q, template %q, want %q", k, vm.Labels[k], vm.Spec.Template.ObjectMeta.Labels[k], v)
		}
	}
	secret := getSecret(t, name+"-cloudinit")
	if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != vm.UID {
		t.Errorf("cloud-init Secret is not owned by the VM: %+v", secret.OwnerReferences)
	}
	userData := string(secret.Data["userdata"])
	if strings.Count(userData, "qemu-guest-agent\n") < 1 || !strings.Contains(userData, "/usr/local/custom_script/install.sh") {
		t.Errorf("user data lacks the agent or the install script:\n%s", userData)
	}
	if i, j := strings.LastIndex(userData, "qemu-guest-agent.service"), strings.LastIndex(userData, "sh /usr/local/custom_script/install.sh"); j < i {
		t.Errorf("install script does not run last:\n%s", userData)
	}
	raw, _ := json.Marshal(vm)
	if strings.Contains(string(raw), "userData\"") || strings.Contains(string(raw), "install.sh") {
		t.Errorf("user data inline in the VM spec")
	}

	// Plain `ls` of rancher-machine dereferences the nil SwarmOptions of
	// machines created with --custom-install-script; the quiet form with a
	// state filter asks the driver for the state too.
	if ls := r.stdout("ls", "-q", "--filter", "state=Running"); ls != name {
		t.Errorf("ls does not show the running machine:\n%s", ls)
	}
	if s := status(t, r, name); s != "Running" {
		t.Errorf("status %q, want Running", s)
	}
	ip := r.stdout("ip", name)
	if _, err := netip.ParseAddr(ip); err != nil {
		t.Errorf("ip printed %q: %v", ip, err)
	}
	if vmi := getVMI(t, name); vmi == nil || !strings.Contains(strings.Join(append([]string{vmi.Status.Interfaces[0].IP}, vmi.Status.Interfaces[0].IPs...), " "), ip) {
		t.Errorf("ip %s is not the VMI's address", ip)
	}

	r.mustRun("stop", name)
	if s := status(t, r, name); s != "Stopped" {
		t.Errorf("after stop: status %q", s)
	}
	if getVMI(t, name) != nil {
		t.Errorf("after stop: VMI still exists")
	}

	r.mustRun("start", name)
	if s := status(t, r, name); s != "Running" {
		t.Errorf("after start: status %q", s)
	}
	before := getVMI(t, name)
	if before == nil {
		t.Fatalf("after start: no VMI")
	}

	r.mustRun("restart", name)
	after := getVMI(t, name)
	if after == nil || after.UID == before.UID {
		t.Errorf("restart did not make a new VMI (before %s)", before.UID)
	}
	if s := status(t, r, name); s != "Running" {
		t.Errorf("after restart: status %q", s)
	}

	r.mustRun("kill", name)
	if s := status(t, r, name); s != "Stopped" {
		t.Errorf("after kill: status %q", s)
	}

	restore := r.saveMachine(name)
	r.mustRun("rm", "-y", "--update-config", name)
	if _, err := virt.KubevirtV1().VirtualMachines(namespace).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		t.Errorf("VM still exists after rm")
	}
	// rm again, as Rancher retries a delete: the machine's record is back,
	// its VM is gone; the driver must report success.
	restore()
	out, err := r.run("rm", "-y", "--update-config", name)
	if err != nil {
		t.Errorf("rm again failed: %v\n%s", err, out)
	}
}

// TestKeyPair creates a machine with the fixture key pair default/sim-key.
func TestKeyPair(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-key")
	name := "e2e-key-pool1-k3y00"
	keyPath := filepath.Join(sim.Dir, "sim-key")
	r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-key-pair-name=default/sim-key", "--harvester-ssh-private-key-path="+keyPath)
	defer r.mustRun("rm", "-y", "--update-config", name)

	pub, err := os.ReadFile(keyPath + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	userData := string(getSecret(t, name+"-cloudinit").Data["userdata"])
	if !strings.Contains(userData, strings.TrimSpace(string(pub))) {
		t.Errorf("user data lacks the key pair's public key:\n%s", userData)
	}
	if got := getVM(t, name).Annotations["harvesterhci.io/sshNames"]; got != `["default/sim-key"]` {
		t.Errorf("sshNames annotation %q", got)
	}
	stored := filepath.Join(r.store, "machines", name, "id_rsa")
	info, err := os.Stat(stored)
	if err != nil {
		t.Fatalf("private key not stored: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("stored private key mode %v, want 0600", info.Mode().Perm())
	}
	want, _ := os.ReadFile(keyPath)
	if got, _ := os.ReadFile(stored); string(got) != string(want) {
		t.Errorf("stored private key differs from the key pair's")
	}
}

// TestPassword creates a machine with an SSH password that YAML and shells
// would choke on if it were pasted into text.
func TestPassword(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-pw")
	name := "e2e-pw-pool1-pw000"
	password := `p"a's: #w{rd}`
	r.mustCreate(name, "--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1",
		"--harvester-ssh-password="+password)
	defer r.mustRun("rm", "-y", "--update-config", name)

	userData := string(getSecret(t, name+"-cloudinit").Data["userdata"])
	if !strings.Contains(userData, "ssh_pwauth: true") || !strings.Contains(userData, "chpasswd:") {
		t.Errorf("user data does not set the password:\n%s", userData)
	}
	raw, _ := json.Marshal(getVM(t, name))
	if strings.Contains(string(raw), "w{rd}") {
		t.Errorf("password appears in the VM spec")
	}
	cfg, err := os.ReadFile(filepath.Join(r.store, "machines", name, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(cfg), "w{rd}") {
		t.Errorf("password stored in config.json")
	}
}

// TestMultiDiskMultiNIC uses the JSON forms (one base64-encoded).
func TestMultiDiskMultiNIC(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-multi")
	name := "e2e-multi-pool1-m0001"
	disks := `{"disks":[{"imageName":"default/ubuntu-22.04","size":20,"bootOrder":1},{"storageClassName":"harvester-longhorn","size":10}]}`
	nics := `{"interfaces":[{"networkName":"default/vlan1","macAddress":"52:54:00:aa:bb:01"},{"networkName":"default/vlan1","model":"e1000"}]}`
	r.mustCreate(name, "--harvester-disk-info="+b64(disks), "--harvester-network-info="+nics)

	vm := getVM(t, name)
	spec := vm.Spec.Template.Spec
	if len(spec.Domain.Devices.Disks) != 3 || len(spec.Domain.Devices.Interfaces) != 2 || len(spec.Networks) != 2 {
		t.Errorf("want 2 disks + cloud-init disk and 2 NICs, got %d disks, %d NICs", len(spec.Domain.Devices.Disks), len(spec.Domain.Devices.Interfaces))
	}
	if spec.Domain.Devices.Interfaces[0].MacAddress != "52:54:00:aa:bb:01" || spec.Domain.Devices.Interfaces[1].Model != "e1000" {
		t.Errorf("interfaces: %+v", spec.Domain.Devices.Interfaces)
	}
	for _, claim := range []string{name + "-disk-0", name + "-disk-1"} {
		pvc, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), claim, metav1.GetOptions{})
		if err != nil {
			t.Errorf("PVC %s: %v", claim, err)
			continue
		}
		if pvc.Labels[labelCluster] != "e2e-multi" {
			t.Errorf("PVC %s lacks the guest cluster label: %v", claim, pvc.Labels)
		}
	}
	r.mustRun("rm", "-y", "--update-config", name)
	for _, claim := range []string{name + "-disk-0", name + "-disk-1"} {
		if _, err := kube.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), claim, metav1.GetOptions{}); err == nil {
			t.Errorf("PVC %s still exists after rm", claim)
		}
	}
}
