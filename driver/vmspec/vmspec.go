// Package vmspec plans a machine's VM (VMPlan) from its Config and parsed
// flags (config.Inputs) and builds the VM and its cloud-init Secret from the
// plan. Pure functions: no API call, no I/O.
package vmspec

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// BuildVM builds the VirtualMachine of a plan. It is pure.
func BuildVM(p VMPlan) (*kubevirtv1.VirtualMachine, error) {
	claims, err := volumeClaimTemplates(p)
	if err != nil {
		return nil, err
	}
	annotations := map[string]string{harvester.AnnotationVolumeClaimTemplates: claims}
	if p.ReservedMemoryMiB >= 0 {
		annotations[harvester.AnnotationReservedMemory] = strconv.Itoa(p.ReservedMemoryMiB) + "Mi"
	}
	if p.KeyPair != nil {
		names, err := json.Marshal([]string{p.KeyPair.String()})
		if err != nil {
			return nil, fmt.Errorf("annotate key pair: %w", err)
		}
		annotations[harvester.AnnotationSSHNames] = string(names)
	}
	runStrategy := p.RunStrategy
	memory := resource.MustParse(strconv.Itoa(p.MemoryGiB) + "Gi")
	cpu := resource.MustParse(strconv.Itoa(p.CPU))

	domain := kubevirtv1.DomainSpec{
		CPU: &kubevirtv1.CPU{
			Cores: uint32(p.CPU), Sockets: 1, Threads: 1,
			Model:                 p.CPUModel,
			DedicatedCPUPlacement: p.CPUPinning,
			IsolateEmulatorThread: p.IsolateEmulatorThread,
		},
		Resources: kubevirtv1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: memory},
		},
		Machine: &kubevirtv1.Machine{Type: "q35"},
	}
	if p.ReservedMemoryMiB >= 0 {
		guest := resource.MustParse(strconv.Itoa(p.MemoryGiB*1024-p.ReservedMemoryMiB) + "Mi")
		domain.Memory = &kubevirtv1.Memory{Guest: &guest}
	}
	if p.EFI {
		secure := p.SecureBoot
		domain.Firmware = &kubevirtv1.Firmware{Bootloader: &kubevirtv1.Bootloader{EFI: &kubevirtv1.EFI{SecureBoot: &secure}}}
		if secure {
			domain.Features = &kubevirtv1.Features{SMM: &kubevirtv1.FeatureState{Enabled: &secure}}
		}
	}
	if p.TPM {
		domain.Devices.TPM = &kubevirtv1.TPMDevice{}
	}
	for _, g := range p.VGPUs {
		domain.Devices.GPUs = append(domain.Devices.GPUs, kubevirtv1.GPU{Name: g.Name, DeviceName: g.DeviceName})
	}

	var volumes []kubevirtv1.Volume
	for _, d := range p.Disks {
		disk := kubevirtv1.Disk{Name: d.Name}
		if d.BootOrder > 0 {
			order := uint(d.BootOrder)
			disk.BootOrder = &order
		}
		bus := kubevirtv1.DiskBus(d.Bus)
		if d.Type == config.DiskTypeCDRom {
			disk.CDRom = &kubevirtv1.CDRomTarget{Bus: bus}
		} else {
			disk.Disk = &kubevirtv1.DiskTarget{Bus: bus}
		}
		domain.Devices.Disks = append(domain.Devices.Disks, disk)
		volumes = append(volumes, kubevirtv1.Volume{Name: d.Name, VolumeSource: kubevirtv1.VolumeSource{
			PersistentVolumeClaim: &kubevirtv1.PersistentVolumeClaimVolumeSource{
				PersistentVolumeClaimVolumeSource: corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.ClaimName},
				Hotpluggable:                      d.HotPlug,
			},
		}})
	}
	domain.Devices.Disks = append(domain.Devices.Disks, kubevirtv1.Disk{
		Name: cloudInitDiskName, DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}},
	})
	noCloud := &kubevirtv1.CloudInitNoCloudSource{UserDataSecretRef: &corev1.LocalObjectReference{Name: p.UserDataSecret}}
	if p.HasNetworkData {
		noCloud.NetworkDataSecretRef = &corev1.LocalObjectReference{Name: p.UserDataSecret}
	}
	volumes = append(volumes, kubevirtv1.Volume{Name: cloudInitDiskName, VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: noCloud}})

	var networks []kubevirtv1.Network
	for _, n := range p.NICs {
		iface := kubevirtv1.Interface{Name: n.Name, Model: n.Model, MacAddress: n.MAC}
		switch n.Type {
		case config.InterfaceTypeMasquerade:
			iface.InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Masquerade: &kubevirtv1.InterfaceMasquerade{}}
		default:
			iface.InterfaceBindingMethod = kubevirtv1.InterfaceBindingMethod{Bridge: &kubevirtv1.InterfaceBridge{}}
		}
		domain.Devices.Interfaces = append(domain.Devices.Interfaces, iface)
		networks = append(networks, kubevirtv1.Network{Name: n.Name, NetworkSource: kubevirtv1.NetworkSource{
			Multus: &kubevirtv1.MultusNetwork{NetworkName: n.Network.String()},
		}})
	}

	eviction := evictionStrategy(p)
	grace := int64(120)
	vm := &kubevirtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: kubevirtv1.GroupVersion.String(), Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace,
			Labels: p.vmLabels(), Annotations: annotations,
		},
		Spec: kubevirtv1.VirtualMachineSpec{
			RunStrategy: &runStrategy,
			Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: p.vmLabels()},
				Spec: kubevirtv1.VirtualMachineInstanceSpec{
					Domain:                        domain,
					Affinity:                      p.Affinity,
					EvictionStrategy:              &eviction,
					NodeSelector:                  nodeSelector(p),
					TerminationGracePeriodSeconds: &grace,
					Hostname:                      p.Name,
					Networks:                      networks,
					Volumes:                       volumes,
				},
			},
		},
	}
	return vm, nil
}

// evictionStrategy: a machine migrates off a host being drained, so the
// guest cluster keeps its node. A machine with vGPUs cannot migrate
// (Harvester v1.8 refuses: "not live migratable as vGPU devices are
// attached"), and LiveMigrate would hold the host's maintenance mode
// forever; it gets LiveMigrateIfPossible, the strategy Harvester's UI
// gives its VMs, under which an unmigratable VM is shut down instead.
func evictionStrategy(p VMPlan) kubevirtv1.EvictionStrategy {
	if len(p.VGPUs) > 0 {
		return kubevirtv1.EvictionStrategyLiveMigrateIfPossible
	}
	return kubevirtv1.EvictionStrategyLiveMigrate
}

// nodeSelector: a machine with vGPUs gets kubernetes.io/os=linux, a label
// every host's kubelet sets, so it restricts no placement. Harvester v1.8's
// upgrade stops, before a host's drain, exactly the VMIs with a
// nodeSelector, host devices or an unmatched node affinity (upgrade-helper
// vm-live-migrate-detector: pkg/util/virtualmachineinstance
// GetAllNonLiveMigratableVMINames; vGPUs, gpus, are not looked at), and
// with the upgrade-config setting's restoreVM starts them again after the
// host (pkg/upgradehelper/restorevm). Without it a vGPU machine, which
// KubeVirt cannot migrate, is neither stopped nor moved and the upgrade
// waits in pre-drain forever; with it the machine is stopped and comes
// back, or, without restoreVM, Harvester refuses to start the upgrade
// while it runs ("There are non-live migratable VMs that need to be shut
// off before initiating the upgrade").
func nodeSelector(p VMPlan) map[string]string {
	if len(p.VGPUs) == 0 {
		return nil
	}
	return map[string]string{corev1.LabelOSStable: string(corev1.Linux)}
}

// volumeClaimTemplates renders the PVCs Harvester creates for the VM.
func volumeClaimTemplates(p VMPlan) (string, error) {
	var claims []corev1.PersistentVolumeClaim
	block := corev1.PersistentVolumeBlock
	for _, d := range p.Disks {
		sc := d.StorageClassName
		labels := maps.Clone(p.Labels)
		if d.HotPlug {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[harvester.LabelHotplug] = "true"
		}
		pvc := corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: d.ClaimName, Labels: labels},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
				VolumeMode:       &block,
				StorageClassName: &sc,
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceStorage: resource.MustParse(strconv.Itoa(d.SizeGiB) + "Gi"),
				}},
			},
		}
		if d.ImageID != "" {
			pvc.Annotations = map[string]string{harvester.AnnotationImageID: d.ImageID}
		}
		claims = append(claims, pvc)
	}
	b, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("marshal volume claim templates: %w", err)
	}
	return string(b), nil
}

// BuildUserDataSecret builds the cloud-init Secret of a machine (keys
// userdata and, when given, networkdata). The owner reference to the VM is
// added once the VM exists.
func BuildUserDataSecret(p VMPlan, userData, networkData []byte) *corev1.Secret {
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: p.UserDataSecret, Namespace: p.Namespace, Labels: maps.Clone(p.Labels),
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"userdata": userData},
	}
	if len(networkData) > 0 {
		s.Data["networkdata"] = networkData
	}
	return s
}
