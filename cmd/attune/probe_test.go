package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/probes"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
)

// TestProbeCommand: `attune probe --wait` probes a judge on the project's
// calibration items against the fake provider and prints the results, as
// JSON and as text, which `probe results` reads again: a judge answering
// at random at a temperature above 0 is unstable on the retest, one at
// temperature 0 is not. A k below 3, an unknown judge or project and a
// project without calibration items are refused naming the problem, and
// start nothing.
func TestProbeCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	db, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	ref, _ := rubric.ParseRef("empathetic-understanding@1")
	_, rv, err := db.FindRubric(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "P", RubricVersionID: rv.ID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	data := `{"id":"a","messages":[{"role":"user","content":"I failed my driving test."},{"role":"assistant","content":"That is disappointing. How do you feel?"}]}
{"id":"b","messages":[{"role":"user","content":"My friend ignored me."},{"role":"assistant","content":"Maybe they were busy."}]}
{"id":"c","messages":[{"role":"user","content":"I got the job!"},{"role":"assistant","content":"Congratulations, you worked for it."}]}
`
	if _, err := importer.Import(ctx, db, p, strings.NewReader(data), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(fakellm.New(fakellm.Options{Behaviour: fakellm.BehaveRandom}))
	t.Cleanup(model.Close)
	host := strings.TrimPrefix(model.URL, "http://")
	hosts, err := attune.ParseHostRules(host)
	if err != nil {
		t.Fatal(err)
	}
	for name, temp := range map[string]float64{"Random": 1, "Steady": 0} {
		if _, err := db.CreateJudge(ctx, nil, attune.JudgePolicy{Hosts: hosts}, store.NewJudge{Name: name, Provider: "openai", BaseURL: model.URL + "/v1", Model: "fake-1",
			Settings: attune.JudgeSettings{Temperature: &temp, Concurrency: 2, Prices: attune.Prices{InputPerMTok: 1, OutputPerMTok: 2}}}); err != nil {
			t.Fatal(err)
		}
	}
	env := envFor(dbURL, "ATTUNE_JUDGE_HOSTS", host)
	refused := func(want string, args ...string) {
		t.Helper()
		out, err := runCmd(t, env, "", args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v\n%s\nwant an error naming %q", args, err, out, want)
		}
	}
	refused("no calibration items yet", "probe", "--project", "P", "--judge", "Random")
	if _, err := db.Pool().Exec(ctx, `INSERT INTO calibration_items (item_id, project_id) SELECT id, project_id FROM items WHERE project_id = $1`, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, env, "", "probe", "thresholds", "--project", "P", "--min-items", "2"); err != nil {
		t.Fatal(err)
	}
	_, kMsg := runs.ProbeKProblem("2")
	refused("--k: "+kMsg, "probe", "--project", "P", "--judge", "Random", "--k", "2")
	refused("--k: "+kMsg, "probe", "start", "--project", "P", "--judge", "Random", "--k", "many")
	refused(`no judge is named "Nobody"`, "probe", "--project", "P", "--judge", "Nobody")
	refused(`no project is named "Q"`, "probe", "--project", "Q", "--judge", "Random")
	refused("needs --project and --judge", "probe", "--project", "P")
	refused(`has no probe`, "probe", "results", "--project", "P", "--judge", "Random")
	j, err := db.FindJudgeByName(ctx, "Random")
	if err != nil {
		t.Fatal(err)
	}
	if list, err := db.ListProbes(ctx, p.ID, j.ID); err != nil || len(list) != 0 {
		t.Fatalf("refused starts stored probes: %v %v", list, err)
	}

	probeJSON := func(out string) probes.Result {
		t.Helper()
		var res probes.Result
		// The JSON, before what the command says on stderr.
		if err := json.NewDecoder(strings.NewReader(out[strings.Index(out, "{"):])).Decode(&res); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return res
	}
	out, err := runCmd(t, env, "", "probe", "--project", "P", "--judge", "Random", "--k", "4", "--wait", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	random := probeJSON(out)
	if random.Run.Status != attune.RunCompleted || random.Run.K != 4 || random.Items != 3 || !random.Unstable || !strings.Contains(strings.Join(random.Failed, " "), "retest") {
		t.Fatalf("the random judge's probe: %+v", random)
	}
	text, err := runCmd(t, env, "", "probe", "results", "--project", "P", "--judge", "Random")
	if err != nil || !strings.Contains(text, "k 4") || !strings.Contains(text, "unstable: ") || !strings.Contains(text, "): "+string(probe.Unstable)) {
		t.Errorf("probe results:\n%s\n%v", text, err)
	}
	again, err := runCmd(t, env, "", "probe", "results", "--project", "P", "--judge", "Random", "--json")
	if err != nil || probeJSON(again).Run.ID != random.Run.ID {
		t.Errorf("probe results --json: %v\n%s", err, again)
	}
	out, err = runCmd(t, env, "", "probe", "--project", "P", "--judge", "Steady", "--wait")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "no probe failed its threshold") || !strings.Contains(out, "k 3") || strings.Contains(out, "unstable:") {
		t.Errorf("the steady judge's probe:\n%s", out)
	}
}
