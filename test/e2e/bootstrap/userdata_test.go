package bootstrap_test

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestUserdataMergesNodeFilesBeforeInstallScript(t *testing.T) {
	dir := t.TempDir()
	key, user, machine, out := dir+"/k.pub", dir+"/user.yaml", dir+"/machine.yaml", dir+"/node.yaml"
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(key, []byte("ssh-ed25519 AAAAC3NzaTEST e2e\n"), 0o644))
	must(os.WriteFile(user, []byte("#cloud-config\npackages: [htop]\nruncmd:\n- echo user\n"), 0o644))
	must(os.WriteFile(machine, []byte("#cloud-config\nruncmd:\n- sh /usr/local/custom_script/install.sh\nwrite_files:\n- path: /usr/local/custom_script/install.sh\n  content: echo join\n"), 0o644))

	mustRun(t, "userdata", "--distribution", "rke2", "--cluster-name", "e2e-ud", "--namespace", "default",
		"--ssh-user", "ubuntu", "--ssh-public-key", key, "--user-data", user, "--install-script", machine, "-o", out)
	if m := fileMode(t, out); m != 0o600 {
		t.Errorf("user data with a kubeconfig written with mode %o", m)
	}
	data, _ := os.ReadFile(out)
	var cfg struct {
		Packages   []string `yaml:"packages"`
		Runcmd     []any    `yaml:"runcmd"`
		WriteFiles []struct {
			Path, Content, Encoding, Permissions string
		} `yaml:"write_files"`
	}
	if !strings.HasPrefix(string(data), "#cloud-config\n") {
		t.Fatalf("not cloud-config:\n%s", data)
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, f := range cfg.WriteFiles {
		paths[f.Path] = f.Permissions
		if f.Path == "/var/lib/rancher/rke2/etc/config-files/cloud-provider-config" {
			kc, err := base64.StdEncoding.DecodeString(f.Content)
			if err != nil || !strings.Contains(string(kc), "namespace: default") {
				t.Errorf("cloud-provider-config content: %v", err)
			}
		}
	}
	for _, p := range []string{"/var/lib/rancher/rke2/etc/config-files/cloud-provider-config", "/etc/rancher/rke2/config.yaml.d/90-harvester-cloud-provider.yaml", "/usr/local/custom_script/install.sh"} {
		if _, ok := paths[p]; !ok {
			t.Errorf("write_files lacks %s", p)
		}
	}
	if paths["/var/lib/rancher/rke2/etc/config-files/cloud-provider-config"] != "0600" {
		t.Error("kubeconfig on the node is not 0600")
	}
	last, _ := cfg.Runcmd[len(cfg.Runcmd)-1].(string)
	if last != "sh /usr/local/custom_script/install.sh" {
		t.Errorf("install script is not the last runcmd: %v", cfg.Runcmd)
	}
	if !strings.Contains(string(data), "qemu-guest-agent") || !strings.Contains(string(data), "htop") || !strings.Contains(string(data), "AAAAC3NzaTEST") {
		t.Errorf("merged user data lacks a part:\n%s", data)
	}
}
