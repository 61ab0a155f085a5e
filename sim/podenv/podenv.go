// Package podenv gives a process started by the simulator what a Pod's
// container finds of its ServiceAccount: the token, the cluster CA and the
// namespace at ServiceAccountDir. The caller runs in a mount namespace of
// its own (the simulator starts it with CLONE_NEWNS), so nothing changes
// on the host.
package podenv

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// ServiceAccountDir is where a pod finds its ServiceAccount token, CA and
// namespace (client-go's in-cluster configuration and KubeVirt's
// util.GetNamespace read them there).
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// Files a ServiceAccount directory holds.
const (
	TokenFile     = "token"
	CAFile        = "ca.crt"
	NamespaceFile = "namespace"
)

// Write fills dir with a ServiceAccount's files, as the kubelet projects
// them; each is replaced whole, so a process that re-reads its token while
// it runs never reads half of one.
func Write(dir, namespace string, token, ca []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write service account files: %w", err)
	}
	for name, data := range map[string][]byte{TokenFile: token, CAFile: ca, NamespaceFile: []byte(namespace)} {
		if err := statefile.Write(filepath.Join(dir, name), data); err != nil {
			return fmt.Errorf("write service account files: %w", err)
		}
	}
	return nil
}

// MakePrivate stops mounts made from here on from propagating to the
// mount namespace this one was copied from.
func MakePrivate() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mount namespace private: %w", err)
	}
	return nil
}

// MountServiceAccount mounts a fresh tmpfs on /var/run and binds saDir
// (read-only) at ServiceAccountDir inside it.
func MountServiceAccount(saDir string) error {
	run, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		return fmt.Errorf("find /var/run: %w", err)
	}
	if err := unix.Mount("tmpfs", run, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("mount a tmpfs on %s: %w", run, err)
	}
	if err := os.MkdirAll(ServiceAccountDir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(saDir, ServiceAccountDir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the service account files at %s: %w", ServiceAccountDir, err)
	}
	if err := unix.Mount("", ServiceAccountDir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", ServiceAccountDir, err)
	}
	return nil
}
