package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
	"github.com/harvester-kit/harvester-machine/internal/field"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// rancherProxyPath marks a Rancher proxy URL of a downstream cluster
// (https://rancher/k8s/clusters/<id>): Rancher accepts only its own tokens
// there, so a Harvester ServiceAccount token does not work through it.
const rancherProxyPath = "/k8s/clusters/"

// validateCloudProvider checks the cloud-provider flags; it does no I/O.
func validateCloudProvider(c config.Config, harvester *rest.Config) []error {
	if c.CloudProvider == "" {
		if c.CloudProviderServer != "" {
			return []error{config.FlagProblem(config.FlagCloudProviderServer, "is set but --%s is not; set --%s to one of %s, or drop --%s",
				config.FlagCloudProvider, config.FlagCloudProvider, distributionNames(), config.FlagCloudProviderServer)}
		}
		return nil
	}
	var errs []error
	if _, err := nodefiles.ParseDistribution(c.CloudProvider); err != nil {
		errs = append(errs, config.FlagProblem(config.FlagCloudProvider, "%q is not a distribution; valid: %s (or empty: off)",
			c.CloudProvider, distributionNames()))
	}
	switch {
	case strings.TrimSpace(c.ClusterName) == "":
		errs = append(errs, config.FlagProblem(config.FlagClusterName, "is required with --%s: it names the guest cluster's credential and its load balancers (Rancher passes it; with rancher-machine give the guest cluster's name)",
			config.FlagCloudProvider))
	case len(validation.IsDNS1123Label(c.ClusterName)) > 0:
		errs = append(errs, config.FlagProblem(config.FlagClusterName, "%q cannot name the guest credential with --%s; valid: a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)",
			c.ClusterName, config.FlagCloudProvider))
	}
	if _, err := GuestServer(c, harvester); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func distributionNames() string {
	names := make([]string, len(nodefiles.Distributions))
	for i, d := range nodefiles.Distributions {
		names[i] = string(d)
	}
	return strings.Join(names, ", ")
}

// GuestServer is the Harvester API URL written into the guests' credential:
// --harvester-cloud-provider-server, or else the server of the driver's
// kubeconfig (harvester, its client configuration; nil when it is not
// usable), which must then not be a Rancher proxy URL.
func GuestServer(c config.Config, harvester *rest.Config) (string, error) {
	if c.CloudProviderServer != "" {
		if err := checkGuestServer(c.CloudProviderServer); err != nil {
			return "", config.FlagError(config.FlagCloudProviderServer, err)
		}
		return c.CloudProviderServer, nil
	}
	if harvester == nil {
		return "", nil // --harvester-kubeconfig-content reports its own problem
	}
	server := harvester.Host
	if strings.Contains(server, rancherProxyPath) {
		return "", config.FlagProblem(config.FlagCloudProviderServer, "is required with --%s because the kubeconfig's server %s is a Rancher proxy URL, "+
			"through which the guests' ServiceAccount token is not accepted; set it to the Harvester API the guests reach, e.g. https://<Harvester VIP>:6443",
			config.FlagCloudProvider, server)
	}
	return server, nil
}

func checkGuestServer(server string) error {
	if err := credentials.CheckServer(server); err != nil {
		var f *field.Error
		if errors.As(err, &f) {
			return fmt.Errorf("%q: %s", server, f.Detail)
		}
		return err
	}
	u, _ := url.Parse(server)
	switch {
	case strings.Contains(u.Path, rancherProxyPath):
		return fmt.Errorf("%q is a Rancher proxy URL, through which the guests' ServiceAccount token is not accepted; valid: the Harvester API itself, e.g. https://<Harvester VIP>:6443", server)
	}
	return nil
}

// cloudProviderFiles makes or reuses the guest cluster's cloud-provider
// credential, exactly as `harvester-bootstrap kubeconfig` does, and returns
// the node's write_files for the chosen distribution (all mode 0600). They
// only ever reach the VM's cloud-init Secret. Nothing when the feature is
// off. The credential belongs to the guest cluster, not to this machine:
// Remove never revokes it. A machine with several NICs tells the cloud
// provider which network's address is the node's: the first NIC's.
func (d *Driver) cloudProviderFiles(ctx context.Context, api *harvesterapi.API, nics []vmspec.NICPlan) ([]cloudinit.WriteFile, error) {
	if d.CloudProvider == "" {
		return nil, nil
	}
	dist, err := nodefiles.ParseDistribution(d.CloudProvider)
	if err != nil {
		return nil, config.FlagError(config.FlagCloudProvider, err)
	}
	server, err := GuestServer(d.Config, api.Config())
	if err != nil {
		return nil, err
	}
	h := &credentials.Harvester{Client: api.Kube(), Config: api.Config(), Log: slog.New(slog.DiscardHandler)}
	access := credentials.Access{ClusterName: d.ClusterName, Namespace: d.VMNamespace}.WithDefaults()
	// A driver credential's admission policy wants the objects it makes
	// labelled with its identity (so its revoke finds the tokens).
	if id, ok := credentials.DriverIdentityOfToken(api.Config().BearerToken); ok {
		access.IssuedBy = id.LabelValue()
	}
	log.Infof("%s: making or reusing the cloud-provider credential of cluster %s (ServiceAccount %s/%s)", d.MachineName, d.ClusterName, access.Namespace, access.ServiceAccount)
	ctx, cancel := context.WithTimeout(ctx, d.machine().WaitTimeout())
	defer cancel()
	kubeconfig, err := issueGuestKubeconfig(ctx, h, access, server, api.Timeout())
	if err != nil {
		return nil, config.APIError("make the cloud-provider credential of cluster "+d.ClusterName, err)
	}
	d.ensureGuestGrant(ctx, h, access.ServiceAccount)
	files, err := nodefiles.NodeWriteFiles(dist, d.ClusterName, kubeconfig, guestAddons(d.ClusterName, nics))
	if err != nil {
		return nil, config.FlagProblem(config.FlagCloudProvider, "%s: %v", dist, err).Because(err)
	}
	return files, nil
}

// ensureGuestGrant names the guest ServiceAccount in the VM namespace's
// grant (the guests' reads outside it, guest/credentials), which names
// only the guest ServiceAccounts: a --cloud-provider driver credential may
// add it (get and patch on the grant's bindings by name, checked by its
// grant policy); an admin's credential also makes a missing grant. An older
// least-privilege credential may do neither: the driver says what to run.
// Never fatal, as for a missing grant before: the machine works without it;
// the guest's CSI driver does not (doctor's credential-scope row fails).
func (d *Driver) ensureGuestGrant(ctx context.Context, h *credentials.Harvester, sa string) {
	ns := d.VMNamespace
	grant := credentials.GrantBindingName(ns)
	fix := fmt.Sprintf("an admin runs `harvester-bootstrap driver-credential --cloud-provider --machine-namespace %s` (a driver credential that may add it) "+
		"or `harvester-bootstrap kubeconfig --cluster-name %s --namespace %s`", ns, d.ClusterName, ns)
	err := h.AddToGrant(ctx, ns, sa)
	if errors.Is(err, credentials.ErrGrantMissing) {
		err = h.EnsureGrant(ctx, ns, credentials.GrantOptions{})
		if err == nil {
			log.Infof("%s: granted the guests of namespace %s their reads outside it (%s)", d.MachineName, ns, grant)
			return
		}
		if apierrors.IsForbidden(err) {
			log.Warnf("%s: namespace %s has no grant %s (the guests' reads outside it: storage classes, volume attachments) and this credential may not make it; %s", d.MachineName, ns, grant, fix)
			return
		}
	}
	switch {
	case errors.Is(err, credentials.ErrGrantUnseen) || apierrors.IsForbidden(err):
		log.Warnf("%s: could not name ServiceAccount %s/%s in the grant %s of namespace %s (its guests' reads outside it): this driver credential may not (made before it could): %v; %s",
			d.MachineName, ns, sa, grant, ns, err, fix)
	case err != nil:
		log.Warnf("%s: could not name ServiceAccount %s/%s in the grant %s of namespace %s: %v; %s", d.MachineName, ns, sa, grant, ns, err, fix)
	default:
		log.Infof("%s: the grant %s names ServiceAccount %s/%s", d.MachineName, grant, ns, sa)
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
