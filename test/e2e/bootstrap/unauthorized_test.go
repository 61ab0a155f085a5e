package bootstrap_test

import (
	"os"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestRejectedCredentialSaysExpired: a Harvester kubeconfig whose token the
// API server rejects (401) yields the one explanation the driver gives too,
// naming the flag that carries the credential.
func TestRejectedCredentialSaysExpired(t *testing.T) {
	cfg, err := clientcmd.LoadFromFile(sim.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for name := range cfg.AuthInfos {
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "expired-token"}
	}
	path := tempFile(t, "expired.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runBin(t, "kubeconfig", "--kubeconfig", path, "--cluster-name", "expired", "--namespace", "default")
	if r.code == 0 {
		t.Fatalf("kubeconfig with a rejected token succeeded:\n%s", r.stdout)
	}
	for _, want := range []string{"401 Unauthorized", "Rancher issue 5827", "put it in --kubeconfig"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "expired-token") {
		t.Errorf("the token appears in the error:\n%s", r.stderr)
	}
}
