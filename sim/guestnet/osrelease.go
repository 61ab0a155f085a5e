package guestnet

import (
	"fmt"
	"regexp"
	"strings"
)

// OS is the operating system a guest runs, as far as a login shows it.
type OS struct {
	ID, Name, Version string
	DefaultUser       string // cloud-init's default user of the image
}

// distributions are the cloud images the simulator knows, by the word in
// an image's name (or its harvesterhci.io/os-type label).
var distributions = []OS{
	{ID: "ubuntu", Name: "Ubuntu", DefaultUser: "ubuntu"},
	{ID: "debian", Name: "Debian GNU/Linux", DefaultUser: "debian"},
	{ID: "opensuse-leap", Name: "openSUSE Leap", DefaultUser: "opensuse"},
	{ID: "sles", Name: "SUSE Linux Enterprise Server", DefaultUser: "sles"},
	{ID: "rocky", Name: "Rocky Linux", DefaultUser: "rocky"},
	{ID: "centos", Name: "CentOS Stream", DefaultUser: "centos"},
}

var versionInName = regexp.MustCompile(`\d+(\.\d+)*`)

// OSOf guesses the OS of an image from its OS-type label (may be empty)
// and its name, e.g. "ubuntu-22.04"; an image it does not know is a
// generic Linux whose default user is "cloud-user".
func OSOf(osType, imageName string) OS {
	probe := strings.ToLower(osType + " " + imageName)
	for _, d := range distributions {
		word := strings.TrimSuffix(d.ID, "-leap")
		if strings.Contains(probe, word) {
			d.Version = versionInName.FindString(imageName)
			return d
		}
	}
	return OS{ID: "linux", Name: "Linux", DefaultUser: "cloud-user"}
}

// Release is the content of /etc/os-release.
func (o OS) Release() string {
	pretty := strings.TrimSpace(o.Name + " " + o.Version)
	codename := ""
	if o.ID == "ubuntu" && o.Version == "22.04" {
		pretty, codename = "Ubuntu 22.04.4 LTS", "jammy"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "PRETTY_NAME=%q\nNAME=%q\n", pretty, o.Name)
	if o.Version != "" {
		fmt.Fprintf(&b, "VERSION_ID=%q\n", o.Version)
	}
	if codename != "" {
		fmt.Fprintf(&b, "VERSION_CODENAME=%s\n", codename)
	}
	fmt.Fprintf(&b, "ID=%s\n", o.ID)
	return b.String()
}
