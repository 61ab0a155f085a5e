package config

import (
	"strings"

	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// validateGuestNames refuses, with --harvester-cloud-provider, user data or
// a cloud-config file that names the guest other than the machine: the
// node then registers under that name, and the cloud provider and the CSI
// driver, which find a node's VM by the node's name, cannot find it
// (harvester#4947, #4396). The VM's hostname is already the machine name.
// An fqdn is fine when its first label is the machine name. Values of jinja
// templates are not known before boot and are not judged.
func validateGuestNames(c Config, in Inputs, machineName string) []error {
	if c.CloudProvider == "" || machineName == "" {
		return nil
	}
	var errs []error
	for _, p := range []struct {
		flag string
		part cloudinit.Part
	}{{FlagUserData, in.UserData}, {FlagCloudConfig, in.CloudConfig}} {
		names := p.part.Names()
		bad := func(key, value string) {
			errs = append(errs, FlagProblem(p.flag, "sets %s %q, but with --%s the guest's node name must be the machine name %q: "+
				"the cloud provider and CSI driver find a node's VM by the node's name; drop %s (the VM's hostname is already the machine name)",
				key, value, FlagCloudProvider, machineName, key))
		}
		if h := names.Hostname; h != "" && !strings.Contains(h, "{{") && h != machineName {
			bad("hostname", h)
		}
		if f := names.FQDN; f != "" && !strings.Contains(f, "{{") && strings.SplitN(f, ".", 2)[0] != machineName {
			bad("fqdn", f)
		}
	}
	return errs
}
