package webhook

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Settings gives the Harvester settings the mutator reads.
type Settings interface {
	// Setting is the setting's value, its default when the value is
	// empty; ok is false when no such setting exists.
	Setting(name string) (value string, ok bool, err error)
}

var gvrSetting = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}

// informedSettings reads settings from a watch-fed cache, as Harvester's
// webhook does: no API request per admission.
type informedSettings struct {
	store cache.Store
}

// watchSettings starts the cache and returns once it holds every setting.
func watchSettings(ctx context.Context, cfg *rest.Config) (*informedSettings, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	informer := factory.ForResource(gvrSetting).Informer()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil, errors.New("webhook: settings: the cache did not sync")
	}
	return &informedSettings{store: informer.GetStore()}, nil
}

func (s *informedSettings) Setting(name string) (string, bool, error) {
	obj, ok, err := s.store.GetByKey(name)
	if err != nil || !ok {
		return "", false, err
	}
	u, isU := obj.(*unstructured.Unstructured)
	if !isU {
		return "", false, fmt.Errorf("setting %s: unexpected %T in the cache", name, obj)
	}
	value, _, _ := unstructured.NestedString(u.Object, "value")
	if value == "" {
		value, _, _ = unstructured.NestedString(u.Object, "default")
	}
	return value, true, nil
}
