package doctor

import (
	"fmt"
	"time"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Check names of the credential checks.
const (
	CheckKubeconfig  = "kubeconfig"
	CheckCloudConfig = "cloud-config"
)

// ExpiryWarning is how close to its expiry a credential is reported WARN
// (Rancher issue 5827: Rancher's kubeconfig tokens expire after 30 days).
const ExpiryWarning = 7 * 24 * time.Hour

// authRow reports whether a authenticated and when it expires; fix is the
// advice when it did not or is about to expire.
func authRow(check string, a clusterstate.Auth, now time.Time, fix string) Row {
	if a.Err != "" {
		if a.Rejected {
			return fail(check, a.Source+": 401 Unauthorized (the "+a.Kind+" was rejected)", fix)
		}
		return fail(check, a.Err, "check that the server in "+a.Source+" is reachable")
	}
	seen := fmt.Sprintf("%s: %s authenticates as %s", a.Source, a.Kind, a.User)
	if a.Expires == nil {
		return ok(check, seen+", does not expire")
	}
	left := a.Expires.Sub(now)
	seen += ", expires " + a.Expires.UTC().Format(time.RFC3339)
	switch {
	case left <= 0:
		return fail(check, seen+" (expired)", fix)
	case left < ExpiryWarning:
		return warn(check, fmt.Sprintf("%s (in %s, under %d days)", seen, left.Round(time.Minute), int(ExpiryWarning.Hours()/24)), fix)
	}
	return ok(check, fmt.Sprintf("%s (in %d days)", seen, int(left.Hours()/24)))
}

// Kubeconfig: --kubeconfig itself authenticates and does not expire soon.
func Kubeconfig(s *clusterstate.Snapshot) Row {
	rejected := &kubeapi.CredentialsRejectedError{Source: "--kubeconfig"}
	return authRow(CheckKubeconfig, s.Admin, s.Now, rejected.Error())
}

// CloudConfig: the guest's kubeconfig for Harvester (--cloud-config), e.g.
// one with a time-bound token from `kubeconfig --ttl`.
func CloudConfig(s *clusterstate.Snapshot) []Row {
	if s.CloudConfig == nil {
		return nil
	}
	return []Row{authRow(CheckCloudConfig, *s.CloudConfig, s.Now,
		"issue a new one with `harvester-bootstrap kubeconfig --cluster-name "+s.Harvester.Cluster+" --namespace "+s.Harvester.Namespace+
			" [--ttl DURATION]` (or `kubeconfig rotate`) and put it into the guest cluster's cloud-config")}
}
