package cloudinit

import (
	"bytes"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzBuild feeds arbitrary user data and cloud-config files (YAML, jinja,
// scripts, MIME) through Build. It must not panic; an error names the
// input ("user data" or "cloud-config file"); a result is a cloud-config
// document or a MIME document whose first part is one, and the user's
// scripts come through byte for byte.
func FuzzBuild(f *testing.F) {
	for _, s := range []string{"#cloud-config\npackages: [htop]\n", "#!/bin/sh\necho hi\n", "## template: jinja\n#cloud-config\na: {{ x }}\n",
		"## template: jinja\n{% if x %}\n", "#include\nhttp://x\n", "runcmd: &a [*a, *a]\n", "a: b: c\n", "- 1\n", "\ufeff#cloud-config\n",
		userMIME, "Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\n#!/bin/sh\n--B--\n",
		"MIME-Version: 1.0\n\nruncmd: [x]\n", "packages: [[a, 1], a, {x: y}]\n", "write_files: 5\nruncmd: x\n"} {
		f.Add([]byte(s), []byte(rancherFile))
		f.Add([]byte("#cloud-config\nruncmd: [u]\n"), []byte(s))
	}
	f.Fuzz(func(t *testing.T, userData, cloudConfig []byte) {
		out, err := Build(Input{User: "ubuntu", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA k"}, InstallQemuGuestAgent: true,
			UserData: userData, CloudConfig: cloudConfig})
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "user data") && !strings.HasPrefix(msg, "cloud-config file") {
				t.Fatalf("error does not name its input: %v", err)
			}
			return
		}
		first := out
		if bytes.HasPrefix(out, []byte("Content-Type: multipart/mixed")) {
			docs, err := splitMIME(out)
			if err != nil || len(docs) == 0 || docs[0].contentType != typeCloudConfig {
				t.Fatalf("result is not a MIME document starting with cloud-config: %v\n%q", err, out)
			}
			first = docs[0].data
		}
		var m map[string]any
		if err := yaml.Unmarshal(first, &m); err != nil {
			t.Fatalf("merged cloud-config does not parse: %v\n%s", err, first)
		}
		if m["packages"] == nil {
			t.Fatalf("the agent package was lost:\n%s", first)
		}
	})
}
