package judge_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
)

func TestSchemaFor(t *testing.T) {
	t.Parallel()
	type prop struct {
		Type  string         `json:"type"`
		Enum  []rubric.Value `json:"enum"`
		Items *struct {
			Type    string `json:"type"`
			Minimum int    `json:"minimum"`
		} `json:"items"`
	}
	type doc struct {
		Type                 string          `json:"type"`
		Properties           map[string]prop `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties *bool           `json:"additionalProperties"`
	}
	decode := func(t *testing.T, s judge.Schema) doc {
		t.Helper()
		var d doc
		if err := json.Unmarshal(s.JSON, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// turnsOK: the turn evidence is an array of turn numbers from 1, and
	// required, since strict structured output takes no optional property.
	turnsOK := func(d doc) bool {
		tp, ok := d.Properties["turns"]
		return ok && tp.Type == "array" && tp.Items != nil && tp.Items.Type == "integer" && tp.Items.Minimum == 1 &&
			slices.Equal(d.Required, []string{"reasoning", "answer", "turns"})
	}
	d := builtin(t, "coaching-conversation@2.0")
	for _, tc := range []struct {
		key  string
		enum []rubric.Value
	}{
		{"CQ1", []rubric.Value{"YES", "NO", "NA"}},
		{"CQ8", []rubric.Value{"YES", "NO"}}, // NA is invalid on CQ8
		{"CP2", []rubric.Value{"YES", "NO"}},
	} {
		s := judge.SchemaFor(d, item(t, d, tc.key))
		if s.Name != "answer_"+tc.key {
			t.Errorf("%s: name %q", tc.key, s.Name)
		}
		doc := decode(t, s)
		if doc.Type != "object" || len(doc.Properties) != 3 || doc.Properties["reasoning"].Type != "string" ||
			!slices.Equal(doc.Properties["answer"].Enum, tc.enum) || !turnsOK(doc) ||
			doc.AdditionalProperties == nil || *doc.AdditionalProperties {
			t.Errorf("%s: schema %s", tc.key, s.JSON)
		}
		// The model writes properties in the schema's order: reasoning
		// first, the turns after the answer they go with.
		r, a, tu := strings.Index(string(s.JSON), `"reasoning":{`), strings.Index(string(s.JSON), `"answer":{`), strings.Index(string(s.JSON), `"turns":{`)
		if r < 0 || a < r || tu < a {
			t.Errorf("%s: reasoning, answer, turns must come in that order: %s", tc.key, s.JSON)
		}
		if !strings.Contains(string(s.JSON), "Only when your answer is NO") {
			t.Errorf("%s: the turns' description does not say which answer takes them: %s", tc.key, s.JSON)
		}
	}
	likert := builtin(t, "empathetic-dialogue@2")
	s := judge.SchemaFor(likert, item(t, likert, "overall"))
	if !strings.Contains(string(s.JSON), `"enum":["1","2","3","4","5"]`) || !turnsOK(decode(t, s)) ||
		!strings.Contains(string(s.JSON), "Only when your answer is 1 or 2") {
		t.Errorf("likert schema %s", s.JSON)
	}
	// A single-question rubric takes no evidence: no turns are asked for.
	single := builtin(t, "empathetic-understanding@1")
	sd := decode(t, judge.SchemaFor(single, &single.Items[0]))
	if _, ok := sd.Properties["turns"]; ok || !slices.Equal(sd.Required, []string{"reasoning", "answer"}) {
		t.Errorf("single schema %+v", sd)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	crit := builtin(t, "coaching-conversation@2.0")
	likert := builtin(t, "empathetic-dialogue@2")
	for _, tc := range []struct {
		name       string
		def        *rubric.Definition
		key        string
		text       string
		structured bool
		want       rubric.Value
		method     string
		reasoning  string
		note       bool
		turns      []int
		// problem is a part of the ParseError's problem when want is "".
		problem string
	}{
		{name: "bare", def: crit, key: "CQ1", text: "YES", want: "YES", method: "parsed"},
		{name: "case and full stop", def: crit, key: "CQ1", text: " yes.\n", want: "YES", method: "parsed"},
		{name: "structured", def: crit, key: "CQ1", text: `{"reasoning":"Listens well.","answer":"NO"}`, structured: true, want: "NO", method: "structured", reasoning: "Listens well."},
		{name: "JSON without structured output", def: crit, key: "CQ1", text: `{"reasoning":"r","answer":"NA"}`, want: "NA", method: "parsed", reasoning: "r"},
		{name: "structured reply in a fence", def: crit, key: "CQ1", text: "Here:\n```json\n{\"answer\": \"NA\", \"reasoning\": \"short\"}\n```", structured: true, want: "NA", method: "tolerant", reasoning: "short"},
		{name: "JSON field score", def: likert, key: "emotion", text: `{"score": 5}`, want: "5", method: "parsed"},
		{name: "reasoning then answer", def: crit, key: "CQ1", text: "The assistant understands throughout.\nAnswer: YES", want: "YES", method: "tolerant", reasoning: "The assistant understands throughout."},
		{name: "emphasis", def: crit, key: "CQ3", text: "**Answer:** NO", want: "NO", method: "tolerant"},
		{name: "last of several", def: crit, key: "CQ1", text: "Answer: NO\nOn reflection, Answer: YES", want: "YES", method: "tolerant"},
		{name: "bare word in prose", def: crit, key: "CQ1", text: "There is no harm here, so my verdict stands: YES", want: "YES", method: "tolerant"},
		{name: "last line alone", def: crit, key: "CQ1", text: "It listens.\n\n*Yes*", want: "YES", method: "tolerant", reasoning: "It listens."},
		{name: "NA where invalid is read and noted", def: crit, key: "CQ8", text: "NA", want: "NA", method: "parsed", note: true},
		{name: "likert bare", def: likert, key: "emotion", text: "4", want: "4", method: "parsed"},
		{name: "likert 4.0", def: likert, key: "emotion", text: "4.0", want: "4", method: "parsed"},
		{name: "fraction", def: likert, key: "emotion", text: "3/5", want: "3", method: "tolerant"},
		{name: "score label", def: likert, key: "safety", text: "Score: 4", want: "4", method: "tolerant"},
		{name: "out of", def: likert, key: "safety", text: "I'd rate it 4 out of 5.", want: "4", method: "tolerant"},
		{name: "range is not the answer", def: likert, key: "safety", text: "On the 1-5 scale the reply earns a 2 overall", want: "2", method: "tolerant"},
		{name: "rating in emphasis", def: likert, key: "overall", text: "Rating: **5**", want: "5", method: "tolerant"},
		{name: "empty", def: crit, key: "CQ1", text: "  \n", problem: "the reply was empty; the answer must be one of YES, NO, NA"},
		{name: "none", def: crit, key: "CQ1", text: "Hmm, hard to say.", problem: "the answer must be one of YES, NO, NA; I found none"},
		{name: "not an answer", def: crit, key: "CQ8", text: "MAYBE", problem: `the answer must be one of YES, NO; I found "MAYBE"`},
		{name: "structured answer outside the enum", def: crit, key: "CQ1", text: `{"reasoning":"x","answer":"MAYBE"}`, structured: true, problem: `I found "MAYBE"`},
		{name: "likert out of range", def: likert, key: "emotion", text: "7", problem: `the answer must be one of 1, 2, 3, 4, 5; I found "7"`},
		{name: "likert yes", def: likert, key: "emotion", text: "Yes", problem: "I found none"},
		{name: "likert prose", def: likert, key: "emotion", text: "The reply is warm and specific.", problem: "I found none"},
		// Turn evidence goes with a failing answer only, as a person's does.
		{name: "turns on NO", def: crit, key: "CQ1", text: `{"reasoning":"r","answer":"NO","turns":[2,1]}`, structured: true, want: "NO", method: "structured", turns: []int{2, 1}},
		{name: "turns on likert 2", def: likert, key: "emotion", text: `{"answer":"2","turns":[3]}`, structured: true, want: "2", method: "structured", turns: []int{3}},
		{name: "no turns on NO", def: crit, key: "CQ1", text: `{"reasoning":"r","answer":"NO","turns":[]}`, structured: true, want: "NO", method: "structured"},
		{name: "null turns", def: crit, key: "CQ1", text: `{"answer":"NO","turns":null}`, structured: true, want: "NO", method: "structured"},
		{name: "turns in tolerant JSON", def: crit, key: "CQ1", text: "Here:\n{\"answer\": \"NO\", \"turns\": [1]}", want: "NO", method: "tolerant", turns: []int{1}},
		{name: "turns on YES", def: crit, key: "CQ1", text: `{"reasoning":"r","answer":"YES","turns":[2]}`, structured: true, problem: "turn evidence goes only with NO"},
		{name: "turns on likert 3", def: likert, key: "emotion", text: `{"answer":"3","turns":[1]}`, structured: true, problem: "level of 2 or less"},
		{name: "turn 0", def: crit, key: "CQ1", text: `{"answer":"NO","turns":[0]}`, structured: true, problem: "turn 0 does not exist"},
		{name: "turn twice", def: crit, key: "CQ1", text: `{"answer":"NO","turns":[2,2]}`, structured: true, problem: "turn 2 is named twice"},
		{name: "turns not numbers", def: crit, key: "CQ1", text: `{"answer":"NO","turns":["two"]}`, structured: true, problem: "turns must be a list of turn numbers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := judge.Parse(tc.def, item(t, tc.def, tc.key), tc.text, tc.structured)
			if tc.problem != "" {
				var pe *judge.ParseError
				if !errors.As(err, &pe) || !strings.Contains(pe.Problem, tc.problem) {
					t.Fatalf("Parse = %+v, %v; want a ParseError with %q", a, err, tc.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a.Value != tc.want || a.Method != tc.method || (tc.reasoning != "" && a.Reasoning != tc.reasoning) || (a.Note != "") != tc.note ||
				!slices.Equal(a.Turns, tc.turns) {
				t.Errorf("Parse = %+v; want %s by %s, reasoning %q, note %v, turns %v", a, tc.want, tc.method, tc.reasoning, tc.note, tc.turns)
			}
		})
	}
}

// FuzzParse: Parse never panics; a value it returns is one of the rubric's
// answers, and one the item does not allow carries a note (it is what the
// model said, and scores as a failure); a failure is a ParseError whose
// problem can be sent back to the model.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"YES", "no.", `{"reasoning":"r","answer":"NA"}`, "Answer: 4", "3/5", "**Score:** 2",
		"{", `{"answer": {"x": 1}}`, "1-5 YES NO NA 4 out of 5", "\x00\xff", strings.Repeat("{", 1000), `{"score": 4.5}`, `{"answer": 1e400}`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	crit, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		f.Fatal(err)
	}
	likert, err := rubric.Builtin("empathetic-dialogue@2")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, structured bool) {
		for _, d := range []*rubric.Definition{crit, likert} {
			for i := range d.Items {
				it := &d.Items[i]
				a, err := judge.Parse(d, it, text, structured)
				if err != nil {
					var pe *judge.ParseError
					if !errors.As(err, &pe) || pe.Problem == "" {
						t.Fatalf("error %v is not a ParseError with a problem", err)
					}
					continue
				}
				if !slices.ContainsFunc(d.Answers, func(x rubric.Answer) bool { return x.Value == a.Value }) {
					t.Fatalf("%s %s: value %q is not an answer of the rubric", d.Ref(), it.Key, a.Value)
				}
				if !d.Allows(it, a.Value) && a.Note == "" {
					t.Fatalf("%s %s: value %q is not allowed and carries no note", d.Ref(), it.Key, a.Value)
				}
				if a.Method != judge.MethodStructured && a.Method != judge.MethodParsed && a.Method != judge.MethodTolerant {
					t.Fatalf("method %q", a.Method)
				}
			}
		}
	})
}
