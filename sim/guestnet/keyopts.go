package guestnet

import (
	"bytes"
	"errors"
	"strings"

	"golang.org/x/crypto/ssh"
)

// forceCommand is where the SSH server keeps a login's forced command: the
// name OpenSSH gives it in certificates.
const forceCommand = "force-command"

// authorizedKey finds key among the authorized_keys lines and returns
// the permissions of its line: its command="..." option, the command
// sshd runs in place of any the client asks for (OpenSSH auth-options.c,
// sshauthopt_parse; other options are not read).
func authorizedKey(lines []string, key ssh.PublicKey) (*ssh.Permissions, error) {
	for _, line := range lines {
		k, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(line))
		if err != nil || !bytes.Equal(k.Marshal(), key.Marshal()) {
			continue
		}
		cmd, ok, err := commandOption(opts)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, nil
		}
		return &ssh.Permissions{CriticalOptions: map[string]string{forceCommand: cmd}}, nil
	}
	return nil, errors.New("key not authorized")
}

// commandOption is the value of the command="..." option, unquoted as
// sshd's opt_dequote does (only \" loses its backslash). sshd refuses a
// line with two of them.
func commandOption(opts []string) (cmd string, found bool, err error) {
	for _, o := range opts {
		if len(o) < len("command=") || !strings.EqualFold(o[:len("command=")], "command=") {
			continue
		}
		if found {
			return "", false, errors.New(`multiple "command" clauses`)
		}
		v := o[len("command="):]
		if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
			return "", false, errors.New("command: bad quotes")
		}
		cmd, found = strings.ReplaceAll(v[1:len(v)-1], `\"`, `"`), true
	}
	return cmd, found, nil
}
