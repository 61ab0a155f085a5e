package staticip

import (
	"crypto/sha256"
	"net"
)

// MAC is the deterministic MAC of a machine's NIC: derived from the
// namespace, the machine name and the NIC name, so it is known before the
// VM exists (allocation and network data can match by it) and the same
// machine name gets the same MAC again. It is a locally administered
// unicast address (first octet xxxxxx10), outside every vendor's space.
func MAC(namespace, machine, nic string) string {
	h := sha256.Sum256([]byte(namespace + "/" + machine + "/" + nic))
	hw := net.HardwareAddr(h[:6])
	hw[0] = hw[0]&0xfc | 0x02
	return hw.String()
}
