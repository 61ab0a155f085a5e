package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// migrationRuns is how many times the day-2 measurement live-migrates its
// machine's VM.
const migrationRuns = 3

// Day2Result is what Harvester's day-2 operations took against the
// simulator: live migrations of one machine's VM, and maintenance of the
// host of one machine of a pool spread over the three hosts.
type Day2Result struct {
	Migration   Summary       // VMIM created -> the VMI's migrationState completed
	Maintenance time.Duration // `harvester-sim maintenance enable` started -> maintain-status completed
}

// simHosts are the simulator's hosts (sim/fixtures.go).
var simHosts = []string{"harvester-node-0", "harvester-node-1", "harvester-node-2"}

// measureDay2 makes a pool of three machines, one on each host (the other
// hosts cordoned while each is created), live-migrates the first one's VM
// migrationRuns times, then puts the first one's host into maintenance
// and takes it out again; the machines are removed at the end.
func (r *Result) measureDay2(ctx context.Context, sim *simtest.Sim, kube kubernetes.Interface, virt kubevirt.Interface, dir string) (err error) {
	const cluster = "bench-day2"
	dir = filepath.Join(dir, cluster)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ms, err := sim.NewMachines(dir, cluster)
	if err != nil {
		return err
	}
	ms.Setenv(machineEnv...)
	var names []string
	defer func() {
		err = errors.Join(err, setCordons(ctx, kube, ""))
		if len(names) > 0 {
			if _, rmErr := ms.Remove(ctx, names...); rmErr != nil {
				err = errors.Join(err, rmErr)
			}
		}
	}()
	logf(r.Opts, "day 2: a pool of 3, one machine on each host")
	for i, host := range simHosts {
		if err := setCordons(ctx, kube, host); err != nil {
			return err
		}
		name := fmt.Sprintf("%s-pool1-%05d", cluster, i)
		if _, err := ms.Create(ctx, name); err != nil {
			return err
		}
		names = append(names, name)
	}
	if err := setCordons(ctx, kube, ""); err != nil {
		return err
	}
	d := &Day2Result{}
	var samples []time.Duration
	for i := range migrationRuns {
		logf(r.Opts, "day 2: live migration %d of %d", i+1, migrationRuns)
		took, err := timeMigration(ctx, virt, names[0])
		if err != nil {
			return err
		}
		samples = append(samples, took)
	}
	d.Migration = Summarize(samples)
	vmi, err := virt.KubevirtV1().VirtualMachineInstances("default").Get(ctx, names[0], metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read VMI %s: %w", names[0], err)
	}
	host := vmi.Status.NodeName
	logf(r.Opts, "day 2: maintenance of %s", host)
	if d.Maintenance, err = timeMaintenance(ctx, sim, kube, host); err != nil {
		return err
	}
	r.Day2 = d
	return nil
}

// setCordons cordons every host but except ("": uncordons them all), as
// kubectl cordon/uncordon do.
func setCordons(ctx context.Context, kube kubernetes.Interface, except string) error {
	// except first: Harvester's node validator refuses to cordon the last
	// schedulable host (validateCordonAndMaintenanceMode).
	hosts := slices.Clone(simHosts)
	if i := slices.Index(hosts, except); i > 0 {
		hosts[0], hosts[i] = hosts[i], hosts[0]
	}
	for _, h := range hosts {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"unschedulable": except != "" && h != except}})
		if _, err := kube.CoreV1().Nodes().Patch(ctx, h, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("cordon %s: %w", h, err)
		}
	}
	return nil
}

// timeMigration creates a VirtualMachineInstanceMigration of vmi and
// returns the time until the VMI's migrationState says it completed.
func timeMigration(ctx context.Context, virt kubevirt.Interface, vmi string) (time.Duration, error) {
	start := time.Now()
	m, err := virt.KubevirtV1().VirtualMachineInstanceMigrations("default").Create(ctx, &kubevirtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: vmi + "-"},
		Spec:       kubevirtv1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
	}, metav1.CreateOptions{})
	if err != nil {
		return 0, fmt.Errorf("create migration of %s: %w", vmi, err)
	}
	var took time.Duration
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		v, err := virt.KubevirtV1().VirtualMachineInstances("default").Get(ctx, vmi, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ms := v.Status.MigrationState
		if ms == nil || ms.MigrationUID != m.UID || !ms.Completed {
			return false, nil
		}
		if ms.Failed {
			return false, fmt.Errorf("migration %s of %s failed: %s", m.Name, vmi, ms.FailureReason)
		}
		took = time.Since(start)
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("wait for migration %s of %s: %w", m.Name, vmi, err)
	}
	// KubeVirt's migration-create-validator refuses the next migration of
	// the VMI while this one is not final (v1.7.0
	// pkg/virt-api/webhooks/validating-webhook/admitters/migration-create-admitter.go),
	// and virt-controller marks it Succeeded a moment after the VMI's
	// migrationState completed.
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := virt.KubevirtV1().VirtualMachineInstanceMigrations("default").Get(ctx, m.Name, metav1.GetOptions{})
		return err == nil && got.IsFinal(), err
	})
	if err != nil {
		return 0, fmt.Errorf("wait for migration %s of %s to be final: %w", m.Name, vmi, err)
	}
	return took, virt.KubevirtV1().VirtualMachineInstanceMigrations("default").Delete(ctx, m.Name, metav1.DeleteOptions{})
}

// timeMaintenance runs `harvester-sim maintenance enable HOST` and returns
// the time from its start until the host's maintain-status reads
// completed; then it runs `maintenance disable HOST`.
func timeMaintenance(ctx context.Context, sim *simtest.Sim, kube kubernetes.Interface, host string) (took time.Duration, err error) {
	bin, err := simtest.Bin("harvester-sim")
	if err != nil {
		return 0, err
	}
	run := func(verb string) error {
		out, err := exec.CommandContext(ctx, bin, "maintenance", verb, "--state-dir", sim.Dir, host).CombinedOutput()
		if err != nil {
			return fmt.Errorf("harvester-sim maintenance %s %s: %w\n%s", verb, host, err, out)
		}
		return nil
	}
	defer func() { err = errors.Join(err, run("disable")) }()
	pollCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		err := run("enable")
		if err != nil {
			cancel(err) // the poll ends with the command's error
		}
		done <- err
	}()
	err = wait.PollUntilContextTimeout(pollCtx, 10*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := kube.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if n.Annotations[harvester.AnnMaintainStatus] == harvester.MaintainCompleted {
			took = time.Since(start)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return 0, errors.Join(context.Cause(pollCtx), err)
	}
	return took, <-done
}

// day2Rows are the day-2 rows of the table.
func (r *Result) day2Rows(t *Table) {
	d := r.Day2
	if d == nil {
		return
	}
	t.Add(fmt.Sprintf("live migration of a machine's VM (VMIM created -> migrationState completed; simulator transfer %s) p50/p95/max",
		r.Opts.MigrationDuration), Dist(d.Migration))
	t.Add("host maintenance with a 3-machine pool, one machine per host (enable -> maintain-status completed)", Ms(d.Maintenance))
}
