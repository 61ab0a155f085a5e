package userdata

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Login is how one user may log in to a guest, as its cloud-init set it up.
type Login struct {
	Name     string
	Keys     []string // authorized_keys lines
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

// ReadAccess reads the logins of every #cloud-config document in the user
// data documents. defaultUser is the image's default user (cloud-init's
// "default" entry, and the owner of top-level ssh_authorized_keys and
// password); it exists when no document lists users or one lists "default".
// Documents are read in order and their users added up (cloud-init's own
// merging of several parts is not modelled).
func ReadAccess(docs [][]byte, defaultUser string) (Access, error) {
	a := Access{Logins: map[string]*Login{}}
	listsUsers, wantsDefault := false, false
	login := func(name string) *Login {
		if a.Logins[name] == nil {
			a.Logins[name] = &Login{Name: name, Sudo: name == defaultUser || name == "root"}
		}
		return a.Logins[name]
	}
	for _, doc := range docs {
		err := Walk(doc, func(kind Kind, body []byte) (bool, error) {
			if kind != CloudConfig {
				return false, nil
			}
			var c cloudConfigAccess
			if err := yaml.Unmarshal(body, &c); err != nil {
				return true, fmt.Errorf("parse #cloud-config: %w", err)
			}
			if c.Users != nil {
				listsUsers = true
			}
			for _, u := range c.Users {
				if name, ok := u.(string); ok && name == "default" {
					wantsDefault = true
				}
				addUser(u, login)
			}
			if len(c.SSHAuthorizedKeys) > 0 || c.Password != "" {
				l := login(defaultUser)
				l.Keys = append(l.Keys, c.SSHAuthorizedKeys...)
				if c.Password != "" {
					l.Password = c.Password
				}
			}
			for _, p := range chpasswdList(c.Chpasswd.List) {
				login(p[0]).Password = p[1]
			}
			for _, u := range c.Chpasswd.Users {
				if u.Type == "" || u.Type == "text" {
					login(u.Name).Password = u.Password
				}
			}
			if b, ok := c.SSHPwauth.(bool); ok {
				a.PasswordSSH = b
			} else if s, ok := c.SSHPwauth.(string); ok {
				a.PasswordSSH = s == "true" || s == "yes"
			}
			if c.Hostname != "" {
				a.Hostname = c.Hostname
			} else if c.FQDN != "" {
				a.Hostname, _, _ = strings.Cut(c.FQDN, ".")
			}
			return false, nil
		})
		if err != nil {
			return a, err
		}
	}
	if !listsUsers || wantsDefault {
		login(defaultUser)
	}
	return a, nil
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
