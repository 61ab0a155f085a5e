package kubevip

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// StateFile is written in each node's directory (DIR/guests/<cluster>/
// kube-vip/<node>/) whenever its kube-vip changes state; `harvester-sim
// status` reads it.
const StateFile = "state.json"

// State is one node's kube-vip as the simulator sees it.
type State struct {
	Node     string    `json:"node"`
	Pod      string    `json:"pod"`
	PID      int       `json:"pid,omitempty"`
	Phase    string    `json:"phase"` // running, exited, waiting, not-run
	Reason   string    `json:"reason,omitempty"`
	Restarts int       `json:"restarts"`
	Since    time.Time `json:"since"`
	// LastError is kube-vip's last level=ERROR log line (RBAC refused, no
	// interface...), or the simulator's own error starting it.
	LastError string `json:"lastError,omitempty"`
	// GratuitousARPs counts the gratuitous ARPs seen on the node's veth
	// (from the guest network's side), by announced address.
	GratuitousARPs map[string]int `json:"gratuitousARPs,omitempty"`
	Log            string         `json:"log"`
}

func writeState(dir string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return statefile.Write(filepath.Join(dir, StateFile), data)
}

// ReadStates reads the kube-vip states of a guest cluster whose directory
// is clusterDir, sorted by node.
func ReadStates(clusterDir string) []State {
	paths, _ := filepath.Glob(filepath.Join(clusterDir, Dir, "*", StateFile))
	var out []State
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var s State
		if json.Unmarshal(data, &s) == nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// Dir is the directory under a guest cluster's directory that holds one
// directory per node running kube-vip.
const Dir = "kube-vip"
