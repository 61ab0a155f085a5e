package statefile

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes cfg at path as Write does: whoever reads it (a
// process the simulator starts, a test, a user waiting for a guest
// cluster) sees all of it. clientcmd.WriteToFile would truncate it first.
func WriteKubeconfig(path string, cfg clientcmdapi.Config) error {
	data, err := clientcmd.Write(cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	return Write(path, data)
}
