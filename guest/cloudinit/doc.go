// Package cloudinit builds the cloud-init user data of a Harvester VM from
// typed parts. It is pure: no I/O, no clock, no randomness, so the same
// Input always yields the same bytes.
//
// The entry point is Build:
//
//	userData, err := cloudinit.Build(cloudinit.Input{
//		User:                  "ubuntu",
//		SSHAuthorizedKeys:     []string{"ssh-ed25519 AAAA... me"},
//		Password:              "",
//		InstallQemuGuestAgent: true,
//		UserData:              []byte("#cloud-config\npackages: [htop]\n"),
//		CloudConfig:           rancherMachineFile,
//	})
//
// Parts are merged in this order, later parts extending earlier ones:
//
//  1. the login part: the SSH user with its authorized keys and/or password,
//     and Input.WriteFiles (the cloud provider's files, see guest/nodefiles);
//  2. qemu-guest-agent: the package (listed once, even if the user lists it
//     too) and `systemctl enable --now qemu-guest-agent.service`;
//  3. Input.UserData (what --harvester-user-data carries);
//  4. Input.CloudConfig (the file rancher-machine writes for
//     --harvester-cloud-config: hostname, the install script in write_files
//     and `sh /usr/local/custom_script/install.sh` in runcmd).
//
// A tool that learns its SSH keys or write_files only later merges once,
// early, with stand-ins for them (ParseUserData, ParseCloudConfig, then
// MergeDocument), and later renders that Document with the real entries
// (Document.Render): the bytes are those Build makes with the real ones.
//
// Merging is done on YAML trees (gopkg.in/yaml.v3), never on text: mappings
// merge key by key, sequences are concatenated (the `packages` sequence
// without duplicates), and a scalar of a later part replaces an earlier one.
// After merging, every runcmd entry that runs the Rancher install script
// (anything under /usr/local/custom_script/) is moved to the end of runcmd,
// so the node joins the cluster only after everything else, including the
// guest agent, is set up.
//
// A `## template: jinja` first line in any cloud-config part is kept as the
// first line of the result. A part that is not cloud-config — a shell script
// (`#!`), `#include` or `#cloud-boothook` — is not mangled: the result is
// then a cloud-init multipart MIME document whose first part is the merged
// cloud-config and whose further parts are those documents, unchanged.
//
// UserData and CloudConfig may themselves be MIME documents (multipart, as
// `cloud-init devel make-mime` writes them, nested multiparts included, or a
// single part with a Content-Type header). Their parts are handled as
// cloud-init's part handlers would: text/cloud-config parts are merged like
// any cloud-config (in document order, by the rules above); text/plain
// parts and parts without a type are told apart by their first line; shell
// scripts (text/x-shellscript and its per-boot/-instance/-once variants),
// boothooks, part handlers, include lists, text/jinja2 and cloud-config
// archives are passed on unchanged as their own parts, with their types.
// Base64 and quoted-printable transfer encodings are decoded. Any other
// type (text/html, compressed parts, ...) is an error naming the part
// ("user data: part 2: content type application/x-gzip is not supported"),
// so nothing cloud-init would ignore or misread is accepted silently.
// Merge-Type headers are not read: lists are appended, as everywhere here.
package cloudinit
