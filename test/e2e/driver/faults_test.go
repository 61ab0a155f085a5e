package driver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// apiServerFaults are the ways the simulator's kube-apiserver goes away
// for a while: restarted (connections refused, then a new process), and
// frozen (connections accepted, nothing answered) for several seconds.
var apiServerFaults = []struct {
	name string
	args []string
}{
	{"restart", []string{fault.RestartAPIServer}},
	{"freeze", []string{fault.FreezeAPIServer, "6s"}},
}

// outcome is how a command run in the background ended.
type outcome struct {
	out string
	err error
}

func background(fn func() (string, error)) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		out, err := fn()
		done <- outcome{out, err}
	}()
	return done
}

// waitObject watches one object of the test namespace until cond holds
// (cond gets nil while there is none).
func waitObject[T runtime.Object](t *testing.T, k kubeapi.Kind, name string, cond func(T) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := kubeapi.Wait(ctx, k, namespace, name, 0, func(obj T) (bool, error) { return cond(obj), nil }); err != nil {
		t.Fatalf("wait for %s %s: %v", k.Name, name, err)
	}
}

func secretKind() kubeapi.Kind {
	return kubeapi.KindOf[*corev1.SecretList]("Secret", &corev1.Secret{}, kube.CoreV1().Secrets(namespace))
}

func vmKind() kubeapi.Kind {
	return kubeapi.KindOf[*kubevirtv1.VirtualMachineList]("VM", &kubevirtv1.VirtualMachine{}, virt.KubevirtV1().VirtualMachines(namespace))
}

func vmiKind() kubeapi.Kind {
	return kubeapi.KindOf[*kubevirtv1.VirtualMachineInstanceList]("VMI", &kubevirtv1.VirtualMachineInstance{}, virt.KubevirtV1().VirtualMachineInstances(namespace))
}

// The two moments an API server fault hits a command: "calls": the
// server is away when the command starts (its calls meet refused
// connections, or no answer, and are retried within their deadline);
// "waits": it goes away once the command has made its first change (its
// watches break and resume).
var faultMoments = []string{"calls", "waits"}

// away makes kube-apiserver go away (restart or freeze) and returns once it
// is; the channel reports the fault command's end.
func away(t *testing.T, args []string) <-chan error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	done, err := sim.APIServerAway(ctx, args...)
	if err != nil {
		t.Fatal(err)
	}
	return done
}

// TestAPIServerFaultDuringCreate: kube-apiserver restarted, or frozen for
// 6 s, as the create starts or right after it made the cloud-init Secret
// (while it creates the VM and waits for it): the create completes; rm
// cleans up.
func TestAPIServerFaultDuringCreate(t *testing.T) {
	for i, f := range apiServerFaults {
		for _, moment := range faultMoments {
			t.Run(f.name+"/"+moment, func(t *testing.T) {
				cluster := fmt.Sprintf("e2e-apicr%d%c", i, moment[0])
				name := cluster + "-pool1-a0000"
				r := newRM(t, cluster)
				var faulted <-chan error
				start := time.Now()
				if moment == "calls" {
					faulted = away(t, f.args)
				}
				done := background(func() (string, error) { return r.create(name, imageAndNet...) })
				if moment == "waits" {
					waitObject(t, secretKind(), name+"-cloudinit", func(s *corev1.Secret) bool { return s != nil })
					faulted = away(t, f.args)
				}
				res := <-done
				took := time.Since(start)
				if err := <-faulted; err != nil {
					t.Fatal(err)
				}
				t.Logf("create took %s; the fault command ended %s after it started", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
				if res.err != nil {
					t.Fatalf("create did not survive the kube-apiserver %s: %v\n%s", f.name, res.err, res.out)
				}
				if s := status(t, r, name); s != "Running" {
					t.Errorf("status after the create: %q, want Running", s)
				}
				r.mustRun("rm", "-y", "--update-config", name)
			})
		}
	}
}

// TestAPIServerFaultDuringRemove: the same faults as rm starts, or right
// after it made its first change (the VM's removedPersistentVolumeClaims
// annotation): the removal completes and leaves nothing.
func TestAPIServerFaultDuringRemove(t *testing.T) {
	for i, f := range apiServerFaults {
		for _, moment := range faultMoments {
			t.Run(f.name+"/"+moment, func(t *testing.T) {
				cluster := fmt.Sprintf("e2e-apirm%d%c", i, moment[0])
				name := cluster + "-pool1-a0000"
				r := newRM(t, cluster)
				r.mustCreate(name, imageAndNet...)
				var faulted <-chan error
				start := time.Now()
				if moment == "calls" {
					faulted = away(t, f.args)
				}
				done := background(func() (string, error) { return r.run("rm", "-y", "--update-config", name) })
				if moment == "waits" {
					waitObject(t, vmKind(), name, func(vm *kubevirtv1.VirtualMachine) bool {
						return vm == nil || vm.Annotations["harvesterhci.io/removedPersistentVolumeClaims"] != ""
					})
					faulted = away(t, f.args)
				}
				res := <-done
				took := time.Since(start)
				if err := <-faulted; err != nil {
					t.Fatal(err)
				}
				t.Logf("rm took %s; the fault command ended %s after it started", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
				if res.err != nil {
					t.Fatalf("rm did not survive the kube-apiserver %s: %v\n%s", f.name, res.err, res.out)
				}
				if ls := r.stdout("ls", "-q"); ls != "" {
					t.Errorf("rancher-machine still lists %q", ls)
				}
			})
		}
	}
}

// TestRmWhileCreateWaits: rm of a machine whose create is still waiting
// for its VM: rm removes everything, the create stops at once saying the
// VM was deleted, and neither the simulator nor rancher-machine keeps
// anything of the machine.
func TestRmWhileCreateWaits(t *testing.T) {
	name := "e2e-rmwait-pool1-w0000"
	simFault(t, fault.StuckScheduling, namespace+"/e2e-rmwait-*")
	t.Cleanup(func() { simFault(t, fault.StuckScheduling, "--remove", namespace+"/e2e-rmwait-*") })
	r := newRM(t, "e2e-rmwait")
	start := time.Now()
	created := background(func() (string, error) {
		return r.create(name, append(imageAndNet, "--harvester-wait-timeout=600")...)
	})
	waitObject(t, vmiKind(), name, func(vmi *kubevirtv1.VirtualMachineInstance) bool {
		return vmi != nil && vmi.Status.Phase == kubevirtv1.Scheduling
	})
	r.mustRun("rm", "-y", "--update-config", name)
	res := <-created
	mustFail(t, res.out, res.err, "the VM was deleted by someone else")
	if took := time.Since(start); took > 3*time.Minute {
		t.Errorf("create ended %s after it started: it waited for its timeout", took)
	}
	if ls := r.stdout("ls", "-q"); strings.Contains(ls, name) {
		t.Errorf("rancher-machine still lists the machine: %q", ls)
	}
}

// TestNoAddressFromGuestAgent: a VMI that runs but is never given an
// address (the simulator's no-ip fault: the guest agent reports none)
// makes create fail at the wait timeout saying so; rm afterwards succeeds
// and nothing is left.
func TestNoAddressFromGuestAgent(t *testing.T) {
	name := "e2e-noip-pool1-n0000"
	simFault(t, fault.NoIP, namespace+"/e2e-noip-*")
	t.Cleanup(func() { simFault(t, fault.NoIP, "--remove", namespace+"/e2e-noip-*") })
	r := newRM(t, "e2e-noip")
	out, err := r.create(name, append(imageAndNet, "--harvester-wait-timeout=8")...)
	mustFail(t, out, err, "timed out after 8s", "phase Running", "no IP: the guest reports none", "qemu-guest-agent")
	r.mustRun("rm", "-y", "--update-config", name)
}
