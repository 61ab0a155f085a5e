// Package bootstrap_test drives bin/harvester-bootstrap against the real
// kube-apiserver of the simulated Harvester (test/simtest).
package bootstrap_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/test/simtest"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

var (
	sim      *simtest.Sim
	binPath  string
	adminCfg *rest.Config
	admin    kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if binPath, err = simtest.Bin("harvester-bootstrap"); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err, "(go build -o bin/ ./cmd/harvester-bootstrap)")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if sim, err = simtest.Start(ctx, simtest.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: start simulator:", err)
		return 1
	}
	defer func() {
		if err := sim.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stop simulator:", err)
		}
	}()
	if adminCfg, err = sim.RESTConfig(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	if admin, err = kubernetes.NewForConfig(adminCfg); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	return m.Run()
}

type result struct {
	stdout, stderr string
	code           int
}

// runBin runs harvester-bootstrap with the simulator's admin kubeconfig in
// the environment (exercising the KUBECONFIG default).
func runBin(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+sim.Kubeconfig)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

func mustRun(t *testing.T, args ...string) result {
	t.Helper()
	r := runBin(t, args...)
	if r.code != 0 {
		t.Fatalf("harvester-bootstrap %v: exit %d\nstderr:\n%s", args, r.code, r.stderr)
	}
	return r
}

// guestClient builds a client from a generated kubeconfig file.
func guestClient(t *testing.T, path string) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatalf("load generated kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cs
}

func tempFile(t *testing.T, name string) string {
	return filepath.Join(t.TempDir(), name)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func schemaGK(group, kind string) schema.GroupKind { return schema.GroupKind{Group: group, Kind: kind} }
