// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's report on a
// running guest. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/vm.go.

package controllers

import (
	"context"
	"encoding/base64"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Labels and annotations the simulated virt-handler sets.
const (
	LabelVMINodeName = kubevirtv1.NodeNameLabel // kubevirt.io/nodeName
	// AnnAddressReportedAt is the simulator's own record (RFC 3339 with
	// nanoseconds) of when it first wrote the VMI's addresses: taken just
	// before the write that shows them. Benchmarks measure from it.
	AnnAddressReportedAt = "sim.harvesterhci.io/address-reported-at"
	secretUserDataKey    = "userdata"
	secretUserDataKey2   = "userData"
)

// runVMI is virt-handler's report on a running guest: the IP rule
// (addresses from the guest agent), the guest network, the volumes and
// LiveMigratable.
func (s *sim) runVMI(ctx context.Context, c *vmiContext) (time.Duration, error) {
	src := s.guestSources(c)
	agent, why := guestRunsAgent(src)
	noIP := s.faults().Match(fault.NoIP, c.u.GetNamespace(), c.vmName)
	plan := planAddresses(agent, why, noIP, s.since(c), c.now.Time, s.tuned().IPDelay)
	var ips []string
	if plan.Report {
		ips = s.state.addrsOf(c.key)
		if ips == nil {
			used := s.usedAddresses(c.key)
			var err error
			allocate := allocateAddresses
			if s.faults().Match(fault.IPv6Only, c.u.GetNamespace(), c.vmName) != "" {
				allocate = allocateIPv6Addresses
			}
			if ips, err = allocate(c.key, len(vmiInterfaceNames(&c.vmi.Spec)), used); err != nil {
				return 0, err
			}
		}
		s.state.setAddrs(c.key, ips)
		ips = s.guestConfigured(c, ips)
		setVMICondition(c.st, kubevirtv1.VirtualMachineInstanceCondition{Type: kubevirtv1.VirtualMachineInstanceAgentConnected, Status: corev1.ConditionTrue}, c.now)
		c.st.GuestOSInfo = s.guestOSInfo(c)
	} else {
		s.state.setAddrs(c.key, nil)
		c.st.GuestOSInfo = kubevirtv1.VirtualMachineInstanceGuestOSInfo{}
		removeVMICondition(c.st, kubevirtv1.VirtualMachineInstanceAgentConnected)
		if plan.Why != "" && s.state.once(c.key, "no-ip", plan.Why) {
			s.log.Info("vmi gets no address", "vmi", c.key, "why", plan.Why)
			s.emit(c, corev1.EventTypeNormal, "NoGuestAddress", "no IP address will be reported: "+plan.Why)
		}
	}
	c.st.Interfaces = keepControllerReport(interfaceStatuses(&c.vmi.Spec, c.key, ips), c.old.Interfaces)
	if len(ips) > 0 && s.faults().Match(fault.GuestBridges, c.u.GetNamespace(), c.vmName) != "" {
		c.st.Interfaces = append(guestOnlyInterfaces(c.key), c.st.Interfaces...)
	}
	if len(ips) > 0 {
		s.guestOnNetwork(c, src, ips)
	} else {
		s.guestOffNetwork(c.key)
	}
	c.st.VolumeStatus = s.volumeStatusOf(c)
	setVMICondition(c.st, liveMigratable(&c.vmi, s.claimsOf(c)), c.now)
	u := c.u
	if len(ips) > 0 && !hasAddress(c.old.Interfaces) {
		u = u.DeepCopy()
		ann := u.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[AnnAddressReportedAt] = time.Now().UTC().Format(time.RFC3339Nano)
		u.SetAnnotations(ann)
	}
	wait, err := s.writeVMI(ctx, c, u)
	return min0(plan.Wait, wait), err
}

// claimsOf are the VMI's PVCs that exist, by name.
func (s *sim) claimsOf(c *vmiContext) map[string]*corev1.PersistentVolumeClaim {
	lister := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(c.u.GetNamespace())
	claims := map[string]*corev1.PersistentVolumeClaim{}
	for _, name := range vmiClaimNames(&c.vmi.Spec) {
		if pvc, err := lister.Get(name); err == nil {
			claims[name] = pvc
		}
	}
	return claims
}

func hasAddress(ifaces []kubevirtv1.VirtualMachineInstanceNetworkInterface) bool {
	for _, i := range ifaces {
		if i.IP != "" || len(i.IPs) > 0 {
			return true
		}
	}
	return false
}

// guestSources collects the VMI's cloud-init user data and the agent
// label of the images behind its disks.
func (s *sim) guestSources(c *vmiContext) guestSources {
	ns := c.u.GetNamespace()
	src := guestSources{Images: map[string]bool{}}
	addUserData := func(vol, inline, b64 string, ref *corev1.LocalObjectReference) {
		switch {
		case inline != "":
			src.UserData = append(src.UserData, []byte(inline))
		case b64 != "":
			data, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				src.Problems = append(src.Problems, fmt.Sprintf("volume %s: userDataBase64: %v", vol, err))
				return
			}
			src.UserData = append(src.UserData, data)
		case ref != nil:
			sec, err := s.kubeInformers.Core().V1().Secrets().Lister().Secrets(ns).Get(ref.Name)
			if err != nil {
				src.Problems = append(src.Problems, fmt.Sprintf("volume %s: user data secret: %v", vol, err))
				return
			}
			data, ok := sec.Data[secretUserDataKey]
			if !ok {
				data, ok = sec.Data[secretUserDataKey2]
			}
			if !ok {
				src.Problems = append(src.Problems, fmt.Sprintf("volume %s: secret %s has no key %s", vol, ref.Name, secretUserDataKey))
				return
			}
			src.UserData = append(src.UserData, data)
		}
	}
	for _, v := range c.vmi.Spec.Volumes {
		if nc := v.CloudInitNoCloud; nc != nil {
			addUserData(v.Name, nc.UserData, nc.UserDataBase64, nc.UserDataSecretRef)
		}
		if cd := v.CloudInitConfigDrive; cd != nil {
			addUserData(v.Name, cd.UserData, cd.UserDataBase64, cd.UserDataSecretRef)
		}
	}
	pvcs := s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns)
	for _, claim := range vmiClaimNames(&c.vmi.Spec) {
		pvc, err := pvcs.Get(claim)
		if err != nil {
			continue
		}
		ref := pvc.Annotations[hv.AnnotationImageID]
		imgNS, imgName, err := hv.ParseRef(ref, "")
		if err != nil {
			continue
		}
		if img := getCached(s.images, imgNS, imgName); img != nil {
			src.Images[ref] = img.GetLabels()[LabelImageGuestAgent] == "true"
			display, _, _ := unstructured.NestedString(img.Object, "spec", "displayName")
			src.ImageNames = append(src.ImageNames, imgName+" "+display)
		}
	}
	return src
}

// usedAddresses are the addresses other VMIs report or were given.
func (s *sim) usedAddresses(key string) map[string]bool {
	used := s.state.otherAddrs(key)
	list, _ := s.vmis.List(labels.Everything())
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || u.GetNamespace()+"/"+u.GetName() == key {
			continue
		}
		ifaces, _, _ := unstructured.NestedSlice(u.Object, "status", "interfaces")
		for _, i := range ifaces {
			if m, ok := i.(map[string]any); ok {
				if ip, _ := m["ipAddress"].(string); ip != "" {
					used[ip] = true
				}
			}
		}
	}
	return used
}

// faults reads the fault ConfigMap from the cache.
func (s *sim) faults() fault.Patterns {
	cm, err := s.faultInformers.Core().V1().ConfigMaps().Lister().ConfigMaps(fault.Namespace).Get(fault.ConfigMap)
	if err != nil {
		return fault.ParsePatterns(nil)
	}
	f := fault.ParsePatterns(cm.Data)
	for _, p := range f.Problems() {
		if s.state.once(fault.ConfigMapKey, "problem", p) {
			s.log.Warn("ignoring invalid fault pattern", "configmap", fault.ConfigMapKey, "problem", p)
		}
	}
	return f
}
