package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

// TestDrawCommand draws two v1 items with a given seed, prints them, and
// the estimate then says its sample rests on that draw once people
// labelled exactly those; a second project with the same items and seed
// draws the same ones. Bad k and seeds are refused naming their flag.
func TestDrawCommand(t *testing.T) {
	t.Parallel()
	env := envFor(dbtest.NewURL(t))
	must := func(args ...string) string {
		t.Helper()
		out, err := runCmd(t, env, "", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return out
	}
	var items strings.Builder
	for i, sys := range []string{"v1", "v1", "v1", "v1", "v2", "v2"} {
		fmt.Fprintf(&items, `{"id":"d%d","messages":[{"role":"user","content":"I feel low %d"},{"role":"assistant","content":"That sounds hard."}],"meta":{"system":%q}}`+"\n", i, i, sys)
	}
	file := writeFile(t, "items.jsonl", items.String())
	for _, name := range []string{"Pilot", "Twin"} {
		must("project", "create", "--name", name, "--rubric", "empathetic-dialogue@2", "--overlap", "1")
		must("import", "--project", name, file)
	}
	out := must("draw", "--project", "Pilot", "--k", "2", "--system", "v1", "--seed", "5")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "2 items sent") || !strings.Contains(lines[0], "seed 5") {
		t.Fatalf("draw printed:\n%s", out)
	}
	drawn := lines[1:]
	for _, id := range drawn {
		if id != "d0" && id != "d1" && id != "d2" && id != "d3" {
			t.Errorf("drew %q, not a v1 item", id)
		}
	}
	if twin := must("draw", "--project", "Twin", "--k", "2", "--system", "v1", "--seed", "5"); strings.Join(strings.Split(strings.TrimSpace(twin), "\n")[1:], ",") != strings.Join(drawn, ",") {
		t.Errorf("the same seed drew\n%s\nin the twin, want %v", twin, drawn)
	}

	labels := "item,rater,rater_kind,rubric_item,value\n"
	for i := range 6 {
		labels += fmt.Sprintf("d%d,@gpt,judge,emotion,%d\n", i, 2+i%3)
	}
	for i, id := range drawn {
		labels += fmt.Sprintf("%s,ann,human,emotion,%d\n", id, 3+i)
	}
	must("labels", "import", "--project", "Pilot", writeFile(t, "labels.csv", labels))
	var est struct{ Sample string }
	if err := json.Unmarshal([]byte(must("estimate", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion")), &est); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(est.Sample, "drawn by attune") || !strings.Contains(est.Sample, "seeds 5") || !strings.Contains(est.Sample, "2 of the 2 drawn items") {
		t.Errorf("sample = %q", est.Sample)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--project", "Pilot"}, "--k"},
		{[]string{"--project", "Pilot", "--k", "0"}, "--k: k is 0"},
		{[]string{"--project", "Pilot", "--k", "-1"}, "--k: k is -1"},
		{[]string{"--project", "Pilot", "--k", "3", "--system", "v1"}, `--k: k is 3, but only 2 judge-only items of system "v1"`},
		{[]string{"--project", "Pilot", "--k", "1", "--seed", "abc"}, "--seed"},
		{[]string{"--project", "Nowhere", "--k", "1"}, "Nowhere"},
	} {
		if _, err := runCmd(t, env, "", append([]string{"draw"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error saying %s", c.args, err, c.want)
		}
	}
}
