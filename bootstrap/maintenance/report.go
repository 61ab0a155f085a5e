package maintenance

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the result with "failed" first.
func (r *Result) WriteJSON(w io.Writer) error {
	out := struct {
		Failed bool `json:"failed"`
		*Result
	}{r.Failed(), r}
	if out.VMs == nil {
		out.VMs = []VM{}
	}
	if out.Losses == nil {
		out.Losses = []Loss{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteTable writes one row per VM, then the losses and the notes.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	what := "maintenance of " + strings.Join(r.Hosts, ", ")
	if r.Force {
		what = "forced " + what
	}
	if r.Upgrade {
		what = "upgrade, hosts in this order: " + strings.Join(r.Hosts, ", ")
		if r.RestoreVM {
			what = "upgrade with restoreVM, hosts in this order: " + strings.Join(r.Hosts, ", ")
		}
	}
	fmt.Fprintf(tw, "# %s\n", what)
	fmt.Fprintln(tw, "STEP\tHOST\tVM\tCLUSTER/POOL\tEVICTION\tMIGRATABLE\tACTION\tWHY")
	for _, v := range r.VMs {
		step := "-"
		if v.Step > 0 {
			step = strconv.Itoa(v.Step)
		}
		mig := v.Migratable
		if v.Reason != "" {
			mig += " (" + v.Reason + ")"
		}
		// kube-scheduler chooses among the targets by its own scores: the
		// table names the one host only when there is one.
		action := v.Action
		if v.Restored {
			action += ", restored"
		}
		switch {
		case len(v.Targets) == 1:
			action += " to " + v.Targets[0]
		case len(v.Targets) > 1:
			action += " (kube-scheduler picks)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s/%s\t%s/%s\t%s\t%s\t%s\t%s\n", step, v.Host, v.Namespace, v.Name, v.Cluster, v.Pool, v.Strategy, mig, action, v.Why)
	}
	if len(r.VMs) == 0 {
		fmt.Fprintln(tw, "-\t-\tno guest-cluster VM runs on these hosts\t\t\t\t\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.UpgradeRefused != "" {
		if _, err := fmt.Fprintf(w, "REFUSED %s\n", r.UpgradeRefused); err != nil {
			return err
		}
	}
	if err := r.writeRefusals(w); err != nil {
		return err
	}
	for _, l := range r.Losses {
		kind := "LOSS"
		if !l.Certain {
			kind = "RISK"
		}
		at := "draining " + l.Host
		if l.Step > 0 {
			at = fmt.Sprintf("step %d (%s)", l.Step, l.Host)
		}
		if _, err := fmt.Fprintf(w, "%s %s/%s %s after %s: %s\n", kind, l.Namespace, l.Cluster, l.Group, at, l.Why); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}
