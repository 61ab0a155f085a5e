package clusterstate

import (
	"context"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Sources are the optional credentials and clusters a snapshot covers.
type Sources struct {
	// AdminSource names where the admin kubeconfig came from ("--kubeconfig").
	AdminSource string
	// CloudConfig, when set, is the guest's kubeconfig for Harvester.
	CloudConfig       *rest.Config
	CloudConfigSource string
	// Driver, when set, is the node driver's kubeconfig.
	Driver       *rest.Config
	DriverSource string
	// Guest, when set, is a client of the guest cluster.
	Guest kubernetes.Interface
	// HostStorageClass is --host-storage-class, when given.
	HostStorageClass string
	// GuestKubeconfig is the path of the guest's kubeconfig, when given.
	GuestKubeconfig string
}

// Take authenticates the admin credential and, when it is accepted, lists
// everything the checks look at. now is the time expiries are judged by.
func (c *Clients) Take(ctx context.Context, t Target, src Sources, now time.Time) Snapshot {
	s := Snapshot{Now: now, Harvester: Harvester{Target: t}, HostStorageClass: src.HostStorageClass, GuestKubeconfig: src.GuestKubeconfig}
	s.Admin = Authenticate(ctx, c.Config, src.AdminSource)
	if src.CloudConfig != nil {
		a := Authenticate(ctx, src.CloudConfig, src.CloudConfigSource)
		s.CloudConfig = &a
	}
	if src.Driver != nil {
		d := ReviewDriver(ctx, src.Driver, src.DriverSource, t.Namespace)
		s.Driver = &d
	}
	if s.Admin.Err != "" {
		return s
	}
	s.Harvester = c.FetchHarvester(ctx, t, true)
	gate := c.FetchDriverGate(ctx, t.Namespace)
	s.DriverGate = &gate
	if src.Guest != nil {
		g := FetchGuest(ctx, src.Guest)
		s.Guest = &g
	}
	return s
}
