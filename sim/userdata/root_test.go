package userdata

import (
	"crypto/ed25519"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// Root's and the default user's keys, as cloud-init's cc_ssh.py
// apply_credentials (26.2) writes them: top-level ssh_authorized_keys go to
// the default user, if any, as given, and to root with disable_root_opts
// in place of their own options unless disable_root is false.
func TestRootKeys(t *testing.T) {
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public())
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " me@laptop"
	withOpts := `from="10.0.0.0/8",no-pty ` + key
	// ssh_util.DISABLE_USER_OPTS with $USER and $DISABLE_USER replaced.
	refuse := func(user string) string {
		return `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"` + user +
			`\" rather than the user \"root\".';echo;sleep 10;exit 142" ` + key
	}
	keys := "ssh_authorized_keys:\n- '" + key + "'\n"
	type logins map[string][]string // user: authorized_keys lines
	for _, tc := range []struct {
		name string
		doc  string
		want logins
	}{
		{"disable_root absent: cloud-init's default, true", keys, logins{"ubuntu": {key}, "root": {refuse("ubuntu")}}},
		{"disable_root true", keys + "disable_root: true\n", logins{"ubuntu": {key}, "root": {refuse("ubuntu")}}},
		{"disable_root false: the plain keys (the driver's root form)", keys + "disable_root: false\n", logins{"ubuntu": {key}, "root": {key}}},
		{"disable_root as a string, on", keys + "disable_root: 'on'\n", logins{"ubuntu": {key}, "root": {refuse("ubuntu")}}},
		{"disable_root as a string, off", keys + "disable_root: 'off'\n", logins{"ubuntu": {key}, "root": {key}}},
		{"custom disable_root_opts", keys + "disable_root_opts: no-pty,command=\"echo $USER, not $DISABLE_USER\"\n",
			logins{"ubuntu": {key}, "root": {`no-pty,command="echo ubuntu, not root" ` + key}}},
		{"empty disable_root_opts: the key's own options stay", "ssh_authorized_keys:\n- '" + withOpts + "'\ndisable_root_opts: ''\n",
			logins{"ubuntu": {withOpts}, "root": {withOpts}}},
		{"disable_root replaces the key's own options", "ssh_authorized_keys:\n- '" + withOpts + "'\n",
			logins{"ubuntu": {withOpts}, "root": {refuse("ubuntu")}}},
		{"users with default", "users: [default]\n" + keys, logins{"ubuntu": {key}, "root": {refuse("ubuntu")}}},
		{"no default user: root alone gets the keys, the user NONE", "users:\n- name: dev\n" + keys,
			logins{"dev": nil, "root": {refuse("NONE")}}},
		{"a user's own keys are not root's", "users:\n- default\n- name: ops\n  ssh_authorized_keys: ['" + key + "']\n",
			logins{"ubuntu": nil, "ops": {key}}},
		{"no keys: no root login", "disable_root: false\n", logins{"ubuntu": nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ReadAccess([][]byte{[]byte("#cloud-config\n" + tc.doc)}, "ubuntu")
			if err != nil {
				t.Fatal(err)
			}
			got := logins{}
			for name, l := range a.Logins {
				got[name] = l.Keys
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("logins\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
