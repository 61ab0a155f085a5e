package hapiserver

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The objects are the chart's (deploy/charts/harvester: values.yaml's
// service.vip, templates/longhorn-volumesnapshotclass.yaml) and Longhorn's
// backup class, in the namespaces Harvester's API server reads them from.
func TestObjects(t *testing.T) {
	ns, vip, custom := Objects("harvester-system", map[string]string{"l": "v"})
	if ns.Name != "cattle-system" || ns.Labels["l"] != "v" {
		t.Errorf("namespace %s labels %v, want cattle-system", ns.Name, ns.Labels)
	}
	if vip.Namespace != "harvester-system" || vip.Name != "vip" || vip.Data["enabled"] != "false" ||
		vip.Data["serviceType"] != "LoadBalancer" || vip.Data["mode"] != "static" {
		t.Errorf("ConfigMap %s/%s %v, want harvester-system/vip with the chart's defaults", vip.Namespace, vip.Name, vip.Data)
	}
	want := map[string]string{"longhorn": "bak", "longhorn-snapshot": "snap"}
	got := map[string]string{}
	for _, c := range custom {
		switch c.GetKind() {
		case "VolumeSnapshotClass":
			typ, _ := c.Object["parameters"].(map[string]any)["type"].(string)
			if c.Object["driver"] != "driver.longhorn.io" || c.GetLabels()["l"] != "v" {
				t.Errorf("VolumeSnapshotClass %s: %v", c.GetName(), c.Object)
			}
			got[c.GetName()] = typ
		case "Setting":
			if c.GetName() != "upgrade-checker-enabled" || c.Object["value"] != "false" {
				t.Errorf("Setting %s value %v, want upgrade-checker-enabled false", c.GetName(), c.Object["value"])
			}
		default:
			t.Errorf("unexpected %s %s", c.GetKind(), c.GetName())
		}
	}
	if len(got) != len(want) || got["longhorn"] != "bak" || got["longhorn-snapshot"] != "snap" {
		t.Errorf("VolumeSnapshotClasses %v, want %v", got, want)
	}
}

// The flags are the chart's Deployment environment, on the given ports,
// with the profiler off and the kubeconfig naming the Pod's files.
func TestArgs(t *testing.T) {
	args := Options{Dir: "/state/harvester", Namespace: "harvester-system"}.Args(18080, 18443)
	for _, want := range [][]string{{"--namespace", "harvester-system"}, {"--http-port", "18080"}, {"--https-port", "18443"},
		{"--profile-listen-address", ""}, {"--kubeconfig", "/state/harvester/harvester.kubeconfig"}} {
		i := slices.Index(args, want[0])
		if i < 0 || i+1 >= len(args) || args[i+1] != want[1] {
			t.Errorf("args %q: want %s %q", args, want[0], want[1])
		}
	}
	for _, flag := range []string{"--hci-mode", "--rancher-embedded"} {
		if !slices.Contains(args, flag) {
			t.Errorf("args %q: want %s (the chart's HCI_MODE and RANCHER_EMBEDDED)", args, flag)
		}
	}
}

// TestEnv: the environment names steve v0.7.17 reads
// (pkg/schema/definitions/schema.go: delayEnvVar, refreshEnvVar), with
// whole numbers (it parses them with strconv.Atoi, falling back to its
// defaults otherwise) and a period above 0 (time.NewTicker panics on 0).
func TestEnv(t *testing.T) {
	got := map[string]string{}
	for _, kv := range Env() {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	delay, err := strconv.Atoi(got["CATTLE_CRD_REFRESH_DELAY_SECONDS"])
	if err != nil || delay < 3600 {
		t.Errorf("CATTLE_CRD_REFRESH_DELAY_SECONDS=%q: want whole seconds, at least an hour", got["CATTLE_CRD_REFRESH_DELAY_SECONDS"])
	}
	period, err := strconv.Atoi(got["CATTLE_BACKGROUND_REFRESH_MINUTES"])
	if err != nil || period < 60 {
		t.Errorf("CATTLE_BACKGROUND_REFRESH_MINUTES=%q: want whole minutes, at least an hour", got["CATTLE_BACKGROUND_REFRESH_MINUTES"])
	}
	if len(got) != 2 {
		t.Errorf("Env() = %q, want steve's two settings only", Env())
	}
}
