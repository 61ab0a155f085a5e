package cloudinit

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	goldenfile "github.com/harvester-kit/harvester-machine/internal/golden"
)

// rancherFile is what rancher-machine writes for --harvester-cloud-config.
const rancherFile = `#cloud-config
hostname: c1-pool1-abcde
runcmd:
- sh /usr/local/custom_script/install.sh
write_files:
- content: H4sIAAAAAAAA/yrOz01VSM7PS0lNLlEozsjMSQEAAAD//w==
  encoding: gzip+b64
  path: /usr/local/custom_script/install.sh
  permissions: "0644"
`

// golden compares got with testdata/name (rewritten with -update).
var golden = goldenfile.Assert

// goldenCases are the inputs of the golden user-data files.
var goldenCases = []struct {
	name string
	in   Input
}{
	{"key-agent-rancher.yaml", Input{User: "ubuntu", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAAC3Nza test@example"}, InstallQemuGuestAgent: true, CloudConfig: []byte(rancherFile)}},
	{"password-root-quote.yaml", Input{User: "root", Password: `pa"ss: 'word #1`, InstallQemuGuestAgent: true, CloudConfig: []byte(rancherFile)}},
	{"user-data-merge.yaml", Input{User: "ubuntu", SSHAuthorizedKeys: []string{"ssh-rsa AAAAB3 k"}, InstallQemuGuestAgent: true,
		UserData:    []byte("#cloud-config\npackage_update: true\npackages:\n- qemu-guest-agent\n- [htop, 3.0]\nruncmd:\n- - systemctl\n  - enable\n  - '--now'\n  - qemu-guest-agent.service\n- echo user\nwrite_files:\n- path: /etc/user.conf\n  content: hello\n"),
		CloudConfig: []byte(rancherFile)}},
	{"install-first-in-user-data.yaml", Input{User: "ubuntu", InstallQemuGuestAgent: true,
		UserData:    []byte("runcmd:\n- sh /usr/local/custom_script/install.sh\n- echo after\n"),
		CloudConfig: []byte("#cloud-config\nruncmd:\n- echo from-file\n")}},
	{"jinja.yaml", Input{User: "ubuntu", InstallQemuGuestAgent: true,
		UserData:    []byte("## template: jinja\n#cloud-config\nruncmd:\n- echo {{ v1.local_hostname }}\n"),
		CloudConfig: []byte(rancherFile)}},
	{"script-multipart.txt", Input{User: "ubuntu", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA k"}, InstallQemuGuestAgent: true,
		UserData:    []byte("#!/bin/bash\necho hello > /tmp/hello\n"),
		CloudConfig: []byte(rancherFile)}},
	{"skip-agent-empty.yaml", Input{User: "ubuntu", InstallQemuGuestAgent: false}},
	{"write-files-rancher.yaml", Input{User: "ubuntu", InstallQemuGuestAgent: true, CloudConfig: []byte(rancherFile),
		UserData:   []byte("#cloud-config\nwrite_files:\n- path: /etc/user.conf\n  content: hello\n"),
		WriteFiles: []WriteFile{SecretFile("/etc/kubernetes/cloud-config", []byte("kubeconfig")), PrivateFile("/etc/x.yaml", []byte("a: 1\n"))}}},
}

func TestBuildGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Build(tc.in)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			golden(t, tc.name, got)
			again, _ := Build(tc.in)
			if string(again) != string(got) {
				t.Errorf("Build is not deterministic")
			}
		})
	}
}

type parsed struct {
	Packages []any          `yaml:"packages"`
	Runcmd   []any          `yaml:"runcmd"`
	Chpasswd map[string]any `yaml:"chpasswd"`
	Hostname string         `yaml:"hostname"`
}

func parse(t *testing.T, data []byte) parsed {
	t.Helper()
	var p parsed
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatalf("result is not YAML: %v\n%s", err, data)
	}
	return p
}

func TestBuildRules(t *testing.T) {
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true,
		UserData:    []byte("packages: [qemu-guest-agent, htop]\nruncmd: [echo user]\n"),
		CloudConfig: []byte(rancherFile)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), "#cloud-config\n") {
		t.Errorf("missing #cloud-config header: %q", got[:20])
	}
	p := parse(t, got)
	n := 0
	for _, pkg := range p.Packages {
		if pkg == QemuGuestAgentPackage {
			n++
		}
	}
	if n != 1 {
		t.Errorf("qemu-guest-agent listed %d times, want once: %v", n, p.Packages)
	}
	if last := p.Runcmd[len(p.Runcmd)-1]; last != "sh /usr/local/custom_script/install.sh" {
		t.Errorf("install script is not last in runcmd: %v", p.Runcmd)
	}
	first, ok := p.Runcmd[0].([]any)
	if !ok || first[0] != "systemctl" || first[2] != "--now" {
		t.Errorf("runcmd does not start by enabling the agent: %v", p.Runcmd)
	}
	if p.Hostname != "c1-pool1-abcde" {
		t.Errorf("hostname from the cloud-config file lost: %q", p.Hostname)
	}
}

func TestBuildPasswordSurvivesQuotes(t *testing.T) {
	pw := `a"b'c: #d\n{e}`
	got, err := Build(Input{User: "ubuntu", Password: pw})
	if err != nil {
		t.Fatal(err)
	}
	p := parse(t, got)
	users, _ := p.Chpasswd["users"].([]any)
	if len(users) != 1 || users[0].(map[string]any)["password"] != pw {
		t.Errorf("password not preserved exactly: %v", p.Chpasswd)
	}
}

func TestBuildSkipAgent(t *testing.T) {
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: false, CloudConfig: []byte(rancherFile)})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(got), QemuGuestAgentPackage) {
		t.Errorf("agent injected although disabled:\n%s", got)
	}
}

func TestBuildScriptIsMultipart(t *testing.T) {
	script := "#!/bin/sh\necho 'x: y'\n"
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true, UserData: []byte(script), CloudConfig: []byte(rancherFile)})
	if err != nil {
		t.Fatal(err)
	}
	s := string(got)
	for _, want := range []string{"multipart/mixed", "text/cloud-config", "text/x-shellscript", script, "sh /usr/local/custom_script/install.sh"} {
		if !strings.Contains(s, want) {
			t.Errorf("multipart output lacks %q", want)
		}
	}
}

func TestBuildErrors(t *testing.T) {
	cases := []struct {
		name string
		in   Input
		want string
	}{
		{"bad yaml", Input{UserData: []byte("#cloud-config\nfoo: [unclosed\n")}, "user data: not valid cloud-config YAML"},
		{"list", Input{UserData: []byte("- a\n- b\n")}, "user data: cloud-config must be a YAML mapping"},
		{"bad file", Input{CloudConfig: []byte("a: b: c\n")}, "cloud-config file: not valid"},
		{"keys without user", Input{SSHAuthorizedKeys: []string{"k"}}, "user name is needed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestBuildJinjaNotYAMLIsPassedWhole(t *testing.T) {
	tpl := "## template: jinja\n#cloud-config\n{% if v1.distro == 'ubuntu' %}\npackages: [htop]\n{% endif %}\n"
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true, UserData: []byte(tpl)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), tpl) || !strings.Contains(string(got), "multipart/mixed") {
		t.Errorf("jinja template not passed whole in a MIME part:\n%s", got)
	}
}

// TestWriteFilesKeepInstallLast: the tool's own files come first, the
// user's next, rancher-machine's last; the agent is enabled before the
// install script, which stays the last command.
func TestWriteFilesKeepInstallLast(t *testing.T) {
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true, CloudConfig: []byte(rancherFile),
		UserData:   []byte("#cloud-config\nruncmd:\n- echo user\nwrite_files:\n- path: /etc/user.conf\n  content: hello\n"),
		WriteFiles: []WriteFile{SecretFile("/etc/kubernetes/cloud-config", []byte("kc"))}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		WriteFiles []WriteFile `yaml:"write_files"`
		Runcmd     []any       `yaml:"runcmd"`
	}
	if err := yaml.Unmarshal(got, &doc); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, f := range doc.WriteFiles {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "/etc/kubernetes/cloud-config /etc/user.conf /usr/local/custom_script/install.sh" {
		t.Errorf("write_files order %v", paths)
	}
	if doc.WriteFiles[0].Permissions != "0600" || doc.WriteFiles[0].Encoding != "b64" {
		t.Errorf("secret file %+v", doc.WriteFiles[0])
	}
	if n := len(doc.Runcmd); n != 3 || !strings.Contains(fmtAny(doc.Runcmd[0]), "qemu-guest-agent") || !strings.Contains(fmtAny(doc.Runcmd[n-1]), InstallScriptDir) {
		t.Errorf("runcmd %v", doc.Runcmd)
	}
}

func fmtAny(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

// TestMergeReusesParsedParts: parts parsed once merge any number of times
// into what Build makes (a merge never changes the parsed parts).
func TestMergeReusesParsedParts(t *testing.T) {
	in := Input{User: "ubuntu", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA k"},
		UserData:    []byte("#cloud-config\nbootcmd: [one]\nwrite_files:\n- path: /a\n  content: a\n"),
		CloudConfig: []byte("#cloud-config\nbootcmd: [two]\nwrite_files:\n- path: /b\n  content: b\n")}
	want, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	userData, cloudConfig := parseParts(t, in)
	for i := range 3 {
		got, err := Merge(Input{User: in.User, SSHAuthorizedKeys: in.SSHAuthorizedKeys}, userData, cloudConfig)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("merge %d:\n%s\nwant (Build):\n%s", i+1, got, want)
		}
	}
}
