package userdata

import (
	"reflect"
	"testing"
)

func TestReadAccess(t *testing.T) {
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG0 me"
	for _, tc := range []struct {
		name   string
		docs   []string
		logins map[string]Login
		pwauth bool
		host   string
	}{
		{"no cloud-init: the default user", nil, map[string]Login{"ubuntu": {Name: "ubuntu", Sudo: true}}, false, ""},
		{"top-level keys and password go to the default user, the keys to root",
			[]string{"#cloud-config\nssh_authorized_keys: [\"" + key + "\"]\ndisable_root: false\npassword: pw\nssh_pwauth: true\nhostname: h1\n"},
			map[string]Login{"ubuntu": {Name: "ubuntu", Keys: []string{key}, Password: "pw", Sudo: true}, "root": {Name: "root", Keys: []string{key}, Sudo: true}}, true, "h1"},
		// cc_set_passwords.py: password only without chpasswd passwords, and
		// only for a default user; a chpasswd users entry's type is hash
		// unless given.
		{"password ignored when chpasswd names passwords",
			[]string{"#cloud-config\npassword: pw\nchpasswd:\n  users:\n  - {name: dev, password: x, type: text}\n"},
			map[string]Login{"ubuntu": {Name: "ubuntu", Sudo: true}, "dev": {Name: "dev", Password: "x"}}, false, ""},
		{"chpasswd users without a type are hashes",
			[]string{"#cloud-config\nchpasswd:\n  users:\n  - {name: ubuntu, password: plain}\n"},
			map[string]Login{"ubuntu": {Name: "ubuntu", Sudo: true}}, false, ""},
		{"password without a default user: nobody's",
			[]string{"#cloud-config\nusers:\n- name: dev\npassword: pw\n"},
			map[string]Login{"dev": {Name: "dev"}}, false, ""},
		{"users without default: only those",
			[]string{"#cloud-config\nusers:\n- name: dev\n  ssh_authorized_keys: [\"" + key + "\"]\n  sudo: ALL=(ALL) NOPASSWD:ALL\n"},
			map[string]Login{"dev": {Name: "dev", Keys: []string{key}, Sudo: true}}, false, ""},
		{"the driver's form: default plus a user, chpasswd users",
			[]string{"#cloud-config\nusers:\n- default\n- name: ops\n  ssh_authorized_keys: [\"" + key + "\"]\nchpasswd:\n  expire: false\n  users:\n  - {name: ops, password: s3cret, type: text}\n  - {name: ubuntu, password: $6$hash, type: hash}\nfqdn: node1.example.com\n"},
			map[string]Login{"ubuntu": {Name: "ubuntu", Sudo: true}, "ops": {Name: "ops", Keys: []string{key}, Password: "s3cret"}}, false, "node1"},
		{"chpasswd list form, RANDOM and hashes left out",
			[]string{"#cloud-config\nchpasswd:\n  list: |\n    ubuntu:pw1\n    root:RANDOM\n    dev:$6$x\n"},
			map[string]Login{"ubuntu": {Name: "ubuntu", Password: "pw1", Sudo: true}}, false, ""},
		{"scripts are not read", []string{"#!/bin/sh\nuseradd x\n"}, map[string]Login{"ubuntu": {Name: "ubuntu", Sudo: true}}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var docs [][]byte
			for _, d := range tc.docs {
				docs = append(docs, []byte(d))
			}
			a, err := ReadAccess(docs, "ubuntu")
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]Login{}
			for k, l := range a.Logins {
				got[k] = *l
			}
			if !reflect.DeepEqual(got, tc.logins) || a.PasswordSSH != tc.pwauth || a.Hostname != tc.host {
				t.Errorf("got %+v pwauth %v host %q\nwant %+v pwauth %v host %q", got, a.PasswordSSH, a.Hostname, tc.logins, tc.pwauth, tc.host)
			}
		})
	}
	if _, err := ReadAccess([][]byte{[]byte("#cloud-config\nusers: {")}, "ubuntu"); err == nil {
		t.Error("broken YAML accepted")
	}
}
