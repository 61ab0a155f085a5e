package statefile

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A kubeconfig replaces what was at its path in one rename: the file is
// complete, 0600, and nothing is left beside it.
func TestWriteKubeconfigReplacesWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, nil, 0o644); err != nil { // an empty file, as a half-done write would leave
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["g"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.AuthInfos["g"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["g"] = &clientcmdapi.Context{Cluster: "g", AuthInfo: "g"}
	cfg.CurrentContext = "g"
	if err := WriteKubeconfig(path, *cfg); err != nil {
		t.Fatal(err)
	}
	got, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.CurrentContext != "g" || got.Clusters["g"] == nil || got.Clusters["g"].Server != "https://127.0.0.1:6443" {
		t.Errorf("read back %+v", got)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", info.Mode().Perm())
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the kubeconfig", len(entries))
	}
}
