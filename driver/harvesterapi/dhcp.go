package harvesterapi

import (
	"context"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
)

// GetDHCPPool reads a managed-DHCP IPPool.
func (a *API) GetDHCPPool(ctx context.Context, ns, name string) (*dhcpapi.IPPool, error) {
	return getDynamic[dhcpapi.IPPool](ctx, a, "get managed-DHCP IPPool "+ref(ns, name), dhcpapi.GVRIPPool, ns, name)
}

// GetNetworkConfig reads the managed-DHCP VirtualMachineNetworkConfig of a VM.
func (a *API) GetNetworkConfig(ctx context.Context, ns, vm string) (*dhcpapi.VirtualMachineNetworkConfig, error) {
	return getDynamic[dhcpapi.VirtualMachineNetworkConfig](ctx, a, "get managed-DHCP network config "+ref(ns, vm), dhcpapi.GVRNetworkConfig, ns, vm)
}
