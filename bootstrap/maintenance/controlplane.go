package maintenance

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Refusal is a host Harvester refuses to put into maintenance mode at all.
type Refusal struct {
	Host string `json:"host"`
	// Reason is Harvester's error text.
	Reason string `json:"reason"`
	// Source is the v1.8 function that refuses.
	Source string `json:"source"`
}

// drainPossibleSource names where the control-plane rule comes from.
const drainPossibleSource = "pkg/util/drainhelper/helper.go DrainPossible"

// controlPlaneRule splits hosts (in the order named) into those Harvester
// v1.8 lets into maintenance mode and those it refuses by
// harvester.DrainPossible, each judged as a request made once the hosts
// before it that were let in are in maintenance (their maintain-status
// set), as when an admin enables them one after the other.
func (w *world) controlPlaneRule(hosts []string) ([]string, []Refusal) {
	all := w.hostList()
	entered := map[string]bool{}
	inMaintenance := func(n *corev1.Node) bool {
		_, ok := n.Annotations[harvester.AnnMaintainStatus]
		return ok || entered[n.Name]
	}
	var allowed []string
	var refused []Refusal
	for _, h := range hosts {
		if err := harvester.DrainPossible(w.nodes[h], all, inMaintenance); err != nil {
			refused = append(refused, Refusal{Host: h, Reason: err.Error(), Source: drainPossibleSource})
			continue
		}
		entered[h] = true
		allowed = append(allowed, h)
	}
	return allowed, refused
}

// writeRefusals writes one REFUSED line per refused host.
func (r *Result) writeRefusals(w io.Writer) error {
	for _, f := range r.Refused {
		if _, err := fmt.Fprintf(w, "REFUSED %s: Harvester refuses maintenance mode: %q (%s)\n", f.Host, f.Reason, f.Source); err != nil {
			return err
		}
	}
	return nil
}
