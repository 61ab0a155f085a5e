package simtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Machines runs bin/rancher-machine with the driver against a simulator,
// the way Rancher does: credentials in the environment, its own store,
// --custom-install-script and --harvester-cluster-name.
type Machines struct {
	Store   string // MACHINE_STORAGE_PATH
	Cluster string // --harvester-cluster-name
	script  string
	env     []string
	bin     string
}

// NewMachines prepares a store and an install script in dir for cluster.
func (s *Sim) NewMachines(dir, cluster string) (*Machines, error) {
	bin, err := Bin("rancher-machine")
	if err != nil {
		return nil, err
	}
	if _, err := Bin("docker-machine-driver-harvester"); err != nil {
		return nil, err
	}
	kubeconfig, err := os.ReadFile(s.Kubeconfig)
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "install.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho install rancher-system-agent\n"), 0o600); err != nil {
		return nil, err
	}
	// rancher-machine writes the user data it merges with the install
	// script to a temp file it never removes; Rancher's machine Pod is
	// thrown away, so the temp dir is the machines' own here.
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, err
	}
	m := &Machines{Store: filepath.Join(dir, "store"), Cluster: cluster, script: script, bin: bin}
	m.env = append(os.Environ(),
		"TMPDIR="+tmp,
		"MACHINE_STORAGE_PATH="+m.Store,
		"PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HARVESTER_KUBECONFIG_CONTENT="+base64.StdEncoding.EncodeToString(kubeconfig),
	)
	return m, nil
}

// Setenv adds environment variables ("KEY=value") to every later command,
// as Rancher passes the driver's settings (HARVESTER_IMAGE_NAME, ...).
func (m *Machines) Setenv(kv ...string) { m.env = append(m.env, kv...) }

// Command is rancher-machine with args in the machines' environment, not
// started.
func (m *Machines) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, m.bin, args...)
	cmd.Env = m.env
	return cmd
}

// Run runs rancher-machine with args and returns its combined output.
func (m *Machines) Run(ctx context.Context, args ...string) (string, error) {
	cmd := m.Command(ctx, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("rancher-machine %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// Create creates machine name as Rancher does: the driver flags in the
// given order, --harvester-cluster-name last.
func (m *Machines) Create(ctx context.Context, name string, flags ...string) (string, error) {
	return m.Run(ctx, m.CreateArgs(name, flags...)...)
}

// CreateArgs are the arguments of `rancher-machine create` as Rancher gives
// them: the driver flags in the given order, --harvester-cluster-name last.
func (m *Machines) CreateArgs(name string, flags ...string) []string {
	args := append([]string{"create", "--driver=harvester", "--custom-install-script=" + m.script}, flags...)
	return append(args, "--harvester-cluster-name="+m.Cluster, name)
}

// RemoveArgs are the arguments of `rancher-machine rm` as Rancher's
// delete job gives them.
func (m *Machines) RemoveArgs(names ...string) []string {
	return append([]string{"rm", "-y", "--update-config"}, names...)
}

// Remove removes machines as Rancher's delete job does.
func (m *Machines) Remove(ctx context.Context, names ...string) (string, error) {
	return m.Run(ctx, m.RemoveArgs(names...)...)
}
