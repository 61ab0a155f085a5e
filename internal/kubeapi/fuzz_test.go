package kubeapi

import (
	"testing"
)

// FuzzConfigFromKubeconfig: kubeconfig content never panics the client
// configuration; an accepted one has a server and this project's limits.
func FuzzConfigFromKubeconfig(f *testing.F) {
	for _, s := range []string{"apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster:\n    server: https://127.0.0.1:6443\ncontexts:\n- name: h\n  context: {cluster: h, user: u}\ncurrent-context: h\nusers:\n- name: u\n  user: {token: t}\n",
		"clusters: 5\n", "", "current-context: x\n", "apiVersion: v1\nkind: Config\nclusters:\n- name: h\n  cluster: {server: '::'}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		cfg, err := ConfigFromKubeconfig([]byte(v), "fuzz")
		if err != nil {
			return
		}
		if cfg.Host == "" || cfg.QPS != QPS || cfg.UserAgent != "fuzz" {
			t.Fatalf("accepted config without a server or limits: host %q qps %v ua %q", cfg.Host, cfg.QPS, cfg.UserAgent)
		}
	})
}
