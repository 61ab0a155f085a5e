package cloudinit

import "testing"

func TestPartNames(t *testing.T) {
	cases := []struct {
		name     string
		userData string
		want     GuestNames
	}{
		{"none", "", GuestNames{}},
		{"script", "#!/bin/sh\nhostname other\n", GuestNames{}},
		{"hostname", "#cloud-config\nhostname: web1\n", GuestNames{Hostname: "web1"}},
		{"fqdn", "#cloud-config\nfqdn: web1.example.com\n", GuestNames{FQDN: "web1.example.com"}},
		{"null", "#cloud-config\nhostname:\n", GuestNames{}},
		{"not a scalar", "#cloud-config\nhostname: [a]\n", GuestNames{}},
		{"mime part", "Content-Type: multipart/mixed; boundary=XX\nMIME-Version: 1.0\n\n--XX\nContent-Type: text/cloud-config\n\nhostname: m\n--XX\nContent-Type: text/cloud-config\n\nhostname: n\n--XX--\n", GuestNames{Hostname: "n"}},
		{"jinja", "## template: jinja\n#cloud-config\nhostname: \"{{ v1.local_hostname }}\"\n", GuestNames{Hostname: "{{ v1.local_hostname }}"}},
	}
	for _, tc := range cases {
		p, err := ParseUserData([]byte(tc.userData))
		if got := p.Names(); err != nil || got != tc.want {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}
