// Package bootstrap_test drives bin/harvester-bootstrap against the real
// kube-apiserver of the simulated Harvester (test/simtest).
package bootstrap_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

var (
	sim      *simtest.Sim
	binPath  string
	adminCfg *rest.Config
	admin    kubernetes.Interface
)

func TestMain(m *testing.M) {
	harness.Main(m, harness.Options{Bins: []string{"harvester-bootstrap"}, SimArgs: []string{"--guest-clusters"}, Ready: func(env *harness.Env) error {
		sim, adminCfg, admin = env.Sim, env.Config, env.Kube
		var err error
		binPath, err = simtest.Bin("harvester-bootstrap")
		return err
	}, Teardown: stopGuestAPI})
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
