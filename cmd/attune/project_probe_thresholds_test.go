package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/store"
)

// TestProjectProbeThresholdsCommand: project create takes the probe
// thresholds (the defaults when left out), set changes those given and
// keeps the others, show prints them as text and JSON, and one out of
// range or not a number is refused on its flag with probe's message,
// changing nothing; probe thresholds refuses on its own flags alike.
func TestProjectProbeThresholdsCommand(t *testing.T) {
	t.Parallel()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	must := func(args ...string) string {
		t.Helper()
		out, err := runCmd(t, env, "", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	refused := func(flag, field string, args ...string) {
		t.Helper()
		_, err := runCmd(t, env, "", args...)
		if err == nil || !strings.Contains(err.Error(), "--"+flag+": "+probe.ThresholdMessage(field)) {
			t.Errorf("%v: %v, want it refused on --%s", args, err, flag)
		}
	}
	refused("probe-retest", probe.FieldRetestChange, "project", "create", "--name", "Bad", "--rubric", "empathetic-dialogue@2", "--probe-retest", "1")
	refused("probe-min-items", probe.FieldMinItems, "project", "create", "--name", "Bad", "--rubric", "empathetic-dialogue@2", "--probe-min-items", "ten")
	must("project", "create", "--name", "Plain", "--rubric", "empathetic-dialogue@2")
	must("project", "create", "--name", "Probed", "--rubric", "empathetic-dialogue@2", "--probe-retest", "0.2", "--probe-min-items", "4")
	db, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := func(name string) probe.Thresholds {
		t.Helper()
		p, err := db.FindProjectByName(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		th, err := db.ProbeThresholds(t.Context(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	if got := stored("Plain"); got != probe.DefaultThresholds() {
		t.Errorf("made without thresholds: %+v", got)
	}
	want := probe.DefaultThresholds()
	want.RetestChange, want.MinItems = 0.2, 4
	if got := stored("Probed"); got != want {
		t.Fatalf("made with %+v, want %+v", got, want)
	}
	if out := must("project", "show", "Probed"); !strings.Contains(out, "retest at most 0.2 changed") || !strings.Contains(out, "on at least 4 items") {
		t.Errorf("show:\n%s", out)
	}
	var shown struct {
		Thresholds probe.Thresholds `json:"probe_thresholds"`
	}
	if err := json.Unmarshal([]byte(must("project", "show", "Probed", "--json")), &shown); err != nil || shown.Thresholds != want {
		t.Errorf("show --json: %+v %v", shown, err)
	}
	refused("probe-length", probe.FieldLengthSlope, "project", "set", "--project", "Probed", "--probe-length", "11")
	refused("probe-perturb", probe.FieldPerturbMove, "project", "set", "--project", "Probed", "--probe-perturb", "")
	refused("min-items", probe.FieldMinItems, "probe", "thresholds", "--project", "Probed", "--min-items", "1")
	if got := stored("Probed"); got != want {
		t.Fatalf("refused sets stored %+v", got)
	}
	if out := must("project", "set", "--project", "Probed", "--probe-perturb", "0.3"); !strings.Contains(out, "each rewrite at most 0.3 moved") {
		t.Errorf("set:\n%s", out)
	}
	want.PerturbMove = 0.3
	must("project", "set", "--project", "Probed", "--system-key", "arm")
	if got := stored("Probed"); got != want {
		t.Fatalf("after the sets %+v, want %+v", got, want)
	}
	p, err := db.FindProjectByName(t.Context(), "Probed")
	if err != nil || p.SystemKey != "arm" {
		t.Fatalf("%+v %v", p, err)
	}
}
