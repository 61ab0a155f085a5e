package cloudinit

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Found by FuzzBuild: a jinja expression YAML reads as a flow mapping was
// re-encoded as a mapping with a mapping key, destroying the template. Such a
// template is now passed on whole; one whose expressions sit in scalars is
// still merged.
func TestJinjaExpressionsSurvive(t *testing.T) {
	tpl := "## template: jinja\n#cloud-config\nhostname: {{ ds.meta_data.name }}\n"
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true, UserData: []byte(tpl)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), tpl) || !strings.Contains(string(got), "multipart/mixed") {
		t.Errorf("template not passed whole:\n%s", got)
	}
	inScalar := "## template: jinja\n#cloud-config\nruncmd:\n- echo {{ v1.local_hostname }}\nhostname: \"{{ ds.meta_data.name }}\"\n"
	got, err = Build(Input{User: "ubuntu", InstallQemuGuestAgent: true, UserData: []byte(inScalar)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(got), JinjaHeader+"\n"+CloudConfigHeader+"\n") || !strings.Contains(string(got), "{{ ds.meta_data.name }}") ||
		!strings.Contains(string(got), "echo {{ v1.local_hostname }}") {
		t.Errorf("template in scalars not merged intact:\n%s", got)
	}
}

// Found by FuzzBuild: aliases merged into the base part lost their anchors
// (`runcmd: &a [...]` then `*a` elsewhere), giving YAML cloud-init cannot
// read. Aliases are resolved before merging; recursive ones and alias bombs
// are errors naming the input.
func TestYAMLAliasesResolved(t *testing.T) {
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true,
		UserData: []byte("#cloud-config\nx-cmds: &cmds\n- echo a\nruncmd: *cmds\nbootcmd: *cmds\n")})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(got, &m); err != nil {
		t.Fatalf("result does not parse: %v\n%s", err, got)
	}
	if rc, _ := m["runcmd"].([]any); len(rc) != 2 || rc[1] != "echo a" {
		t.Errorf("runcmd %v", m["runcmd"])
	}
	if strings.Contains(string(got), "*cmds") || strings.Contains(string(got), "&cmds") {
		t.Errorf("alias left in the result:\n%s", got)
	}
	bomb := "#cloud-config\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e]\n"
	for _, bad := range []string{"runcmd: &a [*a]\n", bomb} {
		if _, err := Build(Input{UserData: []byte(bad)}); err == nil || !strings.HasPrefix(err.Error(), "user data: ") {
			t.Errorf("%q: want an error naming the user data, got %v", bad, err)
		}
	}
}

// Found by FuzzBuild: `packages:` (null) in the user data replaced the
// tool's package list, dropping qemu-guest-agent; a string where the tool
// has a list replaced it too. A null never replaces a value now, and a
// value of another kind is an error naming the key.
func TestMergeKeepsTheToolsSettings(t *testing.T) {
	got, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true, UserData: []byte("#cloud-config\npackages:\nruncmd:\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "- "+QemuGuestAgentPackage) || !strings.Contains(string(got), "qemu-guest-agent.service") {
		t.Errorf("null values dropped the agent:\n%s", got)
	}
	for _, tc := range []struct{ data, want string }{
		{"packages: htop\n", "user data: packages: is a single value, but an earlier part"},
		{"runcmd: {a: b}\n", "user data: runcmd: is a mapping"},
		{"{{}}\n", "user data: not usable cloud-config YAML: line 1: a key must be a plain value"},
	} {
		if _, err := Build(Input{User: "ubuntu", InstallQemuGuestAgent: true, UserData: []byte(tc.data)}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: want %q, got %v", tc.data, tc.want, err)
		}
	}
}
