package config

import (
	"encoding/base64"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func fuzzSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add(s)
		f.Add(b64(s))
	}
}
