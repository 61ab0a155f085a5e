package driver

import (
	"sync"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// seenFresh is how long a VM or VMI the process saw (created, or in a
// watch) answers GetState and GetIP without another read: rancher-machine
// asks both right after Create returns.
const seenFresh = 30 * time.Second

// seen is what one process (one rancher-machine command) has read, so that
// nothing is read twice: images and key pairs for the whole process (the
// pre-create check reads them, Create uses them), the machine's VM and
// VMI while fresh. Every change the driver makes to the VM or VMI forgets
// them.
type seen struct {
	mu       sync.Mutex // the VM watch of a wait updates vm
	images   map[string]*hvImage
	keyPairs map[string]*hvKeyPair
	vm       *kubevirtv1.VirtualMachine
	vmAt     time.Time
	vmi      *kubevirtv1.VirtualMachineInstance
	vmiAt    time.Time
}

func (s *seen) image(ref string) *hvImage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.images[ref]
}

func (s *seen) keyPair(ref string) *hvKeyPair {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyPairs[ref]
}

func (s *seen) rememberImage(ref string, img *hvImage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.images == nil {
		s.images = map[string]*hvImage{}
	}
	s.images[ref] = img
}

func (s *seen) rememberKeyPair(ref string, kp *hvKeyPair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keyPairs == nil {
		s.keyPairs = map[string]*hvKeyPair{}
	}
	s.keyPairs[ref] = kp
}

func (s *seen) rememberVM(vm *kubevirtv1.VirtualMachine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vm, s.vmAt = vm.DeepCopy(), time.Now()
}

func (s *seen) rememberVMI(vmi *kubevirtv1.VirtualMachineInstance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vmi, s.vmiAt = vmi.DeepCopy(), time.Now()
}

// freshVM is the VM seen within seenFresh, or nil.
func (s *seen) freshVM(ns, name string) *kubevirtv1.VirtualMachine {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vm == nil || s.vm.Namespace != ns || s.vm.Name != name || time.Since(s.vmAt) > seenFresh {
		return nil
	}
	return s.vm.DeepCopy()
}

// freshVMI is the VMI seen within seenFresh, or nil.
func (s *seen) freshVMI(ns, name string) *kubevirtv1.VirtualMachineInstance {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vmi == nil || s.vmi.Namespace != ns || s.vmi.Name != name || time.Since(s.vmiAt) > seenFresh {
		return nil
	}
	return s.vmi.DeepCopy()
}

// forgetMachine drops the VM and VMI: the driver is changing them.
func (s *seen) forgetMachine() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vm, s.vmi = nil, nil
}
