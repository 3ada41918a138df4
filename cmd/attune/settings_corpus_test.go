package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/settingscorpus"
	"github.com/attune/attune/internal/store"
)

// TestSettingsCorpusCLI runs every case of the settings corpus through
// `judge add` and `project create`: each is refused on the fields the
// rules refuse, with the rules' messages (under the flags' names), and
// only what they accept is stored.
func TestSettingsCorpusCLI(t *testing.T) {
	t.Parallel()
	c := settingscorpus.Load()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL, "ATTUNE_JUDGE_KEY_ENVS", c.Policy.KeyEnvs, "ATTUNE_JUDGE_HOSTS", c.Policy.Hosts)
	check := func(what string, err error, want map[string]string) {
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
		for f, msg := range want {
			if !strings.Contains(err.Error(), "--"+flagName(f)+": "+msg) {
				t.Errorf("%s: the message does not name --%s: %v", what, flagName(f), err)
			}
		}
	}
	flags := map[string]string{}
	maps.Copy(flags, judgeFlagOf)
	for i, k := range c.Judges {
		v := c.Values(c.JudgeBase, k)
		if v["name"] != "" {
			v["name"] = fmt.Sprintf("%s%d", v["name"], i)
		}
		args := []string{"judge", "add"}
		for f, x := range v {
			args = append(args, "--"+flags[f]+"="+x)
		}
		_, err := runCmd(t, env, "", args...)
		check("judge "+k.Name, err, c.WantJudge(v))
		if err != nil && (strings.Contains(err.Error(), "hunter2-secret") || strings.Contains(err.Error(), "Zq81mN0pLkQ7vB2xC4dE6fG8hJ")) {
			t.Errorf("judge %s: the error repeats a secret: %v", k.Name, err)
		}
	}
	dir := t.TempDir()
	stored := map[string]map[string]string{} // the accepted cases by name
	for i, k := range c.Projects {
		v := c.Values(c.ProjectBase, k)
		want := c.WantProject(v)
		if len(want) == 0 {
			v["name"] = fmt.Sprintf("%s %d", v["name"], i)
		}
		instr := filepath.Join(dir, fmt.Sprintf("i%d.md", i))
		if err := os.WriteFile(instr, []byte(v["instructions"]), 0o644); err != nil {
			t.Fatal(err)
		}
		lease := v["lease"] + "m"
		if strings.Contains(v["lease"], " ") {
			lease = v["lease"]
		}
		args := []string{"project", "create", "--name", v["name"], "--rubric", "empathetic-understanding@1",
			"--overlap", v["overlap"], "--lease", lease, "--instructions-file", instr, "--annotators", v["annotators"], "--system-key", v["system_key"],
			"--evidence", v["evidence_policy"]}
		for _, f := range probe.ThresholdFields {
			args = append(args, "--"+projectFlagOf[f], v[f])
		}
		if v["epsilon"] != "" {
			args = append(args, "--epsilon", v["epsilon"])
		}
		_, err := runCmd(t, env, "", args...)
		check("project "+k.Name, err, want)
		if len(want) == 0 {
			stored[v["name"]] = v
		}
	}
	db, err := store.Open(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	js, err := db.ListJudges(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ps, err := db.ListAllProjects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := acceptedCases(c.Judges); len(js) != n {
		t.Errorf("%d judges stored, want %d", len(js), n)
	}
	if n := acceptedCases(c.Projects); len(ps) != n {
		t.Errorf("%d projects stored, want %d", len(ps), n)
	}
	checkStoredProjects(t, db, stored)
}

// checkStoredProjects holds each accepted project case's stored project
// to the case's settings.
func checkStoredProjects(t *testing.T, db *store.DB, cases map[string]map[string]string) {
	t.Helper()
	for name, v := range cases {
		p, err := db.FindProjectByName(context.Background(), name)
		if err != nil {
			t.Errorf("project %q: %v", name, err)
			continue
		}
		th, err := db.ProbeThresholds(context.Background(), p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d := settingscorpus.StoredDiffers(v, p, th); len(d) > 0 {
			t.Errorf("project %q: stored %v unlike the case: %+v", name, d, p)
		}
	}
}

func flagName(field string) string {
	if f, ok := judgeFlagOf[field]; ok {
		return f
	}
	if f, ok := projectFlagOf[field]; ok {
		return f
	}
	return field
}

func acceptedCases(cases []settingscorpus.Case) int {
	n := 0
	for _, k := range cases {
		if len(k.Refused) == 0 {
			n++
		}
	}
	return n
}
