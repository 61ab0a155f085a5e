package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/harvester-kit/harvester-machine/driver/capacity"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/precheck"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// PreCreateCheck checks everything Create needs and reports every problem at
// once: server version, namespace, images (existing and Imported), storage
// classes, networks, key pair (validated), permissions, and that no disk
// volume of the machine's names exists (a taken VM or Secret name fails
// Create's first create, with nothing left). It
// records the cluster's identity in the machine's state. When Harvester
// cannot be reached at all, it stops at the first call with that one error.
func (d *Driver) PreCreateCheck() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	in, err := d.inputs()
	if err != nil {
		return joinProblems("pre-create check failed", []error{err})
	}
	endFailFast := api.FailFast()
	problems := d.preCreateProblems(context.Background(), api, in)
	if err := endFailFast(); err != nil {
		return fmt.Errorf("pre-create check failed: %w", err)
	}
	return joinProblems("pre-create check failed", dedupeCredentialErrors(problems))
}

func (d *Driver) preCreateProblems(ctx context.Context, api *harvesterapi.API, in config.Inputs) []error {
	problems := d.recordCluster(ctx, api)
	if len(problems) == 1 && harvesterapi.IsTerminal(problems[0]) {
		return problems
	}
	problems = append(problems, precheck.Permissions(ctx, api, d.machine())...)
	images, storageClasses, nsSeen, errs := precheck.Images(ctx, api, d.machine(), in)
	problems = append(problems, errs...)
	problems = append(problems, d.checkNamespace(ctx, api, nsSeen)...)
	problems = append(problems, precheck.StorageClasses(ctx, api, d.machine(), storageClasses)...)
	managedDHCP, errs := precheck.Networks(ctx, api, d.machine(), in)
	problems = append(problems, errs...)
	problems = append(problems, precheck.KeyPair(ctx, api, d.machine())...)
	if d.SSHPrivateKeyPath != "" {
		if _, err := config.ReadPrivateKeyFile(d.SSHPrivateKeyPath); err != nil {
			problems = append(problems, err)
		}
	}
	problems = append(problems, d.checkCapacity(ctx, api, in, images, managedDHCP)...)
	claims := make([]string, len(in.Disks))
	for i := range in.Disks {
		claims[i] = vmspec.DiskClaimName(d.MachineName, i)
	}
	return append(problems, precheck.NamesFree(ctx, api, d.machine(), claims)...)
}

// dedupeCredentialErrors keeps a single credential error among problems.
func dedupeCredentialErrors(problems []error) []error {
	var out []error
	for _, p := range problems {
		if errors.Is(p, kubeapi.ErrCredentialsRejected) {
			return []error{p}
		}
		out = append(out, p)
	}
	return out
}

// checkCapacity checks that the machine fits its namespace's quotas and
// its vGPUs have room (see capacity.Check). images: what precheck.Images
// read (a machine whose images failed is not planned: that is reported);
// managedDHCP: what precheck.Networks found.
func (d *Driver) checkCapacity(ctx context.Context, api *harvesterapi.API, in config.Inputs, images map[string]vmspec.ImageFacts, managedDHCP bool) []error {
	var plan *vmspec.VMPlan
	if p, err := vmspec.PlanFromConfig(d.Config, in, d.MachineName, images); err == nil {
		plan = &p
	}
	return capacity.Check(ctx, api, d.machine(), plan, in.VGPUs, in.Static != nil, managedDHCP)
}
