package driver

import (
	"github.com/harvester-kit/harvester-machine/driver/capacity"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// Stand-ins for what Create only learns: the machine's SSH key (made or
// read then) and the cloud-provider files (the credential is issued then).
// The user data is merged once, with these in its places; Create renders
// it with the real entries (cloudinit.Document.Render).
const standInKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIValidationOnly validation"

var standInFiles = []cloudinit.WriteFile{cloudinit.PrivateFile("/validation-only", nil)}

// mergeUserData merges the driver's cloud-init parts with the user's
// parsed ones, once per command. A variable, so tests count the merges.
var mergeUserData = cloudinit.MergeDocument

// userDataDocument merges the parsed user data and cloud-config file of in
// with the driver's parts for login (login, password, qemu-guest-agent,
// and stand-ins for the SSH key and, with --harvester-cloud-provider, the
// cloud-provider files).
func userDataDocument(c config.Config, in vmspec.Inputs, login string) (*cloudinit.Document, error) {
	part := cloudinit.Input{User: login, SSHAuthorizedKeys: []string{standInKey}, Password: c.SSHPassword,
		InstallQemuGuestAgent: !c.SkipQemuGuestAgent}
	if c.CloudProvider != "" {
		part.WriteFiles = standInFiles
	}
	return mergeUserData(part, in.UserData, in.CloudConfig)
}

// validateUserData merges the user data (userDataDocument), as Create
// renders it, and checks that it merges and that the cloud-init Secret
// stays within MaxSecretBytes with secretReserveBytes to spare for the
// real SSH key and cloud-provider files (merging overhead counted).
func validateUserData(c config.Config, in vmspec.Inputs, sshUser string) (*cloudinit.Document, error) {
	login := sshUser
	if login == "" {
		login = "root" // --harvester-ssh-user reports the empty user
	}
	doc, err := userDataDocument(c, in, login)
	var userData []byte
	if err == nil {
		userData, err = doc.Marshal()
	}
	if err != nil {
		flag := config.FlagUserData
		if c.UserData == "" {
			flag = config.FlagCloudConfig
		}
		return nil, config.FlagError(flag, err)
	}
	return doc, capacity.CheckSecretSize(len(userData)+capacity.SecretReserveBytes, len(c.NetworkData), capacity.SecretParts(c))
}

// renderUserData is the machine's user data with its SSH keys and
// cloud-provider files: the document validation merged, or, for a machine
// loaded from its stored config, merged now.
func (d *Driver) renderUserData(in vmspec.Inputs, keys []string, files []cloudinit.WriteFile) ([]byte, error) {
	doc := in.Cloudinit
	if doc == nil {
		var err error
		if doc, err = userDataDocument(d.Config, in, d.GetSSHUsername()); err != nil {
			return nil, err
		}
	}
	return doc.Render(keys, files)
}
