package driver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/test/harness"
)

// leakCheck collects credential values and the places they must not be.
type leakCheck struct {
	t       *testing.T
	secrets map[string]string // what -> value
}

// in fails the test for every credential value found in text.
func (l *leakCheck) in(where, text string) {
	l.t.Helper()
	for what, v := range l.secrets {
		if v != "" && strings.Contains(text, v) {
			l.t.Errorf("%s contains %s", where, what)
		}
	}
}

// apiObjects checks every VM and VMI (spec, labels, annotations, status)
// and every event of the namespace.
func (l *leakCheck) apiObjects(stage string) {
	l.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	vms, err := virt.KubevirtV1().VirtualMachines(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	for _, vm := range vms.Items {
		raw, _ := json.Marshal(vm)
		l.in(stage+": VM "+vm.Name, string(raw))
	}
	vmis, err := virt.KubevirtV1().VirtualMachineInstances(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	for _, vmi := range vmis.Items {
		raw, _ := json.Marshal(vmi)
		l.in(stage+": VMI "+vmi.Name, string(raw))
	}
	events, err := kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	for _, e := range events.Items {
		l.in(stage+": event "+e.Name, e.Message)
	}
}

// readableFiles checks every file under dir that its group or others may
// read.
func (l *leakCheck) readableFiles(stage, dir string) {
	l.t.Helper()
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil || info.Mode().Perm()&0o077 == 0 {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		l.in(stage+": "+info.Mode().Perm().String()+" file "+path, string(data))
		return nil
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

// TestNoCredentialLeaks runs a machine's whole life at --debug with every
// kind of credential (a token cloud credential, an SSH password, a key
// pair's private key, the generated guest credential of
// --harvester-cloud-provider=k3s, a harvester-bootstrap kubeconfig) and
// looks for each value in every VM and VMI, every event, every output line
// of rancher-machine and the driver (errors included) and every
// group/world-readable file of the machine store.
//
// Sequential: it revokes a credential in namespace default, and revoke
// deletes the namespace's guest grant once no credential is left there
// (credentials.DropGrantIfUnused), racing another test's credential on its
// way.
func TestNoCredentialLeaks(t *testing.T) {
	harness.NeedGuests(t) // start connects to the guest
	const cluster = "e2e-leak"
	name := cluster + "-pool1-l0000"
	withDocker(t, name)
	cred := newTokenCredential(t, "e2e-leak-admin")
	r := newRM(t, cluster)
	r.env = append(r.env, "HARVESTER_KUBECONFIG_CONTENT="+b64(cred.kubeconfig)) // the last value wins
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	password := "Pw-" + hex.EncodeToString(b)
	keyPath := filepath.Join(t.TempDir(), "id")
	key, err := os.ReadFile(filepath.Join(sim.Dir, "sim-key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyPath, key, 0o600); err != nil {
		t.Fatal(err)
	}
	l := &leakCheck{t: t, secrets: map[string]string{
		"the cloud credential's token": cred.token,
		"the SSH password":             password,
		"the private key":              strings.Split(string(key), "\n")[1], // its first base64 line
	}}
	var outputs []string
	debug := func(args ...string) string {
		out, _ := r.run(append([]string{"--debug"}, args...)...)
		outputs = append(outputs, out)
		return out
	}

	// An error path first: a create that pre-create refuses, with the password set.
	debug("create", "-d", "harvester", "--harvester-cluster-name="+cluster, "--harvester-ssh-password="+password,
		"--harvester-image-name=default/no-such-image", "--harvester-network-name=default/vlan1", cluster+"-pool1-l0001")
	out := debug("create", "-d", "harvester", "--custom-install-script="+r.script, "--harvester-cluster-name="+cluster,
		"--harvester-ssh-user=ubuntu", "--harvester-ssh-password="+password, "--harvester-cloud-provider=k3s",
		"--harvester-key-pair-name=default/sim-key", "--harvester-ssh-private-key-path="+keyPath,
		imageAndNet[0], imageAndNet[1], name)
	if status(t, r, name) != "Running" {
		t.Fatalf("create failed:\n%s", out)
	}
	l.secrets["the guest cluster's token"] = guestToken(t, cluster)
	t.Cleanup(func() {
		bootstrap(t, "kubeconfig", "revoke", "--cluster-name", cluster, "--namespace", namespace)
		bootstrap(t, "kubeconfig", "revoke", "--cluster-name", "e2e-leak-boot", "--namespace", namespace)
	})
	bootstrapKubeconfig(t, l, cred.kubeconfig)

	l.apiObjects("after create")
	debug("status", name)
	debug("ip", name)
	debug("stop", name)
	l.apiObjects("after stop")
	outputs = append(outputs, r.mustRun("--debug", "start", name))
	l.apiObjects("after start")
	l.readableFiles("machine store", r.store)
	debug("rm", "-y", "--update-config", name)
	l.readableFiles("machine store after rm", r.store)
	for i, o := range outputs {
		l.in(fmt.Sprintf("rancher-machine --debug output #%d", i+1), o)
	}
	if len(strings.Join(outputs, "")) < 1000 {
		t.Errorf("the runs printed almost nothing: %q", outputs)
	}
}

// guestToken is the token of the guest credential the driver made for
// cluster (--harvester-cloud-provider).
func guestToken(t *testing.T, cluster string) string {
	t.Helper()
	list, err := kube.CoreV1().Secrets(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: credentials.Selector(cluster)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Type == corev1.SecretTypeServiceAccountToken && len(s.Data[corev1.ServiceAccountTokenKey]) > 0 {
			return string(s.Data[corev1.ServiceAccountTokenKey])
		}
	}
	t.Fatalf("no guest credential token for cluster %s", cluster)
	return ""
}

// bootstrapKubeconfig runs `harvester-bootstrap kubeconfig` with the token
// credential, checks its log (stderr) for every credential, its own new
// token included (added to the values checked from then on).
func bootstrapKubeconfig(t *testing.T, l *leakCheck, kc string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "harvester.kubeconfig")
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "harvester-bootstrap"), "kubeconfig", "--kubeconfig", path,
		"--cluster-name", "e2e-leak-boot", "--namespace", namespace)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("harvester-bootstrap kubeconfig: %v\n%s", err, stderr.String())
	}
	var token string
	for _, line := range strings.Split(string(stdout), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "token: "); ok {
			token = v
		}
	}
	if token == "" {
		t.Fatalf("harvester-bootstrap kubeconfig printed no token:\n%s", stdout)
	}
	l.secrets["a harvester-bootstrap kubeconfig's token"] = token
	l.in("harvester-bootstrap kubeconfig's log (stderr)", stderr.String())
}
