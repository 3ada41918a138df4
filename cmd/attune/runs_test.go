package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/password"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// fieldError is a field's message on a page's form.
var fieldError = regexp.MustCompile(`data-testid="error-([a-z_]+)">([^<]*)<`)

// startVerdict is what starting a run came to, as any adapter tells it.
type startVerdict struct {
	outcome string // "refused" (a field's message), "conflict" or "started"
	field   string // the refused field
	message string // a fragment of the message shown
}

// TestStartRunSameEverywhere starts judge runs through the page (real
// HTTP, signed in), the API (a token) and the command line, against one
// running attune, with the same inputs: each refuses a bad limit, a zero
// limit, a zero budget and a second active run with the same verdict and
// message and stores nothing, and each stores the same run for a good start.
func TestStartRunSameEverywhere(t *testing.T) {
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
	const pw = "a-lead-password"
	hash, err := password.Hash(pw, password.Params{MemoryKiB: 64, Time: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	lead, err := db.CreateUser(ctx, nil, store.NewUser{Email: "lead@example.org", Name: "Lee", Role: attune.RoleLead, PasswordHash: hash})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddMember(ctx, nil, p.ID, lead.ID, attune.MemberLead); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.CreateAPIToken(ctx, nil, lead.ID, "runs", false)
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(fakellm.New(fakellm.Options{}))
	t.Cleanup(model.Close)
	hosts, err := attune.ParseHostRules(strings.TrimPrefix(model.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	policy := attune.JudgePolicy{Hosts: hosts}
	newJudge := func(name string) *attune.Judge {
		t.Helper()
		j, err := db.CreateJudge(ctx, nil, policy, store.NewJudge{Name: name, Provider: "openai", BaseURL: model.URL + "/v1", Model: "fake-1",
			Settings: attune.JudgeSettings{Concurrency: 1, Prices: attune.Prices{InputPerMTok: 1, OutputPerMTok: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	env := envFor(dbURL, "ATTUNE_JUDGE_HOSTS", strings.TrimPrefix(model.URL, "http://"))
	s := serve(t, env)

	// The page, signed in as the lead; redirects followed, so that a
	// refusal shown after one is read where the lead reads it.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	post := func(path string, form url.Values) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, s.base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", s.base)
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b), resp.Request.URL.Path
	}
	if status, body, _ := post("/login", url.Values{"email": {"lead@example.org"}, "password": {pw}}); status != http.StatusOK {
		t.Fatalf("sign in: %d\n%.300s", status, body)
	}

	type input struct{ limit, budget string }
	// Each adapter answers with its verdict, and the id of the run it
	// started (0 for none).
	adapters := map[string]func(j *attune.Judge, in input) (startVerdict, int64){
		"page": func(j *attune.Judge, in input) (startVerdict, int64) {
			status, body, at := post(fmt.Sprintf("/projects/%d/runs/confirm", p.ID),
				url.Values{"judge": {strconv.FormatInt(j.ID, 10)}, "limit": {in.limit}, "budget": {in.budget}})
			if status == http.StatusUnprocessableEntity {
				// The form again, the message under the refused field.
				m := fieldError.FindStringSubmatch(body)
				if m == nil {
					t.Fatalf("page: 422 without a field's message\n%.500s", body)
				}
				return startVerdict{outcome: "refused", field: m[1], message: html.UnescapeString(m[2])}, 0
			}
			prefix := fmt.Sprintf("/projects/%d/runs/", p.ID)
			if id, err := strconv.ParseInt(strings.TrimPrefix(at, prefix), 10, 64); err == nil && strings.HasPrefix(at, prefix) {
				return startVerdict{outcome: "started"}, id
			}
			if status == http.StatusOK && at == fmt.Sprintf("/projects/%d", p.ID) {
				return startVerdict{outcome: "conflict", message: body}, 0
			}
			t.Fatalf("page: %d at %s\n%.500s", status, at, body)
			return startVerdict{}, 0
		},
		"api": func(j *attune.Judge, in input) (startVerdict, int64) {
			b, _ := json.Marshal(map[string]any{"judge": j.ID, "limit": in.limit, "budget_usd": in.budget})
			req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/projects/%d/runs", s.base, p.ID), bytes.NewReader(b))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			var out struct {
				ID     int64             `json:"id"`
				Error  string            `json:"error"`
				Fields map[string]string `json:"fields"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("api: %d %s: %v", resp.StatusCode, raw, err)
			}
			switch resp.StatusCode {
			case http.StatusCreated:
				return startVerdict{outcome: "started"}, out.ID
			case http.StatusUnprocessableEntity:
				for f, m := range out.Fields {
					return startVerdict{outcome: "refused", field: f, message: m}, 0
				}
			case http.StatusConflict:
				return startVerdict{outcome: "conflict", message: string(raw)}, 0
			}
			t.Fatalf("api: %d %s", resp.StatusCode, raw)
			return startVerdict{}, 0
		},
		"cli": func(j *attune.Judge, in input) (startVerdict, int64) {
			args := []string{"judge", "run", "--project", "P", "--judge", j.Name}
			if in.limit != "" {
				args = append(args, "--limit", in.limit)
			}
			if in.budget != "" {
				args = append(args, "--budget", in.budget)
			}
			var out, errOut strings.Builder
			err := run(ctx, args, env, strings.NewReader(""), &out, &errOut)
			if err == nil {
				id, perr := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
				if perr != nil {
					t.Fatalf("cli: printed %q", out.String())
				}
				return startVerdict{outcome: "started"}, id
			}
			msg := err.Error()
			if f, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(f, "--") && !strings.Contains(f, " ") {
				return startVerdict{outcome: "refused", field: strings.TrimPrefix(f, "--"), message: rest}, 0
			}
			if strings.Contains(msg, "of this judge is") {
				return startVerdict{outcome: "conflict", message: msg}, 0
			}
			t.Fatalf("cli: %v", err)
			return startVerdict{}, 0
		},
	}

	shared := newJudge("J")
	// An active run of J that no worker takes (it is never queued), so
	// that every adapter's second start meets it.
	blocking := newJudge("busy")
	active, err := db.CreateRun(ctx, nil, store.NewRun{JudgeID: blocking.ID, ProjectID: p.ID})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		in   input
		busy bool
		want startVerdict
	}{
		{"limit abc", input{limit: "abc"}, false, startVerdict{"refused", "limit", "Not a whole number: abc."}},
		{"limit 0", input{limit: "0"}, false, startVerdict{"refused", "limit", "Enter a whole number of items from 1 up"}},
		{"budget 0", input{budget: "0"}, false, startVerdict{"refused", "budget", "Enter an amount in dollars above 0"}},
		{"second active run", input{}, true, startVerdict{"conflict", "", fmt.Sprintf("Run %d of this judge is queued on this project", active.ID)}},
		{"good start", input{limit: "2", budget: "5"}, false, startVerdict{"started", "", ""}},
	}
	countRuns := func() int {
		t.Helper()
		var n int
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_runs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	type storedRun struct {
		limit, items, prompt int
		budget               float64
		estimated            bool
	}
	stored := map[string]storedRun{}
	for _, c := range cases {
		for _, name := range []string{"page", "api", "cli"} {
			j := shared
			switch {
			case c.busy:
				j = blocking
			case c.want.outcome == "started":
				j = newJudge("good-" + name) // each adapter's own: a run of J would be active
			}
			before := countRuns()
			got, id := adapters[name](j, c.in)
			if got.outcome != c.want.outcome || !strings.Contains(got.message, c.want.message) || got.field != c.want.field {
				t.Errorf("%s through the %s: %+v, want %+v", c.name, name, got, c.want)
			}
			if c.want.outcome != "started" {
				if n := countRuns(); n != before {
					t.Errorf("%s through the %s stored %d runs", c.name, name, n-before)
				}
				continue
			}
			r, err := db.FindRun(ctx, id)
			if err != nil {
				t.Fatalf("%s through the %s: run %d: %v", c.name, name, id, err)
			}
			var sr storedRun
			if r.ItemLimit != nil {
				sr.limit = *r.ItemLimit
			}
			if r.BudgetUSD != nil {
				sr.budget = *r.BudgetUSD
			}
			sr.items, sr.prompt, sr.estimated = r.ItemsTotal, r.PromptVersion, r.EstimateUSD > 0
			stored[name] = sr
		}
	}
	want := storedRun{limit: 2, items: 2, prompt: 1, budget: 5, estimated: true}
	for name, sr := range stored {
		if sr != want {
			t.Errorf("the %s stored %+v, want %+v as the others", name, sr, want)
		}
	}
	if len(stored) != 3 {
		t.Errorf("good starts stored by %d adapters, want 3", len(stored))
	}
}
