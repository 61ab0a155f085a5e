package harvesterapi

import (
	"sync"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// seenFresh is how long a VM or VMI the process saw (created, or in a
// watch) answers GetState and GetIP without another read: rancher-machine
// asks both right after Create returns.
const seenFresh = 30 * time.Second

// Seen is what one process (one rancher-machine command) has read, so that
// nothing is read twice: images, networks and key pairs, followed by a
// watch from the first read on (follow.go: a change since the pre-create
// check is seen at Create), the machine's VM and VMI while fresh. Every
// change the driver makes to the VM or VMI forgets them.
type Seen struct {
	mu          sync.Mutex // the VM watch of a wait updates vm; follows update themselves
	follows     map[string]*followed
	changed     chan struct{} // tells of a change of a followed object
	rules       map[string]*authv1.SubjectRulesReviewStatus
	watchDenied map[schema.GroupResource]bool
	heldVMI     heldStream // a VMI read for the next wait (ReadVMIForWait)
	vm, vmi     sighting
	asked       map[string]bool // objects the process asked to delete (see Gone)
	gone        map[string]bool // ... and then saw gone
}

// sighting is an object the process saw, and when.
type sighting struct {
	obj interface {
		metav1.Object
		runtime.Object
	}
	at time.Time
}

// fresh is a copy of the object when it is namespace/name and was seen
// within seenFresh, else nil.
func (g sighting) fresh(ns, name string) runtime.Object {
	if g.obj == nil || g.obj.GetNamespace() != ns || g.obj.GetName() != name || time.Since(g.at) > seenFresh {
		return nil
	}
	return g.obj.DeepCopyObject()
}

func (s *Seen) RememberVM(vm *kubevirtv1.VirtualMachine) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vm = sighting{vm.DeepCopy(), time.Now()}
}

// RememberVMI keeps vmi (nil: forget it).
func (s *Seen) RememberVMI(vmi *kubevirtv1.VirtualMachineInstance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vmi = sighting{}
	if vmi != nil {
		s.vmi = sighting{vmi.DeepCopy(), time.Now()}
	}
}

// FreshVM is the VM seen within seenFresh, or nil.
func (s *Seen) FreshVM(ns, name string) *kubevirtv1.VirtualMachine {
	s.mu.Lock()
	defer s.mu.Unlock()
	vm, _ := s.vm.fresh(ns, name).(*kubevirtv1.VirtualMachine)
	return vm
}

// FreshVMI is the VMI seen within seenFresh, or nil.
func (s *Seen) FreshVMI(ns, name string) *kubevirtv1.VirtualMachineInstance {
	s.mu.Lock()
	defer s.mu.Unlock()
	vmi, _ := s.vmi.fresh(ns, name).(*kubevirtv1.VirtualMachineInstance)
	return vmi
}

// forgetMachine drops the VM and VMI: the driver is changing them.
func (s *Seen) forgetMachine() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vm, s.vmi = sighting{}, sighting{}
}
