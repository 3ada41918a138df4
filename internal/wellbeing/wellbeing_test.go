package wellbeing_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/wellbeing"
)

func TestScan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want string // the term found, "" for none
	}{
		{"I've been thinking about suicide.", "suicide"},
		{"SUICIDAL thoughts again", "suicidal"},
		{"Sometimes I want to kill myself", "kill myself"},
		{"I don't want to be here anymore", "want to be here anymore"},
		{"Honestly I don't know if I want to be here anymore.", "want to be here anymore"},
		{"I dont want to live like this", "dont want to live"},
		{"I don’t want to live", "dont want to live"}, // typographic apostrophe
		{"Everyone would be better off without me", "better off without me"},
		{"I started self-harming last year", "self harming"},
		{"self harm", "self harm"},
		{"Self‐harm", "self harm"}, // Unicode hyphen
		{"I keep cutting myself when it gets bad", "cutting myself"},
		{"I took an overdose", "overdose"},
		{"I thought about ending my life", "ending my life"},
		{"i wanna die", "wanna die"},
		{"suicides", "suicides"},
		{"first line is fine", ""},
		// False positives the scan must not make.
		{"I packed my suitcase for the trip", ""},
		{"Their new album is a killer", ""},
		{"I need to skill myself up at work", ""},
		{"I was killing myself laughing at that film", ""},
		{"I'm cutting myself some slack this week", ""},
		{"I keep cutting myself off mid-sentence", ""},
		{"Self-harmony is a yoga brand", ""},
		{"an overdosage table", ""},
		{"I want to be here", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, found := wellbeing.Scan(tt.text)
		if got != tt.want || found != (tt.want != "") {
			t.Errorf("Scan(%q) = %q, %v; want %q", tt.text, got, found, tt.want)
		}
	}
}

func TestScanSeveralTexts(t *testing.T) {
	t.Parallel()
	term, ok := wellbeing.Scan("Work is hard.", "That sounds hard.", "I have thought of suicide.")
	if !ok || term != "suicide" {
		t.Fatalf("Scan over messages = %q, %v", term, ok)
	}
	// An exception in one message does not hide a term in the same one.
	term, ok = wellbeing.Scan("I was killing myself laughing, but later I wanted to kill myself.")
	if !ok || term != "kill myself" {
		t.Fatalf("Scan with an exception and a term = %q, %v", term, ok)
	}
}

// Every term and exception must be in docs/wellbeing.md: the document is
// what leads and annotators read to know what the content note means.
func TestTermsAreDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/wellbeing.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, term := range append(wellbeing.Terms(), wellbeing.Exceptions()...) {
		if !strings.Contains(text, "`"+term+"`") {
			t.Errorf("docs/wellbeing.md does not list `%s`", term)
		}
	}
}

func TestStretch(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var s wellbeing.Stretch
	if s.Due(t0, time.Minute) {
		t.Fatal("no stretch is never due")
	}
	s = s.Visit(t0)
	if s.Start != t0 || s.Last != t0 {
		t.Fatalf("first visit = %+v", s)
	}
	// Working on, with pauses shorter than the gap, keeps the stretch.
	for m := 5; m <= 50; m += 5 {
		s = s.Visit(t0.Add(time.Duration(m) * time.Minute))
	}
	if s.Start != t0 || !s.Due(t0.Add(50*time.Minute), 50*time.Minute) || s.Due(t0.Add(49*time.Minute), 50*time.Minute) {
		t.Fatalf("after 50 minutes: %+v", s)
	}
	if got := s.Length(t0.Add(50 * time.Minute)); got != 50*time.Minute {
		t.Fatalf("length = %v", got)
	}
	// A pause longer than the gap was a break: a new stretch starts.
	back := t0.Add(50*time.Minute + wellbeing.Gap + time.Second)
	s = s.Visit(back)
	if s.Start != back || s.Due(back, 50*time.Minute) {
		t.Fatalf("after a long pause: %+v", s)
	}
	// Exactly the gap still counts as continuous.
	s2 := wellbeing.Stretch{Start: t0, Last: t0}.Visit(t0.Add(wellbeing.Gap))
	if s2.Start != t0 {
		t.Fatalf("a pause of exactly the gap ended the stretch: %+v", s2)
	}
	// A clock that went backwards starts afresh rather than going negative.
	s3 := wellbeing.Stretch{Start: t0, Last: t0}.Visit(t0.Add(-time.Hour))
	if s3.Start != t0.Add(-time.Hour) {
		t.Fatalf("clock went back: %+v", s3)
	}
	if (wellbeing.Stretch{Start: t0, Last: t0}).Due(t0.Add(time.Hour), 0) {
		t.Fatal("a zero interval must never offer a break")
	}
}

func TestMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string // the text each match covers, then its term
	}{
		{"I'm too scared to commit suicide like he did! I enjoy living life", []string{"suicide", "suicide"}},
		{"I don’t want to live. I don't want to be alive either.", []string{"don’t want to live", "dont want to live", "don't want to be alive", "dont want to be alive"}},
		{"Self‐harm, then SELF HARMING again", []string{"Self‐harm", "self harm", "SELF HARMING", "self harming"}},
		{"I was killing myself laughing, but later I wanted to kill myself.", []string{"kill myself", "kill myself"}},
		// Matches never overlap: the first one found wins.
		{"I want to hurt myself on purpose", []string{"want to hurt myself", "want to hurt myself"}},
		{"I hurt myself on purpose", []string{"hurt myself on purpose", "hurt myself on purpose"}},
		{"a suitcase and an overdosage table", nil},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		for _, m := range wellbeing.Matches(tt.text) {
			got = append(got, tt.text[m.Start:m.End], m.Term)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Matches(%q) = %q; want %q", tt.text, got, tt.want)
		}
	}
}

func TestFound(t *testing.T) {
	t.Parallel()
	got := wellbeing.Found("I took an overdose.", "That sounds hard.", "I thought of suicide, and of another overdose.")
	if strings.Join(got, ",") != "overdose,suicide" {
		t.Fatalf("Found = %q; want overdose, suicide in order of first occurrence", got)
	}
	if got := wellbeing.Found("Work is hard."); got != nil {
		t.Fatalf("Found without a term = %q; want nil", got)
	}
	// Found finds what Scan finds.
	for _, text := range []string{"I wanna die", "cutting myself some slack", "self-injury"} {
		term, ok := wellbeing.Scan(text)
		found := wellbeing.Found(text)
		if ok != (len(found) > 0) || ok && !slices.Contains(found, term) {
			t.Errorf("Scan(%q) = %q, %v but Found = %q", text, term, ok, found)
		}
	}
}
