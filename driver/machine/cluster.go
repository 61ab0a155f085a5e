package machine

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
)

// ConfirmCluster checks that the credential's cluster is the machine's:
// the Setting server-version's UID when recorded and readable, else the
// namespace's UID. A machine that recorded neither (made by an older
// driver) is not checked.
func (m *Machine) ConfirmCluster(ctx context.Context, api *harvesterapi.API) error {
	o, ns := m.Ownership, m.Config.VMNamespace
	if o.ClusterUID == "" && o.NamespaceUID == "" {
		return nil
	}
	if o.ClusterUID != "" {
		s, err := api.ServerVersion(ctx)
		switch {
		case err == nil && string(s.UID) == o.ClusterUID:
			return nil
		case err == nil:
			return wrongCluster("its setting server-version has UID %s, the machine's cluster's has UID %s", s.UID, o.ClusterUID)
		case apierrors.IsNotFound(err):
			return wrongCluster("it has no setting server-version: it is no Harvester cluster")
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("confirm the Harvester cluster: %w", err)
		}
	}
	if o.NamespaceUID != "" {
		ns, err := api.GetNamespace(ctx, ns)
		switch {
		case err == nil && string(ns.UID) == o.NamespaceUID:
			return nil
		case err == nil:
			return wrongCluster("its namespace %s has UID %s, the machine's namespace had UID %s: another cluster, or the namespace was re-created", ns, ns.UID, o.NamespaceUID)
		case apierrors.IsNotFound(err):
			return wrongCluster("it has no namespace %s", ns)
		case !apierrors.IsForbidden(err):
			return fmt.Errorf("confirm the Harvester cluster: %w", err)
		}
	}
	return errors.New("cannot confirm that the credential points at the Harvester cluster this machine was created on: " +
		"it may read neither the setting server-version nor namespace " + ns + "; nothing was changed")
}

func wrongCluster(format string, args ...any) error {
	return fmt.Errorf("%w (%s); nothing was changed: use the credential of the machine's cluster, "+
		"or `rancher-machine rm -f` to forget the machine without touching any cluster", ErrWrongCluster, fmt.Sprintf(format, args...))
}
