package main

import (
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/kind/kedaimage"
)

// TestKEDAImagesPrintRefs: --print-refs names the three KEDA images at the
// exact tags Ensure would build, and builds nothing; arguments are refused.
func TestKEDAImagesPrintRefs(t *testing.T) {
	in, err := kedaimage.KEDA(t.Context(), kedaimage.Options{})
	if err != nil {
		t.Skip(err)
	}
	c := newKindCmd()
	var out strings.Builder
	c.SetOut(&out)
	c.SetArgs([]string{"keda-images", "--print-refs", "--cache-dir", t.TempDir()})
	if err := c.Execute(); err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, b := range kedaimage.Binaries {
		want += b.Name + " " + in.Ref(b.Name) + "\n"
	}
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	if strings.Contains(out.String(), ":latest") {
		t.Error("a ref is :latest")
	}
	c = newKindCmd()
	c.SetArgs([]string{"keda-images", "extra"})
	c.SilenceUsage, c.SilenceErrors = true, true
	if err := c.Execute(); err == nil {
		t.Error("keda-images extra: no error")
	}
}
