package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RestartAPIServer asks the simulator serving dir to restart kube-apiserver
// and waits until a new one is serving.
func RestartAPIServer(ctx context.Context, dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if err != nil {
		return fmt.Errorf("restart-apiserver: no simulator runs in %s: %w", dir, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("restart-apiserver: bad pid file in %s: %w", dir, err)
	}
	apiPIDPath := filepath.Join(dir, APIServerPIDFile)
	before, _ := os.ReadFile(apiPIDPath)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("restart-apiserver: signal simulator pid %d: %w", pid, err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if now, err := os.ReadFile(apiPIDPath); err == nil && len(now) > 0 && string(now) != string(before) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart-apiserver: no new kube-apiserver is serving: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
