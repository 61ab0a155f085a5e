package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// Files of the freeze-apiserver fault in the state directory: the command
// writes its request ("TOKEN DURATION") and signals the simulator with
// SIGUSR2; the simulator stops kube-apiserver (SIGSTOP), answers with the
// TOKEN once it is stopped, and continues it (SIGCONT) after DURATION.
const (
	freezeRequestFile = "apiserver.freeze"
	freezeAnswerFile  = "apiserver.frozen"
	// MaxFreeze bounds freeze-apiserver's DURATION.
	MaxFreeze = 10 * time.Minute
)

// FreezeAPIServer asks the simulator serving dir to stop kube-apiserver for
// d and returns once it is stopped; the simulator continues it after d.
func FreezeAPIServer(ctx context.Context, dir string, d time.Duration) error {
	if d <= 0 || d > MaxFreeze {
		return fmt.Errorf("freeze-apiserver: DURATION %s is out of range: use more than 0 and at most %s (e.g. 5s)", d, MaxFreeze)
	}
	pid, err := simulatorPID(dir)
	if err != nil {
		return fmt.Errorf("freeze-apiserver: %w", err)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	if err := statefile.Write(filepath.Join(dir, freezeRequestFile), []byte(token+" "+d.String()+"\n")); err != nil {
		return fmt.Errorf("freeze-apiserver: write request: %w", err)
	}
	if err := syscall.Kill(pid, syscall.SIGUSR2); err != nil {
		return fmt.Errorf("freeze-apiserver: signal simulator pid %d: %w", pid, err)
	}
	// The API server is what is frozen: the answer can only come through a file.
	err = pollFile(ctx, filepath.Join(dir, freezeAnswerFile), func(data string) bool { return strings.TrimSpace(data) == token })
	if err != nil {
		return fmt.Errorf("freeze-apiserver: kube-apiserver not stopped: %w (see the simulator's log)", err)
	}
	return nil
}

// readFreezeRequest reads and removes the pending freeze request.
func readFreezeRequest(dir string) (token string, d time.Duration, err error) {
	path := filepath.Join(dir, freezeRequestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", 0, fmt.Errorf("read freeze request: %w", err)
	}
	_ = os.Remove(path)
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return "", 0, fmt.Errorf("freeze request %q: want TOKEN DURATION", data)
	}
	d, err = time.ParseDuration(fields[1])
	if err != nil || d <= 0 || d > MaxFreeze {
		return "", 0, fmt.Errorf("freeze request: bad duration %q", fields[1])
	}
	return fields[0], d, nil
}

// freezeAPIServer stops kube-apiserver, answers the request, and continues
// kube-apiserver after d (or at thaw, whichever comes first).
func (c *controlPlane) freezeAPIServer(token string, d time.Duration) error {
	c.thaw()
	pid := c.apiserver.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("stop kube-apiserver (pid %d): %w", pid, err)
	}
	c.frozen = time.AfterFunc(d, func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	return statefile.Write(c.path(freezeAnswerFile), []byte(token+"\n"))
}

// thaw continues a frozen kube-apiserver at once (before it is stopped or
// restarted, or frozen anew).
func (c *controlPlane) thaw() {
	if c.frozen != nil && c.frozen.Stop() {
		_ = syscall.Kill(c.apiserver.cmd.Process.Pid, syscall.SIGCONT)
	}
	c.frozen = nil
}

// pollFile checks the file every 100ms until ok accepts its content.
func pollFile(ctx context.Context, path string, ok func(data string) bool) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil && ok(string(data)) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
