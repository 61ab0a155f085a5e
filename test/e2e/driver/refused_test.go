package driver_test

import (
	"strings"
	"testing"
)

// TestInputsThatBreakAClusterLaterRefused: user data naming the guest
// other than the machine (with the cloud provider) and a disk smaller than
// its image are refused, each with its message, before anything exists
// (newRM's cleanup checks nothing is left).
func TestInputsThatBreakAClusterLaterRefused(t *testing.T) {
	t.Parallel()
	r := newRM(t, "e2e-refuse")
	base := []string{"--harvester-image-name=default/ubuntu-22.04", "--harvester-network-name=default/vlan1"}
	cases := []struct {
		name  string
		flags []string
		want  string
	}{
		{"hostname", []string{"--harvester-cloud-provider=k3s", "--harvester-user-data=#cloud-config\nhostname: web1\n"},
			`--harvester-user-data: sets hostname "web1", but with --harvester-cloud-provider the guest's node name must be the machine name "e2e-refuse-pool1-r0000"`},
		{"fqdn", []string{"--harvester-cloud-provider=rke2", "--harvester-user-data=" + b64("#cloud-config\nfqdn: web1.example.com\n")},
			`--harvester-user-data: sets fqdn "web1.example.com"`},
		{"disk smaller than image", []string{"--harvester-disk-size=2"},
			"--harvester-disk-size: 2 GiB is smaller than image default/ubuntu-22.04's virtual size 2.20 GiB; give at least 3 GiB"},
		{"disk-info disk smaller than image", []string{`--harvester-disk-info={"disks":[{"imageName":"default/ubuntu-22.04","size":1,"bootOrder":1}]}`},
			"--harvester-disk-info: disks[0]: size: 1 GiB is smaller than image default/ubuntu-22.04's virtual size"},
	}
	for _, tc := range cases {
		out, err := r.create("e2e-refuse-pool1-r0000", append(append([]string{}, base...), tc.flags...)...)
		if err == nil {
			r.mustRun("rm", "-y", "e2e-refuse-pool1-r0000")
			t.Errorf("%s: create succeeded:\n%s", tc.name, out)
			continue
		}
		if !strings.Contains(out, tc.want) {
			t.Errorf("%s: output lacks %q:\n%s", tc.name, tc.want, out)
		}
	}
}
