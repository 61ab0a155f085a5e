package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	ucli "github.com/urfave/cli/v2"

	"github.com/harvester-kit/harvester-machine/bootstrap/clusterstate"
	"github.com/harvester-kit/harvester-machine/bootstrap/gc"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/internal/termsafe"
)

// errDeleteFailed makes gc exit 1 once every result is printed.
var errDeleteFailed = errors.New("gc: some deletes failed (see above)")

func gcCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "gc",
		Usage: "list (dry run) or --delete what a deleted guest cluster, or a live one's deleted Services, left on Harvester",
		Description: "Candidates: PVCs of the cluster no VM uses, cloud-init Secrets whose VM no longer exists, and, once no VM\n" +
			"of the cluster remains, its LoadBalancers and the credential objects `kubeconfig` created. Only objects\n" +
			"carrying the labels the node driver, the cloud provider or harvester-bootstrap put on them are candidates.\n" +
			"With --guest-kubeconfig (a live cluster): also the cloud provider's LoadBalancers of the cluster whose guest\n" +
			"Service is gone, no longer of type LoadBalancer, or re-created with another UID (the cloud provider leaves\n" +
			"them, holding their pool addresses, when it never set their status.address: harvester#1460, #11345). A\n" +
			"LoadBalancer of a Service the guest lists is deleted only when its name is provably another UID's; the guest\n" +
			"must be shown to be the cluster (a node's providerID names a VM of the cluster, or a Service's UID named one of\n" +
			"its LoadBalancers), and it refuses when not, or when the guest's Services cannot be listed completely. A\n" +
			"cloud-init Secret no VM owned is kept for an hour (its machine may still be being created). Running it again\n" +
			"after --delete changes nothing.\n\n" +
			"Example:\n  harvester-bootstrap gc --cluster-name guest-a --namespace default            # dry run\n" +
			"  harvester-bootstrap gc --cluster-name guest-a --namespace default --delete\n" +
			"  harvester-bootstrap gc --cluster-name guest-a --namespace default --guest-kubeconfig guest.yaml --delete",
		Flags: targetFlags(
			&ucli.BoolFlag{Name: FlagDelete, Usage: "delete the candidates (default: only list them)", EnvVars: env(FlagDelete)},
			&ucli.StringFlag{Name: FlagGuestKubeconfig, Usage: "kubeconfig `FILE` of the live guest cluster: also find the LoadBalancers its Services no longer need", EnvVars: env(FlagGuestKubeconfig)}),
		Action: targetAction(gcAction),
	}
}

func gcAction(ctx context.Context, c *ucli.Context, t clusterstate.Target, clients *clusterstate.Clients) error {
	guest, err := guestClientFrom(c)
	if err != nil {
		return err
	}
	if a := clusterstate.Authenticate(ctx, clients.Config, "--"+FlagKubeconfig); a.Rejected {
		return fmt.Errorf("gc: %w", &kubeapi.CredentialsRejectedError{Source: "--" + FlagKubeconfig})
	}
	h := clients.FetchHarvester(ctx, t, false)
	var g *clusterstate.Guest
	if guest != nil {
		fetched := clusterstate.FetchGuestForGC(ctx, guest)
		g = &fetched
	}
	sel, err := gc.Select(&h, g, time.Now())
	if err != nil {
		if guest != nil {
			return fmt.Errorf("gc --%s: %w", FlagGuestKubeconfig, err)
		}
		return err
	}
	candidates := sel.Candidates
	for _, k := range sel.Kept {
		fmt.Fprintf(c.App.ErrWriter, "kept %s %s: %s\n", k.Kind, termsafe.Text(k.Ref()), termsafe.Text(k.Reason))
	}
	results := make([]gc.Result, len(candidates))
	for i, cand := range candidates {
		results[i] = gc.Result{Candidate: cand}
	}
	failed := false
	if c.Bool(FlagDelete) {
		results, failed = gc.Delete(ctx, clients, candidates)
	}
	if err := writeReport(c, gcTable(results), gcJSON(results)); err != nil {
		return fmt.Errorf("gc: write report: %w", err)
	}
	if failed {
		return errDeleteFailed
	}
	return nil
}

// gcJSON writes the results as a JSON list.
func gcJSON(results []gc.Result) func(io.Writer) error {
	return func(w io.Writer) error {
		safe := []gc.Result{}
		for _, r := range results {
			safe = append(safe, safeResult(r))
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(safe)
	}
}

// safeResult is r with every string that came from a cluster escaped.
func safeResult(r gc.Result) gc.Result {
	for _, p := range []*string{&r.Kind, &r.Namespace, &r.Name, &r.Reason, &r.Outcome, &r.Error} {
		*p = termsafe.Text(*p)
	}
	return r
}

// gcTable prints one row per candidate: what it is, why, and (with
// --delete) what happened to it.
func gcTable(results []gc.Result) func(io.Writer) error {
	return func(w io.Writer) error { return writeGCTable(w, results) }
}

func writeGCTable(w io.Writer, results []gc.Result) error {
	if len(results) == 0 {
		_, err := fmt.Fprintln(w, "nothing left behind")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAME\tREASON\tOUTCOME")
	for _, r := range results {
		r = safeResult(r)
		outcome := r.Outcome
		switch {
		case r.Error != "":
			outcome = "FAILED: " + r.Error
		case outcome == "":
			outcome = "would delete (dry run)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Kind, r.Ref(), r.Reason, outcome)
	}
	return tw.Flush()
}
