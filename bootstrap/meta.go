package bootstrap

import "k8s.io/apimachinery/pkg/api/meta"

var metaAccessor = meta.Accessor
