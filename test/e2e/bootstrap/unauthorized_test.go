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
	path := rejectedKubeconfig(t)
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

// TestDoctorAndGCWithARejectedKubeconfig: doctor reports the rejected
// --kubeconfig as its one FAIL row with the 5827 advice, gc refuses with it;
// neither prints the token.
func TestDoctorAndGCWithARejectedKubeconfig(t *testing.T) {
	path := rejectedKubeconfig(t)
	d := runBin(t, "doctor", "--kubeconfig", path, "--cluster-name", "expired", "--namespace", "default")
	if d.code != 1 || !strings.Contains(d.stdout, "kubeconfig  FAIL    --kubeconfig: 401 Unauthorized") || !strings.Contains(d.stdout, "Rancher issue 5827") {
		t.Errorf("doctor: exit %d\n%s%s", d.code, d.stdout, d.stderr)
	}
	g := runBin(t, "gc", "--kubeconfig", path, "--cluster-name", "expired", "--namespace", "default", "--delete")
	if g.code != 1 || !strings.Contains(g.stderr, "Rancher issue 5827") {
		t.Errorf("gc: exit %d\n%s%s", g.code, g.stdout, g.stderr)
	}
	for _, r := range []result{d, g} {
		if strings.Contains(r.stdout+r.stderr, "expired-token") {
			t.Errorf("the token appears in the output:\n%s%s", r.stdout, r.stderr)
		}
	}
}

// rejectedKubeconfig is the simulator's kubeconfig with a token the API
// server rejects (0600).
func rejectedKubeconfig(t *testing.T) string {
	t.Helper()
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
	return path
}
