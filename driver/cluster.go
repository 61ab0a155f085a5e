package driver

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
)

// session returns the API of the command's credential once the credential
// is confirmed to point at the cluster the machine was created on. Every
// command goes through it, so a wrong cluster changes nothing and NotFound
// is only ever read on the right cluster.
func (d *Driver) session(ctx context.Context) (*harvesterapi.API, error) {
	api, err := d.client()
	if err != nil {
		return nil, err
	}
	if d.cmd.confirmed {
		return api, nil
	}
	if err := d.confirmCluster(ctx, api); err != nil {
		return nil, fmt.Errorf("machine %s: %w", d.MachineName, err)
	}
	d.confirmed()
	return api, nil
}

// confirmCluster checks that the credential's cluster is the recorded one:
// the Setting server-version's UID when recorded and readable, else the
// namespace's UID. A machine that recorded neither (made by an older
// driver) is not checked.
func (d *Driver) confirmCluster(ctx context.Context, api *harvesterapi.API) error {
	if d.ClusterUID == "" && d.NamespaceUID == "" {
		return nil
	}
	if d.ClusterUID != "" {
		s, err := api.ServerVersion(ctx)
		switch {
		case err == nil && string(s.UID) == d.ClusterUID:
			return nil
		case err == nil:
			return wrongCluster("its setting server-version has UID %s, the machine's cluster's has UID %s", s.UID, d.ClusterUID)
		case apierrors.IsNotFound(err):
			return wrongCluster("it has no setting server-version: it is no Harvester cluster")
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("confirm the Harvester cluster: %w", err)
		}
	}
	if d.NamespaceUID != "" {
		ns, err := api.GetNamespace(ctx, d.VMNamespace)
		switch {
		case err == nil && string(ns.UID) == d.NamespaceUID:
			return nil
		case err == nil:
			return wrongCluster("its namespace %s has UID %s, the machine's namespace had UID %s: another cluster, or the namespace was re-created", d.VMNamespace, ns.UID, d.NamespaceUID)
		case apierrors.IsNotFound(err):
			return wrongCluster("it has no namespace %s", d.VMNamespace)
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("confirm the Harvester cluster: %w", err)
		}
	}
	return errors.New("cannot confirm that the credential points at the Harvester cluster this machine was created on: " +
		"it may read neither the setting server-version nor namespace " + d.VMNamespace + "; nothing was changed")
}

func wrongCluster(format string, args ...any) error {
	return fmt.Errorf("%w (%s); nothing was changed: use the credential of the machine's cluster, "+
		"or `rancher-machine rm -f` to forget the machine without touching any cluster", machine.ErrWrongCluster, fmt.Sprintf(format, args...))
}
