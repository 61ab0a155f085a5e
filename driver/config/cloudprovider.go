package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/guest/nodefiles"
	"github.com/harvester-kit/harvester-machine/internal/field"
)

// rancherProxyPath marks a Rancher proxy URL of a downstream cluster
// (https://rancher/k8s/clusters/<id>): Rancher accepts only its own tokens
// there, so a Harvester ServiceAccount token does not work through it.
const rancherProxyPath = "/k8s/clusters/"

// validateCloudProvider checks the cloud-provider flags; it does no I/O.
func validateCloudProvider(c Config, harvester *rest.Config) []error {
	if c.CloudProvider == "" {
		if c.CloudProviderServer != "" {
			return []error{FlagProblem(FlagCloudProviderServer, "is set but --%s is not; set --%s to one of %s, or drop --%s",
				FlagCloudProvider, FlagCloudProvider, distributionNames(), FlagCloudProviderServer)}
		}
		return nil
	}
	var errs []error
	if _, err := nodefiles.ParseDistribution(c.CloudProvider); err != nil {
		errs = append(errs, FlagProblem(FlagCloudProvider, "%q is not a distribution; valid: %s (or empty: off)",
			c.CloudProvider, distributionNames()))
	}
	switch {
	case strings.TrimSpace(c.ClusterName) == "":
		errs = append(errs, FlagProblem(FlagClusterName, "is required with --%s: it names the guest cluster's credential and its load balancers (Rancher passes it; with rancher-machine give the guest cluster's name)",
			FlagCloudProvider))
	case len(validation.IsDNS1123Label(c.ClusterName)) > 0:
		errs = append(errs, FlagProblem(FlagClusterName, "%q cannot name the guest credential with --%s; valid: a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)",
			c.ClusterName, FlagCloudProvider))
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
func GuestServer(c Config, harvester *rest.Config) (string, error) {
	if c.CloudProviderServer != "" {
		if err := checkGuestServer(c.CloudProviderServer); err != nil {
			return "", FlagError(FlagCloudProviderServer, err)
		}
		return c.CloudProviderServer, nil
	}
	if harvester == nil {
		return "", nil // --harvester-kubeconfig-content reports its own problem
	}
	server := harvester.Host
	if strings.Contains(server, rancherProxyPath) {
		return "", FlagProblem(FlagCloudProviderServer, "is required with --%s because the kubeconfig's server %s is a Rancher proxy URL, "+
			"through which the guests' ServiceAccount token is not accepted; set it to the Harvester API the guests reach, e.g. https://<Harvester VIP>:6443",
			FlagCloudProvider, server)
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
