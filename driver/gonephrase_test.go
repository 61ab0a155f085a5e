package driver

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

// saysGone is rancher-machine v0.15's test (commands/rm.go, status.go) of
// an error of Remove or GetState: the machine is gone.
func saysGone(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "not found")
}

// machineObjects are a machine's VM, root disk and Secret, and its VMI
// when running (the fakes have no garbage collector to delete it with the
// VM).
func machineObjects(running bool) (kubeObjs, virtObjs []runtime.Object) {
	virtObjs = []runtime.Object{fakeVM(testMachineID, "uid-1")}
	if running {
		virtObjs = append(virtObjs, fakeVMI(testMachineID, "uid-vmi"))
	}
	return []runtime.Object{fakePVC(testMachine+"-disk-0", ownedBy(testMachineID)), fakeSecret(ownedBy(testMachineID))}, virtObjs
}

// failingCall makes call number n (0-based, counted over every client,
// watches included) of the fakes answer err; calls counts them all.
type failingCall struct {
	n     int64
	calls atomic.Int64
	err   error
}

func (c *failingCall) install(f fakeHarvester) {
	react := func(k8stesting.Action) (bool, runtime.Object, error) {
		if c.calls.Add(1)-1 == c.n {
			return true, nil, c.err
		}
		return false, nil, nil
	}
	watchReact := func(k8stesting.Action) (bool, watch.Interface, error) {
		if c.calls.Add(1)-1 == c.n {
			return true, nil, c.err
		}
		return false, nil, nil
	}
	f.Kube.PrependReactor("*", "*", react)
	f.Virt.PrependReactor("*", "*", react)
	f.Dyn.PrependReactor("*", "*", react)
	f.Kube.PrependWatchReactor("*", watchReact)
	f.Virt.PrependWatchReactor("*", watchReact)
	f.Dyn.PrependWatchReactor("*", watchReact)
}

// TestNoErrorSaysGone enumerates the error paths of Remove and GetState:
// every API call they make fails in turn, with a 404 of another object and
// with an error whose text says "not found"; the command's error never says
// "not found" (rancher-machine would forget a machine whose VM still runs).
// Only GetState of a machine whose VM is missing on its cluster says it.
func TestNoErrorSaysGone(t *testing.T) {
	faults := []error{
		apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, testNS),
		apierrors.NewInternalError(errors.New("backend: key not found")),
	}
	commands := map[string]func(d *Driver) error{
		"rm":     func(d *Driver) error { return d.Remove() },
		"status": func(d *Driver) error { _, err := d.GetState(); return err },
	}
	for name, run := range commands {
		// Count the calls of a run that succeeds.
		counter := &failingCall{n: -1}
		kubeObjs, virtObjs := machineObjects(name == "status")
		d, f := newFakeDriver(t, testCluster, kubeObjs, virtObjs)
		counter.install(f)
		if err := run(d); err != nil {
			t.Fatalf("%s without faults: %v", name, err)
		}
		total := counter.calls.Load()
		if total < 3 {
			t.Fatalf("%s made %d calls; the enumeration would prove nothing", name, total)
		}
		for n := range total {
			for i, fault := range faults {
				t.Run(fmt.Sprintf("%s/call%d/fault%d", name, n, i), func(t *testing.T) {
					t.Parallel()
					kubeObjs, virtObjs := machineObjects(name == "status")
					d, f := newFakeDriver(t, testCluster, kubeObjs, virtObjs)
					d.WaitTimeoutSeconds = 1
					(&failingCall{n: n, err: fault}).install(f)
					if err := run(d); saysGone(err) {
						t.Errorf("%s, call %d of %d fails with %q: the error says the machine is gone: %v", name, n, total, fault, err)
					}
				})
			}
		}
	}
}

// TestStatusOfGoneMachine: the one error that says "not found" is
// GetState's for a VM missing on the machine's confirmed cluster.
func TestStatusOfGoneMachine(t *testing.T) {
	d, _ := newFakeDriver(t, testCluster, nil, nil)
	if _, err := d.GetState(); !saysGone(err) {
		t.Fatalf("GetState of a machine without VM: %v, want an error saying not found", err)
	}
	d, _ = newFakeDriver(t, "another-cluster", nil, nil)
	if _, err := d.GetState(); err == nil || saysGone(err) || !errors.Is(err, machine.ErrWrongCluster) {
		t.Fatalf("GetState on another cluster: %v, want ErrWrongCluster not saying not found", err)
	}
}

// TestBrokenKubeconfigKeepsMachine: a credential whose kubeconfig names a
// context, cluster or user it does not define (client-go says "was not
// found") fails rm and status with a message naming what is missing, never
// with "not found", and nothing is called.
func TestBrokenKubeconfigKeepsMachine(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"missing current-context", "current-context: h", "current-context: gone", `current-context "gone" names no context of the kubeconfig (contexts: "h")`},
		{"no current-context", "current-context: h", "", `has no current-context (contexts: "h")`},
		{"missing cluster", "    cluster: h", "    cluster: gone", `context "h" uses cluster "gone", which the kubeconfig does not define (clusters: "h")`},
		{"missing user", "    user: u", "    user: gone", `context "h" uses user "gone", which the kubeconfig does not define (users: "u")`},
	}
	for _, tc := range cases {
		for _, cmd := range []string{"rm", "status"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				kubeObjs, virtObjs := machineObjects(true)
				d, f := newFakeDriver(t, testCluster, kubeObjs, virtObjs)
				d.cmd.api = nil
				d.cmd.kubeconfig = strings.Replace(drivertest.Kubeconfig, tc.from, tc.to, 1)
				var err error
				if cmd == "rm" {
					err = d.Remove()
				} else {
					_, err = d.GetState()
				}
				if err == nil || saysGone(err) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--"+config.FlagKubeconfigContent) {
					t.Fatalf("got %v\nwant an error naming --%s and saying %s, not 'not found'", err, config.FlagKubeconfigContent, tc.want)
				}
				if n := len(f.Kube.Actions()) + len(f.Virt.Actions()) + len(f.Dyn.Actions()); n != 0 {
					t.Errorf("%d API calls made", n)
				}
			})
		}
	}
}

// TestKeepMachine: the rewritten text keeps the rest of the message and
// errors.Is/As still see the error.
func TestKeepMachine(t *testing.T) {
	inner := apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "x")
	err := keepMachine(fmt.Errorf("confirm: %w", inner))
	if saysGone(err) || !apierrors.IsNotFound(err) || err.Error() != `confirm: namespaces "x" missing` {
		t.Fatalf("got %q (IsNotFound %v)", err, apierrors.IsNotFound(err))
	}
	if keepMachine(nil) != nil {
		t.Fatal("keepMachine(nil) is not nil")
	}
}
