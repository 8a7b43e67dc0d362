package main

import (
	"strings"
	"testing"

	"github.com/scaleproof/scaleproof/kind/kedaimage"
)

// TestKEDAImagesPrintRefs: --print-refs names the three KEDA images and
// metrics-server's at the exact tags Ensure would build, and builds
// nothing; arguments and an unknown --only set are refused.
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
	ms, err := kedaimage.MetricsServer(t.Context(), kedaimage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, b := range kedaimage.Binaries {
		want += b.Name + " " + in.Ref(b.Name) + "\n"
	}
	want += "metrics-server " + ms.Ref("metrics-server") + "\n"
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
	c = newKindCmd()
	c.SetArgs([]string{"keda-images", "--only", "keda,grafana", "--cache-dir", t.TempDir()})
	c.SilenceUsage, c.SilenceErrors = true, true
	if err := c.Execute(); err == nil || !strings.Contains(err.Error(), `"grafana"`) {
		t.Errorf("keda-images --only keda,grafana: err %v, want one naming grafana", err)
	}
}
