package web_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/browsertest"
)

// docShots names every screenshot in docs/img, each taken at a laptop's
// and a phone's size (name-laptop.png, name-phone.png) by a test of this
// package. The tests always take them, into testdata/screenshots; with
// -update-docs (`make screenshots`) they also replace the committed ones,
// so the pictures in the documentation are the pages as they are.
var docShots = []string{"annotate", "report", "adjudicate", "items"}

// shootScreens writes what the screen shows of ctx's page at each of the
// two sizes, after prepare (when given) has arranged the page for that
// size. name must be one of docShots.
func shootScreens(t *testing.T, ctx context.Context, name string, prepare func(width int64)) {
	t.Helper()
	if !slices.Contains(docShots, name) {
		t.Fatalf("screenshot %q is not listed in docShots", name)
	}
	for _, s := range screens {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(s.width, s.height)); err != nil {
			t.Fatal(err)
		}
		if _, err := chromedp.Run(ctx, browsertest.Poll[bool](fmt.Sprintf(`window.innerWidth === %d`, s.width))); err != nil {
			t.Fatal(err)
		}
		eval[int](t, ctx, `window.scrollTo(0, 0); 0`)
		if prepare != nil {
			prepare(s.width)
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		dirs := []string{"testdata/screenshots"}
		if *updateDocs {
			dirs = append(dirs, "../docs/img")
		}
		for _, dir := range dirs {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+"-"+s.name+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestDocScreenshotsAreTaken: the images in docs/img are exactly the ones
// the tests take, and each is shown somewhere in the documentation, so
// none is left behind when a page goes or a picture is dropped.
func TestDocScreenshotsAreTaken(t *testing.T) {
	t.Parallel()
	var want []string
	for _, n := range docShots {
		for _, s := range screens {
			want = append(want, n+"-"+s.name+".png")
		}
	}
	entries, err := os.ReadDir("../docs/img")
	if err != nil {
		t.Fatal(err)
	}
	var have []string
	for _, e := range entries {
		have = append(have, e.Name())
	}
	slices.Sort(want)
	if !slices.Equal(have, want) {
		t.Fatalf("docs/img holds %v; the tests take %v (run make screenshots)", have, want)
	}
	var docs strings.Builder
	for _, pattern := range []string{"../README.md", "../docs/*.md"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs.Write(b)
		}
	}
	for _, f := range want {
		if !regexp.MustCompile(`img/` + regexp.QuoteMeta(f)).MatchString(docs.String()) {
			t.Errorf("docs/img/%s is shown nowhere in README.md or docs/", f)
		}
	}
}

// TestDocScreenshots takes the lead's pages for the documentation from a
// project of the coaching rubric that three people and a judge answered:
// the report, the adjudication of an item in dispute and the items
// browser.
func TestDocScreenshots(t *testing.T) {
	t.Parallel()
	a, p, lead, c := docProject(t)
	ctx := signInBrowser(t, a, lead.Email, "/login")
	err := chromedp.Do(ctx,
		chromedp.Navigate(a.srv.URL+projectPath(p, "/report")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid=summary]`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	shootScreens(t, ctx, "report", nil)

	// The first item the disagreements queue offers.
	queue := c.get(projectPath(p, "/disagreements"))
	wantStatus(t, queue, http.StatusOK)
	first := regexp.MustCompile(`href="(/projects/\d+/disagreements/\d+)"`).FindStringSubmatch(queue.body)
	if first == nil {
		t.Fatalf("no item waits in the disagreements queue:\n%.2000s", queue.body)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(a.srv.URL+first[1])); err != nil {
		t.Fatal(err)
	}
	shootScreens(t, ctx, "adjudicate", nil)

	if err := chromedp.Do(ctx, chromedp.Navigate(a.srv.URL+projectPath(p, "/browse?q=sleep&col=week"))); err != nil {
		t.Fatal(err)
	}
	shootScreens(t, ctx, "items", nil)
}

// docProject is a project of the coaching rubric with 48 items that three
// people and a judge (with long rationales) answered, gold set by the
// consensus rule and the text indexed; c is its lead's client.
func docProject(t *testing.T) (*app, *attune.Project, *attune.User, *client) {
	t.Helper()
	a := newApp(t)
	lead := a.user("lee@example.org", attune.RoleLead)
	p := a.project(lead, projectOpts{name: "Coaching pilot"})
	c := a.client()
	c.mustSignIn(lead)
	var items strings.Builder
	for i := range 48 {
		d := docDialogues[i%len(docDialogues)]
		msgs := []map[string]string{}
		for j, m := range d {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]string{"role": role, "content": m})
		}
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("coach-%03d", i+1), "messages": msgs,
			"meta": map[string]any{"source": "pilot", "week": 1 + i/16}})
		items.Write(append(line, '\n'))
	}
	wantStatus(t, c.upload(projectPath(p, "/import"), nil, "pilot.jsonl", items.String()), http.StatusSeeOther)
	keys := []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}
	rng := rand.New(rand.NewPCG(7, 11))
	pick := func(k string) string {
		switch x := rng.IntN(10); {
		case x < 7:
			return "YES"
		case x < 9 || k == "CQ8" || k == "CP2": // every conversation can be judged on these
			return "NO"
		}
		return "NA"
	}
	var b strings.Builder
	w := csv.NewWriter(&b)
	w.Write([]string{"item", "rater", "rater_kind", "rubric_item", "value", "rationale"})
	for i := range 48 {
		for _, k := range keys {
			truth := pick(k)
			for _, r := range []string{"Amara", "Ben", "Chiara"} {
				v := truth
				if rng.IntN(7) == 0 {
					v = pick(k)
				}
				w.Write([]string{fmt.Sprintf("coach-%03d", i+1), r, "human", k, v, ""})
			}
			v := truth
			if rng.IntN(5) == 0 {
				v = pick(k)
			}
			w.Write([]string{fmt.Sprintf("coach-%03d", i+1), "gpt-judge", "judge", k, v, docRationales[v]})
		}
	}
	w.Flush()
	if r := c.upload(projectPath(p, "/labels/import"), []formPart{{"confirm_warnings", "1"}}, "round1.csv", b.String()); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("labels import: %d\n%s", r.StatusCode, regexp.MustCompile(`<[^>]+>`).ReplaceAllString(r.body, " "))
	}
	c.post(projectPath(p, "/gold/auto"), nil)
	if _, err := a.db.IndexItems(t.Context(), p.ID); err != nil { // as the queued job would
		t.Fatal(err)
	}

	return a, p, lead, c
}

// docRationales are the judge's reasons, by answer.
var docRationales = map[string]string{
	"YES": "The coach's reply does what this criterion asks: it reflects the person's own words before moving on, and the question it asks is open.",
	"NO":  "The reply moves to advice before showing it has understood what the person said; the feeling named in the message is not acknowledged.",
	"NA":  "The conversation gives no occasion for this criterion: the person asks for nothing it covers.",
}

// docDialogues are short coaching conversations written for the
// screenshots: a person's message, the coach's reply, and so on.
var docDialogues = [][]string{
	{"I keep putting off my thesis chapter. Every morning I tell myself today is the day and then it's 6pm.",
		"That pattern of promising yourself each morning and then watching the day slip away sounds really draining. What tends to happen in the first hour after you sit down to write?",
		"I open the document, read the last paragraph, decide it's bad and go and check email.",
		"So the first thing you meet each day is a judgement on yesterday's work. Would it be worth trying a start that skips the rereading, even for one morning, and seeing what changes?"},
	{"I haven't been sleeping well since I started the night shifts and I'm snapping at everyone at home.",
		"Night shifts turn sleep upside down, and being short with the people you love on top of it can feel awful. What does your sleep look like on the days between shifts?"},
	{"My manager gave me feedback in front of the whole team and I can't stop replaying it.",
		"Being corrected in front of others can sting for days. What part of it keeps coming back to you most?",
		"That she said I 'always' miss the details. It's not true.",
		"It makes sense that the word 'always' landed hard, because it turns one moment into a verdict about you. Is there a way you would like to raise that with her, or would it help first to sort out what was fair in the feedback and what wasn't?"},
	{"I want to start running again but I've failed at it three times this year.",
		"It says something that you want to come back to it after three tries. What got in the way each time?"},
	{"Since the move I don't really know anyone here. Weekends are the worst.",
		"Moving somewhere new and having the weekends stretch out empty can be very lonely. What did your weekends used to have in them before the move?",
		"Football with friends, mostly. And my sister lived nearby.",
		"Those are two big things to lose at once: a team and family close by. Would looking for a local five-a-side group be a first step you would want to explore, or does something else feel more pressing?"},
	{"I think I want to change careers but I'm scared it's too late at 41.",
		"Wanting a change and fearing you have left it too late can pull hard in opposite directions. What draws you to the new work?"},
}
