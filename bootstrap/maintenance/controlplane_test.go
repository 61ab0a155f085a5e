package maintenance

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Harvester v1.8's drainhelper errors, as its source words them.
const (
	wantHA     = "draining of this node is not possible: another controlplane is already in maintenance mode, cannot place current node in maintenance mode"
	wantSingle = "draining of this node is not possible: single controlplane cluster, cannot place controlplane in maintenance mode"
)

func cpHosts(annotated ...string) []corev1.Node {
	var out []corev1.Node
	for _, n := range threeHosts() {
		n.Labels["node-role.kubernetes.io/control-plane"], n.Labels["node-role.kubernetes.io/etcd"] = "true", "true"
		if slices.Contains(annotated, n.Name) {
			n.Annotations = map[string]string{"harvesterhci.io/maintain-status": "completed"}
		}
		out = append(out, n)
	}
	return out
}

// TestControlPlaneRule: DrainPossible in maintenance-check. A 3-host
// Harvester whose hosts are all control-plane and etcd: with h1 in
// maintenance, h2 is refused (errHAControlPlaneNode); h1 and h2 in one
// check: h1 goes in, then h2 is refused; a lone control-plane host is
// refused (errSingleControlPlaneNode); a worker is never refused. A
// refused host's VMs stay (not judged) and the check fails.
func TestControlPlaneRule(t *testing.T) {
	cases := []struct {
		name    string
		nodes   []corev1.Node
		hosts   []string
		refused map[string]string
		drained []string // hosts whose VMs are judged
	}{
		{"another control-plane host in maintenance", cpHosts("h1"), []string{"h2"}, map[string]string{"h2": wantHA}, nil},
		{"two control-plane hosts in one check", cpHosts(), []string{"h1", "h2"}, map[string]string{"h2": wantHA}, []string{"h1"}},
		{"one of three", cpHosts(), []string{"h3"}, nil, []string{"h3"}},
		{"the lone control-plane host", append(cpHosts()[:1], host("h2", "zone-b"), host("h3", "zone-c")), []string{"h1"}, map[string]string{"h1": wantSingle}, nil},
		{"a worker beside a host in maintenance", append(cpHosts("h1")[:2], host("h3", "zone-c")), []string{"h3"}, nil, []string{"h3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := snapshot(tc.nodes, guestVMI("g-p-0", "h1", "g", "p"), guestVMI("g-p-1", "h2", "g", "p"), guestVMI("g-p-2", "h3", "g", "p"))
			r, err := Check(h, tc.hosts, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range r.Refused {
				got[f.Host] = f.Reason
				if f.Source != "pkg/util/drainhelper/helper.go DrainPossible" {
					t.Errorf("source %q", f.Source)
				}
			}
			if len(got) != len(tc.refused) {
				t.Errorf("refused %v, want %v", got, tc.refused)
			}
			for k, v := range tc.refused {
				if got[k] != v {
					t.Errorf("refused %s: %q, want %q", k, got[k], v)
				}
			}
			var drained []string
			for _, v := range r.VMs {
				drained = append(drained, v.Host)
			}
			if !slices.Equal(drained, tc.drained) {
				t.Errorf("judged VMs on %v, want %v", drained, tc.drained)
			}
			if r.Failed() != (len(tc.refused) > 0) {
				t.Errorf("Failed() = %v", r.Failed())
			}
		})
	}
}

// TestControlPlaneRuleReport: the reason is quoted in the table and the
// JSON; the upgrade does not go through maintenance mode, so the rule
// does not apply to it.
func TestControlPlaneRuleReport(t *testing.T) {
	h := snapshot(cpHosts("h1"), guestVMI("g-p-1", "h2", "g", "p"))
	r, _ := Check(h, []string{"h2"}, Options{})
	var table, js bytes.Buffer
	if err := r.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if want := `REFUSED h2: Harvester refuses maintenance mode: "` + wantHA + `" (pkg/util/drainhelper/helper.go DrainPossible)`; !strings.Contains(table.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, table.String())
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Failed  bool
		Refused []Refusal
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || !got.Failed || len(got.Refused) != 1 || got.Refused[0].Reason != wantHA {
		t.Errorf("json %v: %s", err, js.String())
	}
	up, _ := Check(h, nil, Options{Upgrade: true})
	if len(up.Refused) != 0 {
		t.Errorf("upgrade: refused %+v", up.Refused)
	}
}
