package config

import (
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// Stand-ins for what Create only learns: the machine's SSH key (made or
// read then) and the cloud-provider files (the credential is issued then).
// The user data is merged once, with these in its places; Create renders
// it with the real entries (cloudinit.Document.Render).
const standInKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIValidationOnly validation"

var standInFiles = []cloudinit.WriteFile{cloudinit.PrivateFile("/validation-only", nil)}

// MergeUserData merges the driver's cloud-init parts with the user's
// parsed ones, once per command. A variable, so tests count the merges.
var MergeUserData = cloudinit.MergeDocument

// UserDataDocument merges the parsed user data and cloud-config file of in
// with the driver's parts for login (login, password, qemu-guest-agent,
// and stand-ins for the SSH key and, with --harvester-cloud-provider, the
// cloud-provider files).
func UserDataDocument(c Config, in Inputs, login string) (*cloudinit.Document, error) {
	part := cloudinit.Input{User: login, SSHAuthorizedKeys: []string{standInKey}, Password: c.SSHPassword,
		InstallQemuGuestAgent: !c.SkipQemuGuestAgent}
	if c.CloudProvider != "" {
		part.WriteFiles = standInFiles
	}
	return MergeUserData(part, in.UserData, in.CloudConfig)
}

// validateUserData merges the user data (UserDataDocument), as Create
// renders it, and checks that it merges and that the cloud-init Secret
// stays within MaxSecretBytes with secretReserveBytes to spare for the
// real SSH key and cloud-provider files (merging overhead counted).
func validateUserData(c Config, in Inputs, sshUser string) (*cloudinit.Document, error) {
	login := sshUser
	if login == "" {
		login = "root" // --harvester-ssh-user reports the empty user
	}
	doc, err := UserDataDocument(c, in, login)
	var userData []byte
	if err == nil {
		userData, err = doc.Marshal()
	}
	if err != nil {
		flag := FlagUserData
		if c.UserData == "" {
			flag = FlagCloudConfig
		}
		return nil, FlagError(flag, err)
	}
	return doc, CheckSecretSize(len(userData)+SecretReserveBytes, len(c.NetworkData), SecretParts(c))
}
