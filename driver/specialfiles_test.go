package driver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

// TestSpecialFilesRefused: a FIFO (which would block until written to), a
// device that never ends (/dev/zero), a directory and an oversized file
// given as the SSH key path, its .pub or the cloud-config file are refused
// at once, naming the flag and what the path is; nothing hangs.
func TestSpecialFilesRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, config.MaxKeyFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	hugeConfig := filepath.Join(dir, "huge-cloud-config")
	if err := os.WriteFile(hugeConfig, make([]byte, config.MaxSecretBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	noPub, _ := drivertest.WriteKey(t, dir, "nopub", false)
	if err := syscall.Mkfifo(noPub+".pub", 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"key path is a FIFO", map[string]any{config.FlagSSHPrivateKeyPath: fifo}, "--harvester-ssh-private-key-path: " + fifo + " (the private key) is a named pipe (FIFO), not a regular file"},
		{"key path is /dev/zero", map[string]any{config.FlagSSHPrivateKeyPath: "/dev/zero"}, "--harvester-ssh-private-key-path: /dev/zero (the private key) is a character device, not a regular file"},
		{"key path is a directory", map[string]any{config.FlagSSHPrivateKeyPath: dir}, "--harvester-ssh-private-key-path: " + dir + " (the private key) is a directory"},
		{"key file too large", map[string]any{config.FlagSSHPrivateKeyPath: big}, "--harvester-ssh-private-key-path: " + big + " is 65537 bytes; the private key may be at most 65536 bytes"},
		{".pub is a FIFO", map[string]any{config.FlagSSHPrivateKeyPath: noPub}, "--harvester-ssh-private-key-path: " + noPub + ".pub (the public key) is a named pipe (FIFO)"},
		{"cloud-config is a FIFO", map[string]any{config.FlagCloudConfig: fifo}, "--harvester-cloud-config: " + fifo + " (the cloud-config file) is a named pipe (FIFO)"},
		{"cloud-config is /dev/zero", map[string]any{config.FlagCloudConfig: "/dev/zero"}, "--harvester-cloud-config: /dev/zero (the cloud-config file) is a character device"},
		{"cloud-config too large", map[string]any{config.FlagCloudConfig: hugeConfig}, "the cloud-config file may be at most 1048576 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- validateErr(t, tc.values) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v\nwant %q", err, tc.want)
				}
			case <-time.After(time.Minute):
				t.Fatal("reading the flags hangs")
			}
		})
	}
}
