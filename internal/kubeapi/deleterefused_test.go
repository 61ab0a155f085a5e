package kubeapi

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

func TestDeleteRefused(t *testing.T) {
	broken := errors.New("connection refused")
	cases := []struct {
		name    string
		now     types.UID
		err     error
		refused bool
		wantErr error
	}{
		{name: "the same object is still there: refused", now: "u1", refused: true},
		{name: "another object holds the name: replaced", now: "u2"},
		{name: "no object holds the name: gone", err: apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, "d0")},
		{name: "the read failed", err: broken, wantErr: broken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			refused, err := DeleteRefused(context.Background(), "u1", func(context.Context) (types.UID, error) { return c.now, c.err })
			if refused != c.refused || !errors.Is(err, c.wantErr) {
				t.Errorf("DeleteRefused = %v, %v; want %v, %v", refused, err, c.refused, c.wantErr)
			}
		})
	}
}
