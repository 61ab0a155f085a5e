package loadbalancer

import (
	"strings"
	"testing"
)

func TestCheckLoadBalancer(t *testing.T) {
	cases := []struct {
		name     string
		typ      string
		ann      map[string]string
		errs     []string
		warnings []string
		eff      map[string]string
	}{
		{name: "defaults", typ: "LoadBalancer", ann: nil, eff: map[string]string{AnnIPAM: "pool"}},
		{name: "dhcp with network", ann: map[string]string{AnnIPAM: "dhcp", AnnNetwork: "default/vlan1"}, eff: map[string]string{AnnIPAM: "dhcp", AnnNetwork: "default/vlan1"}},
		{name: "wrong type", typ: "NodePort", errs: []string{"spec.type \"NodePort\""}},
		{name: "bad ipam", ann: map[string]string{AnnIPAM: "static"}, errs: []string{"ipam \"static\": must be \"pool\" or \"dhcp\""}},
		{name: "network without slash", ann: map[string]string{AnnNetwork: "vlan1"}, errs: []string{"network: \"vlan1\" is not <namespace>/<name>"}},
		{name: "network with bad parts", ann: map[string]string{AnnNetwork: "Bad_NS/x_y"}, errs: []string{"namespace \"Bad_NS\"", "name \"x_y\""}},
		{name: "network with two slashes", ann: map[string]string{AnnNetwork: "a/b/c"}, errs: []string{"\"a/b/c\" is not <namespace>/<name>"}},
		{name: "primary service", ann: map[string]string{AnnPrimaryService: "web"}, eff: map[string]string{AnnPrimaryService: "web"}},
		{name: "bad primary service", ann: map[string]string{AnnPrimaryService: "ns/web"}, errs: []string{"primary-service \"ns/web\""}},
		{name: "unknown annotation", ann: map[string]string{AnnotationPrefix + "ipam-mode": "pool"}, errs: []string{"ipam-mode: unknown"}},
		{name: "health defaults", ann: map[string]string{AnnHealthCheckPort: "30080"}, warnings: []string{"ignore the healthcheck"},
			eff: map[string]string{AnnHealthCheckPort: "30080", AnnHealthCheckSuccess: "1", AnnHealthCheckFailure: "3", AnnHealthCheckPeriod: "5", AnnHealthCheckTimeout: "3"}},
		{name: "health port missing", ann: map[string]string{AnnHealthCheckSuccess: "2"}, errs: []string{"healthcheck-port: required"}},
		{name: "health port not a number", ann: map[string]string{AnnHealthCheckPort: "http"}, errs: []string{"healthcheck-port \"http\""}},
		{name: "health port out of range", ann: map[string]string{AnnHealthCheckPort: "70000"}, errs: []string{"1-65535"}},
		{name: "bad thresholds", ann: map[string]string{AnnHealthCheckPort: "80", AnnHealthCheckSuccess: "0", AnnHealthCheckFailure: "x", AnnHealthCheckPeriod: "-1", AnnHealthCheckTimeout: "1.5"},
			errs: []string{"success-threshold \"0\"", "failure-threshold \"x\"", "periodseconds \"-1\"", "timeoutseconds \"1.5\""}},
		{name: "timeout over period", ann: map[string]string{AnnHealthCheckPort: "80", AnnHealthCheckPeriod: "2", AnnHealthCheckTimeout: "9"}, warnings: []string{"timeout 9s exceeds the period 2s"}},
		{name: "unrelated annotations pass", ann: map[string]string{"example.com/x": "y"}, eff: map[string]string{AnnIPAM: "pool"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := CheckLoadBalancer(c.typ, c.ann)
			if len(c.errs) == 0 && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(c.errs) > 0 && err == nil {
				t.Fatalf("want errors %v", c.errs)
			}
			for _, w := range c.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			all := strings.Join(res.Warnings, "\n")
			if !strings.Contains(all, "ipam mode cannot be changed") {
				t.Errorf("missing ipam warning: %v", res.Warnings)
			}
			for _, w := range c.warnings {
				if !strings.Contains(all, w) {
					t.Errorf("warnings lack %q: %v", w, res.Warnings)
				}
			}
			for k, v := range c.eff {
				if res.Effective[k] != v {
					t.Errorf("effective %s = %q, want %q", k, res.Effective[k], v)
				}
			}
		})
	}
}

func TestCheckLoadBalancerCollectsAll(t *testing.T) {
	_, err := CheckLoadBalancer("ClusterIP", map[string]string{AnnIPAM: "x", AnnNetwork: "y", AnnHealthCheckPort: "0"})
	if err == nil || strings.Count(err.Error(), "\n") < 3 {
		t.Errorf("want 4 joined errors, got %v", err)
	}
}
