package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// TestProjectEvidenceCommand: project create takes --evidence (optional
// when left out), set changes it alone and keeps it when left out, show
// prints it as text and JSON, and an unknown or empty setting is refused
// on --evidence with attune's message, changing nothing.
func TestProjectEvidenceCommand(t *testing.T) {
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
	refused := func(args ...string) {
		t.Helper()
		_, err := runCmd(t, env, "", args...)
		if err == nil || !strings.Contains(err.Error(), "--evidence: Choose off, optional or required for turn evidence.") {
			t.Errorf("%v: %v, want it refused on --evidence", args, err)
		}
	}
	refused("project", "create", "--name", "Bad", "--rubric", "empathetic-dialogue@2", "--evidence", "sometimes")
	refused("project", "create", "--name", "Bad", "--rubric", "empathetic-dialogue@2", "--evidence", "")
	must("project", "create", "--name", "Plain", "--rubric", "empathetic-dialogue@2")
	must("project", "create", "--name", "Marked", "--rubric", "empathetic-dialogue@2", "--evidence", "required")
	if out := must("project", "show", "Plain"); !strings.Contains(out, "turn evidence optional") {
		t.Errorf("show of a project made without --evidence:\n%s", out)
	}
	if out := must("project", "show", "Marked"); !strings.Contains(out, "turn evidence required") {
		t.Errorf("show:\n%s", out)
	}
	var shown struct {
		EvidencePolicy string `json:"evidence_policy"`
	}
	if err := json.Unmarshal([]byte(must("project", "show", "Marked", "--json")), &shown); err != nil || shown.EvidencePolicy != "required" {
		t.Errorf("show --json: %+v %v", shown, err)
	}
	refused("project", "set", "--project", "Marked", "--evidence", "Off")
	refused("project", "set", "--project", "Marked", "--evidence", "")
	db, err := store.Open(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stored := func() (rubric.EvidencePolicy, string) {
		t.Helper()
		p, err := db.FindProjectByName(t.Context(), "Marked")
		if err != nil {
			t.Fatal(err)
		}
		return p.EvidencePolicy, p.SystemKey
	}
	if got, _ := stored(); got != rubric.EvidenceRequired {
		t.Fatalf("stored %q after refused sets", got)
	}
	for _, good := range []rubric.EvidencePolicy{rubric.EvidenceOff, rubric.EvidenceOptional, rubric.EvidenceRequired} {
		if out := must("project", "set", "--project", "Marked", "--evidence", string(good)); !strings.Contains(out, "turn evidence "+string(good)) {
			t.Errorf("set %s:\n%s", good, out)
		}
		if got, _ := stored(); got != good {
			t.Errorf("set %s stored %q", good, got)
		}
	}
	if out := must("project", "set", "--project", "Marked", "--system-key", "arm"); !strings.Contains(out, "turn evidence required") {
		t.Errorf("a set without --evidence:\n%s", out)
	}
	if got, key := stored(); got != rubric.EvidenceRequired || key != "arm" {
		t.Errorf("a set without --evidence stored %q, key %q", got, key)
	}
}
