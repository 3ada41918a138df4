package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dbtest"
)

// The acceptance check of the alternative annotator test: the verdicts
// Calderon, Reichart and Dror published for their own datasets (the output
// of alt_test_example.ipynb in github.com/nitaytech/AltTest) must come out
// of attune when their per-annotator labels are imported the way a lead
// would import labels made elsewhere: each dataset becomes a project with a
// one-item rubric, the annotators are imported as people and every model
// as a judge with `attune labels import`, and `attune report` gives each
// judge's alt-test.
//
// The data is not in this repository (it has its own licence), so the test
// runs only when ATTUNE_ALTTEST_DATA names a folder laid out as the
// repository's data/ folder: <dataset>/human_annotations.json and
// <dataset>/llm_annotations.json. It skips otherwise, in CI too; a dataset
// missing from the folder is skipped on its own. docs/agreement.md says how to run
// it and what it showed.

// paperVerdict is one published line: "<dataset> <model> [PASSED]:
// Winning Rate=0.60 Advantage Probability=0.82".
type paperVerdict struct {
	passed  bool
	wr, adv string // as printed, two decimals
}

// paperDataset is one dataset of the notebook, with the ε and scoring it
// was run at and the verdicts printed for it.
type paperDataset struct {
	name    string
	scoring string // accuracy or neg_rmse, as the notebook runs it
	epsilon float64
	// answers are the rubric's answers, in scale order: the labels the
	// dataset uses, turned into strings as JSON spells them.
	answers []string
	// words, when the dataset's labels are words, lists them in the order
	// they are imported as answers[0], answers[1], …: a single rubric
	// answers with integers. Exact-match accuracy is the same under any
	// one-to-one coding, so the coding cannot change an accuracy verdict.
	words    []string
	verdicts map[string]paperVerdict
}

var paperDatasets = []paperDataset{
	{
		name: "cebab_stars", scoring: "neg_rmse", epsilon: 0.1,
		answers: []string{"1", "2", "3", "4", "5"},
		verdicts: map[string]paperVerdict{
			"gemini_flash": {true, "0.60", "0.82"},
			"gemini_pro":   {true, "0.80", "0.87"},
			"gpt-4o":       {true, "0.90", "0.90"},
			"llama-31":     {true, "0.60", "0.85"},
			"gpt-4o-mini":  {true, "0.90", "0.89"},
			"mistral-v03":  {true, "0.50", "0.83"},
		},
	},
	{
		name: "10k_prompts", scoring: "neg_rmse", epsilon: 0.15,
		answers: []string{"1", "2", "3", "4", "5"},
		verdicts: map[string]paperVerdict{
			"gemini_flash": {false, "0.31", "0.67"},
			"gemini_pro":   {false, "0.08", "0.63"},
			"gpt-4o":       {true, "0.69", "0.76"},
			"llama-31":     {false, "0.15", "0.67"},
			"gpt-4o-mini":  {true, "0.92", "0.80"},
			"mistral-v03":  {false, "0.15", "0.67"},
		},
	},
	{
		// Pairwise preferences between two chat models' replies, by
		// experts: the paper runs it by accuracy at the experts' ε.
		name: "mtbench", scoring: "accuracy", epsilon: 0.2,
		answers: []string{"1", "2", "3"},
		words:   []string{"model_a", "model_b", "tie"},
		verdicts: map[string]paperVerdict{
			"gemini_flash": {false, "0.00", "0.72"},
			"gemini_pro":   {false, "0.00", "0.76"},
			"gpt-4o":       {false, "0.00", "0.77"},
			"llama-31":     {false, "0.00", "0.69"},
			"gpt-4o-mini":  {false, "0.00", "0.74"},
			"mistral-v03":  {false, "0.00", "0.68"},
		},
	},
	{
		// Restaurant reviews' aspects by a crowd, by accuracy.
		name: "cebab_aspects", scoring: "accuracy", epsilon: 0.1,
		answers: []string{"1", "2", "3"},
		words:   []string{"Negative", "unknown", "Positive"},
		verdicts: map[string]paperVerdict{
			"gemini_flash": {true, "0.70", "0.91"},
			"gemini_pro":   {true, "0.90", "0.94"},
			"gpt-4o":       {true, "0.90", "0.93"},
			"llama-31":     {true, "0.60", "0.89"},
			"gpt-4o-mini":  {true, "0.50", "0.90"},
			"mistral-v03":  {false, "0.10", "0.81"},
		},
	},
}

func TestAltTestReproducesPublishedVerdicts(t *testing.T) {
	dir := os.Getenv("ATTUNE_ALTTEST_DATA")
	if dir == "" {
		t.Skip("ATTUNE_ALTTEST_DATA is not set: it names a folder with the alt-test paper's <dataset>/human_annotations.json and llm_annotations.json (not shipped; see docs/agreement.md)")
	}
	t.Parallel()
	for _, ds := range paperDatasets {
		t.Run(ds.name, func(t *testing.T) {
			t.Parallel()
			humans := readPaperLabels(t, filepath.Join(dir, ds.name, "human_annotations.json"))
			models := readPaperLabels(t, filepath.Join(dir, ds.name, "llm_annotations.json"))
			if humans == nil || models == nil {
				t.Skipf("%s is not in %s", ds.name, dir)
			}
			reproducePaperDataset(t, ds, humans, models)
		})
	}
}

// readPaperLabels reads one of the paper's files, {rater: {instance:
// label}}, with labels as JSON spells them (3, 3.5, "Positive"); nil when
// the file does not exist.
func readPaperLabels(t *testing.T, path string) map[string]map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := map[string]map[string]string{}
	for rater, labels := range raw {
		out[rater] = map[string]string{}
		for inst, v := range labels {
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			out[rater][inst] = s
		}
	}
	return out
}

func reproducePaperDataset(t *testing.T, ds paperDataset, humans, models map[string]map[string]string) {
	env := envFor(dbtest.NewURL(t))
	must := func(args ...string) string {
		t.Helper()
		out, err := runCmd(t, env, "", args...)
		if err != nil {
			t.Fatalf("%v: %v\n%.2000s", args, err, out)
		}
		return out
	}
	key := "alttest-" + strings.ReplaceAll(ds.name, "_", "-")
	var rub strings.Builder
	fmt.Fprintf(&rub, "kind: single\nkey: %s\nversion: \"1\"\ntitle: Alt-test paper data, %s\nunit: reply\nanswers:\n", key, ds.name)
	for _, a := range ds.answers {
		fmt.Fprintf(&rub, "  - value: %q\n", a)
	}
	fmt.Fprintf(&rub, "items:\n  - key: label\n    label: The dataset's label\nscoring:\n  score_item: label\n")
	must("rubric", "add", writeFile(t, "rubric.yaml", rub.String()))

	// Every instance anyone labelled becomes an item; the paper's data has
	// labels only, so the text just names the instance.
	seen := map[string]bool{}
	var ids []string
	for _, group := range []map[string]map[string]string{humans, models} {
		for _, labels := range group {
			for inst := range labels {
				if !seen[inst] {
					seen[inst] = true
					ids = append(ids, inst)
				}
			}
		}
	}
	slices.Sort(ids)
	var items strings.Builder
	w := csv.NewWriter(&items)
	w.Write([]string{"id", "user", "response"})
	for _, id := range ids {
		w.Write([]string{id, "Instance " + id + " of " + ds.name, "(labels only)"})
	}
	w.Flush()

	maxPerItem := 0
	perItem := map[string]int{}
	for _, labels := range humans {
		for inst := range labels {
			perItem[inst]++
			maxPerItem = max(maxPerItem, perItem[inst])
		}
	}
	must("project", "create", "--name", ds.name, "--rubric", key+"@1", "--overlap", strconv.Itoa(maxPerItem))
	must("import", "--project", ds.name, writeFile(t, "items.csv", items.String()))

	code := func(label string) string { return label }
	if ds.words != nil {
		if len(ds.words) != len(ds.answers) {
			t.Fatalf("%s: %d words for %d answers", ds.name, len(ds.words), len(ds.answers))
		}
		code = func(label string) string {
			i := slices.Index(ds.words, label)
			if i < 0 {
				t.Fatalf("%s: label %q is none of %q", ds.name, label, ds.words)
			}
			return ds.answers[i]
		}
	}
	var labels strings.Builder
	w = csv.NewWriter(&labels)
	w.Write([]string{"item", "rater", "rater_kind", "rubric_item", "value"})
	for _, kind := range []string{"human", "judge"} {
		group := humans
		if kind == "judge" {
			group = models
		}
		for _, rater := range slices.Sorted(maps.Keys(group)) {
			for _, inst := range slices.Sorted(maps.Keys(group[rater])) {
				w.Write([]string{inst, rater, kind, "label", code(group[rater][inst])})
			}
		}
	}
	w.Flush()
	out := must("labels", "import", "--project", ds.name, writeFile(t, "labels.csv", labels.String()))
	t.Logf("%s", strings.TrimSpace(out))

	out = must("report", "--project", ds.name, "--format", "json", "--replicates", "0",
		"--epsilon", strconv.FormatFloat(ds.epsilon, 'f', -1, 64), "--alt-scoring", ds.scoring)
	var rep struct {
		Raters []struct {
			ID   int64  `json:"id"`
			Name string `json:"name"`
		} `json:"raters"`
		Items []struct {
			Judges []struct {
				Rater   int64 `json:"rater"`
				AltTest struct {
					Epsilon     float64                  `json:"epsilon"`
					Scoring     string                   `json:"scoring"`
					Tested      int                      `json:"n_tested"`
					WinningRate struct{ Value *float64 } `json:"winning_rate"`
					Advantage   struct{ Value *float64 } `json:"advantage_probability"`
					Passed      bool                     `json:"passed"`
				} `json:"alt_test"`
			} `json:"judges"`
		} `json:"rubric_items"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report json: %v\n%.300s", err, out)
	}
	if len(rep.Items) != 1 {
		t.Fatalf("report has %d rubric items, want 1", len(rep.Items))
	}
	name := map[int64]string{}
	for _, r := range rep.Raters {
		name[r.ID] = r.Name
	}
	got := map[string]bool{}
	for _, j := range rep.Items[0].Judges {
		model := name[j.Rater]
		want, ok := ds.verdicts[model]
		if !ok {
			t.Errorf("judge %q (rater %d) is not a model the paper reports", model, j.Rater)
			continue
		}
		got[model] = true
		a := j.AltTest
		if a.Epsilon != ds.epsilon || a.Scoring != ds.scoring || a.WinningRate.Value == nil || a.Advantage.Value == nil {
			t.Errorf("%s: alt-test run at ε %v with %s, winning rate %v, advantage %v", model, a.Epsilon, a.Scoring, a.WinningRate.Value, a.Advantage.Value)
			continue
		}
		wr, adv := fmt.Sprintf("%.2f", *a.WinningRate.Value), fmt.Sprintf("%.2f", *a.Advantage.Value)
		t.Logf("%s %s: passed %v, winning rate %s (%.4f of %d annotators), advantage probability %s (%.4f); published %v %s %s",
			ds.name, model, a.Passed, wr, *a.WinningRate.Value, a.Tested, adv, *a.Advantage.Value, want.passed, want.wr, want.adv)
		if a.Passed != want.passed || wr != want.wr || adv != want.adv {
			t.Errorf("%s %s: passed %v, winning rate %s, advantage probability %s; the paper published %v, %s, %s",
				ds.name, model, a.Passed, wr, adv, want.passed, want.wr, want.adv)
		}
	}
	for model := range ds.verdicts {
		if !got[model] {
			t.Errorf("%s: no alt-test for %s in the report", ds.name, model)
		}
	}
}
