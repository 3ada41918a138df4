package store_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/store"
)

var updateGolden = flag.Bool("update", false, "rewrite the export golden files in testdata/exports")

// exportTimes are the timestamps an export writes, which change from run
// to run; the golden files hold TIME in their place.
var exportTimes = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z`)

// goldenExportFixture builds a project every export has something to say
// about, in a fixed order, so that its exports are the same bytes on every
// run but for their timestamps: people's labels with awkward rationales
// and disagreements, a judge's labels with one failed call, gold by the
// rule and by a lead, an open item with a tie.
func goldenExportFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 3, items: 4, annotators: 3})
	f.labelWith(t, func(a int, source string) map[string]string {
		ans := map[string]string{}
		for k, v := range fullAnswers {
			ans[k] = v
		}
		switch {
		case source == "item-001" && a == 1:
			ans["CQ3"] = "NO"
		case source == "item-002" && a == 2:
			ans["CQ1"], ans["CQ4"] = "NO", "NO"
		case source == "item-003" && a == 2:
			return nil // skipped: the item keeps the tie below and stays open
		case source == "item-003" && a == 1:
			ans["CQ3"] = "NO"
		}
		return ans
	}, func(a int, source string) map[string]string {
		notes := map[string]string{}
		for i, k := range []string{"CQ1", "CQ3", "CP3"} {
			notes[k] = awkward[(a*3+i+len(source))%len(awkward)]
		}
		return notes
	})
	j, err := f.db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "=judge", Provider: "openai", Model: "fake-judge"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: f.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(fullAnswers))
	for k := range fullAnswers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	n := 0
	for _, source := range []string{"item-000", "item-001"} {
		itemID := f.itemID(t, source)
		var labels []store.JudgeLabel
		for _, k := range keys {
			v, method := fullAnswers[k], "structured"
			if source == "item-001" && k == "CQ8" {
				v, method = "ERROR", "error"
			}
			n++
			labels = append(labels, store.JudgeLabel{Key: k, Value: v, Method: method, PromptHash: "ph-" + k, Rationale: "judged " + k, Raw: v})
			if err := f.db.RecordCall(ctx, store.JudgeCall{RunID: run.ID, JudgeID: j.ID, ItemID: itemID, RubricItemKey: k,
				CacheKey: fmt.Sprintf("%064x", n), PromptHash: "ph-" + k, Model: j.Model, OK: v != "ERROR",
				Raw: `{"score": "` + v + `", "note": "=cmd|' /C calc'!A0"}`, Error: map[bool]string{true: "", false: "timeout"}[v != "ERROR"],
				InputTokens: 100 + n, CachedTokens: n, OutputTokens: 7, CostUSD: 0.000123 * float64(n), Latency: 1500000}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := f.db.WriteJudgeAnswers(ctx, run, itemID, labels, 100); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.db.ApplyConsensus(ctx, f.project.ID, store.ConsensusOptions{}); err != nil {
		t.Fatal(err)
	}
	settled := map[string]string{}
	for k, v := range fullAnswers {
		settled[k] = v
	}
	settled["CQ3"] = "NO"
	if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: f.itemID(t, "item-001"), ActorID: f.lead.ID,
		Answers: settled, Note: "=not a formula, \"quoted\"\nsecond line"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// goldenExport is one export compared with its golden file.
type goldenExport struct {
	name  string
	write func(ctx context.Context, db *store.DB, w io.Writer, projectID int64) (int, error)
}

func tableExport(d export.Dataset, f export.Format, withRaters bool) goldenExport {
	name := string(d)
	if withRaters {
		name += "-raters"
	}
	return goldenExport{name + "." + string(f), func(ctx context.Context, db *store.DB, w io.Writer, projectID int64) (int, error) {
		return export.Write(ctx, db, w, projectID, d, f, withRaters)
	}}
}

func recordExport(f export.Format, o export.RecordOptions) goldenExport {
	name := "dataset-" + string(o.Which)
	if o.Soft {
		name += "-soft"
	}
	return goldenExport{name + "." + string(f), func(ctx context.Context, db *store.DB, w io.Writer, projectID int64) (int, error) {
		return export.WriteRecords(ctx, db, w, projectID, f, o)
	}}
}

// checkGolden compares each export of the project with its file in
// testdata/exports, timestamps aside; -update rewrites the files.
func checkGolden(t *testing.T, f *fixture, exports []goldenExport) {
	t.Helper()
	ctx := context.Background()
	for _, e := range exports {
		var b bytes.Buffer
		if _, err := e.write(ctx, f.db, &b, f.project.ID); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		got := b.Bytes()
		if filepath.Ext(e.name) != ".parquet" {
			got = exportTimes.ReplaceAll(got, []byte("TIME"))
		}
		path := filepath.Join("testdata", "exports", e.name)
		if *updateGolden {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run with -update to write it)", e.name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s:\n got: %q\nwant: %q", e.name, path, got, want)
		}
	}
}

// TestExportGoldenFiles holds every export, in every format, to the bytes
// it wrote when the exports were written from the store, so that moving
// where an export is assembled cannot change a byte of it.
func TestExportGoldenFiles(t *testing.T) {
	t.Parallel()
	var exports []goldenExport
	for _, f := range []export.Format{export.CSV, export.JSONL} {
		exports = append(exports, tableExport(export.Gold, f, false), tableExport(export.Gold, f, true),
			tableExport(export.Labels, f, false), tableExport(export.JudgeCalls, f, false))
	}
	for _, f := range []export.Format{export.JSONL, export.Parquet} {
		exports = append(exports, recordExport(f, export.RecordOptions{Which: export.WhichGold}),
			recordExport(f, export.RecordOptions{Which: export.WhichLabels, Soft: true}))
	}
	exports = append(exports, recordExport(export.JSONL, export.RecordOptions{Which: export.WhichGold, Soft: true}),
		recordExport(export.JSONL, export.RecordOptions{Which: export.WhichLabels}))
	checkGolden(t, goldenExportFixture(t), exports)
}

// TestExportFlagsGoldenFiles does the same for the flags export, on a
// project of its own: flags need items still to hand out.
func TestExportFlagsGoldenFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newProject(t, dbtest.New(t), projectOpts{overlap: 1, items: 2, annotators: 2})
	// One item names its system, the other none.
	if _, err := f.db.Pool().Exec(ctx, `UPDATE items SET meta = '{"system":"v1"}' WHERE project_id = $1 AND source_id = 'item-000'`, f.project.ID); err != nil {
		t.Fatal(err)
	}
	first := f.flagItem(t, f.annotators[0], "broken", `=HYPERLINK("http://x","y")`)
	if _, err := f.db.ResolveFlag(ctx, store.FlagResolution{ActorID: f.lead.ID, ProjectID: f.project.ID, FlagID: first.ID,
		How: attune.ResolvePulled, Note: "@cmd\nsecond line"}); err != nil {
		t.Fatal(err)
	}
	f.flagItem(t, f.annotators[1], "distressing", "")
	checkGolden(t, f, []goldenExport{tableExport(export.Flags, export.CSV, false), tableExport(export.Flags, export.JSONL, false)})
}
