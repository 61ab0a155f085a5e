package create

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// recordCluster records in m the identity of the credential's cluster,
// the Setting server-version's UID, and returns the problems found: no
// Harvester, or a credential that is rejected.
func recordCluster(ctx context.Context, api *harvesterapi.API, m *machine.Machine) []error {
	setting, err := api.ServerVersion(ctx)
	switch {
	case err == nil:
		m.Ownership.ClusterUID = string(setting.UID)
		log.Infof("Harvester %s, namespace %s", setting.Current(), m.Config.VMNamespace)
	case harvesterapi.IsTerminal(err):
		return []error{err}
	case apierrors.IsForbidden(err):
		log.Warnf("cannot read the Harvester setting server-version (forbidden); the cluster is identified by namespace %s", m.Config.VMNamespace)
	default:
		return []error{fmt.Errorf("%w (is this a Harvester cluster?)", err)}
	}
	return nil
}

// checkNamespace reads the VM namespace, and records its UID in m, when
// the namespace must identify the cluster (the setting was not readable)
// or is not known to exist yet (nsSeen: an object in it was read). It
// completes the cluster's record: the session is confirmed once either
// UID is known and no problem is returned.
func checkNamespace(ctx context.Context, api *harvesterapi.API, m *machine.Machine, nsSeen bool) []error {
	var problems []error
	ns, o := m.Config.VMNamespace, &m.Ownership
	if o.ClusterUID == "" || !nsSeen {
		got, err := api.GetNamespace(ctx, ns)
		switch {
		case err == nil:
			o.NamespaceUID = string(got.UID)
		case apierrors.IsForbidden(err):
			log.Warnf("cannot read namespace %s (forbidden); skipping that check", ns)
		default:
			problems = append(problems, harvesterapi.NotFoundOr(err, config.FlagProblem(config.FlagVMNamespace, "namespace %q does not exist", ns)))
		}
	}
	if o.ClusterUID == "" && o.NamespaceUID == "" && len(problems) == 0 {
		problems = append(problems, fmt.Errorf("cannot record which Harvester cluster the machine is created on: "+
			"the credential may read neither the setting server-version nor namespace %s (grant get on one of them)", ns))
	}
	return problems
}
