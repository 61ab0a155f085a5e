package cloudinit

import (
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/internal/hostile"
)

// Values that break YAML never change the meaning of the generated
// cloud-config: the password, user name, SSH key and file content come
// back exactly, and no top-level key appears that Build did not write.
func TestHostileValuesRoundTrip(t *testing.T) {
	for _, v := range hostile.Values() {
		if v == "" || strings.TrimSpace(v) == "root" {
			continue // "" is no value; root is configured differently
		}
		t.Run("", func(t *testing.T) {
			out, err := Build(Input{User: v, SSHAuthorizedKeys: []string{v}, Password: v, InstallQemuGuestAgent: true,
				WriteFiles: []WriteFile{PlainFile("/etc/hostile", []byte(v)), SecretFile("/etc/hostile-secret", []byte(v))}})
			if strings.TrimSpace(v) == "" {
				if err == nil {
					t.Fatalf("blank user %q accepted", v)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build(%q): %v", v, err)
			}
			var doc map[string]any
			if err := yaml.Unmarshal(out, &doc); err != nil {
				t.Fatalf("%q: result does not parse: %v\n%s", v, err, out)
			}
			var keys []string
			for k := range doc {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			if got := strings.Join(keys, ","); got != "chpasswd,packages,runcmd,ssh_pwauth,users,write_files" {
				t.Errorf("%q: top-level keys %s", v, got)
			}
			var typed struct {
				Users      []any       `yaml:"users"`
				Chpasswd   chpasswd    `yaml:"chpasswd"`
				WriteFiles []WriteFile `yaml:"write_files"`
			}
			if err := yaml.Unmarshal(out, &typed); err != nil {
				t.Fatal(err)
			}
			user, _ := typed.Users[1].(map[string]any)
			keys2, _ := user["ssh_authorized_keys"].([]any)
			if user["name"] != strings.TrimSpace(v) || len(keys2) != 1 || keys2[0] != v {
				t.Errorf("%q: user %v", v, user)
			}
			if len(typed.Chpasswd.Users) != 1 || typed.Chpasswd.Users[0].Password != v {
				t.Errorf("%q: password %+v", v, typed.Chpasswd)
			}
			if len(typed.WriteFiles) != 2 || typed.WriteFiles[0].Content != v || typed.WriteFiles[1] != SecretFile("/etc/hostile-secret", []byte(v)) {
				t.Errorf("%q: write_files %+v", v, typed.WriteFiles)
			}
		})
	}
}
