package store_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/settingscorpus"
	"github.com/attune/attune/internal/store"
)

// TestSettingsCorpus feeds the settings corpus to the store directly, as
// any code that skipped the forms would: the store refuses what the rules
// refuse, with the same messages, and stores nothing it refuses.
func TestSettingsCorpus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-understanding@1")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	c := settingscorpus.Load()
	policy := c.JudgePolicy()
	for i, k := range c.Judges {
		if k.Typed {
			continue
		}
		v := c.Values(c.JudgeBase, k)
		v["name"] = fmt.Sprintf("%s%d", v["name"], i) // unique, and still empty when the case empties it
		if k.Set["name"] == "" && hasKey(k.Set, "name") {
			v["name"] = ""
		}
		want := c.WantJudge(v)
		j, _ := attune.ParseJudge(settingscorpus.JudgeInput(v), attune.JudgePolicy{})
		_, err := db.CreateJudge(ctx, nil, policy, store.NewJudge{Name: j.Name, Provider: j.Provider, BaseURL: j.BaseURL, Model: j.Model,
			APIKeyEnv: j.APIKeyEnv, Settings: j.Settings})
		compare(t, "judge "+k.Name, err, want)
	}
	for i, k := range c.Projects {
		if k.Typed {
			continue
		}
		v := c.Values(c.ProjectBase, k)
		want := c.WantProject(v)
		p, _ := settingscorpus.Project(v)
		thresholds, _ := settingscorpus.ProbeThresholds(v)
		if len(want) == 0 {
			p.Name = fmt.Sprintf("%s %d", p.Name, i)
		}
		_, err := db.CreateProject(ctx, nil, store.NewProject{Name: p.Name, Instructions: p.Instructions, RubricVersionID: rv.ID,
			Overlap: p.Overlap, Lease: p.Lease, Epsilon: p.Epsilon, SystemKey: p.SystemKey, EvidencePolicy: p.EvidencePolicy,
			ProbeThresholds: &thresholds})
		compare(t, "project "+k.Name, err, want)
		if len(want) == 0 {
			got, err := db.FindProjectByName(ctx, p.Name)
			if err != nil {
				t.Fatal(err)
			}
			gotT, err := db.ProbeThresholds(ctx, got.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d := settingscorpus.StoredDiffers(v, got, gotT); len(d) > 0 {
				t.Errorf("project %s: stored %v unlike the case: %+v", k.Name, d, got)
			}
		}
	}
	// Nothing refused was stored.
	js, err := db.ListJudges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ps, err := db.ListAllProjects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := accepted(c.Judges, true); len(js) != n {
		t.Errorf("%d judges stored, want %d", len(js), n)
	}
	if n := accepted(c.Projects, true); len(ps) != n {
		t.Errorf("%d projects stored, want %d", len(ps), n)
	}

	// An update is held to the same rules.
	p := ps[0]
	err = db.UpdateProject(ctx, 0, p.ID, store.ProjectChanges{Name: p.Name, Overlap: 11, Lease: 90 * time.Second})
	compare(t, "project update", err, map[string]string{"overlap": attune.ProjectFieldMessage("overlap"), "lease": attune.ProjectFieldMessage("lease")})
	err = db.UpdateProject(ctx, 0, p.ID, store.ProjectChanges{Name: p.Name, Overlap: 3, Lease: time.Hour, Epsilon: 1.5})
	compare(t, "project update of ε", err, map[string]string{"epsilon": c.WantProject(map[string]string{"annotators": "custom", "epsilon": "1.5"})["epsilon"]})
	// The accepted ε are stored as given, a zero one as the default.
	epsilons := map[float64]int{}
	for _, sp := range ps {
		got, err := db.FindProjectByID(ctx, sp.ID)
		if err != nil {
			t.Fatal(err)
		}
		epsilons[got.Epsilon]++
	}
	if epsilons[0.2] != 1 || epsilons[0.3] != 1 || epsilons[attune.DefaultEpsilon] != len(ps)-2 {
		t.Errorf("stored ε: %v", epsilons)
	}
	err = db.UpdateProject(ctx, 0, p.ID, store.ProjectChanges{Name: p.Name, Overlap: 3, Lease: time.Hour, Epsilon: 0.12})
	if got, err2 := db.FindProjectByID(ctx, p.ID); err != nil || err2 != nil || got.Epsilon != 0.12 {
		t.Errorf("update of ε: %v %v %+v", err, err2, got)
	}
	// Probe thresholds: refused beside the project's own fields, nothing
	// stored; accepted, stored; left out, kept.
	before, err := db.ProbeThresholds(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	bad := probe.Thresholds{RetestChange: 1, PerturbMove: 0.2, MinItems: 1, LengthSlope: 0.3}
	err = db.UpdateProject(ctx, 0, p.ID, store.ProjectChanges{Name: p.Name, Overlap: 0, Lease: time.Hour, Epsilon: 0.12, ProbeThresholds: &bad})
	compare(t, "project update of probe thresholds", err, map[string]string{"overlap": attune.ProjectFieldMessage("overlap"),
		probe.FieldRetestChange: probe.ThresholdMessage(probe.FieldRetestChange), probe.FieldMinItems: probe.ThresholdMessage(probe.FieldMinItems)})
	if got, err := db.ProbeThresholds(ctx, p.ID); err != nil || got != before {
		t.Errorf("after a refused update the thresholds are %+v (%v), were %+v", got, err, before)
	}
	good := probe.Thresholds{RetestChange: 0.2, PerturbMove: 0.25, MinItems: 4, LengthSlope: 0.5}
	if err := db.UpdateProject(ctx, 0, p.ID, store.ProjectChanges{Name: p.Name, Overlap: 3, Lease: time.Hour, ProbeThresholds: &good}); err != nil {
		t.Fatal(err)
	}
	if err := db.UpdateProject(ctx, 0, p.ID, store.ProjectChanges{Name: p.Name, Overlap: 3, Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ProbeThresholds(ctx, p.ID); err != nil || got != good {
		t.Errorf("thresholds %+v (%v), want %+v kept", got, err, good)
	}
	compare(t, "set probe thresholds", db.SetProbeThresholds(ctx, nil, p.ID, probe.Thresholds{RetestChange: 0.1, PerturbMove: 0.1, MinItems: 10, LengthSlope: 11}),
		map[string]string{probe.FieldLengthSlope: probe.ThresholdMessage(probe.FieldLengthSlope)})
	jd := js[0]
	err = db.UpdateJudge(ctx, nil, policy, jd.ID, store.NewJudge{Name: jd.Name, Provider: jd.Provider, BaseURL: "http://u:p@127.0.0.1:9/v1", Model: jd.Model,
		Settings: attune.JudgeSettings{MaxTokens: 5_000_000}})
	compare(t, "judge update", err, map[string]string{"base_url": attune.MsgCredentialsInURL, "max_tokens": c.WantJudge(map[string]string{"max_tokens": "5000000"})["max_tokens"]})
}

func hasKey(m map[string]string, k string) bool {
	_, ok := m[k]
	return ok
}

// accepted counts the cases the rules accept.
func accepted(cases []settingscorpus.Case, readable bool) int {
	n := 0
	for _, k := range cases {
		if len(k.Refused) == 0 && (!readable || !k.Typed) {
			n++
		}
	}
	return n
}

// compare checks that err refuses exactly the fields of want with its
// messages, or is nil when want is empty.
func compare(t *testing.T, what string, err error, want map[string]string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Errorf("%s: refused: %v", what, err)
		}
		return
	}
	var v *attune.ValidationError
	if !errors.As(err, &v) {
		t.Errorf("%s: got %v, want a validation error on %v", what, err, want)
		return
	}
	if !maps.Equal(v.Fields, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, v.Fields, want)
	}
}
