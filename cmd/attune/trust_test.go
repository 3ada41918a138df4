package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/internal/trustfixture"
)

// TestTrustCommand: attune trust shows a judge's threshold and coverage on
// a rubric item, turns routing on (keeping the items whose confidence
// reaches the threshold and sending the others to people), routes again
// and turns it off, as text and JSON; terms out of range, a missing judge
// and routing while off are refused naming the problem.
func TestTrustCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := trustfixture.New(ctx, db, "Routed"); err != nil {
		t.Fatal(err)
	}
	env := envFor(dbURL)
	must := func(args ...string) string {
		t.Helper()
		out, err := runCmd(t, env, "", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	refused := func(want string, args ...string) {
		t.Helper()
		out, err := runCmd(t, env, "", args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v\n%s\nwant an error naming %q", args, err, out, want)
		}
	}
	base := []string{"trust", "--project", "Routed", "--judge", trustfixture.Judge}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }

	shown := must(with("--rubric-item", "understanding")...)
	if !strings.Contains(shown, "confidence >= 0.95: the judge keeps 80% of labelled items") || !strings.Contains(shown, "of 3 items only the judge labelled it keeps 2, sending 1 to people") {
		t.Errorf("threshold and coverage:\n%s", shown)
	}
	refused("--target", with("--rubric-item", "understanding", "--target", "120")...)
	refused("--alpha", with("--on", "--alpha", "0")...)
	refused("--judge is required", "trust", "--project", "Routed", "--on")
	refused("routing", with("--route")...)

	var on struct {
		Kept      int  `json:"kept"`
		Escalated int  `json:"escalated"`
		Guarant   bool `json:"guaranteed"`
		Setting   struct {
			On     bool    `json:"on"`
			Target float64 `json:"target"`
		} `json:"setting"`
	}
	out := must(with("--on", "--target", "0.9", "--format", "json")...)
	if err := json.NewDecoder(strings.NewReader(out[strings.Index(out, "{"):])).Decode(&on); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !on.Setting.On || on.Setting.Target != 0.9 || !on.Guarant || on.Kept != trustfixture.Kept || on.Escalated != trustfixture.Escalated {
		t.Fatalf("turned on: %+v\n%s", on, out)
	}
	if text := must(with("--route")...); !strings.Contains(text, "items kept by the judge: 2; escalated to people: 1") {
		t.Errorf("route again:\n%s", text)
	}
	off := must(with("--off")...)
	if !strings.Contains(off, "trust routing for judge sure: off") {
		t.Errorf("turned off:\n%s", off)
	}
	var after struct {
		Kept    int `json:"kept"`
		Setting struct {
			On bool `json:"on"`
		} `json:"setting"`
	}
	out = must(with("--format", "json")...)
	if err := json.NewDecoder(strings.NewReader(out[strings.Index(out, "{"):])).Decode(&after); err != nil || after.Setting.On || after.Kept != 0 {
		t.Errorf("after --off (%s): %+v %v\n%s", off, after, err, out)
	}
}
