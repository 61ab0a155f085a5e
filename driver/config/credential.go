package config

import (
	"strconv"
	"strings"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// CredentialsRejected says where the driver's credential comes from and
// that a removal picks up a renewed one.
var CredentialsRejected = &kubeapi.CredentialsRejectedError{
	Source: "the cloud credential (--" + FlagKubeconfigContent + " / HARVESTER_KUBECONFIG_CONTENT)",
	After:  "`rancher-machine rm --update-config` uses the new credential",
}

// UpdateConfigRequested reports whether rancher-machine's command line has
// --update-config (bare, or with a true value).
func UpdateConfigRequested(args []string) bool {
	for _, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "update-config" {
			continue
		}
		if !hasValue {
			return true
		}
		on, err := strconv.ParseBool(value)
		return err == nil && on
	}
	return false
}

// CommandCredential returns the kubeconfig given as --harvester-kubeconfig-content
// in args (either "--flag=value" or "--flag value"; a value may contain '=')
// or else in HARVESTER_KUBECONFIG_CONTENT, decoded if it is base64.
func CommandCredential(args []string, getenv func(string) string) (string, bool) {
	long := FlagField(FlagKubeconfigContent)
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, long+"="); ok && v != "" {
			return DecodePlainOrBase64(v, IsKubeconfig), true
		}
		if a == long && i+1 < len(args) && args[i+1] != "" && !strings.HasPrefix(args[i+1], "-") {
			return DecodePlainOrBase64(args[i+1], IsKubeconfig), true
		}
	}
	if v := getenv(EnvVar(FlagKubeconfigContent)); v != "" {
		return DecodePlainOrBase64(v, IsKubeconfig), true
	}
	return "", false
}
