package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

func scoreFlags(fs *flag.FlagSet) {
	fs.String("rubric", "", "the rubric version to score against, KEY@VERSION (required)")
	fs.String("rubric-file", "", "score against this rubric definition file instead of a stored version")
}

// scoreInput is one line of `attune score` input.
type scoreInput struct {
	ID      json.RawMessage   `json:"id"`
	Turns   *int              `json:"turns"`
	Crisis  *bool             `json:"crisis"`
	Answers map[string]string `json:"answers"`
}

// scoreOutput is the engine's full result for one input line, under the
// line's id.
type scoreOutput struct {
	ID json.RawMessage `json:"id"`
	scoring.Result
}

// maxScoreLine bounds one input line, so a broken file cannot exhaust memory.
const maxScoreLine = 1 << 20

func runScore(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("score", flag.ContinueOnError)
	scoreFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	refArg, file := fs.Lookup("rubric").Value.String(), fs.Lookup("rubric-file").Value.String()
	if refArg == "" && file == "" {
		return fmt.Errorf("%w: score needs --rubric KEY@VERSION", errUsage)
	}
	if fs.NArg() > 1 {
		return fmt.Errorf("%w: score reads one FILE (or - for standard input)", errUsage)
	}
	def, err := scoreRubric(ctx, e, refArg, file)
	if err != nil {
		return err
	}
	in := e.stdin
	if name := fs.Arg(0); name != "" && name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}

	out := bufio.NewWriter(e.stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	r := bufio.NewReaderSize(in, 64<<10)
	var bad []error
	lines, scored := 0, 0
	for {
		line, err := readLine(r, maxScoreLine)
		if errors.Is(err, io.EOF) {
			break
		}
		lines++
		if errors.Is(err, errLineTooLong) {
			bad = append(bad, fmt.Errorf("line %d: longer than %d bytes", lines, maxScoreLine))
			continue
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		res, err := scoreLine(def, line)
		if err != nil {
			bad = append(bad, fmt.Errorf("line %d: %w", lines, err))
			continue
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
		scored++
	}
	if len(bad) > 0 {
		out.Flush()
		for _, err := range bad {
			fmt.Fprintln(e.stderr, err)
		}
		return fmt.Errorf("%d of %d lines could not be scored (%d scored)", len(bad), lines, scored)
	}
	return nil
}

// scoreRubric finds the definition to score against: a file, a built-in
// (no database needed, so labels made anywhere can be scored anywhere), or
// a version stored in the database.
func scoreRubric(ctx context.Context, e env, refArg, file string) (*rubric.Definition, error) {
	if file != "" {
		def, err := readRubricFile(file)
		if err != nil {
			return nil, err
		}
		if refArg != "" && refArg != def.Ref().String() {
			return nil, fmt.Errorf("--rubric %s does not match the file's %s", refArg, def.Ref())
		}
		return def, nil
	}
	ref, err := rubric.ParseRef(refArg)
	if err != nil {
		return nil, fmt.Errorf("--rubric: %w", err)
	}
	if def, err := rubric.Builtin(ref.String()); err == nil {
		return def, nil
	}
	db, _, err := openFromEnv(ctx, e)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	def, _, err := db.FindRubric(ctx, ref)
	return def, err
}

// scoreLine checks one input line against the rubric and scores it. A line
// is refused when it is not the documented shape or names an item or a
// value the rubric does not have; anything the rubric itself scores (a
// missing answer as ERROR, NA where NA is invalid as a failure) is scored.
func scoreLine(def *rubric.Definition, line []byte) (scoreOutput, error) {
	var in scoreInput
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return scoreOutput{}, fmt.Errorf("not a JSON object of the form {\"id\": …, \"turns\": N, \"answers\": {…}}: %v", err)
	}
	if dec.More() {
		return scoreOutput{}, errors.New("more than one JSON value on the line")
	}
	switch {
	case len(in.ID) == 0 || string(in.ID) == "null" || string(in.ID) == `""`:
		return scoreOutput{}, errors.New(`"id" is missing`)
	case in.ID[0] != '"' && (in.ID[0] < '0' || in.ID[0] > '9') && in.ID[0] != '-':
		return scoreOutput{}, errors.New(`"id" must be a string or a number`)
	case in.Answers == nil:
		return scoreOutput{}, errors.New(`"answers" is missing: give an object of item → answer`)
	case in.Turns != nil && *in.Turns < 0:
		return scoreOutput{}, fmt.Errorf(`"turns" must not be negative, got %d`, *in.Turns)
	}
	answers := rubric.Answers{}
	for _, key := range sortedKeys(in.Answers) {
		it, ok := def.Item(key)
		if !ok {
			return scoreOutput{}, fmt.Errorf("answers.%s: %s has no item %q", key, def.Ref(), key)
		}
		v := rubric.Value(in.Answers[key])
		if !inVocabulary(def, it, v) {
			return scoreOutput{}, fmt.Errorf("answers.%s: %q is not an answer of %s (allowed: %v)", key, v, def.Ref(), def.Allowed(it))
		}
		answers[key] = v
	}
	facts := rubric.Facts{}
	if in.Turns != nil {
		facts.Turns = *in.Turns
	}
	if in.Crisis != nil {
		facts.Crisis = rubric.Absent
		if *in.Crisis {
			facts.Crisis = rubric.Present
		}
	}
	res, err := scoring.Score(def, answers, facts)
	if err != nil {
		return scoreOutput{}, err
	}
	return scoreOutput{ID: in.ID, Result: res}, nil
}

// inVocabulary reports whether v is a value the rubric scores at all: an
// answer of its scale or of the item, or ERROR (a failed judge call).
func inVocabulary(def *rubric.Definition, it *rubric.Item, v rubric.Value) bool {
	if v == rubric.Error || def.Allows(it, v) {
		return true
	}
	return slices.ContainsFunc(def.Answers, func(a rubric.Answer) bool { return a.Value == v })
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var errLineTooLong = errors.New("line too long")

// readLine returns the next line without its newline, or errLineTooLong
// (having skipped the rest of that line) when it exceeds max bytes.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			// Skip to the end of the over-long line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(line) == 0 {
				return nil, io.EOF
			}
			return bytes.TrimRight(line, "\r\n"), nil
		case err != nil:
			return nil, err
		}
		return bytes.TrimRight(line, "\r\n"), nil
	}
}
