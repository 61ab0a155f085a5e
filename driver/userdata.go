package driver

import (
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// renderUserData is the machine's user data with its SSH keys and
// cloud-provider files: the document validation merged, or, for a machine
// loaded from its stored config, merged now.
func (d *Driver) renderUserData(in config.Inputs, keys []string, files []cloudinit.WriteFile) ([]byte, error) {
	doc := in.Cloudinit
	if doc == nil {
		var err error
		if doc, err = config.UserDataDocument(d.Config, in, d.GetSSHUsername()); err != nil {
			return nil, err
		}
	}
	return doc.Render(keys, files)
}
