package sim

import (
	"fmt"
	"path/filepath"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// crdFacts are what a client sees of a CRD besides its schema.
func crdFacts(crd *apiextv1.CustomResourceDefinition) []string {
	n := crd.Spec.Names
	out := []string{fmt.Sprintf("group=%s kind=%s list=%s plural=%s singular=%s short=%v scope=%s",
		crd.Spec.Group, n.Kind, n.ListKind, n.Plural, n.Singular, n.ShortNames, crd.Spec.Scope)}
	for _, v := range crd.Spec.Versions {
		status := v.Subresources != nil && v.Subresources.Status != nil
		out = append(out, fmt.Sprintf("version=%s served=%v storage=%v status=%v", v.Name, v.Served, v.Storage, status))
		for _, c := range v.AdditionalPrinterColumns {
			out = append(out, fmt.Sprintf("  column %s %s %s", c.Name, c.Type, c.JSONPath))
		}
	}
	return out
}

// TestCRDsMatchHarvesterChart: the Harvester kinds the guests' CSI driver
// uses have the names, scope, versions and columns of Harvester's CRD chart.
func TestCRDsMatchHarvesterChart(t *testing.T) {
	dir := filepath.Join(harvesterModuleDir(t), "deploy", "charts", "harvester-crd", "templates")
	for _, plural := range []string{"volumeremotebackups", "volumeremoterestores"} {
		var want apiextv1.CustomResourceDefinition
		docs := chartDocuments(t, filepath.Join(dir, "harvesterhci.io_"+plural+".yaml"))
		decodeYAML(t, docs[0], &want)
		var got []string
		for _, s := range simCRDs {
			if s.group == "harvesterhci.io" && s.plural == plural {
				got = crdFacts(buildCRD(s))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(crdFacts(&want)) {
			t.Errorf("CRD %s: Harvester's chart has\n  %q\nthe simulator\n  %q", plural, crdFacts(&want), got)
		}
	}
}
