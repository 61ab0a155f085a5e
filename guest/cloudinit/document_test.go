package cloudinit

import (
	"bytes"
	"strings"
	"testing"
)

// standIns are what a tool merges before it knows its SSH keys and files:
// one stand-in per kind it will have.
func standIns(in Input) Input {
	if len(in.SSHAuthorizedKeys) > 0 {
		in.SSHAuthorizedKeys = []string{"ssh-ed25519 AAAAstand-in stand-in"}
	}
	if len(in.WriteFiles) > 0 {
		in.WriteFiles = []WriteFile{PlainFile("/stand-in", nil)}
	}
	return in
}

// parseParts parses in's user data and cloud config.
func parseParts(t *testing.T, in Input) (userData, cloudConfig Part) {
	t.Helper()
	userData, err := ParseUserData(in.UserData)
	if err != nil {
		t.Fatal(err)
	}
	if cloudConfig, err = ParseCloudConfig(in.CloudConfig); err != nil {
		t.Fatal(err)
	}
	return userData, cloudConfig
}

// renderLater merges in with stand-ins for its keys and files, then
// renders the document with the real ones.
func renderLater(t *testing.T, in Input) []byte {
	t.Helper()
	userData, cloudConfig := parseParts(t, in)
	doc, err := MergeDocument(standIns(in), userData, cloudConfig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := doc.Render(in.SSHAuthorizedKeys, in.WriteFiles)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRenderGolden: a document merged with stand-ins and rendered with
// the real keys and files is byte for byte the golden user data.
func TestRenderGolden(t *testing.T) {
	for _, tc := range goldenCases {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, renderLater(t, tc.in))
		})
	}
}

// TestRenderIsMerge: Render puts the keys and files where Merge would,
// whatever the user's parts add to the same keys and lists.
func TestRenderIsMerge(t *testing.T) {
	keys := []string{"ssh-ed25519 AAAAC3Nza one", "ssh-rsa AAAAB3 two"}
	files := []WriteFile{SecretFile("/etc/kubernetes/cloud-config", []byte("kubeconfig")), PlainFile("/etc/x.yaml", []byte("a: 1\n"))}
	userData := []string{
		"",
		"#cloud-config\nssh_authorized_keys: [ssh-ed25519 AAAAuser u]\nwrite_files:\n- path: /u\n  content: u\n",
		"#cloud-config\nusers:\n- name: other\n  ssh_authorized_keys: [ssh-rsa AAAAother o]\ndisable_root: true\n",
		"#cloud-config\nwrite_files: null\nssh_authorized_keys:\n",
		"#!/bin/sh\necho script\n",
	}
	for _, user := range []string{"root", "ubuntu"} {
		for _, password := range []string{"", "pw"} {
			for _, ud := range userData {
				for _, f := range [][]WriteFile{nil, files} {
					in := Input{User: user, SSHAuthorizedKeys: keys, Password: password, InstallQemuGuestAgent: true,
						UserData: []byte(ud), CloudConfig: []byte(rancherFile), WriteFiles: f}
					want, err := Build(in)
					if err != nil {
						t.Fatal(err)
					}
					if got := renderLater(t, in); !bytes.Equal(got, want) {
						t.Errorf("user %s, password %q, %d files, user data %q:\n%s\nwant (Build):\n%s", user, password, len(f), ud, got, want)
					}
				}
			}
		}
	}
}

// TestRenderLeavesTheDocument: Render changes nothing in the document, so
// it renders again with other entries, and Marshal still shows the
// stand-ins.
func TestRenderLeavesTheDocument(t *testing.T) {
	doc, err := MergeDocument(Input{User: "ubuntu", SSHAuthorizedKeys: []string{"stand-in"}, WriteFiles: []WriteFile{PlainFile("/stand-in", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	before, err := doc.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ssh-ed25519 AAAA first", "ssh-ed25519 AAAA second"} {
		got, err := doc.Render([]string{key}, []WriteFile{PlainFile("/etc/"+key[len(key)-5:], nil)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), key) || strings.Contains(string(got), "stand-in") {
			t.Errorf("render with %q:\n%s", key, got)
		}
	}
	if after, _ := doc.Marshal(); !bytes.Equal(after, before) {
		t.Errorf("Render changed the document:\n%s\nwas:\n%s", after, before)
	}
}

// TestRenderShapeMismatch: entries where the document was merged without
// any (or none where it had some) are refused, as they would change its
// shape.
func TestRenderShapeMismatch(t *testing.T) {
	withKey, err := MergeDocument(Input{User: "ubuntu", SSHAuthorizedKeys: []string{"stand-in"}})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := MergeDocument(Input{User: "ubuntu"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		doc   *Document
		keys  []string
		files []WriteFile
		want  string
	}{
		{"no key for the stand-in", withKey, nil, nil, "0 ssh_authorized_keys entries where the document was merged with 1"},
		{"a key where none was", bare, []string{"k"}, nil, "1 ssh_authorized_keys entries where the document was merged with 0"},
		{"files where none were", withKey, []string{"k"}, []WriteFile{PlainFile("/f", nil)}, "1 write_files entries where the document was merged with 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.doc.Render(tc.keys, tc.files); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
