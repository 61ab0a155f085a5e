// Package cloudcred is the cloud-provider credential of a machine's guest
// cluster (--harvester-cloud-provider): it makes or reuses the guest
// cluster's credential on Harvester, exactly as `harvester-bootstrap
// kubeconfig` does, names it in the VM namespace's grant, and returns the
// node files that carry it into the guest.
package cloudcred

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// Files makes or reuses the guest cluster's cloud-provider
// credential, exactly as `harvester-bootstrap kubeconfig` does, and returns
// the node's write_files for the chosen distribution (all mode 0600). They
// only ever reach the VM's cloud-init Secret. Nothing when the feature is
// off. The credential belongs to the guest cluster, not to this machine:
// Remove never revokes it. A machine with several NICs tells the cloud
// provider which network's address is the node's: the first NIC's.
func Files(ctx context.Context, api *harvesterapi.API, m *machine.Machine, nics []vmspec.NICPlan) ([]cloudinit.WriteFile, error) {
	if m.Config.CloudProvider == "" {
		return nil, nil
	}
	dist, err := nodefiles.ParseDistribution(m.Config.CloudProvider)
	if err != nil {
		return nil, config.FlagError(config.FlagCloudProvider, err)
	}
	server, err := config.GuestServer(m.Config, api.Config())
	if err != nil {
		return nil, err
	}
	h := &credentials.Harvester{Client: api.Kube(), Config: api.Config(), Log: slog.New(slog.DiscardHandler)}
	access := credentials.Access{ClusterName: m.Config.ClusterName, Namespace: m.Config.VMNamespace}.WithDefaults()
	// A driver credential's admission policy wants the objects it makes
	// labelled with its identity (so its revoke finds the tokens).
	if id, ok := credentials.DriverIdentityOfToken(api.Config().BearerToken); ok {
		access.IssuedBy = id.LabelValue()
	}
	log.Infof("%s: making or reusing the cloud-provider credential of cluster %s (ServiceAccount %s/%s)", m.Name, m.Config.ClusterName, access.Namespace, access.ServiceAccount)
	ctx, cancel := context.WithTimeout(ctx, m.WaitTimeout())
	defer cancel()
	kubeconfig, err := issueGuestKubeconfig(ctx, h, access, server, api.Timeout())
	if err != nil {
		return nil, api.Explain("make the cloud-provider credential of cluster "+m.Config.ClusterName, err)
	}
	ensureGrant(ctx, m, h, access.ServiceAccount)
	files, err := nodefiles.NodeWriteFiles(dist, m.Config.ClusterName, kubeconfig, guestAddons(m.Config.ClusterName, nics))
	if err != nil {
		return nil, config.FlagProblem(config.FlagCloudProvider, "%s: %v", dist, err).Because(err)
	}
	return files, nil
}

// ensureGrant names the guest ServiceAccount in the VM namespace's
// grant (the guests' reads outside it, guest/credentials), which names
// only the guest ServiceAccounts: a --cloud-provider driver credential may
// add it (get and patch on the grant's bindings by name, checked by its
// grant policy); an admin's credential also makes a missing grant. An older
// least-privilege credential may do neither: the driver says what to run.
// Never fatal, as for a missing grant before: the machine works without it;
// the guest's CSI driver does not (doctor's credential-scope row fails).
func ensureGrant(ctx context.Context, m *machine.Machine, h *credentials.Harvester, sa string) {
	ns := m.Config.VMNamespace
	grant := credentials.GrantBindingName(ns)
	fix := fmt.Sprintf("an admin runs `harvester-bootstrap driver-credential --cloud-provider --machine-namespace %s` (a driver credential that may add it) "+
		"or `harvester-bootstrap kubeconfig --cluster-name %s --namespace %s`", ns, m.Config.ClusterName, ns)
	err := h.AddToGrant(ctx, ns, sa)
	if errors.Is(err, credentials.ErrGrantMissing) {
		err = h.EnsureGrant(ctx, ns, credentials.GrantOptions{})
		if err == nil {
			log.Infof("%s: granted the guests of namespace %s their reads outside it (%s)", m.Name, ns, grant)
			return
		}
		if apierrors.IsForbidden(err) {
			log.Warnf("%s: namespace %s has no grant %s (the guests' reads outside it: storage classes, volume attachments) and this credential may not make it; %s", m.Name, ns, grant, fix)
			return
		}
	}
	switch {
	case errors.Is(err, credentials.ErrGrantUnseen) || apierrors.IsForbidden(err):
		log.Warnf("%s: could not name ServiceAccount %s/%s in the grant %s of namespace %s (its guests' reads outside it): this driver credential may not (made before it could): %v; %s",
			m.Name, ns, sa, grant, ns, err, fix)
	case err != nil:
		log.Warnf("%s: could not name ServiceAccount %s/%s in the grant %s of namespace %s: %v; %s", m.Name, ns, sa, grant, ns, err, fix)
	default:
		log.Infof("%s: the grant %s names ServiceAccount %s/%s", m.Name, grant, ns, sa)
	}
}

// guestAddons are the add-on options of a machine of clusterName: the
// pinned defaults, and the management network when it has several NICs.
func guestAddons(clusterName string, nics []vmspec.NICPlan) addons.Options {
	o := addons.DefaultOptions(clusterName)
	if len(nics) > 1 {
		o.LB.ManagementNetwork = nics[0].Network.String()
	}
	return o
}

// issueGuestKubeconfig ensures the credential's objects (server-side apply,
// so machines of one cluster created at once share them; conflicts of
// concurrent first creates are retried), waits for the token and renders
// the kubeconfig the guests use.
func issueGuestKubeconfig(ctx context.Context, h *credentials.Harvester, a credentials.Access, server string, callTimeout time.Duration) ([]byte, error) {
	racing := func(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }
	if err := retry.OnError(retry.DefaultRetry, racing, func() error {
		c, cancel := context.WithTimeout(ctx, 4*callTimeout)
		defer cancel()
		return h.EnsureAccess(c, a)
	}); err != nil {
		return nil, err
	}
	return h.Kubeconfig(ctx, a, server, 0)
}
