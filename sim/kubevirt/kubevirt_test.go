package kubevirt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadObjectsSkipsEmptyDocuments: kubevirt-install's files are YAML
// streams whose first document is empty ("---" first).
func TestReadObjectsSkipsEmptyDocuments(t *testing.T) {
	path := filepath.Join(t.TempDir(), "objects.yaml")
	stream := "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: ns\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
	if err := os.WriteFile(path, []byte(stream), 0o600); err != nil {
		t.Fatal(err)
	}
	objs, err := readObjects(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 || objs[0].GetKind() != "ServiceAccount" || objs[0].GetNamespace() != "ns" || objs[1].GetName() != "b" {
		t.Fatalf("read %d objects: %v", len(objs), objs)
	}
}

// TestExecRefusesMalformedArguments: the hidden command says what it
// wants instead of executing something else.
func TestExecRefusesMalformedArguments(t *testing.T) {
	for _, args := range [][]string{nil, {"/sa"}, {"/sa", "x", "/bin/true"}} {
		if err := Exec(args); err == nil || !strings.Contains(err.Error(), "usage: SA-DIR -- ARGV") {
			t.Errorf("Exec(%q) = %v, want the usage", args, err)
		}
	}
	if got := ExecArgs("/sa", []string{"/bin/virt-api", "--port", "1"}); strings.Join(got, " ") != ExecCommand+" /sa -- /bin/virt-api --port 1" {
		t.Errorf("ExecArgs = %q", got)
	}
}
