package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/harvester-kit/harvester-machine/sim/tunables"
)

// tuneTimeout bounds `harvester-sim tune`: a new grace period starts
// kube-controller-manager again.
const tuneTimeout = 2 * time.Minute

func tuneCommand() *cli.Command {
	return &cli.Command{
		Name: "tune",
		Usage: "change start flags of a running simulator (" + strings.Join(tunables.Names, ", ") +
			"); NAME= gives one back its start value; returns once in effect",
		ArgsUsage: "NAME=DURATION...",
		Flags:     []cli.Flag{stateDirFlag()},
		Before:    requireStateDir,
		Action: func(c *cli.Context) error {
			changes, err := parseTuneArgs(c.Args().Slice())
			if err != nil {
				return err
			}
			kube, _, err := simClients(c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, tuneTimeout)
			defer cancel()
			return tunables.Set(ctx, kube, changes)
		},
	}
}

// parseTuneArgs reads NAME=DURATION arguments, every problem at once.
func parseTuneArgs(args []string) (map[string]string, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("tune: want NAME=DURATION arguments, NAME one of %s", strings.Join(tunables.Names, ", "))
	}
	changes := map[string]string{}
	var errs []error
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("tune: %q is not NAME=DURATION (e.g. %s=8s)", a, tunables.NodeMonitorGracePeriod))
			continue
		}
		changes[name] = value
	}
	if err := tunables.CheckChanges(changes); err != nil {
		errs = append(errs, fmt.Errorf("tune: %w", err))
	}
	return changes, errors.Join(errs...)
}
