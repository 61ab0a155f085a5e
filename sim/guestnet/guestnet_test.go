package guestnet

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

func TestCommands(t *testing.T) {
	g := &Guest{Hostname: "m1", OS: OSOf("", "ubuntu-22.04"), Access: userdata.Access{Logins: map[string]*userdata.Login{
		"ubuntu": {Name: "ubuntu", Sudo: true}, "dev": {Name: "dev"},
	}}}
	docker := *g
	docker.Docker = true
	for _, tc := range []struct {
		guest    *Guest
		user     string
		cmd      string
		code     int
		out, err string // substrings
	}{
		{g, "ubuntu", "exit 0", 0, "", ""},
		{g, "ubuntu", "exit 3", 3, "", ""},
		{g, "ubuntu", "cat /etc/os-release", 0, "ID=ubuntu\n", ""},
		{g, "ubuntu", "hostname", 0, "m1\n", ""},
		{g, "ubuntu", "uname", 0, "Linux\n", ""},
		{g, "ubuntu", "sudo -n true", 0, "", ""},
		{g, "dev", "sudo -n true", 1, "", "a password is required"},
		{g, "ubuntu", "ss -tln", 0, "0.0.0.0:22 ", ""},
		{g, "ubuntu", dockerCheck, 0, "0.0.0.0:22 ", ""},
		{&docker, "ubuntu", dockerCheck, 0, "0.0.0.0:2376 ", ""},
		{&docker, "ubuntu", "ss  -tln", 0, "0.0.0.0:2376 ", ""},
		{g, "ubuntu", "docker version", 127, "", "sh: docker version: the simulated guest has no such command"},
		{g, "dev", "whoami", 0, "dev\n", ""},
		{g, "ubuntu", "id -un", 0, "ubuntu\n", ""},
		// Lists and quotes as sh reads them.
		{g, "ubuntu", `echo 'a "b";' c\ \'d "e\"\$f\x";echo;hostname;exit 142;hostname`, 142, "a \"b\"; c 'd e\"$f\\x\n\nm1\n", ""},
		{g, "ubuntu", "echo a; rm -rf /; echo b;", 0, "a\nb\n", "sh: rm -rf /: the simulated guest has no such command"},
		{g, "ubuntu", "sleep x", 1, "", "sleep: invalid time interval 'x'"},
		{g, "ubuntu", "echo 'a;b", 2, "", "sh: 1: Syntax error: Unterminated quoted string"},
	} {
		r := session{guest: tc.guest, user: tc.user}.run(tc.cmd)
		if r.code != tc.code || !strings.Contains(r.stdout, tc.out) || !strings.Contains(r.stderr, tc.err) {
			t.Errorf("%s as %s: %+v, want exit %d, stdout with %q, stderr with %q", tc.cmd, tc.user, r, tc.code, tc.out, tc.err)
		}
	}
	if r := (session{guest: g}).run(dockerCheck); strings.Contains(r.stdout, ":2376") {
		t.Errorf("a guest without Docker lists :2376:\n%s", r.stdout)
	}
}

func TestOSOf(t *testing.T) {
	for _, tc := range []struct{ image, id, version, user string }{
		{"ubuntu-22.04 ubuntu-22.04", "ubuntu", "22.04", "ubuntu"},
		{"image-x openSUSE-Leap-15.6.x86_64-NoCloud.qcow2", "opensuse-leap", "15.6", "opensuse"},
		{"img Rocky-9-GenericCloud", "rocky", "9", "rocky"},
		{"custom-appliance", "linux", "", "cloud-user"},
	} {
		o := OSOf("", tc.image)
		if o.ID != tc.id || o.Version != tc.version || o.DefaultUser != tc.user {
			t.Errorf("OSOf(%q) = %+v, want %s %s user %s", tc.image, o, tc.id, tc.version, tc.user)
		}
		if !strings.Contains(o.Release(), "ID="+tc.id+"\n") {
			t.Errorf("Release of %s:\n%s", tc.image, o.Release())
		}
	}
}

func TestExecCommand(t *testing.T) {
	if got, err := execCommand([]byte("\x00\x00\x00\x06exit 0")); err != nil || got != "exit 0" {
		t.Errorf("execCommand = %q, %v", got, err)
	}
	for _, bad := range [][]byte{nil, []byte("\x00\x00"), []byte("\x00\x00\x00\x09exit 0")} {
		if _, err := execCommand(bad); err == nil {
			t.Errorf("execCommand(%q) accepted", bad)
		}
	}
}
