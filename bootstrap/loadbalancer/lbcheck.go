// Package loadbalancer checks the Service annotations the Harvester cloud
// provider reads and builds IP pools (Harvester IPPools, or kube-vip keys of
// older releases) from address ranges, rejecting overlaps.
package loadbalancer

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

// Service annotations read by the Harvester cloud provider.
const (
	AnnotationPrefix          = "cloudprovider.harvesterhci.io/"
	AnnIPAM                   = AnnotationPrefix + "ipam"
	AnnNetwork                = AnnotationPrefix + "network"
	AnnPrimaryService         = AnnotationPrefix + "primary-service"
	AnnHealthCheckPort        = AnnotationPrefix + "healthcheck-port"
	AnnHealthCheckSuccess     = AnnotationPrefix + "healthcheck-success-threshold"
	AnnHealthCheckFailure     = AnnotationPrefix + "healthcheck-failure-threshold"
	AnnHealthCheckPeriod      = AnnotationPrefix + "healthcheck-periodseconds"
	AnnHealthCheckTimeout     = AnnotationPrefix + "healthcheck-timeoutseconds"
	healthCheckIgnoredWarning = "current Harvester cloud providers ignore the healthcheck-* annotations; they only apply to old releases (Harvester v1.0/v1.1)"
)

var healthDefaults = map[string]string{
	AnnHealthCheckSuccess: "1",
	AnnHealthCheckFailure: "3",
	AnnHealthCheckPeriod:  "5",
	AnnHealthCheckTimeout: "3",
}

var knownAnnotations = []string{AnnIPAM, AnnNetwork, AnnPrimaryService, AnnHealthCheckPort,
	AnnHealthCheckSuccess, AnnHealthCheckFailure, AnnHealthCheckPeriod, AnnHealthCheckTimeout}

// LBCheck is the outcome of CheckLoadBalancer.
type LBCheck struct {
	// Effective holds every known annotation with its value or default.
	Effective map[string]string
	Warnings  []string
}

// CheckLoadBalancer validates a Service's type and cloudprovider.harvesterhci.io/*
// annotations. It returns every error joined, and warnings that do not fail.
// serviceType "" means unknown (annotations only).
func CheckLoadBalancer(serviceType string, ann map[string]string) (LBCheck, error) {
	var errs []error
	res := LBCheck{Effective: map[string]string{}}
	if serviceType != "" && serviceType != "LoadBalancer" {
		errs = append(errs, fmt.Errorf("spec.type %q: the Harvester load balancer only serves type LoadBalancer", serviceType))
	}
	keys := make([]string, 0, len(ann))
	for k := range ann {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasPrefix(k, AnnotationPrefix) && !slices.Contains(knownAnnotations, k) {
			errs = append(errs, fmt.Errorf("annotation %s: unknown; known: %s", printable(k), strings.Join(knownAnnotations, ", ")))
		}
	}

	switch v, ok := ann[AnnIPAM]; {
	case !ok:
		res.Effective[AnnIPAM] = lbapi.IPAMPool
	case v == lbapi.IPAMPool || v == lbapi.IPAMDHCP:
		res.Effective[AnnIPAM] = v
	default:
		errs = append(errs, fmt.Errorf("annotation %s %q: must be %q or %q", AnnIPAM, v, lbapi.IPAMPool, lbapi.IPAMDHCP))
	}
	res.Warnings = append(res.Warnings, "the ipam mode cannot be changed after the Service is created; create a new Service to switch")

	if v, ok := ann[AnnNetwork]; ok {
		if _, _, err := harvester.SplitNamespacedName(v, ""); err != nil {
			errs = append(errs, fmt.Errorf("annotation %s: %w", AnnNetwork, err))
		} else {
			res.Effective[AnnNetwork] = v
		}
	}
	if v, ok := ann[AnnPrimaryService]; ok {
		if msgs := validation.IsDNS1035Label(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("annotation %s %q: must be the name of another Service in the same namespace (DNS-1035 label)", AnnPrimaryService, v))
		} else {
			res.Effective[AnnPrimaryService] = v
		}
	}

	health := false
	for k := range healthDefaults {
		if _, ok := ann[k]; ok {
			health = true
		}
	}
	if v, ok := ann[AnnHealthCheckPort]; ok {
		health = true
		if p, err := strconv.Atoi(v); err != nil || p < 1 || p > 65535 {
			errs = append(errs, fmt.Errorf("annotation %s %q: must be a port number 1-65535 (a NodePort of the Service)", AnnHealthCheckPort, v))
		} else {
			res.Effective[AnnHealthCheckPort] = v
		}
	} else if health {
		errs = append(errs, fmt.Errorf("annotation %s: required when any other healthcheck-* annotation is set", AnnHealthCheckPort))
	}
	if health {
		res.Warnings = append(res.Warnings, healthCheckIgnoredWarning)
		for _, k := range []string{AnnHealthCheckSuccess, AnnHealthCheckFailure, AnnHealthCheckPeriod, AnnHealthCheckTimeout} {
			v, ok := ann[k]
			if !ok {
				res.Effective[k] = healthDefaults[k]
				continue
			}
			if n, err := strconv.Atoi(v); err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("annotation %s %q: must be a positive integer (default %s)", k, v, healthDefaults[k]))
				continue
			}
			res.Effective[k] = v
		}
		p, perr := strconv.Atoi(res.Effective[AnnHealthCheckPeriod])
		t, terr := strconv.Atoi(res.Effective[AnnHealthCheckTimeout])
		if perr == nil && terr == nil && t > p {
			res.Warnings = append(res.Warnings, fmt.Sprintf("healthcheck timeout %ds exceeds the period %ds", t, p))
		}
	}
	return res, errors.Join(errs...)
}

// printable is key as typed, or quoted with escapes when it holds
// characters (a newline, say) that would break the one-line message.
func printable(key string) string {
	if q := strconv.Quote(key); q[1:len(q)-1] != key {
		return q
	}
	return key
}
