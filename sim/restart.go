package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// RestartAPIServer asks the simulator serving dir to restart kube-apiserver
// and waits until a new one is serving.
func RestartAPIServer(ctx context.Context, dir string) error {
	pid, err := simulatorPID(dir)
	if err != nil {
		return fmt.Errorf("restart-apiserver: %w", err)
	}
	apiPIDPath := filepath.Join(dir, APIServerPIDFile)
	before, _ := os.ReadFile(apiPIDPath)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("restart-apiserver: signal simulator pid %d: %w", pid, err)
	}
	err = pollFile(ctx, apiPIDPath, func(now string) bool { return len(now) > 0 && now != string(before) })
	if err != nil {
		return fmt.Errorf("restart-apiserver: no new kube-apiserver is serving: %w", err)
	}
	return nil
}

// simulatorPID reads the pid of the simulator serving dir.
func simulatorPID(dir string) (int, error) {
	data, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if err != nil {
		return 0, fmt.Errorf("no simulator runs in %s: %w", dir, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("bad pid file in %s: %w", dir, err)
	}
	return pid, nil
}
