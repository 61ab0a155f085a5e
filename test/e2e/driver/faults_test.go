package driver_test

import (
	"context"
	"fmt"
	"slices"
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

// faultedMachine is a machine whose commands an API-server fault hits. Its
// wait timeout is the driver's default, 10 minutes (rm reads it from the
// machine's stored config too), not the 2 of the other tests: after
// a restart that follows another within two minutes, the simulated
// Harvester's controllers (client-go informers, as Harvester's and
// KubeVirt's are) see nothing for 60-110 s (docs/reliability.md), and
// virt-controller, which exits whenever it loses its leader lease, is
// started again after the kubelet's crash-loop back-off, which doubles
// with each exit up to 5 minutes. With every core busy (TestUnderCPUHog) a
// create took 94-122 s, and once, on CI, more than 5 minutes. Its API
// timeout is 2 minutes, not the 30 s default: each call waits that long
// for an answer, and a kube-apiserver serving Harvester's CRDs took 38-63 s
// to restart with other simulators starting beside it. What is tested is
// that the command survives and completes, not how fast Harvester
// recovers.
var faultedMachine = append(slices.Clone(imageAndNet), "--harvester-wait-timeout=600", "--harvester-api-timeout=120")

// faultedCommands are the commands an API server fault hits: each names
// its clusters, makes what it needs first, runs, says when it has made its
// first change, and checks its outcome.
var faultedCommands = []struct {
	name    string // create, rm
	cluster string // prefix of the cluster name
	// prepare makes what the command needs (before any fault).
	prepare func(r *rm, machine string)
	run     func(r *rm, machine string) (string, error)
	// changed holds once the command made its first change.
	changed func(t *testing.T, machine string)
	check   func(t *testing.T, r *rm, machine string)
}{
	{
		// Create: the fault hits as it starts or right after it made the
		// cloud-init Secret (while it creates the VM and waits for it):
		// the create completes; rm cleans up.
		name: "create", cluster: "apicr",
		prepare: func(*rm, string) {},
		run:     func(r *rm, machine string) (string, error) { return r.create(machine, faultedMachine...) },
		changed: func(t *testing.T, machine string) {
			waitObject(t, secretKind(), machine+"-cloudinit", func(s *corev1.Secret) bool { return s != nil })
		},
		check: func(t *testing.T, r *rm, machine string) {
			if s := status(t, r, machine); s != "Running" {
				t.Errorf("status after the create: %q, want Running", s)
			}
			r.mustRun("rm", "-y", "--update-config", machine)
		},
	},
	{
		// Remove: the fault hits as rm starts or right after it made its
		// first change (the VM's removedPersistentVolumeClaims
		// annotation): the removal completes and leaves nothing.
		name: "rm", cluster: "apirm",
		prepare: func(r *rm, machine string) { r.mustCreate(machine, faultedMachine...) },
		run:     func(r *rm, machine string) (string, error) { return r.run("rm", "-y", "--update-config", machine) },
		changed: func(t *testing.T, machine string) {
			waitObject(t, vmKind(), machine, func(vm *kubevirtv1.VirtualMachine) bool {
				return vm == nil || vm.Annotations["harvesterhci.io/removedPersistentVolumeClaims"] != ""
			})
		},
		check: func(t *testing.T, r *rm, _ string) {
			if ls := r.stdout("ls", "-q"); ls != "" {
				t.Errorf("rancher-machine still lists %q", ls)
			}
		},
	},
}

// TestAPIServerFault: kube-apiserver restarted, or frozen for 6 s, as a
// create or rm starts or right after its first change: the command
// completes (see faultedCommands for what each must leave). Sized by
// soakEnv (faultMomentsFor): `make test` hits each command with each fault
// once its watches run; `make soak`, which CI runs after it, runs the
// whole matrix with every core busy (TestUnderCPUHog).
//
// Sequential: it restarts and freezes the kube-apiserver every test uses.
func TestAPIServerFault(t *testing.T) { apiServerFault(t, faultMomentsFor(soakSizeFromEnv(t))...) }

// faultMomentsFor are the moments the fault tests hit: the long soak takes
// all of faultMoments; the short one only "waits", the moment a command's
// watches run, where a restart breaks the most at once. Each restart costs
// every client of the simulator a relist (and, within two minutes of
// another, leaves its informers blind for a while), so the short size
// restarts kube-apiserver twice, not four times.
func faultMomentsFor(size soakSize) []string {
	if size == longSoak {
		return faultMoments
	}
	return []string{"waits"}
}

// apiServerFault hits each command with each fault at the given moments.
func apiServerFault(t *testing.T, moments ...string) {
	for _, c := range faultedCommands {
		for i, f := range apiServerFaults {
			for _, moment := range moments {
				t.Run(c.name+"/"+f.name+"/"+moment, func(t *testing.T) {
					cluster := fmt.Sprintf("e2e-%s%d%c", c.cluster, i, moment[0])
					machine := cluster + "-pool1-a0000"
					r := newRM(t, cluster)
					c.prepare(r, machine)
					var faulted <-chan error
					start := time.Now()
					if moment == "calls" {
						faulted = away(t, f.args)
					}
					done := background(func() (string, error) { return c.run(r, machine) })
					if moment == "waits" {
						c.changed(t, machine)
						faulted = away(t, f.args)
					}
					res := <-done
					took := time.Since(start)
					if err := <-faulted; err != nil {
						t.Fatal(err)
					}
					t.Logf("%s took %s; the fault command ended %s after it started", c.name, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
					if res.err != nil {
						t.Fatalf("%s did not survive the kube-apiserver %s: %v\n%s", c.name, f.name, res.err, res.out)
					}
					c.check(t, r, machine)
				})
			}
		}
	}
}

// TestRmWhileCreateWaits: rm of a machine whose create is still waiting
// for its VM: rm removes everything, the create stops at once saying the
// VM was deleted, and neither the simulator nor rancher-machine keeps
// anything of the machine.
//
// Sequential: fault stuck-scheduling rewrites the admission policy every
// launcher Pod's binding passes.
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
// and nothing is left. The wait outlasts the disk's binding and the boot
// on a loaded machine (at 12 s the VM was once still Scheduling), with
// the package's other parallel tests beside it.
func TestNoAddressFromGuestAgent(t *testing.T) {
	t.Parallel()
	name := "e2e-noip-pool1-n0000"
	simFault(t, fault.NoIP, namespace+"/e2e-noip-*")
	t.Cleanup(func() { simFault(t, fault.NoIP, "--remove", namespace+"/e2e-noip-*") })
	r := newRM(t, "e2e-noip")
	out, err := r.create(name, append(imageAndNet, "--harvester-wait-timeout=60")...)
	mustFail(t, out, err, "timed out after 1m0s", "phase Running", "no IP: the guest reports none", "qemu-guest-agent")
	r.mustRun("rm", "-y", "--update-config", name)
}
