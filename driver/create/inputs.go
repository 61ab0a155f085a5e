package create

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

// recheckInputs checks again the machine's images, networks and key pair:
// from the watches that follow them since the pre-create check, so
// without a request.
func (f flow) recheckInputs(ctx context.Context, b built, r Request) error {
	if _, err := readImages(ctx, f.api, f.m, r.Inputs); err != nil {
		return err
	}
	if err := readNetworks(ctx, f.api, slices.Clone(b.plan.NICs)); err != nil {
		return err
	}
	if b.plan.KeyPair != nil {
		_, err := readKeyPair(ctx, f.api, *b.plan.KeyPair)
		return err
	}
	return nil
}

// whileInputsHold returns a context that is cancelled, with a cause
// naming the change and wrapping machine.ErrInputChanged, when recheck
// fails after a change of a followed object
// (harvesterapi.Seen.FollowedChanged), or at once if it fails now; and
// guard, which wraps the wait's goal to tell it when the VM instance got
// past Scheduling: its launcher pod has its volumes and networks then, and
// later changes no longer matter. recheck reads only what is followed
// (harvesterapi.FollowedOnly): an object whose watch ended, or that no
// watch follows, is not judged, so an API server briefly out of reach is
// not taken for a deleted object. A change that reached the process
// before build read the objects failed build instead, with nothing
// created; this catches one that arrived later.
func whileInputsHold(parent context.Context, api *harvesterapi.API, recheck func(context.Context) error) (ctx context.Context, guard func(machine.Goal) machine.Goal, stop context.CancelFunc) {
	started := make(chan struct{})
	var once sync.Once
	guard = func(goal machine.Goal) machine.Goal {
		return func(vmi *kubevirtv1.VirtualMachineInstance) bool {
			if machine.PastScheduling(vmi) {
				once.Do(func() { close(started) })
			}
			return goal(vmi)
		}
	}
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		for {
			err := recheck(harvesterapi.FollowedOnly(ctx))
			if err != nil && !errors.Is(err, harvesterapi.ErrNotFollowed) && ctx.Err() == nil {
				cancel(fmt.Errorf("%w: %w", err, machine.ErrInputChanged))
				return
			}
			select {
			case <-api.Seen().FollowedChanged():
			case <-started:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return ctx, guard, func() { cancel(context.Canceled) }
}
