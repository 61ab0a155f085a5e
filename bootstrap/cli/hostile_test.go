package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"

	"github.com/harvester-kit/harvester-machine/bootstrap/gc"
)

const testGuestKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: harvester
  cluster:
    server: https://10.0.0.10:6443
contexts:
- name: g@harvester/default
  context:
    cluster: harvester
    user: g@harvester
    namespace: default
current-context: g@harvester/default
users:
- name: g@harvester
  user:
    token: t
`

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// countingServer is an API server that counts the requests it gets and
// answers none usefully; its kubeconfig is returned.
func countingServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(w, "unexpected", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	kc := strings.Replace(testGuestKubeconfig, "https://10.0.0.10:6443", srv.URL, 1)
	return writeTemp(t, "admin.kubeconfig", kc), &n
}

// `kubeconfig` with a service account whose token Secret name would be
// invalid makes no API request at all (it used to create three objects).
func TestKubeconfigDerivedNamesBeforeAnyRequest(t *testing.T) {
	kc, requests := countingServer(t)
	long := strings.Repeat("s", 250)
	for _, cmd := range [][]string{{"kubeconfig"}, {"kubeconfig", "rotate"}, {"kubeconfig", "revoke"}} {
		args := append(cmd, "--kubeconfig", kc, "--cluster-name", "g", "--namespace", "default", "--service-account", long)
		_, stderr, code := run(t, args...)
		if code == 0 {
			t.Errorf("%v: exit 0", cmd)
		}
		for _, want := range []string{`--service-account "` + long + `": at most 247 characters`, "token Secret"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%v: stderr lacks %q: %s", cmd, want, stderr)
			}
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d API requests made before rejecting the service account", n)
	}
}

// TestKubeconfigFlagsCheckedBeforeAnyRequest: a bad --server (port 99999,
// not https) or --format fails `kubeconfig` before anything is created
// (before, it exited 1 after creating a working credential).
func TestKubeconfigFlagsCheckedBeforeAnyRequest(t *testing.T) {
	kc, requests := countingServer(t)
	cases := []struct {
		flags []string
		want  string
	}{
		{[]string{"--server", "https://10.0.0.10:99999"}, `--server "https://10.0.0.10:99999": port 99999 is not a port (1 to 65535)`},
		{[]string{"--server", "http://10.0.0.10:6443"}, `--server "http://10.0.0.10:6443": must be an https:// URL`},
		{[]string{"--format", "yaml"}, `--format "yaml": must be one of kubeconfig, base64, cloud-init`},
	}
	for _, tc := range cases {
		args := append([]string{"kubeconfig", "--kubeconfig", kc, "--cluster-name", "g", "--namespace", "default"}, tc.flags...)
		_, stderr, code := run(t, args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %s\nwant %q", tc.flags, code, stderr, tc.want)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d API requests made before rejecting the flags", n)
	}
}

func TestHostileFlagValuesRejected(t *testing.T) {
	notKubeconfig := writeTemp(t, "cc", "hello: world\n")
	noContext := writeTemp(t, "cc2", strings.Replace(testGuestKubeconfig, "current-context: g@harvester/default", "", 1))
	noUser := writeTemp(t, "cc3", strings.Replace(testGuestKubeconfig, "user: g@harvester\n    namespace", "user: nobody\n    namespace", 1))
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"lb", "pool", "--name", "p", "--range", "10.0.0.0/24", "--scope-namespace", "Bad NS"}, `--scope-namespace "Bad NS": must be "*" or a namespace name`},
		{[]string{"lb", "pool", "--name", "p", "--range", "10.0.0.0/24", "--priority", "99999999999999"}, `--priority "99999999999999": must be at most 4294967295 (the IPPool's priority is a 32-bit number)`},
		{[]string{"lb", "pool", "--name", "p", "--range", "10.0.0.0/24", "--scope-project", "p/x"}, `--scope-project "p/x": must be "*" or a Rancher project ID`},
		{[]string{"lb", "pool", "--name", "p", "--range", "10.0.0.0/24", "--scope-guest-cluster", "ünï"}, `--scope-guest-cluster "ünï": must be "*" or a guest cluster name`},
		{[]string{"addon", "rke1", "--cluster-name", "g", "--cloud-config", notKubeconfig}, "--cloud-config " + notKubeconfig + ": not a usable kubeconfig: no current-context"},
		{[]string{"addon", "k3s", "--cluster-name", "g", "--cloud-config", notKubeconfig}, "--cloud-config " + notKubeconfig + ": not a usable kubeconfig"},
		{[]string{"addon", "k3s", "--cluster-name", "g", "--cloud-config", noContext}, "no current-context"},
		{[]string{"addon", "rke1", "--cluster-name", "g", "--cloud-config", noUser}, `names no user among its users (user "nobody")`},
		{[]string{"addon", "k3s", "--cluster-name", "g", "--host-storage-class", "Not_A_Class", "--cloud-config", notKubeconfig}, `--host-storage-class "Not_A_Class": must be the name of a Harvester StorageClass`},
		{[]string{"manifests", "--cluster-name", "g", "--host-storage-class", strings.Repeat("a", 254)}, "--host-storage-class"},
		{[]string{"kubeconfig", "--cluster-name", "ünï", "--namespace", "default"}, `--cluster-name "ünï": must be a DNS-1123 label`},
		{[]string{"addon", "k3s", "--cluster-name", "ünï", "--cloud-config", noUser}, `--cluster-name "ünï"`},
		{[]string{"affinity", "--cluster-name", "ünï", "--pool", "p"}, `--cluster-name "ünï"`},
	}
	for _, c := range cases {
		if stderr := assertFails(t, c.args, c.want); strings.Contains(stderr, "token: t") {
			t.Errorf("%v: the kubeconfig's content is in the error", c.args)
		}
	}
	// A real kubeconfig and "*" scopes are accepted.
	if _, stderr, code := run(t, "addon", "k3s", "--cluster-name", "g", "--cloud-config", writeTemp(t, "ok", testGuestKubeconfig)); code != 0 {
		t.Errorf("valid --cloud-config rejected: %s", stderr)
	}
	if _, stderr, code := run(t, "lb", "pool", "--name", "p", "--range", "10.0.0.0/24", "--scope-project", "c-m-abc:p-xyz", "--scope-namespace", "*", "--scope-guest-cluster", "g"); code != 0 {
		t.Errorf("valid scope rejected: %s", stderr)
	}
}

// `userdata` splits MIME user data as the driver does (same package): the
// cloud-config part is merged, the script kept; an unsupported part is an
// error naming --user-data and the part.
func TestUserdataMIME(t *testing.T) {
	mime := "Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/cloud-config\n\nruncmd: [echo merged]\n" +
		"--B\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho kept\n--B--\n"
	out, stderr, code := run(t, "userdata", "--user-data", writeTemp(t, "ud", mime))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Content-Type: text/cloud-config", "- echo merged", "Content-Type: text/x-shellscript", "#!/bin/sh\necho kept", "qemu-guest-agent"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "text/plain") {
		t.Errorf("MIME user data wrapped as text/plain:\n%s", out)
	}
	bad := "Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/cloud-config\n\na: 1\n--B\nContent-Type: text/html\n\n<p>\n--B--\n"
	_, stderr, code = run(t, "userdata", "--user-data", writeTemp(t, "bad", bad))
	if code == 0 || !strings.Contains(stderr, "--user-data: part 2: content type text/html is not supported") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// Issue 33, item 7: gc's table and JSON escape what came from a cluster
// (an API server's error message, a name) instead of printing it raw.
func TestGCReportEscapesClusterStrings(t *testing.T) {
	results := []gc.Result{{Candidate: gc.Candidate{Kind: "LoadBalancer", Namespace: "default", Name: "lb\x1b[2J", Reason: "Service x\ry"},
		Error: "delete: \x1b]0;owned\x07 \u202egnp.exe"}}
	var table, js bytes.Buffer
	if err := writeGCTable(&table, results); err != nil {
		t.Fatal(err)
	}
	if err := gcJSON(results)(&js); err != nil {
		t.Fatal(err)
	}
	var decoded []gc.Result
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatal(err)
	}
	all := table.String()
	for _, r := range decoded {
		all += r.Name + r.Reason + r.Error
	}
	for _, r := range all {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			t.Errorf("gc output keeps %U:\n%s", r, all)
		}
	}
	if !strings.Contains(table.String(), `lb\x1b[2J`) {
		t.Errorf("table does not show the escaped name:\n%s", table.String())
	}
}
