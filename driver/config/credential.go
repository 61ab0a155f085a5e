package config

import "github.com/harvester-kit/harvester-machine/internal/kubeapi"

// CredentialsRejected says where the driver's credential comes from and
// that a removal picks up a renewed one.
var CredentialsRejected = &kubeapi.CredentialsRejectedError{
	Source: "the cloud credential (--" + FlagKubeconfigContent + " / HARVESTER_KUBECONFIG_CONTENT)",
	After:  "`rancher-machine rm --update-config` uses the new credential",
}
