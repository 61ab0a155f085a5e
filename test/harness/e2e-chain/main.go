// Command e2e-chain runs end-to-end test packages one after another on
// one simulated Harvester: `make test`'s runner gives it a chain of
// packages, each of which must leave the simulator as it found it (the
// harness checks that after each, test/harness/shared.go). It enters the
// harness's private network namespace, starts the simulator there (guest
// network and guest clusters on), runs the go test command for each
// package with simtest.AttachEnv naming the simulator, stops it, and
// exits 1 when any package failed.
//
// Usage: e2e-chain GO-TEST-COMMAND... -- PKG...
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/harvester-kit/harvester-machine/test/harness"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// chainSimStart bounds the simulator's start: the chains start while
// other jobs compile on two cores.
const chainSimStart = 6 * time.Minute

func main() {
	args := os.Args[1:]
	i := slices.Index(args, "--")
	if i < 1 || i == len(args)-1 {
		fmt.Fprintln(os.Stderr, "usage: e2e-chain GO-TEST-COMMAND... -- PKG...")
		os.Exit(2)
	}
	gotest, pkgs := args[:i], args[i+1:]
	iso := harness.Enter()
	os.Exit(run(gotest, pkgs, iso))
}

func run(gotest, pkgs []string, iso harness.Isolation) int {
	ctx, cancel := context.WithTimeout(context.Background(), chainSimStart+time.Minute)
	defer cancel()
	simArgs := append(iso.SimArgs(), "--guest-clusters", "--start-timeout="+chainSimStart.String())
	s, err := simtest.Start(ctx, simtest.Options{Args: simArgs})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e-chain %s: start the simulated Harvester: %v\n", strings.Join(pkgs, " "), err)
		return 1
	}
	defer func() {
		if err := s.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e-chain: stop the simulated Harvester:", err)
		}
	}()
	code := 0
	for _, pkg := range pkgs {
		cmd := exec.Command(gotest[0], append(slices.Clone(gotest[1:]), pkg)...) //nolint:gosec // make test's own go test command
		cmd.Env = append(os.Environ(), simtest.AttachEnv+"="+s.Root())
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e-chain: %s: %v\n", pkg, err)
			code = 1
		}
	}
	return code
}
