package create

import (
	"context"
	"errors"

	"github.com/harvester-kit/harvester-machine/driver/capacity"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/precheck"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Checked is what the pre-create check found: every problem, and whether
// the credential's cluster is recorded in m (the session is confirmed).
type Checked struct {
	Problems         []error
	ClusterConfirmed bool
}

// Check checks everything a create needs and reports every problem at
// once: server version, namespace, images (existing and Imported),
// storage classes, networks, key pair (validated), permissions, and that
// no disk volume of the machine's names exists (a taken VM or Secret name
// fails the create's first create, with nothing left). It records the
// cluster's identity in m.Ownership.
func Check(ctx context.Context, api *harvesterapi.API, m *machine.Machine, in config.Inputs) Checked {
	var c Checked
	c.Problems = recordCluster(ctx, api, m)
	if len(c.Problems) == 1 && harvesterapi.IsTerminal(c.Problems[0]) {
		return c
	}
	add := func(errs ...error) { c.Problems = append(c.Problems, errs...) }
	add(precheck.Permissions(ctx, api, m)...)
	images, storageClasses, nsSeen, errs := precheck.Images(ctx, api, m, in)
	add(errs...)
	nsProblems := checkNamespace(ctx, api, m, nsSeen)
	c.ClusterConfirmed = len(nsProblems) == 0
	add(nsProblems...)
	add(precheck.StorageClasses(ctx, api, m, storageClasses)...)
	managedDHCP, errs := precheck.Networks(ctx, api, m, in)
	add(errs...)
	add(precheck.KeyPair(ctx, api, m)...)
	if m.Config.SSHPrivateKeyPath != "" {
		if _, err := config.ReadPrivateKeyFile(m.Config.SSHPrivateKeyPath); err != nil {
			add(err)
		}
	}
	add(checkCapacity(ctx, api, m, in, images, managedDHCP)...)
	claims := make([]string, len(in.Disks))
	for i := range in.Disks {
		claims[i] = vmspec.DiskClaimName(m.Name, i)
	}
	add(precheck.NamesFree(ctx, api, m, claims)...)
	c.Problems = dedupeCredentialErrors(c.Problems)
	return c
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
func checkCapacity(ctx context.Context, api *harvesterapi.API, m *machine.Machine, in config.Inputs, images map[string]vmspec.ImageFacts, managedDHCP bool) []error {
	c := capacity.Demand{VGPUs: in.VGPUs, StaticClaim: in.Static != nil, ManagedDHCP: managedDHCP}
	if p, err := vmspec.PlanFromConfig(m.Config, in, m.Name, images); err == nil {
		c.Plan = &p
	}
	return capacity.Check(ctx, api, m, c)
}
