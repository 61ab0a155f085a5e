// Command demo creates a small node pool through bin/rancher-machine and the
// Harvester node driver against a simulated Harvester, the way Rancher does,
// shows each machine's address, host and zone, removes the pool and shows
// that nothing is left. Run it with `go run ./test/e2e/driver/demo` after
// building bin/ (make build tools).
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

const (
	cluster = "demo"
	pool    = "pool1"
	ns      = "default"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) func() {
	start := time.Now()
	fmt.Printf("==> "+format+" ... ", args...)
	return func() { fmt.Printf("done (%.1fs)\n", time.Since(start).Seconds()) }
}

func run() error {
	for _, b := range []string{"rancher-machine", "docker-machine-driver-harvester", "harvester-sim"} {
		if _, err := simtest.Bin(b); err != nil {
			return err
		}
	}
	root, err := simtest.RepoRoot()
	if err != nil {
		return err
	}
	binDir := filepath.Join(root, "bin")

	done := step("starting the simulated Harvester")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sim, err := simtest.Start(ctx, simtest.Options{})
	if err != nil {
		return err
	}
	defer sim.Stop()
	done()
	cfg, err := sim.RESTConfig()
	if err != nil {
		return err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	virt, err := kubevirt.NewForConfig(cfg)
	if err != nil {
		return err
	}
	kubeconfig, err := os.ReadFile(sim.Kubeconfig)
	if err != nil {
		return err
	}

	work, err := os.MkdirTemp("", "driver-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	script := filepath.Join(work, "install.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho joining the cluster\n"), 0o600); err != nil {
		return err
	}
	logPath := filepath.Join(work, "rancher-machine.log")
	env := append(os.Environ(),
		"MACHINE_STORAGE_PATH="+filepath.Join(work, "store"),
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HARVESTER_KUBECONFIG_CONTENT="+base64.StdEncoding.EncodeToString(kubeconfig),
	)
	rm := func(args ...string) (string, error) {
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Minute)
		defer ccancel()
		cmd := exec.CommandContext(cctx, filepath.Join(binDir, "rancher-machine"), args...)
		cmd.Env = env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		if f, ferr := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); ferr == nil {
			f.Write(out.Bytes())
			f.Close()
		}
		if err != nil {
			return out.String(), fmt.Errorf("rancher-machine %s: %w\n%s", args[0], err, out.String())
		}
		return out.String(), nil
	}

	names := []string{cluster + "-" + pool + "-a1b2c", cluster + "-" + pool + "-d3e4f", cluster + "-" + pool + "-g5h6i"}
	done = step("creating %d machines in parallel (%s)", len(names), strings.Join(names, ", "))
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = rm("create", "-d", "harvester", "--custom-install-script="+script,
				"--harvester-cluster-name="+cluster, "--harvester-image-name=default/ubuntu-22.04",
				"--harvester-network-name=default/vlan1", "--harvester-ssh-user=ubuntu", n)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	done()

	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "MACHINE\tSTATE\tIP\tHOST\tZONE")
	for _, n := range names {
		state, _ := rm("status", n)
		ip, _ := rm("ip", n)
		vmi, err := virt.KubevirtV1().VirtualMachineInstances(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", n, firstLine(state), firstLine(ip), vmi.Status.NodeName, vmi.Annotations[corev1.LabelTopologyZone])
	}
	tw.Flush()
	fmt.Println()

	done = step("removing the machines (rm -y --update-config, as Rancher does)")
	if _, err := rm(append([]string{"rm", "-y", "--update-config"}, names...)...); err != nil {
		return err
	}
	done()

	sel := metav1.ListOptions{LabelSelector: "guestcluster.harvesterhci.io/name=" + cluster}
	vms, err := virt.KubevirtV1().VirtualMachines(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	vmis, err := virt.KubevirtV1().VirtualMachineInstances(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	secrets, err := kube.CoreV1().Secrets(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	pvcs, err := kube.CoreV1().PersistentVolumeClaims(ns).List(ctx, sel)
	if err != nil {
		return err
	}
	fmt.Printf("left in Harvester for cluster %q: %d VMs, %d VM instances, %d Secrets, %d volumes\n",
		cluster, len(vms.Items), len(vmis.Items), len(secrets.Items), len(pvcs.Items))
	if n := len(vms.Items) + len(vmis.Items) + len(secrets.Items) + len(pvcs.Items); n > 0 {
		return fmt.Errorf("%d objects left behind", n)
	}
	return nil
}

// firstLine is rancher-machine's answer without the plugin's relayed logs.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "(") {
			return l
		}
	}
	return "?"
}
