package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

// TestFailuresCommand runs `attune failures` on three items of "emotion":
// r0 people 4 4, judge 4; r1 people 5 3, judge 3; r2 one person 2, judge
// 1. By people: one agreed item, matched; one split item, the judge
// matching half the people who match each other never; one single item,
// missed. The JSON is the API's map; the text names each band; a missing
// flag is named.
func TestFailuresCommand(t *testing.T) {
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
	must("project", "create", "--name", "Pilot", "--rubric", "empathetic-dialogue@2", "--overlap", "2")
	items := `{"id":"r0","messages":[{"role":"user","content":"I feel low"},{"role":"assistant","content":"That sounds hard."}],"meta":{"system":"v1"}}
{"id":"r1","messages":[{"role":"user","content":"Work is bad"},{"role":"assistant","content":"Tell me more."}],"meta":{"system":"v1"}}
{"id":"r2","messages":[{"role":"user","content":"I moved"},{"role":"assistant","content":"Moving is lonely."}],"meta":{"system":"v2"}}
`
	must("import", "--project", "Pilot", writeFile(t, "items.jsonl", items))
	must("labels", "import", "--project", "Pilot", writeFile(t, "labels.csv", "item,rater,rater_kind,rubric_item,value\n"+
		"r0,ann,human,emotion,4\nr0,bo,human,emotion,4\nr0,@gpt,judge,emotion,4\n"+
		"r1,ann,human,emotion,5\nr1,bo,human,emotion,3\nr1,@gpt,judge,emotion,3\n"+
		"r2,ann,human,emotion,2\nr2,@gpt,judge,emotion,1\n"))

	var got struct {
		Bands []struct {
			Dimension, Band               string
			Items, Agreed, Matched, Split int
			Single                        int
			SingleMatched                 int `json:"single_matched"`
			Share                         *float64
			JudgeShare                    *float64 `json:"judge_share"`
			PeopleShare                   *float64 `json:"people_share"`
		}
	}
	out := must("failures", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--format", "json")
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Bands) < 3 {
		t.Fatalf("bands:\n%s", out)
	}
	agreed, split, single := got.Bands[0], got.Bands[1], got.Bands[2]
	if agreed.Band != "people agreed" || agreed.Agreed != 1 || agreed.Matched != 1 || agreed.Share == nil || *agreed.Share != 1 {
		t.Errorf("agreed: %+v", agreed)
	}
	if split.Band != "people split" || split.Split != 1 || split.JudgeShare == nil || *split.JudgeShare != 0.5 || *split.PeopleShare != 0 {
		t.Errorf("split: %+v", split)
	}
	if single.Band != "one person" || single.Single != 1 || single.SingleMatched != 0 {
		t.Errorf("single: %+v", single)
	}
	text := must("failures", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion")
	for _, want := range []string{"by people", "people agreed", "by system", "v2", "one person 1: matched 0",
		"length: not shown: 3 items with a reply and numeric answers from the judge and people; the probe needs at least 10"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--project", "Pilot", "--rubric-item", "emotion"}, "--judge"},
		{[]string{"--project", "Pilot", "--judge", "@gpt"}, "--rubric-item"},
		{[]string{"--project", "Pilot", "--judge", "nobody", "--rubric-item", "emotion"}, `"nobody"`},
		{[]string{"--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--format", "xml"}, "--format"},
	} {
		if _, err := runCmd(t, env, "", append([]string{"failures"}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}

	// The length probe on the hand-worked example of internal/failmap
	// (TestLengthBiasWorked): replies of 2, 4, …, 1024 characters, the
	// judge 2 3 2 3 3 4 3 4 4 5, people 3,3 then 3,4; slopes 3/11 and
	// 5/66 per doubling, difference 13/66 in [0.0429, 0.3510].
	must("project", "create", "--name", "Lengths", "--rubric", "empathetic-dialogue@2", "--overlap", "2")
	var lengthItems, lengthLabels strings.Builder
	lengthLabels.WriteString("item,rater,rater_kind,rubric_item,value\n")
	for i, j := range []string{"2", "3", "2", "3", "3", "4", "3", "4", "4", "5"} {
		fmt.Fprintf(&lengthItems, `{"id":"l%d","messages":[{"role":"user","content":"How do I cope?"},{"role":"assistant","content":%q}]}`+"\n",
			i, strings.Repeat("a", 1<<(i+1)))
		bo := "3"
		if i >= 5 {
			bo = "4"
		}
		fmt.Fprintf(&lengthLabels, "l%d,ann,human,emotion,3\nl%d,bo,human,emotion,%s\nl%d,@gpt,judge,emotion,%s\n", i, i, bo, i, j)
	}
	must("import", "--project", "Lengths", writeFile(t, "lengths.jsonl", lengthItems.String()))
	must("labels", "import", "--project", "Lengths", writeFile(t, "length-labels.csv", lengthLabels.String()))
	text = must("failures", "--project", "Lengths", "--judge", "@gpt", "--rubric-item", "emotion")
	for _, want := range []string{
		"length: judge slope +0.273 per doubling of reply length, people +0.076, difference +0.197 [+0.043, +0.351] over 10 items",
		"  the judge rewards longer replies more than people do",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	var lengthJSON struct {
		Length struct {
			Defined    bool
			Difference *float64
			Verdict    string
		}
	}
	out = must("failures", "--project", "Lengths", "--judge", "@gpt", "--rubric-item", "emotion", "--format", "json")
	if err := json.Unmarshal([]byte(out), &lengthJSON); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if l := lengthJSON.Length; !l.Defined || l.Difference == nil || math.Abs(*l.Difference-13.0/66) > 1e-9 || l.Verdict == "" {
		t.Errorf("length in JSON: %+v\n%s", l, out)
	}

	// Trust or escalate: a labels import records no certainty, so nothing
	// is calibrated; the terms are checked before anything is read.
	if text := must("trust", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion"); !strings.Contains(text, "no threshold guaranteed") || !strings.Contains(text, "3 without certainty") {
		t.Errorf("trust:\n%s", text)
	}
	if _, err := runCmd(t, env, "", "trust", "--project", "Pilot", "--judge", "@gpt", "--rubric-item", "emotion", "--target", "120"); err == nil || !strings.Contains(err.Error(), "--target") {
		t.Errorf("--target 120: %v", err)
	}
}
