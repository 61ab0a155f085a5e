package vmspec_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest/plans"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

func TestBuildVMGolden(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *config.Config)
	}{
		{"image-disk", func(c *config.Config) { c.DiskSizeGiB = 30 }},
		{"image-disk-default-size", func(c *config.Config) {}},
		{"storage-class-multi-disk", func(c *config.Config) {
			c.DiskInfo = `{"disks":[{"imageName":"default/ubuntu-22.04","size":40,"bootOrder":1},{"storageClassName":"harvester-longhorn","size":100,"bus":"scsi"},{"imageName":"images/rocky","type":"cd-rom","bus":"sata","bootOrder":2},{"storageClassName":"harvester-longhorn","size":5,"hotPlugAble":true}]}`
		}},
		{"multi-nic", func(c *config.Config) {
			c.NetworkInfo = `{"interfaces":[{"networkName":"default/vlan1","macAddress":"52:54:00:aa:bb:cc"},{"networkName":"vlan2","model":"e1000","type":"masquerade"}]}`
		}},
		{"efi-secureboot-tpm-vgpu-pinning", func(c *config.Config) {
			c.EnableEFI, c.EnableSecureBoot, c.EnableTPM = true, true, true
			c.CPUPinning, c.IsolateEmulatorThread = true, true
			c.CPUModel = "host-passthrough"
			c.CPUCount, c.MemoryGiB, c.ReservedMemoryMiB = 8, 16, 512
			c.VGPUInfo = `{"vGPURequests":[{"name":"gpu1","deviceName":"nvidia.com/GRID_A100-1B"}]}`
		}},
		{"efi-no-secureboot", func(c *config.Config) { c.EnableEFI = true }},
		{"user-labels", func(c *config.Config) { c.VMLabels = "app=web, billing.example.com/team=db,tier=" }},
		{"key-pair-network-data", func(c *config.Config) {
			c.KeyPairName = "sim-key"
			c.SSHPrivateKeyPath = "/tmp/k"
			c.NetworkData = "version: 2\n"
		}},
		{"user-affinity", func(c *config.Config) {
			c.VMAffinity = `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["sim-zone-a"]}]}]}},"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"podAffinityTerm":{"topologyKey":"topology.kubernetes.io/zone","labelSelector":{"matchLabels":{"app":"x"}}}}]}}`
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := plans.BaseConfig()
			tc.mutate(&c)
			_, errs := config.Validate(c, "c1-pool1-x7k2p", "ubuntu", 22, nil)
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("test config invalid: %v", err)
			}
			plan, err := plans.Of(t, c, "c1-pool1-x7k2p", plans.Images)
			if err != nil {
				t.Fatal(err)
			}
			vm, err := vmspec.BuildVM(plan)
			if err != nil {
				t.Fatal(err)
			}
			goldenJSON(t, "vm-"+tc.name+".json", vm)
			assertVMInvariants(t, vm)
		})
	}
}

// assertVMInvariants checks what every VM must have, golden files aside.
func assertVMInvariants(t *testing.T, vm *kubevirtv1.VirtualMachine) {
	t.Helper()
	if vm.Labels[harvester.LabelCreator] != harvester.CreatorValue || vm.Spec.Template.ObjectMeta.Labels[harvester.LabelCreator] != harvester.CreatorValue {
		t.Errorf("creator label missing on VM or template")
	}
	if vm.Spec.Template.ObjectMeta.Labels[harvester.LabelMachineSet] == "" {
		t.Errorf("template lacks the machine-set label the anti-affinity selects on")
	}
	raw, _ := json.Marshal(vm)
	for _, secret := range []string{"secret-token", "userData\"", "userDataBase64"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("VM spec contains %q", secret)
		}
	}
	found := false
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if nc := v.CloudInitNoCloud; nc != nil {
			found = nc.UserDataSecretRef != nil && nc.UserDataSecretRef.Name == vmspec.UserDataSecretName(vm.Name) && nc.UserData == "" && nc.UserDataBase64 == ""
		}
	}
	if !found {
		t.Errorf("cloud-init is not taken from the Secret")
	}
	aa := vm.Spec.Template.Spec.Affinity.PodAntiAffinity
	if aa == nil || len(aa.PreferredDuringSchedulingIgnoredDuringExecution) == 0 {
		t.Fatalf("default anti-affinity missing")
	}
}

func TestBuildUserDataSecret(t *testing.T) {
	plan, err := plans.Of(t, plans.BaseConfig(), "c1-pool1-x7k2p", plans.Images)
	if err != nil {
		t.Fatal(err)
	}
	s := vmspec.BuildUserDataSecret(plan, []byte("#cloud-config\n"), []byte("version: 2\n"))
	if s.Name != "c1-pool1-x7k2p-cloudinit" || string(s.Data["userdata"]) != "#cloud-config\n" || string(s.Data["networkdata"]) != "version: 2\n" {
		t.Errorf("secret: %+v", s)
	}
	if s.Labels[harvester.LabelCreator] != harvester.CreatorValue || s.Labels[harvester.LabelGuestCluster] != "c1" {
		t.Errorf("secret labels: %v", s.Labels)
	}
	s2 := vmspec.BuildUserDataSecret(plan, []byte("x"), nil)
	if _, ok := s2.Data["networkdata"]; ok {
		t.Errorf("networkdata key without network data")
	}
}

func TestPlanUnknownImage(t *testing.T) {
	_, err := plans.Of(t, plans.BaseConfig(), "m", map[string]vmspec.ImageFacts{})
	if err == nil || !strings.Contains(err.Error(), "default/ubuntu-22.04") {
		t.Fatalf("got %v", err)
	}
}
