package probes_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/probes"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

var policy = attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("127.0.0.1/32")}}}

// calibrationItems are 20 replies whose lengths climb by doublings (20 to
// 320 characters, four items each), with a markdown mark and a user turn
// for every rewrite to act on. Their gold is the same for all, so the
// people's slope on length is 0.
func calibrationItems() string {
	var b strings.Builder
	for i := range 20 {
		n := 20 << (i % 5)
		reply := fmt.Sprintf("**Item %d.** ", i)
		for len(reply) < n {
			reply += "I hear how hard this is for you. "
		}
		reply = reply[:n]
		fmt.Fprintf(&b, `{"id":"c%d","messages":[{"role":"user","content":"I lost my job (%d) and I feel  lost."},{"role":"assistant","content":%q}]}`+"\n", i, i, reply)
	}
	return b.String()
}

type probeFixture struct {
	db      *store.DB
	flow    *runs.Flow
	runner  *judge.Runner
	project *attune.Project
	judge   *attune.Judge
	lead    *attune.User
}

// newProbeFixture is a project of calibration items with gold, and a
// judge on a fake endpoint that behaves as b at the given temperature.
func newProbeFixture(t *testing.T, b fakellm.Behaviour, temperature float64) *probeFixture {
	t.Helper()
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
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "probed", RubricVersionID: rv.ID, Overlap: 1, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Import(ctx, db, p, strings.NewReader(calibrationItems()), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	lead, err := db.CreateUser(ctx, nil, store.NewUser{Email: "lead@example.org", Role: attune.RoleLead, PasswordHash: "$argon2id$x"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		src := "c" + strconv.Itoa(i)
		var id int64
		if err := db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND source_id = $2`, p.ID, src).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if err := db.Adjudicate(ctx, store.Adjudication{ProjectID: p.ID, ItemID: id, ActorID: lead.ID, Answers: map[string]string{"understanding": "3"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AddCalibration(ctx, nil, p.ID, src, nil); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(fakellm.New(fakellm.Options{Behaviour: b, Seed: 7}))
	t.Cleanup(srv.Close)
	j, err := db.CreateJudge(ctx, nil, policy, store.NewJudge{Name: "j-" + string(b), Provider: "openai", BaseURL: srv.URL + "/v1", Model: "fake-1",
		Settings: attune.JudgeSettings{Temperature: &temperature, MaxTokens: 100, Concurrency: 4}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := judge.NewRunner(db, judge.RunnerOptions{Policy: policy, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &probeFixture{db: db, flow: runs.New(db, r), runner: r, project: p, judge: j, lead: lead}
}

// probe starts a probe as a lead would, works it to its end and reads it.
func (f *probeFixture) probe(t *testing.T) *probes.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in, errs, err := f.flow.CheckProbe(ctx, f.project, runs.ProbeFields{Judge: strconv.FormatInt(f.judge.ID, 10)})
	if err != nil || errs != nil {
		t.Fatalf("check: %v %v", errs, err)
	}
	run, err := f.flow.StartProbe(ctx, &f.lead.ID, f.project, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.runner.Stop(context.Background())
	done, err := f.runner.Wait(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.Status != attune.RunCompleted || done.Kind != attune.RunProbe || done.ProbeK != probe.MinRetestK {
		t.Fatalf("probe ended %s (%s), kind %s, k %d", done.Status, done.Reason, done.Kind, done.ProbeK)
	}
	res, err := probes.Read(ctx, f.db, f.project, done)
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 20 {
		t.Fatalf("%d items read, want 20", res.Items)
	}
	// A probe's answers are no labels: the judge has answered nothing.
	var labels int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM labels l JOIN raters r ON r.id = l.rater_id WHERE r.kind = 'judge'`).Scan(&labels); err != nil {
		t.Fatal(err)
	}
	if labels != 0 {
		t.Fatalf("the probe left %d judge labels", labels)
	}
	return res
}

// verdicts are a result's verdicts by probe: "retest", each rewrite, "length".
func verdicts(r *probes.Result) map[string]probe.Verdict {
	out := map[string]probe.Verdict{}
	for _, x := range r.Summary.Retest {
		out["retest"] = x.Verdict
	}
	for _, x := range r.Summary.Perturbation {
		out[string(x.Rewrite)] = x.Verdict
	}
	for _, x := range r.Summary.Length {
		out["length"] = x.Verdict
	}
	return out
}

// TestProbesTellJudgesApart: over real HTTP, through the judge runner, each
// fake judge fails the probes its behaviour should fail and passes the
// rest.
func TestProbesTellJudgesApart(t *testing.T) {
	t.Parallel()
	all := []string{"retest", "normalise", "rename", "append", "length"}
	for _, tc := range []struct {
		behaviour   fakellm.Behaviour
		temperature float64
		unstable    []string
	}{
		{fakellm.BehaveStable, 1, nil},
		{fakellm.BehaveRandom, 1, []string{"retest", "normalise", "rename", "append"}},
		{fakellm.BehaveLength, 0, []string{"length"}},
		{fakellm.BehaveNames, 0, []string{"rename"}},
	} {
		t.Run(string(tc.behaviour), func(t *testing.T) {
			t.Parallel()
			f := newProbeFixture(t, tc.behaviour, tc.temperature)
			res := f.probe(t)
			got := verdicts(res)
			for _, name := range all {
				want := probe.Stable
				for _, u := range tc.unstable {
					if u == name {
						want = probe.Unstable
					}
				}
				if got[name] != want {
					t.Errorf("%s: %s, want %s (%+v)", name, got[name], want, res.Summary)
				}
			}
			if res.Unstable != (len(tc.unstable) > 0) {
				t.Errorf("unstable %v, failed %v", res.Unstable, res.Failed)
			}
			if tc.behaviour == fakellm.BehaveStable {
				if rt := res.Summary.Retest[0]; rt.Changed != 0 || rt.K != 3 || rt.Kappa == nil || *rt.Kappa < 0.99 {
					t.Errorf("stable retest %+v, kappa %v", rt, rt.Kappa)
				}
				if l := res.Summary.Length[0].Length; !l.Defined || l.Difference == nil || l.Low == nil || l.High == nil {
					t.Errorf("stable length %+v", l)
				}
			}
		})
	}
}
