// Stand-in for the guest's cloud-init, cloud-init 26.2: the users,
// keys, passwords and hostname a guest's #cloud-config sets up. It follows
// https://github.com/canonical/cloud-init/blob/26.2/cloudinit/distros/ug_util.py.

package userdata

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Login is how one user may log in to a guest, as its cloud-init set it up.
type Login struct {
	Name     string
	Keys     []string // authorized_keys lines, options included
	Password string   // plain-text password ("" : none); hashes are not read
	Sudo     bool     // passwordless sudo
}

// Access is the guest's logins and hostname from its cloud-init.
type Access struct {
	Logins      map[string]*Login // by user name
	PasswordSSH bool              // ssh_pwauth: sshd accepts passwords
	Hostname    string            // hostname (or fqdn); "" when not set
}

// cloudConfigAccess is the part of #cloud-config that decides logins.
type cloudConfigAccess struct {
	Users             []any    `yaml:"users"`
	SSHAuthorizedKeys []string `yaml:"ssh_authorized_keys"`
	Password          string   `yaml:"password"`
	SSHPwauth         any      `yaml:"ssh_pwauth"`
	DisableRoot       any      `yaml:"disable_root"`
	DisableRootOpts   *string  `yaml:"disable_root_opts"`
	Chpasswd          struct {
		List  any `yaml:"list"`
		Users []struct {
			Name     string `yaml:"name"`
			Password string `yaml:"password"`
			Type     string `yaml:"type"`
		} `yaml:"users"`
	} `yaml:"chpasswd"`
	Hostname string `yaml:"hostname"`
	FQDN     string `yaml:"fqdn"`
}

// accessReader adds up the logins of #cloud-config documents.
type accessReader struct {
	a                        Access
	defaultUser              string
	listsUsers, wantsDefault bool
	keys                     []string // top-level ssh_authorized_keys
	password                 string   // top-level password
	chpasswd                 bool     // chpasswd names passwords: password is ignored
	disableRoot              bool
	rootOpts                 string
}

// ReadAccess reads the logins of every #cloud-config document in the user
// data documents. defaultUser is the image's default user (cloud-init's
// "default" entry); it exists when no document lists users or one lists
// "default", and then owns the top-level ssh_authorized_keys and password.
// Those keys are root's too (rootKeys). Documents are read in order and
// their users added up (cloud-init's own merging of several parts is not
// modelled).
func ReadAccess(docs [][]byte, defaultUser string) (Access, error) {
	r := &accessReader{a: Access{Logins: map[string]*Login{}}, defaultUser: defaultUser, disableRoot: true, rootOpts: disableUserOpts}
	for _, doc := range docs {
		if err := Walk(doc, r.visit); err != nil {
			return r.a, err
		}
	}
	r.finish()
	return r.a, nil
}

func (r *accessReader) login(name string) *Login {
	if r.a.Logins[name] == nil {
		r.a.Logins[name] = &Login{Name: name, Sudo: name == r.defaultUser || name == "root"}
	}
	return r.a.Logins[name]
}

func (r *accessReader) visit(kind Kind, body []byte) (bool, error) {
	if kind != CloudConfig {
		return false, nil
	}
	var c cloudConfigAccess
	if err := yaml.Unmarshal(body, &c); err != nil {
		return true, fmt.Errorf("parse #cloud-config: %w", err)
	}
	if c.Users != nil {
		r.listsUsers = true
	}
	for _, u := range c.Users {
		if name, ok := u.(string); ok && name == "default" {
			r.wantsDefault = true
		}
		addUser(u, r.login)
	}
	r.keys = append(r.keys, c.SSHAuthorizedKeys...)
	if c.Password != "" {
		r.password = c.Password
	}
	if c.DisableRoot != nil {
		r.disableRoot = cfgBool(c.DisableRoot)
	}
	if c.DisableRootOpts != nil {
		r.rootOpts = *c.DisableRootOpts
	}
	r.readChpasswd(&c)
	if b, ok := c.SSHPwauth.(bool); ok {
		r.a.PasswordSSH = b
	} else if s, ok := c.SSHPwauth.(string); ok {
		r.a.PasswordSSH = s == "true" || s == "yes"
	}
	if c.Hostname != "" {
		r.a.Hostname = c.Hostname
	} else if c.FQDN != "" {
		r.a.Hostname, _, _ = strings.Cut(c.FQDN, ".")
	}
	return false, nil
}

// readChpasswd reads chpasswd's passwords (cc_set_passwords: a users
// entry without a type is a hash).
func (r *accessReader) readChpasswd(c *cloudConfigAccess) {
	switch l := c.Chpasswd.List.(type) {
	case string:
		r.chpasswd = r.chpasswd || l != ""
	case []any:
		r.chpasswd = r.chpasswd || len(l) > 0
	}
	r.chpasswd = r.chpasswd || len(c.Chpasswd.Users) > 0
	for _, p := range chpasswdList(c.Chpasswd.List) {
		r.login(p[0]).Password = p[1]
	}
	for _, u := range c.Chpasswd.Users {
		if u.Type == "text" {
			r.login(u.Name).Password = u.Password
		}
	}
}

// finish gives the top-level keys and password to the default user, if
// there is one (cc_ssh, cc_set_passwords: the password only when chpasswd
// names none), and the keys to root.
func (r *accessReader) finish() {
	owner := ""
	if !r.listsUsers || r.wantsDefault {
		owner = r.defaultUser
		l := r.login(owner)
		l.Keys = append(l.Keys, r.keys...)
		if r.password != "" && !r.chpasswd {
			l.Password = r.password
		}
	}
	if len(r.keys) > 0 {
		root := r.login("root")
		root.Keys = append(root.Keys, rootKeys(r.keys, owner, r.disableRoot, r.rootOpts)...)
	}
}

// addUser reads one users entry: "name" or {name, ssh_authorized_keys,
// plain_text_passwd, lock_passwd, sudo}.
func addUser(u any, login func(string) *Login) {
	switch v := u.(type) {
	case string:
		if v != "default" {
			for _, name := range strings.Split(v, ",") {
				login(strings.TrimSpace(name))
			}
		}
	case map[string]any:
		name, _ := v["name"].(string)
		if name == "" {
			return
		}
		l := login(name)
		if keys, ok := v["ssh_authorized_keys"].([]any); ok {
			for _, k := range keys {
				if s, ok := k.(string); ok {
					l.Keys = append(l.Keys, s)
				}
			}
		}
		if p, ok := v["plain_text_passwd"].(string); ok {
			l.Password = p
		}
		switch s := v["sudo"].(type) {
		case string:
			l.Sudo = strings.Contains(s, "NOPASSWD")
		case []any:
			for _, r := range s {
				if rs, ok := r.(string); ok && strings.Contains(rs, "NOPASSWD") {
					l.Sudo = true
				}
			}
		case bool:
			l.Sudo = s
		}
	}
}

// chpasswdList reads chpasswd's older list form: "user:password" lines in
// one string or a list; RANDOM and hashed passwords are left out.
func chpasswdList(list any) [][2]string {
	var lines []string
	switch v := list.(type) {
	case string:
		lines = strings.Split(v, "\n")
	case []any:
		for _, l := range v {
			if s, ok := l.(string); ok {
				lines = append(lines, s)
			}
		}
	}
	var out [][2]string
	for _, l := range lines {
		name, pass, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok || name == "" || pass == "" || pass == "RANDOM" || pass == "R" || strings.HasPrefix(pass, "$") {
			continue
		}
		out = append(out, [2]string{name, pass})
	}
	return out
}
