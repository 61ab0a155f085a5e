// Stand-in for the guest's cloud-init, cloud-init 26.2: root's SSH keys
// and the forced command disable_root gives them. It follows
// https://github.com/canonical/cloud-init/blob/26.2/cloudinit/config/cc_ssh.py.

package userdata

import (
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// Root's SSH keys as cloud-init's cc_ssh module writes them
// (cloudinit/config/cc_ssh.py apply_credentials, and ssh_util.py
// setup_user_keys; canonical/cloud-init 26.2): the top-level
// ssh_authorized_keys go to root too. With disable_root (true unless the
// cloud-config says otherwise: the images' /etc/cloud/cloud.cfg sets it)
// each key line gets disable_root_opts in place of its own options, with
// $USER replaced by the default user ("NONE" without one) and
// $DISABLE_USER by root; without it, or with empty options, the lines stay
// as given.

// disableUserOpts is ssh_util.DISABLE_USER_OPTS: a root login prints
// where to log in instead and fails with exit status 142.
const disableUserOpts = `no-port-forwarding,no-agent-forwarding,no-X11-forwarding,` +
	`command="echo 'Please login as the user \"$USER\" rather than the user \"$DISABLE_USER\".';echo;sleep 10;exit 142"`

// rootKeys are root's authorized_keys lines for the top-level keys.
// defaultUser is "" when the cloud-config makes no default user.
func rootKeys(keys []string, defaultUser string, disableRoot bool, opts string) []string {
	if !disableRoot {
		return keys
	}
	if defaultUser == "" {
		defaultUser = "NONE"
	}
	prefix := strings.ReplaceAll(opts, "$USER", defaultUser)
	prefix = strings.ReplaceAll(prefix, "$DISABLE_USER", "root")
	if prefix == "" {
		return keys
	}
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, prefix+" "+bareKey(k))
	}
	return out
}

// bareKey is an authorized_keys line without its options (a line that is
// no key is kept: it never logs in).
func bareKey(line string) string {
	key, comment, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return line
	}
	bare := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key)))
	if comment != "" {
		bare += " " + comment
	}
	return bare
}

// cfgBool is cloud-init's util.get_cfg_option_bool of a present key: YAML
// booleans, and the strings true, 1, on, yes (any case).
func cfgBool(v any) bool {
	switch b := v.(type) {
	case bool:
		return b
	case nil:
		return false
	}
	switch strings.ToLower(strings.TrimSpace(fmt.Sprint(v))) {
	case "true", "1", "on", "yes":
		return true
	}
	return false
}
