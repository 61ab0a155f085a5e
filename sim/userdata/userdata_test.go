package userdata

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return buf.Bytes()
}

func TestWriteFiles(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	gzb64 := b64(gz(t, "zipped"))
	cloudConfig := "#cloud-config\nwrite_files:\n" +
		"- path: /plain\n  content: hello\n" +
		"- path: /b64\n  encoding: b64\n  content: " + b64([]byte("secret")) + "\n" +
		"- path: /gzb64\n  encoding: gzip+base64\n  content: " + gzb64 + "\n" +
		"- path: /gz\n  encoding: gz\n  content: !!binary |\n    " + b64(gz(t, "binary")) + "\n" +
		"- path: /plain\n  content: ' world'\n  append: true\n"
	mime := "Content-Type: multipart/mixed; boundary=XX\nMIME-Version: 1.0\n\n--XX\nContent-Type: text/x-shellscript\n\n#!/bin/sh\necho hi\n" +
		"--XX\nContent-Type: text/cloud-config\nContent-Transfer-Encoding: base64\n\n" + b64([]byte(cloudConfig)) + "\n--XX--\n"
	for name, data := range map[string][]byte{"cloud-config": []byte(cloudConfig), "multipart": []byte(mime), "gzip": gz(t, cloudConfig)} {
		t.Run(name, func(t *testing.T) {
			files, err := WriteFiles(data)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, f := range files {
				got[f.Path] = string(f.Content)
			}
			want := map[string]string{"/plain": "hello world", "/b64": "secret", "/gzb64": "zipped", "/gz": "binary"}
			for p, w := range want {
				if got[p] != w {
					t.Errorf("%s = %q, want %q", p, got[p], w)
				}
			}
			if len(files) != len(want) {
				t.Errorf("files = %d, want %d", len(files), len(want))
			}
		})
	}
}

func TestWriteFilesErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"bad encoding": "#cloud-config\nwrite_files:\n- path: /x\n  encoding: rot13\n  content: x\n",
		"bad base64":   "#cloud-config\nwrite_files:\n- path: /x\n  encoding: b64\n  content: '!!!'\n",
		"bad yaml":     "#cloud-config\nwrite_files: [\n",
	} {
		if _, err := WriteFiles([]byte(doc)); err == nil {
			t.Errorf("%s: no error", name)
		} else if name != "bad yaml" && !strings.Contains(err.Error(), "/x") {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
}
